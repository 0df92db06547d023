"""Suite ``extrapolation``: every solver over Praveen et al.'s grid of alpha and tol.

Praveen et al. (Tables II/III) reports how many iterations Aitken extrapolation saves over the
power method for alpha from 0.75 to 0.99 and eps from 1e-3 to 1e-12. Here, for alpha in
{0.75, 0.80, 0.85, 0.90, 0.95, 0.99} and tol in {1e-3, 1e-8, 1e-10, 1e-12} (L1), on
web-NotreDame and cnr-2000, EVERY method in :data:`webrank.solvers.SOLVERS` is run
(defaults for its options) on each device, recording iterations, matrix-vector products,
convergence, wall time and Sgherzi's correctness measures against a float64 reference
(the power method to an L1 change of 1e-14) via :func:`webrank.metrics.compare`. A plot
per graph shows the residual against the number of products, one panel per alpha.
``--quick``: alpha {0.85, 0.99} x tol {1e-3, 1e-8} on a generated 2,000-node graph.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from webrank.bench.runner import BenchContext, fmt_time, stderr_progress

TITLE = "power method vs extrapolation and the other solvers over alpha and tol"
BACKGROUND = """
Praveen et al. (Aitken extrapolation on a Tesla T20 vs Matlab serial). Reduction in the
number of iterations over the power method, Table II (Genetic dataset) and Table III
(Computational Complexity dataset):

| alpha | eps | reduction, serial | reduction, GPU |
|---|---|---|---|
| 0.75 | 1e-3 / 1e-8 / 1e-10 / 1e-12 | 0 / 3 / 2 / 1 | 1 / 3 / 2 / 2 |
| 0.80 | 1e-3 / 1e-8 / 1e-10 / 1e-12 | 0 / 1 / 4 / 3 | 0 / 4 / 4 / 3 |
| 0.85 (CC) | 1e-3 / 1e-8 / 1e-10 / 1e-12 | 3 / 4 / 4 / 5 | 4 / 5 / 5 / 5 |
| 0.95 (CC) | 1e-3 / 1e-8 / 1e-10 / 1e-12 | 4 / 5 / 6 / 7 | 7 / 7 / 7 / 7 |
| 0.99 | 1e-3 / 1e-8 / 1e-10 | 112 / 116 / 126 | 114 / 129 / 130 |

