"""The small-graph path, the compiled kernels and lazy imports: the serial step against
the parallel one and both against SciPy's product, the size switch between them, thread
counts, what a fresh process imports, and that no entry point loads a JIT compiler (no
timing asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import scipy_step
from test_pagerank import random_graph

import webrank
from webrank.backends.cpu import CPUOperator
from webrank.kernels import cpu as kernels

ALWAYS_NATIVE, NEVER_NATIVE = 0, 2**62  # SMALL_GRAPH_EDGES forcing each step
# the environment of the subprocess tests: the default threshold, whatever this one sets
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "WEBRANK_SMALL_GRAPH_EDGES"}


def run_both(monkeypatch, g, **kw):
    """The same pagerank call through the parallel step and through the serial one."""
    out = []
    for threshold in (ALWAYS_NATIVE, NEVER_NATIVE):
        monkeypatch.setattr(kernels, "SMALL_GRAPH_EDGES", threshold)
        out.append(webrank.pagerank(g, device="cpu", method="power", **kw))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), n=st.integers(1, 60), density=st.floats(0.0, 4.0),
       weighted=st.booleans(), isolated=st.integers(0, 3), personalize=st.booleans(),
       dangling=st.booleans(), criterion=st.sampled_from(["l1", "l2", "linf"]),
       dtype=st.sampled_from(["float64", "float32"]), alpha=st.sampled_from([0.5, 0.85, 0.99]))
def test_serial_step_matches_parallel_step(monkeypatch, seed, n, density, weighted, isolated,
                                         personalize, dangling, criterion, dtype, alpha):
    # random_graph gives self-loops, dangling and (with isolated > 0) isolated nodes
    g = random_graph(seed, n, int(density * n), weighted, isolated)
    rng = np.random.default_rng(seed + 1)
    pers = rng.uniform(0, 1, g.n) + 1e-3 if personalize else None
    dang = rng.uniform(0, 1, g.n) + 1e-3 if dangling else None
    native, serial = run_both(monkeypatch, g, alpha=alpha, personalization=pers,
                            dangling=dang, criterion=criterion, dtype=dtype, tol=1e-11,
                            max_iter=5000)
    if dtype == "float64" or not g.is_weighted:
        # the same products and row sums in the same order: only the reductions (residual,
        # dangling mass) are grouped differently. With a float32 gather that last-bit
        # difference can flip one rounding of the float32 vector, which the delta steps'
        # residuals (sums of changes, not of scores) see at float32's relative precision
        f32 = dtype == "float32"
        assert abs(native.iterations - serial.iterations) <= (1 if f32 else 0)
        np.testing.assert_allclose(serial.scores, native.scores, rtol=0, atol=1e-12)
        k = min(native.residuals.size, serial.residuals.size)
        np.testing.assert_allclose(serial.residuals[:k], native.residuals[:k],
                                   rtol=1e-6 if f32 else 1e-9, atol=1e-15)
    else:
        # weighted float32: the compiled step rounds each product val * xs[j] to float32 (~6e-8
        # relative), SciPy does not; the first (plain) step's rounding stays in the answer,
        # amplified by up to 1 / (1 - alpha), and the residuals near tol differ a little
        assert np.abs(serial.scores - native.scores).sum() < 5e-8 / (1 - alpha)
        assert abs(native.iterations - serial.iterations) <= max(2, native.iterations // 50)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_both_steps_on_a_larger_graph(monkeypatch, dtype, criterion):
    """A graph above the default threshold (weighted, dangling, isolated, personalized),
    through both steps: float32 exercises the delta steps of both."""
    g = random_graph(5, 8000, 40000, weighted=True, isolated=10)
    pers = np.random.default_rng(2).uniform(0, 1, g.n)
    native, serial = run_both(monkeypatch, g, personalization=pers, criterion=criterion,
                            dtype=dtype, tol=1e-10)
    assert native.iterations == serial.iterations
    if dtype == "float64":
        assert np.abs(serial.scores - native.scores).max() < 1e-12
    else:  # weighted float32: see test_serial_step_matches_parallel_step
        assert np.abs(serial.scores - native.scores).sum() < 1e-7


def test_threshold_switch_on_both_sides(monkeypatch):
    g = random_graph(3, 50, 200, weighted=False)
    m = g.num_edges
    monkeypatch.setattr(kernels, "SMALL_GRAPH_EDGES", m)  # m edges: not below the threshold
    assert CPUOperator(g, 0.85, None, None, "float64").kernel == "native"
    monkeypatch.setattr(kernels, "SMALL_GRAPH_EDGES", m + 1)
    assert CPUOperator(g, 0.85, None, None, "float64").kernel == "serial"
    assert kernels.use_native(kernels.SMALL_GRAPH_EDGES) and not kernels.use_native(m)


@pytest.mark.skipif("WEBRANK_SMALL_GRAPH_EDGES" in os.environ,
                    reason="WEBRANK_SMALL_GRAPH_EDGES sets another threshold")
def test_default_threshold_routes_small_and_large_graphs():
    assert kernels.SMALL_GRAPH_EDGES == 150_000
    small = random_graph(1, 100, 400, weighted=False)
    assert small.num_edges < kernels.SMALL_GRAPH_EDGES
    assert CPUOperator(small, 0.85, None, None, "float64").kernel == "serial"
    n = kernels.SMALL_GRAPH_EDGES  # ~0.63 n distinct edges per n drawn
    large = random_graph(1, n, 2 * n, weighted=False)
    assert large.num_edges >= kernels.SMALL_GRAPH_EDGES
    assert CPUOperator(large, 0.85, None, None, "float64").kernel == "native"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("delta", [False, True])
def test_fused_step_and_scipy_step_return_the_same(threads, weighted, delta):
    """The compiled fused_step (serial, and parallel over chunks) and scipy_step, SciPy's
    CSR product, on the same matrix: the same returns."""
    g = random_graph(9, 3000, 90000, weighted=weighted, isolated=2)
    op = CPUOperator(g, 0.85, None, None, "float64")
    x = np.random.default_rng(2).uniform(0, 1, g.n)
    x /= x.sum()
    xs = x * op._inv_out
    terms = kernels.StepTerms(v=op._v_k, d=op._d_k, inv_out=op._inv_out, alpha=0.85, crit=0)
    bounds = (kernels.chunk_bounds(g.indptr, 16) if threads > 1
              else np.array([0, g.n], dtype=np.int64))
    partial = np.zeros((bounds.size, 3))
    outs = []
    for step in ("native", "scipy"):
        x_out, xs_out = np.empty_like(x), np.empty_like(xs)
        if step == "native":
            ret = kernels.fused_step(g.indptr, g.indices, op._vals, terms, xs=xs, x=x, dm=0.1,
                                     mass=0.0, delta=delta, bounds=bounds, x_out=x_out,
                                     xs_out=xs_out, partial=partial, threads=threads)
        else:
            ret = scipy_step(kernels.in_link_matrix(g.indptr, g.indices, op._vals),
                                     np.flatnonzero(op._inv_out == 0), terms, xs=xs, x=x,
                                     dm=0.1, mass=0.0, delta=delta, x_out=x_out,
                                     xs_out=xs_out)
        outs.append((ret, x_out, xs_out))
    (r1, x1, s1), (r2, x2, s2) = outs
    np.testing.assert_allclose(r1, r2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(x1, x2, rtol=1e-14, atol=0)
    np.testing.assert_allclose(s1, s2, rtol=1e-14, atol=0)


# -- what a fresh process imports ----------------------------------------------------------
def _modules_after(code: str) -> set[str]:
    """Top-level module names (and scipy.sparse) imported by ``code`` in a new process."""
    probe = (code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules "
             "if '.' not in m or m == 'scipy.sparse')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env=CLEAN_ENV)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_webrank_imports_no_scipy_or_numpy():
    mods = _modules_after("import webrank")
    assert not mods & {"numba", "scipy", "numpy", "cupy"}


def test_help_imports_no_scipy():
    code = ("import sys\nfrom webrank.cli import main\nsys.argv = ['webrank', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    mods = _modules_after(code)
    assert "click" in mods  # it did run the CLI
    assert not mods & {"numba", "scipy", "scipy.sparse", "cupy"}


def test_small_graph_ranks_without_scipy():
    code = ("import numpy as np, webrank\n"
            "g = webrank.Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 0]))\n"
            "r = webrank.pagerank(g, device='cpu')\n"
            "assert r.converged and abs(r.scores.sum() - 1) < 1e-12")
    assert not _modules_after(code) & {"numba", "scipy.sparse"}


def test_cli_rank_of_a_small_file_imports_no_scipy(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    code = ("import sys\nfrom webrank.cli import main\n"
            f"sys.argv = ['webrank', 'rank', {str(path)!r}, '--top', '2']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code")
    mods = _modules_after(code)
    assert "pyarrow" in mods  # it did read the file
    assert not mods & {"numba", "scipy.sparse", "pandas"}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("x_dtype", [np.float64, np.float32])
def test_edge_sums_product_is_scipys_bit_for_bit(weighted, x_dtype):
    # the NumPy product of small graphs: same float64 products, same row order
    import scipy.sparse as sp

    g = random_graph(11, 3000, 20000, weighted=weighted, isolated=5)
    vals = g.transition_values() if weighted else np.zeros(0)
    small = kernels.in_link_matrix(g.indptr, g.indices, vals)
    assert isinstance(small, kernels.EdgeSums)
    data = vals if weighted else np.ones(g.num_edges)
    for cols in (g.n, g.n + 7):  # square, and a part's rows over more sources
        ref = sp.csr_array((data, g.indices, g.indptr), shape=(g.n, cols))
        part = kernels.in_link_matrix(g.indptr, g.indices, vals, cols)
        x = np.random.default_rng(cols).random(cols).astype(x_dtype)
        got = part @ x
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, ref @ x)


def test_numpy_and_scipy_csr_builds_agree(monkeypatch):
    # graphs below NUMPY_BUILD_EDGES are sorted by NumPy: same CSR as SciPy's conversion
    import webrank.edge_arrays as graph_module

    rng = np.random.default_rng(7)
    for trial in range(60):
        n, m = int(rng.integers(1, 40)), int(rng.integers(0, 150))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        w = rng.uniform(0, 2, m) if trial % 2 else None
        for duplicates in ("collapse", "sum"):
            built = []
            for threshold in (2**40, 0):  # NumPy, then SciPy
                monkeypatch.setattr(graph_module, "NUMPY_BUILD_EDGES", threshold)
                built.append(webrank.Graph.from_edges(src, dst, w, node_ids="range",
                                                      duplicates=duplicates))
            a, b = built
            for key in ("indptr", "indices"):
                assert getattr(a, key).dtype == getattr(b, key).dtype
                np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
            # summed parallel float weights may be added in another order
            same = (np.testing.assert_array_equal if w is None or duplicates == "collapse"
                    else np.testing.assert_allclose)
            for key in ("out_weight", "weights"):
                x, y = getattr(a, key), getattr(b, key)
                assert (x is None) == (y is None)
                if x is not None:
                    same(x, y)


def test_networkx_backend_small_graph_without_scipy_sparse():
    pytest.importorskip("networkx")
    code = ("import networkx as nx\n"
            "G = nx.gnp_random_graph(200, 0.05, seed=1, directed=True)\n"
            "pr = nx.pagerank(G, backend='webrank')\n"
            "assert abs(sum(pr.values()) - 1) < 1e-12")
    assert not _modules_after(code) & {"numba", "scipy.sparse"}


def test_num_threads_follows_settings_and_affinity(monkeypatch):
    """The compiled kernels' threads: set_num_threads, else WEBRANK_NUM_THREADS, else
    OMP_NUM_THREADS, else the CPUs of this process's affinity mask (what a container or
    Slurm gives it, not the host's count)."""
    from webrank.kernels import native

    monkeypatch.delenv("WEBRANK_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert native.num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "5,2")
    assert native.num_threads() == 5
    monkeypatch.setenv("WEBRANK_NUM_THREADS", "3")
    assert native.num_threads() == 3
    native.set_num_threads(2)
    try:
        assert native.num_threads() == 2
    finally:
        native.set_num_threads(None)
    assert native.num_threads() == 3
    with pytest.raises(ValueError, match="positive"):
        native.set_num_threads(0)


def test_kernels_run_on_the_threads_asked_for():
    """A step's answer does not depend on its thread count (per-chunk sums, then the
    chunks in order)."""
    from webrank.kernels import native

    g = random_graph(4, 5000, 30000, weighted=True, isolated=3)
    runs = []
    try:
        for threads in (1, 2, 5):
            native.set_num_threads(threads)
            runs.append(webrank.pagerank(g, device="cpu", method="power", tol=1e-10,
                                         engine="pull"))
    finally:
        native.set_num_threads(None)
    for r in runs[1:]:
        np.testing.assert_array_equal(r.scores, runs[0].scores)


def test_cli_status_line_starts_and_stops():
    from webrank.cli import _RunStatus

    status = _RunStatus(enabled=True)
    status.start -= 10  # as if the run had lasted 10 s
    status(3, 1e-3)
    assert status.status is not None
    status.close()
    assert status.status is None
    quiet = _RunStatus(enabled=False)
    quiet(3, 1e-3)
    assert quiet.status is None


# -- no compiler on a user's call ------------------------------------------------------------
FIRST_CALLS = """
import sys
import numpy as np
import webrank
from webrank.kernels import cpu
g = webrank.generate_graph("rmat", 15, seed=1)   # above the serial step's threshold
assert g.num_edges >= cpu.SMALL_GRAPH_EDGES
for method in ("auto", "power", "gauss-seidel", "gmres", "aitken", "adaptive", "fixed"):
    webrank.pagerank(g, device="cpu", method=method, tol=1e-8)
webrank.pagerank(g, device="cpu", engine="blocked", tol=1e-8)
webrank.pagerank(g, device="cpu", dtype="float32", tol=1e-6)
r = webrank.pagerank(g, device="cpu", tol=1e-8)
webrank.personalized_pagerank(g, [{0, 1}, {2}], device="cpu", top=5)
webrank.update(r, added_edges=[(0, 5), (7, 2)])
JIT = ("numba", "llvmlite", "cupy")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in JIT)
assert not loaded, loaded
"""


def test_no_jit_compiler_is_loaded_by_any_cpu_entry_point(tmp_path):
    """Every public CPU entry point (each method and engine, personalized runs, updates,
    the file readers and the parallel build) runs compiled code: no JIT compiler is even
    imported. (The GPU's counterpart: tests/test_gpu_first_use.py.)"""
    subprocess.run([sys.executable, "-c", FIRST_CALLS], check=True, env=CLEAN_ENV)
    # the readers, the parallel parse and build, and the CLI
    big = tmp_path / "g.txt"
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 300_000, 1_200_000), rng.integers(0, 300_000, 1_200_000)
    big.write_text("".join(f"{a}\t{b}\n" for a, b in zip(src.tolist(), dst.tolist(),
                                                          strict=True)))
    code = ("import sys\nfrom webrank.cli import main\n"
            f"sys.argv = ['webrank', 'rank', {str(big)!r}, '--top', '2', '--device', 'cpu']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n")
    mods = _modules_after(code)
    assert not mods & {"numba", "llvmlite", "cupy"}


