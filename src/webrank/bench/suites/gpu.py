"""``webrank bench gpu``: every GPU engine against Praveen et al.'s design and torch.sparse.

For the real graphs, R-MAT graphs generated and built on the GPU (scales 20–26, ids
shuffled as generated) and web-like graphs in crawl order (``webrank.generate.web_crawl``,
scales 22 and 24: power-law degrees, most links to nearby ids), in one process:

* milliseconds per iteration (float32 gathers) of each engine — ``pull`` (the fused CSR
  kernel, in its default gather order and the other one), ``blocked`` (propagation
  blocking, a scatter and a gather kernel per step), ``persistent`` (the blocked phases
  in one cooperative launch per solve) — and of the engine ``engine="auto"`` chooses,
  beside Praveen et al.'s design (cuSPARSE SpMV through ``cupyx.scipy.sparse`` plus vector
  ops) and ``torch.sparse``;
* time to ``tol=1e-10`` (L1) of the whole call for every engine (the graph already on the
  device, the scores copied back), its setup (layout build included) and its L1 error
  against a float64 reference; the baselines in float64 (in float32 they stall above
  1e-10) reading the residual every iteration, as their stopping test must;
* two traffic models beside the times: the pull floor ``4·edges + 16·n`` bytes (each index
  read once, x read and written) and the blocked model ``12·edges + 32·n`` bytes (2-byte
  source offset and 4-byte message written in the scatter, message and 2-byte destination
  offset read in the gather; xs read, x read and written, xs and 1/out read per node),
  both at the measured device-to-device copy bandwidth;
* R-MAT generation and CSR construction on the device, the one-off costs (gather
  reordering, layout build) in iterations of the engine that needs them, and device
  memory.

Milliseconds per iteration are marginal costs: (time of k2 steps - time of k1 steps) /
(k2 - k1), so per-call setup is excluded; the baselines are timed over a loop of
iterations with CUDA events around it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TITLE = "GPU engines: ms per iteration and time to 1e-10, vs cuSPARSE (Praveen et al.) and torch"
BACKGROUND = """Praveen et al. runs the power method of its Algorithm 2 on the GPU as a cuSPARSE
`csrmv` plus cuBLAS vector operations (dangling mass, teleport, L1 residual) per
iteration and reports speed-ups over a CPU implementation. The second GPU design's
targets (H100, alpha 0.85, float32 gathers): every graph at least 2x faster than
cuSPARSE per iteration and to 1e-10; R-MAT 22 at most 0.30 ms, R-MAT 24 1.5 ms and
R-MAT 26 6 ms per iteration; cnr-2000 and web-NotreDame at most 0.010 ms per iteration
and the whole call to 1e-10 at most 2.5 ms; preprocessing at most 10 iterations; float32
within 1e-5 L1 and float64 within 1e-9 L1 of a float64 reference."""

ALPHA = 0.85
REAL = ("web-NotreDame", "cnr-2000", "soc-Epinions1")
SCALES_FULL = (20, 22, 24, 26)
SCALES_QUICK = (14, 16)
#: web-like graphs in crawl order (webrank.generate.web_crawl), beside R-MAT's random ids
WEB_SCALES_FULL = (22, 24)
WEB_SCALES_QUICK = (14,)
TOL = 1e-10
#: (label, options) of every engine measured; "auto" is measured separately
VARIANTS = (
    ("pull", {"engine": "pull"}),
    ("pull, other order", {"engine": "pull"}),  # reorder set per graph
    ("blocked", {"engine": "blocked"}),
    ("persistent", {"engine": "persistent"}),
    ("blocked, 2**14 chunks", {"engine": "blocked", "chunk_bits": 14}),
)
#: variants measured only on graphs of at least this many edges
LARGE_ONLY = {"blocked, 2**14 chunks": 2**23}


def run(ctx: Any) -> None:
    if not ctx.has("gpu"):
        ctx.skip("the GPU suite", "it needs a GPU (run with --device gpu on a GPU machine)")
        return
    import cupy as cp

    from webrank.backends import gpu_name

    bw = _copy_bandwidth(ctx)
    ctx.note(f"GPU: {gpu_name()}; measured device-to-device copy bandwidth "
             f"{bw / 1e12:.2f} TB/s (read + write of a 1 GiB buffer); the pull floor of one "
             "iteration is (4·edges + 16·n) bytes at that bandwidth, the blocked model "
             "(12·edges + 32·n) bytes.")
    rows = []
    graphs = [(name, "real") for name in REAL] + [
        (f"rmat-{s}", s) for s in (SCALES_QUICK if ctx.quick else SCALES_FULL)] + [
        (f"web-{s}", ("web", s)) for s in (WEB_SCALES_QUICK if ctx.quick else WEB_SCALES_FULL)]
    for label, spec in graphs:
        g, build = _graph(ctx, label, spec)
        if g is None:
            continue
        rows.append(_measure_graph(ctx, label, g, bw, build))
        del g
        cp.get_default_memory_pool().free_all_blocks()
    cols = ["graph", "edges", "auto engine", "auto ms/it", "pull ms/it",
            "pull other order ms/it", "blocked ms/it", "blocked, 2**14 chunks ms/it",
            "persistent ms/it", "cuSPARSE ms/it",
            "torch ms/it", "pull floor ms/it", "blocked model ms/it", "cuSPARSE / auto"]
    ctx.table("Milliseconds per iteration (float32 gathers)", cols,
              [[r.get(c, "–") for c in cols] for r in rows],
              caption="Marginal cost of one step, setup excluded. 'pull other order': the "
                      "gather order the pull engine does not use by default on that graph "
                      "(out-degree order below 2**23 edges, the graph's own above). "
                      "Floors: the traffic models at the measured copy bandwidth.")
    cols2 = ["graph", "auto to 1e-10", "pull", "blocked", "persistent", "cuSPARSE", "torch",
             "cuSPARSE / auto", "layout build", "reorder once"]
    ctx.table("Time to tol 1e-10: the whole call, [L1 error]", cols2,
              [[r.get("T " + c, r.get(c, "–")) for c in cols2] for r in rows],
              caption="webrank: setup (the graph already on the device; layouts built "
                      "by the first call are cached on the graph, as in any later call) + "
                      "iterations + the copy of the scores to the host; iterations and "
                      "the L1 error against a float64 reference in brackets. The "
                      "baselines iterate in float64 and keep x on the device. One-off "
                      "costs in milliseconds and in iterations of the engine using them.")
    built = [r for r in rows if r.get("build")]
    if built:
        ctx.table("R-MAT and web-like graphs generated and built on the GPU",
                  ["graph", "edges (distinct)", "generate s", "build CSR s"],
                  [[r["graph"], r["edges"], f"{r['build']['generate_s']:.3f}",
                    f"{r['build']['build_s']:.3f}"] for r in built])
    _memory_report(ctx)
    _plot(ctx, rows)


# -- measurements ------------------------------------------------------------------------
def _copy_bandwidth(ctx: Any) -> float:
    import cupy as cp

    a = cp.ones(2**28, dtype=cp.float32)  # 1 GiB
    b = cp.empty_like(a)
    _, t = ctx.time(lambda a=a, b=b: cp.copyto(b, a), device="gpu",
                    repeats=max(ctx.repeats, 10))
    bw = 2 * a.nbytes / t["median"]
    ctx.record("device-to-device copy, 1 GiB", t, device="gpu",
               metrics={"bandwidth_bytes_per_s": bw})
    return bw


def _graph(ctx: Any, label: str, spec: Any):
    """(graph, build info): a real dataset from the host, or R-MAT generated and built
    on the device."""
    import cupy as cp

    import webrank
    from webrank.backends.gpu_build import graph_on_device
    from webrank.generate import rmat, web_crawl

    if spec == "real":
        path = ctx.dataset(label)
        return (None, None) if path is None else (webrank.load(path), {})
    web = isinstance(spec, tuple)
    scale = int(spec[1] if web else spec)
    n, m = 2**scale, 16 * 2**scale
    need = m * (8 + 8 + 8 + 1 + 4)  # ids, keys, sort scratch, flags, indices
    free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    if need > free:
        ctx.skip(label, f"building it needs ~{need / 2**30:.0f} GiB, {free / 2**30:.0f} free")
        return None, None
    def generate() -> tuple[Any, Any, int]:
        if not web:
            return rmat(scale, 16, seed=scale, xp=cp, dtype=np.int32)
        s, d, k = web_crawl(scale, 16, seed=scale, xp=cp)
        return s.astype(np.int32), d.astype(np.int32), k

    (src, dst, n), t_gen = ctx.time(generate, device="gpu", repeats=1)
    g, t_build = ctx.time(lambda s=src, d=dst: graph_on_device(s, d, n, name=label),
                          device="gpu", repeats=1 if scale >= 24 else ctx.repeats)
    src = dst = None  # free the edge arrays before the runs
    params = {"scale": scale, "edge_factor": 16, "generated_edges": m,
              "generator": "web_crawl" if web else "rmat"}
    kind = "web-like (crawl order)" if web else "R-MAT"
    ctx.record(f"{label}: {kind} generation on the GPU", t_gen, device="gpu", params=params)
    ctx.record(f"{label}: CSR construction on the GPU (sort, dedup, degrees)", t_build,
               device="gpu", params=params, metrics={"edges": g.num_edges, "n": g.n})
    return g, {"generate_s": t_gen["median"], "build_s": t_build["median"]}


def _call_options(options: dict[str, Any]) -> dict[str, Any]:
    """A variant's options as pagerank takes them: ``engine`` and ``engine_options``."""
    tuning = {k: v for k, v in options.items() if k != "engine"}
    call = {"engine": options["engine"]} if "engine" in options else {}
    return {**call, "engine_options": tuning} if tuning else call


