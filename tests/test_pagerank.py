"""webrank.pagerank against float64 references, on every backend (GPU ones marked)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dataset
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import exact_pagerank, networkx_scores

import webrank
from webrank import ConvergenceError, Graph

DEVICES = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
DTYPES = ["float64", "float32"]

# Swaroop and Ghadge et al.: the 6-page example (1-based in the paper; node 4 is dangling)
SEED_SIX = [(1, 2), (1, 4), (1, 5), (2, 1), (2, 3), (2, 5), (3, 6), (5, 3), (5, 4), (5, 6),
            (6, 3), (6, 5)]
# Langville & Meyer's 6-node example, as in networkx's tests (node 2 dangling)
LANGVILLE_MEYER = [(1, 2), (1, 3), (3, 1), (3, 2), (3, 5), (4, 5), (4, 6), (5, 4), (5, 6),
                   (6, 4)]
LM_EXPECTED = {1: 0.03721197, 2: 0.05395735, 3: 0.04150565, 4: 0.37508082, 5: 0.20599833,
               6: 0.28624589}


def graph_of(edges, **kw) -> Graph:
    e = np.array(edges)
    return Graph.from_edges(e[:, 0], e[:, 1], **kw)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_langville_meyer_known_scores(device, dtype):
    g = graph_of(LANGVILLE_MEYER)
    r = webrank.pagerank(g, alpha=0.9, tol=1e-12, device=device, dtype=dtype)
    got = r.to_dict()
    for node, want in LM_EXPECTED.items():
        assert got[node] == pytest.approx(want, abs=1e-7)
    assert r.converged and r.device == device


@pytest.mark.parametrize("device", DEVICES)
def test_seed_six_node_example_matches_exact_solve(device):
    g = graph_of(SEED_SIX)
    r = webrank.pagerank(g, tol=1e-13, device=device)
    np.testing.assert_allclose(r.scores, exact_pagerank(g), atol=1e-12)
    # the seed's top page is page 6, then 3 and 5 (1-based)
    assert [k for k, _ in r.top(3)] == [6, 3, 5]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_criteria_meet_tolerance(device, criterion):
    g = graph_of(SEED_SIX)
    r = webrank.pagerank(g, tol=1e-9, criterion=criterion, device=device)
    assert r.residuals[-1] < 1e-9 <= r.residuals[-2]
    assert len(r.residuals) == r.iterations
    exact = exact_pagerank(g)
    # the error after convergence is at most residual * alpha / (1 - alpha) in L1
    assert np.abs(r.scores - exact).sum() < 1e-9 * 0.85 / 0.15 * np.sqrt(g.n)


def random_graph(seed: int, n: int, m: int, weighted: bool, isolated: int = 0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    dst[: m // 10] = src[: m // 10]  # self-loops
    w = rng.uniform(0.0, 3.0, m) if weighted else None
    return Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n + isolated)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), n=st.integers(2, 40), density=st.floats(0.0, 3.0),
       weighted=st.booleans(), isolated=st.integers(0, 3), personalize=st.booleans(),
       alpha=st.sampled_from([0.5, 0.85, 0.99]))
def test_random_graphs_match_exact_solve(seed, n, density, weighted, isolated, personalize,
                                         alpha):
    g = random_graph(seed, n, int(density * n), weighted, isolated)
    rng = np.random.default_rng(seed + 1)
    pers = rng.uniform(0, 1, g.n) if personalize else None
    if pers is not None:
        pers[rng.integers(0, g.n)] += 0.1  # never all-zero
    dang = rng.uniform(0.1, 1, g.n) if personalize else None
    r = webrank.pagerank(g, alpha=alpha, personalization=pers, dangling=dang, tol=1e-13,
                         max_iter=20000, device="cpu")
    exact = exact_pagerank(g, alpha, pers, dang)
    assert np.abs(r.scores - exact).sum() < 1e-9
    assert r.scores.sum() == pytest.approx(1.0, abs=1e-12)
    assert (r.scores >= 0).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_random_graph_against_networkx(device, dtype, weighted):
    g = random_graph(7, 3000, 12000, weighted, isolated=5)
    rng = np.random.default_rng(3)
    pers = {int(i): float(w) for i, w in zip(rng.integers(0, g.n, 50), rng.uniform(1, 2, 50),
                                            strict=True)}
    r = webrank.pagerank(g, tol=1e-10, device=device, dtype=dtype, personalization=pers)
    ref = networkx_scores(g, tol=1e-15, max_iter=10000, personalization=pers)
    assert np.abs(r.scores - ref).sum() < (1e-8 if dtype == "float64" else 1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_unweighted_option_ignores_weights(device):
    g = random_graph(11, 200, 800, weighted=True)
    r = webrank.pagerank(g, weight=False, tol=1e-12, device=device)
    np.testing.assert_allclose(r.scores, exact_pagerank(g, weight=False), atol=1e-10)


def test_nstart_and_zero_iterations():
    g = graph_of(SEED_SIX)
    start = np.arange(1, 7, dtype=float)
    r = webrank.pagerank(g, nstart=start, max_iter=0, raise_on_nonconvergence=False)
    np.testing.assert_allclose(r.scores, start / start.sum())
    assert r.iterations == 0 and not r.converged
    exact = exact_pagerank(g)
    r = webrank.pagerank(g, nstart=exact, tol=1e-10)
    assert r.iterations == 1  # starting at the answer converges at once


def test_nonconvergence_raises_with_result_and_can_return():
    g = graph_of(SEED_SIX)
    with pytest.raises(ConvergenceError) as info:
        webrank.pagerank(g, tol=1e-14, max_iter=3)
    assert info.value.result.iterations == 3 and not info.value.result.converged
    r = webrank.pagerank(g, tol=1e-14, max_iter=3, raise_on_nonconvergence=False)
    assert r.iterations == 3 and not r.converged and len(r.residuals) == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": "x"}, "alpha"),
        ({"tol": 0, "method": "gmres"}, "tol=0"),  # until nothing changes: power, fixed
        ({"tol": -1e-6}, "tol"),
        ({"tol": float("nan")}, "tol"),
        ({"max_iter": -1}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"criterion": "l3"}, "criterion"),
        ({"dtype": "float16"}, "dtype"),
        ({"dtype": "bogus"}, "dtype"),
        ({"device": "tpu"}, "device"),
        ({"method": "magic"}, "unknown method"),
        ({"bogus": 1}, "unknown options"),
        ({"personalization": [1, 2]}, "personalization has 2 entries"),
        ({"personalization": [0] * 6}, "positive sum"),
        ({"personalization": [-1, 1, 1, 1, 1, 1]}, "non-negative"),
        ({"personalization": {99: 1.0}}, "99"),
        ({"nstart": [1] * 5}, "nstart"),
        ({"dangling": [float("inf")] * 6}, "finite"),
    ],
)
def test_invalid_arguments(kwargs, match):
    g = graph_of(SEED_SIX)
    with pytest.raises(ValueError, match=match):
        webrank.pagerank(g, **kwargs)


def test_gpu_request_without_gpu_says_how_to_install(monkeypatch):
    from webrank import backends

    monkeypatch.setattr(backends, "_gpu_status", lambda: (False, "CuPy is not importable"))
    with pytest.raises(webrank.DeviceUnavailableError, match="webrank\\[gpu\\]"):
        webrank.pagerank(graph_of(SEED_SIX), device="gpu")
    r = webrank.pagerank(graph_of(SEED_SIX), device="auto")
    assert r.device == "cpu"


def test_result_top_ties_and_save(tmp_path):
    # a directed cycle: every node has the same score; ties break by node index
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0])
    r = webrank.pagerank(g, tol=1e-12)
    np.testing.assert_allclose(r.scores, 0.25)
    assert [k for k, _ in r.top(4)] == [0, 1, 2, 3]
    for ext in ("csv", "tsv", "npy", "parquet", "json"):
        r.save(tmp_path / f"s.{ext}")
    assert np.load(tmp_path / "s.npy").tolist() == r.scores.tolist()
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0] == "node,score" and len(lines) == 5
    with pytest.raises(ValueError, match="cannot save"):
        r.save(tmp_path / "s.xyz")
    assert list(tmp_path.glob("*.tmp*")) == []
    df = r.to_pandas()
    assert list(df.columns) == ["node", "score", "rank"]


REAL_CASES = ["web-NotreDame", "cnr-2000", "soc-Epinions1"]


@pytest.fixture(scope="module")
def real_graphs():
    cache: dict[str, tuple[Graph, np.ndarray]] = {}

    def get(name):
        if name not in cache:
            g = webrank.load(dataset(name))
            ref = networkx_reference_scipy(g)
            cache[name] = (g, ref)
        return cache[name]

    return get


def networkx_reference_scipy(g: Graph) -> np.ndarray:
    """networkx's own SciPy PageRank (float64, same definition), run to 1e-15 * N."""
    import networkx as nx
    from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_scipy

    src, dst, _ = g.edges()
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    G.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    pr = _pagerank_scipy(G, tol=1e-15 / g.n * 10, max_iter=5000)
    return np.array([pr[i] for i in range(g.n)])


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_CASES)
@pytest.mark.parametrize("device,dtype,engine", [
    ("cpu", "float64", "auto"), ("cpu", "float32", "auto"),
    ("cpu", "float64", "blocked"), ("cpu", "float32", "blocked"),
    ("cpu", "float64", "pull"), ("cpu", "float32", "pull"),
    pytest.param("gpu", "float64", "auto", marks=pytest.mark.gpu),
    pytest.param("gpu", "float32", "auto", marks=pytest.mark.gpu)])
