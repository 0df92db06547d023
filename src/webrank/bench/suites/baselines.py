"""Suite ``baselines``: webrank against the usual PageRank implementations.

End-to-end (parse the edge list, build the graph, solve) and solve-only times, and the L1
error of each answer against one float64 reference (webrank's power method to L1 1e-14):

* webrank, CPU and GPU (float64 and float32 gathers);
* networkx ``pagerank`` (its SciPy implementation) with its own stopping rule — an L1
  change below ``N * tol`` — and again with ``tol / N`` so that it stops at the same L1
  change as the others;
* a plain SciPy power iteration (:func:`scipy_power`) and, on a GPU, Praveen et al.'s design
  with cuSPARSE through CuPy (:func:`cusparse_power`);
* igraph's PRPACK, scikit-network's power iteration and cuGraph, when installed.

Everything runs at alpha 0.85 to an L1 change of 1e-10 unless its own rule says
otherwise (PRPACK has no tolerance argument). Graphs: the real datasets (web-NotreDame,
cnr-2000, soc-Epinions1); ``--quick``: a generated 3,000-node scale-free graph written
as an edge list.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from webrank.bench.runner import BenchContext, fmt_time, stderr_progress

TITLE = ("webrank against networkx, SciPy, igraph, GraphBLAS, NetworKit, scikit-network "
         "and cuGraph")
BACKGROUND = """
Sgherzi timed its CUDA kernels against `networkx.pagerank_scipy` ("a fairly optimized CPU
version [that] yielded the best execution times" of networkx's three) and then against a
non-optimised GPU version, because "the execution times on CPU were still too high"; it
kept networkx as the correctness reference. Praveen et al.'s GPU design is cuSPARSE SpMV plus
cuBLAS vector operations (reproduced here as the cuSPARSE baseline on a GPU). Earlier
webrank measurements (docs/benchmarks.md, `benchmarks/results/headline/cpu_2core/core.json`):
webrank's CPU solve is 1.0–1.3x the plain SciPy loop on 2 cores, networkx 20–40x slower to build
and compute.
"""

ALPHA = 0.85
TOL = 1e-10
REAL_GRAPHS = ("web-NotreDame", "cnr-2000", "soc-Epinions1")
QUICK_NODES = 3000


def scipy_power(a: sp.csr_array, out_weight: np.ndarray, tol: float, alpha: float = ALPHA,
                max_iter: int = 10000) -> tuple[np.ndarray, int]:
    """The textbook SciPy PageRank loop, the CPU baseline.

    ``M = A D^-1`` (A the in-link matrix, rows = targets; D the out-weights), then
    ``x <- alpha M x + (alpha * dangling mass + 1 - alpha) / n`` until the L1 change is
    below ``tol``. Returns ``(x, iterations)``.
    """
    n = a.shape[0]
    dang = out_weight == 0
    inv = np.where(dang, 0.0, 1.0 / np.where(dang, 1.0, out_weight))
    m = (a @ sp.diags_array(inv)).tocsr()
    x = np.full(n, 1.0 / n)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        xn = alpha * (m @ x) + (alpha * x[dang].sum() + 1.0 - alpha) / n
        err = np.abs(xn - x).sum()
        x = xn
        if err < tol:
            break
    return x, it


def praveen_matrix(g: Any, dtype: Any = np.float64) -> Any:
    """``P^T`` as a cupyx CSR matrix with the values ``1/out-degree`` (Praveen et al. stores
    them), in ``dtype``; ``g``'s arrays may be on the host or already on the GPU."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    return csp.csr_matrix((praveen_values(g, dtype), cp.asarray(g.indices, np.int32),
                           cp.asarray(g.indptr, np.int32)), shape=(g.n, g.n))


def praveen_values(g: Any, dtype: Any) -> Any:
    """The per-edge values ``1/out-degree`` of ``g``'s sources, on the GPU in ``dtype``."""
    import cupy as cp

    out = cp.asarray(g.out_weight)
    inv = cp.where(out > 0, 1.0 / cp.where(out > 0, out, 1.0), 0.0)
    return inv[cp.asarray(g.indices)].astype(dtype)


