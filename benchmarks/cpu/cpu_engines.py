"""The CPU's two power steps, pull and blocked, measured on this machine.

    python benchmarks/cpu/cpu_engines.py [--out FILE] [--repeat N] [--rmat 20] [--quick]
    python benchmarks/cpu/cpu_engines.py --methods [--alphas 0.85 0.95 0.99] [--out FILE]
        [--only LABEL ...] [--prpack]

For each graph (the shared web graphs and an R-MAT graph): the per-step time of each
engine (marginal: runs of 60 and 10 steps, interleaved, medians), the blocked layout's
build time and size, and whole ``webrank.pagerank`` calls to tol 1e-10 with the layout
built in the call ("cold") and already cached on the graph ("warm"). Then whole
processes, ``webrank rank FILE --device cpu --engine E --tol 1e-10`` (the layout built
once, kernels loaded from Numba's cache), and the methods ``auto`` chooses between at
alpha 0.95 and 0.99 with the blocked step. Timings interleave the engines so that a
noisy neighbour slows both; medians and minima are written to JSON with the machine.

``--methods``: only the methods, on every graph, interleaved: power (auto step), gmres,
Gauss-Seidel as auto runs it (one block per thread, Anderson-mixed: depth 5 every 2
sweeps), with depth 3 every 3, without mixing, and the classic one-block sweep (with the
share of links inside their block), and auto, with each answer's L1 distance to a GMRES
solve at tol 1e-14; ``--prpack`` adds igraph's PRPACK (its exact solve; the graph built
once, untimed), ``--only`` keeps the methods named.

Results: ``--out`` (default ``benchmarks/results/cpu/cpu_2core/cpu_engines.json``; the
methods runs are ``cpu_methods.json`` and ``cpu_vs_prpack*.json`` there, the H100 host's
``benchmarks/results/cpu/h100/cpu_methods_*threads.json``, by ``run.sh cpu_methods``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import webrank
from webrank.bench.env import environment, write_json

DATA = Path(os.environ.get("WEBRANK_DATASETS")
            or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")
ENGINES = ("pull", "blocked")
TOL = 1e-10


def _clock(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _stats(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times),
            "repeats": len(times)}


def measure_graph(g: webrank.Graph, repeat: int) -> dict[str, Any]:
    """Per-step and whole-call times of both engines on ``g`` (interleaved)."""
    from webrank.kernels import cpu

    def steps(engine: str, k: int) -> Any:
        return webrank.pagerank(g, device="cpu", method="power", engine=engine, tol=1e-300,
                                max_iter=k, raise_on_nonconvergence=False)

    def solve(engine: str) -> Any:
        return webrank.pagerank(g, device="cpu", method="power", engine=engine, tol=TOL)

    for e in ENGINES:  # kernels loaded, layout built
        solve(e)
    out: dict[str, Any] = {"n": g.n, "edges": g.num_edges}
    t_short = {e: [] for e in ENGINES}
    t_long = {e: [] for e in ENGINES}
    cold = {e: [] for e in ENGINES}
    warm = {e: [] for e in ENGINES}
    build = []
    for _ in range(repeat):
        for e in ENGINES:
            t_short[e].append(_clock(lambda e=e: steps(e, 10)))
            t_long[e].append(_clock(lambda e=e: steps(e, 60)))
            warm[e].append(_clock(lambda e=e: solve(e)))
            g._cache.clear()  # the layout is built inside the next call
            r = solve(e)
            g._cache.clear()
            cold[e].append(_clock(lambda e=e: solve(e)))
            if e == "blocked":
                build.append(r.info["layout_build_s"])
    r = solve("blocked")
    vals = g.transition_values()
    layout = cpu.blocked_layout(g.indptr, g.indices, np.zeros(0) if vals is None else vals)
    out.update({"iterations": r.iterations, "layout_build_s": _stats(build),
                "layout_bytes": layout.nbytes, "csr_bytes": g.indptr.nbytes + g.indices.nbytes,
                "pairs_per_link": layout.num_pairs / max(g.num_edges, 1),
                "partitions": int(layout.part_ptr.size - 1)})
    for e in ENGINES:
        per_step = [(b - a) / 50 for a, b in zip(t_short[e], t_long[e], strict=True)]
        out[e] = {"ms_per_step": {k: 1e3 * v for k, v in _stats(per_step).items()
                                  if k != "repeats"},
                  "solve_cold_s": _stats(cold[e]), "solve_warm_s": _stats(warm[e])}
    p, b = out["pull"], out["blocked"]
    out["step_speedup"] = p["ms_per_step"]["median"] / b["ms_per_step"]["median"]
    out["cold_speedup"] = p["solve_cold_s"]["median"] / b["solve_cold_s"]["median"]
    out["warm_speedup"] = p["solve_warm_s"]["median"] / b["solve_warm_s"]["median"]
    return out


def measure_processes(path: Path, repeat: int) -> dict[str, Any]:
    """Whole ``webrank rank`` processes per engine (interleaved)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parents[2] / "src"), os.environ.get("PYTHONPATH", "")]))
    runs: dict[str, dict[str, list[float]]] = {e: {"wall": [], "compute": []} for e in ENGINES}
    for _ in range(repeat):
        for e in ENGINES:
            cmd = [sys.executable, "-m", "webrank", "rank", str(path), "--device", "cpu",
                   "--engine", e, "--method", "power", "--tol", str(TOL), "--json"]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            runs[e]["wall"].append(time.perf_counter() - t0)
            runs[e]["compute"].append(json.loads(p.stdout)["elapsed_s"])
    return {e: {k: _stats(v) for k, v in r.items()} for e, r in runs.items()}


