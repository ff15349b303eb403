#!/usr/bin/env bash
# Benchmarks of the LevelDB backend (docs/performance.md has the figures).
# Nothing here passes or fails on a speed: it measures and prints.
#
#   contrib/bench-leveldb.sh
#
# On the real 2.8 M-block world ../shared/realdata/worlds/augsburg-leveldb
# (read in place: LevelDB read-only opens never write to the directory) and
# on its conversion to sqlite3 by the real server (made once, kept in the
# data directory), it prints for each backend: `worldfs check` (wall, CPU,
# peak RSS), the read-only mount's start, `ls MNT/blocks | wc -l` over all
# blocks, and the grep walk (`grep -l` over MNT/blocks/*/names of the
# first WALK_BLOCKS blocks in listing order). Then, on a copy of the
# LevelDB world, `sed -i` renaming a node type in BULK_MAX blocks through a
# writable mount (one synced write batch and journal entry per file).
#
# Environment:
#   WORLDFS_BENCH_DATA  data directory (default: ../bench-data beside the repo)
#   WORLDFS_SHARED      the shared data directory (default: ../shared)
#   CARGO_TARGET_DIR    where cargo builds (default: the crate's target/)
#   WALK_BLOCKS         blocks in the grep walk (100000)
#   BULK_MAX            blocks edited by sed -i (1000)
#   GREP_NAME           node type grep looks for (default:chest)
#   SED_OLD, SED_NEW    node type renamed (default:stone -> default:cobble)

# shellcheck disable=SC2016
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=$(realpath -m "${WORLDFS_SHARED:-$ROOT/../shared}")
DATA=$(realpath -m "${WORLDFS_BENCH_DATA:-$ROOT/../bench-data}")
SRC=$SHARED/realdata/worlds/augsburg-leveldb
CONVERTED=$DATA/augsburg-sqlite
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORLDFS=$TARGET/release/worldfs
WALK_BLOCKS=${WALK_BLOCKS:-100000}
BULK_MAX=${BULK_MAX:-1000}
export GREP_NAME=${GREP_NAME:-default:chest}
export SED_OLD=${SED_OLD:-default:stone}
export SED_NEW=${SED_NEW:-default:cobble}

die() {
    echo "bench-leveldb.sh: $*" >&2
    exit 2
}

TMPROOT=$(mktemp -d)
DPID=
MNT=
stop_daemon() {
    if [[ -n $DPID ]]; then
        kill -TERM "$DPID" 2>/dev/null || true
        wait "$DPID" 2>/dev/null || true
        DPID=
    fi
    if [[ -n $MNT ]] && mountpoint -q "$MNT" 2>/dev/null; then
        fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    fi
}
cleanup() {
    stop_daemon
    rm -rf "$TMPROOT"
}
trap cleanup EXIT

[[ -d $SRC/map.db ]] || die "no $SRC/map.db"
(cd "$ROOT" && cargo build --release -j2 --quiet) || die "build failed"

if [[ ! -f $CONVERTED/map.sqlite ]]; then
    server=$(command -v minetestserver || echo /usr/games/minetestserver)
    [[ -x $server ]] || die "needs minetest-server to convert the world to sqlite3 once"
    echo "converting $SRC to sqlite3 with $server (once) ..."
    mkdir -p "$CONVERTED"
    cp -r "$SRC"/. "$CONVERTED"/
    chmod -R u+w "$CONVERTED"
    printf 'server_announce = false\n' >"$TMPROOT/conv.conf"
    HOME=$TMPROOT "$server" --world "$CONVERTED" --config "$TMPROOT/conv.conf" \
        --logfile "$TMPROOT/conv.log" --migrate sqlite3 >/dev/null 2>&1 || die "conversion failed"
    rm -rf "$CONVERTED/map.db"
fi

# Run a command, print "label: wall s, CPU s, peak RSS MB" (GNU time).
timed() {
    local label=$1
    shift
    /usr/bin/time -f "%e %U %S %M" -o "$TMPROOT/time" "$@" >/dev/null 2>&1 || echo "($label failed)"
    read -r wall user sys rss <"$TMPROOT/time"
    printf '  %-34s %7.2f s wall  %7.2f s CPU  %6.1f MB peak RSS\n' "$label" "$wall" \
        "$(echo "$user + $sys" | bc)" "$(echo "scale=1; $rss / 1024" | bc)"
}