def praveen_step(a: Any, x: Any, alpha: float = ALPHA) -> tuple[Any, Any]:
    """One iteration of Praveen et al.'s Algorithm 2 with library calls, one launch each:
    ``y = alpha P^T x``, ``w = ||x||_1 - ||y||_1`` (dangling and teleport mass),
    ``y += w / n``; returns ``(y, ||y - x||_1)``, the residual still on the device.
    ``a`` is any matrix whose ``@`` takes a CuPy vector (cupyx, torch.sparse wrapped)."""
    import cupy as cp

    y = a @ x
    y *= alpha
    y += (x.sum() - y.sum()) / x.size
    return y, cp.abs(y - x).sum()


def cusparse_power(g: Any, tol: float, alpha: float = ALPHA,
                   max_iter: int = 10000) -> tuple[Any, int]:
    """Praveen et al.'s GPU design: cuSPARSE SpMV + cuBLAS-style vector ops, L1 test each step
    (one host round trip per step, as its stopping test needs). Returns ``(x,
    iterations)`` with ``x`` a CuPy array."""
    x, it, _res = praveen_power(praveen_matrix(g), g.n, tol, alpha, max_iter)
    return x, it


def praveen_power(a: Any, n: int, tol: float, alpha: float = ALPHA,
                  max_iter: int = 10000) -> tuple[Any, int, float]:
    """:func:`praveen_step` from the uniform vector until the L1 change is below ``tol``
    (read every step); returns ``(x, iterations, last residual)``."""
    import cupy as cp

    x = cp.full(n, 1.0 / n, dtype=a.dtype)
    it, res = 0, float("inf")
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        x, r = praveen_step(a, x, alpha)
        res = float(r)
        if res < tol:
            break
    return x, it, res


def graphblas_matrix(gb: Any, g: Any) -> Any:
    """The in-link matrix of ``g`` (rows = targets) as a GraphBLAS FP64 matrix, values
    ``1 / out-degree(source)`` (or the transition weights): ``x' = A x`` is the link part
    of the PageRank step, as LAGraph's PageRank keeps it."""
    vals = g.transition_values()
    if vals is None:
        inv = np.where(g.out_weight > 0, 1.0 / np.where(g.out_weight > 0, g.out_weight, 1),
                       0.0)
        vals = inv[g.indices]
    return gb.Matrix.from_csr(g.indptr.astype(np.uint64), g.indices.astype(np.uint64),
                              np.asarray(vals, dtype=np.float64), nrows=g.n, ncols=g.n)


def graphblas_power(gb: Any, a: Any, g: Any, tol: float, alpha: float = ALPHA,
                    max_iter: int = 10_000) -> tuple[np.ndarray, int]:
    """The power method with SuiteSparse:GraphBLAS (python-graphblas): ``x' = alpha A x +
    (alpha * dangling mass + 1 - alpha) / n``, stopped at the same absolute L1 change as
    webrank (LAGraph's GAP PageRank is this loop with the dangling mass dropped)."""
    from graphblas import binary, monoid, unary

    n = g.n
    dangling = gb.Vector.from_dense(g.dangling_mask.astype(np.float64))
    x = gb.Vector.from_dense(np.full(n, 1.0 / n))
    it = 0
    y = gb.Vector(float, n)
    change = gb.Vector(float, n)
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        dm = (dangling @ x).new().get(0.0)  # the dangling mass, an inner product
        y << a.mxv(x)  # rows with in-links only
        y << y.apply(binary.times, right=alpha)
        y(accum=binary.plus)[:] << (alpha * dm + 1.0 - alpha) / n  # every row
        change << y.ewise_add(x, binary.minus)
        change << change.apply(unary.abs)
        diff = change.reduce(monoid.plus).get(0.0)
        x, y = y, x
        if diff < tol:
            break
    return x.to_dense(fill_value=0.0), it


def _read_pairs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The (src, dst) columns of a SNAP-style edge list, with pandas' C parser."""
    import pandas as pd

    df = pd.read_csv(path, sep=r"\s+", comment="#", header=None, usecols=[0, 1],
                     dtype=np.int64, engine="c")
    return df[0].to_numpy(), df[1].to_numpy()


