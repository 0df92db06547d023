"""Tests for webrank.generate (random graph generators)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import webrank
from webrank import generate as gen
from webrank.generate import erdos_renyi, generate, rmat, scale_free, watts_strogatz

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _nx_edges(G) -> tuple[np.ndarray, np.ndarray]:
    e = np.array(list(G.edges()), dtype=np.int64).reshape(-1, 2)
    return e[:, 0], e[:, 1]


def _ccdf_slope(deg: np.ndarray, lo: int, hi: int) -> float:
    """Log-log slope of P(D >= d) over lo <= d <= hi (the tail exponent)."""
    deg = np.sort(deg)
    ds = np.unique(np.round(np.logspace(np.log10(lo), np.log10(hi), 12)).astype(int))
    ccdf = 1.0 - np.searchsorted(deg, ds, side="left") / deg.size
    ok = ccdf > 0
    return float(np.polyfit(np.log(ds[ok]), np.log(ccdf[ok]), 1)[0])


def _ks(x: np.ndarray, y: np.ndarray) -> float:
    grid = np.union1d(x, y)
    fx = np.searchsorted(np.sort(x), grid, side="right") / x.size
    fy = np.searchsorted(np.sort(y), grid, side="right") / y.size
    return float(np.abs(fx - fy).max())


def _assert_same(a, b) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _differ(a, b) -> bool:
    return len(a[0]) != len(b[0]) or not (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))


# ---------------------------------------------------------------------------
# determinism
# ---------------------------------------------------------------------------

CASES = [
    (erdos_renyi, (500,), {"p": 0.02}),
    (watts_strogatz, (500, 6, 0.2), {}),
    (scale_free, (500,), {}),
    (rmat, (9,), {}),
    (rmat, (9,), {"shuffle": False, "chunk_size": 1000}),
]


@pytest.mark.parametrize(("fn", "args", "kw"), CASES)
def test_determinism(fn, args, kw):
    a = fn(*args, seed=123, **kw)
    b = fn(*args, seed=123, **kw)
    c = fn(*args, seed=124, **kw)
    _assert_same(a, b)
    assert _differ(a, c)
    # a numpy Generator is accepted as seed
    d = fn(*args, seed=np.random.default_rng(7), **kw)
    e = fn(*args, seed=np.random.default_rng(7), **kw)
    _assert_same(d, e)
    assert a[0].dtype == np.int64 and a[1].dtype == np.int64
    assert isinstance(a[2], int)


# ---------------------------------------------------------------------------
# Erdős–Rényi
# ---------------------------------------------------------------------------


def test_er_simple_graph_and_count():
    n, p = 3000, 0.004
    src, dst, nn = erdos_renyi(n, p, seed=1)
    assert nn == n
    assert np.all((src >= 0) & (src < n) & (dst >= 0) & (dst < n))
    assert not np.any(src == dst)
    key = src * n + dst
    assert np.unique(key).size == key.size
    assert np.all(np.diff(key) > 0)  # sorted by (src, dst)
    N = n * (n - 1)
    assert abs(src.size - N * p) < 5 * math.sqrt(N * p * (1 - p))


def test_er_degrees_match_networkx():
    n, p = 2000, 0.005
    ours, theirs = [], []
    for s in range(3):
        src, _, _ = erdos_renyi(n, p, seed=s)
        ours.append(np.bincount(src, minlength=n))
        G = nx.fast_gnp_random_graph(n, p, seed=s, directed=True)
        theirs.append(np.array([d for _, d in G.out_degree()]))
    ours, theirs = np.concatenate(ours), np.concatenate(theirs)
    mean, var = (n - 1) * p, (n - 1) * p * (1 - p)
    # binomial mean and variance, and close to networkx's
    assert abs(ours.mean() - mean) < 0.15
    assert abs(ours.var() - var) < 0.1 * var
    assert abs(ours.mean() - theirs.mean()) < 0.2
    assert abs(ours.var() - theirs.var()) < 0.15 * var
    assert _ks(ours, theirs) < 0.03


def test_er_exact_small():
    # n = 4: 12 ordered pairs, each present with probability p, independently
    n, p, R = 4, 0.3, 4000
    counts = np.zeros(n * n)
    sizes = np.zeros(R)
    for i in range(R):
        src, dst, _ = erdos_renyi(n, p, seed=i)
        counts += np.bincount(src * n + dst, minlength=n * n)
        sizes[i] = src.size
    freq = counts.reshape(n, n) / R
    assert np.all(np.diag(freq) == 0)
    off = freq[~np.eye(n, dtype=bool)]
    assert np.all(np.abs(off - p) < 4.5 * math.sqrt(p * (1 - p) / R))
    # edge count ~ Binomial(12, p): mean and variance
    assert abs(sizes.mean() - 12 * p) < 4.5 * math.sqrt(12 * p * (1 - p) / R)
    assert abs(sizes.var() / (12 * p * (1 - p)) - 1) < 0.1


def test_er_params_and_edges_cases():
    src, dst, n = erdos_renyi(200, avg_degree=5.0, seed=3)
    assert n == 200 and abs(src.size / 200 - 5.0) < 1.0
    src, dst, n = erdos_renyi(30, 1.0, seed=0)
    assert src.size == 30 * 29 and not np.any(src == dst)
    assert erdos_renyi(30, 0.0, seed=0)[0].size == 0
    assert erdos_renyi(1, 0.5, seed=0)[0].size == 0
    assert erdos_renyi(0, 0.5, seed=0)[2] == 0
    with pytest.raises(ValueError):
        erdos_renyi(10)
    with pytest.raises(ValueError):
        erdos_renyi(10, 0.1, avg_degree=1.0)
    with pytest.raises(ValueError):
        erdos_renyi(10, 1.5)


def test_er_large_sparse_is_fast_enough():
    # 10**5 nodes, about 10**6 edges: exercises several geometric batches
    src, dst, n = erdos_renyi(100_000, avg_degree=10.0, seed=5)
    m = src.size
    assert abs(m - 1e6) < 5 * math.sqrt(1e6)
    assert not np.any(src == dst)
    assert np.all(np.diff(src * n + dst) > 0)


# ---------------------------------------------------------------------------
# Watts–Strogatz
# ---------------------------------------------------------------------------


def _undirected_keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    return np.minimum(a, b) * n + np.maximum(a, b)


@pytest.mark.parametrize(("n", "k"), [(20, 4), (101, 6), (50, 5), (10, 2)])
def test_ws_p0_is_networkx_lattice(n, k):
    src, dst, nn = watts_strogatz(n, k, 0.0, seed=0)
    assert nn == n
    G = nx.watts_strogatz_graph(n, k, 0.0, seed=0)
    ours = set(zip(src.tolist(), dst.tolist(), strict=True))
    assert ours == set(G.to_directed().edges())
    assert src.size == len(ours) == 2 * G.number_of_edges()


def _ws_check_simple(src, dst, n):
    m = src.size // 2
    np.testing.assert_array_equal(src[:m], dst[m:])
    np.testing.assert_array_equal(dst[:m], src[m:])
    assert not np.any(src == dst)
    keys = _undirected_keys(src[:m], dst[:m], n)
    assert np.unique(keys).size == m
    assert np.all((src >= 0) & (src < n))


def test_ws_rewired_statistics_match_networkx():
    n, k, p = 1000, 10, 0.1
    lattice = _undirected_keys(*watts_strogatz(n, k, 0.0)[:2], n)
    ours_frac, nx_frac, ours_cl, nx_cl = [], [], [], []
    for s in range(4):
        src, dst, _ = watts_strogatz(n, k, p, seed=s)
        assert src.size == n * k
        assert np.bincount(src, minlength=n).sum() == n * k
        _ws_check_simple(src, dst, n)
        m = src.size // 2
        keys = _undirected_keys(src[:m], dst[:m], n)
        ours_frac.append(np.mean(~np.isin(keys, lattice)))
        H = nx.Graph()
        H.add_nodes_from(range(n))
        H.add_edges_from(zip(src[:m].tolist(), dst[:m].tolist(), strict=True))
        ours_cl.append(nx.average_clustering(H))

        G = nx.watts_strogatz_graph(n, k, p, seed=s)
        a, b = _nx_edges(G)
        nx_frac.append(np.mean(~np.isin(_undirected_keys(a, b, n), lattice)))
        nx_cl.append(nx.average_clustering(G))
    # fraction of rewired edges ~ p (a rewiring can land on a lattice edge
    # freed by another rewiring, hence slightly below p)
    assert abs(np.mean(ours_frac) - p) < 0.01
    assert abs(np.mean(ours_frac) - np.mean(nx_frac)) < 0.01
    assert abs(np.mean(ours_cl) - np.mean(nx_cl)) < 0.02


def test_ws_dense_and_edge_cases():
    # dense: many rejections, saturated nodes; still a simple graph
    for s in range(5):
        src, dst, n = watts_strogatz(12, 10, 1.0, seed=s)
        _ws_check_simple(src, dst, n)
        assert src.size <= 12 * 10
    src, dst, n = watts_strogatz(30, 6, 1.0, seed=1)
    _ws_check_simple(src, dst, n)
    assert src.size == 30 * 6
    # k == n: complete graph
    src, dst, n = watts_strogatz(7, 7, 0.5, seed=0)
    assert src.size == 42 and not np.any(src == dst)
    # k < 2: no edges
    assert watts_strogatz(10, 1, 0.5, seed=0)[0].size == 0
    with pytest.raises(ValueError):
        watts_strogatz(5, 6, 0.1)
    with pytest.raises(ValueError):
        watts_strogatz(10, 4, 1.5)


# ---------------------------------------------------------------------------
# scale-free (Bollobás et al.)
# ---------------------------------------------------------------------------


def test_resolve_pointers():
    val = np.array([5, -1, -1, 7, -1, -1], np.int64)
    ptr = np.array([-1, 0, 1, -1, 2, 3], np.int64)
    out = gen._resolve_pointers(val, ptr)
    np.testing.assert_array_equal(out, [5, 5, 5, 7, 5, 7])


def test_scale_free_basic():
    src, dst, n = scale_free(2000, seed=0)
    assert n == 2000
    assert src.min() >= 0 and max(src.max(), dst.max()) == n - 1
    np.testing.assert_array_equal(src[:3], [0, 1, 2])
    np.testing.assert_array_equal(dst[:3], [1, 2, 0])
    # every node has an edge (each new node arrives with one)
    deg = np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
    assert np.all(deg > 0)
    # new node ids appear in order: node i first appears on an edge after i-1
    first = np.full(n, np.iinfo(np.int64).max)
    both = np.concatenate([src, dst])
    pos = np.concatenate([np.arange(src.size), np.arange(dst.size)])
    np.minimum.at(first, both, pos)
    assert np.all(np.diff(first[3:]) > 0)
    # small n: the 3-cycle, like networkx
    s, _, n3 = scale_free(2, seed=0)
    assert n3 == 3 and s.size == 3


def test_scale_free_matches_networkx_distribution():
    n = 10_000
    ours_in, nx_in, ours_m, nx_m, ours_max, nx_max = [], [], [], [], [], []
    for s in range(3):
        src, dst, nn = scale_free(n, seed=s)
        assert nn == n
        d = np.bincount(dst, minlength=n)
        ours_in.append(d)
        ours_m.append(src.size)
        ours_max.append(d.max())
        G = nx.scale_free_graph(n, seed=s)
        a, b = _nx_edges(G)
        d = np.bincount(b, minlength=n)
        nx_in.append(d)
        nx_m.append(a.size)
        nx_max.append(d.max())
    ours_in, nx_in = np.concatenate(ours_in), np.concatenate(nx_in)
    assert abs(np.mean(ours_m) / np.mean(nx_m) - 1) < 0.03
    assert abs(np.mean(ours_m) - n / 0.46) < 0.03 * n / 0.46
    assert abs(np.mean(ours_in == 0) - np.mean(nx_in == 0)) < 0.03
    ratio = np.mean(ours_max) / np.mean(nx_max)
    assert 1 / 2.5 < ratio < 2.5
    slope_ours = _ccdf_slope(ours_in, 3, 150)
    slope_nx = _ccdf_slope(nx_in, 3, 150)
    assert slope_ours < -0.5  # heavy but decaying tail
    assert abs(slope_ours - slope_nx) < 0.3
    assert _ks(ours_in, nx_in) < 0.03
    # out-degree too (delta_out = 0: only old tails are chosen by out-degree)
    assert (
        abs(np.mean(np.bincount(src, minlength=n) == 0) - np.mean(np.bincount(a, minlength=n) == 0))
        < 0.05
    )


@pytest.mark.parametrize("kw", [{}, {"delta_in": 0.0, "delta_out": 0.5}])
def test_scale_free_exact_small_n(kw):
    """Statistics of tiny graphs agree with networkx's sequential process."""
    n, R = 8, 2500

    def stats(src, dst):
        ind = np.bincount(dst, minlength=n)
        outd = np.bincount(src, minlength=n)
        return [src.size, ind[0], ind[1], ind[n - 1], np.sum(src == dst), outd[0]]

    A = np.array([stats(*scale_free(n, seed=i, **kw)[:2]) for i in range(R)], float)
    B = np.array(
        [stats(*_nx_edges(nx.scale_free_graph(n, seed=i, **kw))) for i in range(R)],
        float,
    )
    se = np.sqrt(A.var(0) / R + B.var(0) / R) + 1e-12
    z = (A.mean(0) - B.mean(0)) / se
    assert np.all(np.abs(z) < 4.5), z


