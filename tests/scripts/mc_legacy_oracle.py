#!/usr/bin/env python3
"""The byte-wise reader of 1.12-and-older sections for tests/minecraft.rs:
amulet-nbt (MIT) reads the NBT, region files are read here. Never linked
into worldfs. Prints one fact a line:

    arrays X,Z Y KEY HEX       KEY: Blocks, Data, Add (each present one)
    rest X,Z SHA256            of the chunk's NBT without its sections'
                               Blocks, Data and Add and without LightPopulated
    light X,Z N                its LightPopulated (- if absent)

    python3 mc_legacy_oracle.py WORLD
"""

import hashlib
import os
import sys

import amulet_nbt as nbt
from mc_region_read import chunks


def main():
    for key, tag in chunks(os.path.join(sys.argv[1], "region")):
        level = tag.compound["Level"]
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
        print(f"rest {key} {hashlib.sha256(tag.save_to(compressed=False)).hexdigest()}")


main()
