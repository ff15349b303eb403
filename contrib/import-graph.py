#!/usr/bin/env python3
"""The import graph of the workspace's Rust code, by layer and by folder.

Reads every path that names an item of a crate of the workspace (`use
crate::...`, `worldfs_codec::...` from another crate, `crate::a::b` in code,
and the relative `super::` / `self::` forms), resolves it to the file that
defines the module (following `pub use` re-exports to the file that defines
the item), and puts each file in a layer of the architecture
(docs/design.md). Prints the layer table, the imports between layers, every
circle of files (a strongly connected component of more than one file),
every circle of folders (the same over the folders the files are in), and
every import that runs up (from a layer to one above it).

    python3 contrib/import-graph.py            # the table and the findings
    python3 contrib/import-graph.py --check    # the same; exit 1 on a finding
    python3 contrib/import-graph.py --edges    # every file-to-file import too
    python3 contrib/import-graph.py --root DIR # another workspace

A module's use of its own parts (`cache::BlockCache` in
worlds/luanti/mod.rs) is an import; a part's use of the modules it is part
of (`super::Attr` in fs/handles.rs) is not: a module and its parts are one
unit, built from the parts up, so a circle through a part is a circle of
its module. A `mod a;` declaration or a `pub use` re-export is no import of
its own (who names an item through a re-export imports the file that
defines it). Code in `#[cfg(test)]` modules counts like any other. Imports
between crates always run down (cargo forbids circles between crates), and
count in the layer table like any other. Python 3 standard library only,
so that CI runs it anywhere.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# The crates of the workspace: the name code uses for each, and its source.
CRATES = [
    ("worldfs_codec", "crates/codec/src"),
    ("worldfs_store", "crates/store/src"),
    ("worldfs", "src"),
]

# From the bytes up; a file may import its own layer and those below it.
# The first (crate, pattern) that matches a file gives its layer ("" is
# the whole crate; a pattern ending in / a folder of it).
LAYERS = [
    ("codec", [("worldfs_codec", "")]),
    ("store", [("worldfs_store", "")]),
    ("sys", [("worldfs", "sys/")]),
    ("view", [("worldfs", "view/")]),
    ("fs", [("worldfs", "fs/")]),
    ("transfer", [("worldfs", "transfer/")]),
    ("documents", [("worldfs", "documents/")]),
    ("worlds", [("worldfs", "worlds/")]),
    ("open", [("worldfs", "open.rs")]),
    ("adapter", [("worldfs", "fuse.rs"), ("worldfs", "cli/"), ("worldfs", "lib.rs"), ("worldfs", "main.rs")]),
]


def layer_of(crate, rel):
    for i, (_, patterns) in enumerate(LAYERS):
        for c, p in patterns:
            if c == crate and (p == "" or rel == p or (p.endswith("/") and rel.startswith(p))):
                return i
    return None


def module_path(rel):
    """The module path of a file: `src/worlds/luanti/records/mod.rs` -> (kinds, luanti, records)."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


RAW_STRING_RE = re.compile(r'(?<!\w)b?r(#*)"')
# A char literal ('x', '\n', '\u{1F600}'), not a lifetime ('a).
CHAR_RE = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'")


def strip_comments_and_strings(text):
    """The code without comments, string and char literals (kept as blanks,
    so that a `crate::` in a message or a doc comment is not an import)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c in "br" and RAW_STRING_RE.match(text, i):
            m = RAW_STRING_RE.match(text, i)
            end = text.find('"' + m.group(1), m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and CHAR_RE.match(text, i):
            i = CHAR_RE.match(text, i).end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(s):
    """Split a use-tree list at its top-level commas."""
    parts, depth, cur = [], 0, ""
    for c in s:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def expand_use_tree(tree, prefix=()):
    """`a::{b, c::{d, e as f}}` -> [(a, b), (a, c, d), (a, c, e)]."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", " ".join(tree.split()))
    m = re.match(r"^((?:\w+::)*)\{(.*)\}$", tree)
    if m:
        head = tuple(p for p in m.group(1).split("::") if p)
        out = []
        for sub in split_top(m.group(2)):
            out += expand_use_tree(sub, prefix + head)
        return out
    tree = tree.split(" as ")[0]
    parts = prefix + tuple(p for p in tree.split("::") if p and p != "*")
    return [parts[:-1] if parts[-1:] == ("self",) else parts]


