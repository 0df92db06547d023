"""Suite ``dense``: Swaroop's and Ghadge et al.'s dense power iteration against
webrank's sparse one.

Swaroop and Ghadge et al. store the Google matrix as a dense n x n float array and multiply it by
the rank vector each iteration (O(n²) per step), serially in C++ and with one CUDA thread
per row; they report time against the number of nodes (100 to 30,000) and the speed-up
of the GPU over the serial loop. Here, on the same random graphs:

* **dense CPU**: ``G @ x`` with NumPy (BLAS gemv) on one thread (threadpoolctl), the
  reports' algorithm: ``x <- G x`` until the L1 change is below 1e-6, at most 1000 steps;
* **dense GPU**: the same loop with CuPy (cuBLAS gemv);
* **webrank CPU / GPU**: ``webrank.pagerank`` (sparse, matrix-free) to the same L1 tol.

``G = alpha P + (1 - alpha)/n e e^T`` with dangling columns replaced by 1/n (Swaroop
§3), built densely from the graph. It is float64 up to 10,000 nodes and float32 above
(the reports' own type; 30,000² float64 would be 7.2 GB), and a size whose matrix does not
fit in half the free memory is skipped. The graphs are scale-free (Bollobás et al., as
networkx's ``scale_free_graph``, about 2.2 links per node), seeded by size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.bench.runner import BenchContext, fmt_time, fmt_timing, stderr_progress

TITLE = "dense n×n power iteration (Swaroop and Ghadge et al.) vs webrank's sparse solver"
BACKGROUND = """
Swaroop and Ghadge et al. (dense float matrix, C++ triple loop vs one CUDA thread per row, eps
1e-6, at most 1000 iterations). Ghadge et al.'s table, times in µs as printed (5,000 and 10,000
are files of 4,772 and 9,664 nodes):

| nodes | serial | parallel | speed-up |
|---|---|---|---|
| 400 | 3462 | 936 | 3.69 |
| 1000 | 2972898 | 104831 | 28.35 |
| 5000 | 69266776 | 816446 | 84.83 |
| 10000 | 68519880 | 755148 | 90.73 |
| 15000 | 565920000 (9m28s) | 3680000 (4.6 s) | 113.28 |
| 20000 | 577800000 (16m57s) | 6550000 (8.2 s) | 120.21 |
| 30000 | 1334400000 (37m14s) | 6120000 (17.5 s) | 130.58 |

