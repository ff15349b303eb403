#!/usr/bin/env bash
# Make a synthetic large SQLite world by tiling a real one's blocks side by
# side (docs/performance.md, "Past the largest real world"): each tile is
# a copy of every block of the source, moved by whole tile widths along X
# and Z so that no two tiles overlap and every position stays in the
# engine's range (-2048..2047 blocks on each axis).
#
#   contrib/make-big-world.sh SRC DST TILES
#
# SRC is a world with a sqlite3 map (the 2.8M-block augsburg conversion
# that contrib/bench.sh makes); DST a new directory; TILES how many copies
# (a grid of up to as many columns along X as fit, then rows along Z).
# The tiles' blobs are the source's bytes: static objects keep the
# positions of the source tile (the engine would move them when the block
# is loaded); nothing in worldfs's reading depends on them.
#
# Needs sqlite3. 18 tiles of the 2.8M-block world make about 50.8M blocks
# and 4.8 GB.

set -euo pipefail
export LC_ALL=C

[[ $# == 3 ]] || { echo "usage: $0 SRC DST TILES" >&2; exit 2; }
SRC=$1 DST=$2 TILES=$3
command -v sqlite3 >/dev/null || { echo "$0: sqlite3 not found" >&2; exit 2; }
[[ -f $SRC/map.sqlite ]] || { echo "$0: $SRC/map.sqlite not found" >&2; exit 2; }
[[ -e $DST ]] && { echo "$0: $DST exists" >&2; exit 2; }
[[ $TILES =~ ^[1-9][0-9]*$ ]] || { echo "$0: TILES must be a positive number" >&2; exit 2; }
sqlite3 "$SRC/map.sqlite" "PRAGMA table_info(blocks)" | grep -q '|pos|' ||
    { echo "$0: only the engine's pos schema is tiled" >&2; exit 2; }

# The source's extent on each axis, in blocks (pos = z * 2^24 + y * 2^12 + x,
# each coordinate signed).
read -r x0 x1 z0 z1 < <(sqlite3 -separator ' ' "$SRC/map.sqlite" "
    WITH c AS (SELECT ((pos % 4096) + 6144) % 4096 - 2048 AS x, pos FROM blocks),
         r AS (SELECT x, (pos - x) / 4096 AS rest FROM c),
         z AS (SELECT x, (rest - (((rest % 4096) + 6144) % 4096 - 2048)) / 4096 AS z FROM r)
    SELECT min(x), max(x), min(z), max(z) FROM z")
w=$((x1 - x0 + 1)) d=$((z1 - z0 + 1))
cols=$((4096 / w)) rows=$((4096 / d))
((TILES <= cols * rows)) || { echo "$0: at most $((cols * rows)) tiles of ${w}x$d blocks fit" >&2; exit 2; }
echo "source: x $x0..$x1, z $z0..$z1 ($w x $d blocks); grid of up to $cols x $rows tiles"

part=$DST.partial
rm -rf "$part"
mkdir -p "$part"
cp "$SRC/world.mt" "$part/"
schema=$(sqlite3 "$SRC/map.sqlite" "SELECT sql FROM sqlite_master WHERE name = 'blocks'")
sqlite3 "$part/map.sqlite" "PRAGMA page_size = 4096; $schema;"
t0=$(date +%s)
for ((t = 0; t < TILES; t++)); do
    # Tile t at column t % cols, row t / cols; shifts keep every position
    # within -2048..2047 (the first tile's corner at the range's start).
    dx=$((-2048 - x0 + (t % cols) * w))
    dz=$((-2048 - z0 + (t / cols) * d))
    sqlite3 "$part/map.sqlite" "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        ATTACH '$SRC/map.sqlite' AS src;
        INSERT INTO blocks SELECT pos + $dx + $dz * 16777216, data FROM src.blocks;" >/dev/null
    echo "tile $((t + 1))/$TILES (x +$dx, z +$dz) after $(($(date +%s) - t0)) s"
done
n=$(sqlite3 "$part/map.sqlite" "SELECT count(*) FROM blocks")
mv "$part" "$DST"
echo "$DST: $n blocks, $(du -h "$DST/map.sqlite" | cut -f1), in $(($(date +%s) - t0)) s"
