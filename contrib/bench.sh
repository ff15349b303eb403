#!/usr/bin/env bash
# Benchmarks of worldfs against its peers (docs/performance.md has the
# figures and what they mean). Nothing here passes or fails on a speed: it
# measures and prints.
#
#   contrib/bench.sh            both worlds: the ~50k-block slice, then the
#                               2.8M-block augsburg world (about 1.5 h on 2 cores)
#   contrib/bench.sh --quick    the ~50k-block world only, one run of each
#                               figure (a few minutes)
#   contrib/bench.sh --small | --large    one of the two worlds
#   contrib/bench.sh --prepare  only make the worlds (see below)
#
# The worlds are made on first use and kept in the data directory:
#   augsburg-sqlite  the LevelDB world ../shared/realdata/worlds/augsburg-leveldb
#                    converted with `minetestserver --migrate sqlite3`
#                    (2.8 M blocks, 265 MB; needs minetest-server)
#   augsburg-50k     its first 50 000 blocks by key, same schema and world.mt
#                    (needs the sqlite3 command)
# Both are only read: every benchmark that writes, and every mount, works on
# a copy in a temporary directory.
#
# Per world it prints: full decode (`worldfs check`) against minetestmapper
# rendering the same world (wall time, CPU time, peak RSS); the in-process
# scan of every block's `names` against `grep -l` over MNT/blocks/*/names
# (cold: fresh mount; warm: the same again); `sed -i` renaming one node type
# in the blocks that have it, through the mount (one commit per file, and
# with -o group_ms=50) against the same edit in-process; mount time,
# `ls MNT/blocks | wc -l`, `ls -lR` of a subtree of blocks; the daemon's
# peak RSS during each, and with -o cache_mb=32; the index view (`ls
# MNT/find/SED_OLD` cold, warm, and on a new mount) and the world-wide rename
# (`mv MNT/find/OLD MNT/find/NEW`) against the same rename in-process. With both worlds, a last
# table shows how each figure grows with the number of blocks.
#
# Environment:
#   WORLDFS_BENCH_DATA  data directory (default: ../bench-data beside the repo)
#   WORLDFS_SHARED      the shared data directory (default: ../shared)
#   CARGO_TARGET_DIR    where cargo builds (default: the crate's target/)
#   WORLDFS             the worldfs binary to measure (default: a release
#                       build, made first)
#   RUNS                runs of each short figure; the median is shown (3)
#   BIG_RUNS            runs of each whole-world figure on the large world (1)
#   GREP_NAME           node type grep looks for (default:chest)
#   SED_OLD, SED_NEW    node type renamed by the bulk edit and the world-wide
#                       rename, and listed in MNT/find/ (default:cobble ->
#                       default:mossycobble)
#   BULK_MAX            at most this many blocks edited (1000)
#   GREP_VARIANTS       mounts the grep walk runs on: mount options, and
#                       @cpu0 to hold grep on one CPU (default: rw
#                       rw,nospin rw,cache_mb=32 ro ro,nospin ro,ttl=3600
#                       rw@cpu0 ro@cpu0 ro,ttl=3600@cpu0); rw comes first
#                       and is also walked warm
#   SUBTREE             block directories in the ls -lR subtree (1000)
#   SECTIONS            which figures (default: all): check (with
#                       minetestmapper and the in-process scan: always
#                       run), ls, grep, sed, find, rename, requests (FUSE
#                       requests per file of the read-only grep walk,
#                       counted with perf's fuse:fuse_request_send
#                       tracepoint; needs root and perf), live (edits
#                       through a running server: see LIVE_EDITS),
#                       minecraft (see MC_WORLD), snapshot (worldfs
#                       snapshot, diff and restore beside restic and
#                       sqlite3 .backup: contrib/bench-snapshot.sh on each
#                       world, BULK_MAX blocks changed between the two
#                       snapshots; needs restic), bedrock (see
#                       BEDROCK_WORLD)
#   FUSE_FLOOR          the fuse_floor binary (default: a release build of
#                       examples/fuse_floor.rs, made first)
#   WALK_TIMEOUT        seconds before a whole-world command is abandoned (3600)
#   walk (a section)    the grep walk of issue 44: `ls blocks | sed
#                       's|$|/names|' | xargs grep -l` through a fresh
#                       read-only mount (cold, then warm on the same
#                       mount) against the same over the same files copied
#                       into tmpfs (at most TMPFS_FILES, 200000: each takes
#                       a page; figures per file), in alternating pairs
#                       (WALK_PAIRS 3, WALK_PAIRS_LARGE 1), with FUSE
#                       requests per file by kind and the daemon's time per
#                       kind (MNT/.worldfs-stats), and the floor: the
#                       same walk through examples/fuse_floor.rs, a FUSE
#                       file system serving the same files from memory
#                       with the same options (what FUSE itself costs),
#                       and one bare FUSE round trip (a stat whose
#                       attributes expire at once); on gen-55k, a world of
#                       55 233 blocks generated by the real server
#                       (../shared/tools/genworld.sh DIR 400 48, made once),
#                       and on the large world
#   worldwide (a section) on the large world, WORLDWIDE_PAIRS (3) pairs:
#                       `worldfs check`, then on a fresh mount `ls
#                       MNT/find/SED_OLD` (the index built) and `mv
#                       MNT/find/SED_OLD MNT/find/SED_NEW`, each against
#                       that check
#   LIVE_EDITS          the live section (`live` in SECTIONS, needs
#                       minetest-server): contrib/bench-live.sh's edits
#                       through a running server, close() to applied,
#                       median and p99 (200), on its grown demo world; with
#                       the large world also a live world-wide rename of
#                       LIVE_RENAME_OLD to LIVE_RENAME_NEW on a copy of it
#                       (default:cobble -> default:mossycobble, both in
#                       minetest_game: issue 42's) against the same rename
#                       offline, with the daemon's peak memory and the
#                       server's worst step and steps over 100 ms meanwhile;
#                       the mod's settings LIVE_MAP_SAVE_INTERVAL (1 s) and
#                       LIVE_SERVER_STEP (0.05 s), "" for the server's own
#   MC_WORLD            the minecraft section: contrib/bench-minecraft.sh on
#                       this Java world (default: the data directory's
#                       mc-0x00cl, the public 1.14.4 world 0x00cl/world,
#                       `fetch`ed and copied there; else the test world
#                       tests/data/minecraft/prismarine-1.13): a grep walk
#                       of a read-only mount and `worldfs check`, each
#                       against the Python reader anvil-parser2's full
#                       read of the same region files, in one run
#   MC_REGIONS          its region files, largest first (1; 0: all)
#   BEDROCK_WORLD       the bedrock section: contrib/bench-bedrock.sh on this
#                       Bedrock world folder or .mcworld (default: the test
#                       world tests/data/bedrock/example2.mcworld): `worldfs
#                       check` and a grep walk of a read-only mount, each
#                       against the reader's (leveldb-zlib, prismarine-chunk)
#                       full read of the same database, in one run

