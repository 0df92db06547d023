"""The persistent engine's layout on small real graphs: heavy-row threshold x gather
order, whole warm calls and their solves.

For each graph (a real one read for the GPU, or ``rmat-S`` / ``web-S`` generated and built
on the GPU as ``gpu_graphs.device_graph`` makes them) and each setting, the median of repeated
``webrank.pagerank(g, device="gpu", engine="persistent", tol=1e-10,
engine_options={...})`` calls after a warm-up: the whole call's wall time, the solve
(``result.elapsed``), the steps and the microseconds a step. The pull engine's
defaults (``heavy_threshold=64``, no reordering below 2**24 links;
``webrank.backends.gpu``) were chosen on R-MAT graphs whose vectors outgrow L2, where a
step is bound by memory; this sweep chose the persistent engine's threshold
(``PERSISTENT_HEAVY_THRESHOLD``). (The engine's warps stage 32 rows' in-links at a time:
it takes no ``lanes_per_row``; sweeps before it did are in
``benchmarks/results/gpu/h200/persistent/``, with a ``lanes`` column.)

    python benchmarks/gpu/persistent_sweep.py [--graphs cnr-2000 web-NotreDame]
        [--data DIR] [--thresholds 16 32 64 128 256] [--repeats 9] [--out FILE.json]

Prints one line a setting and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "web-NotreDame"])
    ap.add_argument("--data", default=os.environ.get("WEBRANK_DATASETS", "."))
    ap.add_argument("--thresholds", nargs="+", type=int, default=[16, 32, 64, 128, 256])
    ap.add_argument("--reorder", nargs="+", default=["none", "out-degree"])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out", default="persistent_sweep.json")
    args = ap.parse_args()
    import cupy as cp
    from gpu_graphs import graph_by_name

    import webrank
    from webrank.bench.env import environment, write_json

    rows = []
    for name in args.graphs:
        g = graph_by_name(name, args.data)
        for threshold, reorder in itertools.product(args.thresholds, args.reorder):
            opts = {"heavy_threshold": threshold,
                    "reorder": None if reorder == "none" else reorder}
            whole, solve = [], []
            for k in range(args.repeats + 1):
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                r = webrank.pagerank(g, device="gpu", engine="persistent", tol=1e-10,
                                     engine_options=opts)
                if k:
                    whole.append(time.perf_counter() - t)
                    solve.append(r.elapsed)
            row = {"graph": name, **opts, "steps": r.iterations,
                   "whole_ms": 1e3 * statistics.median(whole),
                   "solve_ms": 1e3 * statistics.median(solve)}
            row["us_per_step"] = 1e3 * row["solve_ms"] / max(r.iterations, 1)
            rows.append(row)
            print(f"{name}: threshold {threshold:4d} reorder {reorder:10s} "
                  f"whole {row['whole_ms']:.3f} ms solve {row['solve_ms']:.3f} ms "
                  f"({r.iterations} steps, {row['us_per_step']:.1f} us a step)", flush=True)
        del g
    write_json({"environment": environment(), "rows": rows}, args.out)


if __name__ == "__main__":
    main()
