#!/usr/bin/env python3
"""A graph index (HNSW) measured on the memory store's own vectors, as a reference.

Issue 21 asks whether a sub-linear structure can hold recall@10 >= 0.99 against the exact scan.
This measures faiss's HNSW (a mature C++ implementation, used here only to measure: nothing of it
ships) on the vectors `memory-bench vectors` writes, by inner product (the store's score):
recall@10 against an exact search, the worst query, distance computations per query (as a share
of the rows) and time per query on one thread, for several graph degrees and search widths.

    python3 -m venv target/bench-venv
    target/bench-venv/bin/pip install faiss-cpu numpy
    target/release/memory-bench vectors ../shared/bench/locomo/locomo-dev.json --rows 200000
    target/bench-venv/bin/python scripts/bench/graph-reference.py --rows 100000,200000 --degree 16,64

Prints one markdown table (docs/benchmarks.md, "A graph, measured as a reference").
"""

import argparse
import pathlib
import time

import faiss
import numpy as np

DIM = 384
TOP = 10
SETS = {"turns": ("turns.f32", "questions.f32"), "notes": ("notes.f32", "queries.f32")}


def rows_of(path, limit=None):
    data = np.fromfile(path, dtype=np.float32).reshape(-1, DIM)
    return np.ascontiguousarray(data[:limit] if limit else data)


def measure(base, queries, degree, widths, build_threads):
    exact = faiss.IndexFlatIP(DIM)
    exact.add(base)
    _, truth = exact.search(queries, TOP)
    graph = faiss.IndexHNSWFlat(DIM, degree, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = 100
    faiss.omp_set_num_threads(build_threads)
    started = time.perf_counter()
    graph.add(base)
    build = time.perf_counter() - started
    faiss.omp_set_num_threads(1)
    out = []
    for width in widths:
        graph.hnsw.efSearch = width
        stats = faiss.cvar.hnsw_stats
        stats.reset()
        started = time.perf_counter()
        _, found = graph.search(queries, TOP)
        per_query_ms = (time.perf_counter() - started) / len(queries) * 1000
        hits = [len(set(found[i]) & set(truth[i])) / TOP for i in range(len(queries))]
        visited = stats.ndis / len(queries)
        out.append((width, float(np.mean(hits)), min(hits), visited, visited / len(base), per_query_ms))
    return build, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="target/bench-vectors")
    parser.add_argument("--rows", default="100000")
    parser.add_argument("--degree", default="16,64", help="HNSW M (layer 0 keeps 2M edges)")
    parser.add_argument("--width", default="64,128,256,512,1024", help="efSearch values")
    parser.add_argument("--build-threads", type=int, default=2)
    args = parser.parse_args()
    folder = pathlib.Path(args.dir)
    widths = [int(w) for w in args.width.split(",")]
    print("| texts | rows | M | build s | efSearch | recall@10 | worst query | distances / query | share of rows | ms / query |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (base_file, query_file) in SETS.items():
        queries = rows_of(folder / query_file)
        for rows in (int(r) for r in args.rows.split(",")):
            base = rows_of(folder / base_file, rows)
            if len(base) < rows:
                raise SystemExit(f"{base_file} holds {len(base)} rows; write more with memory-bench vectors --rows")
            for degree in (int(d) for d in args.degree.split(",")):
                build, results = measure(base, queries, degree, widths, args.build_threads)
                for width, recall, worst, visited, share, ms in results:
                    print(f"| {name} | {rows} | {degree} | {build:.1f} | {width} | {recall:.4f} | {worst:.1f} | {visited:.0f} | {share:.2%} | {ms:.3f} |", flush=True)


if __name__ == "__main__":
    main()