# The benchmarked commands are single-quoted on purpose: they run in a
# child shell that sees the exported variables.
# shellcheck disable=SC2016

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=$(realpath -m "${WORLDFS_SHARED:-$ROOT/../shared}")
DATA=$(realpath -m "${WORLDFS_BENCH_DATA:-$ROOT/../bench-data}")
LARGE_SRC=$SHARED/realdata/worlds/augsburg-leveldb
LARGE=$DATA/augsburg-sqlite
SMALL=$DATA/augsburg-50k
SMALL_BLOCKS=50000
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RUNS=${RUNS:-3}
BIG_RUNS=${BIG_RUNS:-1}
export GREP_NAME=${GREP_NAME:-default:chest}
export SED_OLD=${SED_OLD:-default:cobble}
export SED_NEW=${SED_NEW:-default:mossycobble}
BULK_MAX=${BULK_MAX:-1000}
GREP_VARIANTS=${GREP_VARIANTS:-rw rw,nospin rw,cache_mb=32 ro ro,nospin ro,ttl=3600 rw@cpu0 ro@cpu0 ro,ttl=3600@cpu0}
SUBTREE=${SUBTREE:-1000}
WALK_TIMEOUT=${WALK_TIMEOUT:-3600}
SECTIONS=${SECTIONS:-ls grep sed find rename requests walk worldwide live minecraft bedrock snapshot}
GEN=$DATA/gen-55k
TMPFS_FILES=${TMPFS_FILES:-200000}
WALK_PAIRS=${WALK_PAIRS:-3}
WALK_PAIRS_LARGE=${WALK_PAIRS_LARGE:-1}
WORLDWIDE_PAIRS=${WORLDWIDE_PAIRS:-3}
LIVE_EDITS=${LIVE_EDITS:-200}
LIVE_RENAME_OLD=${LIVE_RENAME_OLD:-default:cobble}
LIVE_RENAME_NEW=${LIVE_RENAME_NEW:-default:mossycobble}
LIVE_MAP_SAVE_INTERVAL=${LIVE_MAP_SAVE_INTERVAL-1}
LIVE_SERVER_STEP=${LIVE_SERVER_STEP-0.05}

# Whether a section of figures was asked for.
want() { [[ " $SECTIONS " == *" $1 "* ]]; }

# A binary given (WORLDFS=...) is used as it is; otherwise a release build.
WORLDFS_GIVEN=${WORLDFS:-}
WORLDFS=${WORLDFS:-$TARGET/release/worldfs}
BENCH_CORE=$TARGET/release/examples/bench_core
FLOOR=${FUSE_FLOOR:-$TARGET/release/examples/fuse_floor}
MAPPER=

TMPROOT=
DPID=
MNT=

die() {
    echo "bench.sh: $*" >&2
    exit 2
}

# ---------------------------------------------------------------------------
# Daemon

