#!/bin/sh
# Check the fuzz targets on the stable toolchain (no nightly, no libFuzzer
# run): type-check the fuzz_target! wrappers and the seed tool, then run
# the target bodies (src/lib.rs) under `cargo test` with their built-in
# seeds, the files of corpus/<target>/ and artifacts/<target>/ if present,
# and WORLDFS_FUZZ_SMOKE_ITERS (default 3000) pseudo-random and mutated
# inputs per target. A failure prints the input in hex.
#
#   ./check.sh                                   # the default
#   WORLDFS_FUZZ_SMOKE_ITERS=100000 ./check.sh   # longer
#   WORLDFS_FUZZ_SMOKE_SEED=7 ./check.sh         # other inputs
set -eu
cd "$(dirname "$0")"
cargo check --quiet --bins --examples
cargo test --quiet --lib
