"""Graph conventions shared with igraph and networkx:
``num_nodes`` fixes the node set, undirected graphs (``directed=False``) rank as networkx
ranks an ``nx.Graph``, an empty graph has an empty ranking; and the row bounds of a
partitioned run always end at n."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import pairwise

import networkx as nx
import numpy as np
import pytest
from package_path import WEBRANK_PATH

import webrank
from webrank import Graph
from webrank.errors import GraphFormatError
from webrank.result import load_scores

SRC = WEBRANK_PATH
TOL = 1e-13


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "webrank", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300)


def scores(g: Graph, **kw) -> np.ndarray:
    return webrank.pagerank(g, device="cpu", tol=1e-14, **kw).scores


def nx_scores(G, nodes, **kw) -> np.ndarray:
    pr = nx.pagerank(G, tol=1e-15, max_iter=10_000, **kw)
    return np.array([pr[v] for v in nodes])


def random_undirected(rng, n=40, m=150):
    """Edges of an undirected multigraph with self-loops, both listing orders and
    weights."""
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    src[:5] = dst[:5] = np.arange(5)  # self-loops
    src[5], dst[5], src[6], dst[6] = 7, 8, 8, 7  # one edge listed both ways
    w = rng.uniform(0.5, 3.0, m)
    return src, dst, w


# -- item 11: num_nodes ------------------------------------------------------------------
def test_num_nodes_gives_isolated_nodes_as_igraph():
    """``num_nodes`` alone makes nodes 0..num_nodes-1 (igraph's ``Graph(4, edges)``); it
    used to be ignored under the default node_ids="appear" (2 nodes)."""
    g = Graph.from_edges([0], [1], num_nodes=4)
    assert g.n == 4 and g.labels is None
    assert g.dangling_mask.tolist() == [False, True, True, True]
    ig = pytest.importorskip("igraph")
    want = ig.Graph(4, [(0, 1)], directed=True).pagerank()
    np.testing.assert_allclose(scores(g), want, rtol=0, atol=1e-12)
    G = nx.DiGraph([(0, 1)])
    G.add_nodes_from(range(4))
    np.testing.assert_allclose(scores(g), nx_scores(G, range(4)), rtol=0, atol=TOL)


def test_num_nodes_without_edges():
    g = Graph.from_edges([], [], num_nodes=10)
    assert g.n == 10 and g.num_edges == 0
    np.testing.assert_allclose(scores(g), np.full(10, 0.1), rtol=0, atol=TOL)
    assert Graph.from_edges([], [], num_nodes=0).n == 0


def test_num_nodes_with_appear_or_bad_value_is_refused():
    with pytest.raises(ValueError, match=r"node_ids='appear'.*num_nodes"):
        Graph.from_edges([0], [1], num_nodes=4, node_ids="appear")
    with pytest.raises(ValueError, match="num_nodes must be a non-negative integer"):
        Graph.from_edges([0], [1], num_nodes=-1)
    with pytest.raises(ValueError, match=r"num_nodes=3.*2 labels"):
        Graph.from_edges([0], [1], num_nodes=3, labels=["a", "b"])
    with pytest.raises(GraphFormatError, match="out of range for num_nodes=2"):
        Graph.from_edges([0], [5], num_nodes=2)
    # node_ids="range" without num_nodes is still 0..max id; appear still compacts
    assert Graph.from_edges([0], [5], node_ids="range").n == 6
    assert Graph.from_edges([0], [5]).n == 2


# -- item 15: undirected graphs ----------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_undirected_matches_networkx_graph(rng, weighted):
    """Each edge {u, v} links both ways, a self-loop counts once, the last listing of an
    edge gives its weight (both ways): networkx's PageRank of the nx.Graph."""
    src, dst, w = random_undirected(rng)
    G = nx.Graph()
    G.add_nodes_from(range(40))
    for s, d, x in zip(src.tolist(), dst.tolist(), w.tolist(), strict=True):
        G.add_edge(s, d, weight=x)
    g = Graph.from_edges(src, dst, w if weighted else None, directed=False, num_nodes=40)
    D = G.to_directed()
    assert g.num_edges == D.number_of_edges()
    assert g.num_self_loops == nx.number_of_selfloops(G) >= 5
    kw = {} if weighted else {"weight": None}
    np.testing.assert_allclose(scores(g), nx_scores(G, range(40), **kw), rtol=0, atol=TOL)
    # the same as listing both directions by hand, each self-loop once
    loop = src == dst
    both_src = np.concatenate([src, dst[~loop]])
    both_dst = np.concatenate([dst, src[~loop]])
    by_hand = Graph.from_edges(both_src, both_dst, num_nodes=40)
    np.testing.assert_array_equal(g.indptr, by_hand.indptr)
    np.testing.assert_array_equal(g.indices, by_hand.indices)


def test_undirected_sum_matches_networkx_multigraph(rng):
    src, dst, w = random_undirected(rng)
    M = nx.MultiGraph()
    M.add_nodes_from(range(40))
    M.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist(), strict=True))
    g = Graph.from_edges(src, dst, w, directed=False, duplicates="sum", num_nodes=40)
    np.testing.assert_allclose(scores(g), nx_scores(M, range(40)), rtol=0, atol=TOL)


