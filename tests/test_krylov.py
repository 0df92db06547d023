"""Linear-system solvers (gmres, bicgstab, gauss-seidel) against exact float64 answers."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dataset
from reference import exact_pagerank
from test_pagerank import random_graph

import webrank
from webrank import ConvergenceError
from webrank.backends import make_operator
from webrank.solvers import get_solver

LINEAR = ["gmres", "bicgstab", "gauss-seidel"]
# (method, device) pairs: the Krylov methods on both backends, Gauss-Seidel on the CPU
ON_DEVICE = [("gauss-seidel", "cpu")] + [
    (m, "cpu") for m in ("gmres", "bicgstab")] + [
    pytest.param(m, "gpu", marks=pytest.mark.gpu) for m in ("gmres", "bicgstab")]


def step_residual(g, x, alpha, criterion):
    """||alpha M x + (1 - alpha) v - x||: the power method's residual of ``x`` (float64)."""
    op = make_operator(g, device="cpu", alpha=alpha, personalization=None, dangling=None,
                       dtype="float64")
    r = op.matvec(x) - x - (1 - alpha) * (x.sum() - 1) / g.n
    return {"l1": np.abs(r).sum(), "l2": np.sqrt(r @ r), "linf": np.abs(r).max()}[criterion]


def _dist(rng, n, zeros):
    p = rng.uniform(0, 1, n)
    p[rng.choice(n, zeros, replace=False)] = 0.0
    return p / p.sum()


@pytest.mark.parametrize(("method", "device"), ON_DEVICE)
@pytest.mark.parametrize("alpha", [0.5, 0.85, 0.99, 0.999])
@pytest.mark.parametrize("weighted", [False, True])
def test_exact_with_personalization_and_dangling(method, device, alpha, weighted):
    # dangling nodes, self-loops (10% of links) and isolated nodes; v and d with zeros
    g = random_graph(5, 300, 700, weighted=weighted, isolated=5)
    rng = np.random.default_rng(1)
    v, d = _dist(rng, g.n, 30), _dist(rng, g.n, 30)
    exact = exact_pagerank(g, alpha, personalization=v, dangling=d)
    r = webrank.pagerank(g, alpha=alpha, personalization=v, dangling=d, tol=1e-10,
                         max_iter=20000, method=method, device=device)
    assert r.converged and len(r.residuals) == r.iterations and r.residuals[-1] < 1e-10
    assert np.abs(r.scores - exact).sum() < 10 * 1e-10 / (1 - alpha)
    assert r.scores.min() >= 0 and r.scores.sum() == pytest.approx(1.0, abs=1e-12)
    # matvecs count every product: per iteration, plus the first residual and the checks
    per_iteration = 2 if method == "bicgstab" else 1
    assert r.matvecs >= per_iteration * r.iterations + 1


@pytest.mark.parametrize("method", LINEAR)
@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_criteria_mean_the_power_residual(method, criterion):
    g = random_graph(8, 400, 1600, weighted=False, isolated=2)
    alpha, tol = 0.95, 1e-9
    # the solver's own vector: its confirmed residual is the power method's residual
    op = make_operator(g, device="cpu", alpha=alpha, personalization=None, dangling=None,
                       dtype="float64")
    out = get_solver(method)(op, np.full(g.n, 1 / g.n), tol=tol, max_iter=5000,
                             criterion=criterion)
    true = step_residual(g, out.x, alpha, criterion)
    assert out.converged and true < tol
    assert out.residuals[-1] == pytest.approx(true, rel=1e-6, abs=1e-15)
    assert out.info["confirmed_residual"] == out.residuals[-1]
    # scaled to sum 1 by webrank.pagerank: at most twice that for a uniform v
    r = webrank.pagerank(g, alpha=alpha, tol=tol, criterion=criterion, method=method,
                         max_iter=5000)
    assert step_residual(g, r.scores, alpha, criterion) < 2 * tol
    assert np.abs(r.scores - exact_pagerank(g, alpha)).sum() < 2 * tol / (1 - alpha) * (
        1 if criterion == "l1" else np.sqrt(g.n) if criterion == "l2" else g.n)


@pytest.mark.parametrize("method", LINEAR)
def test_nstart(method):
    g = random_graph(9, 300, 900, weighted=True, isolated=3)
    exact = exact_pagerank(g, 0.9)
    r = webrank.pagerank(g, alpha=0.9, tol=1e-10, nstart=exact, method=method)
    assert r.converged and r.iterations <= 1
    start = np.random.default_rng(2).uniform(0, 1, g.n)
    r = webrank.pagerank(g, alpha=0.9, tol=1e-10, nstart=start, method=method)
    assert np.abs(r.scores - exact).sum() < 1e-8


