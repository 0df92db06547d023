"""Operator products and wall time of the linear-system solvers against the power method.

For each graph and alpha, every method is run on ``--device`` (default cpu) to an L1
tolerance of 1e-10 from the uniform start: the power method, plain restarted GMRES(m) for several m,
GMRES-DR(m, k), BiCGSTAB and Gauss-Seidel, plus float32 runs of the Krylov methods. It
prints one table per graph and alpha (products, iterations, the ratio of the power
method's products to the method's, solve time, L1 distance to the power method's answer)
and writes them with the environment to ``benchmarks/results/methods/MACHINE/krylov.json``
(MACHINE: ``cpu_2core`` for ``--device cpu``, ``h100`` for ``gpu``; ``--out`` elsewhere).

Times are single runs (``PageRankResult.elapsed``, setup excluded); on a shared machine
they are indicative only, the product counts are exact. Usage:
``python benchmarks/methods/krylov_matvecs.py [--graphs web-NotreDame cnr-2000] [--alphas 0.99 0.85]
[--device cpu|gpu]`` (Gauss-Seidel is skipped on the GPU).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import webrank
from webrank.bench.env import environment, write_json

DATASETS = Path(os.environ.get("WEBRANK_DATASETS")
                or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")
#: where the published result of each device was measured
MACHINE = {"cpu": "cpu_2core", "gpu": "h100"}
TOL = 1e-10
RUNS: list[tuple[str, dict, str]] = [
    ("power", {}, "float64"),
    ("gmres", {"restart": 20, "deflate": 0}, "float64"),
    ("gmres", {"restart": 30, "deflate": 0}, "float64"),
    ("gmres", {"restart": 50, "deflate": 0}, "float64"),
    ("gmres", {"restart": 30, "deflate": 10}, "float64"),
    ("gmres", {"restart": 50, "deflate": 20}, "float64"),
    ("gmres", {"restart": 80, "deflate": 30}, "float64"),
    ("bicgstab", {}, "float64"),
    ("gauss-seidel", {}, "float64"),
    ("gmres", {}, "float32"),
    ("bicgstab", {}, "float32"),
]


def measure(graph: webrank.Graph, alpha: float, device: str) -> list[dict]:
    rows = []
    power = None
    for method, options, dtype in RUNS:
        if device == "gpu" and method == "gauss-seidel":
            continue  # sequential sweeps: CPU only
        r = webrank.pagerank(graph, alpha=alpha, tol=TOL, max_iter=20000, method=method,
                             device=device, dtype=dtype, raise_on_nonconvergence=False,
                             **options)
        if power is None:
            power = r
        rows.append({
            "method": method, "options": options, "dtype": dtype,
            "converged": r.converged, "iterations": r.iterations, "matvecs": r.matvecs,
            "speedup_matvecs": power.matvecs / r.matvecs, "seconds": r.elapsed,
            "residual": r.residual,
            "l1_vs_power": float(np.abs(r.scores - power.scores).sum()),
            "info": {k: v for k, v in r.info.items() if isinstance(v, int | float)},
        })
        row = rows[-1]
        label = method + "".join(f" {k}={v}" for k, v in options.items())
        print(f"  {label:28s} {dtype:7s} {r.converged!s:5s} {r.iterations:6d} "
              f"{r.matvecs:6d} {row['speedup_matvecs']:6.2f}x {r.elapsed:7.2f}s "
              f"{row['l1_vs_power']:9.2e}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["web-NotreDame", "cnr-2000"])
    ap.add_argument("--alphas", nargs="+", type=float, default=[0.99, 0.85])
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--out", default=None,
                    help="JSON path (default benchmarks/results/methods/MACHINE/krylov.json, "
                         "MACHINE cpu_2core or h100 by --device)")
    args = ap.parse_args()
    out = args.out or str(Path(__file__).resolve().parents[1] / "results" / "methods"
                          / MACHINE[args.device] / "krylov.json")
    doc = {"environment": environment(), "tol": TOL, "criterion": "l1", "results": []}
    for name in args.graphs:
        graph = webrank.load(DATASETS / f"{name}.txt.gz")
        for alpha in args.alphas:
            print(f"{name} (n={graph.n:,}, m={graph.num_edges:,}), alpha={alpha}, "
                  f"L1 tol {TOL:g}")
            print(f"  {'method':28s} {'dtype':7s} {'conv':5s} {'iters':>6s} {'prods':>6s} "
                  f"{'power/':>7s} {'time':>8s} {'L1 vs power':>9s}")
            doc["results"].append({"graph": name, "n": graph.n, "edges": graph.num_edges,
                                   "alpha": alpha, "runs": measure(graph, alpha, args.device)})
    write_json(doc, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