def test_scale_free_invalid():
    with pytest.raises(ValueError):
        scale_free(10, alpha=0.5, beta=0.5, gamma=0.5)
    with pytest.raises(ValueError):
        scale_free(10, alpha=0.0, beta=0.95, gamma=0.05)
    with pytest.raises(ValueError):
        scale_free(10, delta_in=-1.0)


# ---------------------------------------------------------------------------
# R-MAT
# ---------------------------------------------------------------------------


def test_rmat_shape_range_and_skew():
    scale, ef = 12, 16
    src, dst, n = rmat(scale, ef, seed=0)
    assert n == 2**scale
    assert src.size == dst.size == ef * n
    assert src.dtype == np.int64
    assert src.min() >= 0 and src.max() < n and dst.min() >= 0 and dst.max() < n
    deg = np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
    assert deg.max() > 20 * deg.mean()
    assert np.mean(deg == 0) > 0.05  # many isolated vertices, as in Graph500


def test_rmat_quadrant_probabilities():
    scale = 13
    a, b, c = 0.57, 0.19, 0.19
    src, dst, _ = rmat(scale, 8, seed=1, shuffle=False)
    m = src.size
    tol0 = 4.5 * math.sqrt(0.25 / m)
    pooled = np.zeros(4)
    for level in range(scale):
        sh = scale - 1 - level
        sb, db = (src >> sh) & 1, (dst >> sh) & 1
        q = np.bincount(sb * 2 + db, minlength=4) / m
        pooled += q
        if level == 0:
            np.testing.assert_allclose(q, [a, b, c, 1 - a - b - c], atol=tol0)
    np.testing.assert_allclose(pooled / scale, [a, b, c, 1 - a - b - c], atol=0.003)
    # other parameters
    src, dst, _ = rmat(10, 8, a=0.25, b=0.25, c=0.25, seed=2, shuffle=False)
    q = np.bincount(((src >> 9) & 1) * 2 + ((dst >> 9) & 1), minlength=4) / src.size
    np.testing.assert_allclose(q, 0.25, atol=0.02)