def _quick_graph(folder: Path) -> Path:
    """A 3,000-node scale-free edge list (seeded) written into ``folder``."""
    from webrank.generate import generate
    from webrank.graph import Graph
    from webrank.io import write_edgelist

    src, dst, n = generate("scale-free", QUICK_NODES, seed=3)
    path = folder / f"scale-free-{QUICK_NODES}.txt"
    write_edgelist(Graph.from_edges(src, dst, node_ids="range", num_nodes=n), path)
    return path


def run(ctx: BenchContext) -> None:
    """Measure every available implementation on each graph (see module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        if ctx.quick:
            paths = [_quick_graph(Path(tmp))]
        else:
            paths = [p for p in (ctx.dataset(name) for name in REAL_GRAPHS) if p]
        rows: list[dict[str, Any]] = []
        for path in paths:
            rows += _bench_graph(ctx, path)
    _report(ctx, rows)


@dataclass
class _Run:
    """One graph's baselines run: the graph, its float64 reference, and where each
    measurement goes (:meth:`add`)."""

    ctx: BenchContext
    path: Path
    g: Any
    ref: np.ndarray
    pandas: Any
    rows: list[dict[str, Any]] = field(default_factory=list)

    def l1(self, x: Any) -> float:
        """L1 distance of ``x`` (normalised) to the reference."""
        x = np.asarray(x, dtype=np.float64)
        return float(np.abs(x / x.sum() - self.ref).sum())

    def add(self, tool: str, device: str, timing: dict[str, Any], kind: str,
            **extra: Any) -> None:
        """Record one measurement of ``tool`` (``params=`` extra parameters, the rest
        metrics)."""
        base = {"graph": self.path.name.split(".")[0], "nodes": self.g.n,
                "edges": self.g.num_edges, "alpha": ALPHA}
        m = self.ctx.record(f"{tool} {kind}", timing, device=device,
                            params={**base, "tool": tool, "kind": kind,
                                    **extra.pop("params", {})}, metrics=extra)
        self.rows.append(m)


def _bench_graph(ctx: BenchContext, path: Path) -> list[dict[str, Any]]:
    """Every tool on the graph at ``path``: webrank on each device and dtype, then the
    baselines installed here (each times its build, solve and, where it reads files,
    its end-to-end run)."""
    import webrank

    stderr_progress(f"baselines: {path.name.split('.')[0]}")
    g = webrank.load(path)
    run = _Run(ctx, path, g, ctx.reference(g, ALPHA),
               ctx.optional("pandas", "end-to-end times of SciPy, igraph, scikit-network"))
    for tool in (_webrank, _scipy, _networkx, _igraph, _graphblas, _networkit, _sknetwork,
                 _gpu):
        tool(run)
    return run.rows


def _webrank(run: _Run) -> None:
    """webrank: the parse and build, then each device and dtype's solve and end-to-end run."""
    import webrank

    ctx, path, g, add, l1 = run.ctx, run.path, run.g, run.add, run.l1
    _, t = ctx.time(lambda: webrank.load(path))
    add("webrank", "cpu", t, "parse+build")
    for device in ctx.devices:
        for dtype in ("float64", "float32"):
            tool = f"webrank {device} {dtype}"

            def solve(d=device, dt=dtype):
                return webrank.pagerank(g, alpha=ALPHA, tol=TOL, dtype=dt, device=d)

            r, t = ctx.time(solve, device=device)
            add(tool, device, t, "solve", iterations=r.iterations, l1_error=l1(r.scores),
                params={"tol": TOL, "criterion": "l1"})
            if dtype == "float64":
                _, t = ctx.time(lambda d=device: webrank.pagerank(
                    webrank.load(path), alpha=ALPHA, tol=TOL, device=d), device=device)
                add(tool, device, t, "end-to-end")