stop_daemon() {
    if [[ -n $DPID ]]; then
        if kill -0 "$DPID" 2>/dev/null; then
            kill -TERM "$DPID" 2>/dev/null || true
            local i
            for ((i = 0; i < 600; i++)); do
                kill -0 "$DPID" 2>/dev/null || break
                sleep 0.05
            done
            if kill -0 "$DPID" 2>/dev/null; then
                echo "bench.sh: daemon $DPID did not stop in 30 s, killing it" >&2
                kill -KILL "$DPID" 2>/dev/null || true
            fi
        fi
        wait "$DPID" 2>/dev/null || true
        DPID=
    fi
    if [[ -n $MNT ]] && mountpoint -q "$MNT" 2>/dev/null; then
        fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    fi
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_daemon
    [[ -n $TMPROOT && -d $TMPROOT ]] && rm -rf "$TMPROOT"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ns() { date +%s%N; }

# A field of /proc/PID/status, in kB.
proc_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# CPU seconds (user + system) the daemon's spinners have used so far: the
# threads that keep the serving CPUs awake while requests flow
# (src/sys/awake.rs); they run only on CPU time nothing else wanted.
spin_cpu() {
    local t sum=0
    for t in /proc/"$DPID"/task/*; do
        [[ $(cat "$t/comm" 2>/dev/null) == worldfs-spin* ]] || continue
        sum=$(awk -v s="$sum" '{ printf "%.2f", s + ($14 + $15) / 100 }' "$t/stat" 2>/dev/null || echo "$sum")
    done
    echo "$sum"
}

# CPU seconds (user + system) the daemon has used so far, without its
# spinners (those are in spin_cpu).
daemon_cpu() {
    local all
    all=$(awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$DPID/stat" 2>/dev/null || echo 0)
    calc "%.2f" "$all - $(spin_cpu)"
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

mb() { calc "%.0f" "$1 / 1024"; }

row() { printf '  %-46s %11s %11s %9s  %-16s %s\n' "$1" "$2" "$3" "$4" "${5:-}" "${6:-}"; }

# Remember a figure for the growth table: fig WORLD KEY VALUE.
fig() { echo "$1 $2 $3" >>"$TMPROOT/figs"; }

# Mount $WORLD on $MNT (foreground daemon in the background); sets DPID and
# MOUNT_MS (until MNT/README exists).
mount_world() {
    local opts=$1 t0 i
    mountpoint -q "$MNT" && die "$MNT is already mounted"
    t0=$(now_ns)
    "$WORLDFS" mount "$WORLD" "$MNT" -f -o "$opts" 2>>"$TMPROOT/daemon.log" &
    DPID=$!
    for ((i = 0; i < 30000; i++)); do
        [[ -e $MNT/README ]] && break
        kill -0 "$DPID" 2>/dev/null || die "worldfs mount exited: $(tail -3 "$TMPROOT/daemon.log")"
        sleep 0.001
    done
    MOUNT_MS=$(calc "%.1f" "($(now_ns) - $t0) / 1e6")
    [[ -e $MNT/README ]] || die "mount did not become ready in 30 s"
}

# Run a command under /usr/bin/time; sets WALL (s), CPU (user + sys of the
# command and its children, s), RSS (its peak, kB), OUT (last line), RC.
timed() {
    RC=0
    /usr/bin/time -o "$TMPROOT/time" -f '%e %U %S %M' timeout "$WALK_TIMEOUT" bash -c "$1" >"$TMPROOT/out" 2>>"$TMPROOT/stderr" || RC=$?
    read -r WALL u s RSS < <(tail -n 1 "$TMPROOT/time")
    CPU=$(calc "%.2f" "$u + $s")
    OUT=$(tail -n 1 "$TMPROOT/out")
    # grep exits with 1 when nothing matches, xargs then with 123.
    if ((RC != 0 && RC != 123)); then
        echo "  (exit status $RC: $1; stderr: $(tail -n 2 "$TMPROOT/stderr" | tr '\n' ' '))"
    fi
}

# timed, N times; WALL is the median, CPU and RSS those of the median run
# (of the last run when N is even).
timed_median() {
    local n=$1 cmd=$2 i walls=() m
    for ((i = 0; i < n; i++)); do
        timed "$cmd"
        walls+=("$WALL $CPU $RSS")
    done
    m=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$(((n + 1) / 2))p")
    read -r WALL CPU RSS <<<"$m"
}

# ---------------------------------------------------------------------------
# The worlds

find_server() {
    local s
    for s in "${MINETESTSERVER:-}" "$(command -v minetestserver 2>/dev/null || true)" /usr/games/minetestserver; do
        [[ -n $s && -x $s ]] && { echo "$s"; return 0; }
    done
    return 1
}

# On a fresh Debian machine, as root, install what the benchmarks use (as
# contrib/test.sh does for the tests); otherwise the checks below name it.
install_missing() {
    local need=()
    command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
    [[ -x /usr/bin/time ]] || need+=(time)
    command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
    [[ -f $LARGE/map.sqlite ]] || find_server >/dev/null || need+=(minetest-server)
    command -v minetestmapper >/dev/null 2>&1 || [[ -x /usr/games/minetestmapper ]] || need+=(minetestmapper)
    want snapshot && ! command -v restic >/dev/null 2>&1 && need+=(restic)
    ((${#need[@]})) || return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "installing: ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
            { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${need[@]}" >/dev/null; } ||
            echo "note: could not install ${need[*]}" >&2
    fi
}

prepare_large() {
    [[ -f $LARGE/map.sqlite ]] && return 0
    [[ -d $LARGE_SRC/map.db ]] || die "$LARGE_SRC/map.db not found (the LevelDB source world); set WORLDFS_SHARED"
    local server part=$LARGE.partial t0
    server=$(find_server) || die "minetestserver not found (apt-get install minetest-server, or set MINETESTSERVER)"
    mkdir -p "$DATA"
    rm -rf "$part"
    cp -r "$LARGE_SRC" "$part"
    chmod -R u+w "$part"
    echo "converting a copy of $LARGE_SRC to sqlite3 with $server --migrate (a few minutes) ..."
    # The world's game need not be installed: the server logs "Game []
    # could not be found" and migrates anyway (only blobs are copied).
    t0=$(now_ns)
    "$server" --world "$part" --migrate sqlite3 --logfile "$part.log" >/dev/null 2>&1 || true
    grep -qE '^backend *= *sqlite3' "$part/world.mt" || die "migration failed: world.mt does not say backend = sqlite3 (see $part.log)"
    [[ -f $part/map.sqlite ]] || die "migration failed: no map.sqlite (see $part.log)"
    rm -rf "$part/map.db" "$part.log"
    mv "$part" "$LARGE"
    echo "converted in $(calc "%.0f" "($(now_ns) - $t0) / 1e9") s: $LARGE"
}

prepare_gen() {
    [[ -f $GEN/map.sqlite ]] && return 0
    local gen=$SHARED/tools/genworld.sh
    [[ -f $gen ]] || die "$gen not found (it makes the 55k-block world); set WORLDFS_SHARED"
    rm -rf "$GEN.partial"
    echo "generating $GEN with the real server (genworld.sh, radius 400, height 48; a few minutes) ..."
    sh "$gen" "$GEN.partial" 400 48 >/dev/null 2>&1 || die "genworld.sh failed (see $GEN.partial/gen.log)"
    mv "$GEN.partial" "$GEN"
}

prepare_small() {
    [[ -f $SMALL/map.sqlite ]] && return 0
    prepare_large
    command -v sqlite3 >/dev/null 2>&1 || die "sqlite3 not found (apt-get install sqlite3)"
    local part=$SMALL.partial schema
    rm -rf "$part"
    mkdir -p "$part"
    cp "$LARGE/world.mt" "$part/"
    schema=$(sqlite3 "$LARGE/map.sqlite" "SELECT sql FROM sqlite_master WHERE name = 'blocks'")
    local key=pos
    sqlite3 "$LARGE/map.sqlite" "PRAGMA table_info(blocks)" | grep -q '|pos|' || key="x, y, z"
    sqlite3 "$part/map.sqlite" "ATTACH '$LARGE/map.sqlite' AS src; $schema;
        INSERT INTO blocks SELECT * FROM src.blocks ORDER BY $key LIMIT $SMALL_BLOCKS;"
    mv "$part" "$SMALL"
    echo "made $SMALL: the first $SMALL_BLOCKS blocks of $LARGE by key"
}

# ---------------------------------------------------------------------------
# One world

bench_world() {
    local src=$1 label=$2 runs=$3 walk_runs=$4
    local name blocks
    name=$(basename "$src")
    rm -rf "${TMPROOT:?}/world" "${TMPROOT:?}/mnt" "${TMPROOT:?}/orig"
    mkdir -p "$TMPROOT/mnt"
    cp -r "$src" "$TMPROOT/orig"
    WORLD=$TMPROOT/orig
    MNT=$TMPROOT/mnt
    export MNT WORLD

    blocks=$("$WORLDFS" check "$WORLD" 2>/dev/null | awk '/^blocks:/ { print $2 }')
    echo
    echo "world: $name ($label): $blocks blocks, map.sqlite $(calc "%.1f" "$(stat -c %s "$WORLD/map.sqlite") / 1e6") MB"
    row "what" "wall" "figure" "CPU s" "peak RSS"
    fig "$label" blocks "$blocks"

    # 1. Full decode against minetestmapper.
    timed_median "$runs" '"$WORLDFS" check "$WORLD" >/dev/null'
    local check_wall=$WALL
    row "worldfs check (decode every block)" "$WALL s" "$(calc "%.0f" "$blocks / $WALL")/s" "$CPU" "$(mb "$RSS") MB"
    fig "$label" check_s "$WALL"
    fig "$label" check_rss_mb "$(mb "$RSS")"
    if [[ -n $MAPPER ]]; then
        export MAPPER
        timed_median "$runs" '"$MAPPER" -i "$WORLD" -o "$TMPDIR_BENCH/map.png" --colors /usr/share/minetest/colors.txt'
        row "minetestmapper (full render, PNG)" "$WALL s" "$(calc "%.0f" "$blocks / $WALL")/s" "$CPU" "$(mb "$RSS") MB" \
            "check is $(calc "%.1f" "$WALL / $check_wall")x faster"
        fig "$label" mapper_s "$WALL"
        fig "$label" mapper_rss_mb "$(mb "$RSS")"
        local mapper_wall=$WALL
        timed_median "$runs" '"$WORLDFS" map "$WORLD" "$TMPDIR_BENCH/worldfs-map.png" --colors /usr/share/minetest/colors.txt >/dev/null'
        row "worldfs map (full render, PNG, all cores)" "$WALL s" "$(calc "%.0f" "$blocks / $WALL")/s" "$CPU" \
            "$(mb "$RSS") MB" "$(calc "%.2f" "$WALL / $mapper_wall")x minetestmapper's time"
        fig "$label" worldfs_map_s "$WALL"
    fi

    # 2. Scan: in-process, then through the mount (cold, warm).
    timed_median "$runs" '"$BENCH_CORE" "$WORLD" scan "$GREP_NAME"'
    local scan_wall=$WALL
    line=$OUT
    row "in-process scan of every names" "$WALL s" "$(calc "%.0f" "$blocks / $WALL")/s" "$CPU" "$(mb "$RSS") MB" \
        "$(grep -o 'matches=[0-9]*' <<<"$line")"
    fig "$label" scan_s "$WALL"

    cp -r "$src" "$TMPROOT/world"
    WORLD=$TMPROOT/world
    local i pass c0 s0 line mounts=()
    if want ls; then
    for ((i = 0; i < 5; i++)); do
        mount_world rw
        mounts+=("$MOUNT_MS")
        ((i == 4)) || stop_daemon
    done
    MOUNT_MS=$(printf '%s\n' "${mounts[@]}" | median)
    row "mount (until MNT/README exists), median of 5" "$MOUNT_MS ms" "" "" "$(mb "$(proc_kb "$DPID" VmRSS)") MB after"
    fig "$label" mount_ms "$MOUNT_MS"

    # 4. Listing.
    timed_median "$runs" 'ls "$MNT/blocks" | wc -l'
    row "ls MNT/blocks | wc -l" "$WALL s" "$(calc "%.2f" "$WALL * 1e6 / $blocks") us/entry" "$CPU" \
        "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB" "$OUT entries"
    fig "$label" ls_s "$WALL"
    ls -f "$MNT/blocks" | awk -v n="$SUBTREE" -v d="$MNT/blocks/" '!/^\./ && c++ < n { print d $0 }' >"$TMPROOT/subtree"
    stop_daemon
    export SUBLIST=$TMPROOT/subtree
    mount_world rw
    for pass in cold warm; do
        timed 'xargs -d "\n" -a "$SUBLIST" ls -lR | wc -l'
        row "ls -lR of $SUBTREE block dirs ($pass)" "$WALL s" "$(calc "%.0f" "$SUBTREE / $WALL") dirs/s" "$CPU" \
            "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB"
        fig "$label" "lsR_${pass}_s" "$WALL"
    done
    stop_daemon
    fi

    # 2 (continued). grep through the mount; the daemon's CPU and peak RSS.
    # Variants: a read-only mount (no OPEN/RELEASE round trips), and grep
    # held on one CPU with taskset (the daemon follows it there: a FUSE
    # round trip between two CPUs costs far more on a VM, see
    # docs/performance.md).
    local grep_cmd='printf "%s\0" "$MNT"/blocks/*/names | xargs -0 grep -l -x -- "[0-9]* $GREP_NAME" | wc -l'
    local spec opts cmd tag
    want grep || GREP_VARIANTS=
    for spec in $GREP_VARIANTS; do
        opts=${spec%@*}
        cmd=$grep_cmd
        [[ $spec == *@cpu0 ]] && cmd="taskset -c 0 bash -c '$grep_cmd'"
        mount_world "$opts"
        for pass in cold warm; do
            [[ $spec == rw || $pass == cold ]] || continue
            for ((i = 0; i < walk_runs; i++)); do
                c0=$(daemon_cpu)
                s0=$(spin_cpu)
                timed "$cmd"
            done
            case $spec in
            rw) tag="grep -l NAME MNT/blocks/*/names ($pass)" ;;
            *@cpu0) tag="  same, -o $opts, grep on one CPU ($pass)" ;;
            *) tag="  same, -o $opts ($pass)" ;;
            esac
            row "$tag" "$WALL s" "$(calc "%.0f" "$blocks / $WALL")/s" "$CPU+$(calc "%.2f" "$(daemon_cpu) - $c0")" \
                "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB" \
                "$(calc "%.1f" "$WALL / $scan_wall")x in-process, matches $OUT, spin $(calc "%.2f" "$(spin_cpu) - $s0") s"
            fig "$label" "grep_${pass}_${spec}_s" "$WALL"
            fig "$label" "grep_${pass}_${spec}_rss_mb" "$(mb "$(proc_kb "$DPID" VmHWM)")"
        done
        stop_daemon
    done

    if want requests; then
        requests_per_file "$grep_cmd" "$blocks" ro
        requests_per_file "$grep_cmd" "$blocks" rw
    fi

    # 3. Bulk edit: the first BULK_MAX blocks that have SED_OLD (found
    # in-process; the in-process edit takes the same blocks).
    if want sed; then
    BENCH_LIST=$TMPROOT/found "$BENCH_CORE" "$WORLD" scan "$SED_OLD" >/dev/null
    head -n "$BULK_MAX" "$TMPROOT/found" | sed 's|^\(.*\)$|blocks/\1/names|' >"$TMPROOT/edit"
    local nedit
    nedit=$(wc -l <"$TMPROOT/edit")
    export EDIT=$TMPROOT/edit
    timed '"$BENCH_CORE" "$WORLD" sed "$SED_OLD" "$SED_NEW" '"$BULK_MAX"
    line=$OUT
    local inproc_wall
    inproc_wall=$(grep -o '\bs=[0-9.]*' <<<"$line" | cut -d= -f2)
    row "in-process: rename $SED_OLD in $nedit blocks" "${inproc_wall:-?} s" \
        "$(calc "%.0f" "$(grep -o 'commits=[0-9]*' <<<"$line" | cut -d= -f2) / ${inproc_wall:-1}")/s" \
        "$(grep -o 'cpu_s=[0-9.]*' <<<"$line" | cut -d= -f2)" "$(mb "$RSS") MB" "commits/s"
    fig "$label" sed_inproc_s "${inproc_wall:-0}"
    local sed_cmd='cd "$MNT" && xargs -d "\n" -a "$EDIT" sed -i "s/^\([0-9]*\) $SED_OLD\$/\1 $SED_NEW/"'
    for opts in rw rw,group_ms=50; do
        rm -rf "$TMPROOT/world"
        cp -r "$src" "$TMPROOT/world"
        mount_world "$opts"
        c0=$(daemon_cpu)
        timed "$sed_cmd"
        row "sed -i through the mount (-o $opts)" "$WALL s" "$(calc "%.0f" "$nedit / $WALL")/s" \
            "$CPU+$(calc "%.2f" "$(daemon_cpu) - $c0")" "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB" \
            "$(calc "%.1f" "$WALL / ${inproc_wall:-1}")x in-process$( ((RC)) && echo ", sed exit $RC")"
        fig "$label" "sed_${opts}_s" "$WALL"
        stop_daemon
    done
    "$WORLDFS" check "$WORLD" >/dev/null || echo "  (worldfs check reports corrupt blocks after the edit!)"
    fi

    # 5. The index view: `ls MNT/find/NAME` with no index yet (cold: the
    # in-process build), again on the same mount (warm), and on a new mount
    # that finds the index file (cached).
    if want find || want rename; then
    rm -rf "$TMPROOT/world" "$TMPROOT/index"
    cp -r "$src" "$TMPROOT/world"
    mkdir -p "$TMPROOT/index"
    local find_cmd='ls "$MNT/find/$SED_OLD" | wc -l'
    mount_world "rw,index_dir=$TMPROOT/index"
    for pass in cold warm; do
        timed "$find_cmd"
        row "ls MNT/find/$SED_OLD ($pass)" "$WALL s" "$OUT blocks" "$CPU" "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB"
        fig "$label" "find_${pass}_s" "$WALL"
    done
    stop_daemon
    mount_world "rw,index_dir=$TMPROOT/index"
    timed "$find_cmd"
    row "ls MNT/find/$SED_OLD (new mount, index file)" "$WALL s" "$OUT blocks" "$CPU" \
        "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB"
    fig "$label" find_cached_s "$WALL"

    fi

    # 6. The world-wide rename: `mv MNT/find/OLD MNT/find/NEW` (every block
    # with SED_OLD, journaled) against the same rename in-process.
    if want rename; then
    local nall
    nall=$("$BENCH_CORE" "$WORLD" scan "$SED_OLD" | grep -o 'matches=[0-9]*' | cut -d= -f2)
    ls "$MNT/find" >/dev/null
    c0=$(daemon_cpu)
    timed 'mv "$MNT/find/$SED_OLD" "$MNT/find/$SED_NEW"'
    local mv_wall=$WALL
    row "mv MNT/find/$SED_OLD MNT/find/$SED_NEW" "$WALL s" "$(calc "%.0f" "${nall:-0} / $WALL")/s" \
        "$CPU+$(calc "%.2f" "$(daemon_cpu) - $c0")" "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB" "${nall:-?} blocks"
    fig "$label" rename_mount_s "$WALL"
    stop_daemon
    rm -rf "$TMPROOT/world"
    cp -r "$src" "$TMPROOT/world"
    timed '"$BENCH_CORE" "$WORLD" rename "$SED_OLD" "$SED_NEW"'
    inproc_wall=$(grep -o '\bs=[0-9.]*' <<<"$OUT" | cut -d= -f2)
    row "in-process: the same rename (no FUSE)" "${inproc_wall:-?} s" "" "$CPU" "$(mb "$RSS") MB" \
        "mount is $(calc "%.1f" "$mv_wall / ${inproc_wall:-1}")x in-process"
    fig "$label" rename_inproc_s "${inproc_wall:-0}"
    fi
    stop_daemon
    MNT=
}

