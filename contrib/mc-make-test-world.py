#!/usr/bin/env python3
"""Make tests/data/minecraft/made/, a Java world of two real chunks with
what the sample worlds lack: signs and 1.17+ entity region files.

The NBT is read, changed and written by amulet-nbt (MIT; pip install
amulet-nbt), not by worldfs; region files are laid out here as the game
lays them (8 KiB header, zlib chunks padded to 4 KiB sectors).

    python3 contrib/mc-make-test-world.py [OUT]

From tests/data/minecraft/querz/ (Querz/NBT's files, see its README):
  * chunk -65,-42 (1.17.1, DataVersion 2730), given two signs of the
    pre-1.20 form (Text1..Text4, JSON text components: one plain, one with
    a styled `extra`), and `entities/r.-3.-2.mca` holding its entities (a
    pig and a named armor stand), as 1.17+ store them;
  * chunk -8,-12 (1.18), its DataVersion set to 3465 (1.20.1), given a
    sign of the 1.20 form (front_text and back_text messages);
  * `playerdata/<uuid>.dat`, a 1.17.1 player (gzip NBT as the game
    writes it) with a few items.
"""

import os
import shutil
import sys
import zlib

import amulet_nbt as nbt

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "tests", "data", "minecraft", "querz")


def read_chunk(path, i):
    data = open(path, "rb").read()
    off = int.from_bytes(data[4 * i:4 * i + 3], "big")
    length = int.from_bytes(data[off * 4096:off * 4096 + 4], "big")
    assert data[off * 4096 + 4] == 2, "zlib expected"
    return nbt.load(zlib.decompress(data[off * 4096 + 5:off * 4096 + 4 + length]), compressed=False)


def write_region(path, chunks):
    """chunks: {header index: NamedTag}."""
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


def old_sign(x, y, z, texts):
    be = nbt.CompoundTag({"id": nbt.StringTag("minecraft:sign"), "x": nbt.IntTag(x), "y": nbt.IntTag(y),
                          "z": nbt.IntTag(z), "keepPacked": nbt.ByteTag(0), "GlowingText": nbt.ByteTag(0),
                          "Color": nbt.StringTag("black")})
    for i, t in enumerate(texts):
        be[f"Text{i + 1}"] = nbt.StringTag(t)
    return be


def side(messages, color):
    return nbt.CompoundTag({"has_glowing_text": nbt.ByteTag(0), "color": nbt.StringTag(color),
                            "messages": nbt.ListTag([nbt.StringTag(m) for m in messages])})


def entity(eid, pos, uuid, extra):
    e = nbt.CompoundTag({"id": nbt.StringTag(eid), "Pos": nbt.ListTag([nbt.DoubleTag(v) for v in pos]),
                         "Motion": nbt.ListTag([nbt.DoubleTag(0.0)] * 3),
                         "Rotation": nbt.ListTag([nbt.FloatTag(90.0), nbt.FloatTag(0.0)]),
                         "UUID": nbt.IntArrayTag(uuid), "OnGround": nbt.ByteTag(1), "Air": nbt.ShortTag(300)})
    for k, v in extra.items():
        e[k] = v
    return e


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "data", "minecraft", "made")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "region"))
    shutil.copy(os.path.join(SRC, "level.dat"), os.path.join(out, "level.dat"))

    # 1.17.1: chunk -65,-42 is index (-65 & 31) + 32 * (-42 & 31) = 31 + 32 * 22.
    i17 = 31 + 32 * 22
    c17 = read_chunk(os.path.join(SRC, "region", "r.-3.-2.mca"), i17)
    bes = c17.compound["Level"]["TileEntities"]
    bes.append(old_sign(-1036, 70, -666, ['{"text":"Welcome"}', '{"text":"to the"}', '{"text":"spawn"}', '{"text":""}']))
    bes.append(old_sign(-1035, 70, -666, ['{"text":"Keep ","extra":[{"text":"out","color":"red"}]}', '""',
                                          '{"text":"by order"}', '{"text":""}']))
    write_region(os.path.join(out, "region", "r.-3.-2.mca"), {i17: c17})
    ents = nbt.NamedTag(nbt.CompoundTag({
        "DataVersion": nbt.IntTag(2730),
        "Position": nbt.IntArrayTag([-65, -42]),
        "Entities": nbt.ListTag([
            entity("minecraft:pig", [-1032.5, 64.0, -660.5], [1, 2, 3, 4], {"Health": nbt.FloatTag(10.0)}),
            entity("minecraft:armor_stand", [-1030.5, 64.0, -663.5], [5, 6, 7, 8],
                   {"CustomName": nbt.StringTag('{"text":"Guard"}'), "Health": nbt.FloatTag(20.0)}),
        ]),
    }))
    write_region(os.path.join(out, "entities", "r.-3.-2.mca"), {i17: ents})

    # 1.18 chunk -8,-12, given a 1.20 sign: index 24 + 32 * 20.
    i20 = 24 + 32 * 20
    c20 = read_chunk(os.path.join(SRC, "region", "r.-1.-1.mca"), i20)
    c20.compound["DataVersion"] = nbt.IntTag(3465)
    sign = nbt.CompoundTag({"id": nbt.StringTag("minecraft:sign"), "x": nbt.IntTag(-120), "y": nbt.IntTag(70),
                            "z": nbt.IntTag(-188), "keepPacked": nbt.ByteTag(0), "is_waxed": nbt.ByteTag(0),
                            "front_text": side(['{"text":"North"}', '""', '""', '""'], "black"),
                            "back_text": side(['""', '{"text":"South","bold":true}', '""', '""'], "blue")})
    c20.compound["block_entities"].append(sign)
    write_region(os.path.join(out, "region", "r.-1.-1.mca"), {i20: c20})

    item = lambda slot, iid, n: nbt.CompoundTag({"Slot": nbt.ByteTag(slot), "id": nbt.StringTag(iid),
                                                 "Count": nbt.ByteTag(n)})
    player = nbt.NamedTag(nbt.CompoundTag({
        "DataVersion": nbt.IntTag(2730), "Dimension": nbt.StringTag("minecraft:overworld"),
        "Pos": nbt.ListTag([nbt.DoubleTag(-1030.5), nbt.DoubleTag(64.0), nbt.DoubleTag(-660.5)]),
        "Rotation": nbt.ListTag([nbt.FloatTag(90.0), nbt.FloatTag(0.0)]), "Health": nbt.FloatTag(20.0),
        "Inventory": nbt.ListTag([item(0, "minecraft:stone", 64), item(1, "minecraft:torch", 12)]),
        "UUID": nbt.IntArrayTag([11, 22, 33, 44]), "XpLevel": nbt.IntTag(3),
    }))
    os.makedirs(os.path.join(out, "playerdata"))
    player.save_to(os.path.join(out, "playerdata", "0000000b-0000-0016-0000-00210000002c.dat"), compressed=True)


if __name__ == "__main__":
    main()