@pytest.mark.parametrize("method", LINEAR)
def test_max_iter_reports_nonconvergence(method):
    g = random_graph(10, 500, 2000, weighted=False)
    r = webrank.pagerank(g, alpha=0.99, tol=1e-12, max_iter=3, method=method,
                         raise_on_nonconvergence=False)
    assert not r.converged and r.iterations == 3 and len(r.residuals) == 3
    assert r.residuals[-1] >= 1e-12  # the confirmed residual of what is returned
    with pytest.raises(ConvergenceError):
        webrank.pagerank(g, alpha=0.99, tol=1e-12, max_iter=3, method=method)
    r = webrank.pagerank(g, max_iter=0, method=method, raise_on_nonconvergence=False)
    assert r.iterations == 0 and r.matvecs == 0 and not r.converged


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", ["gmres", "bicgstab"])
def test_float32_reaches_tight_tolerance(method, dtype):
    # the products are float64 on both backends; float32 only rounds weighted edge values
    g = random_graph(11, 600, 3000, weighted=True, isolated=2)
    r = webrank.pagerank(g, alpha=0.99, tol=1e-12, method=method, dtype=dtype)
    assert r.converged and r.dtype == dtype
    error = np.abs(r.scores - exact_pagerank(g, 0.99)).sum()
    assert error < (1e-6 if dtype == "float32" else 1e-9)


def test_gmres_options_plain_and_deflated():
    g = random_graph(12, 800, 3200, weighted=False, isolated=4)
    exact = exact_pagerank(g, 0.99)
    runs = {}
    for restart, deflate in [(1, 0), (10, 0), (10, 4), (30, None)]:
        r = webrank.pagerank(g, alpha=0.99, tol=1e-10, method="gmres", max_iter=20000,
                             restart=restart, deflate=deflate)
        assert np.abs(r.scores - exact).sum() < 1e-7
        assert r.info["restart"] == restart
        runs[(restart, deflate)] = r
    # plain GMRES(m): one product per iteration, per cycle and the first residual
    plain = runs[(10, 0)]
    assert plain.info["deflations"] == 0
    assert plain.matvecs == plain.iterations + plain.info["cycles"] + 1
    # deflated restarts keep the slow modes: fewer products than the plain restart
    assert runs[(10, 4)].info["deflations"] > 0
    assert runs[(10, 4)].matvecs < plain.matvecs
    assert runs[(30, None)].info["deflate"] == 12
    for bad in [{"restart": 0}, {"restart": 2.5}, {"restart": 10, "deflate": 9},
                {"deflate": -1}]:
        with pytest.raises(ValueError, match=r"restart|deflate"):
            webrank.pagerank(g, method="gmres", **bad)


def test_gmres_agrees_with_scipy():
    # cross-check the system we solve: SciPy's GMRES on (I - alpha M) x = (1 - alpha) v
    import scipy.sparse.linalg as spla

    g = random_graph(13, 200, 600, weighted=True, isolated=2)
    alpha = 0.9
    op = make_operator(g, device="cpu", alpha=alpha, personalization=None, dangling=None,
                       dtype="float64")
    n = g.n
    a = spla.LinearOperator((n, n), matvec=lambda w: w - (op.matvec(w)
                                                          - (1 - alpha) * w.sum() / n))
    x, info = spla.gmres(a, np.full(n, (1 - alpha) / n), rtol=1e-13, restart=50)
    assert info == 0
    r = webrank.pagerank(g, alpha=alpha, tol=1e-12, method="gmres")
    assert np.abs(r.scores - x / x.sum()).sum() < 1e-10


def test_gauss_seidel_is_cpu_only():
    g = random_graph(14, 50, 100, weighted=False)
    with pytest.raises(ValueError, match=r"cpu only.*gmres"):
        webrank.pagerank(g, method="gauss-seidel", device="gpu")
    assert webrank.pagerank(g, method="gauss-seidel", device="auto").device == "cpu"


def test_gauss_seidel_sweeps_fewer_than_power():
    g = random_graph(15, 500, 2000, weighted=False, isolated=10)
    p = webrank.pagerank(g, alpha=0.95, tol=1e-10, max_iter=20000, method="power")
    s = webrank.pagerank(g, alpha=0.95, tol=1e-10, method="gauss-seidel", max_iter=20000)
    assert s.info["sweeps"] == s.iterations < p.iterations
    assert np.abs(p.scores - s.scores).sum() < 2e-8


