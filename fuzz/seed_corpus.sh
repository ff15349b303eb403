#!/bin/sh
# Seed the fuzz corpora from real worlds.
#
# 1. Extracts real block blobs from ../shared/realdata/worlds/*/map.sqlite
#    (or $WORLDFS_SHARED/realdata/worlds) into corpus/block_decode/: per
#    world the largest blocks (most metadata, objects and node variety)
#    and an evenly spread sample of the rest; PER_WORLD (default 80)
#    blobs each.
# 2. Runs examples/seed_corpus.rs on them (stable toolchain is enough) to
#    derive the seeds of the other targets: uncompressed bodies for
#    block_body, inventories, item strings, metadata keys, rendered files...
#    (scanning every block of the worlds, read-only, for the text seeds).
#
# 3. Runs examples/twmap_seeds.rs on ../shared/realdata/formats/twmap (the
#    twmap_* targets).
#
# The corpus directory is git-ignored. Running it again adds only what is
# new (file names are content hashes / block keys).
set -eu
cd "$(dirname "$0")"
shared="${WORLDFS_SHARED:-../../shared}"
worlds="$shared/realdata/worlds"

# Teeworlds/DDNet maps (twmap_* targets): the real maps, also in version 3
# form (raw data), and the files of the example map.
if [ -d "$shared/realdata/formats/twmap" ]; then
    cargo run --quiet --example twmap_seeds -- "$shared/realdata/formats/twmap" corpus
fi

per_world="${PER_WORLD:-80}"
half=$((per_world / 2))
out=corpus/block_decode
mkdir -p "$out"

command -v sqlite3 >/dev/null || { echo "seed_corpus.sh: needs the sqlite3 CLI" >&2; exit 1; }
[ -d "$worlds" ] || { echo "seed_corpus.sh: no $worlds (set WORLDFS_SHARED)" >&2; exit 1; }

found=0
for db in "$worlds"/*/map.sqlite; do
    [ -f "$db" ] || continue
    found=1
    world=$(basename "$(dirname "$db")")
    # rowid exists in every schema (pos-keyed and x,y,z-keyed alike).
    # writefile() is the sqlite3 shell's own function.
    sqlite3 -readonly "$db" "
        WITH picked AS (
            SELECT rowid AS id, data FROM (
                SELECT rowid, data FROM blocks ORDER BY length(data) DESC LIMIT $half)
            UNION
            SELECT rowid AS id, data FROM (
                SELECT rowid, data FROM blocks ORDER BY (rowid * 2654435761) % 1000003 LIMIT $half)
        )
        SELECT sum(writefile('$out/real-$world-' || id, data) > 0) FROM picked;" |
        sed "s|^|$world: blobs written: |"
done
[ "$found" = 1 ] || { echo "seed_corpus.sh: no map.sqlite under $worlds" >&2; exit 1; }
echo "corpus/block_decode: $(ls "$out" | wc -l) files"

cargo run --quiet --example seed_corpus -- "$out" corpus "$worlds"/*/map.sqlite
for d in corpus/*/; do
    echo "$d: $(ls "$d" | wc -l) files"
done