# FUSE requests per block of the grep walk (-o OPTS: ro, rw), by kind, counted
# with the kernel's fuse:fuse_request_send tracepoint for this mount's
# connection only (docs/performance.md, "Requests per file"): one counter
# per kind of request, filtered in the kernel (`perf stat`), since
# recording every event of a 2.8M-block walk lost them all.
requests_per_file() {
    local cmd=$1 blocks=$2 opts=$3
    if [[ $(id -u) != 0 ]] || ! command -v perf >/dev/null 2>&1; then
        row "requests per file (needs root and perf)" "-" "" ""
        return 0
    fi
    mount_world "$opts"
    CONN=$(mountpoint -d "$MNT" | cut -d: -f2)
    export CMD=$cmd CONN
    # Opcodes: LOOKUP GETATTR OPEN READ RELEASE FLUSH READDIR READDIRPLUS.
    timed 'ev=(); for op in 1 3 14 15 18 25 28 44; do
               ev+=(-e fuse:fuse_request_send --filter "connection == $CONN && opcode == $op"); done
           perf stat -x, -a "${ev[@]}" -o "$TMPDIR_BENCH/perf.stat" -- bash -c "$CMD"'
    local walk=$WALL
    stop_daemon
    grep fuse "$TMPDIR_BENCH/perf.stat" | awk -F, -v n="$blocks" '
        BEGIN { split("LOOKUP GETATTR OPEN READ RELEASE FLUSH READDIR READDIRPLUS", k, " ") }
        { i++; v = $1 + 0; t += v; if (v / n >= 0.01) line = line sprintf(" %s %.2f", k[i], v / n) }
        END { printf "%.2f%s\n", t / n, line }' >"$TMPROOT/requests"
    row "requests per file, grep walk -o $opts (perf)" "$walk s" "$(cut -d' ' -f1 "$TMPROOT/requests")/block" "" "" \
        "$(cut -d' ' -f2- "$TMPROOT/requests")"
    fig "$label" "requests_per_block_$opts" "$(cut -d' ' -f1 "$TMPROOT/requests")"
    rm -f "$TMPDIR_BENCH/perf.stat"
}