def test_undirected_matches_igraph(rng):
    """igraph ranks an undirected graph as both directions (its personalized PageRank
    too); it counts an undirected self-loop twice (its degree convention), which webrank
    gives for a self-loop listed twice with duplicates="sum"."""
    ig = pytest.importorskip("igraph")
    src, dst, w = random_undirected(rng)
    plain = src != dst
    s, d, x = src[plain], dst[plain], w[plain]
    # igraph keeps parallel edges (a multigraph): duplicates="sum" is its reading
    h = ig.Graph(40, list(zip(s.tolist(), d.tolist(), strict=True)), directed=False)
    g = Graph.from_edges(s, d, directed=False, duplicates="sum", num_nodes=40)
    np.testing.assert_allclose(scores(g), h.pagerank(), rtol=0, atol=1e-12)
    gw = Graph.from_edges(s, d, x, directed=False, duplicates="sum", num_nodes=40)
    np.testing.assert_allclose(scores(gw), h.pagerank(weights=x.tolist()), rtol=0,
                               atol=1e-12)
    seeds = [3, 17]
    pers = np.zeros(40)
    pers[seeds] = 1.0
    np.testing.assert_allclose(scores(g, personalization=pers),
                               h.personalized_pagerank(reset_vertices=seeds), rtol=0,
                               atol=1e-12)
    # self-loops: igraph's loop counts twice, webrank's (networkx's) once
    hl = ig.Graph(40, list(zip(src.tolist(), dst.tolist(), strict=True)), directed=False)
    twice = np.concatenate([src, src[~plain]]), np.concatenate([dst, dst[~plain]])
    g2 = Graph.from_edges(*twice, directed=False, duplicates="sum", num_nodes=40)
    np.testing.assert_allclose(scores(g2), hl.pagerank(), rtol=0, atol=1e-12)
    g1 = Graph.from_edges(src, dst, directed=False, duplicates="sum", num_nodes=40)
    assert np.abs(scores(g1) - hl.pagerank()).max() > 1e-4


def test_undirected_nx_backend_agrees_with_from_edges(rng):
    """nx.pagerank(G, backend="webrank") on an undirected graph (self-loops, weights)
    ranks as networkx does, and as directed=False does."""
    src, dst, w = random_undirected(rng)
    G = nx.Graph()
    G.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist(), strict=True))
    G.__networkx_cache__ = None
    from webrank.nx_backend import pagerank as backend_pagerank

    got = backend_pagerank(G, tol=1e-15, max_iter=10_000)
    nodes = list(G)
    want = nx_scores(G, nodes)
    np.testing.assert_allclose([got[v] for v in nodes], want, rtol=0, atol=TOL)
    g = Graph.from_edges(src, dst, w, directed=False)
    np.testing.assert_allclose(scores(g)[np.searchsorted(g.labels, nodes)]
                               if g.labels is not None else scores(g)[nodes], want,
                               rtol=0, atol=TOL)


@pytest.mark.parametrize("duplicates", ["collapse", "sum"])
def test_undirected_same_on_every_build_path(monkeypatch, rng, duplicates):
    """The serial build, the parallel one (chunked columns) and columns in pieces (the
    reader's form for a build on the GPU) give the same undirected graph: the edges are
    made directed in one place, before any build."""
    from webrank import build

    src, dst, w = random_undirected(rng, n=300, m=5000)
    src[-50:], dst[-50:] = dst[:50], src[:50]  # edges listed again, reversed, new weights
    with monkeypatch.context() as mp:
        mp.setattr(build, "PARALLEL_BUILD_EDGES", 1 << 62)
        ref = Graph.from_edges(src, dst, w, directed=False, duplicates=duplicates)
        cut = [0, 1234, 1234, 4000, 5000]
        pieces = [build.Pieces([a[i:j] for i, j in pairwise(cut)])
                  for a in (src, dst, w)]
        got = Graph.from_edges(*pieces, directed=False, duplicates=duplicates)
        assert_same_graph(got, ref)
    with monkeypatch.context() as mp:
        mp.setattr(build, "PARALLEL_BUILD_EDGES", 0)
        got = Graph.from_edges(src, dst, w, directed=False, duplicates=duplicates)
    assert_same_graph(got, ref)
    G = nx.Graph() if duplicates == "collapse" else nx.MultiGraph()
    G.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist(), strict=True))
    nodes = ref.node_labels().tolist()
    np.testing.assert_allclose(scores(ref), nx_scores(G, nodes), rtol=0, atol=TOL)


