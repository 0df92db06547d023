"""Many personalized PageRanks: one batched run against k single ``webrank.pagerank`` runs.

For each k, the same k random seed sets (1–5 nodes each, fixed random seed) are solved

* batched: ``webrank.personalized_pagerank(g, seeds, top=TOP)`` (SpMM over n×k blocks);
* singly: ``webrank.pagerank(g, personalization={...})`` once per seed set. When k is
  larger than ``--singles``, only the first ``--singles`` seed sets are run and the time
  is extrapolated linearly (``singles_extrapolated`` says so).

Both stop each vector at the same absolute tolerance (``--tol``, L1). The JSON records
the times, per-column iteration ranges, the batch size used, the largest L1 difference
between a batched column and its single run, and the environment. With
``--compaction`` it also times k=64 without freezing converged columns.

Usage::

    python benchmarks/methods/ppr_batch.py [--graph web-NotreDame] [--tol 1e-10]
        [--ks 1 16 64 256] [--device cpu|gpu] [--dtype float64] [--singles 8] [--out FILE]

Results: ``--out`` (default ``benchmarks/results/methods/cpu_2core/ppr.json``; the GPU's:
``benchmarks/results/methods/h100/ppr_*.json``, by ``run.sh all``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import webrank
from webrank import personalized as ppr
from webrank.bench.env import environment, write_json

DATASETS = Path(os.environ.get("WEBRANK_DATASETS")
                or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")
TOP = 20


def seed_sets(g: webrank.Graph, k: int, seed: int = 2024) -> list[list]:
    """k seed sets of 1–5 distinct random nodes (labels), reproducible."""
    rng = np.random.default_rng(seed)
    labels = g.node_labels()
    return [labels[rng.choice(g.n, size=int(rng.integers(1, 6)), replace=False)].tolist()
            for _ in range(k)]


def run_batched(g, seeds, args, **kw):
    t0 = time.perf_counter()
    r = webrank.personalized_pagerank(g, seeds, tol=args.tol, max_iter=args.max_iter,
                                      dtype=args.dtype, device=args.device, **kw)
    return r, time.perf_counter() - t0


def run_singles(g, seeds, args):
    t0 = time.perf_counter()
    out = [webrank.pagerank(g, personalization=dict.fromkeys(s, 1.0), tol=args.tol,
                            max_iter=args.max_iter, dtype=args.dtype, device=args.device)
           for s in seeds]
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="web-NotreDame")
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 16, 64, 256])
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--singles", type=int, default=8,
                    help="Most single runs timed per k (the rest extrapolated).")
    ap.add_argument("--compaction", action="store_true",
                    help="Also time k=64 without freezing converged columns.")
    ap.add_argument("--out", default="benchmarks/results/methods/cpu_2core/ppr.json")
    args = ap.parse_args()

    path = DATASETS / f"{args.graph}.txt.gz"
    g = webrank.load(path)
    print(f"{g!r}, tol {args.tol:g}, device {args.device}, {args.dtype}", flush=True)
    # compile / upload once, untimed
    warm = seed_sets(g, 2, seed=1)
    run_batched(g, warm, args, top=TOP)
    run_singles(g, warm[:1], args)

    rows = []
    for k in args.ks:
        seeds = seed_sets(g, k)
        r, batched_s = run_batched(g, seeds, args, top=TOP)
        m = min(k, args.singles)
        singles, singles_s = run_singles(g, seeds[:m], args)
        # accuracy: batched top scores against the single runs' top lists
        diff = max(float(np.abs(np.array([s for _, s in one.top(TOP)])
                                - r.top_scores[c]).max()) for c, one in enumerate(singles))
        same_nodes = all([n for n, _ in one.top(TOP)] == r.top_nodes[c].tolist()
                         for c, one in enumerate(singles))
        singles_total = singles_s * k / m
        row = {
            "k": k, "batched_s": batched_s, "batched_compute_s": r.elapsed,
            "batch_size": r.batch_size, "num_batches": r.num_batches,
            "block_steps": r.block_steps, "column_steps": r.column_steps,
            "iterations_min": int(r.iterations.min()), "iterations_max": int(r.iterations.max()),
            "all_converged": r.all_converged, "kernel": r.info["kernel"],
            "singles_timed": m, "singles_timed_s": singles_s, "singles_s": singles_total,
            "singles_extrapolated": m < k,
            "single_iterations": [one.iterations for one in singles],
            "speedup": singles_total / batched_s,
            "batched_ms_per_column_step": 1e3 * r.elapsed / max(r.column_steps, 1),
            "single_ms_per_step": 1e3 * sum(o.elapsed for o in singles)
            / max(sum(o.iterations for o in singles), 1),
            "top_score_max_abs_diff_vs_single": diff, "top_nodes_equal": same_nodes,
        }
        rows.append(row)
        note = f" (extrapolated from {m})" if m < k else ""
        print(f"k={k:4d}: batched {batched_s:8.2f} s (batch {r.batch_size}, iterations "
              f"{row['iterations_min']}-{row['iterations_max']}), singles "
              f"{singles_total:8.2f} s{note}: "
              f"{row['speedup']:.1f}x; top-{TOP} max |diff| {diff:.1e}, same nodes "
              f"{same_nodes}", flush=True)

    compaction = None
    if args.compaction:
        seeds = seed_sets(g, 64)
        on, on_s = run_batched(g, seeds, args, top=TOP)
        saved, ppr.COMPACT_BELOW = ppr.COMPACT_BELOW, 0.0
        try:
            off, off_s = run_batched(g, seeds, args, top=TOP)
        finally:
            ppr.COMPACT_BELOW = saved
        compaction = {"k": 64, "compact_s": on_s, "compact_column_steps": on.column_steps,
                      "no_compact_s": off_s, "no_compact_column_steps": off.column_steps}
        print(f"compaction k=64: {on_s:.2f} s ({on.column_steps} column steps) vs without "
              f"{off_s:.2f} s ({off.column_steps})", flush=True)

    doc = {"benchmark": "ppr_batch", "graph": args.graph, "n": g.n, "edges": g.num_edges,
           "tol": args.tol, "criterion": "l1", "alpha": 0.85, "dtype": args.dtype,
           "device": args.device, "top": TOP, "rows": rows, "compaction": compaction,
           "environment": environment()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_json(doc, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