def _scipy(run: _Run) -> None:
    """A plain SciPy power loop (and, with pandas, its file-to-ranks run)."""
    ctx, path, g, add, l1, pandas = run.ctx, run.path, run.g, run.add, run.l1, run.pandas
    a = g.to_scipy()
    (x, it), t = ctx.time(lambda: scipy_power(a, g.out_weight, TOL))
    add("SciPy power", "cpu", t, "solve", iterations=it, l1_error=l1(x),
        params={"tol": TOL})
    if pandas is not None:
        def scipy_e2e():
            src, dst = _read_pairs(path)
            n = int(max(src.max(), dst.max())) + 1
            adj = sp.csr_array((np.ones(src.size), (dst, src)), shape=(n, n))
            adj.sum_duplicates()
            adj.data[:] = 1.0
            return scipy_power(adj, np.asarray(adj.sum(axis=0)).ravel(), TOL)

        _, t = ctx.time(scipy_e2e)
        add("SciPy power", "cpu", t, "end-to-end")


def _networkx(run: _Run) -> None:
    """networkx: the DiGraph build, both tolerance rules, and the end-to-end run."""
    ctx, path, g, add, l1 = run.ctx, run.path, run.g, run.add, run.l1
    nx = ctx.optional("networkx")
    if nx is not None:
        src, dst, _ = g.edges()

        def nx_build():
            G = nx.DiGraph()
            G.add_nodes_from(range(g.n))
            G.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
            return G

        G, t = ctx.time(nx_build)
        add("networkx", "cpu", t, "build")
        for label, tol in (("networkx (N·tol rule)", TOL), ("networkx (tol/N)", TOL / g.n)):
            pr, t = ctx.time(lambda tl=tol: nx.pagerank(G, alpha=ALPHA, tol=tl,
                                                         max_iter=10000))
            add(label, "cpu", t, "solve", l1_error=l1([pr[i] for i in range(g.n)]),
                params={"tol": tol})
        del G

        def nx_e2e():
            G = nx.read_edgelist(path, create_using=nx.DiGraph, nodetype=int)
            return nx.pagerank(G, alpha=ALPHA, tol=TOL)

        _, t = ctx.time(nx_e2e)
        add("networkx (N·tol rule)", "cpu", t, "end-to-end")


def _igraph(run: _Run) -> None:
    """igraph's PRPACK: build, solve and (with pandas) the end-to-end run."""
    ctx, path, g, add, l1, pandas = run.ctx, run.path, run.g, run.add, run.l1, run.pandas
    igraph = ctx.optional("igraph", "igraph (PRPACK)")
    if igraph is not None:
        src, dst, _ = g.edges()
        edges = np.column_stack([src, dst])
        ig, t = ctx.time(lambda: igraph.Graph(n=g.n, edges=edges, directed=True))
        add("igraph PRPACK", "cpu", t, "build")
        pr, t = ctx.time(lambda: ig.pagerank(damping=ALPHA, directed=True,
                                             implementation="prpack"))
        add("igraph PRPACK", "cpu", t, "solve", l1_error=l1(pr))
        if pandas is not None:
            def igraph_e2e():
                s, d = _read_pairs(path)
                n = int(max(s.max(), d.max())) + 1
                return igraph.Graph(n=n, edges=np.column_stack([s, d]),
                                    directed=True).pagerank(
                    damping=ALPHA, directed=True, implementation="prpack")

            _, t = ctx.time(igraph_e2e)
            add("igraph PRPACK", "cpu", t, "end-to-end")


def _graphblas(run: _Run) -> None:
    """SuiteSparse:GraphBLAS through python-graphblas: build and power solve."""
    ctx, g, add, l1 = run.ctx, run.g, run.add, run.l1
    gb = ctx.optional("graphblas", "SuiteSparse:GraphBLAS (python-graphblas)")
    if gb is not None:
        a_gb, t = ctx.time(lambda: graphblas_matrix(gb, g))
        add("GraphBLAS power", "cpu", t, "build")
        (x, it), t = ctx.time(lambda: graphblas_power(gb, a_gb, g, TOL))
        add("GraphBLAS power", "cpu", t, "solve", iterations=it, l1_error=l1(x),
            params={"tol": TOL, "criterion": "l1"})


