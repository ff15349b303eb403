#!/usr/bin/env bash
# The Debian package, as an admin gets it (run as root by contrib/test.sh):
# build it (contrib/build-deb.sh), check it with lintian (an error fails),
# install it with dpkg, then use only what it installed, from outside the
# checkout, with a bare PATH:
#   worldfs demo; mount -t fuse.worldfs through an fstab line (mount -T),
#   ls and cat inside, umount; man worldfs-mount; bash completion of
#   `worldfs mo<TAB>`; worldfs live install into a fresh world, compared
#   with the package's copy of the mod; the systemd unit verified;
# and finally `dpkg --purge worldfs` must leave none of its files behind.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test-deb: needs root (dpkg -i, mount)" >&2; exit 1; }

if ! command -v cargo-deb >/dev/null; then
    echo "installing: cargo-deb (cargo install, from crates.io)"
    cargo install --quiet --locked cargo-deb
fi
deb=$(contrib/build-deb.sh | tail -1)
[ -f "$deb" ] || { echo "test-deb: no package built ($deb)" >&2; exit 1; }
echo "built $deb ($(du -h "$deb" | cut -f1))"

# lintian: errors fail the run; warnings are shown.
lintian --fail-on error --tag-display-limit 0 "$deb"

fail() { echo "test-deb: $*" >&2; exit 1; }
dpkg -s worldfs >/dev/null 2>&1 && fail "a worldfs package is installed already; remove it first (dpkg --purge worldfs)"
grep -rqs 'path-exclude=*/usr/share/man' /etc/dpkg/dpkg.cfg.d/ &&
    fail "dpkg here leaves out man pages (/etc/dpkg/dpkg.cfg.d path-exclude): man worldfs-mount cannot be checked"

# Every path the package holds, and which of them were there before it.
work=$(mktemp -d)
cleanup() {
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    dpkg -s worldfs >/dev/null 2>&1 && dpkg --purge worldfs >/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||' | grep -v '^/\?$' >"$work/paths"
while read -r p; do
    if [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi
done <"$work/paths" >"$work/there-before"

dpkg -i "$deb" >/dev/null
echo "installed: $(dpkg-query -W -f='${Package} ${Version}, Depends: ${Depends}' worldfs)"

# From here on only what the package installed: no checkout, no cargo.
mkdir "$work/mnt" "$work/home"
pkg() { (cd / && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work/home" LANG=C.UTF-8 "$@"); }
[ "$(pkg sh -c "command -v worldfs")" = /usr/bin/worldfs ] || fail "worldfs is not /usr/bin/worldfs"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
pkg worldfs --version | grep -q "^worldfs $version (" || fail "worldfs --version does not say $version: $(pkg worldfs --version)"

# worldfs demo, without a terminal.
pkg worldfs demo "$work/world" </dev/null >"$work/demo.out"
grep -q "$work/world" "$work/demo.out" || fail "worldfs demo did not name its world: $(cat "$work/demo.out")"

# mount(8) with an fstab line: it runs /sbin/mount.fuse.worldfs, which
# drops the options only mount and systemd read.
echo "$work/world $work/mnt fuse.worldfs ro,allow_other,nofail,noauto,x-systemd.requires=local-fs.target 0 0" >"$work/fstab"
pkg mount -T "$work/fstab" "$work/mnt"
pkg ls "$work/mnt" | grep -qx blocks || fail "no blocks/ in the mount"
pkg cat "$work/mnt/blocks/0,0,0/meta/3,2,8/fields/text" | grep -q 'Welcome to worldfs' ||
    fail "the demo's sign does not read through the mount"
pkg sh -c "echo x > '$work/mnt/node/5,3,5'" 2>/dev/null && fail "a read-only mount (ro from fstab) took a write"
pkg umount "$work/mnt"
echo "mount -T fstab (fuse.worldfs, ro,allow_other,nofail,noauto,x-systemd.*), ls, cat, umount: ok"

# The man pages.
pkg env MANPAGER=cat man worldfs-mount 2>/dev/null | grep -q MOUNTPOINT || fail "man worldfs-mount does not render"
pkg env MANPAGER=cat man worldfs 2>/dev/null | grep -q 'worldfs-mount' || fail "man worldfs does not name worldfs-mount"

# bash completion: `worldfs mo<TAB>` gives `mount`.
completed=$(pkg bash -c '. /usr/share/bash-completion/completions/worldfs
    COMP_WORDS=(worldfs mo); COMP_CWORD=1; COMP_LINE="worldfs mo"; COMP_POINT=${#COMP_LINE}
    complete -p worldfs >/dev/null
    func=$(complete -p worldfs | sed -n "s/.*-F \([^ ]*\).*/\1/p")
    "$func" worldfs mo worldfs
    printf "%s\n" "${COMPREPLY[@]}"')
[ "$completed" = mount ] || fail "bash completion of 'worldfs mo' gave: $completed"
echo "man worldfs-mount, bash completion of 'worldfs mo<TAB>' (mount): ok"

# worldfs live install puts the package's copy of the mod into a world.
pkg worldfs demo "$work/world2" >/dev/null
pkg worldfs live install "$work/world2" >/dev/null
for f in /usr/share/worldfs/worldfs_live/*; do
    installed="$work/world2/worldmods/worldfs_live/$(basename "$f")"
    case $(basename "$f") in README.md) continue ;; esac
    cmp -s "$f" "$installed" || fail "worldfs live install: $installed differs from $f"
done
echo "worldfs live install: the mod in /usr/share/worldfs/worldfs_live, byte for byte: ok"

# The systemd unit names the packaged binary and verifies.
if command -v systemd-analyze >/dev/null; then
    cp '/lib/systemd/system/worldfs@.service' "$work/worldfs@main.service"
    systemd-analyze verify "$work/worldfs@main.service" 2>&1 | grep 'worldfs@' && fail "systemd-analyze verify found problems"
fi

# Removal leaves nothing behind: every path of the package that was not
# there before it is gone.
dpkg --purge worldfs >/dev/null
left=$(while read -r p; do
    if { [ -e "$p" ] || [ -L "$p" ]; } && ! grep -qxF "$p" "$work/there-before"; then echo "$p"; fi
done <"$work/paths")
[ -z "$left" ] || fail "dpkg --purge worldfs left: $left"
echo "dpkg --purge worldfs: none of its $(wc -l <"$work/paths") paths left: ok"
