"""GPU-side graph construction and the reordered gather (GPU tests skip without one)."""

from __future__ import annotations

import numpy as np
import pytest
from test_hybrid import hub_graph

import webrank
from webrank import Graph
from webrank.backends.gpu_build import device_bytes


def test_device_bytes_is_about_four_bytes_per_edge():
    # R-MAT scale 26: 67M nodes, 1.07B edges
    n, m = 2**26, 16 * 2**26
    b = device_bytes(n, m, "float32")
    assert 4 * m < b < 4 * m + 80 * n
    assert device_bytes(n, 2**31, "float32") > device_bytes(n, 2**31 - 1, "float32")


@pytest.mark.gpu
@pytest.mark.parametrize("duplicates", ["collapse", "sum"])
def test_graph_on_device_equals_host_construction(duplicates):
    import cupy as cp

    from webrank.backends.gpu_build import graph_on_device

    rng = np.random.default_rng(5)
    n, m = 5000, 60000
    src = rng.integers(0, n, m)
    dst = np.minimum((rng.pareto(1.0, m) * 5).astype(np.int64), n - 1)  # many duplicates
    host = Graph.from_edges(src, dst, node_ids="range", num_nodes=n, duplicates=duplicates)
    dev = graph_on_device(cp.asarray(src, dtype=cp.int32), cp.asarray(dst), n,
                          duplicates=duplicates)
    assert dev.on_gpu and not host.on_gpu
    back = dev.to_host()
    np.testing.assert_array_equal(back.indptr, host.indptr)
    np.testing.assert_array_equal(back.indices, host.indices)
    np.testing.assert_array_equal(back.out_weight, host.out_weight)
    if host.weights is None:
        assert back.weights is None
    else:
        np.testing.assert_array_equal(back.weights, host.weights)
    a = webrank.pagerank(dev, tol=1e-11, device="gpu")
    b = webrank.pagerank(host, tol=1e-11, device="cpu")
    assert np.abs(a.scores - b.scores).sum() < 1e-9
    with pytest.raises(ValueError, match="on the GPU"):
        webrank.pagerank(dev, device="cpu")


@pytest.mark.gpu
def test_graph_on_device_rejects_bad_ids():
    import cupy as cp

    from webrank.backends.gpu_build import graph_on_device

    with pytest.raises(webrank.GraphFormatError, match="out of range"):
        graph_on_device(cp.array([0, 1, 7]), cp.array([1, 2, 0]), 5)
    with pytest.raises(webrank.GraphFormatError, match="out of range"):
        graph_on_device(cp.array([0, -1]), cp.array([1, 2]), 5)
    with pytest.raises(webrank.GraphFormatError, match="differ in length"):
        graph_on_device(cp.array([0, 1]), cp.array([1]), 5)


@pytest.mark.gpu
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_reordered_gather_gives_the_same_answer(weighted, dtype):
    g = hub_graph(weighted)
    a = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype)
    b = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype,
                         engine_options={"reorder": "out-degree"})
    c = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype,
                         engine_options={"reorder": "out-degree", "use_graph": False})
    assert abs(a.iterations - b.iterations) <= 1
    tol = 1e-12 if dtype == "float64" else 1e-7
    assert np.abs(a.scores - b.scores).sum() < tol
    assert np.abs(b.scores - c.scores).sum() < tol
    with pytest.raises(ValueError, match="reorder"):
        webrank.pagerank(g, device="gpu", engine_options={"reorder": "bogus"})


@pytest.mark.gpu
def test_to_device_in_slices_and_weights_checked_there(monkeypatch):
    import cupy as cp

    import webrank.arrays
    from webrank.build import first_bad_weight

    monkeypatch.setattr(webrank.arrays, "UPLOAD_SLICE_BYTES", 1 << 12)
    a = np.random.default_rng(2).random(100_003)
    d = webrank.arrays.to_device(a)
    assert isinstance(d, cp.ndarray) and np.array_equal(d.get(), a)
    assert np.array_equal(webrank.arrays.to_device(a, np.float32).get(), a.astype(np.float32))
    a[77_777] = -1.0
    assert first_bad_weight(webrank.arrays.to_device(a)) == 77_777


@pytest.mark.gpu
def test_cache_loaded_for_the_gpu_equals_the_host_load(tmp_path):
    rng = np.random.default_rng(9)
    g = Graph.from_edges(rng.integers(0, 3000, 40000), rng.integers(0, 3000, 40000),
                         rng.random(40000))
    p = tmp_path / "g.npz"
    webrank.save_graph(g, p)
    dev = webrank.load(p, device="gpu")
    assert dev.on_gpu
    back = dev.to_host()
    for a in ("indptr", "indices", "out_weight", "weights", "labels"):
        np.testing.assert_array_equal(getattr(back, a), getattr(g, a))