def _marginal_ms(ctx: Any, g: Any, **options: Any) -> tuple[float, dict[str, Any]]:
    """Milliseconds per webrank step, setup excluded: from runs of k1 and k2 steps."""
    import webrank

    def steps(k: int):
        return lambda: webrank.pagerank(g, alpha=ALPHA, tol=1e-300, max_iter=k,
                                        device="gpu", dtype="float32",
                                        raise_on_nonconvergence=False,
                                        **_call_options(options))

    k1 = 65
    _, t1 = ctx.time(steps(k1), device="gpu")
    _, probe = ctx.time(steps(2 * k1), device="gpu", repeats=1)
    per_step = max((probe["median"] - t1["median"]) / k1, 1e-6)
    # about half a second of steps, at most 384: k2 stays below ~450 steps, where the
    # float32 change gathered by delta steps (0.85**k of its start) would underflow to
    # zeros, and zeros can stream faster than real data
    extra = int(min(384, max(64, 0.5 / per_step)))
    _, t2 = ctx.time(steps(k1 + extra), device="gpu")
    ms = 1e3 * (t2["median"] - t1["median"]) / extra
    return ms, {"k1": k1, "k2": k1 + extra, "t_k1_s": t1["median"], "t_k2_s": t2["median"]}


def _measure_graph(ctx: Any, label: str, g: Any, bw: float, build: dict) -> dict[str, Any]:
    import cupy as cp

    import webrank
    from webrank.backends.gpu import REORDER_MIN_EDGES, gather_order

    n, m = g.n, g.num_edges
    floor_ms = 1e3 * (4 * m + 16 * n) / bw
    model_ms = 1e3 * (12 * m + 32 * n) / bw
    params = {"graph": label, "n": n, "edges": m, "alpha": ALPHA, "dtype": "float32"}
    row: dict[str, Any] = {"graph": label, "n": f"{n:,}", "edges": f"{m:,}",
                           "pull floor ms/it": f"{floor_ms:.4f}",
                           "blocked model ms/it": f"{model_ms:.4f}"}
    ref = _reference(ctx, g)
    other = None if m >= REORDER_MIN_EDGES else "out-degree"
    for name, opts in VARIANTS:
        if m < LARGE_ONLY.get(name, 0):
            continue
        opts = dict(opts, reorder=other) if name == "pull, other order" else opts
        measured = _measure_variant(ctx, label, g, name, opts, params, floor_ms, ref)
        if measured is None:
            continue
        ms, call_ms, r = measured
        row[f"{name} ms/it"] = f"{ms:.4f}"
        row[f"_{name}"] = ms
        row[f"T {name}"] = (f"{call_ms:.1f} ms ({r.iterations}) "
                            f"[{np.abs(r.scores - ref).sum():.1e}]")
        if name == "blocked" and "layout_build_s" in r.info:
            row["layout build"] = _one_off(row.get("_build_s", r.info["layout_build_s"]), ms)
    # the engine engine="auto" picks, and its whole call
    r, t = ctx.time(lambda: webrank.pagerank(g, alpha=ALPHA, tol=TOL, device="gpu",
                                             dtype="float32"), device="gpu")
    chosen = r.info["engine"]
    auto_ms = row.get("_" + ("pull" if chosen == "pull" else chosen))
    ctx.record(f"{label}: auto engine ({chosen}) time to tol 1e-10", t, device="gpu",
               params={**params, "tol": TOL},
               metrics={"engine": chosen, "reason": r.info.get("engine_reason"),
                        "iterations": r.iterations, "residual": r.residual,
                        "solve_s": r.elapsed, "setup_s": r.setup_time,
                        "l1_error": float(np.abs(r.scores - ref).sum()),
                        "ms_per_iteration": auto_ms})
    row["auto engine"] = chosen
    row["_auto"] = auto_ms
    row["auto ms/it"] = "–" if auto_ms is None else f"{auto_ms:.4f}"
    row["_auto_call"] = 1e3 * t["median"]
    row["T auto to 1e-10"] = (f"{1e3 * t['median']:.2f} ms ({r.iterations}; solve "
                              f"{1e3 * r.elapsed:.2f}) [{np.abs(r.scores - ref).sum():.1e}]")
    # the pull engine's one-off gather reordering
    indices = cp.asarray(g.indices)
    _, t_re = ctx.time(lambda ix=indices: gather_order(ix, n, "out-degree"), device="gpu",
                       repeats=1 if m > 2**28 else ctx.repeats)
    ms_re = row.get("_pull" if m >= REORDER_MIN_EDGES else "_pull, other order", 1.0)
    ctx.record(f"{label}: out-degree reordering (one-off, on the GPU)", t_re, device="gpu",
               params=params, metrics={"in_iterations_of_reordered_engine":
                                       1e3 * t_re["median"] / ms_re})
    row["reorder once"] = _one_off(t_re["median"], ms_re)
    del indices
    _baselines(ctx, label, g, params, floor_ms, row)
    if build:
        row["build"] = build
    return row


