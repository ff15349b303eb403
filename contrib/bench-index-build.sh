#!/usr/bin/env bash
# The cold build of the name index on a world, for the growth table of
# docs/performance.md (issue 28): mounts WORLD read-only with an empty
# index directory, times `ls MNT/find/NAME | wc -l` (which builds the index
# of every name), and prints the wall time, the daemon's CPU time during
# the build and its peak memory (VmHWM) before and after.
#
#   contrib/bench-index-build.sh WORLD [NAME]     (default: default:cobble)
#
# Environment: WORLDFS (the binary; default target/ci/worldfs).
set -euo pipefail

WORLD=${1:?usage: $0 WORLD [NAME]}
NAME=${2:-default:cobble}
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
# The process's user + system CPU time in seconds.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }

"$WORLDFS" mount "$WORLD" "$MNT" -f -o "ro,index_dir=$TMP/index" 2>"$TMP/daemon.log" &
DPID=$!
for ((i = 0; i < 3000; i++)); do
    [[ -e $MNT/README ]] && break
    kill -0 "$DPID" 2>/dev/null || { tail -3 "$TMP/daemon.log"; exit 1; }
    sleep 0.01
done
echo "world: $WORLD"
echo "daemon peak after mount: $(status_mb "$DPID" VmHWM) MB"
c0=$(cpu_s "$DPID")
t0=$(date +%s.%N)
blocks=$(ls "$MNT/find/$NAME" | wc -l)
t1=$(date +%s.%N)
c1=$(cpu_s "$DPID")
echo "ls find/$NAME, cold: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s wall," \
    "$(awk "BEGIN { printf \"%.1f\", $c1 - $c0 }") s daemon CPU, $blocks blocks"
echo "daemon peak after it: $(status_mb "$DPID" VmHWM) MB (now $(status_mb "$DPID" VmRSS) MB)"
echo "index file: $(du -sh "$TMP/index" | cut -f1)"
grep -h "name index" "$TMP/daemon.log" | tail -2 || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
