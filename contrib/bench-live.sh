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
# or LIVE_WORLD (a copy of it) is used; it gets the worldfs_live mod, and
# Debian's minetestserver runs it headless on loopback. Then, through a
# live mount:
#   * EDITS (default 200) single-node edits, `echo NAME > MNT/node/X,Y,Z`
#     (5,3,5 in the demo; the first node of the first stored block of
#     LIVE_WORLD), alternating two names: each close() returns once the
#     server applied the change, so the time of each is close()-to-applied;
#     median and p99 (goal: p99 <= 150 ms), and the breakdown of one
#     close(): the daemon's parts of a change through the server and the
#     mod's (MNT/.worldfs-stats before and after: averages);
#   * WRITERS (default 8) shells at once, each WRITES (default 100) single-
#     node edits of its own block (the first WRITERS stored blocks), in
#     writes a second (goal: >= 100/s), with the requests the mod took and
#     the server's longest step meanwhile;
#   * QUIET seconds (default 10) without requests: the server's own worst
#     step, the baseline of what the machine does to it;
#   * `mv find/RENAME_OLD find/RENAME_NEW` (default default:stone ->
#     default:desert_stone) over every block holding RENAME_OLD, with the
#     server's longest step and the mod's most work in one step meanwhile,
#     from the mod's steps.txt (goal: no step over 100 ms), and the mod's
#     own profile of each request (parse, check, apply; from the server
#     log, worldfs_live.log_ms = 0), and the server's map saves meanwhile
#     (blocks written, time: its info log and profiler), and how the mod's
#     pace changed ("grow to N", "halve to N": blocks per save interval);
#   * the same rename on a copy of the world with the server stopped (an
#     ordinary mount), for comparison.
#
# Environment: WORLDFS (default: target/release/worldfs, else target/ci),
# LIVE_WORLD (a Luanti world with a sqlite3 map; only copied: its copy
# runs with minetest_game, its world.mt's other mods dropped), RENAME_OLD,
# RENAME_NEW (registered in minetest_game), QUIET, WRITERS, WRITES, BLOCKS_PER_SAVE,
# BLOCKS_PER_SAVE_MIN, BLOCKS_PER_SAVE_MAX (the mod's pace: where it
# starts, its floor and its cap, worldfs_live.blocks_per_save[_min|_max];
# its defaults when unset), MAP_SAVE_INTERVAL and SERVER_STEP (the mod's
# worldfs_live.map_save_interval and worldfs_live.server_step: off when
# unset), PORT (the server's UDP port, 30123). The daemon's peak memory
# (VmHWM) is printed for each rename.
# Needs: minetest-server with minetest_game, sqlite3, fuse3.
set -euo pipefail
export LC_ALL=C
EDITS=${1:-200}
SIDE=${2:-40}
QUIET=${QUIET:-10}
WRITERS=${WRITERS:-8}
WRITES=${WRITES:-100}
RENAME_OLD=${RENAME_OLD:-default:stone}
RENAME_NEW=${RENAME_NEW:-default:desert_stone}
cd "$(dirname "$0")/.."
WORLDFS=${WORLDFS:-$( [ -x target/release/worldfs ] && echo target/release/worldfs || echo target/ci/worldfs )}
WORLDFS=$(realpath "$WORLDFS")
SERVER=$(command -v minetestserver || echo /usr/games/minetestserver)
T=$(mktemp -d)
W=$T/world MNT=$T/mnt
mkdir "$MNT"
cleanup() {
    fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT" 2>/dev/null || true
    # DAEMON_LOG=FILE keeps the daemon's log (at info) there.
    [ -n "${DAEMON_LOG:-}" ] && cp "$T/daemon.log" "$DAEMON_LOG" 2>/dev/null || true
    [ -n "${COLLECT:-}" ] && kill "$COLLECT" 2>/dev/null || true
    # The bench's own daemon (of a temporary copy): unmounted above.
    [ -n "${DPID:-}" ] && { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; } || true
    [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null || true
    # Never remove through a mount that is still there.
    if mountpoint -q "$MNT"; then
        echo "bench-live.sh: $MNT is still mounted; $T is left as it is" >&2
    else
        rm -rf "$T"
    fi
}
trap cleanup EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
# The daemon's peak resident memory since the last reset_peak, in MB.
reset_peak() { echo 5 > "/proc/$DPID/clear_refs"; }
peak_mb() { awk '$1 == "VmHWM:" { printf "%.0f", $2 / 1024 }' "/proc/$DPID/status"; }
mounted() { for _ in $(seq 600); do [ -e "$MNT/README" ] && return; sleep 0.1; done; echo "no mount" >&2; exit 1; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(load)"
if [ -n "${LIVE_WORLD:-}" ]; then
    mkdir "$W"
    cp "$LIVE_WORLD/map.sqlite" "$W/"
    grep -v -e '^load_mod_' -e '^gameid' "$LIVE_WORLD/world.mt" > "$W/world.mt"
    echo "gameid = minetest" >> "$W/world.mt"
else
    "$WORLDFS" demo "$W" >/dev/null
    # The legacy key is x + 4096 y + 16777216 z; block 0,-1,0 is -4096.
    sqlite3 "$W/map.sqlite" "
    WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < $SIDE * $SIDE)
    INSERT OR IGNORE INTO blocks (pos, data)
    SELECT (i % $SIDE - $SIDE / 2) - 3 * 4096 + (i / $SIDE - $SIDE / 2) * 16777216,
           (SELECT data FROM blocks WHERE pos = -4096) FROM c;"
fi
echo "world: $(sqlite3 "$W/map.sqlite" 'SELECT count(*) FROM blocks') blocks"
cp -a "$W" "$T/offline"
# Copies of a large world are hundreds of MB the kernel has not written yet:
# the server's first map save would wait for all of them at its fsync (a
# 150 ms step and a 170 ms edit on the 2.8M-block world), a cost no running
# server's world has. Written out before anything is timed.
sync
"$WORLDFS" live install "$W" >/dev/null
# The info log has the server's map saves ("ServerMap: Written: N blocks")
# and, every 5 s, its profiler ("Server: map saving (sum) [ms] ... 1x T").
printf 'server_announce = false\nbind_address = 127.0.0.1\nworldfs_live.log_ms = 0\ndebug_log_level = info\nprofiler_print_interval = 5\n' > "$T/server.conf"
[ -n "${BLOCKS_PER_SAVE:-}" ] && echo "worldfs_live.blocks_per_save = $BLOCKS_PER_SAVE" >> "$T/server.conf"
[ -n "${BLOCKS_PER_SAVE_MIN:-}" ] && echo "worldfs_live.blocks_per_save_min = $BLOCKS_PER_SAVE_MIN" >> "$T/server.conf"
[ -n "${BLOCKS_PER_SAVE_MAX:-}" ] && echo "worldfs_live.blocks_per_save_max = $BLOCKS_PER_SAVE_MAX" >> "$T/server.conf"
[ -n "${MAP_SAVE_INTERVAL:-}" ] && echo "worldfs_live.map_save_interval = $MAP_SAVE_INTERVAL" >> "$T/server.conf"
[ -n "${SERVER_STEP:-}" ] && echo "worldfs_live.server_step = $SERVER_STEP" >> "$T/server.conf"
echo "server settings: $(grep '^worldfs_live\.' "$T/server.conf" | grep -v log_ms | paste -sd, - | sed 's/,/, /g' || true)"
HOME=$T "$SERVER" --world "$W" --config "$T/server.conf" --port "${PORT:-30123}" --logfile "$T/server.log" \
    </dev/null >/dev/null 2>&1 &
SPID=$!
for _ in $(seq 600); do
    [ -f "$W/worldfs-live/server.json" ] && break
    sleep 0.1
done
# The daemon in the foreground, in the background: its pid for its peak
# memory (VmHWM, reset before each rename through /proc/PID/clear_refs).
# At info: the daemon logs how long a rename took and each index build.
RUST_LOG=${RUST_LOG:-info} "$WORLDFS" mount "$W" "$MNT" -f 2>>"$T/daemon.log" &
DPID=$!
mounted
sleep 1
# A server that could not start (its port taken) leaves a heartbeat that
# says "starting": figures without it would be an ordinary mount's.
if ! kill -0 "$SPID" 2>/dev/null; then
    echo "bench-live.sh: the server exited: $(tail -3 "$T/server.log")" >&2
    SPID=
    exit 1
fi

# steps.txt: TIME WORST_DTIME_MS WORST_WORK_MS REQUESTS, a line per 0.5 s.
last_step() { tail -1 "$W/worldfs-live/steps.txt" | cut -d' ' -f1; }
# steps.txt keeps two minutes; a copy every 20 s keeps all of a long rename.
: > "$T/steps.all"
( while :; do cat "$W/worldfs-live/steps.txt" >> "$T/steps.all" 2>/dev/null; sleep 20; done ) &
COLLECT=$!
# steps_since TIME: the longest step (ms), the mod's most work in one step
# (ms), requests, half-second windows with a step over 100 ms, windows,
# steps over 100 ms, steps (the last two: "?" from a mod before they were
# logged).
steps_since() {
    cat "$T/steps.all" "$W/worldfs-live/steps.txt" | sort -u -n | awk -v since="$1" '
        $1 > since { n++; if ($2 > s) s = $2; if ($3 > w) w = $3; r += $4; if ($2 > 100) o++
                     if (NF >= 6) { sn += $5; so += $6 } else old = 1 }
        END { printf "%.0f %.0f %d %d %d %s %s\n", s, w, r, o, n, old ? "?" : so + 0, old ? "?" : sn + 0 }'
}
# The server's steps since TIME, in words.
steps_said() {
    local worst _w _r _o _n over steps
    read -r worst _w _r _o _n over steps < <(steps_since "$1")
    echo "the server's worst step $worst ms, $over of its $steps steps over 100 ms"
}

# The parts of one live close(), averaged over the edits: from two
# readings of MNT/.worldfs-stats (before, after; "NAME COUNT MICROSECONDS")
# and the shell's times of each close ($3, microseconds).
breakdown() {
    awk -v shell="$3" '
        FNR == 1 { f++ }
        !/^#/ { if (f == 1) { n0[$1] = $2; us0[$1] = $3 } else { n[$1] = $2 - n0[$1]; us[$1] = $3 - us0[$1] } }
        function avg(k) { return n[k] > 0 ? us[k] / n[k] / 1000 : 0 }
        END {
            while ((getline t < shell) > 0) { c++; sum += t }
            edits = n["live-change"]
            if (!edits) { print "no live changes counted (an older mod?): no breakdown"; exit }
            flush = us["FLUSH"] / edits / 1000
            printf "breakdown of one live close(), averages of %d edits (ms): the shell'"'"'s echo > file %.1f; the daemon'"'"'s FLUSH requests %.1f, of which the change through the server %.1f:\n", edits, sum / c / 1000, flush, avg("live-change")
            printf "  request build %.2f (journal settle and request text), spool write+rename %.2f,\n", avg("live-build"), avg("live-spool")
            printf "  wait for the server'"'"'s step %.1f, behind other requests in that step %.2f, the mod'"'"'s read+check+apply %.2f,\n", avg("live-step"), avg("live-queue"), avg("live-apply")
            printf "  answer pickup %.2f, after the answer (shown overlay, saves, journal) %.2f; the rest of FLUSH (parse, validate, encode, stale check) %.2f\n", avg("live-reply"), avg("live-after"), flush - avg("live-change")
        }' "$1" "$2"
}

if [ "$EDITS" -gt 0 ]; then
    cat "$MNT/.worldfs-stats" > "$T/stats.before"
    since=$(last_step)
    node=5,3,5
    if [ -n "${LIVE_WORLD:-}" ]; then
        node=$(find "$MNT/blocks" -mindepth 1 -maxdepth 1 -print -quit | sed 's,.*/,,' |
            awk -F, '{ print $1 * 16 "," $2 * 16 "," $3 * 16 }')
    fi
    : > "$T/lat"
    for i in $(seq "$EDITS"); do
        name=$([ $((i % 2)) = 0 ] && echo default:mese || echo default:dirt)
        t0=$(date +%s%N)
        echo "$name" > "$MNT/node/$node"
        echo $(( ($(date +%s%N) - t0) / 1000 )) >> "$T/lat"
    done
    sort -n "$T/lat" > "$T/lat.sorted"
    pick() { sed -n "$(( (EDITS * $1 + 99) / 100 ))p" "$T/lat.sorted"; }
    echo "live edit of node $node, close() to applied, $EDITS edits: median $(( $(pick 50) / 1000 )) ms, p99 $(( $(pick 99) / 1000 )) ms, max $(( $(tail -1 "$T/lat.sorted") / 1000 )) ms; $(steps_said "$since") (load $(load))"
    cat "$MNT/.worldfs-stats" > "$T/stats.after"
    breakdown "$T/stats.before" "$T/stats.after" "$T/lat"
fi

if [ "$WRITERS" -gt 0 ] && [ "$WRITES" -gt 0 ]; then
    # A node of each of the first WRITERS stored blocks (its origin).
    ls "$MNT/blocks" | awk -v n="$WRITERS" 'NR <= n' | awk -F, '{ print $1 * 16 "," $2 * 16 "," $3 * 16 }' > "$T/writer.nodes"
    errors_before=$(wc -l < "$MNT/write-errors")
    since=$(last_step)
    t0=$(date +%s%N)
    pids=
    while read -r n; do
        # Two names by index, not by a command substitution: its fork in
        # every write would be the bench's cost, not the mount's.
        ( names=(default:mese default:dirt)
          for i in $(seq "$WRITES"); do
            echo "${names[i % 2]}" > "$MNT/node/$n"
          done ) &
        pids="$pids $!"
    done < "$T/writer.nodes"
    # Not a bare `wait`: the steps collector runs in the background too.
    wait $pids
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    writers=$(wc -l < "$T/writer.nodes")
    sleep 1
    read -r step _ requests _ _ over steps < <(steps_since "$since")
    echo "$writers writers x $WRITES node writes, each to its own block: $(( writers * WRITES )) writes in $ms ms, $(awk -v n=$(( writers * WRITES )) -v ms="$ms" 'BEGIN { printf "%.1f", n * 1000 / ms }') writes/s (goal >= 100/s); $(( $(wc -l < "$MNT/write-errors") - errors_before )) refused; the mod took $requests requests meanwhile in $steps server steps, the server's worst step $step ms, $over steps over 100 ms (load $(load))"
fi

t0=$(date +%s%N)
blocks=$(ls "$MNT/find/$RENAME_OLD" | wc -l)
echo "ls find/$RENAME_OLD: $blocks blocks in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
sleep 1
since=$(last_step)
sleep "$QUIET"
read -r quiet_step _ quiet_requests quiet_over quiet_windows quiet_steps_over quiet_steps < <(steps_since "$since")
echo "baseline, $QUIET s without edits: the server's longest step $quiet_step ms, $quiet_steps_over of $quiet_steps steps over 100 ms, $quiet_over of $quiet_windows half-second windows with one ($quiet_requests requests; load $(load))"

since=$(last_step)
log_from=$(wc -l < "$T/server.log")
reset_peak
live_base=$(peak_mb)
daemon_from=$(wc -l < "$T/daemon.log")
t0=$(date +%s%N)
mv "$MNT/find/$RENAME_OLD" "$MNT/find/$RENAME_NEW"
live_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
live_peak=$(peak_mb)
sleep 1.5
read -r worst_step worst_work requests over windows steps_over steps < <(steps_since "$since")
echo "live rename of $blocks blocks: $live_ms ms in $requests requests; the server's longest step $worst_step ms, $steps_over of $steps steps over 100 ms ($over of $windows half-second windows with one), the mod's most work in one step $worst_work ms (load $(load))"
# mv looks its names up first: a name index the server's saves made stale
# since the `ls` above is built again then (what the daemon logs).
rename_s=$(tail -n +$((daemon_from + 1)) "$T/daemon.log" | sed -n 's/.*: renamed .* in \([0-9.]*\) s, .*/\1/p' | tail -1)
rebuilt=$(tail -n +$((daemon_from + 1)) "$T/daemon.log" | grep -c 'name index: .* built in' || true)
echo "  of which the rename itself ${rename_s:-?} s (the daemon's log); the name index was built again $rebuilt time(s) during the mv (the server's saves had changed the map since the ls)"
echo "the daemon's peak memory during the live rename: $live_peak MB (goal <= 100 MB; $live_base MB at its start)"
# "... took T ms (parse P, check C, apply A)": the mod's time per request.
tail -n +"$((log_from + 1))" "$T/server.log" | sed -n 's/.*\[worldfs_live\] a request of .* took \([0-9.]*\) ms (parse \([0-9.]*\), check \([0-9.]*\), apply \([0-9.]*\)).*/\1 \2 \3 \4/p' |
    sort -n | awk '{ t[NR] = $1; p += $2; c += $3; a += $4 }
        END { if (NR) printf "the mod per request (%d): median %.1f ms, p99 %.1f ms, max %.1f ms; on average parse %.1f, check %.1f, apply %.1f ms\n",
              NR, t[int((NR + 1) / 2)], t[int((NR * 99 + 99) / 100)], t[NR], p / NR, c / NR, a / NR }'
tail -n +"$((log_from + 1))" "$T/server.log" | awk '
    /ServerMap: Written: / { for (i = 1; i <= NF; i++) if ($i == "Written:") { n++; b = $(i + 1); if (b > mb) mb = b } }
    /Server: map saving \(sum\)/ { t = $NF + 0; if (t > mt) mt = t }
    END { printf "the server'"'"'s map saves meanwhile: %d, at most %d blocks written in one, the longest %s ms\n", n, mb, mt + 0 }'
# "[worldfs_live] pace: N blocks per save interval (grow: ...)": the pace's changes.
paces=$(tail -n +"$((log_from + 1))" "$T/server.log" | sed -n 's/.*\[worldfs_live\] pace: \([0-9]*\) .*(\([a-z]*\): the save step took \([0-9]*\) ms, \([0-9]*\) blocks.*/\2 to \1 (\3 ms, \4)/p' | paste -sd, - || true)
echo "the mod's pace (blocks per save interval) meanwhile: ${paces:-unchanged}"
echo "the mod's three slowest requests:"
tail -n +"$((log_from + 1))" "$T/server.log" | grep '\[worldfs_live\] a request of' |
    sed 's/.*\[worldfs_live\] //' | awk '{ for (i = 1; i <= NF; i++) if ($i == "took") print $(i + 1), $0 }' |
    sort -rn | head -3 | cut -d' ' -f2- | sed 's/^/  /' || true
kill "$COLLECT" 2>/dev/null || true; wait "$COLLECT" 2>/dev/null || true; COLLECT=
fusermount3 -u "$MNT"
wait "$DPID" || true; DPID=
sleep 1
kill "$SPID"; wait "$SPID" || true; SPID=

"$WORLDFS" mount "$T/offline" "$MNT" -f 2>>"$T/daemon.log" &
DPID=$!
mounted
ls "$MNT/find/$RENAME_OLD" > /dev/null
reset_peak
t0=$(date +%s%N)
mv "$MNT/find/$RENAME_OLD" "$MNT/find/$RENAME_NEW"
offline_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "offline rename of the same blocks: $offline_ms ms, the daemon's peak $(peak_mb) MB; live/offline $(awk -v l="$live_ms" -v o="$offline_ms" 'BEGIN { printf "%.2f", (o > 0 ? l / o : 0) }')x (goal <= 2x quiet, <= 4x at load 7-9)"
fusermount3 -u "$MNT"
wait "$DPID" || true; DPID=
