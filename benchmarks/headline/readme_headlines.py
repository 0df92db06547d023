"""The CPU rows of the README's headline table, measured as a user gets them: the load of
cnr-2000's ``.txt.gz`` and ``webrank.pagerank(g)`` with its defaults (``method="auto"``,
``tol=1e-6``) and at ``tol=1e-10``, in one process, medians of ``--repeat`` warm calls
(the first call's time reported apart), with the machine.

    python benchmarks/headline/readme_headlines.py --out FILE.json

Prints the rows and writes JSON to ``--out`` (published:
``benchmarks/results/headline/cpu_2core/readme_headlines.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import webrank
from webrank.bench.env import environment


def timed(fn, repeat: int) -> tuple[object, float, list[float]]:
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, first, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("WEBRANK_DATASETS", "../shared/datasets"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    path = os.path.join(args.data, "cnr-2000.txt.gz")
    rows = {}
    g, first, times = timed(lambda: webrank.load(path), args.repeat)
    rows["load"] = {"first_s": first, "median_s": statistics.median(times), "times": times}
    for label, kw in (("pagerank_defaults", {}), ("pagerank_tol_1e-10", {"tol": 1e-10}),
                      ("power_tol_1e-10", {"tol": 1e-10, "method": "power"})):
        r, first, times = timed(lambda kw=kw: webrank.pagerank(g, device="cpu", **kw),
                                args.repeat)
        rows[label] = {"first_s": first, "median_s": statistics.median(times),
                       "times": times, "method": r.method, "iterations": r.iterations,
                       "error_bound": r.error_bound}
    for k, v in rows.items():
        extra = f", {v['method']} {v['iterations']} it, bound {v['error_bound']:.1e}" \
            if "method" in v else ""
        print(f"{k}: median {v['median_s']:.3f} s (first {v['first_s']:.3f} s){extra}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"environment": environment(), "graph": "cnr-2000", "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