def test_common_first_calls_import_no_numpy_ma(tmp_path):
    """A plain ``np.unique`` (and ``union1d``, ``setdiff1d``) imports ``numpy.ma`` on its
    first call: 10-30 ms of the first ``update``. Reading a file, the default solve,
    personalized PageRank and an update use :func:`webrank.arrays.distinct` instead."""
    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 20_000, 100_000), rng.integers(0, 20_000, 100_000)
    path = tmp_path / "links.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in zip(src.tolist(), dst.tolist(),
                                                         strict=True)))
    code = f"""
import sys
import webrank
g = webrank.load({str(path)!r})
r = webrank.pagerank(g, device="cpu", tol=1e-8)
webrank.personalized_pagerank(g, [{{0, 1}}, {{2}}], device="cpu", top=5)
row = int((g.indptr[1:] > g.indptr[:-1]).argmax())  # a node with in-links
labels = g.node_labels()
link = (int(labels[g.indices[g.indptr[row]]]), int(labels[row]))
webrank.update(r, added_edges=[(0, 5), (7, 2), (3, 99_999_999)], removed_edges=[link])
assert "numpy.ma" not in sys.modules, "numpy.ma imported"
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=CLEAN_ENV)


def test_numba_is_not_a_dependency():
    """The package no longer needs Numba (its kernels are compiled with it)."""
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    deps = meta["project"]["dependencies"]
    assert not [d for d in deps if d.lower().startswith(("numba", "llvmlite"))], deps


def test_pyarrow_threads_follow_the_process_cpus(monkeypatch):
    """A process given fewer CPUs than the host (taskset, a container, Slurm) parses
    with that many of pyarrow's threads, and the columns are written by as many."""
    import pyarrow as pa

    from webrank import tables
    from webrank.kernels import native

    before = pa.cpu_count()
    try:
        pa.set_cpu_count(4)
        monkeypatch.setattr(native, "available_cpus", lambda: 2)
        assert tables.arrow_threads() == 2 and pa.cpu_count() == 2
        monkeypatch.setattr(native, "available_cpus", lambda: 8)
        assert tables.arrow_threads() == 2  # never raised above what was set
    finally:
        pa.set_cpu_count(before)


