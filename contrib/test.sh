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

# As root every tool above is installed, so a test that would skip for want
# of one fails instead (tests/common/mod.rs `skip`): a machine that lost a
# tool goes red rather than passing silently. The real-data tests need
# ../shared, which is data, not a tool: required when it is there.
if [ "$(id -u)" = 0 ] && [ -z "${WORLDFS_REQUIRE+x}" ]; then
    WORLDFS_REQUIRE=fuse,server,worldedit,root,python3,vim,nano,tmux,setpriv
    if [ -d ../shared ] || [ -n "${WORLDFS_SHARED:-}" ]; then
        WORLDFS_REQUIRE+=,shared
    else
        echo "note: ../shared is absent: the tests on real worlds and samples are skipped"
    fi
    export WORLDFS_REQUIRE
    echo "WORLDFS_REQUIRE=$WORLDFS_REQUIRE"
fi

cargo fmt --check
cargo clippy --all-targets --profile ci -- -D warnings
cargo test --profile ci -- --test-threads="${TEST_THREADS:-2}"
