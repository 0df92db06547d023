"""Kumar et al.'s hybrid CPU+GPU split: the partition of the edges, the CPU tail sums, and
(on a GPU) the answer against the CPU engine."""

from __future__ import annotations

import numpy as np
import pytest
from test_pagerank import DTYPES

import webrank
from webrank import Graph
from webrank.backends.gpu import heavy_segments
from webrank.kernels.cpu import row_range_sums


def hub_graph(weighted: bool, n: int = 20000, m: int = 300000, seed: int = 9) -> Graph:
    """Random sources, targets drawn from a heavy tail: hubs with thousands of in-links,
    plus dangling and isolated nodes."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n - 50, m)  # the last 50 nodes have no out-links
    dst = np.minimum((rng.pareto(0.8, m) * 3).astype(np.int64), n - 1)
    w = rng.uniform(0.5, 2.0, m) if weighted else None
    return Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n)


@pytest.mark.parametrize("gpu_links", [1, 7, 64, 300, 10**9])
def test_gpu_heads_and_cpu_tails_cover_every_edge_once(gpu_links):
    g = hub_graph(False)
    indptr = g.indptr
    threshold = min(64, gpu_links)
    seg = heavy_segments(indptr, threshold, gpu_links)
    deg = np.diff(indptr)
    covered = np.zeros(g.num_edges, dtype=np.int64)
    light = np.flatnonzero(deg <= threshold)  # whole rows in the fused kernel
    for r in light:
        covered[indptr[r]:indptr[r + 1]] += 1
    for b, e in zip(seg["begin"], seg["end"], strict=True):  # GPU heads of the long rows
        assert 0 < e - b <= 256
        covered[b:e] += 1
    tails = np.flatnonzero(deg > gpu_links)  # what the CPU sums
    for r in tails:
        covered[indptr[r] + gpu_links:indptr[r + 1]] += 1
    assert (covered == 1).all()
    assert seg["n_heavy"] == int((deg > threshold).sum())


@pytest.mark.parametrize("weighted", [False, True])
def test_row_range_sums_match_numpy(weighted):
    g = hub_graph(weighted, n=3000, m=40000)
    rng = np.random.default_rng(1)
    xs = rng.uniform(0, 1, g.n).astype(np.float32)
    vals = g.transition_values()
    vals = np.zeros(0, np.float32) if vals is None else vals.astype(np.float32)
    rows = np.flatnonzero(np.diff(g.indptr) > 5)
    begin, end = g.indptr[rows] + 5, g.indptr[rows + 1]
    got = row_range_sums(begin.astype(np.int64), end.astype(np.int64), g.indices, vals, xs,
                         np.empty(rows.size))
    for r, (b, e) in enumerate(zip(begin, end, strict=True)):
        part = xs[g.indices[b:e]].astype(np.float64)
        want = (vals[b:e] * part).sum() if weighted else part.sum()
        assert got[r] == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_hybrid_needs_a_gpu_method_level():
    g = hub_graph(False, n=200, m=1000)
    with pytest.raises(ValueError, match="runs on device gpu only"):
        webrank.pagerank(g, method="hybrid", device="cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gpu_links", [1, 16, 200, 10**9])
def test_hybrid_matches_cpu_engine(weighted, dtype, gpu_links):
    g = hub_graph(weighted)
    c = webrank.pagerank(g, tol=1e-11, device="cpu", method="power")  # the same iteration
    h = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype, method="hybrid",
                         engine_options={"gpu_links": gpu_links})
    assert h.method == "hybrid" and h.device == "gpu" and h.converged
    assert abs(h.iterations - c.iterations) <= 1
    assert np.abs(h.scores - c.scores).sum() < (1e-9 if dtype == "float64" else 1e-6)
    deg = np.diff(g.indptr)
    assert h.info["cpu_rows"] == int((deg > gpu_links).sum())
    assert h.info["steps"] == h.iterations
    assert 0.0 <= h.info["cpu_edge_share"] < 1.0


@pytest.mark.gpu
def test_hybrid_rejects_graph_options():
    g = hub_graph(False, n=200, m=1000)
    with pytest.raises(ValueError, match="use_graph"):
        webrank.pagerank(g, device="gpu", method="hybrid", engine_options={"use_graph": True})
    with pytest.raises(ValueError, match="gpu_links"):
        webrank.pagerank(g, device="gpu", method="hybrid", engine_options={"gpu_links": 0})