def assert_same_graph(got: Graph, want: Graph) -> None:
    assert got.n == want.n
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    # (parallel weights are added in another order by the parallel build: last bits)
    np.testing.assert_allclose(got.weights, want.weights, rtol=1e-15, atol=0)
    np.testing.assert_allclose(got.out_weight, want.out_weight, rtol=1e-14, atol=0)


def test_undirected_string_labels_and_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"source": ["a", "b", "c", "c", "d"], "target": ["b", "c", "a", "c", "a"],
                       "weight": [1.0, 2.0, 3.0, 4.0, 5.0]})
    G = nx.from_pandas_edgelist(df, edge_attr="weight")
    for weight in (None, "weight"):
        g = Graph.from_dataframe(df, weight=weight, directed=False)
        assert g.labels.tolist() == ["a", "b", "c", "d"]
        np.testing.assert_allclose(scores(g), nx_scores(G, "abcd", weight=weight), rtol=0,
                                   atol=TOL)
    from webrank.io.frames import graph_from_dataframe

    g = graph_from_dataframe(df, weight="weight", directed=False)
    np.testing.assert_allclose(scores(g), nx_scores(G, "abcd"), rtol=0, atol=TOL)
    # directed (the default) is what it was
    assert Graph.from_dataframe(df).num_edges == 5


def test_undirected_load_of_each_format(tmp_path):
    """webrank.load(..., directed=False): edge lists, adjacency, Matrix Market (a
    'symmetric' file's stored triangle is the edge list), Parquet; a .npz cache holds a
    built graph and is refused."""
    text = "0 1\n1 2\n2 2\n3 1\n"
    G = nx.Graph([(0, 1), (1, 2), (2, 2), (3, 1)])
    want = nx_scores(G, range(4))
    el = tmp_path / "g.txt"
    el.write_text(text)
    g = webrank.load(el, directed=False)
    np.testing.assert_allclose(scores(g), want, rtol=0, atol=TOL)
    assert webrank.load(el, options=webrank.ReadOptions(directed=False)).num_edges == 7
    assert webrank.load(el).num_edges == 4
    adj = tmp_path / "g.adj"  # in-link lists: "dest in_degree sources..."
    adj.write_text("0 0\n1 2 0 3\n2 2 1 2\n3 0\n")
    np.testing.assert_allclose(scores(webrank.load(adj, directed=False)), want, rtol=0,
                               atol=TOL)
    for symmetry, entries in (("general", "2 1\n3 2\n3 3\n4 2\n"),
                              ("symmetric", "2 1\n3 2\n3 3\n4 2\n")):
        mtx = tmp_path / f"{symmetry}.mtx"
        mtx.write_text(f"%%MatrixMarket matrix coordinate pattern {symmetry}\n4 4 4\n"
                       + entries)
        for dup in ("collapse", "sum"):
            g = webrank.load(mtx, directed=False, duplicates=dup)
            assert g.num_edges == 7 and g.weights is None, (symmetry, dup)
            np.testing.assert_allclose(scores(g), want, rtol=0, atol=TOL)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pqf = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": [0, 1, 2, 3], "dst": [1, 2, 2, 1]}), pqf)
    np.testing.assert_allclose(scores(webrank.load(pqf, directed=False)), want, rtol=0,
                               atol=TOL)
    npz = tmp_path / "g.npz"
    webrank.save_graph(webrank.load(el), npz)
    with pytest.raises(ValueError, match=r"directed=False.*cache"):
        webrank.load(npz, directed=False)
    with pytest.raises(ValueError, match="directed must be True or False"):
        webrank.ReadOptions(directed="no")