def test_rmat_shuffle_is_a_relabelling():
    scale = 11
    s0, d0, n = rmat(scale, 8, seed=3, shuffle=False)
    s1, d1, _ = rmat(scale, 8, seed=3, shuffle=True)
    assert not np.array_equal(s0, s1)
    # same degree multisets
    np.testing.assert_array_equal(
        np.sort(np.bincount(s0, minlength=n)), np.sort(np.bincount(s1, minlength=n))
    )
    # there is one permutation mapping the unshuffled edges onto the shuffled
    perm = np.full(n, -1)
    perm[s0] = s1
    perm[d0] = d1
    np.testing.assert_array_equal(perm[s0], s1)
    np.testing.assert_array_equal(perm[d0], d1)
    used = perm[perm >= 0]
    assert np.unique(used).size == used.size
    # the shuffle destroys the id/degree correlation: vertex 0 is the hub
    # without shuffle, almost surely not with it
    assert np.bincount(s0, minlength=n).argmax() == 0
    assert np.bincount(s1, minlength=n).argmax() != 0


def test_rmat_dtype_and_chunks():
    s64, d64, n = rmat(10, 4, seed=4)
    s32, d32, _ = rmat(10, 4, seed=4, dtype=np.int32)
    assert s32.dtype == np.int32 and d32.dtype == np.int32
    np.testing.assert_array_equal(s64, s32)
    np.testing.assert_array_equal(d64, d32)
    # odd chunk size: last chunk partial
    s, d, n = rmat(10, 4, seed=4, chunk_size=1000, dtype=np.int32)
    assert s.size == 4096 and s.max() < n and d.max() < n
    assert rmat(0, 3, seed=0)[0].tolist() == [0, 0, 0]
    assert rmat(5, 0, seed=0)[0].size == 0
    with pytest.raises(ValueError):
        rmat(32, dtype=np.int32)
    with pytest.raises(ValueError):
        rmat(4, a=0.6, b=0.3, c=0.3)


