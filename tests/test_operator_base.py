"""Shared host-side logic of the operators (webrank.backends.base)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from webrank.kernels.criteria import StopTest


def test_first_below_scans_a_batch_and_reports_to_the_callback():
    seen = []
    res = np.array([9.0, 4.0, 1.0, 0.25])  # steps 5..8
    assert StopTest(0, 2.0).first_below(res, 5, lambda s, r: seen.append((s, r))) == 7
    assert StopTest(0, 0.1).first_below(res, 5, lambda s, r: seen.append((s, r))) is None
    # L2 keeps squared residuals: the callback gets the norm; a fixed-point unit scales it
    assert StopTest(1, 5.0, 0.5).first_below(res, 1, lambda s, r: seen.append((s, r))) == 2
    assert seen == [(7, 1.0), (8, 0.25), (2, 1.0)]
    assert StopTest(2, 5.0).first_below(res, 1, None) == 2
    assert StopTest.of("l2", 3.0) == StopTest(1, 9.0)


def test_dangling_mask_and_gather_scale():
    import webrank

    g = webrank.Graph.from_edges([0, 0, 1], [1, 2, 2], num_nodes=4, node_ids="range")
    assert g.dangling_mask.tolist() == [False, False, True, True]
    assert g.gather_scale().tolist() == [0.5, 1.0, 0.0, 0.0]
    w = webrank.Graph.from_edges([0, 0, 1], [1, 2, 2], [1.0, 3.0, 2.0])
    assert w.gather_scale().tolist() == [1.0, 1.0, 0.0]  # (values hold w / out-weight)
    assert not hasattr(g, "dangling")  # (one name: dangling_mask)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=200), st.integers(1, 60))
def test_stream_row_chunks_cover_the_rows_each_as_full_as_it_may_be(degrees, chunk_edges):
    """The streamed engine's chunks: consecutive, covering every row once, each of at most
    ``chunk_edges`` links unless one row alone holds more, and none could take the next
    row without passing the bound."""
    from webrank.backends.gpu_stream import stream_row_chunks

    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    bounds = stream_row_chunks(indptr, chunk_edges)
    n = len(degrees)
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) > 0)
    for a, b in itertools.pairwise(bounds):
        links = indptr[b] - indptr[a]
        assert links <= chunk_edges or b == a + 1
        if b < n:
            assert indptr[b + 1] - indptr[a] > chunk_edges


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=300), st.integers(0, 120),
       st.integers(1, 40), st.booleans())
def test_staged_rows_keep_the_light_rows_links_and_share_the_work(degrees, threshold,
                                                                  nwarps, weighted):
    """The persistent engine's staged layout: each light row's in-links (and values) as
    in the CSR, the split rows' ranges empty, the CSR itself where none is split; the
    warps' row ranges consecutive, covering every row, each share of links plus
    STAGED_ROW_COST a row within one row's cost of an equal split."""
    from webrank.backends.gpu import STAGED_ROW_COST, staged_rows

    rng = np.random.default_rng(len(degrees) + threshold)
    deg = np.asarray(degrees, dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int32)
    indices = rng.integers(0, deg.size, int(deg.sum())).astype(np.int32)
    vals = rng.random(indices.size).astype(np.float32) if weighted else None
    out = staged_rows(indptr, indices, vals, threshold, nwarps)
    light_ptr = out["indptr"]
    if out["indices"] is None:  # no row split: the CSR is its own light CSR
        assert (deg <= threshold).all() and light_ptr is indptr
        light_idx, light_vals = indices, vals
    else:
        light_idx, light_vals = out["indices"], out["vals"]
        assert light_ptr.dtype == indptr.dtype and light_idx.size == light_ptr[-1]
    for r, d in enumerate(deg):
        a, b = light_ptr[r], light_ptr[r + 1]
        if d > threshold:
            assert a == b
            continue
        np.testing.assert_array_equal(light_idx[a:b], indices[indptr[r]:indptr[r + 1]])
        if weighted:
            np.testing.assert_array_equal(light_vals[a:b], vals[indptr[r]:indptr[r + 1]])
    rows = out["warp_rows"]
    assert rows.size == nwarps + 1 and rows[0] == 0 and rows[-1] == deg.size
    assert np.all(np.diff(rows) >= 0)
    cost = np.arange(deg.size + 1) * STAGED_ROW_COST + light_ptr.astype(np.int64)
    most = STAGED_ROW_COST + int(np.diff(light_ptr).max(initial=0))  # one row's cost
    shares = np.diff(cost[rows])
    assert np.all(np.abs(shares - cost[-1] / nwarps) <= most + 1)