def test_touch_pages_zeroes_one_byte_a_page_and_keeps_the_array():
    """The landing of GPU scores faults a new array's pages in ahead of the copy."""
    from webrank.kernels.cpu_build import touch_pages

    a = np.full(3 * 4096 // 8 + 5, 7.0)
    expected = a.view(np.uint8).copy()
    expected[::4096] = 0  # one byte a page from the start, nothing else
    out = touch_pages(a)
    assert out is a
    np.testing.assert_array_equal(a.view(np.uint8), expected)
    touch_pages(np.empty(0))  # an empty array: nothing to touch


@pytest.mark.parametrize("nbytes", [0, 1, 4096, (1 << 18) + 17, 3 << 20])
def test_copy_bytes_copies_every_byte_and_refuses_mismatches(nbytes):
    """The threaded memcpy that moves GPU scores out of the staging buffers: every byte,
    across its 256 KiB blocks and a short last one; views of other dtypes; strided or
    unequal arrays refused."""
    from webrank.kernels.cpu_build import copy_bytes

    src = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    for streaming in (True, False):
        for shift in (0, 3):  # a destination off the 16-byte grid: a head copied first
            dst = np.zeros(nbytes + shift, dtype=np.uint8)[shift:]
            assert copy_bytes(dst, src, streaming=streaming) is dst
            np.testing.assert_array_equal(dst, src)
    if nbytes % 8 == 0 and nbytes:
        out = np.empty(nbytes // 8)
        copy_bytes(out, src)
        np.testing.assert_array_equal(out.view(np.uint8), src)
    big = np.zeros(64, dtype=np.uint8)
    with pytest.raises(TypeError, match="as many bytes"):
        copy_bytes(big[:8], big[:16])
    with pytest.raises(TypeError, match="contiguous"):
        copy_bytes(big[::2], big[:32])


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 3 << 18), max_size=12), shift=st.integers(0, 15),
       streaming=st.booleans())