def test_undirected_from_scipy_needs_a_symmetric_matrix():
    sp = pytest.importorskip("scipy.sparse")
    a = np.array([[0, 2.0, 0], [2.0, 1.0, 3.0], [0, 3.0, 0]])
    g = Graph.from_scipy(a, directed=False)
    assert g.num_edges == 5  # the stored entries: both directions, the loop once
    G = nx.from_numpy_array(a)
    np.testing.assert_allclose(scores(g), nx_scores(G, range(3)), rtol=0, atol=TOL)
    b = a.copy()
    b[2, 1] = 4.0
    with pytest.raises(GraphFormatError, match=r"symmetric.*A\[1, 2\]"):
        Graph.from_scipy(sp.csr_array(b), directed=False)
    Graph.from_scipy(b, directed=False, weight=False)  # the same links, weights unused
    b[2, 1] = 0.0
    with pytest.raises(GraphFormatError, match=r"A\[1, 2\]"):
        Graph.from_scipy(b, directed=False, weight=False)


def test_undirected_bad_value_or_partitioned_read_is_refused(tmp_path):
    with pytest.raises(ValueError, match="directed must be True or False"):
        Graph.from_edges([0], [1], directed="both")
    from webrank.distributed.comm import LocalComm
    from webrank.distributed.inputs import read_edge_files

    p = tmp_path / "g.txt"
    p.write_text("0 1\n1 2\n")
    with pytest.raises(ValueError, match="directed edges only"):
        read_edge_files(p, LocalComm(1), options=webrank.ReadOptions(directed=False))


def test_cli_undirected(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("0 1\n1 2\n2 2\n3 1\n")
    want = nx.pagerank(nx.Graph([(0, 1), (1, 2), (2, 2), (3, 1)]), tol=1e-13)
    r = cli("rank", p, "--undirected", "--json", "--device", "cpu", "--tol", "1e-14",
            "--top", "4")
    assert r.returncode == 0, r.stderr
    got = {t["node"]: t["score"] for t in json.loads(r.stdout)["top"]}
    assert max(abs(got[k] - want[k]) for k in want) < 1e-12
    r = cli("info", p, "--undirected", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["edges"] == 7
    out = tmp_path / "g.npz"
    r = cli("convert", p, out, "--undirected")
    assert r.returncode == 0, r.stderr
    assert webrank.load(out).num_edges == 7
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("3\n")
    r = cli("ppr", p, "--seeds", seeds, "--undirected", "--device", "cpu", "--json")
    assert r.returncode == 0, r.stderr
    r = cli("rank", p, "--undirected", "--distributed")
    assert r.returncode == 2 and "--undirected" in r.stderr


# -- empty graphs ------------------------------------------------------------------------
def test_empty_graph_has_an_empty_ranking(tmp_path):
    g = Graph.from_edges([], [])
    assert g.n == 0
    r = webrank.pagerank(g)
    assert r.scores.shape == (0,) and r.scores.dtype == np.float64
    assert r.iterations == 0 and r.converged and r.error_bound == 0.0
    assert r.top(10) == [] and r.certified_top(10) == [] and r.to_dict() == {}
    for suffix in (".csv", ".npy", ".json", ".parquet"):
        out = tmp_path / f"s{suffix}"
        r.save(out)
        labels, values = load_scores(out)
        assert labels.size == values.size == 0
    assert webrank.pagerank(g, method="power", device="cpu").scores.size == 0


def test_cli_ranks_an_empty_graph(tmp_path):
    cache = tmp_path / "empty.npz"
    webrank.save_graph(Graph.from_edges([], []), cache)
    out = tmp_path / "s.csv"
    r = cli("rank", cache, "--device", "cpu", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "no nodes" in r.stdout and r.stdout.count("\n") == 1
    assert out.read_text().splitlines() == ["node,score"]
    r = cli("rank", cache, "--device", "cpu", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["n"] == 0 and doc["top"] == [] and doc["converged"]


# -- test gap: the last row bound --------------------------------------------------------
def test_edge_balanced_bounds_end_at_n():
    """Rows after the last in-link (nodes without in-links at the end) belong to the
    last part: bounds[-1] is n however the links fall."""
    from webrank.distributed.partition import edge_balanced_bounds, split_graph

    g = Graph.from_edges([1, 2, 3, 0], [0, 0, 1, 2], node_ids="range", num_nodes=6)
    assert g.in_degree.tolist() == [2, 1, 1, 0, 0, 0]
    for parts in (1, 2, 3, 8):
        bounds = edge_balanced_bounds(g.indptr, parts)
        assert bounds[0] == 0 and bounds[-1] == g.n and (np.diff(bounds) >= 0).all()
        split = split_graph(g, parts)
        assert sum(p.rows for p in split) == g.n
        assert sum(p.num_edges for p in split) == g.num_edges
    empty = Graph.from_edges([], [], node_ids="range", num_nodes=5)
    assert edge_balanced_bounds(empty.indptr, 2).tolist() == [0, 0, 5]