# ---------------------------------------------------------------------------
# The grep walk against tmpfs (issue 44): `ls blocks | sed 's|$|/names|' |
# xargs grep -l` through a fresh read-only mount (cold) and again on the
# same mount (warm), against the same command over the same `names` files
# copied into tmpfs, in alternating pairs; with the FUSE requests per file
# by kind and the daemon's time per kind, read from MNT/.worldfs-stats.

# The daemon's counters now: "NAME COUNT MICROSECONDS" lines.
# (Nothing from a binary older than them.)
stats_now() { grep -v '^#' "$MNT/.worldfs-stats" 2>/dev/null || true; }

# Requests per file and daemon microseconds per request, by kind, between
# two readings of the counters: stats_per_file BEFORE AFTER FILES.
stats_per_file() {
    awk -v n="$3" 'NR == FNR { c[$1] = $2; u[$1] = $3; next }
        { d = $2 - c[$1]; if (d <= 0) next
          if ($1 ~ /^[A-Z]/) { req += d; r = r sprintf(" %s %.2f (%.1f us)", $1, d / n, ($3 - u[$1]) / d) }
          else p = p sprintf(" %s %.1f us/file", $1, ($3 - u[$1]) / n) }
        END { if (req == 0) print "(no counters in MNT/.worldfs-stats)"
              else printf "%.2f requests/file:%s; daemon:%s\n", req / n, r, p }' "$1" "$2"
}

