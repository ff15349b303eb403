#!/usr/bin/env bash
# Make src/view/mc_colors.txt, the block colours of top.png and MNT/map/ on
# Minecraft worlds: minecraft-assets (the game's block models and textures)
# and minecraft-data (tints, biomes), both PrismarineJS, MIT, from the npm
# registry into target/npm-assets (never shipped); contrib/mc-colors.py
# averages each block's top texture and tints it as in a plains biome.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/npm-assets
command -v npm >/dev/null || { echo "needs npm (apt-get install npm)" >&2; exit 1; }
npm install --silent --no-audit --no-fund --prefix "$dir" minecraft-assets@1.19.0 minecraft-data@3.119.0 >/dev/null
python3 contrib/mc-colors.py "$dir/node_modules/minecraft-assets/minecraft-assets/data" \
    "$dir/node_modules/minecraft-data/minecraft-data/data/pc" >src/view/mc_colors.txt
echo "src/view/mc_colors.txt: $(grep -vc '^#' src/view/mc_colors.txt) blocks"