def test_real_datasets_agree_with_networkx(real_graphs, name, device, dtype, engine):
    g, ref = real_graphs(name)
    # on the CPU the power step's engines (auto's method there is Gauss-Seidel, below)
    method = "power" if device == "cpu" else "auto"
    r = webrank.pagerank(g, tol=1e-10, device=device, dtype=dtype, engine=engine,
                         method=method)
    if device == "cpu":
        from webrank.backends.cpu import BLOCKED_MIN_THREADS
        from webrank.kernels.native import num_threads

        auto = "blocked" if num_threads() >= BLOCKED_MIN_THREADS else "pull"
        assert r.info["engine"] == (auto if engine == "auto" else engine)
    err = np.abs(r.scores - ref).sum()
    assert err < 1e-6, err
    if dtype == "float64":
        assert err < 1e-9, err


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_CASES)
@pytest.mark.parametrize("alpha", [0.85, 0.99])
def test_real_datasets_gauss_seidel_anderson(real_graphs, name, alpha):
    # the CPU's auto method on the real graphs, against networkx (0.85) or a power
    # solve to 1e-13 (0.99): within the power residual's bound tol / (1 - alpha)
    g, ref = real_graphs(name)
    if alpha != 0.85:
        ref = webrank.pagerank(g, alpha=alpha, tol=1e-13, max_iter=20000, method="power",
                               device="cpu").scores
    r = webrank.pagerank(g, alpha=alpha, tol=1e-10, device="cpu", method="gauss-seidel")
    assert r.converged and r.info["mixes"] > 0
    assert np.abs(r.scores - ref).sum() < 1e-10 / (1 - alpha)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_graph_replay_matches_plain_launches(dtype):
    g = random_graph(5, 20000, 200000, weighted=False, isolated=3)
    a = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype,
                         engine_options={"use_graph": True})
    b = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype,
                         engine_options={"use_graph": False})
    assert a.iterations == b.iterations
    np.testing.assert_allclose(a.residuals, b.residuals, rtol=1e-6, atol=1e-15)
    assert np.abs(a.scores - b.scores).sum() < 1e-12
    # the replayed graph stops exactly at max_iter, not at a multiple of its length
    r = webrank.pagerank(g, tol=1e-300, max_iter=75, device="gpu", dtype=dtype,
                         raise_on_nonconvergence=False)
    assert r.iterations == 75 and len(r.residuals) == 75 and not r.converged
    c = webrank.pagerank(g, tol=1e-300, max_iter=75, device="cpu", dtype=dtype, method="power",
                         raise_on_nonconvergence=False)
    assert np.abs(r.scores - c.scores).sum() < 1e-9


