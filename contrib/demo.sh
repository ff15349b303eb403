#!/usr/bin/env bash
# Build and install worldfs (`cargo install --path .`, into ~/.cargo/bin),
# write the demo world into ./demo-world (kept: yours to try things on),
# mount it, show a few things, unmount, and say what to try next.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || {
    echo "demo: cargo is missing. worldfs needs Rust 1.89 or newer (Debian 12's cargo is too old):" >&2
    echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh   # then open a new shell" >&2
    echo "  and a C compiler for the bundled SQLite and zstd: sudo apt install build-essential" >&2
    exit 1
}
command -v cc >/dev/null || {
    echo "demo: no C compiler (cc): the build compiles SQLite and zstd. sudo apt install build-essential" >&2
    exit 1
}
[ "$(id -u)" = 0 ] || command -v fusermount3 >/dev/null || {
    echo "demo: no fusermount3, which mounts as a user: sudo apt install fuse3" >&2
    exit 1
}
# cargo's own progress (each crate, and a bar on a terminal) goes to stderr,
# so a first build, which takes minutes, is not a silent wait. The build
# stays in target/ (later runs take seconds).
echo "building and installing worldfs: cargo install --locked --path . (a first build compiles about 240 crates and takes several minutes)" >&2
start=$SECONDS
cargo install --locked --path . --target-dir target
bin_dir=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin
bin=$bin_dir/worldfs
echo "built and installed in $((SECONDS - start)) s: $bin" >&2
echo >&2

world=$PWD/demo-world
if [ -e "$world" ]; then
    echo "demo: $world is there already (from an earlier run); using it as it is" >&2
else
    "$bin" demo "$world" >/dev/null
fi
mnt=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null || true; rmdir "$mnt"' EXIT
"$bin" mount "$world" "$mnt"
run() { echo "\$ $*"; (cd "$mnt" && eval "$@"); echo; }
run ls
run "ls blocks | head -4"
run cat blocks/0,0,0/info
run grep -l default:chest 'blocks/*/names'
run ls blocks/0,0,0/meta
run cat blocks/0,0,0/meta/3,2,8/fields/text
run head -6 blocks/0,0,0/meta/3,1,3/inventory
run cat node/3,1,3
run "grep ' default:chest ' blocks/0,0,0/nodes"
fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt"

case ":$PATH:" in
*":$bin_dir:"*) cmd=worldfs ;;
*)
    cmd=$bin
    echo "note: $bin_dir is not on your PATH; add it (rustup's installer does, in a new shell) or call $bin" ;;
esac
cat <<EOF
The demo world stays in $world. Try next:
  mkdir -p demo-mnt && $cmd mount demo-world demo-mnt && ls demo-mnt   # every block a directory
  sed -i 's/apple 12/apple 64/' demo-mnt/blocks/0,0,0/meta/3,1,3/inventory && fusermount3 -u demo-mnt
  $cmd undo demo-world --last 1   # and the change is gone again
More: $cmd --help, $cmd mount --help, README.md and docs/layout.md.
EOF
