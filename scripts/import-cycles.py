#!/usr/bin/env python3
"""File-import cycles of one crate: each `crate::…`/`super::…` path in a file (test modules left
out) is an edge to the module file it names; prints the strongly connected components of more
than one file, and with a second argument the edges between top-level folders.

Usage: scripts/import-cycles.py crates/memory/src [folders]
"""
import os, re, sys
root = sys.argv[1]  # crate src dir
files = {}
for d, _, fs in os.walk(root):
    if '/bin' in d[len(root):]: continue
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)[:-3]
            mod = rel.replace('/mod', '').replace('/', '::')
            if mod in ('lib', 'main'): mod = ''
            files[mod] = p
def resolve(path):
    parts = path.split('::')
    while parts:
        m = '::'.join(parts)
        if m in files: return m
        parts.pop()
    return None
def expand(prefix, body):
    # expand `a::{b, c::{d}}` into paths
    out = []; depth = 0; cur = ''
    items = []
    for ch in body:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0: items.append(cur); cur = ''
        else: cur += ch
    items.append(cur)
    for it in items:
        it = it.strip()
        if not it: continue
        m = re.match(r'^([\w:]*?)::\{(.*)\}$', it, re.S)
        if m: out += expand(prefix + '::' + m.group(1) if prefix else m.group(1), m.group(2))
        else: out.append((prefix + '::' + it) if prefix else it)
    return out
edges = {}
for mod, p in files.items():
    src = open(p).read()
    src = re.sub(r'//[^\n]*', '', src)
    # cut test modules
    src = re.split(r'#\[cfg\(test\)\]', src)[0]
    tgt = set()
    base = mod.split('::')
    for m in re.finditer(r'\b(crate|super)::(\{[^;]*?\}|[\w:]+)', src, re.S):
        kind, rest = m.group(1), m.group(2)
        if rest.startswith('{'):
            paths = expand('', rest[1:-1])
        else:
            paths = [rest]
        for pth in paths:
            pth = pth.split(' as ')[0].strip()
            if kind == 'super':
                parent = base[:-1] if not p.endswith('mod.rs') else base[:-1]
                full = '::'.join(parent + [pth]) if parent else pth
            else:
                full = pth
            r = resolve(full)
            if r is not None and r != mod and r != '': tgt.add(r)
    edges[mod] = tgt
# Tarjan SCC
idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
for v in edges:
    if v not in idx: sc(v)
print(f"files: {len(files)}  cycles (SCCs > 1 file): {len(sccs)}")
for s in sccs: print(f"  {len(s)} files: {' '.join(s)}")
if len(sys.argv) > 2:
    # folder-level edges
    fe = {}
    for a, ts in edges.items():
        fa = a.split('::')[0] if '::' in a else '(root)'
        for b in ts:
            fb = b.split('::')[0] if '::' in b else '(root)'
            if fa != fb: fe.setdefault(fa, set()).add(fb)
    for a in sorted(fe): print(f"  folder {a} -> {sorted(fe[a])}")
