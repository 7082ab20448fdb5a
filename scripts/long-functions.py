#!/usr/bin/env python3
"""Lists product functions longer than a limit (default 80 lines), longest first.

Product code is every `.rs` file under `crates/*/src`, less test modules (`#[cfg(test)] mod`
blocks and the files such a block names, e.g. `tests.rs`, `*_tests.rs`). A function's length
runs from its `fn` line to its closing brace, both counted. Comments, strings and char literals
are blanked before braces are matched, so braces inside them do not count.

    scripts/long-functions.py [--limit N] [--summary] [crate ...]
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blank(src: str) -> str:
    """`src` with comments and string/char literal contents replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:]) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            close = '"' + m.group(1)
            j = src.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): only literals are blanked.
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def test_module_ranges(raw: str, code: str):
    """Byte ranges of inline `#[cfg(test)] mod x { ... }` blocks, and the file names of
    out-of-line test modules (`#[cfg(test)] mod x;`, with or without `#[path = "..."]`)."""
    ranges, files = [], []
    attrs = r"(?:#\[[^\]]*\]\s*)*"
    pattern = r"#\[cfg\(test\)\]\s*" + attrs + r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])"
    for m in re.finditer(pattern, code):
        if m.group(2) == ";":
            files.append(m.group(1) + ".rs")
            continue
        ranges.append((m.start(), match_brace(code, m.end() - 1)))
    # Paths live in string literals, which `code` has blanked: read them from the raw text.
    for m in re.finditer(r'#\[cfg\(test\)\]\s*#\[path\s*=\s*"([^"]+)"\]|#\[path\s*=\s*"([^"]+)"\]\s*#\[cfg\(test\)\]', raw):
        files.append(m.group(1) or m.group(2))
    return ranges, files


def match_brace(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(code) - 1


def functions(code: str):
    """(name, first line, last line) of every function with a body."""
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        i, depth = m.end(), 0
        while i < len(code):
            c = code[i]
            if c in "(<[":
                depth += 1
            elif c in ")>]":
                # `->` is not a closing angle bracket.
                if not (c == ">" and code[i - 1] == "-"):
                    depth -= 1
            elif c == ";" and depth <= 0:
                break
            elif c == "{" and depth <= 0:
                end = match_brace(code, i)
                yield m.group(1), code.count("\n", 0, m.start()) + 1, code.count("\n", 0, end) + 1
                break
            i += 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--summary", action="store_true", help="counts per crate only")
    ap.add_argument("crates", nargs="*")
    args = ap.parse_args()
    crates_dir = os.path.join(ROOT, "crates")
    crates = args.crates or sorted(os.listdir(crates_dir))
    found = []
    for crate in crates:
        src_dir = os.path.join(crates_dir, crate, "src")
        test_files = set()
        sources = []
        for dirpath, _, names in os.walk(src_dir):
            for name in sorted(names):
                if name.endswith(".rs"):
                    sources.append(os.path.join(dirpath, name))
        parsed = {}
        for path in sources:
            with open(path, encoding="utf-8") as f:
                raw = f.read()
            code = blank(raw)
            ranges, files = test_module_ranges(raw, code)
            for f in files:
                stem = os.path.splitext(f)[0]
                test_files.add(os.path.normpath(os.path.join(os.path.dirname(path), f)))
                test_files.add(os.path.join(os.path.splitext(path)[0], f))
                test_files.add(os.path.join(os.path.dirname(path), stem, "mod.rs"))
            parsed[path] = (code, ranges)
        for path, (code, ranges) in parsed.items():
            if path in test_files:
                continue
            starts = [(code.count("\n", 0, a) + 1, code.count("\n", 0, b) + 1) for a, b in ranges]
            for name, first, last in functions(code):
                if any(a <= first <= b for a, b in starts):
                    continue
                length = last - first + 1
                if length > args.limit:
                    found.append((length, crate, os.path.relpath(path, ROOT), first, name))
    found.sort(key=lambda f: (-f[0], f[2]))
    if args.summary:
        per = {}
        for _, crate, *_ in found:
            per[crate] = per.get(crate, 0) + 1
        for crate in sorted(per):
            print(f"{crate}\t{per[crate]}")
        print(f"total\t{len(found)}")
    else:
        for length, _, path, line, name in found:
            print(f"{length:4}  {path}:{line}  {name}")
        print(f"{len(found)} functions over {args.limit} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
