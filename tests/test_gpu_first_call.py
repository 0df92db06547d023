"""No kernel is compiled on the first call of a public GPU entry point: each runs in a
fresh process whose CuPy kernel cache is empty (tests/gpu_first_calls.py), and neither
CuPy's own kernels nor webrank's are compiled by NVRTC on the way. Skipped without a GPU
or without the prebuilt kernels (``pip install .``, or ``python tools/build_native.py``)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from gpu_first_calls import CLI, ENTRIES, run
from package_path import WEBRANK_PATH

import webrank
from webrank.kernels import cuda_loader

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def graph_files(tmp_path_factory):
    """A small web-like graph as an edge list and as a graph cache (dangling nodes,
    self-loops and a few isolated ids included)."""
    where = cuda_loader.folder()
    if where is None or not cuda_loader.read_index(where):
        pytest.skip("no prebuilt CUDA kernels (pip install . or tools/build_native.py)")
    folder = tmp_path_factory.mktemp("first_call")
    g = webrank.generate_graph("rmat", 13, seed=7)
    src, dst, _ = g.edges()
    src = np.concatenate([src, np.arange(5)])
    dst = np.concatenate([dst, np.arange(5)])
    text = folder / "g.txt"
    np.savetxt(text, np.stack([src, dst], axis=1), fmt="%d")
    cache = folder / "g.npz"
    webrank.save_graph(webrank.load(str(text)), str(cache))
    return {"txt": str(text), "npz": str(cache)}


def _env():
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": WEBRANK_PATH + (os.pathsep + path if path else "")}


def _assert_nothing_compiled(report):
    compiled = report.get("compiled_at_load", []) + report["compiled"]
    assert compiled == [], "\n".join(
        f"{c['kernels']} from {' <- '.join(reversed(c['at']))}" for c in compiled)


@pytest.mark.parametrize("kind", ["txt", "npz"])
def test_cli_rank_compiles_nothing(graph_files, kind):
    """Nor does it import SciPy (CuPy's SciPy layer comes with an operator between a
    CuPy array and a Python scalar, which no GPU path runs: 0.4 s of a process)."""
    report = run(graph_files[kind], CLI, _env())
    _assert_nothing_compiled(report)
    assert report["imported"] == []


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_entry_point_compiles_nothing(graph_files, entry):
    if entry == "networkx":
        nx = pytest.importorskip("networkx")
        if "webrank" not in nx.config.backends:
            pytest.skip("the webrank backend is not installed (an entry point)")
    _assert_nothing_compiled(run(graph_files["txt"], entry, _env()))


def test_the_runtime_adopts_the_early_primary_context(graph_files, tmp_path):
    """The context the console script starts through the driver is the one CuPy then
    works in (no second context), and a whole `python -m webrank rank` on the GPU gives
    the CPU's scores."""
    import json
    import subprocess
    import sys

    probe = """
import ctypes
from webrank.kernels import cuda_context
cuda_context.start_primary_context()
cuda_context._started.join()
import cupy
cupy.zeros(1).sum()
drv = ctypes.CDLL("libcuda.so.1")
current, primary, dev = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
drv.cuCtxGetCurrent(ctypes.byref(current))
drv.cuDeviceGet(ctypes.byref(dev), 0)
drv.cuDevicePrimaryCtxRetain(ctypes.byref(primary), dev)
print(current.value == primary.value and current.value is not None)
"""
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env=_env(), timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stderr
    out = tmp_path / "s.parquet"
    p = subprocess.run([sys.executable, "-m", "webrank", "rank", graph_files["txt"],
                        "--device", "gpu", "--tol", "1e-10", "--json", "-o", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["device"] == "gpu"
    import pyarrow.parquet as pq

    table = pq.read_table(out).to_pydict()
    g = webrank.load(graph_files["txt"])
    want = webrank.pagerank(g, device="cpu", tol=1e-12)
    labels = np.arange(g.n) if g.labels is None else np.asarray(g.labels)
    order = np.argsort(labels)
    at = order[np.searchsorted(labels, np.asarray(table["node"]), sorter=order)]
    assert len(table["node"]) == g.n
    np.testing.assert_allclose(np.asarray(table["score"]), want.scores[at], atol=1e-8)
