"""Region files read for the Minecraft test oracles (mc_nbt_oracle.py,
mc_legacy_oracle.py): each chunk of a folder's `r.X.Z.mca` files, as
(its "X,Z", its root tag read by amulet-nbt). Never linked into worldfs."""

import gzip
import os
import re
import zlib

import amulet_nbt as nbt


def chunks(folder):
    if not os.path.isdir(folder):
        return
    for name in sorted(os.listdir(folder)):
        m = re.fullmatch(r"r\.(-?\d+)\.(-?\d+)\.mca", name)
        if not m:
            continue
        data = open(os.path.join(folder, name), "rb").read()
        for i in range(1024):
            off = int.from_bytes(data[4 * i:4 * i + 3], "big")
            if off == 0:
                continue
            length = int.from_bytes(data[off * 4096:off * 4096 + 4], "big")
            kind = data[off * 4096 + 4]
            body = data[off * 4096 + 5:off * 4096 + 4 + length]
            raw = {1: gzip.decompress, 2: zlib.decompress, 3: lambda b: b}[kind](body)
            key = f"{int(m.group(1)) * 32 + i % 32},{int(m.group(2)) * 32 + i // 32}"
            yield key, nbt.load(raw, compressed=False)
