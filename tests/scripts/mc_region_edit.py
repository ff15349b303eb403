#!/usr/bin/env python3
"""Another program changing a Minecraft Java region file behind a mount's
back, for tests/minecraft_robust.rs: amulet-nbt (MIT) reads and writes the
chunk's NBT, the region layout is handled here as the game lays it out (a
chunk rewritten in its own sectors when it fits them, else at the end of
the file). Never linked into worldfs.

    mc_region_edit.py palette REGION X Z Y OLD NEW
        rename palette entry OLD to NEW in section Y of chunk X,Z; the
        new file is written beside the old one and renamed over it
    mc_region_edit.py inhabited REGION X Z TICKS
        set the chunk's InhabitedTime, written into the file in place
        with the file's size and modification time kept (as a backup
        restored with its times, or a second save within one tick of a
        coarse file system clock, leaves them)

Each prints the SHA-256 of the chunk's new NBT (uncompressed).
"""

import gzip
import hashlib
import os
import sys
import zlib

import amulet_nbt as nbt

SECTOR = 4096


def locate(data, x, z):
    i = (x % 32) + 32 * (z % 32)
    off = int.from_bytes(data[4 * i:4 * i + 3], "big")
    count = data[4 * i + 3]
    if off == 0:
        sys.exit(f"chunk {x},{z} is not stored")
    return i, off, count


def read_chunk(data, x, z):
    _, off, _ = locate(data, x, z)
    length = int.from_bytes(data[off * SECTOR:off * SECTOR + 4], "big")
    kind = data[off * SECTOR + 4]
    body = bytes(data[off * SECTOR + 5:off * SECTOR + 4 + length])
    raw = {1: gzip.decompress, 2: zlib.decompress, 3: lambda b: b}[kind](body)
    return nbt.load(raw, compressed=False)


def store_chunk(data, x, z, root):
    """The chunk zlib-compressed into its sectors, or at the file's end."""
    i, off, count = locate(data, x, z)
    raw = root.save_to(compressed=False)
    body = zlib.compress(raw)
    need = (len(body) + 5 + SECTOR - 1) // SECTOR
    if need > count:
        off = (len(data) + SECTOR - 1) // SECTOR
        data.extend(b"\0" * (off * SECTOR - len(data)))
        data.extend(b"\0" * (need * SECTOR))
        count = need
    start = off * SECTOR
    data[start:start + 4] = (len(body) + 1).to_bytes(4, "big")
    data[start + 4] = 2
    data[start + 5:start + 5 + len(body)] = body
    data[start + 5 + len(body):(off + count) * SECTOR] = b"\0" * ((off + count) * SECTOR - start - 5 - len(body))
    data[4 * i:4 * i + 4] = off.to_bytes(3, "big") + bytes([count])
    return hashlib.sha256(raw).hexdigest()


def sections(root):
    level = root["Level"] if "Level" in root else root
    return level["Sections"] if "Sections" in level else level["sections"]


def palette(section):
    if "Palette" in section:
        return section["Palette"]
    return section["block_states"]["palette"]


def main():
    what, path = sys.argv[1], sys.argv[2]
    x, z = int(sys.argv[3]), int(sys.argv[4])
    data = bytearray(open(path, "rb").read())
    root = read_chunk(data, x, z)
    tag = root.compound
    if what == "palette":
        y, old, new = int(sys.argv[5]), sys.argv[6], sys.argv[7]
        renamed = 0
        for s in sections(tag):
            if s["Y"].py_int == y:
                for entry in palette(s):
                    if entry["Name"].py_str == old:
                        entry["Name"] = nbt.StringTag(new)
                        renamed += 1
        if not renamed:
            sys.exit(f"section {y} of chunk {x},{z} has no palette entry {old}")
        digest = store_chunk(data, x, z, root)
        tmp = path + ".other-program"
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, path)
    elif what == "inhabited":
        level = tag["Level"] if "Level" in tag else tag
        level["InhabitedTime"] = nbt.LongTag(int(sys.argv[5]))
        size, st = len(data), os.stat(path)
        digest = store_chunk(data, x, z, root)
        if len(data) != size:
            sys.exit("the chunk no longer fits its sectors")
        with open(path, "r+b") as f:
            f.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        sys.exit(f"unknown command {what}")
    print(digest)


if __name__ == "__main__":
    main()
