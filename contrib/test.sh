#!/usr/bin/env bash
# Run the whole test suite. On a fresh Debian machine, as root, it first
# installs what the tests use: fuse3 (mounts), minetest-server and
# minetest-data (the real server as oracle), and the editors the write tests
# drive. Tests whose tools are missing say SKIP and pass, except as root,
# where everything is installed and a missing tool fails (WORLDFS_REQUIRE).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v fusermount3 >/dev/null || need+=(fuse3)
[ -x /usr/games/minetestserver ] || need+=(minetest-server)
[ -d /usr/share/games/minetest/games/minetest_game ] || need+=(minetest-data)
[ -d /usr/share/games/minetest/mods/worldedit ] || need+=(minetest-mod-worldedit)
command -v vim >/dev/null || need+=(vim)
command -v nano >/dev/null || need+=(nano)
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v tmux >/dev/null || need+=(tmux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v man >/dev/null || need+=(man-db)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || need+=(chromium)
command -v lua5.1 >/dev/null || need+=(lua5.1)
[ -x /usr/games/minetestmapper ] || need+=(minetestmapper)
# The game's client under a virtual X server with Mesa's software GL: a
# real player in the game for the live player tests (tests/live_players.rs).
[ -x /usr/games/minetest ] || need+=(minetest)
command -v xvfb-run >/dev/null || need+=(xvfb xauth)
ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1 || need+=(libgl1-mesa-dri)
# lz4-java (Apache-2.0) and a JDK: the game's own LZ4 stream classes read
# back the LZ4 chunks worldfs writes (tests/minecraft_more.rs).
command -v java >/dev/null || need+=(default-jdk-headless)
[ -f /usr/share/java/lz4-java.jar ] || need+=(liblz4-java)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing: ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
            apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${need[@]}" >/dev/null
        }
    else
        echo "note: missing ${need[*]} (install them as root); the tests that need them will be skipped"
    fi
fi

# The twmap Python package (bindings of the twmap crate; AGPL, so only run
# as an independent oracle by tests/twmap_oracle.rs, never linked).
if ! python3 -c 'import twmap, numpy' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing: twmap numpy (pip)"
        python3 -m pip --version >/dev/null 2>&1 || {
            export DEBIAN_FRONTEND=noninteractive
            apt-get install -y -q python3-pip >/dev/null 2>&1 || {
                apt-get update -q >/dev/null 2>&1 && apt-get install -y -q python3-pip >/dev/null
            }
        }
        python3 -m pip install -q twmap numpy 2>/dev/null ||
            python3 -m pip install -q --break-system-packages twmap numpy
    else
        echo "note: the twmap Python package is missing (pip install twmap numpy); the twmap oracle test will be skipped"
    fi
fi

# anvil-parser2 (MIT), the independent reader of Minecraft Java worlds in
# tests/minecraft.rs (tests/scripts/mc_oracle.py), and amulet-nbt (its NBT
# reader for level.dat and player files): run, never linked.
if ! python3 -c 'import anvil, amulet_nbt' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing: anvil-parser2 amulet-nbt (pip)"
        python3 -m pip install -q anvil-parser2 amulet-nbt 2>/dev/null ||
            python3 -m pip install -q --break-system-packages anvil-parser2 amulet-nbt
    else
        echo "note: anvil-parser2 is missing (pip install anvil-parser2 amulet-nbt); tests/minecraft.rs's oracle will be skipped"
    fi
fi

# prismarine-chunk (PrismarineJS, MIT), the oracle of tests/mcchunk.rs,
# from the npm registry into target/npm-oracle (never linked or shipped).
if [ ! -d target/npm-oracle/node_modules/prismarine-chunk ] && command -v npm >/dev/null; then
    echo "installing: prismarine-chunk vec3 (npm, into target/npm-oracle)"
    mkdir -p target/npm-oracle
    npm install --silent --no-audit --no-fund --prefix target/npm-oracle prismarine-chunk@1 vec3 >/dev/null 2>&1 ||
        echo "note: npm install prismarine-chunk failed; tests/mcchunk.rs's oracle will be skipped"
fi

# bedrock-provider (PrismarineJS, MIT) and leveldb-zlib (ISC; Mojang's
# LevelDB with its zlib compressors, built from source with cmake), the
# independent reader of Bedrock worlds in tests/bedrock.rs
# (tests/scripts/bedrock_oracle.js), into target/npm-oracle as well.
if [ ! -d target/npm-oracle/node_modules/leveldb-zlib ] && command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && ! command -v cmake >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q cmake zlib1g-dev >/dev/null 2>&1 || {
            apt-get update -q >/dev/null 2>&1 && apt-get install -y -q cmake zlib1g-dev >/dev/null
        }
    fi
    echo "installing: bedrock-provider leveldb-zlib (npm, into target/npm-oracle)"
    mkdir -p target/npm-oracle
    npm install --silent --no-audit --no-fund --prefix target/npm-oracle bedrock-provider@3 leveldb-zlib@1 >/dev/null 2>&1 ||
        echo "note: npm install bedrock-provider leveldb-zlib failed; tests/bedrock.rs's oracle will be skipped"
fi

# As root every tool above is installed, so a test that would skip for want
# of one fails instead (tests/common/mod.rs `skip`): a machine that lost a
# tool goes red rather than passing silently. The real-data tests need
# ../shared, which is data, not a tool: required when it is there.
if [ "$(id -u)" = 0 ] && [ -z "${WORLDFS_REQUIRE+x}" ]; then
    WORLDFS_REQUIRE=fuse,server,worldedit,root,python3,vim,nano,tmux,setpriv,systemd,man,twmap,pg,redis,chromium,minetestmapper,lua,prismarine,bedrock,java,client
    if [ -d ../shared ] || [ -n "${WORLDFS_SHARED:-}" ]; then
        WORLDFS_REQUIRE+=,shared
    else
        echo "note: ../shared is absent: the tests on real worlds and samples are skipped"
    fi
    export WORLDFS_REQUIRE
    echo "WORLDFS_REQUIRE=$WORLDFS_REQUIRE"
fi

# The tests' name indexes go to a directory of their own, not ~/.cache.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT

cargo fmt --all --check
cargo clippy --workspace --all-targets --profile ci -- -D warnings
# The store crate builds without its database clients (cargo features).
cargo clippy -p worldfs-store --no-default-features --all-targets --profile ci -- -D warnings
cargo test --workspace --profile ci -- --test-threads="${TEST_THREADS:-2}"

# `cargo install --path .` works from this checkout (what README tells a
# new user), and the installed command runs.
install_root=$(mktemp -d)
# The ci profile's build is reused (a release build would compile
# everything again).
cargo install --quiet --locked --path . --root "$install_root" --target-dir target --profile ci
"$install_root/bin/worldfs" --version
rm -rf "$install_root"
