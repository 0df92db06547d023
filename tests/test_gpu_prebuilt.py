"""The prebuilt CUDA kernels on a GPU (webrank.kernels.cuda_loader): every instantiation
of every family loads from the binaries built with the package, with no NVRTC compile,
and the answers equal those of the kernels compiled on first use. Skipped without a GPU,
and without a prebuilt set (``pip install .``, or ``python tools/build_native.py`` where
NVRTC can be imported; ``WEBRANK_CUDA_PREBUILT=DIR`` names another folder)."""

from __future__ import annotations

import numpy as np
import pytest

import webrank
from webrank.kernels import cuda_common, cuda_dense, cuda_loader, cuda_prebuilt

pytestmark = pytest.mark.gpu


@pytest.fixture
def compiles(monkeypatch):
    """compiled_kernel with its per-process cache emptied; the list of the NVRTC
    compiles (CuPy RawModules made from source) made through it meanwhile."""
    import cupy

    made = []
    real = cupy.RawModule

    def counting(*args, **kwargs):
        if kwargs.get("code") is not None:
            made.append(tuple(kwargs.get("name_expressions") or ()))
        return real(*args, **kwargs)

    monkeypatch.setattr(cupy, "RawModule", counting)
    cuda_common._compile.cache_clear()
    yield made
    cuda_common._compile.cache_clear()


@pytest.fixture
def prebuilt():
    """The folder of prebuilt kernels in use (skips the test where there is none)."""
    where = cuda_loader.folder()
    if where is None or not cuda_loader.read_index(where):
        pytest.skip(f"no prebuilt CUDA kernels in {where} (pip install . or "
                    "python tools/build_native.py, with NVRTC importable)")
    return where


def _device():
    import cupy

    cc = cupy.cuda.Device().compute_capability
    return (int(cc[:-1]), int(cc[-1])), cupy.cuda.runtime.driverGetVersion()


def test_every_instantiation_loads_without_nvrtc(prebuilt, compiles):
    capability, driver = _device()
    index = cuda_loader.read_index(prebuilt)
    if cuda_loader.pick(next(iter(index["sources"].values()))["files"], capability, driver,
                        tuple(index["nvrtc"])) is None:
        pytest.skip(f"no prebuilt file for compute capability {capability}")
    loaded = 0
    for family in cuda_prebuilt.kernel_families().values():
        for name, cooperative in family.names:
            hit = cuda_loader.find(family.source, name, capability, driver, prebuilt)
            assert hit is not None, (family.module, name)
            kernel = cuda_common.compiled_kernel(family.source, name, cooperative=cooperative)
            assert kernel.file_path == str(hit.path), name
            assert kernel.name == hit.lowered
            assert kernel.enable_cooperative_groups == cooperative
            assert kernel.num_regs > 0  # the function is there
            loaded += 1
    assert compiles == []
    assert loaded > 400


def _answers():
    """A small ranking through every GPU path whose kernels are prebuilt."""
    g = webrank.generate_graph("rmat", 12, seed=3)
    src, dst, _ = g.edges()
    w = np.random.default_rng(3).random(src.size) + 0.5
    gw = webrank.Graph.from_edges(src, dst, w)
    out = {}
    for graph, tag in ((g, "u"), (gw, "w")):
        for engine in ("pull", "blocked", "persistent", "stream"):
            for dtype in ("float32", "float64"):
                r = webrank.pagerank(graph, device="gpu", engine=engine, dtype=dtype,
                                     tol=1e-10)
                out[f"{tag}-{engine}-{dtype}"] = (r.scores, r.iterations)
    for method in ("adaptive", "fixed"):
        r = webrank.pagerank(g, device="gpu", method=method, tol=1e-10)
        out[method] = (r.scores, r.iterations)
    r = webrank.personalized_pagerank(g, [[0], [1, 2], [5]], device="gpu", tol=1e-10)
    out["ppr"] = (r.scores, tuple(r.iterations))
    import cupy as cp

    n = 200
    mat = np.random.default_rng(4).random((n, n))
    x = np.random.default_rng(5).random(n)
    for dtype in ("float32", "float64"):
        for column_major in (False, True):
            kernel = cuda_dense.get_kernel(dtype, column_major)
            gd = cp.asarray(mat.T if column_major else mat, dtype=dtype)
            xd, yd = cp.asarray(x, dtype=dtype), cp.zeros(n, dtype=dtype)
            kernel((1,), (256,), (np.int64(n), gd, xd, yd))
            out[f"dense-{dtype}-{column_major}"] = (cp.asnumpy(yd), 0)
    return out


def test_prebuilt_answers_equal_those_compiled_on_first_use(prebuilt, compiles,
                                                            monkeypatch):
    monkeypatch.setenv(cuda_loader.ENV, "0")  # every kernel compiled by NVRTC
    jit = _answers()
    assert compiles  # (the JIT path ran)
    cuda_common._compile.cache_clear()
    monkeypatch.setenv(cuda_loader.ENV, str(prebuilt))
    compiles.clear()
    pre = _answers()
    # kernels of webrank's own families came from the prebuilt set (CuPy's own may compile)
    ours = {n for f in cuda_prebuilt.instantiations().values() for n, _ in f}
    assert not [c for c in compiles if set(c) & ours]
    for key, (scores, iterations) in jit.items():
        got, got_iterations = pre[key]
        # the same kernels up to the order of the block atomics (the reductions)
        tol = 1e-5 if "float32" in key else 1e-11
        np.testing.assert_allclose(got, scores, rtol=tol, atol=tol * 1e-3, err_msg=key)
        if not key.startswith("dense"):
            assert np.all(np.abs(np.asarray(got_iterations) - np.asarray(iterations)) <= 1), key