# Mount the floor (examples/fuse_floor.rs) of $WORLD on $MNT: the same
# files through FUSE, rendered into memory first (that is not timed).
mount_floor() {
    local i
    "$FLOOR" "$WORLD" "$MNT" 2>>"$TMPROOT/daemon.log" &
    DPID=$!
    for ((i = 0; i < WALK_TIMEOUT * 100; i++)); do
        [[ -e $MNT/README ]] && return 0
        kill -0 "$DPID" 2>/dev/null || die "fuse_floor exited: $(tail -3 "$TMPROOT/daemon.log")"
        sleep 0.01
    done
    die "fuse_floor did not serve in $WALK_TIMEOUT s"
}

# A bare FUSE round trip on the floor's mount: `stat` of MNT/rtt, whose
# attributes the kernel may not keep (one GETATTR each), against `stat` of
# a file in tmpfs; sets ROUND_TRIP (a line).
round_trip() {
    local f=${TMPFS_DIR:-/dev/shm}/worldfs-rtt-$$
    : >"$f"
    ROUND_TRIP=$(python3 - "$MNT/rtt" "$f" <<'PY'
import os, sys, time
def per_stat(path, n=20000):
    os.stat(path)
    t = time.perf_counter()
    for _ in range(n):
        os.stat(path)
    return (time.perf_counter() - t) / n * 1e6
fuse, tmpfs = per_stat(sys.argv[1]), per_stat(sys.argv[2])
print(f"FUSE round trip (stat of a file whose attributes expire at once, 20000 times): {fuse:.1f} us a stat; tmpfs {tmpfs:.1f} us")
PY
)
    rm -f "$f"
}

# The walk, as a command run in directory $1 (with blocks/ in it).
walk_cmd() { echo "cd '$1' && ls blocks | sed 's|\$|/names|' | (cd blocks && xargs -d '\\n' grep -l -- '$GREP_NAME') | wc -l"; }

# cold_and_warm LABEL PREFIX BLOCKS PAIR: the walk on $MNT twice (cold,
# then warm), each a row; the stats file read before, between and after
# into $TMPROOT/PREFIX0..2; the time per file of each in COLD and WARM.
cold_and_warm() {
    local label=$1 prefix=$2 blocks=$3 pair=$4
    stats_now >"$TMPROOT/${prefix}0"
    timed "$(walk_cmd "$MNT")"
    COLD=$(calc "%.2f" "$WALL * 1e6 / $blocks")
    stats_now >"$TMPROOT/${prefix}1"
    row "$label, cold (pair $pair)" "$WALL s" "$COLD us" "$CPU" "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB" \
        "$blocks files, matches $OUT"
    timed "$(walk_cmd "$MNT")"
    WARM=$(calc "%.2f" "$WALL * 1e6 / $blocks")
    stats_now >"$TMPROOT/${prefix}2"
    row "$label, warm (pair $pair)" "$WALL s" "$WARM us" "$CPU" "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB"
    # A warm re-read: the tmpfs side's files read once more, then again at
    # once (on a large world the second pass above comes minutes after the
    # first, and this machine's kernel may have dropped the pages between).
    timed "$(sample_cmd "$MNT")"
    stats_now >"$TMPROOT/${prefix}3"
    timed "$(sample_cmd "$MNT")"
    REREAD=$(calc "%.2f" "$WALL * 1e6 / $(wc -l <"$TMPROOT/sample")")
    stats_now >"$TMPROOT/${prefix}4"
    row "$label, re-read (pair $pair)" "$WALL s" "$REREAD us" "$CPU" "" "the tmpfs side's $(wc -l <"$TMPROOT/sample") files, read again at once"
}

# The walk over the tmpfs side's files only (the list in $TMPROOT/sample),
# in directory $1.
sample_cmd() { echo "cd '$1/blocks' && xargs -d '\\n' grep -l -- '$GREP_NAME' <'$TMPROOT/sample' | wc -l"; }

# walk_vs_tmpfs WORLD LABEL PAIRS
walk_vs_tmpfs() {
    local src=$1 label=$2 pairs=$3 i n shm blocks list
    rm -rf "${TMPROOT:?}/world" "$TMPROOT/mnt"
    mkdir -p "$TMPROOT/mnt"
    cp -r "$src" "$TMPROOT/world"
    WORLD=$TMPROOT/world MNT=$TMPROOT/mnt
    export WORLD MNT
    echo
    echo "grep walk against tmpfs: $label ($(basename "$src")), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    # The tmpfs side: the same files, at most TMPFS_FILES of them (each
    # takes a page there); per file figures are compared.
    shm=${TMPFS_DIR:-/dev/shm}/worldfs-bench-$$
    rm -rf "$shm"
    mkdir -p "$shm/blocks"
    mount_world ro
    ls "$MNT/blocks" >"$TMPROOT/blocklist"
    blocks=$(wc -l <"$TMPROOT/blocklist")
    head -n "$TMPFS_FILES" "$TMPROOT/blocklist" | sed 's|$|/names|' >"$TMPROOT/sample"
    (cd "$MNT/blocks" && xargs -d '\n' cp --parents -t "$shm/blocks" -- <"$TMPROOT/sample")
    stop_daemon
    n=$(find "$shm/blocks" -type f | wc -l)
    row "what" "wall" "per file" "CPU s" "peak RSS"
    local ratios_cold=() ratios_warm=() ratios_reread=() ratios_floor=() ratios_over=() mc mw mr fc fw t
    local ROUND_TRIP="(no round trip measured)"
    for ((i = 1; i <= pairs; i++)); do
        mount_world ro
        cold_and_warm "mount -o ro" s "$blocks" "$i"
        mc=$COLD mw=$WARM mr=$REREAD
        stop_daemon
        # The floor: the same files through FUSE with no work behind it.
        mount_floor
        cold_and_warm "floor (fuse_floor)" f "$blocks" "$i"
        fc=$COLD fw=$WARM
        ((i == pairs)) && round_trip
        stop_daemon
        timed "$(walk_cmd "$shm")"
        t=$(calc "%.2f" "$WALL * 1e6 / $n")
        row "tmpfs (pair $i)" "$WALL s" "$t us" "$CPU" "$(mb "$RSS") MB" \
            "$n files; per file: mount/tmpfs cold $(calc "%.2f" "$mc / $t")x, warm $(calc "%.2f" "$mw / $t")x, re-read $(calc "%.2f" "$mr / $t")x; floor/tmpfs cold $(calc "%.2f" "$fc / $t")x, warm $(calc "%.2f" "$fw / $t")x"
        ratios_reread+=("$(calc "%.3f" "$mr / $t")")
        ratios_cold+=("$(calc "%.3f" "$mc / $t")")
        ratios_warm+=("$(calc "%.3f" "$mw / $t")")
        ratios_floor+=("$(calc "%.3f" "$fc / $t")")
        ratios_over+=("$(calc "%.3f" "$mc / $fc")")
    done
    echo "  cold: $(stats_per_file "$TMPROOT/s0" "$TMPROOT/s1" "$blocks")"
    echo "  warm: $(stats_per_file "$TMPROOT/s1" "$TMPROOT/s2" "$blocks")"
    echo "  re-read: $(stats_per_file "$TMPROOT/s3" "$TMPROOT/s4" "$(wc -l <"$TMPROOT/sample")")"
    echo "  floor cold: $(stats_per_file "$TMPROOT/f0" "$TMPROOT/f1" "$blocks")"
    echo "  floor warm: $(stats_per_file "$TMPROOT/f1" "$TMPROOT/f2" "$blocks")"
    echo "  $ROUND_TRIP"
    echo "  mount/tmpfs per file, median of $pairs pairs: cold $(printf '%s\n' "${ratios_cold[@]}" | median)x," \
        "warm $(printf '%s\n' "${ratios_warm[@]}" | median)x, re-read $(printf '%s\n' "${ratios_reread[@]}" | median)x (goal: cold <= $4x, a warm re-read <= 2x)"
    echo "  floor/tmpfs cold $(printf '%s\n' "${ratios_floor[@]}" | median)x (what FUSE itself costs);" \
        "mount/floor cold $(printf '%s\n' "${ratios_over[@]}" | median)x (what worldfs adds)"
    fig "$label" walk_cold_ratio "$(printf '%s\n' "${ratios_cold[@]}" | median)"
    rm -rf "$shm"
    MNT=
}

