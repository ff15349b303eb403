#!/usr/bin/env python3
"""Minecraft block colours for top.png and MNT/map/ (src/view/mc_colors.txt).

usage: mc-colors.py ASSETS_DATA MCDATA_PC > src/view/mc_colors.txt

ASSETS_DATA is minecraft-assets' data folder (PrismarineJS, npm), whose
per-version blocks_states.json, blocks_models.json and block textures are
the game's own; MCDATA_PC is minecraft-data's data/pc folder (tints and
biomes). Run by contrib/make-mc-colors.sh.

A block's colour is the average opaque pixel of the texture of its model's
top face (the highest element's "up" face, else the model's top, end, all
or texture), tinted as the game tints it in a plains biome where the face
has a tint index: the constant tints minecraft-data lists by block, the
water colour of plains, and else the foliage (leaves, vines) or grass
colour map read at plains' temperature and rainfall.
"""
import json
import os
import struct
import sys
import zlib

# Newest first: a block keeps the colour of the newest version that has it.
VERSIONS = ["1.21.11", "1.21.4", "1.20.2", "1.19.1", "1.18.1", "1.17.1", "1.16.4", "1.15.2", "1.14.4", "1.13.2"]
INVISIBLE = {"air", "cave_air", "void_air", "barrier", "structure_void", "light"}


def read_png(path):
    """RGBA rows of a PNG (8-bit truecolour, grey or palette; no interlace)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, plte, trns = 8, b"", None, None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            plte = body
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat += body
    if depth != 8 or interlace:
        return None
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    raw, stride, bpp = zlib.decompress(idat), w * channels, channels
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    out = []
    for line in rows:
        for x in range(w):
            px = line[x * channels:(x + 1) * channels]
            if ctype == 6:
                out.append(tuple(px))
            elif ctype == 2:
                out.append((px[0], px[1], px[2], 255))
            elif ctype == 4:
                out.append((px[0], px[0], px[0], px[1]))
            elif ctype == 0:
                out.append((px[0], px[0], px[0], 255))
            else:
                k = px[0]
                alpha = trns[k] if trns and k < len(trns) else 255
                out.append((plte[3 * k], plte[3 * k + 1], plte[3 * k + 2], alpha))
    return w, h, out


def average(path):
    png = read_png(path)
    if not png:
        return None
    seen = [p for p in png[2] if p[3] >= 128]
    if not seen:
        return None
    return tuple(sum(p[i] for p in seen) // len(seen) for i in range(3))


def strip(ref):
    return ref.split(":")[-1].replace("blocks/", "").replace("block/", "")


def resolve(models, name):
    """A model's textures (parents' first, overridden) and its elements."""
    textures, elements, seen = {}, None, set()
    chain = []
    while name and name not in seen:
        seen.add(name)
        m = models.get(name)
        if m is None:
            break
        chain.append(m)
        name = strip(m["parent"]) if "parent" in m else None
    for m in reversed(chain):
        textures.update(m.get("textures", {}))
        if "elements" in m:
            elements = m["elements"]
    return textures, elements or []


def top_texture(models, model):
    textures, elements = resolve(models, model)

    def deref(ref, depth=0):
        while ref and ref.startswith("#") and depth < 10:
            ref, depth = textures.get(ref[1:]), depth + 1
        return None if not ref or ref.startswith("#") else strip(ref)

    ups = [(e["to"][1], e["faces"]["up"]) for e in elements if "up" in e.get("faces", {})]
    if ups:
        face = max(ups, key=lambda t: t[0])[1]
        return deref(face["texture"]), "tintindex" in face
    tinted = any("tintindex" in f for e in elements for f in e.get("faces", {}).values())
    for key in ("top", "end", "all", "texture", "cross", "plant", "particle", "side"):
        if key in textures:
            return deref(textures[key]), tinted
    return None, False


def first_model(state):
    if "variants" in state:
        v = next(iter(state["variants"].values()))
    elif "multipart" in state:
        v = state["multipart"][0]["apply"]
    else:
        return None
    v = v[0] if isinstance(v, list) else v
    return strip(v["model"])


def colormap_at(path, temperature, rainfall):
    w, h, px = read_png(path)
    t = min(max(temperature, 0.0), 1.0)
    r = min(max(rainfall, 0.0), 1.0) * t
    x, y = int((1 - t) * (w - 1)), int((1 - r) * (h - 1))
    return px[y * w + x][:3]


def plains_tints(assets, mcdata):
    biomes = json.load(open(os.path.join(mcdata, "1.19", "biomes.json")))
    plains = next(b for b in biomes if b["name"] == "plains")
    colormaps = os.path.join(assets, "1.20.2", "colormap")
    at = (plains["temperature"], plains["rainfall"])
    tints = json.load(open(os.path.join(mcdata, "1.21.4", "tints.json")))
    water = next(d["color"] for d in tints["water"]["data"] if "plains" in d["keys"])
    constant = {k: d["color"] for d in tints["constant"]["data"] for k in d["keys"]}
    return {
        "grass": colormap_at(os.path.join(colormaps, "grass.png"), *at),
        "foliage": colormap_at(os.path.join(colormaps, "foliage.png"), *at),
        "water": ((water >> 16) & 255, (water >> 8) & 255, water & 255),
        "constant": {k: ((c >> 16) & 255, (c >> 8) & 255, c & 255) for k, c in constant.items()},
    }


def tint_of(name, tints):
    if name in tints["constant"]:
        return tints["constant"][name]
    if "water" in name or name == "bubble_column":
        return tints["water"]
    if name.endswith("leaves") or name.endswith("vine") or name == "vine":
        return tints["foliage"]
    return tints["grass"]


def main():
    assets, mcdata = sys.argv[1], sys.argv[2]
    tints = plains_tints(assets, mcdata)
    colours = {}
    for version in VERSIONS:
        d = os.path.join(assets, version)
        if not os.path.isdir(d):
            continue
        states = json.load(open(os.path.join(d, "blocks_states.json")))
        models = json.load(open(os.path.join(d, "blocks_models.json")))
        for name, state in states.items():
            if name in colours:
                continue
            if name in INVISIBLE:
                colours[name] = (0, 0, 0, 0)
                continue
            model = first_model(state)
            texture, tinted = top_texture(models, model) if model else (None, False)
            if name in ("water", "bubble_column"):
                # A liquid's model has no faces: its texture is tinted whole.
                texture, tinted = texture or "water_still", True
            if name == "lava" and not texture:
                texture = "lava_still"
            path = os.path.join(d, "blocks", f"{texture}.png") if texture else None
            rgb = average(path) if path and os.path.isfile(path) else None
            if rgb is None:
                continue
            if tinted or name in tints["constant"]:
                t = tint_of(name, tints)
                rgb = tuple(a * b // 255 for a, b in zip(rgb, t))
            colours[name] = rgb + (255,)
    print("# Block colours for top.png and MNT/map/ of Minecraft worlds (name r g b a), made by")
    print("# contrib/make-mc-colors.sh from minecraft-assets' models and textures and minecraft-data's tints.")
    for name in sorted(colours):
        print("minecraft:%s %d %d %d %d" % ((name,) + colours[name]))


if __name__ == "__main__":
    main()
