"""Wall time of the methods ``auto`` chooses between, on this CPU (tol 1e-10, L1).

    python benchmarks/cpu/cpu_method_choice.py [--out FILE] [--repeat N]

Prints one line per (graph, alpha, method) and writes JSON with the environment; the
thresholds of :mod:`webrank.solvers.auto` come from these runs. Results: ``--out``
(default ``benchmarks/results/cpu/cpu_2core/cpu_method_choice.json``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import webrank
from webrank.bench.env import environment, median_time, write_json

DATA = Path(os.environ.get("WEBRANK_DATASETS")
            or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")
METHODS = [("power", {}), ("gauss-seidel", {}), ("gmres", {}),
           ("gmres", {"restart": 80, "deflate": 40}), ("auto", {})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="benchmarks/results/cpu/cpu_2core/cpu_method_choice.json")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.85, 0.9, 0.95, 0.99])
    args = ap.parse_args()
    rows = []
    for name in ("web-NotreDame", "cnr-2000"):
        g = webrank.load(DATA / f"{name}.txt.gz")
        webrank.pagerank(g, tol=1e-6, device="cpu", method="power")  # JIT warm-up
        for alpha in args.alphas:
            for method, opts in METHODS:
                def run(m=method, o=opts, a=alpha, g=g):
                    return webrank.pagerank(g, alpha=a, tol=1e-10, max_iter=10000,
                                            device="cpu", method=m, **o)
                r = run()
                t = median_time(run, repeat=args.repeat, warmup=0)
                label = method + ("" if not opts else f"({opts['restart']},{opts['deflate']})")
                rows.append({"graph": name, "alpha": alpha, "method": label,
                             "ran": r.method, "matvecs": r.matvecs, **t})
                print(f"{name:14} alpha={alpha:4} {label:14} ran={r.method:13} "
                      f"matvecs={r.matvecs:5} median={t['median']:.3f} s", flush=True)
    write_json({"environment": environment(), "tol": 1e-10, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