def _one_off(seconds: float, ms_per_it: float) -> str:
    return f"{1e3 * seconds:.1f} ms ({1e3 * seconds / ms_per_it:.1f} it)"


def _reference(ctx: Any, g: Any) -> np.ndarray:
    """Float64 reference scores: the CPU's for a host graph, the GPU pull engine's in
    float64 to 1e-13 for a graph built on the device (the CPU would take minutes)."""
    import webrank

    if not g.on_gpu:
        return ctx.reference(g, ALPHA)
    ctx.note("R-MAT references: webrank's pull engine in float64 on the GPU to an L1 "
             "change of 1e-13 (the test suite checks that engine against the CPU).")
    return webrank.pagerank(g, alpha=ALPHA, tol=1e-13, device="gpu", engine="pull",
                            dtype="float64", max_iter=2000).scores


def _measure_variant(ctx, label, g, name, opts, params, floor_ms, ref):
    """(ms per iteration, whole call to 1e-10 in ms, result) of one engine, or None when
    it cannot run here (a skip note says why)."""
    import webrank
    from webrank.errors import WebrankError

    try:
        first = webrank.pagerank(g, alpha=ALPHA, tol=TOL, device="gpu", dtype="float32",
                                 max_iter=500, raise_on_nonconvergence=False,
                                 **_call_options(opts))
    except (ValueError, WebrankError, RuntimeError) as exc:
        ctx.skip(f"{label}: {name}", str(exc).splitlines()[0][:200])
        return None
    build_s = first.info.get("layout_build_s")
    ms, info = _marginal_ms(ctx, g, **opts)
    _record_ms(ctx, f"{label}: {name} ms/iteration", ms, params, {**info, **first.info},
               floor_ms)
    r, t = ctx.time(lambda: webrank.pagerank(
        g, alpha=ALPHA, tol=TOL, device="gpu", dtype="float32", max_iter=500,
        raise_on_nonconvergence=False, **_call_options(opts)), device="gpu")
    ctx.record(f"{label}: {name} time to tol 1e-10", t, device="gpu",
               params={**params, "tol": TOL, **opts},
               metrics={"iterations": r.iterations, "residual": r.residual,
                        "converged": r.converged, "solve_s": r.elapsed,
                        "setup_s": r.setup_time, "layout_build_s": build_s,
                        "l1_error": float(np.abs(r.scores - ref).sum()),
                        "engine_info": first.info})
    if build_s:
        r.info["layout_build_s"] = build_s
    return ms, 1e3 * t["median"], r


