"""The NetworkX backend (webrank.nx_backend) against networkx's own PageRank.

Most tests call the backend object directly, so they run whether or not the entry points
are installed; the dispatch tests (``nx.pagerank(G, backend="webrank")``, automatic
fallback) skip when webrank is not installed as a networkx backend.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from conftest import dataset

nx = pytest.importorskip("networkx")

from webrank.nx_backend import (  # noqa: E402
    BackendConfig,
    ConvertedGraph,
    backend_interface,
    can_run,
    convert_from_nx,
    convert_to_nx,
    get_info,
    pagerank,
)

needs_entry_point = pytest.mark.skipif(
    "webrank" not in nx.utils.backends.backends,
    reason="webrank is not installed as a networkx backend (pip install -e .[networkx])",
)


def nx_pagerank(G, **kw):
    """networkx's own implementation, whatever backends are configured."""
    return inspect.unwrap(nx.pagerank)(G, **kw)


def random_nx_graph(kind, n=60, m=300, seed=0, weighted=True):
    """A random graph of networkx class ``kind`` with self-loops, dangling and isolated
    nodes, mixed-type node labels and (optionally) weights, some zero, some missing."""
    rng = np.random.default_rng(seed)
    G = kind()
    labels = [f"n{i}" if i % 3 == 0 else i for i in range(n)]
    G.add_nodes_from(labels)  # nodes beyond the edges' reach stay isolated
    src = rng.integers(0, n - 5, m)
    dst = rng.integers(0, n - 5, m)
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        if s % 7 == 1:
            continue  # dangling sources
        attrs = {}
        if weighted and (s + d) % 5:
            attrs["weight"] = float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.5]))
        G.add_edge(labels[s], labels[d], **attrs)
    G.add_edge(labels[2], labels[2], weight=1.5)  # a self-loop
    return G


def assert_same_pagerank(got, want, atol=1e-13):
    assert list(got) == list(want)  # same nodes, same order
    assert all(type(x) is float for x in got.values())
    diff = max(abs(got[k] - want[k]) for k in want)
    assert diff <= atol, diff


KINDS = [nx.DiGraph, nx.Graph, nx.MultiDiGraph, nx.MultiGraph]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("weight", ["weight", None])
def test_matches_networkx(kind, weight):
    G = random_nx_graph(kind)
    if kind in (nx.MultiDiGraph, nx.MultiGraph):
        G.add_edge(1, 4, weight=2.0)
        G.add_edge(1, 4)  # parallel edges: weights summed (1 each when weight=None)
    for kw in ({}, {"alpha": 0.5, "tol": 1e-10}, {"alpha": 0.0}):
        want = nx_pagerank(G, weight=weight, **kw)
        assert_same_pagerank(pagerank(G, weight=weight, **kw), want)


def test_personalization_dangling_nstart_match_networkx():
    G = random_nx_graph(nx.DiGraph)
    nodes = list(G)
    # partial dicts, with keys that are not nodes (networkx ignores them)
    pers = {nodes[1]: 1.0, nodes[4]: 3.0, "not a node": 7.0}
    dang = {nodes[0]: 2.0, nodes[9]: 1.0, nodes[30]: 0.0, ("x",): 5}
    start = {v: float(i % 4) for i, v in enumerate(nodes)}
    for kw in ({"personalization": pers}, {"dangling": dang}, {"nstart": start},
               {"personalization": pers, "dangling": dang, "nstart": start, "tol": 1e-10}):
        assert_same_pagerank(pagerank(G, **kw), nx_pagerank(G, **kw))


def nx_iterations(G, **kw):
    """networkx's iteration count: the smallest max_iter it converges within."""
    for k in range(1, 1000):
        try:
            nx_pagerank(G, max_iter=k, **kw)
            return k
        except nx.PowerIterationFailedConvergence:
            pass
    raise AssertionError("networkx did not converge")


@pytest.mark.parametrize("tol", [1e-3, 1e-6, 1e-9])
def test_iteration_count_is_networkx_n_tol_rule(tol):
    """Stops at the first iteration whose L1 change is below len(G) * tol, like networkx."""
    G = random_nx_graph(nx.DiGraph, seed=3)
    k = nx_iterations(G, tol=tol)
    pagerank(G, tol=tol, max_iter=k)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        pagerank(G, tol=tol, max_iter=k - 1)
    cg = convert_from_nx(G, edge_attrs={"weight": 1})
    pagerank(cg, tol=tol)
    assert cg.last_result.iterations == k
    assert cg.last_result.tol == pytest.approx(len(G) * tol)


