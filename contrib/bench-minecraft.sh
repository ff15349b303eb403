#!/usr/bin/env bash
# Minecraft Java worlds (issue 30): a grep walk through a read-only mount
# against the independent Python reader's full read of the same region
# files, in one run (docs/performance.md has the figures). It measures
# and prints; nothing passes or fails on a speed.
#
#   contrib/bench-minecraft.sh WORLD [REGIONS [RUNS [WHAT]]]
#
# WORLD is a Java world folder (level.dat + region/). The first REGIONS
# region files (default 1, largest first; 0: all) are copied with level.dat
# into a scratch world, so that the Python reader, which decodes block by
# block, finishes in minutes. Then, in turn (farm-bench --vs, RUNS pairs,
# default 3), each from a cold start:
#   A: `worldfs mount -o ro`, `grep -rl minecraft:chest MNT/chunks` (every
#      file of every chunk: info, palettes, blocks, light, biomes, block
#      entities, entities, heightmaps), unmount;
#   B: tests/scripts/mc_oracle.py (anvil-parser2): every chunk, every
#      section's 4096 block states, every block entity.
# Then `worldfs check` of the same world (every chunk decoded: NBT,
# sections and their palette indices, biomes, light, block entities,
# heightmaps, on all cores) against B again, RUNS pairs. WHAT: walk,
# check or both (the default).
#
# Environment: WORLDFS (default: target/release/worldfs, else target/ci).
# Needs: python3 with anvil-parser2 (contrib/test.sh installs it), fuse3,
# farm-bench.
set -euo pipefail
export LC_ALL=C
WORLD=$(realpath "${1:?usage: contrib/bench-minecraft.sh WORLD [REGIONS [RUNS]]}")
REGIONS=${2:-1}
RUNS=${3:-3}
WHAT=${4:-both}
cd "$(dirname "$0")/.."
WORLDFS=${WORLDFS:-$( [ -x target/release/worldfs ] && echo target/release/worldfs || echo target/ci/worldfs )}
WORLDFS=$(realpath "$WORLDFS")
ORACLE=$(realpath tests/scripts/mc_oracle.py)
T=$(mktemp -d)
W=$T/world MNT=$T/mnt
mkdir -p "$W/region" "$MNT"
cleanup() {
    fusermount3 -u "$MNT" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT

cp "$WORLD/level.dat" "$W/"
ls -S "$WORLD/region" | grep -E '^r\.-?[0-9]+\.-?[0-9]+\.mca$' | { [ "$REGIONS" = 0 ] && cat || head -n "$REGIONS"; } |
    while read -r r; do cp "$WORLD/region/$r" "$W/region/"; done

echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "world: $WORLD: $(ls "$W/region" | wc -l) region file(s) ($(ls "$W/region" | tr '\n' ' ')), $(du -sh "$W/region" | cut -f1)"
"$WORLDFS" mount -o ro "$W" "$MNT"
echo "chunks: $(ls "$MNT/chunks" | wc -l); files a walk reads: $(find "$MNT/chunks" -type f | wc -l); chests: $(grep -rl minecraft:chest "$MNT/chunks" | wc -l) files"
fusermount3 -u "$MNT"
echo "oracle: $(python3 "$ORACLE" "$W" | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
echo
if [ "$WHAT" != check ]; then
echo "A: worldfs mount + grep walk + umount; B: anvil-parser2 full read (A's cpu leaves out the daemon, which runs detached: compare wall times)"
walk="$WORLDFS mount -o ro $W $MNT && grep -rl minecraft:chest $MNT/chunks > /dev/null; fusermount3 -u $MNT"
farm-bench -n "$RUNS" --warmup 1 --timeout 3600 --vs "sh -c 'exec python3 $ORACLE $W > /dev/null'" -- sh -c "$walk"
fi
[ "$WHAT" = walk ] && exit 0
echo
echo "A: worldfs check (every chunk decoded); B: anvil-parser2 full read"
"$WORLDFS" check "$W" | sed -n '1,/^corrupt/p'
farm-bench -n "$RUNS" --warmup 1 --timeout 3600 --vs "sh -c 'exec python3 $ORACLE $W > /dev/null'" -- \
    sh -c "$WORLDFS check $W > /dev/null"
