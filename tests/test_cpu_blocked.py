"""The CPU's blocked (partition-centric) step: its layout holds every link once, it
computes the pull step's PageRank, ``engine`` chooses it, and ``auto`` takes it only for
solves long enough to repay its build."""

from __future__ import annotations

import numpy as np
import pytest
from reference import exact_pagerank
from test_blocking import random_graph

import webrank
from webrank.backends.cpu import BLOCKED_MIN_STEPS
from webrank.backends.options import EngineOptions
from webrank.kernels import cpu


def layout_links(layout: cpu.CPUBlockedLayout) -> tuple[np.ndarray, np.ndarray]:
    """(row, source) of every link of the layout, in layout order."""
    parts = layout.part_ptr.size - 1
    pair_part = np.repeat(np.arange(parts), np.diff(layout.pair_ptr))
    lens = layout.pair_len.astype(np.int64)
    link_part = np.repeat(pair_part, lens)
    rows = layout.part_ptr[link_part] + layout.dst_local.astype(np.int64)
    return rows, np.repeat(layout.pair_src.astype(np.int64), lens)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("part_rows,max_run", [(64, 65535), (1000, 3), (65536, 1)])
def test_layout_holds_every_link_once(rng, weighted, part_rows, max_run):
    g = random_graph(rng, 3000, 40000, weighted)
    vals = g.transition_values()
    vals = np.zeros(0) if vals is None else vals
    L = cpu.blocked_layout(g.indptr, g.indices, vals, part_rows=part_rows, max_run=max_run)
    sizes = np.diff(L.part_ptr)
    assert L.part_ptr[0] == 0 and L.part_ptr[-1] == g.n and sizes.max() <= part_rows
    assert sizes.min() >= 1
    np.testing.assert_array_equal(L.edge_ptr, g.indptr[L.part_ptr])
    assert L.pair_len.min() >= 1 and L.pair_len.max() <= max_run
    assert int(L.pair_len.astype(np.int64).sum()) == g.num_edges
    rows, src = layout_links(L)
    # inside a partition: sources ascending, a source's rows ascending
    key = rows // part_rows * 0 + np.searchsorted(L.part_ptr, rows, side="right")
    order = np.lexsort((rows, src, key))
    np.testing.assert_array_equal(order, np.arange(rows.size))
    # the same links as the CSR (and the same values, moved with them)
    csr_rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    got = np.lexsort((src, rows))
    np.testing.assert_array_equal(rows[got], csr_rows)
    np.testing.assert_array_equal(src[got], g.indices)
    if weighted:
        np.testing.assert_array_equal(L.vals[got], vals)
    else:
        assert L.vals.size == 0
    # the pairs are maximal runs (cut only at max_run)
    same = (np.repeat(np.arange(sizes.size), np.diff(L.pair_ptr))[1:]
            == np.repeat(np.arange(sizes.size), np.diff(L.pair_ptr))[:-1])
    merged = same & (L.pair_src[1:] == L.pair_src[:-1])
    assert np.all(L.pair_len[:-1][merged] == max_run)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_blocked_equals_pull_and_the_exact_solve(rng, weighted, criterion):
    g = random_graph(rng, 400, 5000, weighted)
    pers = rng.random(g.n)
    pers[::7] = 0
    dang = rng.random(g.n)
    for kw in ({}, {"personalization": pers, "dangling": dang}):
        exact = exact_pagerank(g, personalization=kw.get("personalization"),
                               dangling=kw.get("dangling"))
        runs = {e: webrank.pagerank(g, device="cpu", engine=e, method="power", tol=1e-13,
                                    criterion=criterion, **kw) for e in ("pull", "blocked")}
        assert runs["blocked"].info["engine"] == "blocked"
        assert runs["pull"].info["engine"] == "pull"
        assert runs["blocked"].iterations == runs["pull"].iterations
        assert np.abs(runs["blocked"].scores - runs["pull"].scores).sum() < 1e-14
        assert np.abs(runs["blocked"].scores - exact).sum() < 1e-11
        # float32 gathers: delta steps through the layout, as through the CSR (float32
        # transition values of a weighted graph bound the accuracy: 1e-8 relative)
        f32 = {e: webrank.pagerank(g, device="cpu", engine=e, method="power", tol=1e-11,
                                   dtype="float32", criterion=criterion, **kw)
               for e in ("pull", "blocked")}
        assert np.abs(f32["blocked"].scores - f32["pull"].scores).sum() < 1e-12
        assert np.abs(f32["blocked"].scores - exact).sum() < (1e-7 if weighted else 1e-8)


