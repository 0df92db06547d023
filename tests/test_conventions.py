"""Conventions users bring from elsewhere.

* networkx: ``nx.pagerank(G, alpha=-0.5, backend="webrank")`` names ``alpha`` (networkx's
  dispatcher drops the reason a backend's ``can_run`` gives); ``weight="weight"`` is
  refused by ``webrank.pagerank``, saying where webrank's weights come from; a missing
  personalization key is printed as given.
* Certified top lists: a tie (cnr-2000's top two tie exactly) no longer ends the list;
  each entry says which places it is certified to hold.
* Docs: the Python version is pyproject's; distributed runs say they need a trusted
  network.
* ``update`` with removed links only: ``residual_bound`` bounds the residual the frontier
  phase leaves (it under-stated it when the removed links' sources were left out of the
  frontier, and 135 verification steps ran instead of a few).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import dataset
from reference import exact_pagerank

import webrank
from webrank import Graph
from webrank.certify import CertifiedPlace, certified_places
from webrank.incremental import update

ROOT = Path(__file__).resolve().parents[1]


# -- networkx conventions -------------------------------------------------------------------

def test_nx_backend_error_names_the_argument():
    """With backend="webrank" networkx consults only can_run and, where it declines,
    raises "not implemented ... for the given arguments" without the reason; the backend
    now lets the call through and raises naming the argument, while automatic dispatch
    still runs networkx's own code for it."""
    nx = pytest.importorskip("networkx")
    if "webrank" not in nx.utils.backends.backends:
        pytest.skip("webrank is not installed as a networkx backend")
    G = nx.DiGraph([(0, 1), (1, 2), (2, 0), (2, 1)])
    G.__networkx_cache__ = None
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\).*not -0\.5"):
        nx.pagerank(G, alpha=-0.5, backend="webrank")
    with pytest.raises(TypeError, match="alpha must be a number"):
        nx.pagerank(G, alpha="0.85", backend="webrank")
    with pytest.raises(ValueError, match=r"personalization\[0\] = -1"):
        nx.pagerank(G, personalization={0: -1.0, 1: 2.0}, backend="webrank")
    # picked automatically, webrank declines through should_run: networkx's own answer
    import inspect

    with nx.config.backend_priority(algos=["webrank"]):
        got = nx.pagerank(G, alpha=-0.5)
    assert got == inspect.unwrap(nx.pagerank)(G, alpha=-0.5)


@pytest.mark.parametrize("weight", ["weight", "w", 1])
def test_weight_name_is_refused_saying_where_weights_come_from(weight):
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"weight must be True, False or None") as info:
        webrank.pagerank(g, weight=weight)
    text = str(info.value)
    assert "from_dataframe(df, weight='w')" in text and "weighted=True" in text
    assert "this graph has weights" in text
    with pytest.raises(ValueError, match="weight must be True, False or None"):
        webrank.personalized_pagerank(g, [[0]], weight=weight)


def test_weight_none_true_false():
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1], [1.0, 1.0, 5.0, 1.0])
    plain = webrank.pagerank(g.unweighted(), tol=1e-12).scores
    weighted = webrank.pagerank(g, tol=1e-12).scores
    assert np.array_equal(webrank.pagerank(g, weight=None, tol=1e-12).scores, plain)
    assert np.array_equal(webrank.pagerank(g, weight=False, tol=1e-12).scores, plain)
    assert np.array_equal(webrank.pagerank(g, weight=np.bool_(True), tol=1e-12).scores,
                          weighted)
    assert not np.allclose(plain, weighted)


@pytest.mark.parametrize(("labels", "key", "nodes"), [
    (None, "nope", "the nodes are 0..2"),
    (None, 7, "the nodes are 0..2"),
    (np.array(["a", "b", "c"]), "nope", "the nodes are labels such as 'a'"),
    (np.array([10, 20, 30]), 11, "the nodes are labels such as 10"),
])
def test_missing_personalization_key_printed_as_given(labels, key, nodes):
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], labels=labels)
    first = 0 if labels is None else labels[0].item()
    with pytest.raises(ValueError) as info:
        webrank.pagerank(g, personalization={first: 1.0, key: 2.0})
    text = str(info.value)
    assert text == f"personalization: {key!r} is not a node ({nodes})"
    assert "np." not in text


# -- certified top lists with ties ------------------------------------------------------------

def tied_graph() -> Graph:
    """Nodes 0 and 1 link to each other and every other node links to both: 0 and 1 tie
    exactly at the top, and nodes 2..9 tie below them."""
    others = np.arange(2, 10)
    src = np.concatenate([[0, 1], others, others])
    dst = np.concatenate([[1, 0], np.zeros(8, int), np.ones(8, int)])
    return Graph.from_edges(src, dst)


