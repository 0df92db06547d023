"""Which GPU engine wins on graphs in crawl order and on R-MAT: the data behind the rule of
``engine="auto"``.

    python benchmarks/gpu/gpu_engine_choice.py [--rmat 20,22,24] [--web 20,22,24]
                                           [--real FILE ...] [--out FILE]

Graphs: R-MAT (ids in random order, generated and built on the GPU), web-like graphs in
crawl order (``webrank.generate.web_crawl``: power-law degrees, 90% of the links to nearby
ids; generated and built on the GPU) and real graphs. For each: the share of
links within 2**15 ids of their target (``link_locality``), then for the pull, blocked and
``auto`` engines the marginal milliseconds of a step (runs of 10 and 40 steps) and the
whole call to 1e-10 (median of three, the graph on the device, float32 gathers, alpha
0.85), auto's choice and its reason. Appends one JSON record (machine, GPU, commit, date)
to ``--out``; ``bash benchmarks/gpu_host/run.sh engine_choice`` runs it (published:
``benchmarks/results/gpu/h100/engine_choice/``).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from gpu_graphs import device_graph, timed

ALPHA, TOL = 0.85, 1e-10
ENGINES = ("pull", "blocked", "auto")


def _graph(family: str, spec: Any) -> Any:
    import webrank

    if family == "real":
        return webrank.load(spec).to_device()
    return device_graph(family, int(spec))


def measure(family: str, spec: Any) -> dict[str, Any]:
    import cupy as cp

    import webrank
    from webrank.backends.gpu_engines import link_locality

    t0 = time.perf_counter()
    g = _graph(family, spec)
    row: dict[str, Any] = {"family": family, "graph": str(spec), "n": g.n,
                           "edges": g.num_edges, "build_s": time.perf_counter() - t0,
                           "locality": link_locality(g)}
    for engine in ENGINES:
        kw = {"device": "gpu", "dtype": "float32", "alpha": ALPHA, "engine": engine}

        def steps(k: int, g: Any = g, kw: dict[str, Any] = kw) -> Any:
            return webrank.pagerank(g, tol=1e-300, max_iter=k, raise_on_nonconvergence=False,
                                    **kw)

        steps(2)  # layouts built, kernels loaded
        _, t10 = timed(lambda: steps(10))
        _, t40 = timed(lambda: steps(40))
        r, whole = timed(lambda g=g, kw=kw: webrank.pagerank(g, tol=TOL, **kw))
        row[engine] = {"step_ms": 1e3 * (t40 - t10) / 30, "whole_ms": 1e3 * whole,
                       "solve_ms": 1e3 * r.elapsed, "iterations": r.iterations,
                       "engine": r.info.get("engine"), "reason": r.info.get("engine_reason")}
    best = min(row[e]["whole_ms"] for e in ("pull", "blocked"))
    row["auto_over_best"] = row["auto"]["whole_ms"] / best
    print(json.dumps(row, default=str), flush=True)
    del g
    cp.get_default_memory_pool().free_all_blocks()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rmat", default="20,22,24")
    ap.add_argument("--web", default="20,22,24")
    ap.add_argument("--real", nargs="*", default=[])
    ap.add_argument("--out", default="gpu_engine_choice.jsonl")
    args = ap.parse_args()
    from webrank.bench.env import environment

    rows = [measure("real", f) for f in args.real]
    rows += [measure("web", s) for s in args.web.split(",") if s]
    rows += [measure("rmat", s) for s in args.rmat.split(",") if s]
    with open(args.out, "a") as f:
        f.write(json.dumps({"environment": environment(), "rows": rows}, default=str) + "\n")
    for r in rows:
        print(f"{r['family']:5} {r['graph']:28} locality {r['locality']:.3f} "
              + " ".join(f"{e} {r[e]['step_ms']:.3f}/{r[e]['whole_ms']:.1f}" for e in ENGINES)
              + f" auto={r['auto']['engine']} {r['auto_over_best']:.2f}x")


if __name__ == "__main__":
    main()
