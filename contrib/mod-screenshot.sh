#!/usr/bin/env bash
# The worldfs_live mod's screenshot (contrib/worldfs_live/screenshot.png,
# for ContentDB: 3:2, 480x320): a live edit, drawn from above. The demo
# world runs in the real server with the mod; a writable mount of it hands
# the word LIVE, written in gold blocks through `node/X,Y,Z` files, to the
# server, which applies it; the server stops (and saves); `worldfs map`
# draws the world with the house and the word.
#
#   contrib/mod-screenshot.sh [OUT.png]
#
# Needs: a built worldfs (cargo build --release), minetestserver with
# minetest_game (minetest-server, minetest-data), FUSE.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/contrib/worldfs_live/screenshot.png}")
WORLDFS=${CARGO_TARGET_DIR:-$ROOT/target}/release/worldfs
[[ -x $WORLDFS ]] || { echo "no $WORLDFS: cargo build --release" >&2; exit 1; }
SERVER=/usr/games/minetestserver
[[ -x $SERVER ]] || { echo "no $SERVER (apt install minetest-server minetest-data)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/worldfs-modshot.XXXXXX")
server_pid=
cleanup() {
    fusermount3 -u "$TMP/mnt" 2>/dev/null || umount "$TMP/mnt" 2>/dev/null || true
    if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
world=$TMP/world
mkdir "$TMP/mnt" "$TMP/home"
"$WORLDFS" demo "$world" >/dev/null
"$WORLDFS" live install "$world" >/dev/null
# The server opens the map at the first block it loads: load one.
mkdir -p "$world/worldmods/shot_loader"
echo "name = shot_loader" >"$world/worldmods/shot_loader/mod.conf"
echo 'core.after(0.1, function() core.load_area({x = 0, y = 0, z = 0}) end)' >"$world/worldmods/shot_loader/init.lua"
printf 'server_announce = false\nbind_address = 127.0.0.1\n' >"$TMP/server.conf"
HOME=$TMP/home "$SERVER" --world "$world" --config "$TMP/server.conf" --port 30123 \
    --logfile "$TMP/server.log" </dev/null >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 200); do
    [[ -f $world/worldfs-live/server.json ]] && break
    sleep 0.1
done
[[ -f $world/worldfs-live/server.json ]] || { tail "$TMP/server.log" >&2; exit 1; }
sleep 1

"$WORLDFS" -v mount "$world" "$TMP/mnt" --log "$TMP/mount.log"
grep -q "changes go through the server" "$TMP/mount.log" || { cat "$TMP/mount.log" >&2; exit 1; }
# LIVE in a 3x5 font, on the ground (y = 0) west of the house, north up.
rows=("#...#.#.#.###"
      "#...#.#.#.#.."
      "#...#.#.#.##."
      "#...#.#.#.#.."
      "###.#..#..###")
for r in "${!rows[@]}"; do
    z=$((8 - r))
    row=${rows[$r]}
    for ((i = 0; i < ${#row}; i++)); do
        [[ ${row:$i:1} == "#" ]] || continue
        /bin/echo default:goldblock >"$TMP/mnt/node/$((i - 14)),0,$z"
    done
done
fusermount3 -u "$TMP/mnt"
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=
"$WORLDFS" map "$world" "$OUT" --area -16,-8 31,23 --scale 10
echo "wrote $OUT"