def _baselines(ctx: Any, label: str, g: Any, params: dict, floor_ms: float,
               row: dict[str, Any]) -> None:
    """Praveen et al.'s design through cuSPARSE and through torch.sparse."""
    import cupy as cp

    m = g.num_edges
    for name, make in (("cuSPARSE", _cusparse_matrix), ("torch", _torch_matrix)):
        mat32 = make(ctx, g, np.float32)
        if mat32 is None:
            continue
        ms_b = _baseline_ms(ctx, mat32, g)
        del mat32
        _record_ms(ctx, f"{label}: {name} (Praveen et al. design) ms/iteration", ms_b, params,
                   {}, floor_ms)
        row[f"{name} ms/it"] = f"{ms_b:.4f}"
        row[f"_{name}"] = ms_b
        mat64 = make(ctx, g, np.float64)
        (its, res), t = ctx.time(lambda mat=mat64: _baseline_to_tol(mat, g), device="gpu",
                                 repeats=1 if m > 2**26 else ctx.repeats)
        del mat64
        ctx.record(f"{label}: {name} float64 time to tol 1e-10", t, device="gpu",
                   params={**params, "dtype": "float64", "tol": TOL},
                   metrics={"iterations": its, "residual": res})
        row[f"T {name}"] = f"{1e3 * t['median']:.1f} ms ({its})"
        if name == "cuSPARSE":
            if row.get("_auto"):
                row["cuSPARSE / auto"] = f"{ms_b / row['_auto']:.1f}x"
            row["T cuSPARSE / auto"] = f"{1e3 * t['median'] / row['_auto_call']:.1f}x"
        cp.get_default_memory_pool().free_all_blocks()