def test_isolated_nodes_and_an_empty_graph_part(rng):
    """Nodes with no in-links (whole partitions of them) and no links at all."""
    src = np.arange(0, 50)
    dst = (src * 7) % 50
    g = webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=5000)
    r = webrank.pagerank(g, device="cpu", engine="blocked", method="power", tol=1e-13)
    np.testing.assert_allclose(r.scores, exact_pagerank(g), rtol=0, atol=1e-14)
    empty = webrank.Graph.from_edges(np.zeros(0, int), np.zeros(0, int), node_ids="range",
                                     num_nodes=10)
    r = webrank.pagerank(empty, device="cpu", engine="blocked", method="power")
    np.testing.assert_allclose(r.scores, np.full(10, 0.1))


def test_auto_takes_the_pull_step_with_few_threads(rng, monkeypatch):
    """Below BLOCKED_MIN_THREADS threads the blocked step does not repay its layout."""
    import webrank.backends.cpu as cpu_backend

    monkeypatch.setattr(cpu, "SMALL_GRAPH_EDGES", 0)
    monkeypatch.setattr(cpu_backend, "BLOCKED_MIN_THREADS", cpu.num_threads() + 1)
    g = random_graph(rng, 2000, 20000)
    r = webrank.pagerank(g, device="cpu", method="power", tol=1e-12)
    assert r.info["engine"] == "pull"
    r = webrank.pagerank(g, device="cpu", method="power", tol=1e-12, engine="blocked")
    assert r.info["engine"] == "blocked"  # (asked for: still there)


def test_auto_builds_the_layout_only_for_long_solves(rng, monkeypatch):
    import webrank.backends.cpu as cpu_backend

    monkeypatch.setattr(cpu, "SMALL_GRAPH_EDGES", 0)
    monkeypatch.setattr(cpu_backend, "BLOCKED_MIN_THREADS", 1)  # (the rule for many cores)
    g = random_graph(rng, 2000, 20000)
    short_tol = 0.85 ** (BLOCKED_MIN_STEPS - 5)
    r = webrank.pagerank(g, device="cpu", method="power", tol=short_tol)
    assert r.info["engine"] == "pull" and not any(k[0] == "cpu-blocked" for k in
                                                   g._cache if isinstance(k, tuple))
    r = webrank.pagerank(g, device="cpu", method="power", tol=1e-10)
    assert r.info["engine"] == "blocked" and r.info["layout_build_s"] > 0
    # once built, the layout serves every later solve of the graph, short ones too
    r = webrank.pagerank(g, device="cpu", method="power", tol=short_tol)
    assert r.info["engine"] == "blocked" and r.info["layout_build_s"] < 1e-3
    # max_iter bounds the expected steps
    g2 = random_graph(rng, 2000, 20000)
    r = webrank.pagerank(g2, device="cpu", method="power", tol=1e-10,
                         max_iter=BLOCKED_MIN_STEPS - 1, raise_on_nonconvergence=False)
    assert r.info["engine"] == "pull"


def test_engine_names_are_checked(rng):
    g = random_graph(rng, 100, 500)
    with pytest.raises(ValueError, match="not a CPU engine"):
        webrank.pagerank(g, device="cpu", engine="persistent")
    with pytest.raises(ValueError, match="not a CPU engine"):
        EngineOptions(engine="stream").for_device("cpu", "float64")
    with pytest.raises(ValueError, match=r"options \['part_rows'\] apply to device='gpu'"):
        webrank.pagerank(g, device="cpu", engine="blocked", engine_options={"part_rows": 64})
    with pytest.raises(ValueError, match="part_rows must be in"):
        cpu.blocked_layout(g.indptr, g.indices, np.zeros(0), part_rows=70000)
