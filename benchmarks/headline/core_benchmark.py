"""Core benchmark: parse, build and compute on the real datasets, against baselines.

For each graph, in one process:

* parse + build: ``webrank.load`` (text), the binary cache, ``pandas.read_csv`` alone;
* networkx: graph build from the parsed arrays, and ``networkx.pagerank`` (its own
  ``N * tol`` rule with tol=1e-10, whose L1 error is reported);
* a plain SciPy power iteration (CSR matvec + NumPy vector ops) to L1 tol 1e-10;
* webrank CPU (float64, float32) to L1 tol 1e-10, and on a GPU when one is present,
  with cuSPARSE via CuPy as the GPU baseline (Praveen et al.'s design).

Every answer's L1 error is measured against a float64 reference solved to 1e-14.
Usage: ``python benchmarks/headline/core_benchmark.py [--out DIR] [--repeat R]
[--skip-networkx]``. Writes ``DIR/core.json`` (default DIR
``benchmarks/results/headline/cpu_2core``; the GPU's, by ``bash benchmarks/gpu_host/run.sh
core``: ``benchmarks/results/headline/h100/core.json``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import webrank
from webrank.bench.env import environment, median_time, write_json

# the baseline loops live with the `webrank bench baselines` suite (one copy of each)
from webrank.bench.suites.baselines import cusparse_power, scipy_power

DATASETS = Path(os.environ.get("WEBRANK_DATASETS")
                or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")
GRAPHS = ["web-NotreDame", "cnr-2000", "soc-Epinions1"]
ALPHA, TOL = 0.85, 1e-10


def reference(g: webrank.Graph) -> np.ndarray:
    return webrank.pagerank(g, tol=1e-14, max_iter=5000, device="cpu").scores


def bench_graph(name: str, repeat: int, skip_nx: bool, out_dir: Path) -> dict:
    path = DATASETS / f"{name}.txt.gz"
    row: dict = {"graph": name}
    row["load_s"] = median_time(lambda: webrank.load(path), repeat=repeat)
    g = webrank.load(path)
    row.update(n=g.n, edges=g.num_edges)
    cache = out_dir / f"{name}.npz"
    webrank.io.save_graph(g, cache)
    row["cache_load_s"] = median_time(lambda: webrank.load(cache), repeat=repeat)
    cache.unlink()
    try:
        import pandas as pd

        row["pandas_read_csv_s"] = median_time(
            lambda: pd.read_csv(path, sep="\t", comment="#", header=None), repeat=repeat)
    except ImportError:
        pass
    ref = reference(g)

    def l1(x):
        return float(np.abs(np.asarray(x) / np.sum(x) - ref).sum())

    x, it = scipy_power(g.to_scipy(), g.out_weight, TOL)
    row["scipy"] = {"time_s": median_time(lambda: scipy_power(g.to_scipy(), g.out_weight, TOL),
                                          repeat=repeat),
                    "iterations": it, "l1_error": l1(x)}
    for dtype in ("float64", "float32"):
        r = webrank.pagerank(g, tol=TOL, dtype=dtype, device="cpu")
        row[f"webrank_cpu_{dtype}"] = {
            "time_s": median_time(lambda d=dtype: webrank.pagerank(g, tol=TOL, dtype=d,
                                                                  device="cpu"), repeat=repeat),
            "iterations": r.iterations, "l1_error": l1(r.scores)}
    if webrank.gpu_available():
        import cupy as cp

        sync = cp.cuda.get_current_stream().synchronize
        for dtype in ("float64", "float32"):
            r = webrank.pagerank(g, tol=TOL, dtype=dtype, device="gpu")
            row[f"webrank_gpu_{dtype}"] = {
                "time_s": median_time(lambda d=dtype: webrank.pagerank(
                    g, tol=TOL, dtype=d, device="gpu"), repeat=repeat, sync=sync),
                "iterations": r.iterations, "l1_error": l1(r.scores)}
        x, it = cusparse_power(g, TOL)
        row["cusparse_gpu_float64"] = {
            "time_s": median_time(lambda: cusparse_power(g, TOL), repeat=repeat, sync=sync),
            "iterations": it, "l1_error": l1(cp.asnumpy(x))}
    if not skip_nx:
        import networkx as nx

        src, dst, _ = g.edges()
        pairs = list(zip(src.tolist(), dst.tolist(), strict=True))
        t0 = time.perf_counter()
        G = nx.DiGraph()
        G.add_nodes_from(range(g.n))
        G.add_edges_from(pairs)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        pr = nx.pagerank(G, alpha=ALPHA, tol=TOL)
        comp = time.perf_counter() - t0
        row["networkx"] = {"build_s": build, "time_s": {"median": comp, "repeat": 1},
                           "l1_error": l1(np.array([pr[i] for i in range(g.n)]))}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/headline/cpu_2core", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-networkx", action="store_true")
    ap.add_argument("--graphs", nargs="*", default=GRAPHS)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment()
    rows = [bench_graph(name, args.repeat, args.skip_networkx, args.out) for name in args.graphs]
    write_json({"environment": env, "alpha": ALPHA, "tol": TOL, "results": rows},
               args.out / "core.json")
    print(f"# {env['cpu']} x{env['cpu_count']}, GPU: {env['gpu']}, commit {env['commit']}")
    keys = [k for k in ("networkx", "scipy", "webrank_cpu_float64", "webrank_cpu_float32",
                        "cusparse_gpu_float64", "webrank_gpu_float64", "webrank_gpu_float32")
            if any(k in r for r in rows)]
    print("| graph | load (s) | cache (s) | pandas (s) | "
          + " | ".join(f"{k} s (iters, L1 err)" for k in keys) + " |")
    print("|---" * (4 + len(keys)) + "|")
    for r in rows:
        cells = [r["graph"], f"{r['load_s']['median']:.3f}", f"{r['cache_load_s']['median']:.4f}",
                 f"{r.get('pandas_read_csv_s', {}).get('median', float('nan')):.3f}"]
        for k in keys:
            v = r.get(k)
            cells.append("" if v is None else f"{v['time_s']['median']:.4f} "
                         f"({v.get('iterations', '-')}, {v['l1_error']:.1e})")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