def test_empty_graph_and_max_iter_zero():
    assert pagerank(nx.Graph()) == {}
    assert pagerank(nx.DiGraph(), personalization={1: 0}) == {}  # networkx's order
    with pytest.raises(nx.PowerIterationFailedConvergence):
        pagerank(nx.path_graph(3), max_iter=0)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        pagerank(random_nx_graph(nx.DiGraph), tol=1e-15, max_iter=5)


@pytest.mark.parametrize("pers", [{0: 0, 1: 0}, {}, {"absent": 1.0}])
def test_zero_personalization_raises_zero_division(pers):
    G = nx.complete_graph(4)
    with pytest.raises(ZeroDivisionError):
        nx_pagerank(G, personalization=pers)
    with pytest.raises(ZeroDivisionError):
        pagerank(G, personalization=pers)


@pytest.mark.parametrize(("kw", "words"), [
    ({"alpha": 1.0}, "alpha"),
    ({"alpha": -0.1}, "alpha"),
    ({"alpha": "0.85"}, "alpha"),
    ({"max_iter": -1}, "max_iter"),
    ({"max_iter": 10.0}, "max_iter"),
    ({"tol": 0.0}, "tol"),
    ({"tol": float("nan")}, "tol"),
    ({"weight": len}, "function"),
    ({"weight": ["w"]}, "weight"),
    ({"personalization": {0: -1.0, 1: 2.0}}, "personalization"),
    ({"personalization": [1, 2, 3, 4]}, "dict"),
    ({"nstart": {0: 0.0}}, "sums to 0"),
    ({"nstart": {0: float("inf")}}, "nstart"),
    ({"dangling": {"absent": 1.0}}, "sums to 0"),
])
def test_should_run_declines_what_it_cannot_reproduce(kw, words):
    G = nx.complete_graph(4)
    # can_run lets the call through (with backend="webrank" networkx consults only it, and
    # drops its reason), pagerank raises naming the argument, should_run declines
    assert can_run("pagerank", (G,), kw) is True
    reason = backend_interface.should_run("pagerank", (G,), kw)
    assert isinstance(reason, str) and words in reason
    with pytest.raises((ValueError, TypeError), match=words):
        pagerank(G, **kw)


def test_can_run_accepts_networkx_calls():
    G = nx.complete_graph(4)
    assert can_run("pagerank", (G, 0.9), {"personalization": {3: 1, "x": -5}}) is True
    assert can_run("pagerank", (G,), {"weight": None, "max_iter": np.int64(3)}) is True
    assert isinstance(can_run("pagerank", (G,), {"bogus": 1}), str)
    assert isinstance(can_run("hits", (G,), {}), str)


def test_signature_is_networkx():
    assert inspect.signature(pagerank) == inspect.signature(inspect.unwrap(nx.pagerank))


def test_convert_from_nx():
    G = nx.MultiDiGraph()
    G.add_edge("a", "b", w=2.0)
    G.add_edge("a", "b", w=0.5)
    G.add_edge("a", "c")  # missing attribute: the default
    G.add_node("z")
    cg = convert_from_nx(G, edge_attrs={"w": 1})
    assert isinstance(cg, ConvertedGraph) and cg.__networkx_backend__ == "webrank"
    assert cg.nodes == ["a", "b", "c", "z"] and len(cg) == 4 and "z" in cg
    assert cg.convert_seconds >= 0 and "converted in" in repr(cg)
    a = cg.graph.to_scipy().toarray()  # in-link matrix: row = target
    assert a[1, 0] == 2.5 and a[2, 0] == 1.0 and a.sum() == 3.5
    # weight=None: each parallel edge counts 1, as in nx.to_scipy_sparse_array
    assert convert_from_nx(G).graph.to_scipy().toarray()[1, 0] == 2
    # all weights 1: stored unweighted (faster kernels, same numbers)
    assert not convert_from_nx(nx.path_graph(4), edge_attrs={"weight": 1}).graph.is_weighted


@pytest.mark.parametrize(("value", "words"), [(-1.0, "non-negative"),
                                              (float("nan"), "non-negative"),
                                              ("heavy", "non-numeric")])
def test_convert_declines_bad_weights(value, words):
    G = nx.DiGraph([(0, 1)])
    G.add_edge(1, 2, weight=value)
    with pytest.raises(NotImplementedError, match=words):
        convert_from_nx(G, edge_attrs={"weight": 1})
    with pytest.raises(NotImplementedError):
        pagerank(G)


def test_convert_declines_several_attributes():
    with pytest.raises(NotImplementedError):
        convert_from_nx(nx.path_graph(3), edge_attrs={"a": 1, "b": 1})
    with pytest.raises(NotImplementedError):
        convert_from_nx(nx.path_graph(3), preserve_edge_attrs=True)
    with pytest.raises(TypeError):
        convert_from_nx({0: [1]})


