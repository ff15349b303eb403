#!/usr/bin/env bash
# contrib/test-summary.sh LOG: what a test run did not test. LOG is the
# file the tests wrote through WORLDFS_TEST_LOG (tests/common/mod.rs):
# "REAL TEST: WHAT" for each test that checked real data, "SKIP TEST
# [TOOL]: WHY" for each test or part of one left out. contrib/test.sh runs
# it at the end of every run, pass or fail.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=contrib/test-tools.sh
. contrib/test-tools.sh

log=${1:?usage: contrib/test-summary.sh LOG}
[ -f "$log" ] || { echo "test summary: no log $log" >&2; exit 1; }

echo
echo "== test summary =="
# A test id is BINARY::TEST, the first word after REAL.
tests_in() { sed -n 's/^REAL \([^ ]*\):.*/\1/p' | sort -u | wc -l; }
real=$(tests_in <"$log")
shared=$({ grep -E '^REAL [^ ]*: (.*\([1-9][0-9]* from \.\./shared\)|\.\./shared)' "$log" || true; } | tests_in)
echo "$real tests ran on real data (tests/data; $shared of them also on ../shared's samples)"

skips=$(grep '^SKIP ' "$log" | sort -u || true)
if [ -z "$skips" ]; then
    echo "nothing was skipped"
else
    echo "$(printf '%s\n' "$skips" | wc -l) tests or parts of tests were skipped:"
    printf '%s\n' "$skips" | sed 's/^/  /'
fi

if [ "$(id -u)" != 0 ]; then
    find_missing
    if [ ${#apt_need[@]} -gt 0 ] || [ ${#pip_need[@]} -gt 0 ] || [ ${#npm_need[@]} -gt 0 ]; then
        echo "missing here:"
        [ ${#apt_need[@]} -eq 0 ] || echo "  Debian packages: ${apt_need[*]}"
        [ ${#pip_need[@]} -eq 0 ] || echo "  Python packages (pip): ${pip_need[*]}"
        [ ${#npm_need[@]} -eq 0 ] || echo "  npm packages (target/npm-oracle): ${npm_need[*]}"
        echo "install them all (and run every test) with: sudo ./contrib/test.sh"
    fi
fi
