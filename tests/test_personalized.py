"""webrank.personalized_pagerank: every column against pagerank and the exact solve."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from package_path import WEBRANK_PATH
from reference import exact_pagerank
from test_pagerank import random_graph

import webrank
from webrank import ConvergenceError, Graph
from webrank import personalized as ppr_module
from webrank.personalized import PersonalizedConvergenceError, personalized_pagerank

SRC = WEBRANK_PATH


@pytest.fixture(params=["native", "spmm"])
def kernel(request, monkeypatch):
    """Both CPU steps: the fused compiled kernel and the array-module one."""
    from webrank.backends import batch

    monkeypatch.setattr(batch, "USE_NATIVE", request.param == "native")
    return request.param


def _vector(g: Graph, seed) -> np.ndarray:
    v = np.zeros(g.n)
    if isinstance(seed, dict):
        for node, w in seed.items():
            v[g.index_of([node])[0]] += w
    else:
        v[g.index_of(sorted(set(seed)))] = 1.0
    return v / v.sum()


def _seed_sets(g: Graph, k: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    labels = g.node_labels()
    return [set(labels[rng.choice(g.n, size=int(rng.integers(1, 4)), replace=False)].tolist())
            for _ in range(k)]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("graph_seed", [1, 2])
def test_columns_match_pagerank_and_exact_solve(kernel, weighted, graph_seed):
    # self-loops (a tenth of the edges), dangling and isolated nodes, weights in [0, 3)
    g = random_graph(graph_seed, 40, 90, weighted, isolated=3)
    assert g.dangling_mask.any() and g.num_self_loops
    seeds = [*_seed_sets(g, 5, graph_seed), {g.n - 1}]  # the last one is an isolated node
    r = personalized_pagerank(g, seeds, tol=1e-12, device="cpu")
    assert r.scores.shape == (g.n, len(seeds)) and r.all_converged
    assert r.info["kernel"] == kernel and r.device == "cpu"
    np.testing.assert_allclose(r.scores.sum(axis=0), 1.0, atol=1e-12)
    for c, s in enumerate(seeds):
        v = _vector(g, s)
        np.testing.assert_allclose(r.scores[:, c], exact_pagerank(g, personalization=v),
                                   atol=1e-11)
        single = webrank.pagerank(g, personalization=v, tol=1e-12, device="cpu")
        np.testing.assert_allclose(r.scores[:, c], single.scores, atol=1e-13)
        # same start, same steps: the column stops when the single run does
        assert r.iterations[c] == single.iterations


def test_sparse_matrix_and_weighted_mappings(kernel):
    g = random_graph(7, 30, 80, weighted=True, isolated=1)
    rng = np.random.default_rng(0)
    dense = rng.uniform(0, 1, (g.n, 4)) * (rng.uniform(0, 1, (g.n, 4)) < 0.2)
    dense[0, :] = 1.0  # no empty column
    as_matrix = personalized_pagerank(g, sp.csr_matrix(dense), tol=1e-12, device="cpu")
    mappings = [{int(i): float(dense[i, c]) for i in np.flatnonzero(dense[:, c])}
                for c in range(4)]
    as_maps = personalized_pagerank(g, mappings, tol=1e-12, device="cpu")
    np.testing.assert_allclose(as_matrix.scores, as_maps.scores, atol=1e-15)
    for c in range(4):
        want = exact_pagerank(g, personalization=dense[:, c])
        np.testing.assert_allclose(as_matrix.scores[:, c], want, atol=1e-11)


def test_labels_are_node_labels_not_indices(kernel):
    # ids 10, 20, 30, 40: node indices 0..3, labels the ids (as pagerank's mappings)
    g = Graph.from_edges([10, 20, 30, 30], [20, 30, 10, 40])
    r = personalized_pagerank(g, [[40], (10, 20)], tol=1e-12, device="cpu", top=2)
    assert r.top_nodes[0, 0] == 40 and r.top(0, 1)[0][0] == 40
    want = webrank.pagerank(g, personalization={10: 1, 20: 1}, tol=1e-12, device="cpu")
    got_top, want_top = r.top(1, 2), want.top(2)
    assert [node for node, _ in got_top] == [node for node, _ in want_top]
    assert [score for _, score in got_top] == pytest.approx(
        [score for _, score in want_top], abs=1e-12)
    strings = Graph.from_edges([0, 1, 2], [1, 2, 0], labels=["a", "b", "c"])
    s = personalized_pagerank(strings, [{"b"}], tol=1e-12, device="cpu")
    np.testing.assert_allclose(
        s.scores[:, 0], webrank.pagerank(strings, personalization={"b": 1}, tol=1e-12,
                                         device="cpu").scores, atol=1e-14)


def test_top_matches_argsort_of_dense_answer(kernel):
    g = random_graph(11, 60, 200, weighted=False, isolated=2)
    seeds = _seed_sets(g, 10, 3)
    dense = personalized_pagerank(g, seeds, tol=1e-12, device="cpu")
    top = personalized_pagerank(g, seeds, tol=1e-12, device="cpu", top=7)
    assert top.scores is None and top.top_index.shape == (10, 7)
    for c in range(10):
        x = dense.scores[:, c]
        order = np.lexsort((np.arange(g.n), -x))[:7]  # ties by node index
        np.testing.assert_array_equal(top.top_index[c], order)
        np.testing.assert_allclose(top.top_scores[c], x[order], rtol=0, atol=0)
        np.testing.assert_array_equal(top.top_nodes[c], g.node_labels()[order])
    big = personalized_pagerank(g, seeds[:2], tol=1e-12, device="cpu", top=10_000)
    assert big.top_index.shape == (2, g.n)  # top is capped at n


def test_batching_and_compaction_give_identical_results(kernel, monkeypatch):
    g = random_graph(5, 50, 150, weighted=True, isolated=2)
    seeds = _seed_sets(g, 10, 8)
    whole = personalized_pagerank(g, seeds, tol=1e-11, device="cpu")
    assert whole.batch_size == 10 and whole.num_batches == 1
    batched = personalized_pagerank(g, seeds, tol=1e-11, device="cpu", batch_size=3)
    assert batched.batch_size == 3 and batched.num_batches == 4
    np.testing.assert_array_equal(batched.scores, whole.scores)
    np.testing.assert_array_equal(batched.iterations, whole.iterations)
    monkeypatch.setattr(ppr_module, "COMPACT_BELOW", 0.0)  # never compact
    kept = personalized_pagerank(g, seeds, tol=1e-11, device="cpu")
    np.testing.assert_array_equal(kept.scores, whole.scores)
    assert kept.column_steps >= whole.column_steps


def test_shared_dangling_distribution(kernel):
    g = random_graph(4, 30, 50, weighted=False, isolated=2)
    d = np.random.default_rng(1).uniform(0, 1, g.n)
    seeds = _seed_sets(g, 3, 2)
    r = personalized_pagerank(g, seeds, dangling=d, tol=1e-12, device="cpu")
    for c, s in enumerate(seeds):
        want = exact_pagerank(g, personalization=_vector(g, s), dangling=d)
        np.testing.assert_allclose(r.scores[:, c], want, atol=1e-11)


@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_criteria_per_column(kernel, criterion):
    g = random_graph(9, 40, 120, weighted=False, isolated=1)
    r = personalized_pagerank(g, _seed_sets(g, 4, 1), tol=1e-9, criterion=criterion,
                              device="cpu")
    assert r.all_converged and (r.residuals < 1e-9).all()
    assert r.criterion == criterion


def test_float32_reaches_small_tolerance(kernel):
    g = random_graph(3, 50, 160, weighted=True, isolated=2)
    seeds = _seed_sets(g, 4, 5)
    r = personalized_pagerank(g, seeds, tol=1e-11, dtype="float32", device="cpu")
    assert r.all_converged and r.dtype == "float32"
    for c, s in enumerate(seeds):
        want = exact_pagerank(g, personalization=_vector(g, s))
        assert np.abs(r.scores[:, c] - want).sum() < 1e-6


def test_not_converged(kernel):
    g = random_graph(2, 40, 100, weighted=False)
    seeds = _seed_sets(g, 3, 0)
    with pytest.raises(PersonalizedConvergenceError, match="did not converge") as info:
        personalized_pagerank(g, seeds, tol=1e-12, max_iter=3, device="cpu")
    assert isinstance(info.value, ConvergenceError)
    r = info.value.result
    assert not r.converged.any() and (r.iterations == 3).all()
    np.testing.assert_allclose(r.scores.sum(axis=0), 1.0)
    zero = personalized_pagerank(g, seeds, max_iter=0, device="cpu",
                                 raise_on_nonconvergence=False)
    np.testing.assert_allclose(zero.scores, 1.0 / g.n)


@pytest.mark.parametrize(("seeds", "match"), [
    ([{0}, {999}], "seed set 1: node 999 is not in the graph"),
    ([{0}, set()], "seed set 1 is empty"),
    ([0, 1], "not a collection"),
    (["ab"], "not a collection"),
    ({0, 1}, "list of node collections"),
    ([], "no seed set"),
    ([{0: -1.0}], "non-negative"),
    ([{0: 0.0}], "no positive weight"),
    (sp.csr_matrix(np.ones((3, 2))), "shape"),
])
def test_bad_seeds(seeds, match):
    g = random_graph(1, 10, 20, weighted=False)
    with pytest.raises(ValueError, match=match):
        personalized_pagerank(g, seeds, device="cpu")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"top": 0}, "top"), ({"batch_size": 0}, "batch_size"), ({"alpha": 1.0}, "alpha"),
    ({"criterion": "l3"}, "criterion"), ({"dtype": "int8"}, "dtype"),
    ({"dangling": [1.0]}, "dangling has 1 entries"),
])
def test_bad_arguments(kwargs, match):
    g = random_graph(1, 10, 20, weighted=False)
    with pytest.raises(ValueError, match=match):
        personalized_pagerank(g, [{0}], device="cpu", **kwargs)


def test_result_save_and_rows(tmp_path):
    g = random_graph(6, 20, 60, weighted=False)
    r = personalized_pagerank(g, [{0}, {1, 2}], tol=1e-10, device="cpu", top=3)
    rows = r.rows()
    assert rows["seed_set"].tolist() == [0, 0, 0, 1, 1, 1]
    assert rows["rank"].tolist() == [1, 2, 3, 1, 2, 3]
    for ext in ("csv", "json", "parquet"):
        r.save(tmp_path / f"out.{ext}")
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert lines[0] == "seed_set,rank,node,score" and len(lines) == 7
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["k"] == 2 and doc["node"] == rows["node"].tolist()
    with pytest.raises(ValueError, match="npy"):
        r.save(tmp_path / "out.npy")
    assert "PersonalizedPageRankResult k=2" in repr(r)


# -- the command line -----------------------------------------------------------------------
def _webrank(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "webrank", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300)


def _main(capsys, *args) -> tuple[int, str, str]:
    """``webrank ARGS`` in this process (faster than a subprocess): (exit code, out, err)."""
    from webrank.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def small_web(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("1\t2\n1\t4\n1\t5\n2\t1\n2\t3\n2\t5\n3\t6\n5\t3\n5\t4\n5\t6\n6\t3\n6\t5\n")
    return p


def test_cli_ppr(small_web, tmp_path, capsys):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# one seed set per line\n1, 2\n\n4\n3 3,6\n")
    out = tmp_path / "ppr.csv"
    r = _webrank("ppr", small_web, "--seeds", seeds, "--top", "3", "--tol", "1e-12",
                 "--device", "cpu", "--json", "-o", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["k"] == 3 and doc["all_converged"] and len(doc["rows"]) == 9
    g = webrank.load(small_web)
    want = webrank.pagerank(g, personalization={4: 1}, tol=1e-12, device="cpu").top(3)
    got = [(row["node"], row["score"]) for row in doc["rows"] if row["seed_set"] == 1]
    assert [n for n, _ in got] == [n for n, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-12)
    lines = out.read_text().splitlines()
    assert lines[0] == "seed_set,rank,node,score" and len(lines) == 10
    code, out, err = _main(capsys, "ppr", small_web, "--seeds", seeds, "--device", "cpu")
    assert code == 0, err
    assert "seed set" in out and "3 converged" in out


def test_cli_ppr_bad_seeds_file(small_web, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n# comment\n4, 99 3\n")
    code, out, err = _main(capsys, "ppr", small_web, "--seeds", bad, "--device", "cpu")
    assert code == 2 and out == ""
    msg = err.strip()
    assert len(msg.splitlines()) == 1
    assert "bad.txt, line 3" in msg and "'99'" in msg and "not in the graph" in msg
    word = tmp_path / "word.txt"
    word.write_text("1 x\n")
    code, _, err = _main(capsys, "ppr", small_web, "--seeds", word, "--device", "cpu")
    assert code == 2 and "line 1" in err and "'x'" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    code, _, err = _main(capsys, "ppr", small_web, "--seeds", empty, "--device", "cpu")
    assert code == 2 and "no seed sets" in err
    code, _, err = _main(capsys, "ppr", small_web, "--seeds", bad, "-o", tmp_path / "x.npy")
    assert code == 2 and "--output" in err


# -- GPU (run on the GPU machine) -------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gpu_matches_cpu(dtype, weighted):
    g = random_graph(12, 300, 1500, weighted, isolated=4)
    seeds = _seed_sets(g, 9, 4)
    cpu = personalized_pagerank(g, seeds, tol=1e-11, dtype=dtype, device="cpu")
    gpu = personalized_pagerank(g, seeds, tol=1e-11, dtype=dtype, device="gpu")
    assert gpu.device == "gpu" and gpu.info["kernel"] == "cuda-fused" and gpu.all_converged
    np.testing.assert_allclose(gpu.scores, cpu.scores, atol=1e-12 if dtype == "float64"
                               else 1e-8)
    batched = personalized_pagerank(g, seeds, tol=1e-11, dtype=dtype, device="gpu",
                                    batch_size=4, top=5)
    assert batched.num_batches == 3
    for c in range(len(seeds)):
        np.testing.assert_allclose(batched.top_scores[c], np.sort(cpu.scores[:, c])[::-1][:5],
                                   atol=1e-12 if dtype == "float64" else 1e-8)
    for c, s in enumerate(seeds):
        want = exact_pagerank(g, personalization=_vector(g, s))
        assert np.abs(gpu.scores[:, c] - want).sum() < (1e-9 if dtype == "float64" else 1e-6)


@pytest.mark.gpu
def test_gpu_auto_batch_and_shared_dangling():
    g = random_graph(13, 200, 800, weighted=False, isolated=2)
    seeds = _seed_sets(g, 5, 6)
    d = np.random.default_rng(2).uniform(0, 1, g.n)
    gpu = personalized_pagerank(g, seeds, dangling=d, tol=1e-12, device="gpu",
                                criterion="linf")
    cpu = personalized_pagerank(g, seeds, dangling=d, tol=1e-12, device="cpu",
                                criterion="linf")
    assert gpu.batch_size == 5
    np.testing.assert_allclose(gpu.scores, cpu.scores, atol=1e-13)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("criterion", ["l1", "l2"])
def test_gpu_wide_blocks_with_hub_rows_match_cpu(dtype, weighted, criterion):
    # 70 columns (3 per lane) and hubs of thousands of in-links (split into segments)
    from test_hybrid import hub_graph

    g = hub_graph(weighted, n=6000, m=90000)
    assert np.diff(g.indptr).max() > 4 * 512
    seeds = _seed_sets(g, 70, 3)
    cpu = personalized_pagerank(g, seeds, tol=1e-11, dtype="float64", device="cpu",
                                criterion=criterion)
    gpu = personalized_pagerank(g, seeds, tol=1e-11, dtype=dtype, device="gpu",
                                criterion=criterion)
    assert gpu.all_converged and gpu.batch_size == 70
    assert np.abs(gpu.iterations - cpu.iterations).max() <= 1
    np.testing.assert_allclose(gpu.scores, cpu.scores,
                               atol=1e-12 if dtype == "float64" else 1e-8)
    many = personalized_pagerank(g, _seed_sets(g, 300, 2), tol=1e-9, device="gpu", top=3)
    assert many.batch_size == 256 and many.num_batches == 2 and many.all_converged


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), k=st.integers(1, 6), data=st.data())
def test_seed_columns_are_scipys_matrix(n, k, data):
    """SeedColumns (the seeds held without SciPy) against scipy.sparse: repeated entries
    added up, columns selected in any order, rows by row, sums, a dense column."""
    from webrank.backends.seeds import SeedColumns

    m = data.draw(st.integers(0, 40))
    rows = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), int)
    cols = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=m, max_size=m)), int)
    vals = np.array(data.draw(st.lists(st.floats(0, 4), min_size=m, max_size=m)), float)
    got = SeedColumns.from_entries(n, k, rows, cols, vals)
    want = sp.csc_array((vals, (rows, cols)), shape=(n, k))
    want.sum_duplicates()
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_allclose(got.data, want.data, rtol=1e-15)
    np.testing.assert_allclose(got.sums(), want.sum(axis=0), rtol=1e-14)
    keep = np.array(data.draw(st.lists(st.integers(0, k - 1), max_size=k)), int)
    sel = got.select(keep)
    np.testing.assert_allclose(
        sp.csc_array((sel.data, sel.indices, sel.indptr), shape=(n, keep.size)).toarray(),
        want[:, keep].toarray())
    by_row = got.by_row()
    csr = sp.csr_array(want)
    csr.sort_indices()
    np.testing.assert_array_equal(by_row.indptr, csr.indptr)
    np.testing.assert_array_equal(by_row.indices, csr.indices)
    np.testing.assert_allclose(by_row.data, csr.data, rtol=1e-15)
    for c in range(k):
        np.testing.assert_allclose(got.dense_column(c), want[:, [c]].toarray().ravel())