def test_copy_pieces_lays_pieces_end_to_end(sizes, shift, streaming):
    """Pieces of any size (empty, below a 256 KiB block, across several) packed end to end
    into one buffer, on or off the 16-byte grid; a size mismatch is refused."""
    from webrank.kernels.cpu_build import copy_pieces

    rng = np.random.default_rng(len(sizes))
    data = rng.integers(0, 256, sum(sizes) + 16 * len(sizes), dtype=np.uint8)
    pieces, at = [], 0
    for k in sizes:  # views of one buffer, as a parallel reader's chunks are
        pieces.append(data[at:at + k])
        at += k + 16
    want = np.concatenate(pieces) if pieces else data[:0]
    dst = np.zeros(want.size + shift, dtype=np.uint8)[shift:]
    assert copy_pieces(dst, pieces, streaming=streaming) is dst
    np.testing.assert_array_equal(dst, want)
    for wrong in (np.zeros(want.size + 1, np.uint8), np.zeros(max(want.size - 1, 0), np.uint8)):
        if wrong.size != want.size:
            with pytest.raises(TypeError, match="as many bytes"):
                copy_pieces(wrong, pieces)


def test_staging_held_is_given_back_and_one_holder_at_a_time(monkeypatch):
    """The staging buffers' ``with`` form (no GPU needed: a stand-in Staging): a second
    holder gets None while the first holds them; they are free again after the block,
    after an exception too; a device whose buffers cannot be made gets None."""
    from webrank.kernels.cuda_staging import Staging

    stand_in = object.__new__(Staging)
    stand_in.busy = False
    monkeypatch.setattr(Staging, "_by_device", {7: stand_in})
    with Staging.held(7) as first:
        assert first is stand_in and stand_in.busy
        with Staging.held(7) as second:
            assert second is None
    assert not stand_in.busy
    with pytest.raises(RuntimeError), Staging.held(7) as held:
        assert held is stand_in
        raise RuntimeError
    assert not stand_in.busy
    monkeypatch.setattr(Staging, "__init__", lambda self, device: 1 / 0)
    with Staging.held(8) as none:
        assert none is None
