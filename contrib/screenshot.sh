#!/usr/bin/env bash
# The picture in the README (docs/map.png): a world mounted read-only and
# its MNT/map/index.html opened in headless chromium, the way
# tests/pictures.rs checks the page.
#
#   contrib/screenshot.sh WORLD [OUT.png] [WIDTHxHEIGHT] [#X,Z,ZOOM]
#
# OUT.png defaults to docs/map.png, the size to 960x540; a #X,Z,ZOOM
# fragment opens the page at that node and zoom level (as in a link to
# the page). The README's picture is the world of
# ../shared/realdata/worlds/augsburg-leveldb converted to sqlite3 by
# `contrib/bench.sh --prepare` (../bench-data/augsburg-sqlite).
# Needs: a built worldfs (cargo build --release), chromium, FUSE.

set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORLD=${1:?usage: contrib/screenshot.sh WORLD [OUT.png] [WIDTHxHEIGHT] [#X,Z,ZOOM]}
OUT=$(realpath -m "${2:-$ROOT/docs/map.png}")
SIZE=${3:-960x540}
FRAGMENT=${4:-}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORLDFS=$TARGET/release/worldfs
[[ -x $WORLDFS ]] || WORLDFS=$TARGET/debug/worldfs
[[ -x $WORLDFS ]] || { echo "no worldfs under $TARGET: cargo build --release" >&2; exit 1; }
CHROMIUM=$(command -v chromium || command -v chromium-browser) || { echo "no chromium (apt install chromium)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/worldfs-shot.XXXXXX")
cleanup() {
    fusermount3 -u "$TMP/mnt" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
mkdir "$TMP/mnt" "$TMP/profile"
"$WORLDFS" mount "$WORLD" "$TMP/mnt" -o ro
# The tiles are drawn on demand: give the page real time to load them
# (virtual time does not wait for file reads).
"$CHROMIUM" --headless --no-sandbox --disable-gpu --allow-file-access-from-files \
    --user-data-dir="$TMP/profile" --window-size="${SIZE/x/,}" --hide-scrollbars \
    --virtual-time-budget=60000 --timeout=60000 \
    --screenshot="$OUT" "file://$TMP/mnt/map/index.html$FRAGMENT" 2>"$TMP/chromium.log" ||
    { cat "$TMP/chromium.log" >&2; exit 1; }
echo "wrote $OUT"