Swaroop's table goes from a slow-down (0.68x at 100 nodes) to 90.73x at 10,000 and
42.28x at 16,000, and notes "no trend with respect to number of nodes ... performance
also depends on how nodes are connected". Both check that the serial and parallel runs
give the same top-3 nodes.
"""

ALPHA = 0.85
TOL = 1e-6  # the reports' eps (L1 change)
MAX_ITER = 1000  # the reports' max_iter
SIZES = (100, 200, 400, 800, 1000, 2000, 5000, 10000, 15000, 20000, 30000)
QUICK_SIZES = (100, 200, 400, 1000)
FLOAT64_UP_TO = 10_000
#: skip a dense size whose predicted time (warm-up plus repeats) exceeds this
BUDGET_S = 600.0
#: block sizes of the threads-per-block sweep (Swaroop §6.2), at SWEEP_SIZE nodes
THREADS_PER_BLOCK = (8, 16, 32, 64, 128, 256, 512, 1024)
SWEEP_SIZE = 10_000
#: Swaroop §6.2, 9,664 nodes: threads per block -> seconds of its CUDA run
SEED_001_SWEEP = {8: 0.950401, 16: 0.839092, 32: 0.752572, 64: 0.759962, 128: 0.868481,
                  256: 0.900917, 512: 2.052449, 1024: 3.698519}
#: Ghadge et al.'s table: nodes -> (serial, parallel) seconds
SEED_004 = {400: (3462e-6, 936e-6), 1000: (2.972898, 0.104831), 5000: (69.266776, 0.816446),
            10000: (68.51988, 0.755148), 15000: (565.92, 3.68), 20000: (577.8, 6.55),
            30000: (1334.4, 6.12)}


def dense_google(g: Any, alpha: float, dtype: Any) -> np.ndarray:
    """The dense Google matrix ``G[i, j]`` (column j = where page j's surfer goes next).

    ``alpha / outdeg(j)`` for each link j -> i, ``alpha / n`` down a dangling column, plus
    ``(1 - alpha) / n`` everywhere: column-stochastic, as Swaroop §3 defines it.
    """
    n = g.n
    mat = np.full((n, n), (1.0 - alpha) / n, dtype=dtype)
    src, dst, _ = g.edges()  # webrank keeps one edge per (src, dst) pair
    out = np.asarray(g.out_weight, dtype=np.float64)
    if g.weights is None:
        mat[dst, src] += (alpha / out[src]).astype(dtype)
    else:
        mat[dst, src] += (alpha * g.weights / out[src]).astype(dtype)
    dang = np.flatnonzero(g.dangling_mask)
    if dang.size:
        mat[:, dang] += np.dtype(dtype).type(alpha / n)
    return mat


def dense_power(xp: Any, mat: Any, tol: float = TOL, max_iter: int = MAX_ITER,
                matvec: Any = None) -> tuple[Any, int]:
    """Swaroop's and Ghadge et al.'s loop: ``x <- G x`` until ``||x_k - x_{k-1}||_1 < tol``.

    ``xp`` is NumPy or CuPy (``mat`` lives there); ``matvec(x)`` is the product
    (default ``mat @ x``: BLAS / cuBLAS gemv). Returns ``(x, iterations)``.
    """
    n = mat.shape[0]
    x = xp.full(n, 1.0 / n, dtype=mat.dtype)
    product = matvec if matvec is not None else mat.__matmul__
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        y = product(x)
        err = float(xp.abs(y - x).sum())
        x = y
        if err < tol:
            break
    return x, it


def row_kernel_matvec(stored: Any, column_major: bool, threads_per_block: int) -> Any:
    """The reports' product on the GPU (:mod:`webrank.kernels.cuda_dense`): one thread
    per row, ``threads_per_block`` threads a block. ``stored`` is the CuPy matrix ``G``
    (row-major), or ``G`` transposed into a C-contiguous array for ``column_major``."""
    import cupy as cp

    from webrank.kernels.cuda_dense import get_kernel

    n = stored.shape[0]
    kernel = get_kernel(stored.dtype.name, column_major)
    grid = (-(-n // threads_per_block),)

    def matvec(x: Any) -> Any:
        y = cp.empty_like(x)
        kernel(grid, (threads_per_block,), (np.int64(n), stored, x, y))
        return y

    return matvec


def _top3(x: Any) -> list[int]:
    x = np.asarray(x, dtype=np.float64)
    return [int(i) for i in np.lexsort((np.arange(x.size), -x))[:3]]


def _one_blas_thread(ctx: BenchContext) -> Any:
    """A context limiting BLAS to one thread (the reports' serial baseline)."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        ctx.note("threadpoolctl is not installed: the dense CPU loop used BLAS's default "
                 "thread count, not one thread.")
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def run(ctx: BenchContext) -> None:
    """Time the dense and sparse solvers at every size (see module docstring)."""
    import webrank
    from webrank.bench.env import available_memory
    from webrank.generate import generate

    sizes = QUICK_SIZES if ctx.quick else SIZES
    rows: list[dict[str, Any]] = []
    # device -> (n, seconds per dense step, steps) of the last size measured
    per_step: dict[str, tuple[int, float, int]] = {}
    for n in sizes:
        stderr_progress(f"dense: {n} nodes")
        src, dst, _ = generate("scale-free", n, seed=n)
        g = webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
        dtype = np.float64 if n <= FLOAT64_UP_TO else np.float32
        params = {"nodes": n, "edges": g.num_edges, "alpha": ALPHA, "tol": TOL,
                  "criterion": "l1", "graph": "scale-free"}
        row: dict[str, Any] = {"n": n, "edges": g.num_edges,
                               "dtype": np.dtype(dtype).name}
        nbytes = n * n * np.dtype(dtype).itemsize
        free = available_memory()
        mat = None
        if free is not None and 2 * nbytes > free:
            ctx.skip(f"dense, {n} nodes", f"the {nbytes / 1e9:.1f} GB matrix does not fit "
                                          f"in half the {free / 1e9:.1f} GB free")
        else:
            mat, t = ctx.time(lambda d=dtype, g=g: dense_google(g, ALPHA, d), repeats=1)
            ctx.record("dense build", t, params={**params, "dtype": row["dtype"]},
                       metrics={"bytes": nbytes})
        for device in ctx.devices:
            if mat is not None:
                _dense_on(ctx, device, mat, n, params, row, per_step)
            r, t = ctx.time(lambda d=device, g=g: webrank.pagerank(
                g, alpha=ALPHA, tol=TOL, max_iter=MAX_ITER, device=d), device=device)
            m = ctx.record(f"webrank {device}", t, device=device, params=params,
                           metrics={"iterations": r.iterations, "top3": _top3(r.scores)})
            row[f"webrank_{device}"] = m
        del mat
        rows.append(row)
    _report(ctx, rows)


def _dense_on(ctx: BenchContext, device: str, mat: np.ndarray, n: int,
              params: dict[str, Any], row: dict[str, Any],
              per_step: dict[str, tuple[int, float, int]]) -> None:
    """Time the dense loop on ``device`` unless it would blow the budget or the memory."""
    what = f"dense {device}, {n} nodes"
    if device in per_step:  # predict from the last size: O(n²) per step
        n0, s0, it0 = per_step[device]
        once = s0 * (n / n0) ** 2 * it0
        predicted = once * (1 + _timed_calls(ctx, once))
        if predicted > BUDGET_S:
            ctx.skip(what, f"predicted {predicted / 60:.0f} min (over {BUDGET_S / 60:.0f} "
                           "min)")
            return
    if device == "gpu":
        import cupy as cp

        free = cp.cuda.Device().mem_info[0]
        if 1.2 * mat.nbytes > free:
            ctx.skip(what, f"the {mat.nbytes / 1e9:.1f} GB matrix does not fit in the "
                           f"{free / 1e9:.1f} GB free on the GPU")
            return
        dmat = cp.asarray(mat)
        (x, it), t = ctx.time(lambda: dense_power(cp, dmat), device="gpu")
        x = cp.asnumpy(x)
        _row_kernels(ctx, dmat, n, params, row)
        del dmat
    else:
        with _one_blas_thread(ctx):
            (x, it), t = ctx.time(lambda: dense_power(np, mat))
    m = ctx.record(f"dense {device}", t, device=device,
                   params={**params, "dtype": str(mat.dtype)},
                   metrics={"iterations": it, "top3": _top3(x)})
    per_step[device] = (n, m["median"] / max(it, 1), it)
    row[f"dense_{device}"] = m


def _row_kernels(ctx: BenchContext, dmat: Any, n: int, params: dict[str, Any],
                 row: dict[str, Any]) -> None:
    """The reports' one-thread-per-row kernel in both layouts at their 32 threads a block
    (at :data:`SWEEP_SIZE` nodes: every block size of :data:`THREADS_PER_BLOCK`)."""
    import cupy as cp

    sweep_at = QUICK_SIZES[-1] if ctx.quick else SWEEP_SIZE
    sweep = THREADS_PER_BLOCK if n == sweep_at else (32,)
    for column_major in (False, True):
        layout = "column-major" if column_major else "row-major"
        stored = cp.ascontiguousarray(dmat.T) if column_major else dmat
        for tpb in sweep:
            matvec = row_kernel_matvec(stored, column_major, tpb)
            (x, it), t = ctx.time(lambda mv=matvec: dense_power(cp, dmat, matvec=mv),
                                  device="gpu")
            m = ctx.record(f"row kernel {layout} {tpb}", t, device="gpu",
                           params={**params, "dtype": str(dmat.dtype), "layout": layout,
                                   "threads_per_block": tpb},
                           metrics={"iterations": it, "top3": _top3(cp.asnumpy(x))})
            row.setdefault("row_kernel", {})[(layout, tpb)] = m
        del stored


def _timed_calls(ctx: BenchContext, seconds: float) -> int:
    """Timed calls :meth:`BenchContext.time` makes after a warm-up of ``seconds``."""
    from webrank.bench.runner import LONG_RUN_S, VERY_LONG_RUN_S

    if seconds > VERY_LONG_RUN_S:
        return 0
    return 1 if seconds > LONG_RUN_S else ctx.repeats


def _ratio(a: dict | None, b: dict | None) -> str:
    """How many times faster ``b`` is than ``a`` ("–" when either is missing)."""
    if a is None or b is None:
        return "–"
    return f"{a['median'] / b['median']:.3g}x"


def _report(ctx: BenchContext, rows: list[dict[str, Any]]) -> None:
    table = []
    for r in rows:
        dc, dg = r.get("dense_cpu"), r.get("dense_gpu")
        wc, wg = r.get("webrank_cpu"), r.get("webrank_gpu")
        tops = [m["metrics"]["top3"] for m in (dc, dg, wc, wg) if m is not None]
        agree = "yes" if all(t == tops[0] for t in tops) else "NO: " + " / ".join(
            ",".join(map(str, t)) for t in tops)
        its = dc or dg
        table.append([
            f"{r['n']:,}", f"{r['edges']:,}", r["dtype"],
            str(its["metrics"]["iterations"]) if its else "–",
            fmt_timing(dc) if dc else "–", fmt_timing(dg) if dg else "–",
            fmt_timing(wc) if wc else "–", fmt_timing(wg) if wg else "–",
            _ratio(dc, dg), _ratio(dc, wc), _ratio(dg, wg), agree])
    ctx.table(f"Time to an L1 change below {TOL:g} (alpha {ALPHA}), scale-free graphs",
              ["nodes", "edges", "dense dtype", "iterations", "dense CPU (1 thread)",
               "dense GPU", "webrank CPU", "webrank GPU", "speed-up dense GPU/CPU",
               "webrank CPU vs dense CPU", "webrank GPU vs dense GPU", "top-3 agree"],
              table, caption="Times: median (min–max). Dense times are the power loop alone "
                             "(the matrix is built beforehand, as the reports time it); "
                             "webrank's are the whole `pagerank()` call, operator setup "
                             "included. Speed-ups are ratios of medians.")

    def draw(fig: Any) -> None:
        from webrank.bench import plots

        ax = fig.subplots()
        series = {}
        for key, label in (("dense_cpu", "dense CPU, 1 thread (the reports' algorithm)"),
                           ("dense_gpu", "dense GPU (the reports' algorithm)"),
                           ("webrank_cpu", "webrank CPU (sparse)"),
                           ("webrank_gpu", "webrank GPU (sparse)")):
            pts = [(r["n"], r[key]["median"]) for r in rows if key in r]
            if pts:
                series[label] = ([p[0] for p in pts], [p[1] for p in pts])
        nmax = rows[-1]["n"] if rows else 0
        seed_pts = [(k, v) for k, v in SEED_004.items() if k <= max(nmax, 1)]
        if seed_pts:
            series["Ghadge et al. serial C++ (published)"] = (
                [k for k, _ in seed_pts], [v[0] for _, v in seed_pts])
            series["Ghadge et al. CUDA (published)"] = (
                [k for k, _ in seed_pts], [v[1] for _, v in seed_pts])
        plots.lines(ax, series, xlabel="nodes", ylabel="seconds", logx=True, logy=True,
                    title=f"time to L1 change < {TOL:g}, alpha {ALPHA}")

    ctx.plot("dense_time.png", draw)
    _row_kernel_report(ctx, rows)
    _findings(ctx, rows)


def _row_kernel_report(ctx: BenchContext, rows: list[dict[str, Any]]) -> None:
    """The reports' one-thread-per-row kernel beside cuBLAS, and its block-size sweep."""
    measured = [r for r in rows if "row_kernel" in r]
    if not measured:
        return
    table = []
    for r in measured:
        k = r["row_kernel"]
        rm, cm = k.get(("row-major", 32)), k.get(("column-major", 32))
        table.append([f"{r['n']:,}", r["dtype"], fmt_timing(r["dense_gpu"]),
                      fmt_timing(rm) if rm else "–", fmt_timing(cm) if cm else "–",
                      _ratio(rm, r["dense_gpu"]), _ratio(cm, r["dense_gpu"])])
    ctx.table("The reports' kernel (one thread per row, 32 threads a block) beside cuBLAS "
              f"gemv: time to an L1 change below {TOL:g}",
              ["nodes", "dtype", "cuBLAS gemv", "row kernel, row-major (theirs)",
               "row kernel, column-major", "cuBLAS vs row-major", "cuBLAS vs column-major"],
              table, caption="The same loop and stopping test; only the product differs. "
                             "Ratios: how many times faster cuBLAS is.")
    off = [f"{r['n']:,} ({lay}, {tpb})" for r in measured
           for (lay, tpb), m in r["row_kernel"].items()
           if m["metrics"]["top3"] != r["dense_gpu"]["metrics"]["top3"]]
    ctx.finding("Row kernel top-3 nodes: " + ("the same as cuBLAS's at every size and block "
                                              "size." if not off else
                                              "DIFFERENT at " + ", ".join(off) + "."))
    swept = [r for r in measured if len(r["row_kernel"]) > 2]
    if not swept:
        return
    r = swept[-1]
    k = r["row_kernel"]
    sweep_rows = []
    for tpb in THREADS_PER_BLOCK:
        rm, cm = k.get(("row-major", tpb)), k.get(("column-major", tpb))
        seed = SEED_001_SWEEP.get(tpb)
        sweep_rows.append([str(tpb), fmt_timing(rm) if rm else "–",
                           fmt_timing(cm) if cm else "–",
                           f"{seed:.3f} s" if seed is not None else "–"])
    ctx.table(f"Threads per block, the row kernel at {r['n']:,} nodes ({r['dtype']})",
              ["threads per block", "row-major (theirs)", "column-major",
               "Swaroop, 9,664 nodes (published)"], sweep_rows,
              caption=f"cuBLAS gemv on the same matrix: {fmt_timing(r['dense_gpu'])}.")
    for layout in ("row-major", "column-major"):
        times = {tpb: m["median"] for (lay, tpb), m in k.items() if lay == layout}
        if times:
            best = min(times, key=times.get)
            ctx.finding(f"Row kernel, {layout}, {r['n']:,} nodes: fastest at {best} threads "
                        f"a block ({fmt_time(times[best])}); 1024 threads: "
                        f"{fmt_time(times.get(1024, float('nan')))}; cuBLAS gemv "
                        f"{fmt_time(r['dense_gpu']['median'])} (Swaroop: best at 32, "
                        "2.7x slower at 512 and 4.9x at 1024 than at 32).")


def _findings(ctx: BenchContext, rows: list[dict[str, Any]]) -> None:
    agree = all(len({tuple(r[k]["metrics"]["top3"]) for k in r
                     if k.startswith(("dense_", "webrank_"))}) <= 1 for r in rows)
    ctx.finding("Top-3 nodes: " + ("the dense and sparse solvers agree at every size, as "
                                   "the reports' serial and parallel runs did."
                                   if agree else "they DISAGREE at some size (see table)."))
    big = [r for r in rows if "dense_cpu" in r]
    if big:
        r = big[-1]
        seed = SEED_004.get(r["n"])
        text = (f"At {r['n']:,} nodes the dense loop takes {fmt_time(r['dense_cpu']['median'])}"
                f" on one CPU thread")
        if seed:
            text += (f" against Ghadge et al.'s {seed[0]:.1f} s serial and {seed[1]:.2f} s CUDA: "
                     "BLAS gemv is far faster than the reports' unvectorised triple loop, so "
                     "their GPU speed-ups were measured against a slow baseline")
        ctx.finding(text + ".")
        if "webrank_cpu" in r:
            ctx.finding(f"At {r['n']:,} nodes the dense loop takes "
                        f"{_ratio(r['dense_cpu'], r['webrank_cpu'])} the time of webrank's "
                        "sparse CPU solver (setup included): a sparse step costs O(edges) "
                        "(about 2.2 per node here) instead of O(n²), so the gap grows with "
                        "n; storing the dense matrix also caps n at about sqrt(memory / 4 "
                        "bytes), some 80,000 nodes in 25 GB.")
    gpu = [r for r in rows if "dense_gpu" in r and "dense_cpu" in r]
    if gpu:
        sp = ", ".join(f"{r['n']:,}: {r['dense_cpu']['median'] / r['dense_gpu']['median']:.1f}x"
                       for r in gpu)
        ctx.finding(f"Dense GPU over dense CPU (the reports' speed-up column): {sp}; the reports "
                    "report 3.7x–130.6x against their serial loop.")
    if not any("dense_gpu" in r for r in rows):
        ctx.note("No GPU in this run: the dense GPU and webrank GPU columns are empty; run "
                 "`webrank bench dense --device both` on a GPU machine.")