class _FakeCupyGenerator:
    """Mimics cupy.random.Generator: random(out=) and integers, no permutation."""

    def __init__(self, seed):
        assert seed is None or type(seed) is int
        self._g = np.random.default_rng(seed)

    def random(self, size=None, dtype=np.float64, out=None):
        y = self._g.random(size, dtype=np.dtype(dtype).type)
        if out is not None:
            out[...] = y
            return out
        return y

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return self._g.integers(low, high, size=size, dtype=dtype, endpoint=endpoint)


class _FakeCupyRandomState:
    """Mimics cupy.random.RandomState: random_sample(dtype=), permutation."""

    def __init__(self, seed):
        self._g = np.random.default_rng(seed)

    def random_sample(self, size=None, dtype=np.float64):
        return self._g.random(size, dtype=np.dtype(dtype).type)

    def permutation(self, n):
        return self._g.permutation(n)


class _FakeXp:
    """NumPy standing in for CuPy, with a CuPy-like ``random`` namespace."""

    def __init__(self, rng_cls, name):
        class _Random:
            pass

        self.random = _Random()
        setattr(self.random, name, rng_cls)

    def __getattr__(self, name):
        return getattr(np, name)


@pytest.mark.parametrize(
    ("rng_cls", "name"),
    [(_FakeCupyGenerator, "default_rng"), (_FakeCupyRandomState, "RandomState")],
)
def test_rmat_array_module_path(rng_cls, name):
    """The non-NumPy path (as taken with CuPy) through a NumPy stand-in."""
    xp = _FakeXp(rng_cls, name)
    scale = 10
    s0, d0, n = rmat(scale, 8, seed=np.int64(5), xp=xp, shuffle=False, dtype=np.int32)
    s1, d1, _ = rmat(scale, 8, seed=np.random.default_rng(1), xp=xp)
    s2, _, _ = rmat(scale, 8, seed=np.random.default_rng(1), xp=xp)
    assert s0.dtype == np.int32 and s1.dtype == np.int64
    np.testing.assert_array_equal(s1, s2)
    assert s0.max() < n and s1.max() < n and d1.max() < n
    q = np.bincount(((s0 >> 9) & 1) * 2 + ((d0 >> 9) & 1), minlength=4) / s0.size
    np.testing.assert_allclose(q, [0.57, 0.19, 0.19, 0.05], atol=0.02)
    deg = np.bincount(s1, minlength=n)
    assert deg.max() > 10 * deg.mean()