def _record_ms(ctx, name, ms, params, info, floor_ms) -> None:
    s = ms / 1e3
    ctx.record(name, {"median": s, "min": s, "max": s, "repeat": 1}, device="gpu",
               unit="s/iteration", params=params,
               metrics={**info, "ms_per_iteration": ms, "floor_ms": floor_ms,
                        "ratio_to_floor": ms / floor_ms})


# -- the baselines: Praveen et al.'s Algorithm 2 with library SpMV (webrank.bench.suites.baselines)
def _cusparse_matrix(ctx: Any, g: Any, dtype: Any):
    from webrank.bench.suites.baselines import praveen_matrix

    if g.num_edges > np.iinfo(np.int32).max:
        ctx.skip("cuSPARSE via cupyx", "more than 2**31 edges (cupyx uses int32 indices)")
        return None
    return praveen_matrix(g, dtype)


class _TorchCSR:
    """torch.sparse CSR sharing the device arrays (DLPack), with a ``@`` for CuPy vectors."""

    def __init__(self, torch: Any, mat: Any, dtype: Any) -> None:
        self.torch, self.mat, self.dtype = torch, mat, np.dtype(dtype)

    def __matmul__(self, x: Any) -> Any:
        import cupy as cp

        y = self.torch.mv(self.mat, self.torch.from_dlpack(x))
        return cp.from_dlpack(y)


