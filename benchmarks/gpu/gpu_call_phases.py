"""Where a warm whole GPU ``pagerank`` call spends its time outside the solve.

For each graph (real graphs read from the host; R-MAT and web-like graphs generated and
built on the GPU), the median of repeated ``webrank.pagerank(g, device="gpu",
dtype=DTYPE, tol=1e-10)`` calls with the graph on the device, split into phases by
timers wrapped around the call's steps (each phase ends with a device synchronisation):
argument checks, the operator, the start vector, the solve, the normalisation, the copy
of the scores to the host and the result. Then the floors of the copy back (one n-vector
of float64): into a new NumPy array (pageable, its pages touched for the first time),
into a reused pageable array, into a reused pinned buffer, the pinned copy followed
by a host copy into a new array, the staged copy (``gpu_arrays.download``) into a
reused and into a new array, and the parts of a landing (a new array page-locked,
the copy into it, the unlock). A cProfile of one call lists the Python functions that
take the most time of their own.

    python benchmarks/gpu/gpu_call_phases.py [--graphs rmat-22 rmat-24 cnr-2000 ...]
                                         [--data DIR] [--repeats 15] [--out FILE.json]

Prints the phases and writes JSON to ``--out``; ``bash benchmarks/gpu_host/run.sh
call_phases`` runs two trees alternated (published:
``benchmarks/results/gpu/h100/whole_call/call_phases_*``).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from gpu_graphs import device_graph

DEFAULT_GRAPHS = ("cnr-2000", "web-NotreDame", "rmat-22", "rmat-24", "rmat-26")


def _graph(label: str, data: Path):
    """A real graph read from ``data``, or ``rmat-S`` / ``web-crawl-S`` built on the GPU."""
    import webrank

    if label.startswith("rmat-"):
        return device_graph("rmat", int(label.rsplit("-", 1)[1]))
    if label.startswith("web-crawl-"):
        return device_graph("web", int(label.rsplit("-", 1)[1]))
    return webrank.load(data / f"{label}.txt.gz")


class PhaseTimer:
    """Wall time per phase of the calls made while installed (each phase synchronised)."""

    def __init__(self) -> None:
        import cupy as cp

        self.sync = cp.cuda.Device().synchronize
        self.times: dict[str, float] = {}

    def wrap(self, name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            self.sync()
            self.times[name] = self.times.get(name, 0.0) + time.perf_counter() - t0
            return out
        return timed


def _install(timer: PhaseTimer) -> None:
    """Wrap the steps of ``webrank.ranking.pagerank`` in ``timer`` (module globals and
    the operator's methods)."""
    import dataclasses

    from webrank import ranking

    for name in ("check_scalar_args", "prepare_graph", "as_distribution", "PageRankResult",
                 "merged_info"):
        setattr(ranking, name, timer.wrap(name, getattr(ranking, name)))
    make_operator = ranking.make_operator

    def operator(*args: Any, **kwargs: Any) -> Any:
        op = make_operator(*args, **kwargs)
        for name in ("full", "prepare_steps", "normalized"):
            setattr(op, name, timer.wrap(name, getattr(op, name)))
        # the copy of the scores (scores_to_host, or to_host in older trees)
        copy = "scores_to_host" if hasattr(op, "scores_to_host") else "to_host"
        setattr(op, copy, timer.wrap("to_host", getattr(op, copy)))
        return op

    ranking.make_operator = timer.wrap("make_operator", operator)
    spec_of = ranking.solver_spec

    def solver_spec(method: str) -> Any:
        spec = spec_of(method)
        return dataclasses.replace(spec, solve=timer.wrap("solve", spec.solve))

    ranking.solver_spec = solver_spec


def call_phases(g: Any, dtype: str, repeats: int) -> dict[str, Any]:
    import cupy as cp

    import webrank

    kw = {"device": "gpu", "dtype": dtype, "tol": 1e-10}
    r = webrank.pagerank(g, **kw)  # kernels loaded, caches of the graph made
    sync = cp.cuda.Device().synchronize
    totals, solves = [], []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        r = webrank.pagerank(g, **kw)
        totals.append(time.perf_counter() - t0)
        solves.append(r.elapsed)
    timer = PhaseTimer()
    from webrank import ranking

    saved = dict(vars(ranking))
    _install(timer)
    phases = []
    try:
        for _ in range(repeats):
            timer.times = {}
            sync()
            t0 = time.perf_counter()
            webrank.pagerank(g, **kw)
            total = time.perf_counter() - t0
            phases.append({**timer.times, "rest": total - sum(timer.times.values()),
                           "total": total})
        prof = cProfile.Profile()
        prof.enable()
        webrank.pagerank(g, **kw)
        prof.disable()
    finally:
        vars(ranking).update(saved)
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
    names = {k for p in phases for k in p}
    median = {k: 1e3 * statistics.median(p.get(k, 0.0) for p in phases) for k in sorted(names)}
    return {"engine": r.info.get("engine"), "iterations": r.iterations,
            "whole_call_ms": 1e3 * statistics.median(totals),
            "solve_ms": 1e3 * statistics.median(solves), "setup_ms": 1e3 * r.setup_time,
            # each call's whole time over its own solve: the host's drift between calls
            # (solves of one graph vary by 10% here) stays out of the ratio
            "whole_over_solve": statistics.median(t / s for t, s in zip(totals, solves,
                                                                         strict=True)),
            "phases_ms_timed_run": median, "profile": text.getvalue().splitlines()[:60]}


def copy_floors(n: int, repeats: int = 15) -> dict[str, float]:
    """Milliseconds to bring one n-vector of float64 to the host, four ways (six where
    the tree has the staged copy)."""
    import cupy as cp

    x = cp.ones(n, dtype=np.float64)
    reused = np.empty(n)
    reused[:] = 0.0
    pinned_mem = cp.cuda.alloc_pinned_memory(8 * n)
    pinned = np.frombuffer(pinned_mem, np.float64, n)
    sync = cp.cuda.Device().synchronize

    def new_pageable():
        return x.get()

    def reused_pageable():
        return x.get(out=reused)

    def reused_pinned():
        return x.get(out=pinned)

    def pinned_then_copy():
        x.get(out=pinned)
        return pinned.copy()

    ways = [("new_pageable", new_pageable), ("reused_pageable", reused_pageable),
            ("reused_pinned", reused_pinned), ("pinned_then_host_copy", pinned_then_copy)]
    try:  # the staged copy of a landing (two page-locked slices, all host threads)
        from webrank.backends.gpu_arrays import download

        ways.append(("staged_reused", lambda: download(x, reused)))
        ways.append(("staged_new", lambda: download(x, np.empty(n))))
    except ImportError:  # a tree before the staged copy
        pass
    out = {}
    for name, fn in ways:
        fn()
        ts = []
        for _ in range(repeats):
            sync()
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        out[name] = 1e3 * statistics.median(ts)
    # what HostLanding does: a new array page-locked (its pages faulted in by the lock),
    # the copy, the unlock; each part timed alone
    parts: dict[str, list[float]] = {"lock_new_array": [], "copy_locked": [], "unlock": []}
    for _ in range(repeats):
        host = np.empty(n)
        t0 = time.perf_counter()
        cp.cuda.runtime.hostRegister(host.ctypes.data, host.nbytes, 0)
        t1 = time.perf_counter()
        x.get(out=host)
        t2 = time.perf_counter()
        cp.cuda.runtime.hostUnregister(host.ctypes.data)
        t3 = time.perf_counter()
        for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            parts[k].append(v)
    out.update({k: 1e3 * statistics.median(v) for k, v in parts.items()})
    out["bytes"] = 8 * n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", nargs="+", default=list(DEFAULT_GRAPHS))
    ap.add_argument("--data", type=Path, default=Path(".device_data"))
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    import cupy as cp

    from webrank.bench.env import environment, write_json

    rows = []
    for label in args.graphs:
        try:
            g = _graph(label, args.data)
            row = {"graph": label, "n": g.n, "edges": g.num_edges,
                   **call_phases(g, args.dtype, args.repeats),
                   "copy_floor_ms": copy_floors(g.n)}
        except Exception as exc:  # the other graphs still run
            print(f"{label}: {type(exc).__name__}: {exc}", flush=True)
            continue
        rows.append(row)
        ph = row["phases_ms_timed_run"]
        print(f"{label}: n {g.n:,} links {g.num_edges:,} {row['engine']} it {row['iterations']}: "
              f"whole {row['whole_call_ms']:.2f} ms, solve {row['solve_ms']:.2f} "
              f"({row['whole_over_solve']:.2f}x); phases "
              + ", ".join(f"{k} {v:.2f}" for k, v in ph.items()), flush=True)
        print("   copy floors ms: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                 row["copy_floor_ms"].items() if k != "bytes"))
        print("\n".join("   " + line for line in row["profile"][6:30]))
        del g
        cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        write_json({"environment": environment(), "dtype": args.dtype, "rows": rows}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