@pytest.mark.gpu
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_split_heavy_rows_match_cpu(weighted, dtype):
    # hubs with thousands of in-links take the split (heavy-row) path on the GPU
    rng = np.random.default_rng(9)
    n, m = 50000, 600000
    src = rng.integers(0, n, m)
    dst = np.minimum((rng.pareto(0.8, m) * 3).astype(np.int64), n - 1)
    w = rng.uniform(0.5, 2.0, m) if weighted else None
    g = Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n)
    assert np.diff(g.indptr).max() > 5000
    a = webrank.pagerank(g, tol=1e-11, device="gpu", dtype=dtype)
    c = webrank.pagerank(g, tol=1e-11, device="cpu", dtype="float64")
    assert np.abs(a.scores - c.scores).sum() < (1e-9 if dtype == "float64" else 1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("weighted", [False, True])
def test_operator_matvec_is_the_google_matrix(device, weighted):
    # the matrix-free G x (used by Krylov solvers) against the dense Google matrix
    from webrank.backends import make_operator

    g = random_graph(21, 60, 200, weighted, isolated=2)
    rng = np.random.default_rng(4)
    v = rng.uniform(0.1, 1, g.n)
    v /= v.sum()
    op = make_operator(g, device=device, alpha=0.8, personalization=v, dangling=None,
                       dtype="float64")
    a = g.to_scipy().toarray()
    out = a.sum(axis=0)
    m = np.where(out > 0, a / np.where(out > 0, out, 1), v[:, None])
    google = 0.8 * m + 0.2 * v[:, None]
    x = rng.uniform(-1, 1, g.n)  # any vector: the product is linear
    got = op.to_host(op.matvec(op.asarray(x)))
    np.testing.assert_allclose(got, google @ x, atol=1e-13)


def test_engine_options_mapping():
    g = graph_of(SEED_SIX)
    with pytest.raises(ValueError, match="unknown engine options"):
        webrank.pagerank(g, engine_options={"lanes": 4})
    with pytest.raises(ValueError, match="engine tuning goes in engine_options"):
        webrank.pagerank(g, device="gpu", heavy_threshold=64,
                         engine_options={"heavy_threshold": 32})
    # the same check as the keywords: GPU tuning refused on the CPU, before any work
    with pytest.raises(ValueError, match="apply to device='gpu' only"):
        webrank.pagerank(g, device="cpu", engine_options={"lanes_per_row": 4})
    # tuning as keywords of its own: refused, naming the mapping
    with pytest.raises(ValueError, match=r"engine_options=\{'lanes_per_row': \.\.\.\}"):
        webrank.pagerank(g, device="cpu", lanes_per_row=4)
    r = webrank.pagerank(g, device="cpu", engine_options={}, tol=1e-12)
    np.testing.assert_allclose(r.scores, exact_pagerank(g), atol=1e-11)


def test_the_persistent_engine_takes_no_lanes_per_row():
    """Its warps stage 32 rows' in-links at a time: a lanes_per_row would change nothing,
    so it is refused there (before any work, no GPU needed), and auto leaves the engine
    out of its choice."""
    from webrank.backends.options import EngineOptions

    with pytest.raises(ValueError, match=r"\['lanes_per_row'\] do not apply to engine "
                                          "'persistent'"):
        EngineOptions.from_call("persistent", {"lanes_per_row": 2}).for_device("gpu",
                                                                              "float32")
    assert EngineOptions.from_call("auto", {"lanes_per_row": 2}).candidates() == ("pull",)
    assert "persistent" in EngineOptions.from_call("auto", {"heavy_threshold": 16}
                                                   ).candidates()


def test_gpu_warmup_is_harmless_without_a_gpu(tmp_path, monkeypatch):
    # a path and device "auto" start the warm-up thread; without CuPy it finds no GPU,
    # the run goes on on the CPU, and later probes wait for it rather than racing it
    from webrank import backends

    monkeypatch.setattr(backends, "_warmup", None)
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    r = webrank.pagerank(str(path), tol=1e-12)
    assert backends._warmup is not None and not backends._warmup.is_alive()
    assert r.device == ("gpu" if backends.gpu_available() else "cpu")
    monkeypatch.setattr(backends, "_warmup", None)
    monkeypatch.setenv("WEBRANK_GPU_WARMUP", "0")
    webrank.pagerank(str(path), tol=1e-12)
    assert backends._warmup is None


def test_top_table_is_top_as_a_table():
    pytest.importorskip("pandas")
    g = graph_of(SEED_SIX)
    r = webrank.pagerank(g, tol=1e-12)
    df = r.top_table(4)
    assert df.columns.tolist() == ["rank", "node", "score"]
    assert list(zip(df["node"], df["score"], strict=True)) == r.top(4)
    assert df["rank"].tolist() == [1, 2, 3, 4]
    t = r.top_table(100, kind="arrow")  # k past n: every node
    assert t.num_rows == g.n and t.column("node").to_pylist() == [n for n, _ in r.top(g.n)]
    with pytest.raises(ValueError, match="kind"):
        r.top_table(kind="polars")


def test_info_keys_have_one_author():
    """The result's info merges the operator's, the solver's and the call's entries; a
    key two of them set differently is raised, not silently replaced."""
    from webrank.ranking import merged_info

    assert merged_info({"engine": "pull"}, {"method": "power"}, {}) == {
        "engine": "pull", "method": "power"}
    arr = np.arange(3)
    assert merged_info({"a": arr}, {"a": arr})["a"] is arr
    assert merged_info({"a": 1}, {"a": 1}) == {"a": 1}
    with pytest.raises(RuntimeError, match="set twice"):
        merged_info({"method": "power"}, {"method": "gmres"})