#: (label, pagerank options) of the methods compared
METHODS = (("power", {"method": "power"}), ("gmres", {"method": "gmres"}),
           ("gauss-seidel", {"method": "gauss-seidel"}),
           ("gauss-seidel anderson=3 every=3",
            {"method": "gauss-seidel", "anderson": 3, "anderson_every": 3}),
           ("gauss-seidel anderson=0", {"method": "gauss-seidel", "anderson": 0}),
           ("gauss-seidel blocks=1 anderson=0",
            {"method": "gauss-seidel", "blocks": 1, "anderson": 0}),
           ("auto", {"method": "auto"}))


#: the label of igraph's PRPACK solve in ``--methods --prpack`` (an exact solve: no tol)
PRPACK = "igraph prpack"


def _prpack(g: webrank.Graph) -> Any:
    """``alpha -> scores`` of igraph's PRPACK on ``g`` (built once, not timed), or None
    without igraph."""
    try:
        import igraph
    except ImportError:
        print("  (igraph not installed: no PRPACK row)")
        return None
    targets = np.repeat(np.arange(g.n), np.diff(g.indptr))  # in-link rows: j -> i
    ig = igraph.Graph(n=g.n, edges=np.column_stack([g.indices, targets]), directed=True)
    return lambda alpha: np.asarray(ig.pagerank(damping=alpha, directed=True,
                                                implementation="prpack"))


