"""webrank.update (incremental PageRank) against full runs and the exact dense solve."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dataset
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import exact_pagerank

import webrank
from webrank import ConvergenceError, Graph
from webrank.incremental import _OUT_CSR, _out_csr, edit_graph, update

DEVICES = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
ALPHA = 0.85
TOL = 1e-12
# a run stopped at residual tol is within alpha / (1 - alpha) * tol of the fixed point (L1)
BOUND = 4 * ALPHA / (1 - ALPHA) * TOL


def small_graph(seed: int = 0, n: int = 60, m: int = 240, weighted: bool = False) -> Graph:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.uniform(0.5, 2.0, m) if weighted else None
    return Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n)


def some_edges(g: Graph, k: int, seed: int = 1):
    """k existing edges (src, dst[, weight]) of g."""
    rng = np.random.default_rng(seed)
    src, dst, w = g.edges()
    pick = rng.choice(src.size, k, replace=False)
    return (src[pick], dst[pick]) if w is None else (src[pick], dst[pick], w[pick])


def expected_graph(g: Graph, added, removed) -> Graph:
    """The edited graph built from scratch with Graph.from_edges (unlabelled graphs)."""
    src, dst, w = g.edges()
    keep = np.ones(src.size, bool)
    if removed is not None:
        gone = set(zip(np.asarray(removed[0]).tolist(), np.asarray(removed[1]).tolist(),
                       strict=True))
        keep = np.array([(s, d) not in gone for s, d in zip(src.tolist(), dst.tolist(),
                                                                strict=True)], bool)
    a_src, a_dst = np.asarray(added[0]), np.asarray(added[1])
    new_ids = np.unique(np.concatenate([a_src, a_dst]))
    new_ids = new_ids[new_ids >= g.n]
    code = {int(x): g.n + i for i, x in enumerate(new_ids)}
    a_src = np.array([code.get(int(x), int(x)) for x in a_src], dtype=np.int64)
    a_dst = np.array([code.get(int(x), int(x)) for x in a_dst], dtype=np.int64)
    ws = None if w is None else np.concatenate([w[keep], np.asarray(added[2], float)])
    return Graph.from_edges(np.concatenate([src[keep], a_src]),
                            np.concatenate([dst[keep], a_dst]), ws, node_ids="range",
                            num_nodes=g.n + new_ids.size)


def assert_same_graph(got: Graph, want: Graph) -> None:
    assert got.n == want.n
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.out_weight, want.out_weight)
    if want.weights is None:
        assert got.weights is None
    else:
        np.testing.assert_array_equal(got.weights, want.weights)
    # the spliced out-link CSR equals a fresh transposition
    fresh = _out_csr(Graph(indptr=want.indptr, indices=want.indices,
                           out_weight=want.out_weight))
    spliced = got._cache[_OUT_CSR]
    np.testing.assert_array_equal(spliced[0], fresh[0])
    np.testing.assert_array_equal(spliced[1], fresh[1])


def check_update(g: Graph, added, removed, **kw):
    """Run update and compare it with the exact solve and a full run on the new graph."""
    pers = kw.pop("personalization", None)
    old_pers = None if pers is None else pers[: g.n]
    prev = webrank.pagerank(g, tol=TOL, device="cpu", personalization=old_pers,
                            dangling=kw.get("dangling") if kw.get("dangling") is None
                            else kw["dangling"][: g.n])
    res = update(prev, None, added, removed, personalization=pers, **kw)
    new = res.graph
    exact = exact_pagerank(new, ALPHA, pers, kw.get("dangling"))
    full = webrank.pagerank(new, tol=TOL, device="cpu", personalization=pers,
                            dangling=kw.get("dangling"))
    assert res.converged and res.residual < TOL
    assert res.method == "incremental"
    assert np.abs(res.scores - exact).sum() < BOUND
    assert np.abs(res.scores - full.scores).sum() < BOUND
    assert res.scores.sum() == pytest.approx(1.0, abs=1e-12)
    return res


# -- the new graph ------------------------------------------------------------------------

@pytest.mark.parametrize("weighted", [False, True])
def test_edit_graph_equals_from_edges(weighted):
    g = small_graph(3, weighted=weighted)
    removed = some_edges(g, 12)
    rng = np.random.default_rng(7)
    a_src = np.concatenate([rng.integers(0, g.n, 15), [g.n + 3, 2, g.n]])
    a_dst = np.concatenate([rng.integers(0, g.n, 15), [1, g.n + 3, g.n]])
    added = (a_src, a_dst) if not weighted else (a_src, a_dst, rng.uniform(0, 2, a_src.size))
    _out_csr(g)  # cached on the old graph: the new one's is spliced from it
    got = edit_graph(g, added, removed)
    assert_same_graph(got, expected_graph(g, added, removed))
    # new ids g.n, g.n+3 are not contiguous: the graph gets labels, old ones first
    np.testing.assert_array_equal(got.labels, np.concatenate([np.arange(g.n),
                                                              [g.n, g.n + 3]]))


def test_edit_graph_existing_edge_sets_weight_and_removed_then_added():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0], node_ids="range")
    # (0,1) exists: its weight is replaced; (1,2) is removed and added back with weight 5
    got = edit_graph(g, ([0, 1, 0], [1, 2, 1], [7.0, 5.0, 4.0]), ([1], [2]))
    assert got.to_scipy()[1, 0] == 4.0  # the last repeated addition wins
    assert got.to_scipy()[2, 1] == 5.0
    np.testing.assert_array_equal(got.out_weight, [4.0, 5.0, 3.0])
    unweighted = Graph.from_edges([0, 1], [1, 0], node_ids="range")
    assert edit_graph(unweighted, ([0], [1])).num_edges == 2  # existing edge: no-op


def test_edit_graph_string_labels_appends_new_nodes():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], labels=["a", "b", "c"])
    got = edit_graph(g, (["c", "zz", "b"], ["q", "a", "zz"]), (["a"], ["b"]))
    assert got.labels.tolist() == ["a", "b", "c", "q", "zz"]
    src, dst, _ = got.edges()
    pairs = {(got.labels[s], got.labels[d]) for s, d in zip(src, dst, strict=True)}
    assert pairs == {("b", "c"), ("c", "a"), ("c", "q"), ("zz", "a"), ("b", "zz")}


# -- the update against references ----------------------------------------------------------

def test_update_of_a_graph_read_with_string_labels(tmp_path):
    # labels read from a file are Python strings (object arrays); edits name them with
    # str, as the docstring allows: the result equals a full run of the edited file
    path = tmp_path / "g.tsv"
    path.write_text("a\tb\nb\tc\nc\ta\nc\td\n")
    r = webrank.pagerank(webrank.load(path, labels="string"), tol=1e-12)
    new = webrank.update(r, removed_edges=[("a", "b")], added_edges=[("a", "z"), ("d", "a")],
                         tol=1e-12)
    edited = tmp_path / "edited.tsv"
    edited.write_text("b\tc\nc\ta\nc\td\na\tz\nd\ta\n")
    full = webrank.pagerank(webrank.load(edited, labels="string"), tol=1e-12)
    got = dict(zip(new.labels.tolist(), new.scores.tolist(), strict=True))
    want = dict(zip(full.labels.tolist(), full.scores.tolist(), strict=True))
    assert got.keys() == want.keys() == {"a", "b", "c", "d", "z"}
    assert sum(abs(got[k] - want[k]) for k in want) < 1e-10
    with pytest.raises(ValueError, match="do not compare"):
        webrank.update(r, added_edges=[(1, 2)])

@pytest.mark.parametrize("fraction", [0.5, 1.0])
@pytest.mark.parametrize("case", ["insert", "delete", "both", "new-nodes", "empty"])
def test_update_matches_exact_and_full_run(case, fraction):
    g = small_graph(11)
    rng = np.random.default_rng(5)
    ins = (rng.integers(0, g.n, 8), rng.integers(0, g.n, 8))
    added = {"insert": ins, "delete": None, "both": ins, "empty": None,
             "new-nodes": ([1, g.n, g.n + 1, 5], [g.n + 1, 3, 7, g.n])}[case]
    removed = some_edges(g, 10) if case in ("delete", "both") else None
    res = check_update(g, added, removed, max_frontier_fraction=fraction)
    info = res.info
    assert info["frontier_rows"] == sum(info["frontier_sizes"])
    assert info["work_rows"] == info["frontier_rows"] + info["verify_steps"] * res.graph.n
    if case == "new-nodes":
        assert info["new_nodes"] == 2 and res.graph.n == g.n + 2
    if case == "empty":
        assert info["frontier_steps"] == 0 and res.graph is g


@pytest.mark.parametrize("weighted", [False, True])
def test_update_making_nodes_dangling_and_undangling(weighted):
    # 0 -> 1 -> 2 -> 0 plus 3 -> 0; node 4 dangling
    src, dst = [0, 1, 2, 3, 3, 1], [1, 2, 0, 0, 4, 4]
    w = [1.0, 2.0, 1.0, 0.5, 1.5, 1.0] if weighted else None
    g = Graph.from_edges(src, dst, w, node_ids="range")
    assert g.dangling_mask.tolist() == [False, False, False, False, True]
    removed = ([3, 3], [0, 4])  # 3 becomes dangling
    added = ([4, 4], [2, 3]) if not weighted else ([4, 4], [2, 3], [1.0, 3.0])  # 4 undangles
    res = check_update(g, added, removed, max_frontier_fraction=1.0)
    assert res.graph.dangling_mask.tolist() == [False, False, False, True, False]
    assert res.info["dangling_exact"]


def test_update_weighted_graph_reweights():
    g = small_graph(4, weighted=True)
    src, dst, w = some_edges(g, 6)
    res = check_update(g, (src, dst, w * 3.0), None, max_frontier_fraction=1.0)
    assert res.info["edges_reweighted"] == 6 and res.info["edges_added"] == 0


def test_update_with_personalization_and_new_nodes():
    g = small_graph(8)
    rng = np.random.default_rng(2)
    pers = rng.uniform(0.1, 1.0, g.n + 1)  # one new node
    res = check_update(g, ([0, g.n], [g.n, 4]), some_edges(g, 4), personalization=pers,
                       max_frontier_fraction=1.0)
    assert res.info["dangling_exact"]


def test_update_with_separate_dangling_distribution():
    g = small_graph(9, n=40, m=70)  # sparse: many dangling nodes
    rng = np.random.default_rng(3)
    pers = rng.uniform(0.1, 1.0, g.n)
    dang = rng.uniform(0.1, 1.0, g.n)
    res = check_update(g, ([0, 1], [2, 3]), some_edges(g, 5), personalization=pers,
                       dangling=dang)
    assert not res.info["dangling_exact"]


@pytest.mark.parametrize("criterion", ["l2", "linf"])
def test_update_other_criteria(criterion):
    g = small_graph(12)
    prev = webrank.pagerank(g, tol=TOL, criterion=criterion, device="cpu")
    res = update(prev, added_edges=([1, 2], [3, 4]), removed_edges=some_edges(g, 3))
    assert res.criterion == criterion and res.converged and res.residual < TOL
    assert np.abs(res.scores - exact_pagerank(res.graph)).sum() < 50 * BOUND


def test_chained_updates_and_frontier_off():
    g = small_graph(13, n=80, m=320)
    res = webrank.pagerank(g, tol=TOL, device="cpu")
    rng = np.random.default_rng(0)
    for step in range(3):
        cur = res.graph
        added = (rng.integers(0, cur.n + 2, 5), rng.integers(0, cur.n, 5))
        res = update(res, added_edges=added, removed_edges=some_edges(cur, 4, seed=step))
        assert np.abs(res.scores - exact_pagerank(res.graph)).sum() < BOUND
    plain = update(res, added_edges=([0], [1]), frontier=False)
    assert plain.info["frontier_stop"] == "disabled" and plain.info["frontier_rows"] == 0
    assert np.abs(plain.scores - exact_pagerank(plain.graph)).sum() < BOUND


def test_frontier_stays_local_on_disconnected_change():
    # 50 disjoint 20-node rings with chords; a change inside ring 0 never leaves it
    k, size = 50, 20
    base = np.arange(k * size)
    ring = (base // size) * size
    chord = base[base % 3 == 0]  # uneven out-degrees: ranks are not uniform
    src = np.concatenate([base, chord])
    dst = np.concatenate([ring + (base + 1) % size, ring[chord] + (chord + 7) % size])
    g = Graph.from_edges(src, dst, node_ids="range")
    prev = webrank.pagerank(g, tol=1e-10, device="cpu")
    res = update(prev, added_edges=([0], [5]), removed_edges=([0], [1]),
                 max_frontier_fraction=1.0, frontier_tol=0.05 * 1e-10 / (ALPHA * g.n))
    assert max(res.info["frontier_sizes"]) <= size
    assert res.info["verify_steps"] <= 2
    full = webrank.pagerank(res.graph, tol=1e-10, device="cpu")
    assert res.info["work_full_steps"] < 0.1 * full.iterations
    assert np.abs(res.scores - exact_pagerank(res.graph)).sum() < 1e-9


def test_update_is_exported_and_returns_labels():
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1], labels=np.array([10, 20, 30]))
    prev = webrank.pagerank(g, tol=TOL, device="cpu")
    res = webrank.update(prev, added_edges=[(30, 40), (40, 10)])
    assert res.labels.tolist() == [10, 20, 30, 40]
    want = exact_pagerank(res.graph)
    assert np.abs(res.scores - want).sum() < BOUND


# -- errors -----------------------------------------------------------------------------------

def test_bad_input_raises_value_error_before_work():
    g = small_graph(1)
    prev = webrank.pagerank(g, tol=1e-8, device="cpu")
    absent = next((s, d) for s in range(g.n) for d in range(g.n)
                  if not g.to_scipy()[d, s])
    with pytest.raises(ValueError, match="is not in the graph"):
        update(prev, removed_edges=([absent[0]], [absent[1]]))
    with pytest.raises(ValueError, match="is not in the graph"):
        update(prev, removed_edges=([g.n + 5], [0]))  # not even a node
    with pytest.raises(ValueError, match="unweighted"):
        update(prev, added_edges=([0], [1], [2.0]))
    with pytest.raises(ValueError, match="rows of 2 or 3"):
        update(prev, added_edges=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="differ in length"):
        update(prev, added_edges=([0, 1], [1]))
    with pytest.raises(ValueError, match="integer ids"):
        update(prev, added_edges=(["a"], ["b"]))
    with pytest.raises(ValueError, match="PageRankResult"):
        update(prev.scores, g)
    with pytest.raises(ValueError, match="scores"):
        update(prev, small_graph(1, n=61))
    with pytest.raises(ValueError, match="frontier_tol"):
        update(prev, frontier_tol=-1.0)
    with pytest.raises(ValueError, match="max_frontier_fraction"):
        update(prev, max_frontier_fraction=0.0)
    with pytest.raises(ValueError, match="frontier must be True, False or 'auto'"):
        update(prev, frontier="yes")
    with pytest.raises(ValueError, match="tol"):
        update(prev, tol=0.0)
    weighted = small_graph(1, weighted=True)
    prev_w = webrank.pagerank(weighted, tol=1e-8, device="cpu")
    with pytest.raises(ValueError, match="weighted"):
        update(prev_w, added_edges=([0], [1]))
    with pytest.raises(ValueError, match="finite"):
        update(prev_w, added_edges=([0], [1], [-1.0]))
    labelled = Graph.from_edges([0, 1], [1, 0], labels=["a", "b"])
    with pytest.raises(ValueError, match="compare"):
        update(webrank.pagerank(labelled, device="cpu"), added_edges=([1], [2]))


def test_nonconvergence_raises_or_returns():
    g = small_graph(2)
    prev = webrank.pagerank(g, tol=1e-6, device="cpu")
    with pytest.raises(ConvergenceError):
        update(prev, added_edges=([0], [1]), tol=1e-14, max_iter=2)
    res = update(prev, added_edges=([0], [1]), tol=1e-14, max_iter=2,
                 raise_on_nonconvergence=False)
    assert not res.converged and res.iterations == 2


# -- devices and real data --------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_update_on_device(device):
    g = small_graph(21, n=200, m=1000)
    prev = webrank.pagerank(g, tol=TOL, device=device)
    res = update(prev, added_edges=([0, 3], [199, 200]), removed_edges=some_edges(g, 20),
                 device=device)
    assert res.device == device
    assert np.abs(res.scores - exact_pagerank(res.graph)).sum() < BOUND
    # "auto": the CPU's frontier phase, unless the steps run on the GPU (which says so)
    assert (res.info["frontier_stop"] == "disabled") == (device == "gpu")
    assert ("on the GPU" in res.info["frontier_choice"]) == (device == "gpu")
    forced = update(prev, added_edges=([0], [5]), device=device, frontier=True)
    assert forced.info["frontier_stop"] != "disabled"
    assert forced.info["frontier_choice"] == "frontier phase (asked)"


@pytest.mark.slow
def test_update_on_web_notredame_matches_full_run():
    g = webrank.load(dataset("web-NotreDame"))
    prev = webrank.pagerank(g, tol=1e-10, device="cpu")
    rng = np.random.default_rng(0)
    src, dst, _ = g.edges()
    pick = rng.choice(src.size, 8, replace=False)
    added = (rng.integers(0, g.n, 8), rng.integers(0, g.n, 8))
    labels = g.node_labels()
    res = update(prev, added_edges=(labels[added[0]], labels[added[1]]),
                 removed_edges=(labels[src[pick]], labels[dst[pick]]))
    full = webrank.pagerank(res.graph, tol=1e-10, device="cpu")
    assert res.converged and res.residual < 1e-10
    # both stopped at residual < 1e-10: each within ~6e-10 of the fixed point
    assert np.abs(res.scores - full.scores).sum() < 1.2e-9
    assert res.info["work_full_steps"] < full.iterations


@pytest.mark.gpu
def test_update_of_a_graph_loaded_for_the_gpu(tmp_path):
    """A result whose graph lives on the GPU (``load(..., device="gpu")``) updates: the
    edit is applied on the host (its search mixed CuPy and NumPy arrays before)."""
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n2 0\n2 3\n3 1\n")
    r = webrank.pagerank(webrank.load(path, device="gpu"), device="gpu", tol=1e-12)
    r2 = webrank.update(r, added_edges=[(3, 0)], removed_edges=[(0, 1)])
    (tmp_path / "h.txt").write_text("1 2\n2 0\n2 3\n3 1\n3 0\n")
    ref = webrank.pagerank(webrank.load(tmp_path / "h.txt"), device="cpu", tol=1e-13)
    order = np.argsort(r2.labels.astype(int))
    ref_order = np.argsort(ref.labels.astype(int))
    assert np.abs(r2.scores[order] - ref.scores[ref_order]).sum() < 1e-9


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_out_link_csr_is_the_transpose(n, data):
    """The compiled counting sort (no SciPy on a first update) against SciPy's tocsc."""
    import scipy.sparse as sp

    from webrank.build import out_link_csr

    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                               max_size=120))
    rows = np.array([p[0] for p in pairs], dtype=np.int64)
    cols = np.array([p[1] for p in pairs], dtype=np.int64)
    a = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    indptr, targets = out_link_csr(a.indptr, a.indices)
    t = a.tocsc()
    np.testing.assert_array_equal(indptr, t.indptr)
    np.testing.assert_array_equal(targets, t.indices)