def _torch_matrix(ctx: Any, g: Any, dtype: Any):
    import cupy as cp

    from webrank.bench.suites.baselines import praveen_values

    torch = ctx.optional("torch", "torch.sparse baseline")
    if torch is None:
        return None
    try:
        vals = torch.from_dlpack(praveen_values(g, dtype))
        crow = torch.from_dlpack(cp.asarray(g.indptr, np.int64))
        col = torch.from_dlpack(cp.asarray(g.indices, np.int64))
        mat = torch.sparse_csr_tensor(crow, col, vals, size=(g.n, g.n))
        x = cp.ones(g.n, dtype=dtype)
        _TorchCSR(torch, mat, dtype) @ x
    except Exception as exc:  # an old torch, or no CUDA build of it
        ctx.skip("torch.sparse baseline", f"{type(exc).__name__}: {exc}"[:200])
        return None
    return _TorchCSR(torch, mat, dtype)


def _baseline_ms(ctx: Any, a: Any, g: Any) -> float:
    """Milliseconds per iteration of Praveen et al.'s cuSPARSE loop, queued without
    reading the residual."""
    import cupy as cp

    from webrank.bench.suites.baselines import praveen_step

    iters = 20 if g.num_edges > 2**27 else 200

    def loop():
        x = cp.full(g.n, 1.0 / g.n, dtype=a.dtype)
        for _ in range(iters):
            x, _res = praveen_step(a, x, ALPHA)
        return x

    _, t = ctx.time(loop, device="gpu")
    return 1e3 * t["median"] / iters


def _baseline_to_tol(a: Any, g: Any, max_iter: int = 1000) -> tuple[int, float]:
    from webrank.bench.suites.baselines import praveen_power

    _x, its, res = praveen_power(a, g.n, TOL, ALPHA, max_iter)
    return its, res


# -- memory ------------------------------------------------------------------------------
def _memory_report(ctx: Any) -> None:
    import cupy as cp

    from webrank.backends.gpu_build import device_bytes

    total = cp.cuda.runtime.memGetInfo()[1]
    rows = []
    fits_run = fits_build = None
    for scale in range(20, 33):
        n, m = 2**scale, 16 * 2**scale
        run_b = device_bytes(n, m, "float32")
        build_b = run_b + m * (8 + 8 + 8 + 1)  # input ids, keys, sort scratch, flags
        if run_b <= 0.95 * total:
            fits_run = scale
        if build_b <= 0.95 * total:
            fits_build = scale
        rows.append([scale, f"{n:,}", f"{m:,}", f"{run_b / 2**30:.1f}",
                     "yes" if run_b <= 0.95 * total else "no",
                     f"{build_b / 2**30:.1f}", "yes" if build_b <= 0.95 * total else "no"])
    ctx.table(f"Device memory (this card: {total / 2**30:.0f} GiB), float32 gathers",
              ["R-MAT scale", "n", "edges", "run GiB", "run fits", "build on GPU GiB",
               "build fits"], rows,
              caption="run: CSR (4 bytes per edge) plus ~77 bytes per node "
                      "(webrank.backends.gpu_build.device_bytes); build: the run plus the "
                      "input ids, sort keys and scratch of graph_on_device.")
    edges_at = int((0.95 * total - device_bytes(2**26, 0)) / 4)
    ctx.finding(f"On this {total / 2**30:.0f} GiB card a float32 run fits up to R-MAT scale "
                f"{fits_run} ({16 * 2**fits_run:,} edges); building the CSR on the card "
                f"fits up to scale {fits_build}; with 67M nodes about {edges_at:,} edges "
                "fit. Larger graphs fail before any work with DeviceMemoryError (needed vs "
                "free bytes).")


def _plot(ctx: Any, rows: list[dict[str, Any]]) -> None:
    from webrank.bench import plots

    names = [r["graph"] for r in rows]
    series = {k: [r.get(f"_{k}", float("nan")) for r in rows]
              for k in ("pull", "blocked", "persistent", "cuSPARSE", "torch")}

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        plots.bars(ax, names, series, ylabel="ms per iteration (log)",
                   title="PageRank iteration on the GPU, float32, by engine", logy=True)

    ctx.plot("gpu_ms_per_iteration.png", draw, size=(8.0, 4.0))