def test_certified_top_keeps_an_exact_tie_as_a_set():
    r = webrank.pagerank(tied_graph(), tol=1e-12, device="cpu")
    got = r.certified_top(10)
    assert all(isinstance(p, CertifiedPlace) for p in got)
    assert [(p.first, p.last) for p in got[:2]] == [(1, 2), (1, 2)]
    assert {p.node for p in got[:2]} == {0, 1} and not got[0].certain_place
    assert [(p.first, p.last) for p in got[2:]] == [(3, 10)] * 8
    # a tie group that reaches past k ends the list; one within it is listed
    assert [p.node for p in r.certified_top(5)] == [p.node for p in got[:2]]
    assert len(r.certified_top(2)) == 2 and r.certified_top(1) == []


@pytest.mark.parametrize("tol", [1e-3, 1e-5, 1e-8, 1e-12])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_certified_places_hold_against_the_exact_ranking(tol, seed):
    rng = np.random.default_rng(seed)
    n, m = 80, 400
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n // 3, m),
                         node_ids="range", num_nodes=n)
    r = webrank.pagerank(g, tol=tol, method="power", device="cpu")
    exact = exact_pagerank(g)
    true_place = np.empty(n, int)
    true_place[np.argsort(-exact, kind="stable")] = np.arange(1, n + 1)
    idx, first, last = certified_places(r.scores, r.error_bound, 20)
    assert np.all((first <= true_place[idx]) & (true_place[idx] <= last))
    # the list is, as a set, the exact top len(list)
    assert sorted(true_place[idx].tolist()) == list(range(1, idx.size + 1))
    # a single place certain is the old certified prefix's, and continues it
    from webrank.certify import certified_prefix

    prefix = certified_prefix(r.scores, r.error_bound, 20)
    assert np.array_equal(idx[:prefix.size], prefix)
    assert np.all(first[:prefix.size] == last[:prefix.size])


@pytest.mark.slow
def test_cnr_2000_certified_top_is_not_empty():
    r = webrank.pagerank(webrank.load(dataset("cnr-2000")), tol=1e-10, device="cpu")
    got = r.certified_top(10)
    assert [(p.first, p.last) for p in got[:3]] == [(1, 2), (1, 2), (3, 3)]
    assert {p.node for p in got[:2]} == {60595, 60597}


def test_cli_certified_prints_tie_groups(tmp_path, capsys):
    from webrank.cli import main

    p = tmp_path / "g.txt"
    src, dst, _ = tied_graph().edges()
    p.write_text("".join(f"{s} {d}\n" for s, d in zip(src, dst, strict=True)))

    def run(*extra):
        try:
            main(["rank", str(p), "--certified", "--tol", "1e-12", "--device", "cpu",
                  "--top", "4", *extra])
        except SystemExit as e:
            assert not e.code
        return capsys.readouterr().out

    doc = json.loads(run("--json"))
    assert [(t["first"], t["last"]) for t in doc["certified_top"]] == [(1, 2), (1, 2)]
    assert set(doc["certified_top"][0]) == {"node", "score", "first", "last"}
    text = run()
    assert "1-2" in text and "exact top 2" in text


# -- docs ---------------------------------------------------------------------------------------

def test_docs_state_pyprojects_python_version():
    need = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = re.fullmatch(r">=\s*(\d+\.\d+)", need).group(1)
    text = (ROOT / "docs" / "getting-started.md").read_text()
    stated = re.findall(r"Python (\d+\.\d+) or newer", text)
    assert stated == [version], (stated, need)


def test_distributed_docs_ask_for_a_trusted_network():
    text = (ROOT / "docs" / "distributed.md").read_text()
    for words in ("trusted network", "pickle", "btl_tcp_if_include", "oob_tcp_if_include",
                  "PRTE_MCA_oob_tcp_if_include", "NCCL_SOCKET_IFNAME"):
        assert words in text, words


# -- update with removed links only -------------------------------------------------------------

def test_update_removing_links_bounds_its_residual():
    """Removing 0 -> 25 changes the share node 0 gives its other out-neighbour (node 1,
    in another component than 25): the frontier must start there too. Left out, row 1
    is never recomputed, ``residual_bound`` (about 8e-13) under-states the residual the
    verification steps meet (about 3e-3), and 135 of them run."""
    k, size = 10, 20  # 10 disjoint 20-node rings with chords, and one link across
    base = np.arange(k * size)
    ring = (base // size) * size
    chord = base[base % 3 == 0]
    src = np.concatenate([base, chord, [0]])
    dst = np.concatenate([ring + (base + 1) % size, ring[chord] + (chord + 7) % size,
                          [size + 5]])
    g = Graph.from_edges(src, dst, node_ids="range")
    prev = webrank.pagerank(g, tol=1e-12, device="cpu")
    res = update(prev, removed_edges=([0], [size + 5]), max_frontier_fraction=1.0)
    info = res.info
    assert info["frontier_stop"] == "empty" and info["edges_removed"] == 1
    # the first verification step's residual is the frontier phase's, which the bound bounds
    assert res.residuals[0] <= info["residual_bound"]
    assert info["verify_steps"] <= 5
    assert np.abs(res.scores - exact_pagerank(res.graph)).sum() < 1e-10
