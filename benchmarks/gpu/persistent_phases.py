"""The persistent kernel's step, phase by phase: what each costs, left out in turn.

For each graph and heavy-row threshold, the persistent engine's kernel launched on its
own for a fixed number of steps (no convergence test), four ways: as it runs; without
the split rows' phase (no segments: that phase and its barrier left out); without the
row pass's rows (every warp's range empty: the pass is its block sums and barrier); and
with neither (the barriers and block sums alone). Differences give each phase's time.
The answers of the cut launches are wrong by design; only their times are kept.
``--block-threads 256 1024``: the same kernel built for blocks of that many threads
(``kernels.solve_source``), as many warps in all (1024 threads a multiprocessor): more
or fewer arrivals at each grid-wide barrier, more or fewer block sums. Blocks of 1024
stage float32 values only (static shared memory).

    python benchmarks/gpu/persistent_phases.py [--graphs cnr-2000 web-NotreDame]
        [--thresholds 32 64] [--row-costs 2 8] [--block-threads 256 512 1024]
        [--steps 116] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
from typing import Any

import numpy as np
from gpu_graphs import graph_by_name

from webrank.bench.env import environment, write_json


def block_variant(op: Any, threads: int) -> tuple[Any, int]:
    """The persistent kernel of ``op`` built for blocks of ``threads`` threads, and its
    grid: as many blocks a multiprocessor as fit, at most 1024 threads' worth."""
    import cupy as cp

    from webrank.kernels import cuda as kernels
    from webrank.kernels.cuda_common import compiled_kernel

    if threads == kernels.SOLVE_BLOCK:
        return op._solve, op._solve_grid
    source = kernels.solve_source(threads)
    g = op.graph
    kernel = compiled_kernel(source, kernels.solve_kernel_name(
        g.indptr.dtype.name, g.indices.dtype.name, op.dtype.name, op._weighted),
        cooperative=True)
    per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
        kernel.kernel.ptr, threads, 0)
    return kernel, int(min(per_sm, 1024 // threads) * op._sms)


def phase_times(g: Any, threshold: int, steps: int, row_cost: int | None = None,
                threads: int | None = None, repeats: int = 7) -> dict[str, float]:
    """Microseconds a step of each of the four launches (CUDA events, median), the
    warps' rows shared with ``row_cost`` (None: STAGED_ROW_COST's default), blocks of
    ``threads`` threads (None: the engine's)."""
    import cupy as cp

    from webrank.backends import EngineOptions, make_operator
    from webrank.backends import gpu as gpu_backend
    from webrank.kernels import cuda as kernels
    from webrank.kernels.cuda_common import ACC_WIDTH

    if row_cost is not None:
        gpu_backend.STAGED_ROW_COST = row_cost
    op = make_operator(g, device="gpu", alpha=0.85, personalization=None, dangling=None,
                       dtype="float32", options=EngineOptions.from_call(
                           "persistent", {"heavy_threshold": threshold}))
    pull, staged = op._pull, op._staged
    threads = threads or kernels.SOLVE_BLOCK
    kernel, grid = block_variant(op, threads)
    if grid * threads // 32 != op._nwarps:
        raise SystemExit(f"blocks of {threads}: {grid} fit, not {op._nwarps} warps")
    h = pull.heavy
    n = op.n
    x = cp.full(n, 1.0 / n)
    xb = cp.empty_like(x)
    xs = pull.gather_vector(x)
    xsb = cp.empty_like(xs)
    hist = cp.zeros((steps + 2, kernels.SLOTS, ACC_WIDTH))
    tested = cp.zeros(steps + 2)
    no_rows = cp.zeros_like(staged["warp_rows"])
    out = {}
    for name, nseg, warp_rows in (("whole", pull.nseg, staged["warp_rows"]),
                                  ("no_split_rows", 0, staged["warp_rows"]),
                                  ("no_rows", pull.nseg, no_rows),
                                  ("barriers_and_sums", 0, no_rows)):
        args = kernels.PULL_SOLVE.pack(
            n=n, indptr=op._g["indptr"], indices=pull.gather_indices, vals=op._vals,
            light_indptr=staged["indptr"], light_indices=staged["indices"],
            light_vals=staged["vals"], x_a=x, x_b=xb, xs_a=xs, xs_b=xsb, v=op._v, d=op._d,
            uniform_v=op.uniform_v, uniform_d=op.uniform_d, inv_out=op._inv_out,
            alpha=op.alpha, nseg=nseg, seg_row=h["seg_row"], seg_begin=h["begin"],
            seg_end=h["end"], heavy_threshold=pull.threshold, heavy_sum=pull.heavy_sum,
            permuted=False, xs_pos=pull.xs_pos, warp_rows=warp_rows, nwarps=op._nwarps,
            hist=hist, residuals=tested, s_first=1, s_last=steps, delta=0, crit=0,
            tol_cmp=-1.0, start=0, x0=x, last_launch=0, partials=op._partials)
        times = []
        for _ in range(repeats + 1):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            kernel((grid,), (threads,), args)
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b))
        out[name] = 1e3 * statistics.median(times[1:]) / steps
    out["split_rows_phase"] = out["whole"] - out["no_split_rows"]
    out["row_pass"] = out["whole"] - out["no_rows"]
    out["segments"] = int(pull.nseg)
    return out


def phase_row(g: Any, name: str, threshold: int, cost: int | None, threads: int | None,
              steps: int) -> dict:
    """One graph and setting's :func:`phase_times`, printed, as a JSON row."""
    t = phase_times(g, threshold, steps, cost, threads)
    print(f"{name} threshold {threshold} row cost {cost} blocks of {threads}: " + ", ".join(
        f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items())
        + " (us a step)", flush=True)
    return {"graph": name, "threshold": threshold, "row_cost": cost,
            "block_threads": threads, **t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "web-NotreDame"])
    ap.add_argument("--data", default=os.environ.get("WEBRANK_DATASETS", "."))
    ap.add_argument("--thresholds", nargs="+", type=int, default=[32, 64])
    ap.add_argument("--steps", type=int, default=116)
    ap.add_argument("--row-costs", nargs="+", type=int, default=[None])
    ap.add_argument("--block-threads", nargs="+", type=int, default=[None])
    ap.add_argument("--out", default="persistent_phases.json")
    args = ap.parse_args()
    rows = []
    for name in args.graphs:
        g = graph_by_name(name, args.data)
        rows += [phase_row(g, name, threshold, cost, threads, args.steps)
                 for threshold, cost, threads in itertools.product(
                     args.thresholds, args.row_costs, args.block_threads)]
        del g
    write_json({"environment": environment(), "steps": args.steps, "rows": rows}, args.out)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
