#!/usr/bin/env bash
# Is worldfs a good neighbour to the game server (issue 28)? Runs a real
# minetest server on a copy of WORLD (a world mod records every server
# step's dtime), and for each set of mount options, in turn, ROUNDS times:
# a CPU-bound neighbour (a Python busy loop) while a grep walk of every
# block's `names` (read-only mount) or a bulk edit (`sed -i` over 300
# blocks' `names` swapping two node names, writable mount with --force: the
# server has no players and loads none of those blocks) runs. Prints per
# run: the walk's or edit's wall time, the daemon's CPU time, the
# neighbour's iterations per second and the server's step times.
#
#   contrib/bench-neighbour.sh WORLD [walk|edit] [ROUNDS]
#
# Environment: WORLDFS (default target/ci/worldfs), GAME (minetest_game),
# OPTION_SETS (default: "default nospin nocpu_follow nospin,nocpu_follow";
# a set OPTS@PATH runs the binary at PATH with OPTS, to compare builds in
# one run, e.g. "default default@/tmp/worldfs-before nocpu_follow").
# docs/performance.md ("A good neighbour") has a run's figures.
set -euo pipefail

SRC=${1:?usage: $0 WORLD [walk|edit] [ROUNDS]}
MODE=${2:-walk}
ROUNDS=${3:-3}
WORLDFS=$(realpath "${WORLDFS:-$(dirname "$0")/../target/ci/worldfs}")
GAME=${GAME:-minetest_game}
SERVER=/usr/lib/minetest/minetestserver
read -r -a SETS <<<"${OPTION_SETS:-default nospin nocpu_follow nospin,nocpu_follow}"
WORK=$(mktemp -d /tmp/worldfs-neighbour.XXXXXX)
W=$WORK/world MNT=$WORK/mnt
SPID= DPID=