# Mount `world` read-only (or with `opts`), print the time until README exists.
mount_world() {
    local world=$1 opts=$2
    MNT=$TMPROOT/mnt
    mkdir -p "$MNT"
    local t0
    t0=$(date +%s%N)
    local args=()
    [[ $opts == rw ]] || args=(-o "$opts")
    "$WORLDFS" mount "$world" "$MNT" -f "${args[@]}" 2>"$TMPROOT/daemon.log" &
    DPID=$!
    until [[ -e $MNT/README ]]; do
        kill -0 "$DPID" 2>/dev/null || die "mount failed: $(cat "$TMPROOT/daemon.log")"
        sleep 0.01
    done
    printf '  %-34s %7.2f s\n' "mount ($opts)" "$(echo "scale=3; ($(date +%s%N) - $t0) / 1000000000" | bc)"
}

walk() {
    local t0 t1 n
    t0=$(date +%s%N)
    ls "$MNT/blocks" >"$TMPROOT/all"
    t1=$(date +%s%N)
    n=$(wc -l <"$TMPROOT/all")
    printf '  %-34s %7.2f s  (%d blocks, %.0f entries/s)\n' "ls MNT/blocks (all)" \
        "$(echo "scale=3; ($t1 - $t0) / 1000000000" | bc)" "$n" "$(echo "$n * 1000000000 / ($t1 - $t0)" | bc)"
    head -n "$WALK_BLOCKS" "$TMPROOT/all" | sed "s|^|$MNT/blocks/|; s|\$|/names|" >"$TMPROOT/walk"
    t0=$(date +%s%N)
    n=$(xargs -a "$TMPROOT/walk" grep -l "$GREP_NAME" | wc -l || true)
    t1=$(date +%s%N)
    printf '  %-34s %7.2f s  (%d blocks, %.0f blocks/s, %d with %s)\n' "grep -l over names (walk)" \
        "$(echo "scale=3; ($t1 - $t0) / 1000000000" | bc)" "$(wc -l <"$TMPROOT/walk")" \
        "$(echo "$(wc -l <"$TMPROOT/walk") * 1000000000 / ($t1 - $t0)" | bc)" "$n" "$GREP_NAME"
    printf '  %-34s %7.1f MB\n' "daemon peak RSS" "$(awk '/VmHWM/ { print $2 / 1024 }' "/proc/$DPID/status")"
}

for backend in leveldb sqlite3; do
    if [[ $backend == leveldb ]]; then world=$SRC; else world=$CONVERTED; fi
    echo "== $backend: $world"
    timed "worldfs check" "$WORLDFS" check "$world"
    mount_world "$world" ro
    walk
    stop_daemon
done

echo "== leveldb, writable copy: sed -i over $BULK_MAX blocks"
cp -r "$SRC" "$TMPROOT/copy"
chmod -R u+w "$TMPROOT/copy"
mount_world "$TMPROOT/copy" rw
# The first BULK_MAX blocks (in listing order) that have the node type.
head -n 200000 "$TMPROOT/all" | sed "s|^|$MNT/blocks/|; s|\$|/names|" >"$TMPROOT/candidates"
: >"$TMPROOT/bulk"
while read -r f && (($(wc -l <"$TMPROOT/bulk") < BULK_MAX)); do
    if grep -q " $SED_OLD\$" "$f"; then echo "$f" >>"$TMPROOT/bulk"; fi
done <"$TMPROOT/candidates"
t0=$(date +%s%N)
xargs -a "$TMPROOT/bulk" sed -i "s/ $SED_OLD\$/ $SED_NEW/"
t1=$(date +%s%N)
n=$(wc -l <"$TMPROOT/bulk")
printf '  %-34s %7.2f s  (%d blocks, %.0f blocks/s)\n' "sed -i $SED_OLD -> $SED_NEW" \
    "$(echo "scale=3; ($t1 - $t0) / 1000000000" | bc)" "$n" "$(echo "$n * 1000000000 / ($t1 - $t0)" | bc)"
stop_daemon
printf '  %-34s %s\n' "journal entries" "$("$WORLDFS" undo "$TMPROOT/copy" --all | grep -c '^ *#' || true)"