def test_permutation_fallback():
    rng = _FakeCupyGenerator(0)
    from webrank import web_generators

    p = web_generators._permutation(np, rng, 1000)
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    assert not np.array_equal(p, np.arange(1000))


def test_rmat_xp_string():
    a = rmat(6, seed=0, xp="numpy")
    b = rmat(6, seed=0, xp=np)
    _assert_same(a, b)
    with pytest.raises(ValueError):
        rmat(6, xp="fortran")


# ---------------------------------------------------------------------------
# dispatcher
# ---------------------------------------------------------------------------


def test_generate_dispatch():
    _assert_same(generate("er", 300, seed=1, p=0.01), erdos_renyi(300, 0.01, seed=1))
    _assert_same(generate("ER", 300, seed=1), erdos_renyi(300, avg_degree=10.0, seed=1))
    _assert_same(generate("ws", 300, seed=1, k=4, p=0.2), watts_strogatz(300, 4, 0.2, seed=1))
    _assert_same(generate("ws", 300, seed=1), watts_strogatz(300, 10, 0.1, seed=1))
    _assert_same(generate("scale-free", 300, seed=1), scale_free(300, seed=1))
    _assert_same(generate("scale_free", 300, seed=1), scale_free(300, seed=1))
    _assert_same(generate("rmat", 8, seed=1, edge_factor=4), rmat(8, 4, seed=1))
    _assert_same(generate("graph500", 8, seed=1, p=None), rmat(8, seed=1))
    _assert_same(generate("web", 8, seed=1, local=0.5), gen.web_crawl(8, seed=1, local=0.5))
    for kind in gen.KINDS:
        assert gen.KINDS[kind] in ("er", "ws", "scale-free", "rmat", "web")
    with pytest.raises(ValueError):
        generate("barabasi", 10)