def _networkit(run: _Run) -> None:
    """NetworKit: build and solve."""
    ctx, g, add, l1 = run.ctx, run.g, run.add, run.l1
    nk = ctx.optional("networkit", "NetworKit")
    if nk is not None:
        nk.setLogLevel("ERROR")
        src, dst, _ = g.edges()

        def nk_build():
            G = nk.Graph(g.n, directed=True)
            G.addEdges((src.astype(np.uint64), dst.astype(np.uint64)))
            return G

        G_nk, t = ctx.time(nk_build)
        add("NetworKit", "cpu", t, "build")

        def nk_solve():
            pr = nk.centrality.PageRank(G_nk, damp=ALPHA, tol=TOL)
            pr.norm = nk.centrality.Norm.L1_NORM
            pr.run()
            return np.asarray(pr.scores())

        x, t = ctx.time(nk_solve)
        add("NetworKit", "cpu", t, "solve", l1_error=l1(x), params={"tol": TOL})


def _sknetwork(run: _Run) -> None:
    """scikit-network's power iteration: solve and (with pandas) the end-to-end run."""
    ctx, path, g, add, l1, pandas = run.ctx, run.path, run.g, run.add, run.l1, run.pandas
    skn = ctx.optional("sknetwork.ranking", "scikit-network")
    if skn is not None:
        # rows = sources for scikit-network; webrank's CSR has rows = targets
        adjacency = sp.csr_matrix(g.to_scipy().T)

        def skn_solve(adj=adjacency):
            return skn.PageRank(damping_factor=ALPHA, solver="piteration", n_iter=10000,
                                tol=TOL).fit_predict(adj)

        pr, t = ctx.time(skn_solve)
        add("scikit-network", "cpu", t, "solve", l1_error=l1(pr), params={"tol": TOL})
        if l1(pr) > 1e-6 and g.dangling_mask.any():
            ctx.note("scikit-network (solver 'piteration') does not solve the same problem "
                     "on graphs with dangling nodes: its restart term is (1 − alpha·"
                     "[outdeg_i > 0])·s_i·sum(x), which hands the rank lost at dangling "
                     "nodes to the dangling nodes themselves instead of spreading it by "
                     "the teleport vector (networkx, igraph and webrank do the latter); "
                     "hence its large L1 error. On a graph without dangling nodes it "
                     "agrees with webrank to ~1e-12.")
        if pandas is not None:
            def skn_e2e():
                s, d = _read_pairs(path)
                n = int(max(s.max(), d.max())) + 1
                adj = sp.csr_matrix((np.ones(s.size), (s, d)), shape=(n, n))
                adj.data[:] = 1.0  # duplicate lines count once, as in webrank
                return skn_solve(adj)

            _, t = ctx.time(skn_e2e)
            add("scikit-network", "cpu", t, "end-to-end")


def _gpu(run: _Run) -> None:
    """The GPU baselines: Praveen et al.'s cuSPARSE loop and, where installed, cuGraph."""
    ctx, g, add, l1 = run.ctx, run.g, run.add, run.l1
    if ctx.has("gpu"):
        import cupy as cp

        (x, it), t = ctx.time(lambda: cusparse_power(g, TOL), device="gpu")
        add("cuSPARSE power (Praveen et al.)", "gpu", t, "solve", iterations=it,
            l1_error=l1(cp.asnumpy(x)), params={"tol": TOL})
        cugraph = ctx.optional("cugraph", "cuGraph")
        if cugraph is not None:
            _bench_cugraph(ctx, cugraph, g, add, l1)
    else:
        ctx.skip("cuSPARSE and cuGraph baselines", "GPU not measured in this run")


def _bench_cugraph(ctx: BenchContext, cugraph: Any, g: Any, add: Any, l1: Any) -> None:
    """cuGraph's PageRank on the same edges (build and solve timed apart)."""
    import cudf

    src, dst, _ = g.edges()
    df = cudf.DataFrame({"src": src.astype(np.int32), "dst": dst.astype(np.int32)})

    def build():
        G = cugraph.Graph(directed=True)
        G.from_cudf_edgelist(df, source="src", destination="dst", renumber=False)
        return G

    G, t = ctx.time(build, device="gpu")
    add("cuGraph", "gpu", t, "build")
    out, t = ctx.time(lambda: cugraph.pagerank(G, alpha=ALPHA, tol=TOL, max_iter=10000),
                      device="gpu")
    scores = np.zeros(g.n)
    scores[out["vertex"].to_numpy()] = out["pagerank"].to_numpy()
    add("cuGraph", "gpu", t, "solve", l1_error=l1(scores), params={"tol": TOL})


