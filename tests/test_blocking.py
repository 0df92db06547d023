"""The propagation-blocking layout (webrank.blocking): plan invariants, the reference
construction, and the reference step against the CSR product, on CPU."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import dataset
from hypothesis import given, settings
from hypothesis import strategies as st

import webrank
from webrank.blocking import (
    MAX_LOCAL,
    blocked_propagate,
    build_blocked,
    entry_chunks,
    entry_parts,
    plan_blocks,
)


def random_graph(rng, n, m, weighted=False):
    """Random graph with dangling and isolated nodes, self-loops and a hub."""
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.2, 0, rng.integers(0, n, m))  # node 0: a hub
    src[: max(1, m // 50)] = dst[: max(1, m // 50)]  # self-loops
    keep = src < n - max(1, n // 10)  # the last tenth of the ids have no out-links
    src, dst = src[keep], dst[keep]
    w = rng.random(src.size) + 0.1 if weighted else None
    return webrank.Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n)


def check_layout(g, plan, layout):
    """Every invariant of a layout: each in-link of the covered rows is exactly one entry
    of the right block, with its offsets in range."""
    rb, re_ = plan.row_begin, plan.row_end
    lo, hi = int(g.indptr[rb]), int(g.indptr[re_])
    assert layout.num_entries == hi - lo
    assert layout.blk_ptr[0] == 0 and layout.blk_ptr[-1] == hi - lo
    assert np.all(np.diff(layout.blk_ptr) >= 0)
    sizes = np.diff(plan.part_ptr)
    assert sizes.min() >= 1 and sizes.max() <= MAX_LOCAL
    assert plan.part_ptr[0] == rb and plan.part_ptr[-1] == re_
    chunk = entry_chunks(layout)
    part = entry_parts(layout)
    src = (chunk << plan.chunk_bits) + layout.src_local
    dst = plan.part_ptr[part] + layout.dst_local
    assert np.all(layout.dst_local < sizes[part])
    assert np.all(src < g.n)
    got = np.sort(dst.astype(np.int64) * g.n + src)
    want = np.sort(g.targets[lo:hi].astype(np.int64) * g.n + g.indices[lo:hi])
    np.testing.assert_array_equal(got, want)
    # tiles cover every entry once, each inside one chunk
    tp, tc = layout.tile_ptr, layout.tile_chunk
    assert tp[0] == 0 and tp[-1] == layout.num_entries and np.all(np.diff(tp) > 0)
    assert np.all(np.diff(tp) <= plan.tile_entries)
    P = plan.num_parts
    assert np.all(tp[:-1] >= layout.blk_ptr[tc * P]) and np.all(tp[1:] <= layout.blk_ptr[
        (tc + 1) * P])
    assert sorted(layout.part_order.tolist()) == list(range(P))


@pytest.mark.parametrize("weighted", [False, True])
def test_layout_and_reference_step_match_the_csr(rng, weighted):
    g = random_graph(rng, 5000, 40000, weighted)
    for part_rows, bits, workers in ((64, 6, 1), (700, 9, 4), (MAX_LOCAL, 14, 132)):
        plan = plan_blocks(g.indptr, n_src=g.n, part_rows_max=part_rows,
                           chunk_bits_max=bits, workers=workers)
        layout = build_blocked(g.indptr, g.indices, plan, g.transition_values())
        check_layout(g, plan, layout)
        xs = rng.random(g.n)
        want = g.to_scipy() @ xs if not weighted else (
            webrank.Graph(indptr=g.indptr, indices=g.indices, out_weight=g.out_weight,
                          weights=g.transition_values()).to_scipy() @ xs)
        np.testing.assert_allclose(blocked_propagate(layout, xs), want, rtol=1e-12,
                                   atol=1e-12)


def test_row_ranges_split_the_graph(rng):
    """Layouts of disjoint row ranges (one per GPU, or per pass of an out-of-core run)
    together give the whole product, with sources from all nodes."""
    g = random_graph(rng, 3000, 30000)
    xs = rng.random(g.n)
    cuts = [0, 0, 1, 1200, 1201, 3000]  # an empty range and one-row ranges too
    parts = []
    for a, b in itertools.pairwise(cuts):
        plan = plan_blocks(g.indptr, n_src=g.n, row_begin=a, row_end=b, part_rows_max=256,
                           workers=8)
        layout = build_blocked(g.indptr, g.indices, plan)
        if b > a:
            check_layout(g, plan, layout)
        parts.append(blocked_propagate(layout, xs))
    np.testing.assert_allclose(np.concatenate(parts), g.to_scipy() @ xs, rtol=1e-12)


def test_plan_balances_partitions_by_in_links(rng):
    g = random_graph(rng, 20000, 200000)
    plan = plan_blocks(g.indptr, n_src=g.n, part_rows_max=MAX_LOCAL, workers=16)
    edges = np.diff(g.indptr[plan.part_ptr])
    # two per worker, less the boundaries that fell inside the hub's row (a fifth of
    # the in-links): the hub cannot be split, the other partitions stay near the target
    assert plan.num_parts >= 32 * 0.8 - 1
    assert np.median(edges) <= 2 * g.num_edges / plan.num_parts
    with pytest.raises(ValueError, match="part_rows_max"):
        plan_blocks(g.indptr, n_src=g.n, part_rows_max=MAX_LOCAL + 1)
    with pytest.raises(ValueError, match="row range"):
        plan_blocks(g.indptr, n_src=g.n, row_begin=5, row_end=g.n + 1, part_rows_max=64)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), m=st.integers(0, 2000), rows=st.integers(1, 300),
       bits=st.integers(6, 9), seed=st.integers(0, 2**32 - 1))
def test_any_graph_any_plan(n, m, rows, bits, seed):
    rng = np.random.default_rng(seed)
    g = webrank.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m),
                                 node_ids="range", num_nodes=n)
    plan = plan_blocks(g.indptr, n_src=n, part_rows_max=min(rows, MAX_LOCAL),
                       chunk_bits_max=bits, workers=int(rng.integers(1, 9)))
    layout = build_blocked(g.indptr, g.indices, plan)
    check_layout(g, plan, layout)
    xs = rng.random(n)
    np.testing.assert_allclose(blocked_propagate(layout, xs), g.to_scipy() @ xs, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.slow
def test_real_graph_layout():
    g = webrank.load(dataset("cnr-2000"))
    plan = plan_blocks(g.indptr, n_src=g.n, part_rows_max=24576, workers=132)
    layout = build_blocked(g.indptr, g.indices, plan)
    check_layout(g, plan, layout)
    # web graphs in crawl order keep most links near the diagonal: few non-empty blocks
    assert (np.diff(layout.blk_ptr) > 0).mean() < 0.5
