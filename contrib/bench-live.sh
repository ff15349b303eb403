#!/usr/bin/env bash
# Live mounts (docs/layout.md, "Live mounts"): what an edit through a
# running server costs, and what a world-wide rename does to the server's
# step time (docs/performance.md has the figures). It measures and prints;
# nothing passes or fails on a speed.
#
#   contrib/bench-live.sh [EDITS [SIDE]]
#
# A demo world (`worldfs demo`) grows SIDE x SIDE more underground blocks
# (default 40: 1600, copies of the demo's block 0,-1,0, stone and dirt),
# gets the worldfs_live mod, and Debian's minetestserver runs it headless
# on loopback. Then, through a live mount:
#   * EDITS (default 200) single-node edits, `echo NAME > MNT/node/5,3,5`,
#     alternating two names: each close() returns once the server applied
#     the change, so the time of each is close()-to-applied; median and p99
#     (goal: p99 <= 1 s);
#   * `mv find/default:stone find/default:desert_stone` over every block
#     holding stone, with the server's longest step and the mod's most work
#     in one step meanwhile, from the mod's steps.txt (goal: no step over
#     100 ms);
#   * the same rename on a copy of the world with the server stopped (an
#     ordinary mount), for comparison.
#
# Environment: WORLDFS (default: target/release/worldfs, else target/ci).
# Needs: minetest-server with minetest_game, sqlite3, fuse3.
set -euo pipefail
export LC_ALL=C
EDITS=${1:-200}
SIDE=${2:-40}
cd "$(dirname "$0")/.."
WORLDFS=${WORLDFS:-$( [ -x target/release/worldfs ] && echo target/release/worldfs || echo target/ci/worldfs )}
WORLDFS=$(realpath "$WORLDFS")
SERVER=$(command -v minetestserver || echo /usr/games/minetestserver)
T=$(mktemp -d)
W=$T/world MNT=$T/mnt
mkdir "$MNT"
cleanup() {
    fusermount3 -u "$MNT" 2>/dev/null || true
    [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$WORLDFS" demo "$W" >/dev/null
# The legacy key is x + 4096 y + 16777216 z; block 0,-1,0 is -4096.
sqlite3 "$W/map.sqlite" "
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < $SIDE * $SIDE)
INSERT OR IGNORE INTO blocks (pos, data)
SELECT (i % $SIDE - $SIDE / 2) - 3 * 4096 + (i / $SIDE - $SIDE / 2) * 16777216,
       (SELECT data FROM blocks WHERE pos = -4096) FROM c;"
echo "world: $(sqlite3 "$W/map.sqlite" 'SELECT count(*) FROM blocks') blocks"
cp -a "$W" "$T/offline"
"$WORLDFS" live install "$W" >/dev/null
printf 'server_announce = false\nbind_address = 127.0.0.1\n' > "$T/server.conf"
HOME=$T "$SERVER" --world "$W" --config "$T/server.conf" --port 30123 --logfile "$T/server.log" \
    </dev/null >/dev/null 2>&1 &
SPID=$!
for _ in $(seq 600); do
    [ -f "$W/worldfs-live/server.json" ] && break
    sleep 0.1
done
"$WORLDFS" mount "$W" "$MNT"
for _ in $(seq 100); do [ -e "$MNT/README" ] && break; sleep 0.1; done

: > "$T/lat"
for i in $(seq "$EDITS"); do
    name=$([ $((i % 2)) = 0 ] && echo default:mese || echo default:dirt)
    t0=$(date +%s%N)
    echo "$name" > "$MNT/node/5,3,5"
    echo $(( ($(date +%s%N) - t0) / 1000 )) >> "$T/lat"
done
sort -n "$T/lat" > "$T/lat.sorted"
pick() { sed -n "$(( (EDITS * $1 + 99) / 100 ))p" "$T/lat.sorted"; }
echo "live edit, close() to applied, $EDITS edits: median $(( $(pick 50) / 1000 )) ms, p99 $(( $(pick 99) / 1000 )) ms, max $(( $(tail -1 "$T/lat.sorted") / 1000 )) ms"

blocks=$(ls "$MNT/find/default:stone" | wc -l)
sleep 2
since=$(tail -1 "$W/worldfs-live/steps.txt" | cut -d' ' -f1)
t0=$(date +%s%N)
mv "$MNT/find/default:stone" "$MNT/find/default:desert_stone"
live_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 1.5
# steps.txt: TIME WORST_DTIME_MS WORST_WORK_MS REQUESTS, a line per 0.5 s.
read -r worst_step worst_work requests over < <(awk -v since="$since" '
    $1 > since { if ($2 > s) s = $2; if ($3 > w) w = $3; r += $4; if ($2 > 100) o++ }
    END { printf "%.0f %.0f %d %d\n", s, w, r, o }' "$W/worldfs-live/steps.txt")
echo "live rename of $blocks blocks: $live_ms ms in $requests requests; the server's longest step $worst_step ms, the mod's most work in one step $worst_work ms, $over half-second windows with a step over 100 ms"
fusermount3 -u "$MNT"
sleep 1
kill "$SPID"; wait "$SPID" || true; SPID=

"$WORLDFS" mount "$T/offline" "$MNT"
for _ in $(seq 100); do [ -e "$MNT/README" ] && break; sleep 0.1; done
ls "$MNT/find/default:stone" > /dev/null
t0=$(date +%s%N)
mv "$MNT/find/default:stone" "$MNT/find/default:desert_stone"
echo "offline rename of the same blocks: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
fusermount3 -u "$MNT"
