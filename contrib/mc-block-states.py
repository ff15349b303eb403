#!/usr/bin/env python3
"""Write the block-state tables of crates/codec/src/minecraft/states/ from the
minecraft-data package (PrismarineJS, MIT licence; its blocks.json lists
each block's first and default state id and its properties).

Usage: contrib/mc-block-states.py [MINECRAFT_DATA_DIR]
(default: target/npm-oracle/node_modules/minecraft-data, which
contrib/test.sh installs with prismarine-chunk).

One line per block: first state id, default state id, name, then each
property as name=value,value,... in the order of blocks.json, the last
property varying fastest (as the game numbers states). Values: those of
blocks.json; a bool is true,false; an int property without values counts
from 0 (the same reading as prismarine-block).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The table file name, and the minecraft-data version whose blocks.json it comes from.
TABLES = [("1.16.1", "1.16.1"), ("1.16.2", "1.16.2")]


def values(prop):
    if prop.get("values"):
        return [str(v) for v in prop["values"]]
    if prop["type"] == "bool":
        return ["true", "false"]
    if prop["type"] == "int":
        return [str(v) for v in range(prop["num_values"])]
    sys.exit(f"a property without values: {prop}")


def table(blocks, version, package_version):
    lines = [
        f"# Minecraft Java {version} block states, from minecraft-data {package_version}",
        "# (PrismarineJS, MIT) by contrib/mc-block-states.py; do not edit.",
        "# first default name property=values...; the last property varies fastest",
    ]
    expect = 0
    for b in sorted(blocks, key=lambda b: b["minStateId"]):
        props = b.get("states") or []
        count = 1
        for p in props:
            vs = values(p)
            if len(vs) != p["num_values"]:
                sys.exit(f"{b['name']}.{p['name']}: {len(vs)} values, num_values {p['num_values']}")
            count *= len(vs)
        if b["minStateId"] != expect or b["maxStateId"] != expect + count - 1:
            sys.exit(f"{b['name']}: states {b['minStateId']}..{b['maxStateId']}, {expect} and {count} expected")
        expect += count
        fields = [str(b["minStateId"]), str(b["defaultState"]), b["name"]]
        fields += [f"{p['name']}={','.join(values(p))}" for p in props]
        lines.append(" ".join(fields))
    return "\n".join(lines) + "\n"


def main():
    pkg = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/npm-oracle/node_modules/minecraft-data")
    with open(os.path.join(pkg, "package.json")) as f:
        package_version = json.load(f)["version"]
    for name, version in TABLES:
        with open(os.path.join(pkg, "minecraft-data/data/pc", version, "blocks.json")) as f:
            blocks = json.load(f)
        out = os.path.join(ROOT, "crates/codec/src/minecraft/states", name + ".txt")
        with open(out, "w") as f:
            f.write(table(blocks, version, package_version))
        print(out)


main()
