#!/usr/bin/env bash
# Make src/view/colors.txt, the node colours of top.png and MNT/map/: the
# real server (Debian's minetest-server + minetest-data) lists every node of
# minetest_game with its top texture, and each colour is the average of
# that texture's opaque pixels (examples/make_colors.rs). Output in
# minetestmapper's colors.txt format ("name r g b").
set -euo pipefail
cd "$(dirname "$0")/.."
server=/usr/games/minetestserver
[ -x "$server" ] || { echo "needs minetest-server and minetest-data (apt-get install minetest-server minetest-data)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/world/worldmods/worldfs_dump_nodes" "$tmp/home"
printf 'gameid = minetest\nbackend = sqlite3\n' >"$tmp/world/world.mt"
printf 'name = worldfs_dump_nodes\n' >"$tmp/world/worldmods/worldfs_dump_nodes/mod.conf"
cp contrib/colors/dump_nodes.lua "$tmp/world/worldmods/worldfs_dump_nodes/init.lua"
printf 'server_announce = false\nbind_address = 127.0.0.1\n' >"$tmp/conf"
HOME=$tmp/home "$server" --world "$tmp/world" --config "$tmp/conf" --port 30999 --logfile "$tmp/log" >/dev/null 2>&1 || {
    tail -20 "$tmp/log" >&2
    exit 1
}
cargo run --quiet --example make_colors -- "$tmp/world/nodes.txt" \
    /usr/share/games/minetest/games/minetest_game/mods >src/view/colors.txt
echo "src/view/colors.txt: $(wc -l <src/view/colors.txt) nodes"