@pytest.mark.parametrize("blocks", [2, 3, 7])
@pytest.mark.parametrize("alpha", [0.5, 0.85, 0.99])
@pytest.mark.parametrize("weighted", [False, True])
def test_gauss_seidel_blocks_exact(blocks, alpha, weighted):
    # Gauss-Seidel inside blocks, Jacobi between them: the same answer as an exact solve
    # with dangling nodes, self-loops, isolated nodes and v, d with zeros
    g = random_graph(21, 300, 700, weighted=weighted, isolated=5)
    rng = np.random.default_rng(3)
    v, d = _dist(rng, g.n, 30), _dist(rng, g.n, 30)
    exact = exact_pagerank(g, alpha, personalization=v, dangling=d)
    r = webrank.pagerank(g, alpha=alpha, personalization=v, dangling=d, tol=1e-10,
                         max_iter=20000, method="gauss-seidel", blocks=blocks)
    assert r.converged and r.info["blocks"] == blocks
    assert np.abs(r.scores - exact).sum() < 10 * 1e-10 / (1 - alpha)


def test_gauss_seidel_blocks_do_not_depend_on_threads():
    from webrank.kernels import native

    g = random_graph(22, 2000, 9000, weighted=True, isolated=4)
    runs = []
    try:
        for threads in (1, 3):
            native.set_num_threads(threads)
            runs.append(webrank.pagerank(g, alpha=0.9, tol=1e-12, method="gauss-seidel",
                                         blocks=4))
    finally:
        native.set_num_threads(None)
    assert runs[0].iterations == runs[1].iterations
    np.testing.assert_array_equal(runs[0].scores, runs[1].scores)


def test_gauss_seidel_one_block_is_the_classic_sweep():
    # blocks=1 updates every node from the newest values: fewer sweeps than 16 blocks
    g = random_graph(23, 400, 1600, weighted=False, isolated=2)
    one = webrank.pagerank(g, alpha=0.95, tol=1e-10, method="gauss-seidel", blocks=1,
                           anderson=0)
    many = webrank.pagerank(g, alpha=0.95, tol=1e-10, method="gauss-seidel", blocks=16,
                            anderson=0)
    assert one.info["blocks"] == 1 and many.info["blocks"] == 16
    assert one.iterations < many.iterations
    assert np.abs(one.scores - many.scores).sum() < 4e-9
    # more blocks than swept nodes: one a block (node 2 is dangling: lumped, not swept)
    tiny = webrank.Graph.from_edges(np.array([0, 1]), np.array([1, 2]))
    assert webrank.pagerank(tiny, method="gauss-seidel", blocks=50).info["blocks"] == 2


@pytest.mark.parametrize("blocks", [0, -1, 2.5, True, "4"])
def test_gauss_seidel_bad_blocks(blocks):
    g = random_graph(24, 30, 60, weighted=False)
    with pytest.raises(ValueError, match="blocks must be a positive integer"):
        webrank.pagerank(g, method="gauss-seidel", blocks=blocks)


@pytest.mark.parametrize("method", LINEAR)
def test_cli_method(tmp_path, method):
    from click.testing import CliRunner

    from webrank.cli import cli

    path = tmp_path / "g.txt"
    path.write_text("1 2\n2 3\n3 1\n3 4\n")
    out = CliRunner().invoke(cli, ["rank", str(path), "--method", method, "--alpha", "0.99",
                                   "--tol", "1e-12", "--device", "cpu", "--json"])
    assert out.exit_code == 0, out.output
    assert f'"method": "{method}"' in out.output


@pytest.fixture(scope="module")
def notredame_power():
    g = webrank.load(dataset("web-NotreDame"))
    return g, webrank.pagerank(g, alpha=0.99, tol=1e-10, device="cpu", max_iter=5000,
                               method="power")


@pytest.mark.slow
@pytest.mark.parametrize("method", LINEAR)
def test_web_notredame_alpha_099_matches_power(notredame_power, method):
    g, p = notredame_power
    r = webrank.pagerank(g, alpha=0.99, tol=1e-10, method=method, device="cpu",
                         max_iter=5000)
    assert r.converged
    assert np.abs(r.scores - p.scores).sum() < 1e-8
    # measured: power 1598 products, gmres 344, bicgstab 506, gauss-seidel 785
    assert r.matvecs < p.matvecs / 2