def measure_methods(g: webrank.Graph, alphas: list[float], repeat: int = 3,
                    methods: tuple = METHODS, prpack: bool = False) -> list[dict[str, Any]]:
    """Whole solves to tol 1e-10 of each method at each alpha, interleaved run by run;
    with ``prpack``, igraph's PRPACK solve among them."""
    from webrank.kernels.cpu import num_threads
    from webrank.kernels.cpu_gauss_seidel import block_layout, inner_link_share

    rows = []
    inner = {b: inner_link_share(block_layout(g.indptr, g.indices, np.zeros(0), b))
             for b in {1, num_threads()}}
    solve_prpack = _prpack(g) if prpack else None
    labels = [label for label, _ in methods] + ([PRPACK] if solve_prpack else [])
    for alpha in alphas:
        ref = webrank.pagerank(g, alpha=alpha, tol=1e-14, max_iter=20000, device="cpu",
                               method="gmres").scores

        def run(label: str, a: float = alpha) -> Any:
            if label == PRPACK:
                return solve_prpack(a)
            return webrank.pagerank(g, alpha=a, tol=TOL, max_iter=20000, device="cpu",
                                    **dict(methods)[label])
        first = {label: run(label) for label in labels}  # kernels loaded, caches
        times: dict[str, list[float]] = {label: [] for label in labels}
        for _ in range(repeat):
            for label in labels:
                times[label].append(_clock(lambda lb=label: run(lb)))
        for label in labels:
            r = first[label]
            scores = r if label == PRPACK else r.scores
            row = {"alpha": alpha, "method": label,
                   "l1_to_reference": float(np.abs(scores - ref).sum()),
                   **_stats(times[label])}
            if label != PRPACK:
                row.update(ran=r.method, engine=r.info.get("engine"),
                           iterations=r.iterations, matvecs=r.matvecs,
                           mixes=r.info.get("mixes"),
                           inner_link_share=inner.get(r.info.get("blocks")))
            rows.append(row)
            ran = f"ran {r.method:13} {r.iterations:5} iterations" if label != PRPACK \
                else f"{'(exact solve)':34}"
            print(f"  alpha {alpha}: {label:22} {ran} {statistics.median(times[label]):.3f} s"
                  f" (L1 to reference {row['l1_to_reference']:.1e})", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/cpu/cpu_2core/cpu_engines.json")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rmat", type=int, default=20, help="R-MAT scale (0: none)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats, no processes")
    ap.add_argument("--methods", action="store_true", help="only the methods, every graph")
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.85, 0.95, 0.99])
    ap.add_argument("--only", nargs="+", metavar="LABEL",
                    help="with --methods: only these methods (labels of METHODS)")
    ap.add_argument("--prpack", action="store_true",
                    help="with --methods: igraph's PRPACK solve too (needs igraph)")
    args = ap.parse_args()
    repeat = 2 if args.quick else args.repeat
    doc: dict[str, Any] = {"environment": environment(), "tol": TOL, "graphs": {}}
    graphs = [(name, DATA / f"{name}.txt.gz")
              for name in ("cnr-2000", "web-NotreDame", "soc-Epinions1")]
    if args.methods:
        methods = METHODS
        if args.only:
            unknown = set(args.only) - {label for label, _ in METHODS}
            if unknown:
                ap.error(f"unknown method labels {sorted(unknown)}")
            methods = tuple(m for m in METHODS if m[0] in args.only)
        for name, path in graphs:
            print(f"{name}:", flush=True)
            doc["graphs"][name] = measure_methods(webrank.load(path), args.alphas,
                                                  max(2, repeat // 2), methods, args.prpack)
        write_json(doc, args.out)
        print(f"wrote {args.out}")
        return
    for name, path in graphs:
        g = webrank.load(path)
        res = doc["graphs"][name] = measure_graph(g, repeat)
        print(f"{name:14} {g.num_edges:>11,} links: step pull "
              f"{res['pull']['ms_per_step']['median']:.2f} ms, blocked "
              f"{res['blocked']['ms_per_step']['median']:.2f} ms ({res['step_speedup']:.2f}x); "
              f"solve cold {res['pull']['solve_cold_s']['median']:.3f} -> "
              f"{res['blocked']['solve_cold_s']['median']:.3f} s, warm -> "
              f"{res['blocked']['solve_warm_s']['median']:.3f} s; build "
              f"{res['layout_build_s']['median'] * 1e3:.0f} ms; "
              f"{res['pairs_per_link']:.3f} pairs/link", flush=True)
    if args.rmat:
        from webrank.generate import rmat

        src, dst, n = rmat(args.rmat, 16, seed=1)
        g = webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
        name = f"rmat-{args.rmat}"
        res = doc["graphs"][name] = measure_graph(g, max(2, repeat // 2))
        print(f"{name:14} {g.num_edges:>11,} links: step pull "
              f"{res['pull']['ms_per_step']['median']:.2f} ms, blocked "
              f"{res['blocked']['ms_per_step']['median']:.2f} ms ({res['step_speedup']:.2f}x); "
              f"{res['pairs_per_link']:.3f} pairs/link", flush=True)
    if not args.quick:
        doc["processes"] = {}
        for name, path in graphs[:2]:
            doc["processes"][name] = res = measure_processes(path, repeat)
            print(f"{name:14} whole process: pull {res['pull']['wall']['median']:.2f} s "
                  f"(compute {res['pull']['compute']['median']:.3f}), blocked "
                  f"{res['blocked']['wall']['median']:.2f} s "
                  f"(compute {res['blocked']['compute']['median']:.3f})", flush=True)
        print("methods on cnr-2000 (blocked power step):")
        doc["methods_cnr-2000"] = measure_methods(
            webrank.load(graphs[0][1]), [0.95, 0.99],
            methods=tuple(m for m in METHODS if "blocks" not in m[1]))
    write_json(doc, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