cleanup() {
    fusermount3 -u "$MNT" 2>/dev/null || true
    [[ -n $SPID ]] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

cp -a "$SRC" "$W"
rm -f "$W"/worldfs-journal.sqlite "$W"/minetest.conf
sed -i "s/^gameid = .*/gameid = $GAME/; s/^\(load_mod_.*\) = true/\1 = false/" "$W/world.mt"
mkdir -p "$W/worldmods/steplog" "$MNT"
echo "name = steplog" >"$W/worldmods/steplog/mod.conf"
cat >"$W/worldmods/steplog/init.lua" <<'EOF'
-- Every server step's dtime, written to steps.txt when the file "mark"
-- appears in the world directory (and at shutdown).
local path = minetest.get_worldpath()
local steps = {}
minetest.register_globalstep(function(dtime) steps[#steps + 1] = string.format("%.4f", dtime) end)
local function dump()
	local f = io.open(path .. "/steps.txt", "w")
	f:write(table.concat(steps, "\n"), "\n")
	f:close()
end
minetest.register_on_shutdown(dump)
local acc = 0
minetest.register_globalstep(function(dtime)
	acc = acc + dtime
	if acc < 0.5 then return end
	acc = 0
	local f = io.open(path .. "/mark", "r")
	if f then f:close(); os.remove(path .. "/mark"); dump() end
end)
EOF
cat >"$WORK/neighbour.py" <<'EOF'
import signal, sys, time
n, t0 = 0, time.perf_counter()
def done(*_):
    print(f"{n / (time.perf_counter() - t0):.0f}", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    for _ in range(10000):
        n += 1
EOF
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'server_announce = false\nenable_rollback_recording = false\nport = %s\n' "$PORT" >"$WORK/server.conf"
HOME=$WORK "$SERVER" --world "$W" --config "$WORK/server.conf" --logfile "$WORK/server.log" \
    --gameid "$GAME" >/dev/null 2>&1 &
SPID=$!

# The number of steps recorded so far (asks the mod to write them out).
steps_count() {
    touch "$W/mark"
    while [[ -e $W/mark ]]; do
        kill -0 "$SPID" 2>/dev/null || { tail -3 "$WORK/server.log"; exit 1; }
        sleep 0.1
    done
    wc -l <"$W/steps.txt"
}
steps_count >/dev/null

one_run() {
    local label=$1 opts=$2 bin=$WORLDFS n0 n1 t0 t1 np cpu
    if [[ $opts == *@* ]]; then
        bin=${opts#*@} opts=${opts%%@*}
    fi
    [[ $opts == default ]] && opts=""
    if [[ $MODE == edit ]]; then
        "$bin" mount "$W" "$MNT" -f --force -o "rw${opts:+,$opts}" 2>>"$WORK/daemon.log" &
    else
        "$bin" mount "$W" "$MNT" -f -o "ro${opts:+,$opts}" 2>>"$WORK/daemon.log" &
    fi
    DPID=$!
    for ((i = 0; i < 1000; i++)); do [[ -e $MNT/README ]] && break; sleep 0.01; done
    if [[ $MODE == edit && ! -s $WORK/edit.list ]]; then
        # The first 300 blocks holding stone (of the first 3000).
        { ls "$MNT/blocks" | head -3000 | sed "s|^|$MNT/blocks/|; s|\$|/names|" |
            xargs grep -l " default:stone$" 2>/dev/null || true; } | head -300 | sed "s|^$MNT/||" >"$WORK/edit.list"
    fi
    n0=$(steps_count)
    python3 "$WORK/neighbour.py" >"$WORK/neighbour.out" &
    np=$!
    t0=$(date +%s.%N)
    if [[ $MODE == edit ]]; then
        sed "s|^|$MNT/|" "$WORK/edit.list" | xargs sed -i -e 's/ default:stone$/ default:TMP/' \
            -e 's/ default:desert_stone$/ default:stone/' -e 's/ default:TMP$/ default:desert_stone/'
    else
        printf '%s\0' "$MNT"/blocks/*/names | xargs -0 grep -l -x -- "[0-9]* default:chest" >/dev/null || true
    fi
    t1=$(date +%s.%N)
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$DPID/stat")
    kill -TERM "$np"
    wait "$np" || true
    n1=$(steps_count)
    fusermount3 -u "$MNT"
    wait "$DPID" || true
    sed -n "$((n0 + 1)),${n1}p" "$W/steps.txt" | sort -g | awk -v label="$label" -v wall="$(calc "$t1 - $t0")" \
        -v cpu="$cpu" -v neigh="$(cat "$WORK/neighbour.out")" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
        { d[NR] = $1; if ($1 > 0.0905) over++ }
        END { printf "%-24s %s %5.1f s  daemon CPU %5.2f s  neighbour %5.2f M/s  steps %4d, over 90 ms %d, max %.0f ms  load %s\n",
                  label, "'"$MODE"'", wall, cpu, neigh / 1e6, NR, over, 1000 * d[NR], load
              printf "%s %s %s %.3f %d %d %.0f %s\n", label, wall, cpu, neigh / 1e6, NR, over + 0, 1000 * d[NR], load >> "'"$WORK/runs.txt"'" }'
}

# Per set: the median of each figure over the rounds (and the range of the
# neighbour's throughput and the wall time), in the order of OPTION_SETS.
medians() {
    local set
    echo "medians of $ROUNDS rounds ($MODE):"
    for set in "${SETS[@]}"; do
        awk -v set="$set" '$1 == set { n++; w[n] = $2; c[n] = $3; g[n] = $4; s += $5; o += $6; m[n] = $7; l[n] = $8 }
            function med(a, k, i, j, t) { for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
            END { printf "  %-24s wall %5.1f s (%s-%s)  daemon CPU %5.2f s  neighbour %5.2f M/s (%s-%s)  steps over 90 ms %d of %d, max median %.0f ms  load %.1f\n",
                      set, med(w, n), w[1], w[n], med(c, n), med(g, n), g[1], g[n], o, s, med(m, n), med(l, n) }' "$WORK/runs.txt"
    done
}

calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }

echo "world: $SRC ($MODE, $ROUNDS rounds; machine load now $(cut -d' ' -f1-3 /proc/loadavg))"
for ((r = 1; r <= ROUNDS; r++)); do
    order=("${SETS[@]}")
    # Every other round in the reverse order: the load drifts.
    ((r % 2 == 0)) && order=($(printf '%s\n' "${SETS[@]}" | tac))
    for set in "${order[@]}"; do one_run "$set" "$set"; done
done
medians