# World-wide questions against `worldfs check` (issue 44), in alternating
# pairs on a copy: a fresh mount's `ls MNT/find/SED_OLD` (builds the name
# index), then `mv MNT/find/SED_OLD MNT/find/SED_NEW` on that mount, each
# against `worldfs check` of the same world run right before it.
worldwide_vs_check() {
    local src=$1 label=$2 pairs=$3 i chk fnd mv rf=() rm=()
    echo
    echo "world-wide questions against check: $label ($(basename "$src")), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    row "what" "wall" "vs check" "CPU s" "peak RSS"
    for ((i = 1; i <= pairs; i++)); do
        rm -rf "${TMPROOT:?}/world" "$TMPROOT/index" "$TMPROOT/mnt"
        cp -r "$src" "$TMPROOT/world"
        mkdir -p "$TMPROOT/index" "$TMPROOT/mnt"
        WORLD=$TMPROOT/world MNT=$TMPROOT/mnt
        export WORLD MNT
        timed '"$WORLDFS" check "$WORLD" >/dev/null'
        chk=$WALL
        row "worldfs check (pair $i)" "$WALL s" "" "$CPU" "$(mb "$RSS") MB"
        mount_world "rw,index_dir=$TMPROOT/index"
        timed 'ls "$MNT/find/$SED_OLD" | wc -l'
        fnd=$WALL
        row "ls MNT/find/$SED_OLD, cold (pair $i)" "$WALL s" "$(calc "%.2f" "$fnd / $chk")x" "" \
            "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB" "$OUT blocks"
        timed 'mv "$MNT/find/$SED_OLD" "$MNT/find/$SED_NEW"'
        mv=$WALL
        row "mv find/$SED_OLD find/$SED_NEW (pair $i)" "$WALL s" "$(calc "%.2f" "$mv / $chk")x" "" \
            "daemon $(mb "$(proc_kb "$DPID" VmHWM)") MB"
        stop_daemon
        rf+=("$(calc "%.3f" "$fnd / $chk")")
        rm+=("$(calc "%.3f" "$mv / $chk")")
    done
    echo "  against check, median of $pairs pairs: cold find/ $(printf '%s\n' "${rf[@]}" | median)x," \
        "mv after it $(printf '%s\n' "${rm[@]}" | median)x (goal: each <= 1.5x)"
    MNT=
}

growth_table() {
    [[ -s $TMPROOT/figs ]] || return 0
    awk '$1 == "small" || $1 == "large" { v[$1, $2] = $3; if (!seen[$2]++) k[++n] = $2 }
        END {
            if (!v["small", "blocks"] || !v["large", "blocks"]) exit
            printf "\ngrowth from the small to the large world (blocks x%.1f)\n", v["large", "blocks"] / v["small", "blocks"]
            printf "  %-34s %12s %12s %8s\n", "figure", "small", "large", "x"
            for (i = 1; i <= n; i++) {
                a = v["small", k[i]]; b = v["large", k[i]]
                if (a == "" || b == "") continue
                printf "  %-34s %12s %12s %8s\n", k[i], a, b, (a > 0 ? sprintf("%.1f", b / a) : "-")
            }
        }' "$TMPROOT/figs"
}

# ---------------------------------------------------------------------------

# Live mounts (docs/performance.md, "Live mounts"): contrib/bench-live.sh
# on its grown demo world (edit latency, a world-wide rename and the
# server's steps), and with the large world ($1 is not "small") a live
# world-wide rename on a copy of it, against the same rename offline.
live_figures() {
    if ! command -v minetestserver >/dev/null 2>&1 && [[ ! -x /usr/games/minetestserver ]]; then
        echo "note: no minetestserver (apt-get install minetest-server): no live figures" >&2
        return
    fi
    echo
    echo "live mounts (contrib/bench-live.sh, a real minetestserver running the worldfs_live mod):"
    WORLDFS=$WORLDFS MAP_SAVE_INTERVAL=$LIVE_MAP_SAVE_INTERVAL SERVER_STEP=$LIVE_SERVER_STEP \
        "$ROOT/contrib/bench-live.sh" "$LIVE_EDITS" 2>&1 | sed 's/^/  /'
    if [[ $1 != small ]]; then
        echo "  the large world ($LARGE, copied), mv find/$LIVE_RENAME_OLD find/$LIVE_RENAME_NEW:"
        WORLDFS=$WORLDFS LIVE_WORLD=$LARGE RENAME_OLD=$LIVE_RENAME_OLD RENAME_NEW=$LIVE_RENAME_NEW \
            MAP_SAVE_INTERVAL=$LIVE_MAP_SAVE_INTERVAL SERVER_STEP=$LIVE_SERVER_STEP \
            "$ROOT/contrib/bench-live.sh" 100 2>&1 | sed 's/^/    /'
    fi
}

