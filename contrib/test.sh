#!/usr/bin/env bash
# Run the whole test suite (`.ci/run` runs this). On a fresh Debian
# machine, as root, it first installs what the tests use (the list, and why
# each: contrib/test-tools.sh): up to thirty Debian packages (fuse3, the
# real Luanti server and client, its game, editors, PostgreSQL, Redis,
# Chromium, a JDK, Node.js, lintian...), Python packages from pip and npm
# packages into target/npm-oracle (independent readers of the formats).
# As root every tool is then required: a test that would skip for want of
# one fails instead (WORLDFS_REQUIRE). Not as root, a test whose tool is
# missing says SKIP and passes; the run ends with every SKIP and the
# command that installs what is missing.
#
# As root it also builds the Debian package, checks it with lintian,
# installs it and tries what it installed (contrib/test-deb.sh).
#
# `contrib/test.sh ARGS...` runs only `cargo test --profile ci ARGS` (for
# example `--test cubeset`), with the same tools, logs and summary.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=contrib/test-tools.sh
. contrib/test-tools.sh

root=false
[ "$(id -u)" = 0 ] && root=true

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$@" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$@" >/dev/null
    }
}

find_missing
if $root && command -v apt-get >/dev/null; then
    if [ ${#apt_need[@]} -gt 0 ]; then
        echo "installing: ${apt_need[*]}"
        apt_install "${apt_need[@]}"
    fi
    if [ ${#pip_need[@]} -gt 0 ]; then
        echo "installing: ${pip_need[*]} (pip)"
        python3 -m pip install -q "${pip_need[@]}" 2>/dev/null ||
            python3 -m pip install -q --break-system-packages "${pip_need[@]}"
    fi
    if [ ${#npm_need[@]} -gt 0 ]; then
        echo "installing: ${npm_need[*]} (npm, into target/npm-oracle)"
        mkdir -p target/npm-oracle
        npm install --silent --no-audit --no-fund --prefix target/npm-oracle "${npm_need[@]}" >/dev/null
    fi
    find_missing
    if [ ${#apt_need[@]} -gt 0 ] || [ ${#pip_need[@]} -gt 0 ] || [ ${#npm_need[@]} -gt 0 ]; then
        echo "still missing after installing: ${apt_need[*]} ${pip_need[*]} ${npm_need[*]}" >&2
        exit 1
    fi
elif [ ${#apt_need[@]} -gt 0 ] || [ ${#pip_need[@]} -gt 0 ] || [ ${#npm_need[@]} -gt 0 ]; then
    echo "note: missing ${apt_need[*]} ${pip_need[*]} ${npm_need[*]}; the tests that need them will be skipped (listed at the end)"
fi

# As root every tool above is installed, so a test that would skip for want
# of one fails instead (tests/common/mod.rs `skip`): a machine that lost a
# tool goes red rather than passing silently. ../shared (the team's large
# and unlicensed samples) is data, not a tool: required when it is there;
# without it the real-data tests run on tests/data alone.
if $root && [ -z "${WORLDFS_REQUIRE+x}" ]; then
    WORLDFS_REQUIRE=$REQUIRE_AS_ROOT
    if [ -d ../shared ] || [ -n "${WORLDFS_SHARED:-}" ]; then
        WORLDFS_REQUIRE+=,shared
    else
        echo "note: ../shared is absent: the real-data tests use the repository's (tests/data) only"
    fi
    export WORLDFS_REQUIRE
    echo "WORLDFS_REQUIRE=$WORLDFS_REQUIRE"
fi

# The tests' name indexes go to a directory of their own, not ~/.cache;
# every SKIP and every test on real data is logged to WORLDFS_TEST_LOG
# (tests/common/mod.rs), summed up at the end, pass or fail.
work=$(mktemp -d)
export XDG_CACHE_HOME=$work/cache WORLDFS_TEST_LOG=$work/tests.log
mkdir "$XDG_CACHE_HOME"
: >"$WORLDFS_TEST_LOG"
finish() {
    status=$?
    contrib/test-summary.sh "$WORLDFS_TEST_LOG" || true
    rm -rf "$work"
    exit $status
}
trap finish EXIT

if [ $# -gt 0 ]; then
    cargo test --profile ci "$@" -- --test-threads="${TEST_THREADS:-2}"
    exit 0
fi

cargo fmt --all --check
cargo clippy --workspace --all-targets --profile ci -- -D warnings
# The store crate builds without its database clients (cargo features).
cargo clippy -p worldfs-store --no-default-features --all-targets --profile ci -- -D warnings
cargo test --workspace --profile ci -- --test-threads="${TEST_THREADS:-2}"

# The Debian package (as root: built, checked, installed and tried), made
# from the binary the tests ran (the ci profile) rather than a second,
# release build of everything; `cargo install --path .` below reuses it too.
if $root; then
    WORLDFS_DEB_PROFILE=ci contrib/test-deb.sh
fi

# `cargo install --path .` works from this checkout (what README tells a
# new user), and the installed command runs.
install_root=$(mktemp -d)
# The ci profile's build is reused (a release build would compile
# everything again).
cargo install --quiet --locked --path . --root "$install_root" --target-dir target --profile ci
"$install_root/bin/worldfs" --version
rm -rf "$install_root"
