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
