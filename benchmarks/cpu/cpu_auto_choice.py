"""Does ``method="auto"`` lose on the CPU? Each method's first and second solve, in fresh
processes, at each thread count.

    python benchmarks/cpu/cpu_auto_choice.py GRAPH... [--threads 16 4 2] [--repeat 2]
                                         [--out FILE]

A one-solve process (what ``webrank rank`` does) pays a method's layout build on its
first call: power's propagation-blocking layout, Gauss-Seidel's lumped block system. Each
(graph, thread count, method) runs in its own process, pinned to that many cores
(``taskset``, ``NUMBA_NUM_THREADS``), after an untimed solve of a small graph that loads
the compiled kernels; it times the first solve (build included) and the second (layouts
cached), at tol 1e-10. Per graph and thread count the table says how ``auto``'s first
solve compares with the fastest method's.

Results: JSON to ``--out`` (default ``cpu_auto_choice.json`` here; published, on the H100
host's 16 cores: ``benchmarks/results/cpu/h100/cpu_auto_choice_*threads.json``,
run by ``bash benchmarks/gpu_host/run.sh pipeline``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from webrank.bench.env import environment, write_json

METHODS = ("power", "gauss-seidel", "gmres", "auto")

CHILD = """
import json, sys, time
import webrank
path, method = sys.argv[1], sys.argv[2]
g = webrank.load(path)
small = webrank.generate_graph("rmat", 16, seed=3)  # above the serial step's size:
webrank.pagerank(small, method=method, device="cpu")  # loads the method's compiled kernels
t0 = time.perf_counter()
r = webrank.pagerank(g, method=method, device="cpu", tol=1e-10, max_iter=10000)
t1 = time.perf_counter()
webrank.pagerank(g, method=method, device="cpu", tol=1e-10, max_iter=10000)
t2 = time.perf_counter()
print(json.dumps({"first_s": t1 - t0, "second_s": t2 - t1, "ran": r.method,
                  "iterations": r.iterations}))
"""


def run_one(path: str, method: str, threads: int) -> dict[str, Any]:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    cmd = [sys.executable, "-c", CHILD, path, method]
    if shutil.which("taskset") and threads <= (os.cpu_count() or 1):
        cmd = ["taskset", "-c", f"0-{threads - 1}", *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--threads", type=int, nargs="+", default=[os.cpu_count() or 1])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default="cpu_auto_choice.json")
    args = ap.parse_args()
    rows = []
    for path in args.graphs:
        for threads in args.threads:
            runs: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
            for _ in range(args.repeat):  # interleaved
                for m in METHODS:
                    runs[m].append(run_one(path, m, threads))
            med = {m: {k: statistics.median(r[k] for r in rs) for k in ("first_s", "second_s")}
                   for m, rs in runs.items()}
            best = min((m for m in METHODS if m != "auto"), key=lambda m: med[m]["first_s"])
            row = {"graph": Path(path).name, "threads": threads, "runs": runs,
                   "median": med, "fastest_first": best,
                   "auto_ran": runs["auto"][0]["ran"],
                   "auto_over_fastest_first": med["auto"]["first_s"] / med[best]["first_s"]}
            rows.append(row)
            cells = "  ".join(f"{m} {med[m]['first_s']:.3f}/{med[m]['second_s']:.3f}"
                              for m in METHODS)
            print(f"{row['graph']:22} {threads:2} threads  first/second s: {cells}  "
                  f"auto ({row['auto_ran']}) / fastest ({best}): "
                  f"{row['auto_over_fastest_first']:.2f}x", flush=True)
    write_json({"environment": environment(), "tol": 1e-10, "rows": rows}, args.out)
    print(json.dumps({"wrote": args.out}))


if __name__ == "__main__":
    main()
