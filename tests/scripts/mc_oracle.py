#!/usr/bin/env python3
"""The independent reader of Minecraft Java worlds for tests/minecraft.rs:
anvil-parser2 (MIT; pip install anvil-parser2, by contrib/test.sh), never
linked into worldfs. Prints what it reads, one fact a line:

    section X,Z Y LABEL*4096     blocks y*256 + z*16 + x, "name[k=v,...]"
                                 with properties sorted
    legacy X,Z Y ID:DATA*4096    the same for 1.12 and older sections
                                 (numeric id and data, as stored)
    be X,Z x,y,z ID ITEMS        ITEMS: slot:count:id;... (or -)
    chunk X,Z SHA256             of the chunk's decompressed NBT bytes

    python3 mc_oracle.py WORLD [X,Z ...]   (only those chunks if given)
"""

import gzip
import hashlib
import os
import re
import sys
import zlib

import anvil


def label(block):
    props = ",".join(f"{k}={v}" for k, v in sorted((k, str(v)) for k, v in block.properties.items()))
    name = f"{block.namespace}:{block.id}"
    return f"{name}[{props}]" if props else name


def raw_nbt(data, i):
    off = int.from_bytes(data[4 * i:4 * i + 3], "big")
    length = int.from_bytes(data[off * 4096:off * 4096 + 4], "big")
    kind = data[off * 4096 + 4]
    body = data[off * 4096 + 5:off * 4096 + 4 + length]
    return {1: gzip.decompress, 2: zlib.decompress, 3: lambda b: b}[kind](body)


def items_text(te):
    if "Items" not in te:
        return "-"
    out = []
    for it in te["Items"]:
        count = it["Count"].value if "Count" in it else it["count"].value
        out.append(f"{it['Slot'].value}:{count}:{it['id'].value}")
    return ";".join(out) or "(none)"


def main():
    world, only = sys.argv[1], set(sys.argv[2:])
    rdir = os.path.join(world, "region")
    for name in sorted(os.listdir(rdir)):
        m = re.fullmatch(r"r\.(-?\d+)\.(-?\d+)\.mca", name)
        if not m:
            continue
        rx, rz = int(m.group(1)), int(m.group(2))
        path = os.path.join(rdir, name)
        data = open(path, "rb").read()
        region = anvil.Region(data)
        for i in range(1024):
            if int.from_bytes(data[4 * i:4 * i + 4], "big") == 0:
                continue
            cx, cz = rx * 32 + i % 32, rz * 32 + i // 32
            key = f"{cx},{cz}"
            if only and key not in only:
                continue
            print(f"chunk {key} {hashlib.sha256(raw_nbt(data, i)).hexdigest()}")
            chunk = anvil.Chunk.from_region(region, i % 32, i // 32)
            level = chunk.data
            sections = level["sections"] if "sections" in level else level.get("Sections", [])
            for sec in sections:
                if "Blocks" in sec:
                    ids = [f"{b.id}:{b.data}" for b in chunk.stream_blocks(section=sec)]
                    print(f"legacy {key} {sec['Y'].value} {' '.join(ids)}")
                    continue
                has = ("block_states" in sec) or ("Palette" in sec)
                if not has:
                    continue
                labels = [label(b) for b in chunk.stream_blocks(section=sec)]
                print(f"section {key} {sec['Y'].value} {' '.join(labels)}")
            tes = level["block_entities"] if "block_entities" in level else level.get("TileEntities", [])
            for te in tes:
                pos = f"{te['x'].value},{te['y'].value},{te['z'].value}"
                print(f"be {key} {pos} {te['id'].value} {items_text(te)}")


main()