# -- Gauss-Seidel with Anderson mixing ----------------------------------------------------
def test_anderson_weights_minimise_the_mixed_residual():
    from webrank.backends.anderson import mixing_weights

    rng = np.random.default_rng(5)
    f = rng.normal(size=(4, 50))
    a = mixing_weights(f @ f.T)
    assert a is not None and a.sum() == pytest.approx(1.0)
    best = np.linalg.norm(a @ f)
    for _ in range(200):  # any other affine combination is no better
        b = a + rng.normal(scale=0.1, size=4)
        b += (1.0 - b.sum()) / 4
        assert np.linalg.norm(b @ f) >= best - 1e-12
    assert mixing_weights(np.zeros((2, 2))) is None  # a zero residual: nothing to mix
    assert mixing_weights(np.full((2, 2), np.nan)) is None
    dependent = np.array([[1.0, 1.0], [1.0, 1.0]])  # the same residual twice
    w = mixing_weights(dependent)
    assert w is None or np.abs(w).sum() <= 1e4


@pytest.mark.parametrize("weighted", [False, True])
def test_gauss_seidel_anderson_needs_fewer_sweeps_same_answer(weighted):
    g = random_graph(24, 3000, 15000, weighted=weighted, isolated=7)
    rng = np.random.default_rng(9)
    v = _dist(rng, g.n, 100)
    exact = exact_pagerank(g, 0.95, personalization=v)
    plain = webrank.pagerank(g, alpha=0.95, personalization=v, tol=1e-11,
                             method="gauss-seidel", blocks=2, anderson=0, max_iter=5000)
    mixed = webrank.pagerank(g, alpha=0.95, personalization=v, tol=1e-11,
                             method="gauss-seidel", blocks=2, max_iter=5000)
    assert mixed.info["anderson"] == 5 and mixed.info["mixes"] > 0
    assert mixed.iterations < 0.7 * plain.iterations
    for r in (plain, mixed):
        assert r.converged and r.residuals[-1] < 1e-11
        assert np.abs(r.scores - exact).sum() < 10 * 1e-11 / (1 - 0.95)


def test_gauss_seidel_defaults_to_one_block_per_thread():
    from webrank.kernels.cpu import num_threads

    g = random_graph(25, 400, 1600, weighted=False, isolated=2)
    r = webrank.pagerank(g, tol=1e-10, method="gauss-seidel")
    assert r.info["blocks"] == min(num_threads(), g.n)


@pytest.mark.parametrize(("option", "value"), [("anderson", -1), ("anderson", 1.5),
                                                ("anderson_every", 0),
                                                ("anderson_every", True)])
def test_gauss_seidel_bad_anderson_options(option, value):
    g = random_graph(26, 50, 100, weighted=False)
    with pytest.raises(ValueError, match=option):
        webrank.pagerank(g, method="gauss-seidel", **{option: value})


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_gauss_seidel_layout_keeps_every_link(blocks):
    from webrank.kernels.cpu_gauss_seidel import block_layout

    g = random_graph(27, 500, 3000, weighted=True, isolated=3)
    vals = g.transition_values()
    lay = block_layout(g.indptr, g.indices, vals, blocks)
    zero_slot = lay.buffer_size - 1
    assert zero_slot == g.n + lay.halo.size
    assert np.all(np.diff(lay.indptr) % 2 == 0)  # every row even, padded by one at most
    assert np.all(np.diff(lay.indptr) - np.diff(g.indptr) <= 1)
    rows = np.repeat(np.arange(g.n), np.diff(lay.indptr))
    real = lay.indices != zero_slot
    assert np.all(lay.vals[~real] == 0) and not np.any(g.indices == zero_slot)
    rows, idx = rows[real], lay.indices[real]
    across = idx >= g.n
    sources = np.where(across, lay.halo[np.where(across, idx - g.n, 0)]
                       if lay.halo.size else -1, idx)
    block_of = np.searchsorted(lay.bounds, np.arange(g.n), side="right") - 1
    assert np.all((block_of[sources] != block_of[rows]) == across)  # halo: other blocks
    assert (across.any() or blocks == 1) and np.array_equal(sources, g.indices)
    assert np.array_equal(lay.vals[real], vals)  # each row's links in the graph's order