USE_RE = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
CHILD_PATH_RE = re.compile(r"(?<![\w:])(\w+)(?:::\w+)+")
INLINE_RE = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::(?:super|\w+))+)")
CRATE_NAMES = [name for name, _ in CRATES]
OTHER_CRATE_RE = re.compile(r"(?<![\w:])((?:" + "|".join(CRATE_NAMES) + r")(?:::\w+)+)")
MOD_DECL_RE = re.compile(r"(?:^|[;{}\s])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


class Crate:
    def __init__(self, name, src, rel_src):
        self.name = name
        self.src = rel_src  # the source folder, relative to the workspace
        self.files = {}  # module path -> file (relative to src/)
        self.code = {}  # file -> code without comments and strings
        self.lines = {}  # file -> lines as written
        for dirpath, _, names in os.walk(src):
            for name in names:
                if name.endswith(".rs"):
                    full = os.path.join(dirpath, name)
                    rel = os.path.relpath(full, src).replace(os.sep, "/")
                    with open(full, encoding="utf-8") as f:
                        text = f.read()
                    self.code[rel] = strip_comments_and_strings(text)
                    self.lines[rel] = text.count("\n")
        for rel in self.code:
            if rel == "main.rs":
                continue  # a crate of its own: it names the library as `worldfs::`
            self.files[module_path(rel)] = rel
        self.children = {rel: set(MOD_DECL_RE.findall(code)) for rel, code in self.code.items()}
        self.spans = {rel: inline_module_spans(code) for rel, code in self.code.items()}

    def inline_modules(self, rel, pos):
        """The names of the inline modules of `rel` around `pos` (a test
        module's `super::` is the file's module)."""
        return tuple(name for start, end, name in self.spans[rel] if start < pos < end)

    def absolute(self, rel, path, inner=()):
        """A path as written in file `rel` (inside its inline modules
        `inner`) -> (crate name, a path from that crate's root); None when
        it names no crate of the workspace."""
        p = self.local(rel, path, inner)
        if p is not None:
            return (self.name, p)
        if path[0] in CRATE_NAMES and path[0] != self.name and len(path) > 1:
            return (path[0], tuple(path[1:]))
        return None

    def local(self, rel, path, inner=()):
        """A path as written in file `rel` -> a path from this crate's root
        (None when it does not start in this crate)."""
        here = list(module_path(rel)) + list(inner)
        if path[0] == "crate":
            return path[1:]
        if path[0] in ("super", "self"):
            base = here
            while path and path[0] in ("super", "self"):
                if path[0] == "super":
                    base = base[:-1]
                path = path[1:]
            return tuple(base) + tuple(path)
        if path[0] in self.children.get(rel, ()):
            return tuple(here) + tuple(path)
        return None

    def resolve(self, path, seen=None):
        """The file that defines what an absolute path names."""
        seen = seen or set()
        for k in range(len(path), -1, -1):
            mod = path[:k]
            if mod in self.files:
                rel = self.files[mod]
                rest = path[k:]
                if rest and (rel, rest[0]) not in seen:
                    seen.add((rel, rest[0]))
                    target = self.reexport(rel, rest[0])
                    if target is not None:
                        return self.resolve(target + rest[1:], seen)
                return rel
        return None

    def reexport(self, rel, name):
        """Where `pub use` in `rel` takes `name` from (an absolute path)."""
        for m in USE_RE.finditer(self.code[rel]):
            if not m.group(1):
                continue
            for p in expand_use_tree(m.group(2)):
                if p and p[-1] == name:
                    target = self.local(rel, p)
                    if target is not None:
                        return target
        return None

    def imports(self, rel, crates):
        """The files `rel` names items of, each with the path written. A
        `pub use` is no import of its own: who names the item through it
        gets an import of the file that defines it."""
        code = self.code[rel]
        paths = []
        for m in USE_RE.finditer(code):
            if not m.group(1):
                inner = self.inline_modules(rel, m.start())
                paths += [(inner, p) for p in expand_use_tree(m.group(2))]
        rest = USE_RE.sub(lambda m: " " * len(m.group(0)), code)
        for m in INLINE_RE.finditer(rest):
            paths.append((self.inline_modules(rel, m.start()), tuple(m.group(1).split("::"))))
        for m in CHILD_PATH_RE.finditer(rest):
            if m.group(1) in self.children.get(rel, ()) and not self.inline_modules(rel, m.start()):
                paths.append(((), tuple(m.group(0).split("::"))))
        for m in OTHER_CRATE_RE.finditer(rest):
            paths.append(((), tuple(m.group(1).split("::"))))
        out = {}
        for inner, p in paths:
            if not p:
                continue
            target = self.absolute(rel, p, inner)
            if not target or not target[1] or target[0] not in crates:
                continue
            krate = crates[target[0]]
            f = krate.resolve(target[1])
            if not f:
                continue
            if krate is self and (f == rel or is_part_of(rel, f)):
                continue
            out.setdefault((krate.name, f), "::".join(p))
        return out


def is_part_of(rel, f):
    """Whether file `rel` holds a module declared inside the module of `f`
    (`src/worlds/luanti/cache.rs` of `src/worlds/luanti/mod.rs`, everything of `lib.rs`)."""
    inner, outer = module_path(rel), module_path(f)
    return len(inner) > len(outer) and inner[:len(outer)] == outer


INLINE_MOD_RE = re.compile(r"\bmod\s+(\w+)\s*\{")


def inline_module_spans(code):
    """(start, end, name) of every `mod name { ... }` block of a file."""
    spans = []
    for m in INLINE_MOD_RE.finditer(code):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        spans.append((m.start(), i, m.group(1)))
    return spans


def circles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def folder_of(rel, dirs):
    """The folder a file's module lives in: `worlds/luanti` for
    worlds/luanti/mod.rs and worlds/luanti/cache.rs, and for a module file
    whose parts have a folder of their own (store's leveldb.rs with
    leveldb/) that folder: a module and its parts are one unit. The
    crate's root folder is ``."""
    parts = module_path(rel)
    if rel.endswith(("/mod.rs", "lib.rs", "main.rs")) or rel == "mod.rs" or "/".join(parts) in dirs:
        return "/".join(parts)
    return "/".join(parts[:-1])


def main(argv):
    root = argv[argv.index("--root") + 1] if "--root" in argv else ROOT
    crates = {}
    for name, rel_src in CRATES:
        src = os.path.join(root, rel_src)
        if os.path.isdir(src):
            crates[name] = Crate(name, src, rel_src)
    files = [(c.name, rel) for c in crates.values() for rel in sorted(c.code)]
    graph = {f: crates[f[0]].imports(f[1], crates) for f in files}
    show = lambda f: f"{crates[f[0]].src}/{f[1]}"
    layer = lambda f: layer_of(*f)
    unplaced = [f for f in graph if layer(f) is None]
    names = [name for name, _ in LAYERS]

    print("Layers, from the bytes up (a file may import its own layer and those below):")
    for i, (name, _) in enumerate(LAYERS):
        in_layer = [f for f in graph if layer(f) == i]
        lines = sum(crates[c].lines[r] for c, r in in_layer)
        below = sorted({names[layer(t)] for f in in_layer for t in graph[f] if layer(t) not in (None, i)},
                       key=names.index)
        print(f"  {i} {name:9} {len(in_layer):3} files {lines:6} lines  imports: {', '.join(below) or '-'}")

    up = [(r, t, p) for r in graph for t, p in graph[r].items()
          if None not in (layer(r), layer(t)) and layer(t) > layer(r)]
    comps = circles({r: sorted(graph[r]) for r in graph})
    dirs = {c: {os.path.dirname(r) for r in crates[c].code} for c in crates}
    folder = lambda f: (f[0], folder_of(f[1], dirs[f[0]]))
    folder_graph = {}
    for r in graph:
        folder_graph.setdefault(folder(r), set())
        for t in graph[r]:
            if folder(t) != folder(r):
                folder_graph[folder(r)].add(folder(t))
    folder_comps = circles({k: sorted(v) for k, v in folder_graph.items()})
    show_folder = lambda k: (crates[k[0]].src + "/" + k[1]).rstrip("/") + "/"
    edges = sum(len(v) for v in graph.values())
    print(f"\n{len(graph)} files in {len(crates)} crates, {edges} imports between files: "
          f"{len(comps)} circles, {len(up)} imports running up, {len(unplaced)} files in no layer")
    print(f"{len(folder_graph)} folders: {len(folder_comps)} folder circles")
    for f in unplaced:
        print(f"  in no layer: {show(f)} (add it to LAYERS in contrib/import-graph.py)")
    for comp in comps:
        print(f"  circle of {len(comp)} files: " + ", ".join(show(c) for c in comp))
    for comp in folder_comps:
        print(f"  circle of {len(comp)} folders: " + ", ".join(show_folder(c) for c in comp))
        for a in comp:
            for r in graph:
                if folder(r) != a:
                    continue
                for t, p in sorted(graph[r].items()):
                    if folder(t) in comp and folder(t) != a:
                        print(f"    {show(r)} -> {show(t)}  ({p})")
    for r, t, p in sorted(up):
        print(f"  up: {show(r)} ({names[layer(r)]}) -> {show(t)} ({names[layer(t)]}) via {p}")
    if "--edges" in argv:
        print("\nImports:")
        for r in graph:
            for t, p in sorted(graph[r].items()):
                print(f"  {show(r)} -> {show(t)}  ({p})")
    if "--check" in argv and (comps or up or unplaced or folder_comps):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
