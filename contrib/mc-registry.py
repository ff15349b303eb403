#!/usr/bin/env python3
"""Write src/worlds/minecraft/registry.txt, the block states and item ids
the game knows in each version from 1.13 (the flattening) on, from the
minecraft-data package (PrismarineJS, MIT licence): pc/VERSION/blocks.json
(each block's name and its properties with their values) and
pc/VERSION/items.json (each item's name), the versions' DataVersions from
pc/common/protocolVersions.json and which data each release uses from
dataPaths.json.

Usage: contrib/mc-registry.py [MINECRAFT_DATA_DIR]
(default: target/npm-oracle/node_modules/minecraft-data, which
contrib/test.sh installs with prismarine-chunk).

The table is small: one line per block or item with the first and last
registry that has it as it is (a block whose properties change gets one
line per shape), and each set of properties written once.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src/worlds/minecraft/registry.txt")
RELEASE = re.compile(r"^\d+\.\d+(\.\d+)?$")


def releases(pkg):
    """(name, DataVersion, blocks dir, items dir) of each release from 1.13
    on that minecraft-data has blocks and items for, oldest first."""
    data = os.path.join(pkg, "minecraft-data/data")
    paths = json.load(open(os.path.join(data, "dataPaths.json")))["pc"]
    data_versions = {}
    for e in json.load(open(os.path.join(data, "pc/common/protocolVersions.json"))):
        if "dataVersion" in e:
            data_versions.setdefault(e["minecraftVersion"], e["dataVersion"])
    out = []
    for name, p in paths.items():
        dv = data_versions.get(name)
        if not RELEASE.match(name) or dv is None or dv < 1519 or "blocks" not in p or "items" not in p:
            continue
        out.append((name, dv, os.path.join(data, p["blocks"]), os.path.join(data, p["items"])))
    return sorted(out, key=lambda r: r[1])


def int_values(blocks_by_version):
    """Values of int properties, by (block, property, count): some
    versions' blocks.json give only the count, others the values (which do
    not always start at 0: layers 1-8, candles 1-4)."""
    known = {}
    for blocks in blocks_by_version:
        for b in blocks:
            for s in b.get("states") or []:
                if s.get("values"):
                    known.setdefault((b["name"], s["name"], s["num_values"]), [str(v) for v in s["values"]])
    return known


def values(block, prop, known):
    if prop.get("values"):
        return [str(v) for v in prop["values"]]
    if prop["type"] == "bool":
        return ["true", "false"]
    if prop["type"] == "int":
        # Two never listed with values (1.13's sign rotation 0-15, the
        # cauldron's level 0-3 before 1.17) count from 0.
        n = prop["num_values"]
        return known.get((block, prop["name"], n), [str(v) for v in range(n)])
    sys.exit(f"{block}.{prop['name']}: a property without values")


def shapes(path, known):
    """Each block's name and its properties as text (name=v1,v2 ...)."""
    out = {}
    for b in json.load(open(path)):
        props = [f"{p['name']}={','.join(values(b['name'], p, known))}" for p in b.get("states") or []]
        out[b["name"]] = " ".join(props)
    return out


def spans(per_version):
    """(first, last, key) for each run of versions holding the same key."""
    rows, open_rows = [], {}
    for i, keys in enumerate(per_version):
        for key in list(open_rows):
            if key not in keys:
                rows.append((open_rows.pop(key), i - 1, key))
        for key in keys:
            open_rows.setdefault(key, i)
    last = len(per_version) - 1
    rows += [(first, last, key) for key, first in open_rows.items()]
    return sorted(rows, key=lambda r: (r[2], r[0]))


def main():
    pkg = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/npm-oracle/node_modules/minecraft-data")
    package_version = json.load(open(os.path.join(pkg, "package.json")))["version"]
    found = releases(pkg)
    known = int_values(json.load(open(os.path.join(r[2], "blocks.json"))) for r in found)
    versions = []  # (name, DataVersion, blocks, items), a registry only where it changes
    for name, dv, blocks_dir, items_dir in found:
        blocks = shapes(os.path.join(blocks_dir, "blocks.json"), known)
        items = {i["name"] for i in json.load(open(os.path.join(items_dir, "items.json")))}
        if versions and versions[-1][2] == blocks and versions[-1][3] == items:
            continue
        versions.append((name, dv, blocks, items))
    prop_sets = sorted({p for v in versions for p in v[2].values() if p})
    prop_index = {p: i for i, p in enumerate(prop_sets)}
    block_rows = spans([{(n, p) for n, p in v[2].items()} for v in versions])
    item_rows = spans([v[3] for v in versions])
    lines = [
        f"# Minecraft Java block states and item ids, 1.13 to {versions[-1][0]}, from minecraft-data",
        f"# {package_version} (PrismarineJS, https://github.com/PrismarineJS/minecraft-data,",
        "# MIT licence, Copyright (c) 2015 PrismarineJS) by contrib/mc-registry.py; do not edit.",
        "# 'v I NAME DATAVERSION': registry I, the game's from that DataVersion on (a chunk",
        "#   is checked against the last at or below its own DataVersion);",
        "# 'p I PROPERTY=VALUES ...': property set I, each property with its values;",
        "# 'b FIRST-LAST NAME [P]': a block (without minecraft:) of registries FIRST to LAST,",
        "#   with property set P; 'i FIRST-LAST NAME': an item.",
    ]
    lines += [f"v {i} {name} {dv}" for i, (name, dv, _, _) in enumerate(versions)]
    lines += [f"p {i} {p}" for i, p in enumerate(prop_sets)]
    for first, last, (name, props) in block_rows:
        lines.append(f"b {first}-{last} {name}" + (f" {prop_index[props]}" if props else ""))
    lines += [f"i {first}-{last} {name}" for first, last, name in item_rows]
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{OUT}: {len(versions)} registries, {len(prop_sets)} property sets, "
          f"{len(block_rows)} block rows, {len(item_rows)} item rows")


main()