@pytest.mark.parametrize(("engine", "blas_threads_inside"), [("pull", 1), ("auto", None)])
def test_solves_on_the_parallel_kernels_run_blas_on_one_thread(engine, blas_threads_inside):
    """BLAS's idle workers would spin on the cores the compiled kernels use (CPUOperator.solving);
    small graphs (the serial SciPy step, engine auto) leave BLAS as it is."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    if not blas:
        pytest.skip("no BLAS library found by threadpoolctl")
    before = {i["filepath"]: i["num_threads"] for i in blas}
    if max(before.values()) == 1:
        pytest.skip("BLAS runs on one thread already: nothing to tell apart")
    seen: list[int] = []

    def callback(_iteration, _residual):
        seen.extend(i["num_threads"] for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas" and i["filepath"] in before)

    g = random_graph(28, 300, 2000, weighted=False)
    r = webrank.pagerank(g, method="gmres", engine=engine, callback=callback)
    assert r.info["kernel"] == ("native" if engine == "pull" else "serial") and seen
    want = [blas_threads_inside] * len(seen) if blas_threads_inside else \
        [before[f] for f in before] * (len(seen) // len(before))
    assert seen == want
    after = {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info()
             if i["filepath"] in before}
    assert after == before  # restored


@pytest.mark.parametrize("case", ["zero-weight links", "distributions", "no links",
                                  "one live node", "many dangling"])
def test_gauss_seidel_lumped_dangling_rows_solve_the_whole_system(case):
    """The sweeps visit the non-dangling rows only; the dangling rows follow exactly
    from their mass (kernels.cpu_gauss_seidel): checked against the dense solve."""
    rng = np.random.default_rng(31)
    opts = {}
    if case == "zero-weight links":  # node 0's out-links all weigh 0: dangling, with links
        g = random_graph(32, 60, 300, weighted=True)
        w = g.weights.copy()
        w[g.indices == 0] = 0.0
        g = webrank.Graph.from_edges(g.indices, np.repeat(np.arange(g.n), np.diff(g.indptr)),
                                     w, node_ids="range", num_nodes=g.n)
        assert g.dangling_mask[0] and np.any(g.indices == 0)
    elif case == "distributions":
        g = random_graph(33, 80, 200, weighted=False, isolated=5)
        opts = {"personalization": rng.random(g.n), "dangling": rng.random(g.n)}
    elif case == "no links":
        g = webrank.Graph.from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                     node_ids="range", num_nodes=7)
    elif case == "one live node":  # a star: 0 -> every other node, all of them dangling
        g = webrank.Graph.from_edges(np.zeros(9, np.int64), np.arange(1, 10))
    else:
        g = random_graph(34, 200, 150, weighted=False, isolated=20)
    assert g.dangling_mask.any()
    ref = exact_pagerank(g, 0.9, opts.get("personalization"), opts.get("dangling"))
    for blocks in (1, 3):
        r = webrank.pagerank(g, alpha=0.9, tol=1e-12, method="gauss-seidel", blocks=blocks,
                             **opts)
        assert r.converged and np.abs(r.scores - ref).sum() < 1e-10


@pytest.mark.parametrize(("blocks", "weighted"), [(1, True), (4, False), (4, True)])
def test_gauss_seidel_system_drops_rows_and_sources_not_kept(blocks, weighted):
    """swept_system on a subset of rows: the kept rows' links from kept nodes, renumbered;
    each kept node's links into the dropped rows summed (the lumped dangling mass)."""
    from webrank.kernels.cpu_gauss_seidel import swept_system

    g = random_graph(28, 400, 2500, weighted=weighted, isolated=2)
    rng = np.random.default_rng(5)
    keep = np.flatnonzero(rng.random(g.n) < 0.7)
    vals = g.transition_values() if weighted else np.zeros(0)
    self_value = rng.random(keep.size)
    sys_ = swept_system(g.indptr, g.indices, vals, keep, self_value, blocks)
    compact = np.full(g.n, -1)
    compact[keep] = np.arange(keep.size)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    link_vals = vals if weighted else np.ones(g.indices.size)
    from_kept = compact[g.indices] >= 0
    into = from_kept & (compact[rows] < 0)
    expected_mass = np.bincount(compact[g.indices[into]], weights=link_vals[into],
                                minlength=keep.size)
    np.testing.assert_allclose(sys_.mass_weight, expected_mass, rtol=1e-12)
    lay = sys_.layout
    zero_slot = lay.buffer_size - 1
    lay_rows = np.repeat(np.arange(keep.size), np.diff(lay.indptr))
    real = lay.indices != zero_slot
    idx = lay.indices[real]
    in_halo = np.clip(idx - keep.size, 0, max(lay.halo.size - 1, 0))
    sources = np.where(idx >= keep.size, lay.halo[in_halo] if lay.halo.size else -1, idx)
    kept_links = from_kept & (compact[rows] >= 0)
    assert np.array_equal(lay_rows[real], compact[rows[kept_links]])
    assert np.array_equal(sources, compact[g.indices[kept_links]])
    loops = kept_links & (g.indices == rows)
    expected_self = np.bincount(compact[rows[loops]], minlength=keep.size,
                                weights=link_vals[loops] if weighted
                                else self_value[compact[rows[loops]]])
    np.testing.assert_allclose(sys_.self_weight, expected_self, rtol=1e-12)
