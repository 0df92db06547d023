"""webrank's power method and ``auto`` against SuiteSparse:GraphBLAS's power method
(python-graphblas), per solve, same tolerance, same process.

    python benchmarks/cpu/cpu_vs_graphblas.py GRAPH... [--repeat 3] [--out FILE]

Per graph: one untimed call of each (webrank's layouts cached after it), then the median
of ``--repeat`` timed calls, and the ratio to GraphBLAS's median. The GraphBLAS loop is
the baselines suite's (:func:`webrank.bench.suites.baselines.graphblas_power`).

Results: ``--out`` (default ``benchmarks/results/cpu/cpu_2core/cpu_vs_graphblas.json``; the
H100 host's at 16 and 2 threads, by ``run.sh pipeline``:
``benchmarks/results/cpu/h100/cpu_vs_graphblas_*threads.json``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import webrank
from webrank.bench.env import environment, write_json
from webrank.bench.suites.baselines import graphblas_matrix, graphblas_power

TOL = 1e-10


def main() -> None:
    import graphblas as gb

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/cpu/cpu_2core/cpu_vs_graphblas.json")
    args = ap.parse_args()
    rows = []
    for path in args.graphs:
        g = webrank.load(path)
        a = graphblas_matrix(gb, g)
        runs = {"webrank power": lambda g=g: webrank.pagerank(g, method="power", tol=TOL,
                                                               device="cpu"),
                "webrank auto": lambda g=g: webrank.pagerank(g, tol=TOL, device="cpu"),
                "graphblas power": lambda g=g, a=a: graphblas_power(gb, a, g, TOL)}
        times = {}
        for label, run in runs.items():
            t0 = time.perf_counter()
            run()
            first = time.perf_counter() - t0
            timed = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                run()
                timed.append(time.perf_counter() - t0)
            times[label] = {"first_s": first, "median_s": statistics.median(timed)}
        base = times["graphblas power"]["median_s"]
        for t in times.values():
            t["ratio"] = t["median_s"] / base
        rows.append({"graph": Path(path).name, "times": times})
        print(Path(path).name, "  ".join(f"{k}: {v['median_s']:.3f} s ({v['ratio']:.2f}x)"
                                         for k, v in times.items()), flush=True)
    write_json({"environment": environment(), "tol": TOL, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
