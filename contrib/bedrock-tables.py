#!/usr/bin/env python3
"""Make the tables of src/worlds/bedrock/tables/ from minecraft-data's
Bedrock data (PrismarineJS, MIT; `contrib/make-bedrock-tables.sh` installs
it from the npm registry):

* items.txt: every item name of every Bedrock version minecraft-data
  knows (what a chest's or player's inventory may hold);
* blocks.txt: every block name of every version, each with the Java
  block it maps to (blocksB2J), whose colour top.png and map/ use ("-"
  when none);
* legacy_ids.txt: the numeric ids of 1.16.201's blocks (how subchunks
  before 1.2.13 and legacy terrain store blocks);
* biomes.txt: biome ids and names (the newest list with the game's ids).

Usage: bedrock-tables.py MINECRAFT_DATA_DIR OUT_DIR
"""
import json
import os
import sys

data, out = sys.argv[1], sys.argv[2]
paths = json.load(open(os.path.join(data, "dataPaths.json")))["bedrock"]


def load(version, what):
    p = paths[version].get(what)
    return json.load(open(os.path.join(data, p, what + ".json"))) if p else None


def key(v):
    return [int(p) if p.isdigit() else 0 for p in v.split(".")]


versions = sorted(paths, key=key)
items, blocks, b2j = set(), set(), {}
for v in versions:
    for it in load(v, "items") or []:
        items.add("minecraft:" + it["name"])
    for b in load(v, "blocks") or []:
        blocks.add("minecraft:" + b["name"])
for v in reversed(versions):
    for bed, java in (load(v, "blocksB2J") or {}).items():
        b2j.setdefault(bed.split("[")[0], java.split("[")[0])
head = "# made by contrib/bedrock-tables.py from minecraft-data (PrismarineJS, MIT)\n"
with open(os.path.join(out, "items.txt"), "w") as f:
    f.write(head + "".join(n + "\n" for n in sorted(items)))
with open(os.path.join(out, "blocks.txt"), "w") as f:
    f.write(head + "# bedrock name, the Java block it maps to (its colour)\n")
    f.write("".join(f"{n} {b2j.get(n, '-')}\n" for n in sorted(blocks | set(b2j))))
with open(os.path.join(out, "legacy_ids.txt"), "w") as f:
    f.write(head + "# numeric id (before 1.2.13), name (1.16.201)\n")
    ids = {b["id"]: b["name"] for b in load("1.16.201", "blocks") if 0 <= b["id"] < 256}
    f.write("".join(f"{i} minecraft:{ids[i]}\n" for i in sorted(ids)))
# The newest biome list numbered with the game's ids (1.21.60's numbers
# its biomes alphabetically, not as the game does: 0 is the ocean).
biome_version = max((v for v in versions if paths[v].get("biomes") and load(v, "biomes")[0]["name"] == "ocean"), key=key)
with open(os.path.join(out, "biomes.txt"), "w") as f:
    f.write(head + f"# biome id, name ({biome_version})\n")
    f.write("".join(f"{b['id']} {b['name']}\n" for b in sorted(load(biome_version, "biomes"), key=lambda b: b["id"])))
