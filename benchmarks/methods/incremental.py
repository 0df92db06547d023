"""Incremental PageRank (``webrank.update``) against recomputing, on cnr-2000 and R-MAT.

For each graph, a converged run (L1 tol 1e-10) is the previous result. Each batch
removes ``fraction/2 * m`` random existing edges and inserts as many random node pairs
(uniform endpoints among existing nodes: the spread-out batches of the dynamic-PageRank
literature, the hard case for a frontier). For each batch it times, median of
``--repeat`` runs:

* ``full``: ``webrank.pagerank`` on the new graph from the uniform vector (cold start;
  the new graph given, its construction not timed);
* ``warm``: ``webrank.update(..., frontier=False)``: power steps from the previous scores;
* ``update``: ``webrank.update`` with its defaults (frontier phase, then verification);
* ``update-all``: the same with ``max_frontier_fraction=1`` (the frontier phase never
  hands over to full steps).

``warm`` and ``update*`` include splicing the new graph (they take the old graph and the
batch); ``edit_s`` reports that part. Work is counted in full-step equivalents (rows
processed / n); L1 distance to the full run and the final residual are reported too.

Usage: ``python benchmarks/methods/incremental.py [--device cpu|gpu|auto] [--repeat R]
[--rmat-scale S] [--fractions 1e-5 1e-4 ...] [--out PATH]``. Results: ``--out`` (default
``benchmarks/results/methods/cpu_2core/incremental.json``, or ``methods/h100/`` with
``--device gpu``: the published files of each device's reference machine).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import webrank
from webrank.bench.env import environment, median_time, write_json
from webrank.generate import generate
from webrank.incremental import edit_graph

DATASETS = Path(os.environ.get("WEBRANK_DATASETS")
                or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")
#: where the published result of each device was measured
MACHINE = {"cpu": "cpu_2core", "gpu": "h100"}
RESULTS = Path(__file__).resolve().parents[1] / "results" / "methods"
TOL = 1e-10


def load_graph(name: str, rmat_scale: int) -> webrank.Graph:
    if name == "rmat":
        src, dst, n = generate("rmat", rmat_scale, seed=42)
        return webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n,
                                        name=f"rmat-{rmat_scale}")
    return webrank.load(DATASETS / f"{name}.txt.gz")


def random_batch(g: webrank.Graph, fraction: float, rng: np.random.Generator):
    """(added, removed) label columns: half removals of existing edges, half insertions."""
    k = max(2, round(fraction * g.num_edges))
    src, dst, _ = g.edges()
    pick = rng.choice(src.size, k // 2, replace=False)
    labels = g.node_labels()
    removed = (labels[src[pick]], labels[dst[pick]])
    added = (labels[rng.integers(0, g.n, k - k // 2)], labels[rng.integers(0, g.n, k - k // 2)])
    return added, removed, k


def bench_graph(name: str, args: argparse.Namespace) -> list[dict]:
    g = load_graph(name, args.rmat_scale)
    print(f"\n{name}: n={g.n:,} m={g.num_edges:,}", flush=True)
    prev = webrank.pagerank(g, tol=TOL, device=args.device)
    rng = np.random.default_rng(2024)
    rows = []
    for fraction in args.fractions:
        added, removed, k = random_batch(g, fraction, rng)
        t0 = time.perf_counter()
        new = edit_graph(g, added, removed)
        edit_s = time.perf_counter() - t0
        runs = {
            "full": lambda new=new: webrank.pagerank(new, tol=TOL, device=args.device),
            "warm": lambda a=added, r=removed: webrank.update(
                prev, g, a, r, device=args.device, frontier=False),
            "update": lambda a=added, r=removed: webrank.update(
                prev, g, a, r, device=args.device),
            "update-all": lambda a=added, r=removed: webrank.update(
                prev, g, a, r, device=args.device, max_frontier_fraction=1.0),
        }
        row: dict = {"graph": name, "n": g.n, "m": g.num_edges, "fraction": fraction,
                     "batch_edges": k, "edit_s": edit_s}
        full_scores = None
        for label, fn in runs.items():
            res = fn()
            row[label] = {"time": median_time(fn, repeat=args.repeat, warmup=0)}
            entry = row[label]
            if label == "full":
                full_scores = res.scores
                entry["work_full_steps"] = res.iterations
            else:
                info = res.info
                entry.update(work_full_steps=info["work_full_steps"],
                             verify_steps=info["verify_steps"],
                             frontier_steps=info["frontier_steps"],
                             frontier_rows=info["frontier_rows"],
                             frontier_max=max(info["frontier_sizes"], default=0),
                             frontier_stop=info["frontier_stop"],
                             graph_edit_s=info["graph_edit_s"],
                             frontier_s=info["frontier_s"], verify_s=info["verify_s"],
                             l1_vs_full=float(np.abs(res.scores - full_scores).sum()))
            entry["residual"] = res.residual
        full_t = row["full"]["time"]["median"]
        for label in ("warm", "update", "update-all"):
            row[label]["speedup_vs_full"] = full_t / row[label]["time"]["median"]
        row["update"]["speedup_vs_warm"] = (row["warm"]["time"]["median"]
                                            / row["update"]["time"]["median"])
        rows.append(row)
        print_row(row)
    return rows


def print_row(row: dict) -> None:
    t = {k: row[k]["time"]["median"] for k in ("full", "warm", "update", "update-all")}
    w = {k: row[k]["work_full_steps"] for k in ("full", "warm", "update", "update-all")}
    print(f"{row['fraction']:>8.0e} {row['batch_edges']:>7,} | "
          f"{t['full']:7.3f} {t['warm']:7.3f} {t['update']:7.3f} {t['update-all']:7.3f} | "
          f"{w['full']:5.0f} {w['warm']:6.1f} {w['update']:6.1f} {w['update-all']:6.1f} | "
          f"{t['full'] / t['update']:5.2f}x {t['warm'] / t['update']:5.2f}x "
          f"{t['full'] / t['update-all']:5.2f}x | {row['update']['l1_vs_full']:.1e}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "rmat"])
    ap.add_argument("--rmat-scale", type=int, default=18)
    ap.add_argument("--fractions", nargs="+", type=float, default=[1e-5, 1e-4, 1e-3, 1e-2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON path (default benchmarks/results/methods/MACHINE/incremental.json, "
                         "MACHINE cpu_2core or h100 by --device)")
    args = ap.parse_args()
    print("times in s (median): full = cold pagerank on the new graph; warm = update "
          "without frontier; update = default; update-all = frontier never hands over")
    print(f"{'fraction':>8} {'edges':>7} | {'full':>7} {'warm':>7} {'update':>7} "
          f"{'upd-all':>7} | work in full steps (rows / n)  | update vs full, vs warm; "
          "update-all vs full | L1 to full")
    rows = []
    for name in args.graphs:
        rows.extend(bench_graph(name, args))
    out = args.out or RESULTS / MACHINE[args.device] / "incremental.json"
    write_json({"environment": environment(), "tol": TOL, "criterion": "l1",
                "device": args.device, "rows": rows}, out)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
