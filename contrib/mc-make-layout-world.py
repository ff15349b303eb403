#!/usr/bin/env python3
"""Make tests/data/minecraft/layout-26/, a Java world in the folder layout
of 26.1 (dimensions/NAMESPACE/PATH/ for every dimension, players/data/ for
players), from real files moved into that layout, unchanged: no world of
26.1 with a permissive licence was found to copy.

    python3 contrib/mc-make-layout-world.py TOY_TANK_WORLD [OUT]

TOY_TANK_WORLD: a checkout of https://github.com/jarrodmmoore/Toy-Tank-Royale-Dev
(MIT License, Copyright (c) 2024 jarrodmmoore; commit 08229c7, a world of
1.21.11). From it: level.dat, region/r.-2.-2.mca (38 chunks saved by
1.21.5, DataVersion 4325) as the overworld's, entities/r.-1.-1.mca (4
entity chunks of 1.21.11) as the overworld's entities. From
tests/data/minecraft/ (see its README): querz/region/r.-1.-1.mca (a 1.18
chunk) as the Nether's, querz/region/r.0.0.mca (a 1.15.2 chunk) as the
End's, made/playerdata/*.dat as a player. Only poi/ is made here: one
chunk of points of interest (a bed's home and a bell's meeting point), as
the game stores them (Sections by section Y, each with Records and Valid),
written with amulet-nbt (MIT), as no real poi/ file with a permissive
licence was found either.
"""

import os
import shutil
import sys
import zlib

import amulet_nbt as nbt

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "minecraft")


def write_region(path, chunks):
    """chunks: {header index: NamedTag}, zlib, as the game lays them out."""
    header, body = bytearray(8192), bytearray()
    for i, tag in sorted(chunks.items()):
        data = zlib.compress(tag.save_to(compressed=False))
        blob = (len(data) + 1).to_bytes(4, "big") + b"\x02" + data
        blob += b"\x00" * (-len(blob) % 4096)
        sector = 2 + len(body) // 4096
        header[4 * i:4 * i + 4] = ((sector << 8) | len(blob) // 4096).to_bytes(4, "big")
        header[4096 + 4 * i:4100 + 4 * i] = (1700000000).to_bytes(4, "big")
        body += blob
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").write(bytes(header) + bytes(body))


def poi_chunk():
    def record(pos, kind):
        return nbt.CompoundTag({"pos": nbt.IntArrayTag(pos), "type": nbt.StringTag(kind),
                                "free_tickets": nbt.IntTag(1)})

    def section(records):
        return nbt.CompoundTag({"Records": nbt.ListTag(records), "Valid": nbt.ByteTag(1)})

    # Chunk -50,-50 of region -2,-2 (header index 14 + 32 * 14).
    sections = nbt.CompoundTag({
        "4": section([record([-795, 70, -790], "minecraft:home")]),
        "5": section([record([-793, 81, -789], "minecraft:meeting")]),
    })
    root = nbt.CompoundTag({"DataVersion": nbt.IntTag(4325), "Sections": sections})
    return nbt.NamedTag(root, "")


def main():
    toy = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(DATA, "layout-26")
    if os.path.exists(out):
        shutil.rmtree(out)
    moves = [
        (os.path.join(toy, "level.dat"), "level.dat"),
        (os.path.join(toy, "region/r.-2.-2.mca"), "dimensions/minecraft/overworld/region/r.-2.-2.mca"),
        (os.path.join(toy, "entities/r.-1.-1.mca"), "dimensions/minecraft/overworld/entities/r.-1.-1.mca"),
        (os.path.join(DATA, "querz/region/r.-1.-1.mca"), "dimensions/minecraft/the_nether/region/r.-1.-1.mca"),
        (os.path.join(DATA, "querz/region/r.0.0.mca"), "dimensions/minecraft/the_end/region/r.0.0.mca"),
    ]
    player = "0000000b-0000-0016-0000-00210000002c.dat"
    moves.append((os.path.join(DATA, "made/playerdata", player), f"players/data/{player}"))
    for src, dst in moves:
        os.makedirs(os.path.dirname(os.path.join(out, dst)), exist_ok=True)
        shutil.copyfile(src, os.path.join(out, dst))
    write_region(os.path.join(out, "dimensions/minecraft/overworld/poi/r.-2.-2.mca"), {14 + 32 * 14: poi_chunk()})
    print(f"{out}: made")


main()
