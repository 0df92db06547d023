"""Every registered solver against the exact answer, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from reference import exact_pagerank
from test_pagerank import DEVICES, SEED_SIX, graph_of, random_graph

import webrank
from webrank.solvers import SOLVERS, SPECS, get_solver

get_solver("power")  # registers them all
METHODS = sorted(SOLVERS)

# options each method is run with in the contract test below (one line per method)
METHOD_OPTIONS: dict[str, dict] = {
    "aitken": {"period": 12},
    "quadratic": {"period": 12},
}
# methods whose every iteration is exactly one power step (matvecs == iterations)
POWER_LIKE = {"power", "aitken", "quadratic", "hybrid"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("alpha", [0.85, 0.99])
def test_solver_meets_tolerance_against_exact(device, method, alpha):
    if device not in SPECS[method].devices:
        pytest.skip(f"{method} does not run on {device}")
    g = random_graph(17, 400, 2400, weighted=False, isolated=4)
    exact = exact_pagerank(g, alpha)
    r = webrank.pagerank(g, alpha=alpha, tol=1e-10, max_iter=20000, method=method,
                         device=device, **METHOD_OPTIONS.get(method, {}))
    assert r.converged
    # auto names the method it ran
    assert r.method == (r.info["method"] if method == "auto" else method)
    # within 10 * tol of the exact answer, scaled by the conditioning 1 / (1 - alpha)
    assert np.abs(r.scores - exact).sum() < 10 * 1e-10 / (1 - alpha)
    assert r.matvecs >= 1 and len(r.residuals) == r.iterations
    if method in POWER_LIKE:
        assert r.matvecs == r.iterations


@pytest.mark.parametrize("method", ["aitken", "quadratic"])
def test_extrapolation_on_seed_graph_and_options(method):
    g = graph_of(SEED_SIX)
    r = webrank.pagerank(g, tol=1e-13, method=method, period=5)
    np.testing.assert_allclose(r.scores, exact_pagerank(g), atol=1e-12)
    assert r.info["period"] == 5
    with pytest.raises(ValueError, match="period"):
        webrank.pagerank(g, method=method, period=2)
    with pytest.raises(ValueError, match="unknown options"):
        webrank.pagerank(g, method=method, bogus=1)


def test_quadratic_saves_matvecs_on_a_slow_chain():
    # alpha near 1 on a graph with a slowly decaying second eigenvector
    g = random_graph(3, 3000, 9000, weighted=False)
    p = webrank.pagerank(g, alpha=0.99, tol=1e-10, max_iter=20000, method="power")
    q = webrank.pagerank(g, alpha=0.99, tol=1e-10, max_iter=20000, method="quadratic",
                         period=20)
    assert q.matvecs <= p.matvecs
    assert np.abs(p.scores - q.scores).sum() < 1e-7


@pytest.mark.parametrize("method", METHODS)
def test_solver_refuses_a_device_it_cannot_use(method):
    devices = SPECS[method].devices
    if "cpu" in devices:
        pytest.skip(f"{method} runs on the CPU")
    with pytest.raises(ValueError, match="runs on device"):
        webrank.pagerank(graph_of(SEED_SIX), method=method, device="cpu")


def test_hybrid_options_are_refused_elsewhere():
    with pytest.raises(ValueError, match="method='hybrid' only"):
        webrank.pagerank(graph_of(SEED_SIX), device="cpu", engine_options={"gpu_links": 4})


def test_auto_picks_by_device_graph_size_and_alpha(monkeypatch):
    import webrank.kernels.cpu as cpu_kernels

    g = random_graph(5, 300, 1500, weighted=False)
    monkeypatch.setattr(cpu_kernels, "num_threads", lambda: 2)
    low = webrank.pagerank(g, alpha=0.95, tol=1e-10, device="cpu")
    high = webrank.pagerank(g, alpha=0.99, tol=1e-10, device="cpu", max_iter=5000)
    assert low.method == "power" and high.method == "gmres"
    assert "alpha" in high.info["auto_reason"]
    assert np.abs(high.scores - exact_pagerank(g, 0.99)).sum() < 1e-7
    # graphs on the Numba kernels (engine="pull" forces them here): Gauss-Seidel, on any
    # number of threads
    big = webrank.pagerank(g, alpha=0.85, tol=1e-10, device="cpu", engine="pull")
    assert big.method == "gauss-seidel" and "blocks" in big.info["auto_reason"]
    assert np.abs(big.scores - exact_pagerank(g, 0.85)).sum() < 1e-8
    monkeypatch.setattr(cpu_kernels, "num_threads", lambda: 32)
    many = [webrank.pagerank(g, alpha=a, tol=1e-10, device="cpu", engine="pull",
                             max_iter=5000) for a in (0.85, 0.99)]
    assert [r.method for r in many] == ["gauss-seidel", "gauss-seidel"]
    assert "32 blocks" in many[0].info["auto_reason"]
