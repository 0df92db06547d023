"""The blocked engine's step split into its two kernels, against their traffic and their
shared-memory atomics.

For R-MAT graphs built on the GPU (float32 messages unless ``--dtype``): the scatter
kernel and the gather kernel of one power step, each timed by CUDA events over repeated
launches, and the whole step (both); the bytes each moves by the traffic model (scatter:
2 bytes read and one message written per link, the chunk windows read; gather: 2 bytes
and one message read per link, 32 bytes per row) and the rate that gives; the
fixed-point messages' share that needs the sums' high word (an estimate:
``min(1, |q| / 2**32)`` per message, ``q`` the message scaled by ``2**bits / B``); then a
whole blocked solve to ``tol=1e-10`` and its L1 distance to a float64 pull solve to
``1e-12``.

    python benchmarks/gpu/blocked_phases.py [--scales 24 26] [--repeats 20]
        [--plan chunk_bits=14] [--plan part_rows=6144] [--out FILE.json]

``--plan`` times the two kernels again on other layouts of the same graph (smaller
blocks: fewer entries in each (chunk, partition) block).

Prints one line per graph and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
from gpu_graphs import device_graph

#: the gather's fixed-point scale, 2**SUM_BITS / B (kernels/cuda_blocked.py)
SUM_BITS = 62


def _event_ms(fn: Any, repeats: int) -> float:
    """Median milliseconds of ``fn()`` (kernel launches) by CUDA events."""
    import cupy as cp

    times = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def _high_word_share(msg: Any, bits: int, l1: float) -> float:
    """Expected share of messages whose fixed-point add needs the high word."""
    import cupy as cp

    total, m, step = 0.0, int(msg.size), 1 << 26
    for a in range(0, m, step):
        q = cp.abs(msg[a:a + step].astype(cp.float64)) * (2.0 ** bits / l1)
        total += float(cp.minimum(q / 2.0 ** 32, 1.0).sum())
    return total / max(m, 1)


def kernel_times(g: Any, dtype: str, repeats: int, plan: dict[str, int] | None = None
                 ) -> dict[str, Any]:
    """The step, scatter and gather of the blocked layout of ``g`` (its plan's
    ``part_rows`` / ``chunk_bits`` as given, else the engine's defaults), timed apart."""
    import cupy as cp

    from webrank.backends import gpu_arrays, make_operator
    from webrank.backends.options import EngineOptions
    from webrank.kernels import cuda_blocked as kb

    n = g.n
    options = EngineOptions.from_call("blocked", plan or None).for_device("gpu", dtype)
    op = make_operator(g, device="gpu", alpha=0.85, personalization=None, dangling=None,
                       dtype=dtype, options=options)
    op.prepare_steps()
    run = op._step
    bs, mat = run.blocked, run.matrix
    chunk = cp.zeros(1, dtype=np.uint64)
    bs.bind(v=mat.v, d=mat.d, uniform_v=mat.uniform_v, uniform_d=mat.uniform_d,
            inv_out=mat.inv_out, alpha=0.85, inv_n=1.0 / n, crit=0, tol_cmp=-1.0,
            chunk=chunk)
    x = gpu_arrays.full(n, 1.0 / n)
    xs = run.gather_vector(x)
    l1 = 1.0  # the L1 norm of x, which the gather's scale divides by (acc_prev[3])
    acc_prev = cp.asarray([1.0, 0.1, 1.0, l1])
    acc_out = cp.zeros(4)
    x_out, xs_out = cp.empty(n), cp.empty(n, dtype=dtype)
    window = {"step0": 0, "chunk_len": 1, "max_steps": 1 << 40}

    def step() -> None:
        bs.launch(xs_in=xs, x_in=x, acc_prev=acc_prev, acc_out=acc_out, mode=0,
                  x_out=x_out, xs_out=xs_out, **window)

    def scatter() -> None:
        bs.scatter((bs.scatter_grid,), (kb.BLOCK,), bs._scatter_args.pack(
            xs=xs, acc_prev=acc_prev, **window), shared_mem=bs.scatter_smem)

    def gather() -> None:
        bs.gather((max(bs.layout.num_parts, 1),), (kb.BLOCK,), bs._gather_args.pack(
            x=x, acc_prev=acc_prev, acc_out=acc_out, mode=0, x_out=x_out, xs_out=xs_out,
            **window), shared_mem=bs.gather_smem)

    for fn in (step, scatter, gather):
        fn()
    cp.cuda.Device().synchronize()
    t_step, t_scatter, t_gather = (_event_ms(fn, repeats) for fn in (step, scatter, gather))
    item = np.dtype(dtype).itemsize
    m = bs.layout.num_entries
    windows = bs.layout.num_tiles * (1 << bs.layout.plan.chunk_bits) * item
    scatter_bytes = m * (2 + item) + windows
    gather_bytes = m * (2 + item) + 32 * n
    bits = SUM_BITS
    L = bs.layout
    return {"plan": plan or {}, "parts": L.num_parts, "chunks": L.num_chunks,
            "entries_per_block": m / max(L.num_parts * L.num_chunks, 1),
            "step_ms": t_step, "scatter_ms": t_scatter, "gather_ms": t_gather,
            "scatter_GBps": scatter_bytes / t_scatter / 1e6,
            "gather_GBps": gather_bytes / t_gather / 1e6,
            "gather_G_messages_per_s": m / t_gather / 1e6,
            "model_ms_at_2.89TBps": (scatter_bytes + gather_bytes) / 2.89e9,
            "sum_bits": bits, "high_word_share": _high_word_share(bs.msg[:m], bits, l1)}


def phases(scale: int, dtype: str, repeats: int, plans: list[dict[str, int]]
           ) -> dict[str, Any]:
    import cupy as cp

    import webrank

    g = device_graph("rmat", scale)
    times = kernel_times(g, dtype, repeats)
    cp.get_default_memory_pool().free_all_blocks()
    for plan in plans:  # the same kernels on smaller blocks
        other = kernel_times(g, dtype, repeats, plan)
        cp.get_default_memory_pool().free_all_blocks()
        times.setdefault("other_plans", []).append(other)
        print(f"rmat-{scale} {plan}: {other['entries_per_block']:.0f} entries a block, "
              f"scatter {other['scatter_ms']:.3f} ms, gather {other['gather_ms']:.3f} ms "
              f"({other['gather_G_messages_per_s']:.0f} G msg/s)", flush=True)
    kw = {"device": "gpu", "tol": 1e-10}
    webrank.pagerank(g, engine="blocked", dtype=dtype, **kw)  # warm
    r = webrank.pagerank(g, engine="blocked", dtype=dtype, **kw)
    ref = webrank.pagerank(g, engine="pull", dtype="float64", device="gpu", tol=1e-12)
    err = float(np.abs(r.scores - ref.scores).sum())
    out = {
        "graph": f"rmat-{scale}", "nodes": g.n, "links": g.num_edges, "dtype": dtype,
        **times, "solve_ms": 1e3 * r.elapsed, "iterations": r.iterations,
        "solve_ms_per_step": 1e3 * r.elapsed / max(r.iterations, 1),
        "l1_error_vs_float64": err,
    }
    print(f"rmat-{scale} {dtype}: step {out['step_ms']:.3f} ms = scatter "
          f"{out['scatter_ms']:.3f} ({out['scatter_GBps']:.0f} GB/s) + gather "
          f"{out['gather_ms']:.3f} ({out['gather_GBps']:.0f} GB/s, "
          f"{out['gather_G_messages_per_s']:.0f} G msg/s, {out['entries_per_block']:.0f} "
          f"entries a block); model "
          f"{out['model_ms_at_2.89TBps']:.3f} ms; bits {out['sum_bits']}, high word "
          f"{100 * out['high_word_share']:.1f}%; solve {out['solve_ms']:.1f} ms / "
          f"{r.iterations} it "
          f"({out['solve_ms_per_step']:.3f} ms a step), L1 error {err:.2e}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scales", type=int, nargs="+", default=[24, 26])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--plan", action="append", default=[], metavar="NAME=VALUE,...",
                    help="also time the kernels on this plan (part_rows, chunk_bits)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    plans = [{k: int(v) for k, v in (kv.split("=") for kv in p.split(","))}
             for p in args.plan]
    rows = [phases(s, args.dtype, args.repeats, plans) for s in args.scales]
    if args.out:
        from webrank.bench.env import environment

        args.out.write_text(json.dumps({"environment": environment(), "rows": rows},
                                       indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