def _report(ctx: BenchContext, rows: list[dict[str, Any]]) -> None:
    graphs = list(dict.fromkeys(r["params"]["graph"] for r in rows))
    tools = list(dict.fromkeys(r["params"]["tool"] for r in rows
                               if r["params"]["kind"] in ("solve", "end-to-end")))
    solve_by = {(r["params"]["graph"], r["params"]["tool"]): r for r in rows
                if r["params"]["kind"] == "solve"}
    e2e_by = {(r["params"]["graph"], r["params"]["tool"]): r for r in rows
              if r["params"]["kind"] == "end-to-end"}
    build_by = {(r["params"]["graph"], r["params"]["tool"]): r for r in rows
                if r["params"]["kind"] in ("build", "parse+build")}
    for graph in graphs:
        table_rows = []
        first = next(r for r in rows if r["params"]["graph"] == graph)["params"]
        for tool in tools:
            s, e = solve_by.get((graph, tool)), e2e_by.get((graph, tool))
            if s is None and e is None:
                continue
            build = build_by.get((graph, tool.split(" (")[0]))
            if build is None and tool.startswith("webrank"):
                build = build_by.get((graph, "webrank"))
            table_rows.append([
                tool,
                fmt_time(s["median"]) if s else "–",
                fmt_time(build["median"]) if build else "–",
                fmt_time(e["median"]) if e else "–",
                str(s["metrics"].get("iterations", "–")) if s else "–",
                f"{s['metrics']['l1_error']:.1e}" if s else "–",
            ])
        ctx.table(f"{graph} ({first['nodes']:,} nodes, {first['edges']:,} edges), "
                  f"alpha {ALPHA}, L1 tol {TOL:g}",
                  ["implementation", "solve", "build (parse+build for webrank)",
                   "end-to-end", "iterations", "L1 error vs float64 ref"], table_rows)

    def draw(fig: Any) -> None:
        from webrank.bench import plots

        ax1, ax2 = fig.subplots(1, 2)
        for ax, by, what in ((ax1, solve_by, "solve"), (ax2, e2e_by, "end-to-end")):
            # every tool in both panels (0 = no bar) so a tool keeps its colour
            series = {tool: [by[(gr, tool)]["median"] if (gr, tool) in by else 0.0
                             for gr in graphs] for tool in tools}
            plots.bars(ax, graphs, series, ylabel="seconds (log)", title=what, logy=True)

    ctx.plot("baselines_time.png", draw, size=(11, 4.2))
    ctx.note("Solve times start from a built graph in each library's own structure "
             "(webrank: the whole `pagerank()` call, operator setup included); end-to-end "
             "times parse the edge-list file too (webrank: `webrank.load`; networkx: "
             "`read_edgelist`; SciPy, igraph and scikit-network: `pandas.read_csv` then "
             "their own build).")
    ctx.note("networkx stops when the L1 change is below N·tol, so with tol = 1e-10 on a "
             "300K-node graph it stops at an L1 change of 3e-5; the `tol/N` row tightens "
             "it to the same L1 change of 1e-10 as the others. igraph's PRPACK takes no "
             "tolerance (it solves to its own fixed accuracy).")
    for graph in graphs:
        wr = solve_by.get((graph, "webrank cpu float64"))
        if wr is None:
            continue
        parts = []
        for tool in tools:
            other = solve_by.get((graph, tool))
            if other is None or tool.startswith("webrank"):
                continue
            parts.append(f"{tool} {other['median'] / wr['median']:.1f}x")
        if parts:
            ctx.finding(f"{graph}: solve time relative to webrank CPU float64 "
                        f"({fmt_time(wr['median'])}): " + ", ".join(parts) + ".")
