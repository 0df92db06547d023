"""The small-graph path and lazy imports: the serial SciPy step against the Numba kernel,
the size switch between them, and what a fresh process imports (no timing asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pagerank import random_graph

import webrank
from webrank.backends.cpu import CPUOperator
from webrank.kernels import cpu as kernels

ALWAYS_NUMBA, NEVER_NUMBA = 0, 2**62  # SMALL_GRAPH_EDGES forcing each step
# the environment of the subprocess tests: the default threshold, whatever this one sets
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "WEBRANK_SMALL_GRAPH_EDGES"}


def run_both(monkeypatch, g, **kw):
    """The same pagerank call through the Numba kernel and through the SciPy step."""
    out = []
    for threshold in (ALWAYS_NUMBA, NEVER_NUMBA):
        monkeypatch.setattr(kernels, "SMALL_GRAPH_EDGES", threshold)
        out.append(webrank.pagerank(g, device="cpu", method="power", **kw))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), n=st.integers(1, 60), density=st.floats(0.0, 4.0),
       weighted=st.booleans(), isolated=st.integers(0, 3), personalize=st.booleans(),
       dangling=st.booleans(), criterion=st.sampled_from(["l1", "l2", "linf"]),
       dtype=st.sampled_from(["float64", "float32"]), alpha=st.sampled_from([0.5, 0.85, 0.99]))
def test_scipy_step_matches_numba_kernel(monkeypatch, seed, n, density, weighted, isolated,
                                         personalize, dangling, criterion, dtype, alpha):
    # random_graph gives self-loops, dangling and (with isolated > 0) isolated nodes
    g = random_graph(seed, n, int(density * n), weighted, isolated)
    rng = np.random.default_rng(seed + 1)
    pers = rng.uniform(0, 1, g.n) + 1e-3 if personalize else None
    dang = rng.uniform(0, 1, g.n) + 1e-3 if dangling else None
    numba, scipy = run_both(monkeypatch, g, alpha=alpha, personalization=pers,
                            dangling=dang, criterion=criterion, dtype=dtype, tol=1e-11,
                            max_iter=5000)
    if dtype == "float64" or not g.is_weighted:
        # the same products and row sums in the same order: only the reductions (residual,
        # dangling mass) are grouped differently
        assert numba.iterations == scipy.iterations
        np.testing.assert_allclose(scipy.scores, numba.scores, rtol=0, atol=1e-12)
        np.testing.assert_allclose(scipy.residuals, numba.residuals, rtol=1e-9, atol=1e-15)
    else:
        # weighted float32: Numba rounds each product val * xs[j] to float32 (~6e-8
        # relative), SciPy does not; the first (plain) step's rounding stays in the answer,
        # amplified by up to 1 / (1 - alpha), and the residuals near tol differ a little
        assert np.abs(scipy.scores - numba.scores).sum() < 5e-8 / (1 - alpha)
        assert abs(numba.iterations - scipy.iterations) <= max(2, numba.iterations // 50)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_both_steps_on_a_larger_graph(monkeypatch, dtype, criterion):
    """A graph above the default threshold (weighted, dangling, isolated, personalized),
    through both steps: float32 exercises the delta steps of both."""
    g = random_graph(5, 8000, 40000, weighted=True, isolated=10)
    pers = np.random.default_rng(2).uniform(0, 1, g.n)
    numba, scipy = run_both(monkeypatch, g, personalization=pers, criterion=criterion,
                            dtype=dtype, tol=1e-10)
    assert numba.iterations == scipy.iterations
    if dtype == "float64":
        assert np.abs(scipy.scores - numba.scores).max() < 1e-12
    else:  # weighted float32: see test_scipy_step_matches_numba_kernel
        assert np.abs(scipy.scores - numba.scores).sum() < 1e-7


def test_threshold_switch_on_both_sides(monkeypatch):
    g = random_graph(3, 50, 200, weighted=False)
    m = g.num_edges
    monkeypatch.setattr(kernels, "SMALL_GRAPH_EDGES", m)  # m edges: not below the threshold
    assert CPUOperator(g, 0.85, None, None, "float64").kernel == "numba"
    monkeypatch.setattr(kernels, "SMALL_GRAPH_EDGES", m + 1)
    assert CPUOperator(g, 0.85, None, None, "float64").kernel == "scipy"
    assert kernels.use_numba(kernels.SMALL_GRAPH_EDGES) and not kernels.use_numba(m)


@pytest.mark.skipif("WEBRANK_SMALL_GRAPH_EDGES" in os.environ,
                    reason="WEBRANK_SMALL_GRAPH_EDGES sets another threshold")
def test_default_threshold_routes_small_and_large_graphs():
    assert kernels.SMALL_GRAPH_EDGES == 150_000
    small = random_graph(1, 100, 400, weighted=False)
    assert small.num_edges < kernels.SMALL_GRAPH_EDGES
    assert CPUOperator(small, 0.85, None, None, "float64").kernel == "scipy"
    n = kernels.SMALL_GRAPH_EDGES  # ~0.63 n distinct edges per n drawn
    large = random_graph(1, n, 2 * n, weighted=False)
    assert large.num_edges >= kernels.SMALL_GRAPH_EDGES
    assert CPUOperator(large, 0.85, None, None, "float64").kernel == "numba"


def test_fused_step_fallback_is_the_scipy_step():
    """fused_step without Numba runs scipy_step on a matrix it builds: same returns."""
    g = random_graph(9, 30, 90, weighted=True, isolated=2)
    op = CPUOperator(g, 0.85, None, None, "float64")
    x = np.full(g.n, 1.0 / g.n)
    xs = x * op._inv_out
    terms = kernels.StepTerms(v=op._v_k, d=op._d_k, inv_out=op._inv_out, alpha=0.85, crit=0)
    outs = []
    for step in ("numba", "scipy"):
        x_out, xs_out = np.empty_like(x), np.empty_like(xs)
        if step == "numba":
            ret = kernels.fused_step(g.indptr, g.indices, op._vals, terms, xs=xs, x=x, dm=0.1,
                                     mass=0.0, delta=False, bounds=op._bounds,
                                     x_out=x_out, xs_out=xs_out, partial=op._partial)
        else:
            ret = kernels.scipy_step(kernels.in_link_matrix(g.indptr, g.indices, op._vals),
                                     np.flatnonzero(op._inv_out == 0), terms, xs=xs, x=x,
                                     dm=0.1, mass=0.0, delta=False, x_out=x_out,
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


def test_import_webrank_imports_no_numba_scipy_or_numpy():
    mods = _modules_after("import webrank")
    assert not mods & {"numba", "scipy", "numpy", "cupy"}


def test_help_imports_no_numba_or_scipy():
    code = ("import sys\nfrom webrank.cli import main\nsys.argv = ['webrank', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    mods = _modules_after(code)
    assert "click" in mods  # it did run the CLI
    assert not mods & {"numba", "scipy", "scipy.sparse", "cupy"}


def test_small_graph_ranks_without_numba_or_scipy():
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
    import webrank.graph as graph_module

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


def test_networkx_backend_small_graph_without_numba():
    pytest.importorskip("networkx")
    code = ("import networkx as nx\n"
            "G = nx.gnp_random_graph(200, 0.05, seed=1, directed=True)\n"
            "pr = nx.pagerank(G, backend='webrank')\n"
            "assert abs(sum(pr.values()) - 1) < 1e-12")
    assert "numba" not in _modules_after(code)


def test_num_threads_without_numba_is_numbas_count():
    code = ("from webrank.kernels.cpu import num_threads\n"
            "import sys\nbefore = num_threads()\nassert 'numba' not in sys.modules\n"
            "import numba\nassert before == numba.get_num_threads(), before")
    subprocess.run([sys.executable, "-c", code], check=True, env=CLEAN_ENV)


def test_have_numba_imports_numba_when_read():
    code = ("import sys\nimport webrank.kernels.cpu as k\nassert 'numba' not in sys.modules\n"
            "assert k.HAVE_NUMBA is True\nassert 'numba' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env=CLEAN_ENV)


# -- saying that a kernel compiles -----------------------------------------------------------
def test_compile_notice_reports_a_compile_and_not_a_call():
    numba = pytest.importorskip("numba")
    seen: list[bool] = []
    fresh = numba.njit(lambda a: a + 1)  # never compiled (and not cached): must compile
    with kernels.compile_notice(seen.append):
        assert fresh(1) == 2
        assert fresh(2) == 3  # compiled already: no event
    assert seen == [True, False]
    fresh(1.5)  # a new signature, after the block: not reported
    assert seen == [True, False]


def test_cli_status_spinner_starts_and_stops():
    from webrank.cli import _RunStatus

    status = _RunStatus(enabled=True)
    status.compiling(True)
    assert status.status is not None
    status.compiling(False)
    assert status.status is None
    quiet = _RunStatus(enabled=False)
    quiet.compiling(True)
    assert quiet.status is None


def test_thread_count_while_numba_is_half_imported(monkeypatch):
    # another thread importing Numba leaves a module without get_num_threads in
    # sys.modules for a while: the count is then Numba's default, not an AttributeError
    import importlib.machinery
    import sys
    import types

    from webrank.kernels import cpu as kernels

    half = types.ModuleType("numba")
    half.__spec__ = importlib.machinery.ModuleSpec("numba", None)  # as while importing
    monkeypatch.setitem(sys.modules, "numba", half)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    assert kernels.num_threads() == 3
