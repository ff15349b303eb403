#!/usr/bin/env bash
# Build the Debian package of worldfs: target/debian/worldfs_VERSION-1_ARCH.deb
# (its path is the last line printed). Needs cargo-deb (`cargo install
# cargo-deb`) and dpkg-dev (dpkg-shlibdeps, for the package's Depends).
#
# The release binary is built once; then the binary itself writes what the
# package ships beside it (target/deb-assets): the man pages (`worldfs man`),
# the bash, zsh and fish completions (`worldfs completions`), and the systemd
# unit with the packaged binary's path. `cargo deb --no-build` packs them
# with the docs and both mods as Cargo.toml's [package.metadata.deb] lists.
#
# WORLDFS_DEB_PROFILE=ci packs the binary of the test suite's profile
# instead (optimized, with debug assertions): CI tries the package without
# compiling everything a second time.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null || {
    echo "build-deb: cargo-deb is missing (cargo install --locked cargo-deb)" >&2
    exit 1
}
profile=${WORLDFS_DEB_PROFILE:-release}
cargo build --profile "$profile" --locked --bin worldfs
bin=target/$profile/worldfs
assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$bin" man "$assets/man"
"$bin" completions bash >"$assets/completions/worldfs"
"$bin" completions zsh >"$assets/completions/_worldfs"
"$bin" completions fish >"$assets/completions/worldfs.fish"
sed 's|/usr/local/bin/worldfs|/usr/bin/worldfs|g' 'contrib/worldfs@.service' >"$assets/worldfs@.service"
grep -q 'ExecStart=/usr/bin/worldfs ' "$assets/worldfs@.service" || {
    echo "build-deb: contrib/worldfs@.service no longer starts /usr/local/bin/worldfs; update the sed above" >&2
    exit 1
}
# --strip: the release profile keeps line tables for backtraces; the
# package ships the binary without them.
cargo deb --no-build --profile "$profile" --locked --strip --output target/debian/ | tail -1
