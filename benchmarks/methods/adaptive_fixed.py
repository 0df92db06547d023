"""The ``adaptive`` and ``fixed`` methods against ``power`` on the real datasets.

For each graph (web-NotreDame, cnr-2000) at alpha 0.85, L1 tol 1e-10, on one device:

* ``power`` (float64), ``adaptive`` (defaults), ``fixed`` with ``product="exact"`` and
  ``"double"``: median wall time of the solve (``PageRankResult.elapsed``, after one
  warm-up run that also compiles), iterations, matvec equivalents (edges gathered /
  edges; adaptive's ``info``), and the L1 error against a float64 reference solved to
  tol 1e-14;
* the same graph with random edge weights (uniform in [0.5, 2)) for the fixed method,
  where every gathered in-link needs a product, so the two product variants differ.

Usage: ``python benchmarks/methods/adaptive_fixed.py [--device cpu|gpu] [--repeat R] [--out F]``.
Results: ``benchmarks/results/methods/cpu_2core/adaptive_fixed.json`` (``--device cpu``) or
``methods/h100/adaptive_fixed.json`` (``--device gpu``) by default, the published files of
each device's reference machine; ``--out`` elsewhere on another machine.
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
GRAPHS = ["web-NotreDame", "cnr-2000"]
ALPHA, TOL = 0.85, 1e-10
RUNS = [("power", {}), ("adaptive", {}), ("fixed", {"product": "exact"}),
        ("fixed", {"product": "double"})]


def measure(g: webrank.Graph, ref: np.ndarray, method: str, options: dict, device: str,
            repeat: int) -> dict:
    """Median solve time and the answer's quality for one method on one graph."""
    runs = [webrank.pagerank(g, alpha=ALPHA, tol=TOL, device=device, method=method,
                             **options) for _ in range(repeat + 1)]  # the first warms up
    r = runs[-1]
    times = [x.elapsed for x in runs[1:]]
    info = {k: v for k, v in r.info.items() if k != "rows_active"}
    rows = r.info.get("rows_active")
    return {
        "method": method, "options": options, "iterations": r.iterations,
        "time_median_s": float(np.median(times)), "time_min_s": float(np.min(times)),
        "matvec_equivalents": float(r.info.get("matvec_equivalents", r.iterations)),
        "l1_error": float(np.abs(r.scores - ref).sum()),
        "last_residual": float(r.residuals[-1]), "info": info,
        "rows_active_min": int(min(rows)) if rows else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = Path(args.out or Path(__file__).resolve().parents[1] / "results" / "methods"
               / MACHINE[args.device] / "adaptive_fixed.json")
    rows = []
    for name in GRAPHS:
        base = webrank.load(DATASETS / f"{name}.txt.gz")
        src, dst, _ = base.edges()
        rng = np.random.default_rng(0)
        weighted = webrank.Graph.from_edges(src, dst, rng.uniform(0.5, 2.0, src.size),
                                            node_ids="range", num_nodes=base.n)
        for label, g, runs in ((name, base, RUNS),
                               (f"{name} (weighted)", weighted, RUNS[2:] + RUNS[:1])):
            ref = webrank.pagerank(g, alpha=ALPHA, tol=1e-14, max_iter=10000,
                                   device=args.device).scores
            for method, options in runs:
                row = {"graph": label, "n": g.n, "edges": g.num_edges,
                       **measure(g, ref, method, options, args.device, args.repeat)}
                rows.append(row)
                tag = method + (f"[{options['product']}]" if options else "")
                print(f"{label:26s} {tag:15s} it={row['iterations']:4d} "
                      f"time={row['time_median_s'] * 1e3:8.1f} ms "
                      f"mv-eq={row['matvec_equivalents']:6.1f} "
                      f"L1 err={row['l1_error']:.2e} res={row['last_residual']:.1e}",
                      flush=True)
    doc = {"benchmark": "adaptive_fixed", "device": args.device, "alpha": ALPHA, "tol": TOL,
           "reference": "float64 power, tol 1e-14", "environment": environment(),
           "results": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(doc, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
