"""Float64 references for PageRank: an exact dense solve, networkx, and the power step
written with SciPy."""

from __future__ import annotations

from typing import Any

import numpy as np

import webrank


def exact_pagerank(g: webrank.Graph, alpha=0.85, personalization=None, dangling=None,
                   weight=True) -> np.ndarray:
    """Solve (I - alpha M) x = (1 - alpha) v densely (small graphs only)."""
    n = g.n
    a = g.to_scipy().toarray()  # a[i, j] = weight of j -> i
    if not weight or g.weights is None:
        a = (a != 0).astype(float)
    out = a.sum(axis=0)
    v = np.full(n, 1 / n) if personalization is None else np.asarray(personalization, float)
    v = v / v.sum()
    d = v if dangling is None else np.asarray(dangling, float) / np.sum(dangling)
    m = np.zeros_like(a)
    nz = out > 0
    m[:, nz] = a[:, nz] / out[nz]
    m[:, ~nz] = d[:, None]
    x = np.linalg.solve(np.eye(n) - alpha * m, (1 - alpha) * v)
    return x / x.sum()


def networkx_scores(g: webrank.Graph, **kw) -> np.ndarray:
    """networkx.pagerank on the same edges, returned in webrank's node order."""
    import networkx as nx

    src, dst, w = g.edges()
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    if w is None:
        G.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    else:
        G.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist(), strict=True))
    pr = nx.pagerank(G, **kw)
    return np.array([pr[i] for i in range(g.n)])


def scipy_step(
    matrix: Any,
    dangling: np.ndarray,
    terms: Any,
    *,
    xs: np.ndarray,
    x: np.ndarray,
    dm: float,
    mass: float,
    delta: bool,
    x_out: np.ndarray,
    xs_out: np.ndarray,
) -> tuple[float, float, float]:
    """``webrank.kernels.cpu.fused_step`` written with a SciPy product and NumPy vector
    operations: the independent reference the compiled step is held to.

    The same step, plain or delta, as ``fused_step``. Its row sums are float64 (in
    edge order; the compiled kernel adds even and odd links apart) and each product
    ``val * xs[j]`` is float64 in both, so a run agrees with the compiled step to the
    round-off of the sums (~1e-16 relative).

    Parameters
    ----------
    matrix : scipy.sparse.csr_array
        The graph's ``webrank.kernels.cpu.in_link_matrix``.
    dangling : ndarray of int
        Indices of the nodes whose ``inv_out`` is 0.
    terms, xs, x, dm, mass, delta, x_out, xs_out
        As for ``fused_step`` (``x_out`` and ``xs_out`` are written).

    Returns
    -------
    tuple of float
        ``(residual, dangling mass, mass)`` of the new vector, as ``fused_step``.
    """
    inv_out, alpha, crit = terms.inv_out, terms.alpha, terms.crit
    # uniform v and d (length 1) as Python floats: scalar adds, no temporary n-vectors
    v = float(terms.v[0]) if terms.v.size == 1 else terms.v
    d = float(terms.d[0]) if terms.d.size == 1 else terms.d
    t = matrix @ xs  # float64: SciPy upcasts a float32 xs exactly
    t *= alpha
    t += alpha * dm * d
    if delta:
        t -= alpha * mass * v
        np.add(x, t, out=x_out)
        diff = np.abs(t)
    else:
        t += (1.0 - alpha) * v
        diff = t - x
        np.abs(diff, out=diff)
        x_out[:] = t
    np.multiply(t, inv_out, out=xs_out, casting="unsafe")
    res = diff.sum() if crit == 0 else diff @ diff if crit == 1 else diff.max()
    return float(res), float(t[dangling].sum()), float(t.sum())
