"""The ``adaptive`` and ``fixed`` methods: against the exact answer, their own guarantees,
the fixed-point arithmetic, and (GPU-marked) GPU against CPU."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from reference import exact_pagerank
from test_pagerank import SEED_SIX, graph_of, random_graph

import webrank
from webrank.backends.fixed_point import from_q63, reciprocals, to_frac, to_q63
from webrank.kernels.cpu_fixed import FRAC_MAX, PRODUCT_DOUBLE, PRODUCT_EXACT, mulfrac_array

GPU = pytest.mark.gpu


def two_speed_graph(seed: int = 0, n1: int = 3000, cycle: int = 300) -> webrank.Graph:
    """A fast-mixing random part plus a slow cycle with chords into one node: the random
    part converges long before the cycle, so the adaptive method freezes it."""
    rng = np.random.default_rng(seed)
    s1, d1 = rng.integers(0, n1, 8 * n1), rng.integers(0, n1, 8 * n1)
    cyc = np.arange(cycle) + n1
    s2 = np.concatenate([cyc, cyc[rng.integers(0, cycle, 30)]])
    d2 = np.concatenate([np.roll(cyc, -1), np.full(30, n1)])
    return webrank.Graph.from_edges(np.concatenate([s1, s2]), np.concatenate([d1, d2]),
                                    node_ids="range")


def mixed_graph(weighted: bool) -> webrank.Graph:
    """Dangling nodes, self-loops (a tenth of the edges), 3 isolated nodes."""
    return random_graph(5, 300, 900, weighted=weighted, isolated=3)


# -- adaptive ------------------------------------------------------------------------------
@pytest.mark.parametrize(("weighted", "personalize", "alpha"),
                         [(False, False, 0.85), (True, True, 0.85), (False, True, 0.99)])
def test_adaptive_meets_its_bound_against_exact(weighted, personalize, alpha):
    g = mixed_graph(weighted)
    rng = np.random.default_rng(1)
    v = rng.uniform(0, 1, g.n) if personalize else None
    d = rng.uniform(0, 1, g.n) if personalize else None
    tol = 1e-10
    r = webrank.pagerank(g, alpha=alpha, tol=tol, max_iter=20000, method="adaptive",
                         personalization=v, dangling=d, freeze_factor=3.0)
    exact = exact_pagerank(g, alpha, personalization=v, dangling=d)
    # the stated factor: a true power-step residual below tol bounds the L1 error by
    # alpha / (1 - alpha) * tol, at most doubled by the final rescaling to sum 1
    assert r.converged and r.residuals[-1] < tol
    assert r.info["verify_steps"] >= 1
    err = np.abs(r.scores - exact).sum()
    assert err < 2 * alpha / (1 - alpha) * tol
    assert r.info["error_bound_l1"] == pytest.approx(alpha / (1 - alpha) * r.residuals[-1])


def test_adaptive_freezes_and_accounts_for_its_work():
    g = two_speed_graph()
    tol = 1e-10
    r = webrank.pagerank(g, tol=tol, method="adaptive")
    info = r.info
    rows = np.asarray(info["rows_active"])
    assert len(rows) == r.iterations == info["adaptive_steps"] + info["verify_steps"]
    assert info["frozen_at_end"] > g.n // 2 and rows.min() < g.n // 10
    # edges: full rows in the verification steps, fewer before
    assert info["edges_gathered"] < r.iterations * g.num_edges
    assert info["matvec_equivalents"] == pytest.approx(info["edges_gathered"] / g.num_edges)
    assert info["edge_gathers_saved"] > 0.05
    assert (rows[-info["verify_steps"]:] == g.n).all()
    exact = exact_pagerank(g)
    assert np.abs(r.scores - exact).sum() < 2 * 0.85 / 0.15 * tol


@pytest.mark.parametrize("criterion", ["l2", "linf"])
def test_adaptive_other_criteria(criterion):
    g = two_speed_graph(cycle=100)
    r = webrank.pagerank(g, tol=1e-11, criterion=criterion, method="adaptive",
                         compact_every=2, patience=1)
    assert r.converged and r.residuals[-1] < 1e-11
    assert np.abs(r.scores - exact_pagerank(g)).sum() < 1e-11 * 0.85 / 0.15 * 2 * np.sqrt(g.n)


def test_adaptive_bad_options_and_max_iter():
    g = graph_of(SEED_SIX)
    for bad in ({"freeze_factor": 0}, {"freeze_factor": "x"}, {"patience": 0},
                {"patience": 256}, {"compact_every": 1.5}):
        with pytest.raises(ValueError):
            webrank.pagerank(g, method="adaptive", **bad)
    with pytest.raises(ValueError, match="float64"):
        webrank.pagerank(g, method="adaptive", dtype="float32")
    r = webrank.pagerank(g, method="adaptive", max_iter=0, raise_on_nonconvergence=False)
    assert r.iterations == 0 and not r.converged
    r = webrank.pagerank(g, method="adaptive", max_iter=3, raise_on_nonconvergence=False)
    assert r.iterations == 3 and not r.converged


# -- fixed-point arithmetic ---------------------------------------------------------------
def test_mulfrac_exact_matches_big_integers():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2**63, 2000, dtype=np.uint64, endpoint=True)
    f = rng.integers(0, 2**64 - 1, 2000, dtype=np.uint64, endpoint=True)
    a[:3] = [0, 2**63, 2**64 - 1]
    f[:3] = [FRAC_MAX, FRAC_MAX, FRAC_MAX]
    got = mulfrac_array(a, f, PRODUCT_EXACT)
    want = [(int(x) * int(y) + 2**63) >> 64 for x, y in zip(a, f, strict=True)]
    assert got.tolist() == want
    # the double round trip: within one ulp below 2**-11 (a < 2**52), relative 2**-52 above
    dbl = mulfrac_array(a, f, PRODUCT_DOUBLE).astype(object)
    err = np.abs(dbl - np.array(want, dtype=object)).astype(float)
    small = a < 2**52
    assert err[small].max() <= 1
    assert (err[~small] <= np.maximum(1, np.array(want, dtype=float)[~small] * 2**-51)).all()


def test_reciprocals_and_fractions_round_exactly():
    k = np.array([0, 1, 2, 3, 7, 10, 1000, 2**31 - 1, 123456789], dtype=np.uint64)
    got = reciprocals(k)
    for kk, r in zip(k.tolist(), got.tolist(), strict=True):
        want = 0 if kk == 0 else min((2**64 + kk // 2) // kk, FRAC_MAX)
        assert r == want
    assert to_frac(np.array([0.0, 0.5, 1.0])).tolist() == [0, 2**63, FRAC_MAX]
    x = np.array([0.0, 1.0, 0.25, 1e-7])
    assert to_q63(x).tolist()[:3] == [0, 2**63, 2**61]
    assert np.abs(from_q63(to_q63(x)) - x).max() <= 2.0**-64  # half an ulp


# -- fixed ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("product", "weighted", "personalize"),
                         [("exact", False, False), ("double", False, True),
                          ("exact", True, True), ("double", True, False)])
def test_fixed_matches_exact_to_rounding(product, weighted, personalize):
    g = mixed_graph(weighted)
    rng = np.random.default_rng(3)
    v = rng.uniform(0, 1, g.n) if personalize else None
    d = rng.uniform(0, 1, g.n) if personalize else None
    r = webrank.pagerank(g, tol=1e-15, method="fixed", product=product,
                         personalization=v, dangling=d)
    exact = exact_pagerank(g, personalization=v, dangling=d)
    # residual floor: a few ulps (1.1e-19) per node and in-link
    assert r.converged
    assert np.abs(r.scores - exact).sum() < 1e-14
    assert r.info["product"] == product and r.info["format"] == "Q1.63"
    assert r.info["error_bound_l1"] < 1e-14
    assert r.matvecs == r.iterations + 1  # the float64 check


def test_fixed_hub_row_cannot_overflow():
    # one node with 20000 in-links holding almost all the rank (all of the teleport too)
    n = 20001
    src = np.arange(1, n)
    g = webrank.Graph.from_edges(src, np.zeros(n - 1, dtype=np.int64), node_ids="range")
    for v in (None, np.eye(1, n, 0).ravel()):
        r = webrank.pagerank(g, tol=1e-13, method="fixed", personalization=v)
        ref = webrank.pagerank(g, tol=1e-11, personalization=v)  # float64 power
        assert np.abs(r.scores - ref.scores).sum() < 1e-10


def test_fixed_scores_are_the_q63_vector_over_its_exact_total():
    # the device-independent normalisation: the integer vector divided by its integer
    # total, not renormalised by a float sum (whose order differs between devices)
    from webrank.backends import make_operator
    from webrank.backends.fixed_point import FixedPointMatrix, fixed_constants
    from webrank.solvers.fixed import fixed

    g = random_graph(6, 2000, 30000, weighted=True, isolated=3)
    r = webrank.pagerank(g, tol=1e-13, method="fixed", device="cpu")
    op = make_operator(g, device="cpu", alpha=0.85, personalization=None, dangling=None,
                       dtype="float64")
    matrix = FixedPointMatrix(product=PRODUCT_EXACT, **fixed_constants(op))
    raw = op.fixed_steps(to_q63(np.full(g.n, 1.0 / g.n)), matrix=matrix, tol=1e-13,
                         max_steps=1000, criterion="l1")
    total = int(raw.x.sum(dtype=np.uint64))
    np.testing.assert_array_equal(r.scores, raw.x.astype(np.float64) / float(total))
    assert abs(r.scores.sum() - 1.0) < 1e-14
    assert fixed(op, np.full(g.n, 1.0 / g.n), tol=1e-13, max_iter=1000,
                 criterion="l1").normalized


def test_fixed_criteria_and_options():
    g = graph_of(SEED_SIX)
    for criterion in ("l1", "l2", "linf"):
        r = webrank.pagerank(g, tol=1e-12, criterion=criterion, method="fixed")
        assert r.residuals[-1] < 1e-12 <= r.residuals[-2]
        np.testing.assert_allclose(r.scores, exact_pagerank(g), atol=1e-11)
    with pytest.raises(ValueError, match="product"):
        webrank.pagerank(g, method="fixed", product="fast")
    with pytest.raises(ValueError, match="dtype"):
        webrank.pagerank(g, method="fixed", dtype="float32")
    r = webrank.pagerank(g, method="fixed", verify=False)
    assert "float64_residual" not in r.info and r.matvecs == r.iterations


@pytest.mark.parametrize(("weighted", "personalize", "tol"),
                         [(False, False, 1e-12), (True, True, 1e-12), (False, True, 0.0)])
def test_fixed_with_the_mask_of_converged_nodes_keeps_its_accuracy(weighted, personalize,
                                                                   tol):
    # Sgherzi's bitmask on the fixed-point method: the random part converges and is
    # skipped while the slow cycle iterates; full steps verify the answer afterwards
    g = two_speed_graph() if not weighted else random_graph(8, 3000, 24000, weighted=True)
    rng = np.random.default_rng(5)
    v = rng.uniform(0, 1, g.n) if personalize else None
    exact = exact_pagerank(g, personalization=v)
    plain = webrank.pagerank(g, tol=tol, method="fixed", personalization=v, max_iter=3000)
    assert "frozen_at_end" not in plain.info
    masked = webrank.pagerank(g, tol=tol, method="fixed", personalization=v, max_iter=3000,
                              skip_converged=True)
    assert masked.converged and masked.info["verify_steps"] >= 1
    assert masked.info["frozen_at_end"] > g.n // 2
    # the last residual is a full step's, below tol (tol=0: the rounding floor)
    floor = 1e-12 if tol else 1e-15
    assert masked.residuals[-1] < max(tol, floor)
    # the power method's bound from the last full step (twice: the scores are rescaled)
    bound = 2 * 0.85 / 0.15 * max(masked.residuals[-1], 1e-15)
    assert np.abs(plain.scores - exact).sum() < 2 * 0.85 / 0.15 * max(plain.residuals[-1], 1e-15)
    assert np.abs(masked.scores - exact).sum() < bound


def test_fixed_step_skips_the_rows_the_mask_marks():
    # the kernel itself: rows whose count reached patience keep x (and xs), gather
    # nothing, still count in the dangling mass; the other rows are the full step's
    from webrank.backends import make_operator
    from webrank.backends.fixed_point import fixed_constants
    from webrank.kernels.cpu import chunk_bounds
    from webrank.kernels.cpu_fixed import fixed_step

    g = random_graph(9, 500, 3000, weighted=False, isolated=2)
    op = make_operator(g, device="cpu", alpha=0.85, personalization=None, dangling=None,
                       dtype="float64")
    c = fixed_constants(op)
    rng = np.random.default_rng(1)
    x = to_q63(rng.dirichlet(np.ones(g.n)))
    xs = mulfrac_array(x, c["node_scale"], PRODUCT_EXACT)
    dm = int(x[g.dangling_mask].sum(dtype=np.uint64))
    bounds = chunk_bounds(g.indptr, 4)

    def step(calm, patience):
        x_out, xs_out = np.empty_like(x), np.empty_like(x)
        res, dm_out = fixed_step(g.indptr, g.indices, c["edge_vals"], xs=xs, x=x,
                                 node_scale=c["node_scale"], tele=c["tele"], dist=c["dist"],
                                 alpha_q=c["alpha_q"], dm=dm, crit=0, product=PRODUCT_EXACT,
                                 bounds=bounds, x_out=x_out, xs_out=xs_out,
                                 partial_res=np.zeros(8),
                                 partial_dm=np.zeros(8, np.uint64), calm=calm, theta=0,
                                 patience=patience)
        return x_out, xs_out, res, dm_out

    full_x, full_xs, full_res, _ = step(None, 0)
    calm = np.where(np.arange(g.n) % 3 == 0, 2, 0).astype(np.uint8)
    frozen = calm >= 2
    got_x, got_xs, got_res, got_dm = step(calm, 2)
    np.testing.assert_array_equal(got_x[frozen], x[frozen])
    np.testing.assert_array_equal(got_xs[frozen], xs[frozen])
    np.testing.assert_array_equal(got_x[~frozen], full_x[~frozen])
    np.testing.assert_array_equal(got_xs[~frozen], full_xs[~frozen])
    assert got_dm == int(got_x[g.dangling_mask].sum(dtype=np.uint64))
    diff = np.abs(full_x.astype(np.float64) - x.astype(np.float64))
    assert got_res == pytest.approx(diff[~frozen].sum(), rel=1e-12) and got_res < full_res
    # counts: frozen rows untouched; the others 0 (they all moved by more than 0 ulps)
    assert (calm[frozen] == 2).all() and (calm[~frozen] == 0).all()
    with pytest.raises(ValueError, match="patience"):
        webrank.pagerank(g, method="fixed", skip_converged=True, patience=0)


def test_fixed_and_adaptive_on_alpha_zero_and_tiny_graphs():
    g = graph_of([(1, 2)])
    for method in ("fixed", "adaptive"):
        r = webrank.pagerank(g, alpha=0.0, tol=1e-12, method=method)
        np.testing.assert_allclose(r.scores, [0.5, 0.5], atol=1e-15)


def test_cli_rank_with_the_new_methods(tmp_path):
    from webrank.cli import cli

    path = tmp_path / "g.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in SEED_SIX))
    for method in ("adaptive", "fixed"):
        out = CliRunner().invoke(cli, ["rank", str(path), "--method", method, "--device",
                                       "cpu", "--tol", "1e-10", "--json"])
        assert out.exit_code == 0, out.output
        assert f'"{method}"' in out.output


# -- GPU against CPU -------------------------------------------------------------------------
GPU_CASES = [
    pytest.param(False, False, id="plain"),
    pytest.param(True, False, id="weighted"),
    pytest.param(False, True, id="personalized"),
    pytest.param(True, True, id="weighted-personalized"),
]


def _gpu_and_cpu(g, personalize, **kw):
    rng = np.random.default_rng(4)
    v = rng.uniform(0, 1, g.n) if personalize else None
    d = rng.uniform(0, 1, g.n) if personalize else None
    return [webrank.pagerank(g, device=dev, personalization=v, dangling=d, **kw)
            for dev in ("cpu", "gpu")]


@GPU
@pytest.mark.parametrize(("weighted", "personalize"), GPU_CASES)
@pytest.mark.parametrize("product", ["exact", "double"])
def test_gpu_fixed_is_bit_identical_to_cpu(weighted, personalize, product):
    # integer sums do not depend on order and both products round alike: same bits
    # (heavy rows: in-degree above the GPU's heavy threshold of 64)
    g = random_graph(6, 2000, 30000, weighted=weighted, isolated=3)
    cpu, gpu = _gpu_and_cpu(g, personalize, tol=1e-13, method="fixed", product=product)
    assert gpu.iterations == cpu.iterations
    np.testing.assert_array_equal(gpu.scores, cpu.scores)
    # residuals are sums of exact integer differences in double: equal up to the order
    # of those sums while they exceed 2**53 ulps
    np.testing.assert_allclose(gpu.residuals, cpu.residuals, rtol=1e-12)


@GPU
@pytest.mark.parametrize(("weighted", "personalize"), GPU_CASES)
def test_gpu_fixed_with_the_mask_is_bit_identical_to_cpu(weighted, personalize):
    # the counts follow exact integer differences: the same nodes freeze on both devices
    g = random_graph(7, 20000, 200000, weighted=weighted, isolated=5)
    for tol in (1e-12, 0.0):
        cpu, gpu = _gpu_and_cpu(g, personalize, tol=tol, method="fixed",
                                skip_converged=True, max_iter=3000)
        assert gpu.iterations == cpu.iterations
        assert gpu.info["frozen_at_end"] == cpu.info["frozen_at_end"] > 0
        np.testing.assert_array_equal(gpu.scores, cpu.scores)


@GPU
@pytest.mark.parametrize(("weighted", "personalize"), GPU_CASES)
def test_gpu_adaptive_matches_cpu(weighted, personalize):
    g = random_graph(6, 2000, 30000, weighted=weighted, isolated=3)
    cpu, gpu = _gpu_and_cpu(g, personalize, tol=1e-11, method="adaptive", freeze_factor=3.0)
    assert gpu.converged and gpu.residuals[-1] < 1e-11
    assert abs(gpu.iterations - cpu.iterations) <= 3
    assert np.abs(gpu.scores - cpu.scores).sum() < 2 * 0.85 / 0.15 * 1e-11


@GPU
def test_gpu_adaptive_freezes_like_cpu():
    g = two_speed_graph()
    cpu, gpu = (webrank.pagerank(g, tol=1e-10, method="adaptive", device=dev)
                for dev in ("cpu", "gpu"))
    assert gpu.info["frozen_at_end"] > g.n // 2
    assert abs(gpu.info["matvec_equivalents"] - cpu.info["matvec_equivalents"]) < 3
    assert np.abs(gpu.scores - exact_pagerank(g)).sum() < 2 * 0.85 / 0.15 * 1e-10
