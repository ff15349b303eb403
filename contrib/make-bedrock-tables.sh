#!/usr/bin/env bash
# Make src/worlds/bedrock/tables/ (item and block names, legacy ids, biomes,
# the Java block of each Bedrock block for its colour) from minecraft-data
# (PrismarineJS, MIT), installed from the npm registry into
# target/npm-assets (never shipped).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/npm-assets
command -v npm >/dev/null || { echo "needs npm (apt-get install npm)" >&2; exit 1; }
npm install --silent --no-audit --no-fund --prefix "$dir" minecraft-data@3.119.0 >/dev/null
python3 contrib/bedrock-tables.py "$dir/node_modules/minecraft-data/minecraft-data/data" src/worlds/bedrock/tables
wc -l src/worlds/bedrock/tables/*.txt