def test_converted_graph_keeps_its_weight():
    G = random_nx_graph(nx.DiGraph)
    cg = convert_from_nx(G, edge_attrs={"weight": 1})
    assert_same_pagerank(pagerank(cg), nx_pagerank(G))
    reason = backend_interface.should_run("pagerank", (cg,), {"weight": None})
    assert isinstance(reason, str) and "convert" in reason


def test_convert_to_nx():
    G = nx.Graph()
    G.add_edge(1, "b", weight=2.0)
    G.add_edge("b", "b", weight=3.0)
    D = convert_to_nx(convert_from_nx(G, edge_attrs={"weight": 1}))
    assert isinstance(D, nx.DiGraph) and list(D) == [1, "b"]
    assert dict(D.edges) == {(1, "b"): {"weight": 2.0}, ("b", 1): {"weight": 2.0},
                             ("b", "b"): {"weight": 3.0}}
    result = {1: 0.5}
    assert convert_to_nx(result) is result


def test_backend_info_and_config():
    info = get_info()
    assert info["backend_name"] == "webrank" and "pagerank" in info["functions"]
    cfg = info["default_config"]
    # nx.utils.Config rebuilds the class as a dataclass; _orig_class is ours
    assert type(cfg)._orig_class is BackendConfig
    assert (cfg.device, cfg.dtype) == ("auto", "float64")
    with pytest.raises(ValueError, match="device"):
        cfg.device = "tpu"
    assert backend_interface.pagerank is pagerank
    assert backend_interface.should_run("pagerank", (nx.path_graph(3),), {}) is True


@needs_entry_point
def test_dispatch_through_networkx():
    G = random_nx_graph(nx.MultiGraph)
    G.__networkx_cache__ = None  # no caching (networkx warns when it reuses a conversion)
    got = nx.pagerank(G, alpha=0.9, tol=1e-10, backend="webrank")
    assert_same_pagerank(got, nx_pagerank(G, alpha=0.9, tol=1e-10))
    assert type(nx.config.backends.webrank)._orig_class is BackendConfig
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.pagerank(G, max_iter=0, backend="webrank")


@needs_entry_point
def test_automatic_backend_and_fallback():
    """With webrank first in backend_priority (NETWORKX_BACKEND_PRIORITY=webrank), calls
    run on webrank, and calls it declines fall back to networkx's own code."""
    G = random_nx_graph(nx.DiGraph, seed=5)
    G.__networkx_cache__ = None  # no caching: each call converts afresh
    with nx.config.backend_priority(algos=["webrank"]):
        assert_same_pagerank(nx.pagerank(G), nx_pagerank(G))
        cg = convert_from_nx(G, edge_attrs={"weight": 1})
        assert_same_pagerank(nx.pagerank(cg), nx_pagerank(G))  # a webrank graph: no copy
        assert cg.last_result is not None
        # declined by should_run (alpha = 1) and by conversion (a negative weight)
        assert_same_pagerank(nx.pagerank(G, alpha=1.0, max_iter=1000),
                             nx_pagerank(G, alpha=1.0, max_iter=1000), atol=0)
        G.add_edge(0, 1, weight=-0.5)
        assert_same_pagerank(nx.pagerank(G), nx_pagerank(G), atol=0)


@pytest.mark.slow
def test_real_graph_matches_networkx():
    """soc-Epinions1 (76K nodes, 509K edges) built as an nx.DiGraph: same dict."""
    import webrank

    g = webrank.load(dataset("soc-Epinions1"))
    src, dst, _ = g.edges()
    labels = g.node_labels()
    G = nx.DiGraph()
    G.add_nodes_from(labels.tolist())
    G.add_edges_from(zip(labels[src].tolist(), labels[dst].tolist(), strict=True))
    assert_same_pagerank(pagerank(G, tol=1e-10), nx_pagerank(G, tol=1e-10), atol=1e-14)


@pytest.mark.gpu
def test_gpu_matches_networkx(monkeypatch):
    """On the GPU (float64): networkx's iteration count and scores to round-off."""
    import webrank.nx_backend

    G = random_nx_graph(nx.DiGraph, n=3000, m=30000)
    monkeypatch.setattr(webrank.nx_backend, "_config", lambda: BackendConfig(device="gpu"))
    k = nx_iterations(G, tol=1e-10)
    cg = convert_from_nx(G, edge_attrs={"weight": 1})
    got = pagerank(cg, tol=1e-10, max_iter=500)
    assert cg.last_result.device == "gpu" and cg.last_result.iterations == k
    assert_same_pagerank(got, nx_pagerank(G, tol=1e-10, max_iter=500), atol=1e-13)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        pagerank(cg, tol=1e-10, max_iter=k - 1)
