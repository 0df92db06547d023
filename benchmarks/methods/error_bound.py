"""Soundness and tightness of ``PageRankResult.error_bound`` on the real graphs: for
every method and dtype, the bound beside the measured L1 error against a tight
reference (GMRES to 1e-14 in float64, whose own bound is given), and the time the bound
takes (one float64 product with the matrix).

    python benchmarks/methods/error_bound.py --graphs cnr-2000 web-NotreDame soc-Epinions1
        --device cpu --out FILE.json

Results: ``--out`` (published: ``benchmarks/results/methods/cpu_2core/error_bound.json`` and
the GPU's, by ``run.sh trust``, ``benchmarks/results/trust/h100/error_bound_gpu.json``).

A bound is sound when bound >= measured - reference bound (the reference is itself only
that close to the exact PageRank); "ratio" is bound / measured.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import webrank
from webrank.bench.env import environment

METHODS = ["power", "aitken", "quadratic", "adaptive", "fixed", "gmres", "bicgstab",
           "gauss-seidel", "auto"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "web-NotreDame",
                                                    "soc-Epinions1"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tols", type=float, nargs="+", default=[1e-10, 1e-6])
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--engines", nargs="+", default=["auto"],
                    help="GPU engines to run the power method on (each beside 'auto')")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from webrank.datasets import path as bundled

    rows = []
    for name in args.graphs:
        import os

        data = os.environ.get("WEBRANK_DATASETS")
        p = f"{data}/{name}.txt.gz" if data and os.path.exists(f"{data}/{name}.txt.gz") \
            else bundled(name)
        g = webrank.load(p)
        ref = webrank.pagerank(g, tol=1e-14, method="gmres", device="cpu", max_iter=5000)
        ref_bound = ref.error_bound
        print(f"{name}: n={g.n:,} m={g.num_edges:,}; reference (GMRES 1e-14) bound "
              f"{ref_bound:.2e}", flush=True)
        runs = [(m, "auto") for m in args.methods] + [
            ("power", e) for e in args.engines if e != "auto"]
        for method, engine in runs:
            for dtype in ("float64", "float32"):
                for tol in args.tols:
                    try:
                        r = webrank.pagerank(g, tol=tol, method=method, dtype=dtype,
                                             device=args.device, engine=engine,
                                             raise_on_nonconvergence=False)
                    except ValueError as exc:  # a method that refuses a dtype or device
                        print(f"  {method} {engine} {dtype}: {str(exc).splitlines()[0]}")
                        break
                    t = time.perf_counter()
                    bound = r.error_bound
                    bound_s = time.perf_counter() - t
                    measured = float(np.abs(r.scores - ref.scores).sum())
                    row = {"graph": name, "method": r.method, "asked": method,
                           "dtype": dtype, "tol": tol, "device": r.device,
                           "engine": r.info.get("engine", engine),
                           "iterations": r.iterations, "converged": r.converged,
                           "bound": bound, "measured": measured,
                           "reference_bound": ref_bound,
                           "sound": bound >= measured - ref_bound,
                           "ratio": bound / measured if measured else float("inf"),
                           "bound_s": bound_s, "solve_s": r.elapsed,
                           "certified_top10": len(r.certified_top(10))}
                    rows.append(row)
                    print(f"  {method:12s} {engine:10s} {dtype} tol {tol:.0e}: bound {bound:.3e} "
                          f"measured {measured:.3e} ratio {row['ratio']:.2f} "
                          f"{'sound' if row['sound'] else 'UNSOUND'}; bound {bound_s:.3f} s, "
                          f"solve {r.elapsed:.3f} s", flush=True)
    bad = [r for r in rows if not r["sound"]]
    print(f"{len(rows)} results, {len(bad)} unsound; ratio bound/measured "
          f"{min(r['ratio'] for r in rows):.2f}-{max(r['ratio'] for r in rows):.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"environment": environment(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
