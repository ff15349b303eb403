#!/usr/bin/env bash
# Minecraft Bedrock worlds (issue 43): `worldfs check` and a grep walk
# through a read-only mount, each against the independent reader's full
# read of the same database (tests/scripts/bedrock_oracle.js: leveldb-zlib
# and prismarine-chunk decoding every subchunk, block entity and player),
# in one run. It measures and prints; nothing passes or fails on a speed.
#
#   contrib/bench-bedrock.sh WORLD [RUNS]
#
# WORLD is a Bedrock world folder (level.dat + db/) or a .mcworld file
# (unpacked into a scratch folder first). Each figure runs RUNS times
# (default 3) from a cold start, each against the reader (farm-bench
# --vs):
#   A: `worldfs check` (every chunk of every dimension decoded);
#   A: `worldfs mount -o ro`, `grep -rl Chest MNT/chunks MNT/dimensions`
#      (every file of every chunk), unmount;
#   B: the reader's full read, on a copy of db/ (opening LevelDB writes).
#
# Environment: WORLDFS (default: target/release/worldfs, else target/ci),
# NPM (default: target/npm-oracle, where contrib/test.sh installs the
# reader). Needs: node, fuse3, farm-bench.
set -euo pipefail
export LC_ALL=C
SRC=$(realpath "${1:?usage: contrib/bench-bedrock.sh WORLD|FILE.mcworld [RUNS]}")
RUNS=${2:-3}
cd "$(dirname "$0")/.."
WORLDFS=${WORLDFS:-$( [ -x target/release/worldfs ] && echo target/release/worldfs || echo target/ci/worldfs )}
WORLDFS=$(realpath "$WORLDFS")
NPM=$(realpath "${NPM:-target/npm-oracle}")
ORACLE=$(realpath tests/scripts/bedrock_oracle.js)
T=$(mktemp -d)
W=$T/world MNT=$T/mnt
mkdir -p "$W" "$MNT"
cleanup() {
    fusermount3 -u "$MNT" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
if [ -f "$SRC" ]; then
    python3 -m zipfile -e "$SRC" "$W"
else
    cp -r "$SRC/." "$W/"
fi
# The reader opens a fresh copy of db/ each run.
reader="rm -rf $T/db && cp -r $W/db $T/db && node $ORACLE $NPM world $T/db > /dev/null"

echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "world: $SRC: db/ $(du -sh "$W/db" | cut -f1)"
"$WORLDFS" check "$W" | sed -n '1,/^corrupt/p'
"$WORLDFS" mount -o ro "$W" "$MNT"
echo "chunks: $(ls "$MNT/chunks" | wc -l) (overworld); files a walk reads: $(find "$MNT/chunks" "$MNT/dimensions" -type f | wc -l)"
fusermount3 -u "$MNT"
echo
echo "A: worldfs check (every chunk decoded); B: the reader's full read (leveldb-zlib, prismarine-chunk)"
farm-bench -n "$RUNS" --warmup 1 --timeout 3600 --vs "sh -c '$reader'" -- sh -c "$WORLDFS check $W > /dev/null"
echo
echo "A: worldfs mount + grep walk + umount; B: the reader's full read (A's cpu leaves out the daemon, which runs detached: compare wall times)"
walk="$WORLDFS mount -o ro $W $MNT && grep -rl Chest $MNT/chunks $MNT/dimensions > /dev/null; fusermount3 -u $MNT"
farm-bench -n "$RUNS" --warmup 1 --timeout 3600 --vs "sh -c '$reader'" -- sh -c "$walk"