It also claims the GPU power method converged in fewer iterations than the serial one
("for alpha = 0.99 and eps = 1e-15, the serial implementation converged in 18,234
iterations, whereas the parallel implementation took merely 3013").
"""

ALPHAS = (0.75, 0.80, 0.85, 0.90, 0.95, 0.99)
TOLS = (1e-3, 1e-8, 1e-10, 1e-12)
QUICK_ALPHAS = (0.85, 0.99)
QUICK_TOLS = (1e-3, 1e-8)
GRAPHS = ("web-NotreDame", "cnr-2000")
QUICK_NODES = 2000
#: alpha 0.99 to 1e-12 takes ~2,750 power steps; room for slower methods
MAX_ITER = 5000
REF_TOL = 1e-14
#: a graph's remaining alphas are skipped (with a note) once the next one is predicted to
#: end past this many seconds on the graph: the full grid with every method takes hours
#: on a 2-core CPU (alpha 0.99 alone is ~70% of the steps), minutes on a GPU
GRAPH_BUDGET_S = 600.0


def suite_graphs(ctx: BenchContext) -> list[tuple[str, Any]]:
    import webrank
    from webrank.generate import generate

    if ctx.quick:
        src, dst, n = generate("scale-free", QUICK_NODES, seed=0)
        return [(f"scale-free {QUICK_NODES}",
                 webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n))]
    out = []
    for name in GRAPHS:
        path = ctx.dataset(name)
        if path is not None:
            out.append((name, webrank.load(path)))
    return out


def run(ctx: BenchContext) -> None:
    """The whole grid (see module docstring)."""
    import webrank
    from webrank.metrics import compare

    methods = ctx.methods()
    ctx.note(f"Methods registered in this run: {', '.join(methods)} (each with its default "
             "options). Non-converged runs (max_iter "
             f"{MAX_ITER}) are kept and marked.")
    alphas = QUICK_ALPHAS if ctx.quick else ALPHAS
    tols = QUICK_TOLS if ctx.quick else TOLS
    rows: list[dict[str, Any]] = []
    residuals: dict[tuple[str, float, str], tuple[np.ndarray, np.ndarray]] = {}
    for name, g in suite_graphs(ctx):
        started = time.perf_counter()
        last: tuple[float, float] | None = None  # (alpha, seconds) of the last alpha done
        for alpha in alphas:
            spent = time.perf_counter() - started
            if last is not None:
                # power steps to a fixed tol grow like 1 / -log(alpha)
                predicted = last[1] * np.log(last[0]) / np.log(alpha)
                if spent + predicted > GRAPH_BUDGET_S:
                    ctx.skip(f"{name}, alpha >= {alpha}",
                             f"predicted to end {(spent + predicted) / 60:.0f} min into this "
                             f"graph, past the {GRAPH_BUDGET_S / 60:.0f}-min budget per "
                             "graph (run it on a GPU, or raise GRAPH_BUDGET_S)")
                    break
            t_alpha = time.perf_counter()
            stderr_progress(f"extrapolation: {name}, alpha {alpha}")
            ref = ctx.reference(g, alpha)
            base = {"graph": name, "nodes": g.n, "edges": g.num_edges, "alpha": alpha,
                    "criterion": "l1", "max_iter": MAX_ITER}
            for device in ctx.devices:
                for method in methods:
                    for tol in tols:
                        def solve(d=device, m=method, a=alpha, t=tol, g=g):
                            return webrank.pagerank(g, alpha=a, tol=t, max_iter=MAX_ITER,
                                                    method=m, device=d,
                                                    raise_on_nonconvergence=False)

                        got = ctx.attempt(f"{method} on {device}", solve, device=device)
                        if got is None:
                            break  # the method refuses this device: no other tol either
                        r, t = got
                        cmp = compare(r.scores, ref).to_dict()
                        rows.append(ctx.record(
                            f"{method} alpha={alpha} tol={tol:g}", t, device=device,
                            params={**base, "method": method, "tol": tol},
                            metrics={"iterations": r.iterations, "matvecs": r.matvecs,
                                     "converged": r.converged, "residual": r.residual,
                                     **cmp}))
                        if tol == tols[-1] and device == ctx.devices[0]:
                            residuals[(name, alpha, method)] = _residual_curve(r)
            last = (alpha, time.perf_counter() - t_alpha)
    _report(ctx, rows, residuals, alphas, tols)


def _residual_curve(r: Any) -> tuple[np.ndarray, np.ndarray]:
    """(matvecs so far, residual) per iteration; iterations spread evenly over matvecs."""
    res = np.asarray(r.residuals, dtype=np.float64)
    k = res.size
    if k == 0:
        return np.zeros(0), np.zeros(0)
    if r.matvecs == k:
        x = np.arange(1, k + 1, dtype=np.float64)
    else:  # e.g. Krylov methods: several products per iteration
        x = np.linspace(r.matvecs / k, r.matvecs, k)
    keep = res > 0
    return x[keep], res[keep]


def _report(ctx: BenchContext, rows: list[dict[str, Any]],
            residuals: dict[tuple[str, float, str], tuple[np.ndarray, np.ndarray]],
            alphas: tuple[float, ...], tols: tuple[float, ...]) -> None:
    graphs = list(dict.fromkeys(r["params"]["graph"] for r in rows))
    methods = list(dict.fromkeys(r["params"]["method"] for r in rows))
    # alphas skipped for time (see GRAPH_BUDGET_S) get no empty rows or panels
    alphas = tuple(a for a in alphas if any(r["params"]["alpha"] == a for r in rows))
    by = {(r["params"]["graph"], r["device"], r["params"]["alpha"], r["params"]["tol"],
           r["params"]["method"]): r for r in rows}
    devices = list(dict.fromkeys(r["device"] for r in rows))
    for graph in graphs:
        dev = devices[0]
        table = []
        for alpha in alphas:
            for tol in tols:
                power = by.get((graph, dev, alpha, tol, "power"))
                cells = [f"{alpha:.2f}", f"{tol:g}"]
                for m in methods:
                    r = by.get((graph, dev, alpha, tol, m))
                    if r is None:
                        cells.append("–")
                        continue
                    mv = r["metrics"]["matvecs"]
                    txt = f"{mv}" + ("" if r["metrics"]["converged"] else " (nc)")
                    if power is not None and m != "power":
                        txt += f" ({power['metrics']['matvecs'] - mv:+d})"
                    cells.append(txt)
                table.append(cells)
        ctx.table(f"{graph}: matrix-vector products to an L1 change below tol ({dev}); "
                  "in brackets the reduction vs power, as Praveen et al.'s tables",
                  ["alpha", "tol", *methods], table,
                  caption="nc = not converged within max_iter; a positive bracket means "
                          "fewer products than the power method.")
        for device in devices:
            long = []
            for alpha in alphas:
                for tol in tols:
                    for m in methods:
                        r = by.get((graph, device, alpha, tol, m))
                        if r is None:
                            continue
                        mt = r["metrics"]
                        long.append([f"{alpha:.2f}", f"{tol:g}", m, str(mt["iterations"]),
                                     str(mt["matvecs"]), "yes" if mt["converged"] else "NO",
                                     fmt_time(r["median"]), f"{mt['l1']:.1e}",
                                     f"{mt['wrong_position_pct']:.2f}",
                                     f"{mt['displacement_mean']:.1e}",
                                     f"{mt['displacement_var']:.1e}",
                                     f"{mt['kendall_tau']:.6f}",
                                     f"{mt['top_k_overlap']:.2f}"])
            ctx.table(f"{graph} on {device}: time and correctness vs a float64 reference "
                      f"(power to {REF_TOL:g})",
                      ["alpha", "tol", "method", "iterations", "matvecs", "converged",
                       "time", "L1 error", "wrong positions %", "displacement mean",
                       "displacement var", "Kendall tau", "top-100 overlap"], long)

        def draw(fig: Any, graph=graph) -> None:
            from webrank.bench import plots

            cols = min(3, len(alphas))
            rws = -(-len(alphas) // cols)
            axes = np.atleast_1d(fig.subplots(rws, cols, squeeze=False)).ravel()
            for ax, alpha in zip(axes, alphas, strict=False):
                series = {m: residuals[(graph, alpha, m)] for m in methods
                          if (graph, alpha, m) in residuals}
                plots.lines(ax, series, xlabel="matrix-vector products",
                            ylabel="residual (log)", logy=True, markers=False,
                            title=f"{graph}, alpha {alpha}, to tol {tols[-1]:g}")
            for ax in axes[len(alphas):]:
                ax.set_visible(False)

        safe = graph.replace(" ", "_")
        ctx.plot(f"residuals_{safe}.png", draw, size=(4.0 * min(3, len(alphas)),
                                                      3.2 * -(-len(alphas) // 3)))
    _findings(ctx, rows, by, graphs, alphas, tols, devices)


def _findings(ctx, rows, by, graphs, alphas, tols, devices) -> None:
    ctx.note("Residuals are each method's own stopping quantity (the L1 change of a power "
             "step for power and the extrapolation methods); for a method doing several "
             "products per iteration the plot spreads its iterations evenly over its "
             "products.")
    for graph in graphs:
        dev = devices[0]
        for m in ("aitken", "quadratic"):
            red = [(a, t, by[(graph, dev, a, t, "power")]["metrics"]["matvecs"]
                    - by[(graph, dev, a, t, m)]["metrics"]["matvecs"])
                   for a in alphas for t in tols
                   if (graph, dev, a, t, "power") in by and (graph, dev, a, t, m) in by]
            if red:
                cells = ", ".join(f"{a:.2f}/{t:g}: {d:+d}" for a, t, d in red)
                ctx.finding(f"{graph}, {m} ({dev}), matvecs saved vs power by alpha/tol: "
                            f"{cells} (Praveen et al.'s Aitken: 0–7 at alpha 0.75–0.95, 112–130 "
                            "at 0.99).")
        best = {}
        for a in alphas:
            cands = [(by[(graph, dev, a, tols[-1], m)]["metrics"]["matvecs"], m)
                     for m in {r["params"]["method"] for r in rows}
                     if (graph, dev, a, tols[-1], m) in by
                     and by[(graph, dev, a, tols[-1], m)]["metrics"]["converged"]]
            if cands:
                best[a] = min(cands)
        if best:
            ctx.finding(f"{graph}: fewest products to tol {tols[-1]:g} by alpha: "
                        + ", ".join(f"{a:.2f}: {m} ({mv})" for a, (mv, m) in best.items())
                        + ".")
    if len(devices) == 2:
        same = diff = 0
        for r in rows:
            p = r["params"]
            if r["device"] != "gpu":
                continue
            c = by.get((p["graph"], "cpu", p["alpha"], p["tol"], p["method"]))
            if c is None:
                continue
            if c["metrics"]["iterations"] == r["metrics"]["iterations"]:
                same += 1
            else:
                diff += 1
        ctx.finding(f"CPU and GPU take the same number of iterations in {same} of "
                    f"{same + diff} configurations (Praveen et al. reported the GPU converging "
                    "in 3,013 iterations where its serial code took 18,234: with the same "
                    "arithmetic the counts should agree).")
