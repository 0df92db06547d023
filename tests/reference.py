"""Float64 references for PageRank: an exact dense solve and networkx."""

from __future__ import annotations

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
