#!/usr/bin/env bash
# Build worldfs, write the demo world, mount it, show a few things, unmount.
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo's own progress (each crate, and a bar on a terminal) goes to stderr,
# so a first build, which takes minutes, is not a silent wait.
echo "building worldfs: cargo build --release (a first build compiles 239 crates and takes several minutes; later runs take seconds)" >&2
start=$SECONDS
cargo build --release
echo "built in $((SECONDS - start)) s; the demo:" >&2
echo >&2
bin=target/release/worldfs
work=$(mktemp -d)
trap 'fusermount3 -u "$work/mnt" 2>/dev/null || umount "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/mnt"
$bin demo "$work/world"
$bin mount "$work/world" "$work/mnt"
run() { echo "\$ $*"; (cd "$work" && eval "$@"); echo; }
run ls mnt
run "ls mnt/blocks | head -4"
run cat mnt/blocks/0,0,0/info
run grep -l default:chest 'mnt/blocks/*/names'
run ls mnt/blocks/0,0,0/meta
run cat mnt/blocks/0,0,0/meta/3,2,8/fields/text
run head -6 mnt/blocks/0,0,0/meta/3,1,3/inventory
run cat mnt/node/3,1,3
run "grep ' default:chest ' mnt/blocks/0,0,0/nodes"
