#!/usr/bin/env bash
# Snapshots (issue 40) on a sqlite3 world, beside Debian's restic over the
# world directory and `sqlite3 .backup`, in one run, on a copy of WORLD:
#
#   1. `worldfs check` (the first snapshot's goal is relative to it);
#   2. the first snapshot: time and bytes; restic's first backup and
#      `sqlite3 .backup`: the same;
#   3. SED_OLD renamed to SED_NEW in CHANGED blocks through a writable mount
#      (`sed -i` on their names files), then the second snapshot: time and
#      bytes added; restic's second backup: the same;
#   4. `worldfs diff` between the two snapshots;
#   5. the restore of a 3x3x3-block area around the first changed block
#      from the first snapshot (`worldfs restore`), against restic's
#      restore of the same: the map file restored from the first backup,
#      then the same 27 blocks copied from it into the world;
#
# and prints the figures with the goals of the issue. It only measures.
#
#   contrib/bench-snapshot.sh WORLD
#
# Environment: WORLDFS (the binary; default target/ci/worldfs), SED_OLD,
# SED_NEW (default:cobble, default:mossycobble), CHANGED (1000). Needs
# restic and sqlite3 (apt-get install restic sqlite3) and FUSE.
set -euo pipefail

WORLD=${1:?usage: $0 WORLD}
WORLDFS=$(realpath "${WORLDFS:-$(dirname "$0")/../target/ci/worldfs}")
SED_OLD=${SED_OLD:-default:cobble}
SED_NEW=${SED_NEW:-default:mossycobble}
CHANGED=${CHANGED:-1000}
for tool in restic sqlite3 fusermount3; do
    command -v "$tool" >/dev/null || { echo "bench-snapshot.sh: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
[[ -f $WORLD/map.sqlite ]] || { echo "bench-snapshot.sh: $WORLD has no map.sqlite" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/worldfs-bench-snapshot.XXXXXX")
W=$TMP/world
STORE=$TMP/store
export RESTIC_REPOSITORY=$TMP/restic RESTIC_PASSWORD=bench RESTIC_CACHE_DIR=$TMP/restic-cache
DPID=
cleanup() {
    [[ -n $DPID ]] && { fusermount3 -u "$TMP/mnt" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; }
    rm -rf "$TMP"
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
bytes() { du -sb "$1" | cut -f1; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
row() { printf '  %-52s %10s %12s  %s\n' "$1" "$2" "$3" "${4:-}"; }
# Runs "$@" and prints its wall time in seconds (its output to $TMP/out).
timed() {
    local t0
    t0=$(now)
    "$@" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err" >&2; return 1; }
    secs "$t0" "$(now)"
}

mkdir -p "$W"
cp "$WORLD/world.mt" "$WORLD/map.sqlite" "$W/"
BLOCKS=$(sqlite3 "$W/map.sqlite" 'SELECT count(*) FROM blocks')
echo "world: $WORLD ($BLOCKS blocks, map.sqlite $(mb "$(bytes "$W/map.sqlite")")), copied to $TMP"
echo "restic: $(restic version | cut -d' ' -f1-2); load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-52s %10s %12s  %s\n' figure time bytes goal

CHECK=$(timed "$WORLDFS" check "$W" || true)
row "worldfs check" "$CHECK s" ""
FIRST=$(timed "$WORLDFS" snapshot "$W" --store "$STORE" --name first --json)
FIRST_BYTES=$(bytes "$STORE")
restic init >/dev/null 2>&1
R1=$(timed restic backup --quiet "$W")
R1_BYTES=$(bytes "$RESTIC_REPOSITORY")
R1_ID=$(restic snapshots --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["short_id"])')
B1=$(timed sqlite3 "$W/map.sqlite" ".backup '$TMP/backup.sqlite'")
row "first snapshot" "$FIRST s" "$(mb "$FIRST_BYTES")" \
    "<= 1.5x check ($(awk -v a="$FIRST" -v b="$CHECK" 'BEGIN { printf "%.2fx", a / b }')), <= 0.5x restic's bytes ($(awk -v a="$FIRST_BYTES" -v b="$R1_BYTES" 'BEGIN { printf "%.2fx", a / b }'))"
row "restic backup, first" "$R1 s" "$(mb "$R1_BYTES")"
row "sqlite3 .backup" "$B1 s" "$(mb "$(bytes "$TMP/backup.sqlite")")"

# CHANGED blocks changed through a writable mount, as an admin would.
mkdir -p "$TMP/mnt"
"$WORLDFS" mount "$W" "$TMP/mnt" -f -o "index_dir=$TMP/index" 2>"$TMP/daemon.log" &
DPID=$!
for ((i = 0; i < 3000; i++)); do [[ -e $TMP/mnt/README ]] && break; sleep 0.01; done
ls "$TMP/mnt/find/$SED_OLD" 2>/dev/null | head -n "$CHANGED" >"$TMP/changed" || true
while read -r b; do sed -i "s/ $SED_OLD\$/ $SED_NEW/" "$TMP/mnt/blocks/$b/names"; done <"$TMP/changed"
fusermount3 -u "$TMP/mnt"
wait "$DPID" || true
DPID=
N=$(wc -l <"$TMP/changed")
echo "  ($N blocks changed: $SED_OLD renamed to $SED_NEW through the mount)"

SECOND=$(timed "$WORLDFS" snapshot "$W" --store "$STORE" --name second --json)
ADDED=$(($(bytes "$STORE") - FIRST_BYTES))
NEW_BLOBS=$(awk -F': ' '/"new_bytes"/ { gsub(",", "", $2); print $2 }' "$TMP/out")
R2=$(timed restic backup --quiet "$W")
R2_ADDED=$(($(bytes "$RESTIC_REPOSITORY") - R1_BYTES))
row "second snapshot, after $N changed blocks" "$SECOND s" "+$(mb "$ADDED")" \
    "<= 3 s, <= 2 MB, <= restic's (blobs $(mb "$NEW_BLOBS"))"
row "restic backup, second" "$R2 s" "+$(mb "$R2_ADDED")"

DIFF=$(timed "$WORLDFS" diff "$W" first second --store "$STORE")
row "worldfs diff first second" "$DIFF s" "" "<= 2 s ($(head -1 "$TMP/out"))"

# A 3x3x3-block area around the first changed block.
if [[ $N -gt 0 ]]; then
    IFS=, read -r bx by bz <<<"$(head -1 "$TMP/changed")"
    A="$(((bx - 1) * 16)),$(((by - 1) * 16)),$(((bz - 1) * 16))"
    B="$(((bx + 2) * 16 - 1)),$(((by + 2) * 16 - 1)),$(((bz + 2) * 16 - 1))"
    RESTORE=$(timed "$WORLDFS" restore "$W" first --store "$STORE" --area "$A" "$B")
    row "worldfs restore of 3x3x3 blocks ($A $B)" "$RESTORE s" "" "<= 1 s"
    "$WORLDFS" undo "$W" --last 1 >/dev/null
    # restic: the map file of the first backup, then the same 27 blocks.
    if sqlite3 "$W/map.sqlite" 'PRAGMA table_info(blocks)' | grep -q '|pos|'; then
        WHERE="pos IN ($(for dx in -1 0 1; do for dy in -1 0 1; do for dz in -1 0 1; do
            echo $(((bz + dz) * 16777216 + (by + dy) * 4096 + bx + dx)); done; done; done | paste -sd,))"
    else
        WHERE="x BETWEEN $((bx - 1)) AND $((bx + 1)) AND y BETWEEN $((by - 1)) AND $((by + 1)) \
            AND z BETWEEN $((bz - 1)) AND $((bz + 1))"
    fi
    t0=$(now)
    restic restore "$R1_ID" --quiet --target "$TMP/r" --include "$W/map.sqlite" >/dev/null
    sqlite3 "$W/map.sqlite" "ATTACH '$TMP/r$W/map.sqlite' AS old;
        DELETE FROM blocks WHERE $WHERE;
        INSERT INTO blocks SELECT * FROM old.blocks WHERE $WHERE;"
    row "restic restore of the map + copying those 27 blocks" "$(secs "$t0" "$(now)") s" ""
fi
