"""``PageRankResult.error_bound`` is sound (never below the true L1 error against an
exact solve) and tight (within a small factor of it), for every CPU method, both
dtypes, early stops, personalization and dangling distributions, weights, dangling,
isolated and self-looping nodes; ``certified_top`` only lists guaranteed places."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dataset

import webrank
from webrank.certify import certified_prefix, error_bound
from webrank.graph import Graph

CPU_METHODS = ["power", "aitken", "quadratic", "adaptive", "fixed", "gmres", "bicgstab",
               "gauss-seidel", "auto"]


def random_graph(seed: int, n: int = 60, m: int = 240, weighted: bool = False) -> Graph:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n - 6, m)  # the last 6 nodes: no out-links (dangling)
    dst = rng.integers(0, n - 2, m)  # the last 2: isolated
    src[:5] = dst[:5]  # self-loops
    w = None
    if weighted:
        w = rng.choice([0.0, 0.5, 1.0, 3.0], m)  # zero weights make more dangling nodes
    return Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n)


def exact(g: Graph, alpha: float, v=None, d=None) -> np.ndarray:
    """The PageRank by a dense float64 solve, refined in extended precision."""
    n = g.n
    v = np.full(n, 1.0 / n) if v is None else v
    d = v if d is None else d
    a = g.to_scipy().toarray().astype(np.longdouble)
    out = g.out_weight.astype(np.longdouble)
    dangling = out == 0
    scale = np.where(dangling, 0, 1 / np.where(dangling, 1, out))
    m = a * scale[None, :] + np.outer(d, dangling.astype(np.longdouble))  # column-stochastic
    lhs = np.eye(n, dtype=np.longdouble) - alpha * m
    rhs = (1 - alpha) * v.astype(np.longdouble)
    x = np.linalg.solve(lhs.astype(np.float64), rhs.astype(np.float64)).astype(np.longdouble)
    for _ in range(3):  # iterative refinement with long double residuals
        x += np.linalg.solve(lhs.astype(np.float64),
                             (rhs - lhs @ x).astype(np.float64)).astype(np.longdouble)
    return x


def l1(a, b) -> float:
    return float(np.abs(np.asarray(a, np.longdouble) - b).sum())


@pytest.mark.parametrize("method", CPU_METHODS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("tol", [1e-3, 1e-10])
def test_bound_is_sound_and_tight_for_every_method(method, dtype, tol):
    if method in ("fixed", "adaptive") and dtype == "float32":
        pytest.skip(f"{method} refuses float32 gathers")
    for seed in range(3):
        g = random_graph(seed, weighted=seed == 2)
        ref = exact(g, 0.85)
        r = webrank.pagerank(g, tol=tol, method=method, dtype=dtype, device="cpu",
                             raise_on_nonconvergence=False)
        err = l1(r.scores, ref)
        assert r.error_bound >= err, (method, dtype, seed, r.error_bound, err)
        assert r.error_bound <= 40 * err + 1e-12, (method, r.error_bound, err)


@pytest.mark.parametrize("alpha", [0.5, 0.85, 0.99])
def test_bound_with_distributions_and_early_stops(alpha):
    g = random_graph(7, n=80, m=400, weighted=True)
    rng = np.random.default_rng(1)
    v = rng.random(g.n)
    d = rng.random(g.n)
    d[:10] = 0
    ref = exact(g, alpha, v / v.sum(), d / d.sum())
    for max_iter in (1, 5, 40, 1000):
        r = webrank.pagerank(g, alpha=alpha, personalization=v, dangling=d, tol=1e-12,
                             max_iter=max_iter, method="power", device="cpu",
                             raise_on_nonconvergence=False)
        err = l1(r.scores, ref)
        # never more than (1 + alpha) / (1 - alpha) times the error, whatever alpha
        tight = (1 + alpha) / (1 - alpha) * 1.01
        assert err <= r.error_bound <= tight * err + 1e-12, (max_iter, r.error_bound, err)


def test_bound_of_a_perturbed_vector_and_of_negative_entries():
    # any vector: the bound holds for what was handed in, not only for solver output
    g = random_graph(11, n=50, m=200)
    ref = exact(g, 0.85)
    rng = np.random.default_rng(2)
    for size in (1e-3, 1e-7, 1e-11):
        delta = rng.standard_normal(g.n)
        x = np.asarray(ref, np.float64) + size * delta / np.abs(delta).sum()
        bound = error_bound(g, x, 0.85)
        assert bound >= l1(x, ref) and bound <= 40 * l1(x, ref) + 1e-13
    x = np.asarray(ref, np.float64).copy()
    x[0], x[1] = -1e-4, x[1] + x[0] + 1e-4  # a negative entry (as a Krylov iterate may have)
    assert error_bound(g, x, 0.85) >= l1(x, ref)


def test_certified_top_lists_only_certain_places():
    scores = np.array([0.3, 0.25, 0.25 - 1e-9, 0.1, 0.1, 0.0])
    assert certified_prefix(scores, 1e-12, 6).tolist() == [0, 1, 2]  # the tie at 0.1 ends it
    assert certified_prefix(scores, 1e-6, 6).tolist() == [0]  # 0.25 vs 0.25 - 1e-9: unsure
    assert certified_prefix(scores, 0.06, 6).tolist() == []
    assert certified_prefix(scores, 1e-12, 2).tolist() == [0, 1]
    g = random_graph(3)
    r = webrank.pagerank(g, tol=1e-12, device="cpu")
    ref = exact(g, 0.85)
    true_order = np.argsort(-np.asarray(ref, np.float64), kind="stable")
    got = [p.node for p in r.certified_top(20)]
    assert got == true_order[:len(got)].tolist() and len(got) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["web-NotreDame", "cnr-2000"])
def test_bound_is_sound_on_real_graphs(name):
    # no exact solve here: a loose result's distance to a tight one, less the tight
    # one's own bound, is a lower bound on the loose one's error
    path = dataset(name)
    g = webrank.load(path)
    tight = webrank.pagerank(g, tol=1e-13, method="gmres", device="cpu")
    for method in ("power", "gauss-seidel", "gmres"):
        for dtype in ("float64", "float32"):
            r = webrank.pagerank(g, tol=1e-6, method=method, dtype=dtype, device="cpu")
            measured = float(np.abs(r.scores - tight.scores).sum())
            assert r.error_bound >= measured - tight.error_bound, (method, dtype)
            assert r.error_bound <= 40 * measured + 1e-9


def test_cli_certified(tmp_path, capsys):
    from webrank.cli import main

    p = tmp_path / "g.txt"
    p.write_text("0 1\n1 2\n2 0\n2 1\n")
    try:
        main(["rank", str(p), "--certified", "--json", "--tol", "1e-12", "--device", "cpu"])
    except SystemExit as e:
        assert not e.code
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["error_bound"] < 1e-10
    assert [t["node"] for t in doc["certified_top"]] == [1, 2, 0]


@pytest.mark.gpu
@pytest.mark.parametrize("weighted", [False, True])
def test_the_bound_of_a_graph_on_the_gpu_is_the_hosts(weighted):
    """The product on the device (a prebuilt kernel), the sums on the host: the bound of
    a graph held on the GPU is the host graph's, up to the product's last bits, and holds."""
    pytest.importorskip("cupy")
    from webrank.backends import gpu_available

    if not gpu_available():
        pytest.skip("no usable GPU (CuPy + CUDA device)")
    host = random_graph(7, n=200, m=1200, weighted=weighted)
    device = host.to_device()
    x = webrank.pagerank(host, device="cpu", tol=1e-5, method="power").scores
    pers = np.random.default_rng(5).random(host.n)
    pers /= pers.sum()
    for personalization in (None, pers):
        want = error_bound(host, x, 0.85, personalization)
        got = error_bound(device, x, 0.85, personalization)
        assert got == pytest.approx(want, rel=1e-9)
        assert got >= np.abs(x - exact(host, 0.85, personalization)).sum()
