#!/usr/bin/env python3
"""List Rust functions longer than a limit (default 100 lines).

Usage: contrib/long-fns.py [LIMIT] [DIR...]   (default: 100 src)

A function's length runs from the line of its `fn` keyword to the line of
its closing brace. The scanner skips comments, strings (also raw and byte
strings) and char literals, so braces inside them do not count; nested
functions and closures are part of their enclosing function and are also
measured on their own.
"""
import os
import re
import sys


def tokens(text):
    """Yield (kind, value, line) for identifiers and braces/semicolons."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
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
                    line += text[i] == "\n"
                    i += 1
        elif m := re.compile(r'b?r(#*)"').match(text, i):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            line += text.count("\n", i, j)
            i = j + len(end)
        elif c == '"' or text.startswith('b"', i):
            i += 1 if c == '"' else 2
            while text[i] != '"':
                if text[i] == "\\":
                    i += 1
                line += text[i] == "\n"
                i += 1
            i += 1
        elif c == "'":
            # char literal ('a', '\n', '\u{..}') or lifetime ('a)
            m = re.compile(r"'(\\.[^']*|[^\\'])'").match(text, i)
            i = m.end() if m else i + 1
        elif c.isalpha() or c == "_":
            m = re.compile(r"\w+").match(text, i)
            yield "ident", m.group(0), line
            i = m.end()
        elif c in "{};()[]":
            yield c, c, line
            i += 1
        else:
            i += 1


def long_functions(path, limit):
    text = open(path, encoding="utf-8").read()
    depth = 0
    pending = None  # (name, line) of a `fn` waiting for its body
    open_fns = []  # (name, line, depth at which its body opened)
    found = []
    prev = None
    parens = 0  # open ( and [: a `;` inside them (`[u8; 4]`) ends nothing
    for kind, value, line in tokens(text):
        parens += (kind in "([") - (kind in ")]")
        if kind == "ident" and prev == "fn":
            pending = (value, line)
        elif kind == ";" and pending and depth == pending_depth and parens == 0:
            pending = None  # a declaration without body (trait method)
        elif kind == "{":
            depth += 1
            if pending:
                open_fns.append((pending[0], pending[1], depth))
                pending = None
        elif kind == "}":
            if pending and depth == pending_depth:
                pending = None
            if open_fns and open_fns[-1][2] == depth:
                name, start, _ = open_fns.pop()
                length = line - start + 1
                if length > limit:
                    found.append((length, path, start, name))
            depth -= 1
        if kind == "ident" and value == "fn":
            pending_depth = depth
        prev = value if kind == "ident" else None
    return found


def main():
    args = sys.argv[1:]
    limit = int(args.pop(0)) if args and args[0].isdigit() else 100
    roots = args or ["src"]
    found = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".rs"):
                    found += long_functions(os.path.join(dirpath, f), limit)
    for length, path, start, name in sorted(found, reverse=True):
        print(f"{length:5} {path}:{start} {name}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
