"""Each CPU method's first call on a fresh graph, in one process: does ``auto``'s first
call stay within 1.1x of the best method's?

    python benchmarks/cpu/cpu_first_call_methods.py [--scale 22] [--repeat 3] [--out FILE]

A fresh graph is a new :class:`webrank.Graph` over the same arrays (nothing cached on it:
no layout, no Gauss-Seidel system), so each call pays its method's setup; methods are
interleaved, ``--repeat`` rounds; tol 1e-10, L1. Writes JSON (machine, commit, date)
and prints the medians and auto's ratio to the best, to ``--out`` (default
``benchmarks/results/cpu/cpu_2core/cpu_first_call_methods_rmat22.json``; 16 cores:
``benchmarks/results/gpu/h100/whole_call/cpu_first_call_methods_rmat22_16core.json``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import webrank
from webrank.bench.env import environment, write_json

METHODS = ("auto", "power", "gmres", "gauss-seidel")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=22, help="R-MAT scale (2**scale nodes)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out",
                    default="benchmarks/results/cpu/cpu_2core/cpu_first_call_methods_rmat22.json")
    args = ap.parse_args()
    g = webrank.generate_graph("rmat", args.scale, seed=1)
    rows = []
    for rep in range(args.repeat):
        for method in METHODS:
            fresh = webrank.Graph(indptr=g.indptr, indices=g.indices, out_weight=g.out_weight)
            t0 = time.perf_counter()
            r = webrank.pagerank(fresh, device="cpu", method=method, tol=1e-10)
            rows.append({"rep": rep, "method": method, "seconds": time.perf_counter() - t0,
                         "ran": r.method, "engine": r.info.get("engine"),
                         "iterations": r.iterations, "setup_s": r.setup_time})
            print(f"round {rep} {method:13s} {rows[-1]['seconds']:6.2f} s ({r.method}, "
                  f"{r.iterations} iterations)", flush=True)
    medians = {m: statistics.median(r["seconds"] for r in rows if r["method"] == m)
               for m in METHODS}
    best = min(v for m, v in medians.items() if m != "auto")
    print("medians:", {m: round(v, 2) for m, v in medians.items()},
          f"auto / best = {medians['auto'] / best:.2f}")
    write_json({"environment": environment(), "graph": f"rmat {args.scale}",
                "n": g.n, "edges": g.num_edges, "rows": rows, "medians": medians,
                "auto_over_best": medians["auto"] / best}, args.out)


if __name__ == "__main__":
    main()
