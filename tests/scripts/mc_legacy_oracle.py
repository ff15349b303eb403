#!/usr/bin/env python3
"""The byte-wise reader of 1.12-and-older sections for tests/minecraft.rs:
amulet-nbt (MIT) reads the NBT, region files are read here. Never linked
into worldfs. Prints one fact a line:

    arrays X,Z Y KEY HEX       KEY: Blocks, Data, Add (each present one)
    rest X,Z SHA256            of the chunk's NBT without its sections'
                               Blocks, Data and Add, without LightPopulated
                               and without HeightMap
    light X,Z N                its LightPopulated (- if absent)
    heightmap X,Z H*256        its HeightMap as stored (z*16 + x)
    computed X,Z H*256         the HeightMap its blocks give: per column,
                               y+1 of its highest block that stops light
                               (0: none), the rule of the game's
                               Chunk.generateHeightMap; only when
                               minecraft-data is found (MINECRAFT_DATA, or
                               target/npm-oracle/node_modules/minecraft-data)

    python3 mc_legacy_oracle.py WORLD
"""

import hashlib
import json
import os
import sys

import amulet_nbt as nbt
from mc_region_read import chunks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def light_stopping_ids():
    """The 1.12 ids whose light opacity is not 0, from minecraft-data (its
    own reading, not worldfs's table): a block whose 1.13 form is an opaque
    cube in 1.17's data (filterLight 15), except pistons (not opaque cubes
    in 1.12); and the blocks 1.12 gives an opacity of their own (water,
    ice, leaves, cobweb, farmland, grass path, slabs, stairs). None: no
    minecraft-data here."""
    pkg = os.environ.get("MINECRAFT_DATA", os.path.join(ROOT, "target/npm-oracle/node_modules/minecraft-data"))
    pc = os.path.join(pkg, "minecraft-data/data/pc")
    if not os.path.isdir(pc):
        return None
    opaque = {b["name"] for b in json.load(open(os.path.join(pc, "1.17/blocks.json"))) if b["filterLight"] == 15}
    later = {"grass_path": "dirt_path", "sign": "oak_sign", "wall_sign": "oak_wall_sign"}
    by_id = {}
    for key, state in json.load(open(os.path.join(pc, "common/legacy.json")))["blocks"].items():
        name = state.split("[")[0].split(":")[1]
        by_id.setdefault(int(key.split(":")[0]), set()).add(later.get(name, name))
    own = {"flowing_water", "water", "ice", "frosted_ice", "leaves", "leaves2", "web", "farmland", "grass_path"}
    stops = set()
    for b in json.load(open(os.path.join(pc, "1.12/blocks.json"))):
        name = b["name"]
        if name in own or name.endswith("_stairs") or "slab" in name:
            stops.add(b["id"])
        elif name not in ("piston", "sticky_piston") and by_id.get(b["id"], set()) & opaque:
            stops.add(b["id"])
    return stops


def block_ids(sec):
    low = [int(b) & 0xFF for b in sec["Blocks"].np_array]
    if "Add" not in sec:
        return low
    add = [int(b) & 0xFF for b in sec["Add"].np_array]
    return [low[i] | (((add[i // 2] >> (4 * (i % 2))) & 0xF) << 8) for i in range(4096)]


def computed_heights(level, stops):
    heights = [0] * 256
    for sec in level.get("Sections") or []:
        if "Blocks" not in sec:
            continue
        ids, base = block_ids(sec), 16 * sec["Y"].py_int
        for col in range(256):
            for y in range(15, -1, -1):
                if ids[y * 256 + col] not in stops:
                    continue
                heights[col] = max(heights[col], base + y + 1)
                break
    return heights


def main():
    stops = light_stopping_ids()
    for key, tag in chunks(os.path.join(sys.argv[1], "region")):
        level = tag.compound["Level"]
        if stops is not None:
            print(f"computed {key} {' '.join(map(str, computed_heights(level, stops)))}")
        for sec in level.get("Sections") or []:
            for k in ("Blocks", "Data", "Add"):
                if k in sec:
                    hexed = bytes(int(b) & 0xFF for b in sec[k].np_array).hex()
                    print(f"arrays {key} {sec['Y'].py_int} {k} {hexed}")
                    del sec[k]
        light = level.get("LightPopulated")
        print(f"light {key} {'-' if light is None else light.py_int}")
        if light is not None:
            del level["LightPopulated"]
        if "HeightMap" in level:
            print(f"heightmap {key} {' '.join(str(int(h)) for h in level['HeightMap'].np_array)}")
            del level["HeightMap"]
        print(f"rest {key} {hashlib.sha256(tag.save_to(compressed=False)).hexdigest()}")


main()