def test_web_crawl_has_locality_power_laws_and_a_frontier():
    """The web-like generator: its share of near links, its dangling share, heavy-tailed
    degrees on both sides, and the same arrays for the same seed."""
    from webrank.generate import web_crawl

    src, dst, n = web_crawl(14, seed=4)
    assert n == 2**14 and src.size == dst.size == 16 * n
    assert src.dtype == dst.dtype == np.int64
    assert src.min() >= 0 and max(src.max(), dst.max()) < n
    gap = np.abs(dst - src)
    gap = np.minimum(gap, n - gap)
    near = np.mean(gap <= 1024)
    assert 0.88 < near < 0.95  # 90% near (mean offset 32) plus far links that land near
    out_degree = np.bincount(src, minlength=n)
    assert 0.18 < np.mean(out_degree == 0) < 0.22
    in_degree = np.bincount(dst, minlength=n)
    # heavy tails: the largest degrees are far above the mean (16)
    assert in_degree.max() > 50 * 16 and out_degree.max() > 10 * 16
    again = web_crawl(14, seed=4)
    np.testing.assert_array_equal(again[0], src)
    np.testing.assert_array_equal(again[1], dst)
    other = web_crawl(14, seed=5)
    assert not np.array_equal(other[1], dst)
    s, d, _ = web_crawl(12, seed=1, local=0.0, dangling=0.0)
    gap = np.abs(d - s)
    assert np.mean(np.minimum(gap, 4096 - gap) <= 32) < 0.2  # no locality asked for
    with pytest.raises(ValueError, match="local"):
        web_crawl(4, local=1.5)
    with pytest.raises(ValueError, match="dangling"):
        web_crawl(4, dangling=1.0)


def test_web_kind_through_generate_graph_and_the_cli(tmp_path):
    g = webrank.generate_graph("web", 10, seed=2)
    assert g.n == 1024 and g.num_edges > 10 * 1024
    r = webrank.pagerank(g, tol=1e-10, device="cpu")
    assert r.converged and abs(r.scores.sum() - 1) < 1e-12
    from click.testing import CliRunner

    from webrank.cli import cli

    out = tmp_path / "web.txt"
    res = CliRunner().invoke(cli, ["generate", "web", "9", "-o", str(out), "--seed", "1",
                                   "-p", "local=0.5"])
    assert res.exit_code == 0, res.output
    assert webrank.load(str(out)).num_edges > 0


def test_link_locality_tells_crawl_order_from_random_ids():
    """The share of links within 2**15 ids of their target: near 1 for a web-like graph
    in crawl order, near 2**16 / n for R-MAT's random ids; seeded, so repeatable."""
    import webrank
    from webrank.backends.gpu_engines import link_locality
    from webrank.generate import rmat, web_crawl

    s, d, n = web_crawl(20, 4, seed=3)
    web = webrank.Graph.from_edges(s, d, node_ids="range", num_nodes=n)
    s, d, n = rmat(20, 4, seed=3)
    random_ids = webrank.Graph.from_edges(s, d, node_ids="range", num_nodes=n)
    assert link_locality(web) > 0.85
    assert link_locality(random_ids) < 0.1
    assert link_locality(web) == link_locality(web)
    assert link_locality(webrank.Graph.from_edges([], [], num_nodes=3)) == 0.0