# Snapshots (docs/performance.md, "Snapshots"): contrib/bench-snapshot.sh
# on a copy of world $1, beside restic over the world directory and
# sqlite3 .backup, in one run.
snapshot_figures() {
    if ! command -v restic >/dev/null 2>&1; then
        echo "note: no restic (apt-get install restic): no snapshot figures" >&2
        return
    fi
    echo
    echo "snapshots of $1 (contrib/bench-snapshot.sh, beside restic and sqlite3 .backup):"
    WORLDFS=$WORLDFS SED_OLD=$SED_OLD SED_NEW=$SED_NEW CHANGED=$BULK_MAX "$ROOT/contrib/bench-snapshot.sh" "$1" 2>&1 |
        sed 's/^/  /'
}

# Minecraft Java worlds (docs/performance.md, "Minecraft Java worlds"):
# contrib/bench-minecraft.sh, the mount's grep walk and `worldfs check`
# against the independent Python reader, in one run.
minecraft_figures() {
    local world=${MC_WORLD:-$DATA/mc-0x00cl}
    [[ -f $world/level.dat ]] || world=$ROOT/tests/data/minecraft/prismarine-1.13
    if ! python3 -c 'import anvil' 2>/dev/null; then
        echo "note: no anvil-parser2 (pip install anvil-parser2): no Minecraft figures" >&2
        return
    fi
    echo
    echo "Minecraft Java world (contrib/bench-minecraft.sh, against anvil-parser2):"
    WORLDFS=$WORLDFS "$ROOT/contrib/bench-minecraft.sh" "$world" "${MC_REGIONS:-1}" "$RUNS" 2>&1 | sed 's/^/  /'
}

# Minecraft Bedrock worlds: contrib/bench-bedrock.sh, `worldfs check` and
# the mount's grep walk against the reader's full read, in one run.
bedrock_figures() {
    local world=${BEDROCK_WORLD:-$ROOT/tests/data/bedrock/example2.mcworld}
    if [[ ! -d $ROOT/target/npm-oracle/node_modules/leveldb-zlib ]]; then
        echo "note: no leveldb-zlib in target/npm-oracle (contrib/test.sh installs it): no Bedrock figures" >&2
        return
    fi
    echo
    echo "Minecraft Bedrock world (contrib/bench-bedrock.sh, against leveldb-zlib and prismarine-chunk):"
    WORLDFS=$WORLDFS "$ROOT/contrib/bench-bedrock.sh" "$world" "$RUNS" 2>&1 | sed 's/^/  /'
}

main() {
    local which=both quick=0
    case ${1:-} in
    -h | --help)
        sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    --prepare)
        install_missing
        prepare_large
        prepare_small
        prepare_gen
        exit 0
        ;;
    --quick) which=small quick=1 ;;
    --small) which=small ;;
    --large) which=large ;;
    "") ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    ((quick)) && RUNS=1

    install_missing
    command -v fusermount3 >/dev/null 2>&1 || die "fusermount3 is needed (apt-get install fuse3)"
    [[ -e /dev/fuse ]] || die "/dev/fuse is missing"
    [[ -x /usr/bin/time ]] || die "/usr/bin/time is needed (apt-get install time)"
    MAPPER=$(command -v minetestmapper 2>/dev/null || echo /usr/games/minetestmapper)
    if [[ ! -x $MAPPER ]]; then
        echo "note: minetestmapper not found (apt-get install minetestmapper): no peer figures" >&2
        MAPPER=
    fi
    [[ $which == small ]] || prepare_large
    prepare_small
    if want walk; then prepare_gen; fi

    local per_world=0 s
    for s in ls grep sed find rename requests; do want "$s" && per_world=1; done
    if [[ -z $WORLDFS_GIVEN || $per_world == 1 ]]; then
        echo "building (cargo build --release, target dir $TARGET) ..."
        (cd "$ROOT" && cargo build --release --quiet --bin worldfs --example bench_core --example fuse_floor)
    elif want walk && [[ -z ${FUSE_FLOOR:-} ]]; then
        (cd "$ROOT" && cargo build --release --quiet --example fuse_floor)
    fi

    TMPROOT=$(mktemp -d "${TMPDIR:-/tmp}/worldfs-bench.XXXXXX")
    export TMPDIR_BENCH=$TMPROOT WORLDFS BENCH_CORE

    echo
    echo "worldfs benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || echo ' (src modified)')"
    echo "machine: $(uname -a)"
    echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), nproc $(nproc)," \
        "RAM $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "peer: $([[ -n $MAPPER ]] && dpkg-query -W -f '${Package} ${Version}' minetestmapper 2>/dev/null || echo none)"
    echo "timing: median of $RUNS runs for check, minetestmapper, the in-process scan and ls; whole-world walks"
    echo "through the mount: median of 1 run on the small world, $BIG_RUNS on the large one. CPU s = user + system"
    echo "of the command (+ of the daemon, without its spinners: 'spin' is their CPU time, spent only where a CPU"
    echo "was otherwise idle). cold = fresh mount (the map file is in the OS page cache); warm = again"
    echo "on the same mount. Mounts are writable (the default) on a copy of the world."

    if [[ $which != large ]]; then
        ((per_world)) && bench_world "$SMALL" small "$RUNS" 1
        if want walk; then walk_vs_tmpfs "$GEN" gen55k "$WALK_PAIRS" 3; fi
    fi
    if [[ $which != small ]]; then
        ((per_world)) && bench_world "$LARGE" large "$RUNS" "$BIG_RUNS"
        if want walk; then walk_vs_tmpfs "$LARGE" large "$WALK_PAIRS_LARGE" 5; fi
        if want worldwide; then worldwide_vs_check "$LARGE" large "$WORLDWIDE_PAIRS"; fi
    fi
    growth_table
    if want live; then
        live_figures "$which"
    fi
    if want minecraft; then
        minecraft_figures
    fi
    if want snapshot; then
        [[ $which == large ]] || snapshot_figures "$SMALL"
        [[ $which == small ]] || snapshot_figures "$LARGE"
    fi
    if want bedrock; then
        bedrock_figures
    fi
    if [[ -s $TMPROOT/stderr ]]; then
        echo
        echo "stderr of the benchmarked commands (last lines):"
        tail -n 5 "$TMPROOT/stderr" | sed 's/^/  /'
    fi
}

main "$@"
