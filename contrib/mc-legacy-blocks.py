#!/usr/bin/env python3
"""Write src/kinds/minecraft/legacy_blocks.txt, the names of 1.12-and-older
blocks (a section's Blocks/Add/Data arrays: a numeric id and 4 bits of
data), from the minecraft-data package (PrismarineJS, MIT licence):
pc/common/legacy.json maps each "id:data" the game knew to the block state
the game's own 1.13 upgrade gives it, and pc/1.12/blocks.json names every
1.12 block id (for a data value legacy.json does not list).

Usage: contrib/mc-legacy-blocks.py [MINECRAFT_DATA_DIR]
(default: target/npm-oracle/node_modules/minecraft-data, which
contrib/test.sh installs with prismarine-chunk).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    pkg = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/npm-oracle/node_modules/minecraft-data")
    data = os.path.join(pkg, "minecraft-data/data/pc")
    version = json.load(open(os.path.join(pkg, "package.json")))["version"]
    legacy = json.load(open(os.path.join(data, "common/legacy.json")))["blocks"]
    blocks = json.load(open(os.path.join(data, "1.12/blocks.json")))
    lines = [
        f"# Minecraft Java 1.12 and older block ids, from minecraft-data {version}",
        "# (PrismarineJS, MIT) by contrib/mc-legacy-blocks.py; do not edit.",
        "# 'ID:DATA STATE': the state the game's 1.13 upgrade gives it (common/legacy.json);",
        "# 'ID NAME': the 1.12 name of an id (1.12/blocks.json), for data values not listed.",
    ]
    keyed = sorted(legacy.items(), key=lambda kv: tuple(int(p) for p in kv[0].split(":")))
    lines += [f"{k} {v}" for k, v in keyed]
    lines += [f"{b['id']} minecraft:{b['name']}" for b in sorted(blocks, key=lambda b: b["id"])]
    out = os.path.join(ROOT, "src/kinds/minecraft/legacy_blocks.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: {len(keyed)} id:data states, {len(blocks)} ids")


main()
