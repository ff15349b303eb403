#!/usr/bin/env bash
# The world-wide rename on a world, for the growth table of
# docs/performance.md (issue 28): mounts WORLD writable with an empty index
# directory, builds the name index first (`ls MNT/find/FROM`, timed apart),
# then times `mv MNT/find/FROM MNT/find/TO` and the move back, each with
# the daemon's user and system CPU time (from /proc/PID/stat before and
# after) and its peak memory (VmHWM), and prints the daemon's log of the
# rename's parts. The world is changed (and changed back): use a copy.
#
#   contrib/bench-rename.sh WORLD [FROM [TO]]
#       (default: default:cobble default:mossycobble)
#
# Environment: WORLDFS (the binary; default target/ci/worldfs), OPTS (more
# mount options, e.g. cache_mb=16), BACK=0 (leave out the move back).
set -euo pipefail

WORLD=${1:?usage: $0 WORLD [FROM [TO]]}
FROM=${2:-default:cobble}
TO=${3:-default:mossycobble}
WORLDFS=${WORLDFS:-$(dirname "$0")/../target/ci/worldfs}
TMP=$(mktemp -d)
MNT=$TMP/mnt
mkdir -p "$MNT" "$TMP/index"

cleanup() {
    fusermount3 -u "$MNT" 2>/dev/null || true
    [[ -n ${DPID:-} ]] && wait "$DPID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

# A field of /proc/PID/status in MB.
status_mb() { awk -v k="$2:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
# The process's user and system CPU time in seconds ("U S").
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f %.2f\n", $14 / hz, $15 / hz }' "/proc/$1/stat"; }
now() { date +%s.%N; }

# Runs "$@", then prints LABEL: wall, the daemon's user + system CPU, peak.
timed() {
    local label=$1 t0 t1 u0 s0 u1 s1
    shift
    read -r u0 s0 < <(cpu_us "$DPID")
    t0=$(now)
    "$@"
    t1=$(now)
    read -r u1 s1 < <(cpu_us "$DPID")
    awk -v l="$label" -v w="$(awk "BEGIN { print $t1 - $t0 }")" -v u="$(awk "BEGIN { print $u1 - $u0 }")" \
        -v s="$(awk "BEGIN { print $s1 - $s0 }")" -v p="$(status_mb "$DPID" VmHWM)" \
        'BEGIN { printf "%s: %.1f s wall, daemon CPU %.1f s user + %.1f s system, daemon peak %d MB\n", l, w, u, s, p }'
}

"$WORLDFS" mount "$WORLD" "$MNT" -f -v -o "index_dir=$TMP/index${OPTS:+,$OPTS}" 2>"$TMP/daemon.log" &
DPID=$!
for ((i = 0; i < 3000; i++)); do
    [[ -e $MNT/README ]] && break
    kill -0 "$DPID" 2>/dev/null || { tail -3 "$TMP/daemon.log"; exit 1; }
    sleep 0.01
done
echo "world: $WORLD ($(sqlite3 "$WORLD/map.sqlite" 'SELECT count(*) FROM blocks') blocks)"
echo "daemon peak after mount: $(status_mb "$DPID" VmHWM) MB"
timed "index build (ls find/$FROM, cold)" sh -c 'ls "$1" >"$2"' - "$MNT/find/$FROM" "$TMP/list"
echo "  $(wc -l <"$TMP/list") blocks hold $FROM"
timed "mv find/$FROM find/$TO" mv "$MNT/find/$FROM" "$MNT/find/$TO"
[[ ${BACK:-1} == 0 ]] || timed "mv back" mv "$MNT/find/$TO" "$MNT/find/$FROM"
echo "daemon's log of the renames:"
grep -E "rename part|renamed .* in .* block|name index" "$TMP/daemon.log" | sed 's/^/  /' || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
