#!/usr/bin/env python3
"""Write src/worlds/minecraft/legacy_blocks.txt, the names of 1.12-and-older
blocks (a section's Blocks/Add/Data arrays: a numeric id and 4 bits of
data), and src/worlds/minecraft/legacy_opacity.txt, which of those ids stop
light, from the minecraft-data package (PrismarineJS, MIT licence):
pc/common/legacy.json maps each "id:data" the game knew to the block state
the game's own 1.13 upgrade gives it, pc/1.12/blocks.json names every
1.12 block id (for a data value legacy.json does not list), and
pc/1.17/blocks.json gives each block's light filtering as the game
computes it (see opacity_lines).

Usage: contrib/mc-legacy-blocks.py [MINECRAFT_DATA_DIR]
(default: target/npm-oracle/node_modules/minecraft-data, which
contrib/test.sh installs with prismarine-chunk).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# 1.17 names of 1.13 states that were renamed after 1.13.
RENAMED = {"grass_path": "dirt_path", "sign": "oak_sign", "wall_sign": "oak_wall_sign"}

# Blocks 1.12 gives a light opacity of their own (Block.setLightOpacity in
# their registration or constructor): water and ice 3, leaves and cobweb 1,
# farmland, grass paths, every slab and every stair 255.
SET_BY_1_12 = {"flowing_water", "water", "ice", "frosted_ice", "leaves", "leaves2", "web", "farmland", "grass_path"}

# Blocks that are full opaque cubes since 1.13 but not in 1.12, whose
# pistons override isOpaqueCube with false (so their opacity is 0).
NOT_OPAQUE_IN_1_12 = {"piston", "sticky_piston"}


def stops_light_in_1_12(name, modern_filters):
    """1.12's Block.lightOpacity is 255 for a block whose default state is
    an opaque cube and 0 for others, unless the block sets its own. From
    1.17's data (filterLight 15: an opaque cube; 1: a block that is not but
    still dims light, which 1.12 has only where the block sets it)."""
    if name in SET_BY_1_12 or name.endswith(("_stairs", "slab", "slab2")):
        return True
    if name in NOT_OPAQUE_IN_1_12:
        return False
    return 15 in modern_filters


def opacity_lines(data, version, legacy, blocks):
    modern = {b["name"]: b["filterLight"] for b in json.load(open(os.path.join(data, "1.17/blocks.json")))}
    filters = {}
    for key, state in legacy.items():
        block_id = int(key.split(":")[0])
        name = state.split("[")[0].removeprefix("minecraft:")
        filters.setdefault(block_id, set()).add(modern[RENAMED.get(name, name)])
    lines = [
        f"# Which Minecraft Java 1.12 block ids stop light (light opacity not 0),",
        f"# from minecraft-data {version} (PrismarineJS, MIT) by contrib/mc-legacy-blocks.py;",
        "# do not edit. 'ID NAME 1': the id stops light; 'ID NAME 0': light passes.",
        "# A column's HeightMap is y+1 of its highest block that stops light.",
    ]
    for b in sorted(blocks, key=lambda b: b["id"]):
        stops = stops_light_in_1_12(b["name"], filters[b["id"]])
        lines.append(f"{b['id']} minecraft:{b['name']} {int(stops)}")
    return lines


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
    out = os.path.join(ROOT, "src/worlds/minecraft/legacy_blocks.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: {len(keyed)} id:data states, {len(blocks)} ids")
    out = os.path.join(ROOT, "src/worlds/minecraft/legacy_opacity.txt")
    with open(out, "w") as f:
        f.write("\n".join(opacity_lines(data, version, legacy, blocks)) + "\n")
    print(f"{out}: {len(blocks)} ids")


main()
