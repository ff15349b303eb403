#!/usr/bin/env python3
"""A second independent reader of Java worlds for tests/minecraft_more.rs:
amulet-nbt (MIT) reads the NBT, region files are read here. Never linked
into worldfs. Prints one fact a line:

    sign X,Z x,y,z SIDE N JSON     SIDE: old (Text1..4), front, back; N 1-4
    rest X,Z SHA256                of the chunk's NBT without sign texts
    entity X,Z N ID X Y Z          region/ Level.Entities or entities/ files
    heightmap X,Z NAME H*256       heights as stored (z*16 + x)

    python3 mc_nbt_oracle.py WORLD
"""

import hashlib
import os
import sys

import amulet_nbt as nbt
from mc_region_read import chunks


def unpack(longs, n, bits, spanning):
    out, mask = [], (1 << bits) - 1
    longs = [v & (2**64 - 1) for v in longs]
    per = 64 // bits
    for i in range(n):
        if spanning:
            bit = i * bits
            word = longs[bit // 64] | ((longs[bit // 64 + 1] << 64) if bit // 64 + 1 < len(longs) else 0)
            out.append((word >> (bit % 64)) & mask)
        else:
            out.append((longs[i // per] >> ((i % per) * bits)) & mask)
    return out


def signs(key, level):
    bes = level.get("block_entities") or level.get("TileEntities") or []
    for be in bes:
        pos = f"{be['x'].py_int},{be['y'].py_int},{be['z'].py_int}"
        if "Text1" in be:
            for n in range(1, 5):
                print(f"sign {key} {pos} old {n} {be[f'Text{n}'].py_str}")
                del be[f"Text{n}"]
        for side in ("front_text", "back_text"):
            if side in be:
                for n, msg in enumerate(be[side]["messages"], 1):
                    print(f"sign {key} {pos} {side.split('_')[0]} {n} {msg.py_str}")
                del be[side]["messages"]


def main():
    world = sys.argv[1]
    for key, tag in chunks(os.path.join(world, "region")):
        root = tag.compound
        level = root.get("Level") or root
        for n, e in enumerate(level.get("Entities") or []):
            pos = " ".join(repr(p.py_float) for p in e["Pos"])
            print(f"entity {key} {n} {e['id'].py_str} {pos}")
        if "HeightMap" in level:
            print(f"heightmap {key} HeightMap {' '.join(str(int(h)) for h in level['HeightMap'])}")
        spanning = "Level" in root and root["DataVersion"].py_int < 2529
        for name, longs in (level.get("Heightmaps") or {}).items():
            heights = unpack([int(v) for v in longs.np_array], 256, 9, spanning)
            print(f"heightmap {key} {name} {' '.join(map(str, heights))}")
        signs(key, level)
        print(f"rest {key} {hashlib.sha256(tag.save_to(compressed=False)).hexdigest()}")
    for key, tag in chunks(os.path.join(world, "entities")):
        for n, e in enumerate(tag.compound["Entities"]):
            pos = " ".join(repr(p.py_float) for p in e["Pos"])
            print(f"entity {key} {n} {e['id'].py_str} {pos}")


if __name__ == "__main__":
    main()
