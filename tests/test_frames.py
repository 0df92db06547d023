"""Tables in, tables out: Graph.from_dataframe / from_scipy and the results' to_pandas /
to_arrow, checked against webrank.load of the same edges written to a file."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import webrank
from webrank.errors import GraphFormatError
from webrank.graph import Graph
from webrank.io import load

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

LIBS = ["pandas", "arrow", "polars"]


def frame(lib: str, columns: dict):
    """The same columns as a pandas DataFrame, a pyarrow Table or a Polars DataFrame."""
    if lib == "pandas":
        return pd.DataFrame(columns)
    if lib == "arrow":
        return pa.table(columns)
    pl = pytest.importorskip("polars")
    return pl.DataFrame(columns)


def edge_file(path: Path, src, dst, w=None) -> Path:
    """Tab-separated edge list of the given columns (weights written exactly)."""
    cols = [list(map(str, src)), list(map(str, dst))]
    if w is not None:
        cols.append([repr(float(x)) for x in w])
    return write(path, "".join("\t".join(row) + "\n" for row in zip(*cols, strict=True)))


def assert_same(g: Graph, ref: Graph, rtol: float = 0.0) -> None:
    """Same nodes, same in-link CSR, weights (to ``rtol``), labels, and PageRank to 1e-12."""
    assert g.n == ref.n
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_allclose(g.out_weight, ref.out_weight, rtol=rtol, atol=0)
    assert (g.weights is None) == (ref.weights is None)
    if ref.weights is not None:
        np.testing.assert_allclose(g.weights, ref.weights, rtol=rtol, atol=0)
    assert (g.labels is None) == (ref.labels is None)
    if ref.labels is not None:
        assert g.labels.tolist() == ref.labels.tolist()
    if ref.n:
        a = webrank.pagerank(g, tol=1e-12, device="cpu").scores
        b = webrank.pagerank(ref, tol=1e-12, device="cpu").scores
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


# 3 -> 3 is a self-loop, 2 -> 0 appears twice (duplicates), id 4 never appears, 6 dangles
SRC = np.array([0, 0, 1, 2, 2, 3, 5, 5, 2, 1])
DST = np.array([1, 2, 2, 0, 3, 3, 0, 1, 0, 6])
WTS = np.array([0.5, 1.0, 2.25, 3.0, 0.1, 1e-300, 7.0, 1 / 3, 4.0, 2.0])
NAMES = np.array(["home", "about", "http://x.org/a?b=1", "blog/2024", "zoë", "page 5", "z"])


# ------------------------------------------------------------- round trips against load
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("options", [{}, {"node_ids": "range"}, {"duplicates": "sum"}])
def test_integer_ids_match_load(tmp_path, lib, weighted, options):
    w = WTS if weighted else None
    path = edge_file(tmp_path / "g.tsv", SRC, DST, w)
    ref = load(path, weighted=weighted, **options)
    cols = {"src": SRC, "dst": DST} | ({"w": WTS} if weighted else {})
    g = Graph.from_dataframe(frame(lib, cols), weight="w" if weighted else None, **options)
    assert_same(g, ref)
    if options.get("node_ids") == "range":
        assert g.n == 7 and g.labels is None  # id 4 is an isolated node
    else:
        assert g.labels.tolist() == [0, 1, 2, 3, 5, 6]  # id 4 is absent


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("weighted", [False, True])
def test_string_ids_match_load_with_string_labels(tmp_path, lib, weighted):
    src, dst = NAMES[SRC], NAMES[DST]
    w = WTS if weighted else None
    path = edge_file(tmp_path / "g.tsv", src, dst, w)
    ref = load(path, labels="string", weighted=weighted)
    cols = {"from": src, "to": dst} | ({"weight": WTS} if weighted else {})
    g = Graph.from_dataframe(frame(lib, cols), source="from", target="to",
                             weight="weight" if weighted else None, name="links")
    assert_same(g, ref)
    assert g.name == "links"
    # labels numbered in order of first appearance, src[0], dst[0], src[1], ...
    assert g.labels.tolist()[:3] == ["home", "about", "http://x.org/a?b=1"]


@pytest.mark.parametrize("lib", LIBS)
def test_categorical_ids_and_extra_columns(tmp_path, lib):
    src, dst = NAMES[SRC], NAMES[DST]
    ref = load(edge_file(tmp_path / "g.tsv", src, dst), labels="string")
    df = frame("pandas", {"src": pd.Categorical(src), "dst": pd.Categorical(dst),
                          "other": np.arange(SRC.size)})
    if lib == "arrow":
        df = pa.Table.from_pandas(df)
    elif lib == "polars":
        pl = pytest.importorskip("polars")
        df = pl.from_pandas(df)
    assert_same(Graph.from_dataframe(df), ref)


def test_parquet_reader_and_frames_share_one_path(tmp_path):
    import pyarrow.parquet as pq

    table = pa.table({"src": NAMES[SRC], "dst": NAMES[DST], "weight": WTS})
    pq.write_table(table, tmp_path / "g.parquet")
    assert_same(Graph.from_dataframe(table, weight="weight"), load(tmp_path / "g.parquet"))


def test_integer_columns_as_labels_like_parquet(tmp_path):
    import pyarrow.parquet as pq

    table = pa.table({"src": [7, 9, 3], "dst": [9, 8, 7]})
    pq.write_table(table, tmp_path / "i.parquet")
    g = Graph.from_dataframe(table, labels="string")
    assert g.labels.tolist() == [7, 9, 8, 3]
    assert_same(g, load(tmp_path / "i.parquet", labels="string"))


def test_pandas_index_and_float_ids(tmp_path):
    # a pandas index is not a column; integral floats are ids (pandas' NaN-able ints)
    df = pd.DataFrame({"src": SRC.astype(float), "dst": DST}, index=np.arange(SRC.size) * 7)
    assert_same(Graph.from_dataframe(df), load(edge_file(tmp_path / "g.tsv", SRC, DST)))


def test_pandas_without_the_arrow_stream(tmp_path, monkeypatch):
    # pandas < 2.2 has no __arrow_c_stream__: the one fallback, Table.from_pandas
    monkeypatch.delattr(pd.DataFrame, "__arrow_c_stream__", raising=False)
    monkeypatch.delattr(pd.DataFrame, "__arrow_c_array__", raising=False)
    df = pd.DataFrame({"src": NAMES[SRC], "dst": NAMES[DST]}, index=SRC * 3)
    assert not hasattr(df, "__arrow_c_stream__")
    ref = load(edge_file(tmp_path / "g.tsv", NAMES[SRC], NAMES[DST]), labels="string")
    assert_same(Graph.from_dataframe(df), ref)


def test_record_batch_reader_and_empty_table():
    batches = pa.table({"src": SRC, "dst": DST}).to_batches(max_chunksize=3)
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, batches)
    assert_same(Graph.from_dataframe(reader), Graph.from_edges(SRC, DST))
    empty = Graph.from_dataframe(pd.DataFrame({"src": np.zeros(0, int), "dst": []}))
    assert empty.n == 0 and empty.num_edges == 0
    # text ids: no rows, but labels all the same (as any labels="string" graph has)
    empty_text = Graph.from_dataframe(pd.DataFrame({"src": np.zeros(0, str), "dst": []}),
                                      labels="string")
    assert empty_text.n == 0 and empty_text.labels is not None and empty_text.labels.size == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 30), m=st.integers(0, 60),
       weighted=st.booleans(), as_text=st.booleans())
def test_random_tables_match_load(data, n, m, weighted, as_text):
    # random graphs: self-loops, parallel edges, dangling and (range) isolated nodes
    ids = st.integers(0, n - 1)
    src = np.array(data.draw(st.lists(ids, min_size=m, max_size=m)), dtype=np.int64)
    dst = np.array(data.draw(st.lists(ids, min_size=m, max_size=m)), dtype=np.int64)
    w = np.array(data.draw(st.lists(st.floats(0, 1e6), min_size=m, max_size=m)))
    w = w if weighted else None
    s, d = (np.char.add("n", src.astype(str)), np.char.add("n", dst.astype(str))) \
        if as_text else (src, dst)
    options = {"labels": "string"} if as_text else {"node_ids": data.draw(
        st.sampled_from(["appear", "range"]))}
    cols = {"src": s, "dst": d} | ({"w": w} if weighted else {})
    g = Graph.from_dataframe(pd.DataFrame(cols), weight="w" if weighted else None, **options)
    with tempfile.TemporaryDirectory() as tmp:
        if m == 0:  # an empty file is an error for load: compare with from_edges
            # (text ids: no rows, no labels, but an empty label array all the same)
            ref = (Graph.from_edges(src, dst, w, labels=np.array([], dtype=object)) if as_text
                   else Graph.from_edges(src, dst, w, node_ids=options.get("node_ids", "appear")))
        else:
            ref = load(edge_file(Path(tmp) / "g.tsv", s, d, w), weighted=weighted, **options)
        assert_same(g, ref)
        assert_same(Graph.from_dataframe(pa.table(cols), weight="w" if weighted else None,
                                         **options), ref)


# --------------------------------------------------------------------------- bad input
def fails(obj, match: str, exc: type = GraphFormatError, **kw) -> str:
    with pytest.raises(exc, match=match) as info:
        Graph.from_dataframe(obj, **kw)
    return str(info.value)


@pytest.mark.parametrize("lib", LIBS)
def test_missing_column_lists_the_columns(lib):
    df = frame(lib, {"a": [0, 1], "b": [1, 2], "w": [1.0, 2.0]})
    msg = fails(df, "missing columns 'src', 'dst'")
    assert "has 'a', 'b', 'w'" in msg
    msg = fails(df, "missing column 'weight'", source="a", target="b", weight="weight")
    assert "'a', 'b', 'w'" in msg


@pytest.mark.parametrize("lib", LIBS)
def test_nulls_name_the_column_and_first_row(lib):
    fails(frame(lib, {"src": ["a", "b", None, None], "dst": ["b", "c", "a", "c"]}),
          r"column 'src' is null in row 2")
    ints = {"src": [0, 1, 2], "dst": [1, 2, 0], "w": [1.0, None, 2.0]}
    if lib == "pandas":
        df = pd.DataFrame({"src": pd.array([0, 1, None], dtype="Int64"), "dst": [1, 2, 0]})
        fails(df, r"column 'src' is null in row 2")
    fails(frame(lib, ints), r"weight column 'w' is null in row 1", weight="w")


@pytest.mark.parametrize("lib", LIBS)
def test_negative_ids_and_bad_weights_name_the_row_and_value(lib):
    fails(frame(lib, {"src": [0, 1, 2], "dst": [1, 2, -4]}),
          r"column 'dst', row 2: negative node id -4")
    fails(frame(lib, {"src": [0, 1], "dst": [1, 2], "w": [1.0, -2.5]}),
          r"column 'w', row 1: weight -2.5 is not allowed", weight="w")
    fails(frame(lib, {"src": [0, 1], "dst": [1, 2], "w": [np.inf, 1.0]}),
          r"column 'w', row 0: weight inf is not allowed", weight="w")
    fails(frame(lib, {"src": [0.0, 1.5], "dst": [1, 2]}),
          r"column 'src', row 1: node id 1.5 is not an integer")
    fails(frame(lib, {"src": [True, False], "dst": [1, 2]}),
          r"column 'src' has type bool; node ids must be integers or strings")
    fails(frame(lib, {"src": [0, 1], "dst": [1, 2], "w": ["x", "y"]}),
          r"weight column 'w' has type .*string.*; weights must be numbers", weight="w")


def test_nan_weight_in_arrow_is_named():
    # (pandas turns NaN into a null on the way to Arrow: the null message names it)
    fails(pa.table({"src": [0, 1], "dst": [1, 2], "w": [1.0, np.nan]}),
          r"column 'w', row 1: weight nan is not allowed", weight="w")


def test_bad_options_and_non_tables():
    df = pd.DataFrame({"src": [0], "dst": [1]})
    fails(df, "labels must be", ValueError, labels="text")
    fails(df, "node_ids must be", ValueError, node_ids="all")
    fails(df, "duplicates must be", ValueError, duplicates="max")
    fails([(0, 1)], "expected a table", TypeError)
    fails({"src": [0], "dst": [1]}, "expected a table", TypeError)
    # a column pandas cannot export: one clear error, not pyarrow's traceback
    fails(pd.DataFrame({"src": [0, "a"], "dst": [1, 2]}), "cannot convert the table")


def test_error_names_the_graph():
    msg = fails(pd.DataFrame({"src": [-1], "dst": [1]}), "negative", name="crawl.csv")
    assert msg.startswith("crawl.csv: ")


def test_graph_module_does_not_import_pyarrow():
    code = ("import sys, webrank; g = webrank.Graph.from_edges([0], [1]); "
            "webrank.Graph.from_scipy([[0, 1], [0, 0]]); "
            "sys.exit('pyarrow' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# ------------------------------------------------------------------------- from_scipy
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_from_scipy_matches_from_edges_in_every_format():
    n = 8  # node 7 is isolated, 6 dangles
    a = sp.coo_array((WTS, (SRC, DST)), shape=(n, n))
    # COO duplicates mean their sum, as in SciPy: duplicates="sum"
    ref = Graph.from_edges(SRC, DST, WTS, node_ids="range", num_nodes=n, duplicates="sum")
    for m in (a, a.tocsr(), a.tocsc(), sp.csr_matrix(a), a.todok(), a.tolil(), a.toarray(),
              np.asmatrix(a.toarray())):
        assert_same(Graph.from_scipy(m), ref)
    ref_u = Graph.from_edges(SRC, DST, node_ids="range", num_nodes=n)
    assert_same(Graph.from_scipy(a, weight=False), ref_u)
    assert_same(Graph.from_scipy(a.toarray() > 0, weight=False), ref_u)
    assert Graph.from_scipy(np.zeros((3, 3))).n == 3


def test_from_scipy_explicit_zeros():
    a = sp.csr_array((np.array([1.0, 0.0, 2.0]), np.array([1, 2, 0]), np.array([0, 2, 3, 3])),
                     shape=(3, 3))
    assert a.nnz == 3  # 0 -> 2 is stored with value 0
    g = Graph.from_scipy(a)
    assert g.num_edges == 2 and g.n == 3
    kept = Graph.from_scipy(a, keep_zeros=True)
    assert kept.num_edges == 3 and kept.out_weight.tolist() == [1.0, 2.0, 0.0]
    assert Graph.from_scipy(a, keep_zeros=True, weight=False).out_degree.tolist() == [2, 1, 0]
    # duplicates that cancel leave no link
    c = sp.coo_array((np.array([1.0, -1.0]), (np.array([0, 0]), np.array([1, 1]))),
                     shape=(2, 2))
    assert Graph.from_scipy(c).num_edges == 0


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(1, 25), m=st.integers(0, 50))
def test_from_scipy_random(data, n, m):
    ids = st.integers(0, n - 1)
    src = np.array(data.draw(st.lists(ids, min_size=m, max_size=m)), dtype=np.int64)
    dst = np.array(data.draw(st.lists(ids, min_size=m, max_size=m)), dtype=np.int64)
    w = np.array(data.draw(st.lists(st.floats(0.5, 10), min_size=m, max_size=m)))
    a = sp.coo_array((w, (src, dst)), shape=(n, n))
    ref = Graph.from_edges(src, dst, w, node_ids="range", num_nodes=n, duplicates="sum")
    # parallel entries are summed in another order than from_edges sums them
    assert_same(Graph.from_scipy(a.tocsr()), ref, rtol=1e-14)
    assert_same(Graph.from_scipy(a.toarray()), ref, rtol=1e-14)


def test_from_scipy_bad_input():
    with pytest.raises(GraphFormatError, match=r"must be square.*got shape \(2, 3\)"):
        Graph.from_scipy(sp.csr_array((2, 3)))
    with pytest.raises(GraphFormatError, match=r"got shape \(3, 2\)"):
        Graph.from_scipy(np.ones((3, 2)))
    with pytest.raises(GraphFormatError, match=r"must be 2-D; got an array of shape \(4,\)"):
        Graph.from_scipy(np.ones(4))
    with pytest.raises(GraphFormatError, match=r"entry \(0, 1\): weight -1.0 is not allowed"):
        Graph.from_scipy(np.array([[0.0, -1.0], [0.0, 0.0]]))
    with pytest.raises(GraphFormatError, match=r"entry \(1, 0\): weight nan"):
        Graph.from_scipy(sp.csr_array(np.array([[0.0, 1.0], [np.nan, 0.0]])))
    with pytest.raises(GraphFormatError, match=r"entry \(1, 1\): weight inf"):
        Graph.from_scipy(np.array([[0.0, 1.0], [0.0, np.inf]]), weight=False)
    with pytest.raises(GraphFormatError, match="real numbers"):
        Graph.from_scipy(np.array([[0, 1j], [0, 0]]))
    with pytest.raises(GraphFormatError, match="real numbers"):
        Graph.from_scipy([["a", "b"], ["c", "d"]])


# ------------------------------------------------------------------- results as tables
def test_pagerank_result_tables_ranks_and_dtypes():
    # a 4-cycle plus a page linked from all of it: nodes 0..3 tie, 4 is first
    g = Graph.from_dataframe(pd.DataFrame({"src": ["a", "b", "c", "d", "a", "b", "c", "d"],
                                           "dst": ["b", "c", "d", "a", "e", "e", "e", "e"]}))
    r = webrank.pagerank(g, tol=1e-12, device="cpu")
    df = r.to_pandas()
    assert list(df.columns) == ["node", "score", "rank"]
    assert df["score"].dtype == np.float64 and df["rank"].dtype == np.int64
    assert df["node"].tolist() == ["a", "b", "c", "d", "e"]  # node order
    np.testing.assert_array_equal(df["score"].to_numpy(), r.scores)
    best = df.sort_values("rank")
    assert best["rank"].tolist() == [1, 2, 3, 4, 5]
    assert [(x, s) for x, s in zip(best["node"], best["score"], strict=True)] == r.top(5)

    t = r.to_arrow()
    assert t.column_names == ["node", "score", "rank"]
    assert pa.types.is_string(t.schema.field("node").type)
    assert t.schema.field("score").type == pa.float64()
    assert t.schema.field("rank").type == pa.int64()
    assert t.column("rank").to_pylist() == df["rank"].tolist()


@settings(max_examples=30, deadline=None)
@given(scores=st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.05]), min_size=1, max_size=40))
def test_rank_column_follows_top(scores):
    # many exact ties: rank order must be top()'s (score down, then node index)
    from webrank.result import PageRankResult

    s = np.array(scores)
    r = PageRankResult(scores=s, iterations=0, converged=True, residuals=np.zeros(0),
                       elapsed=0.0, device="cpu", dtype="float64", method="power",
                       criterion="l1", tol=0.0, alpha=0.85)
    t = r.to_arrow()
    assert pa.types.is_integer(t.schema.field("node").type)
    rank = t.column("rank").to_numpy()
    assert sorted(rank.tolist()) == list(range(1, s.size + 1))
    assert [int(i) for i in np.argsort(rank)] == [x for x, _ in r.top(s.size)]


def test_personalized_result_tables():
    g = Graph.from_dataframe(pa.table({"src": NAMES[SRC], "dst": NAMES[DST]}))
    pp = webrank.personalized_pagerank(g, [["home"], ["about", "z"]], top=3, device="cpu")
    rows = pp.rows()
    df = pp.to_pandas()
    assert list(df.columns) == ["seed_set", "rank", "node", "score"] == list(rows)
    assert len(df) == 2 * 3
    assert df["seed_set"].tolist() == [0, 0, 0, 1, 1, 1]
    assert df["rank"].tolist() == [1, 2, 3] * 2
    assert df["node"].tolist() == rows["node"].tolist()
    assert [(x, s) for x, s in zip(df["node"][:3], df["score"][:3], strict=True)] == pp.top(0, 3)
    assert df["seed_set"].dtype == np.int64 and df["score"].dtype == np.float64
    t = pp.to_arrow(count=2)
    assert t.num_rows == 4 and t.column_names == list(rows)
    assert t.column("score").to_pylist() == pp.rows(2)["score"].tolist()


def test_from_dataframe_takes_networkx_column_names_by_default():
    # networkx's from_pandas_edgelist names, then webrank's src/dst; explicit names win
    pd = pytest.importorskip("pandas")
    nx_style = pd.DataFrame({"source": ["a", "b", "c"], "target": ["b", "c", "a"],
                             "src": [9, 9, 9], "dst": [8, 8, 8]})
    assert Graph.from_dataframe(nx_style).labels.tolist() == ["a", "b", "c"]
    g = Graph.from_dataframe(nx_style, source="src", target="dst")
    assert g.n == 2 and g.num_edges == 1
    ours = pd.DataFrame({"src": [0, 1], "dst": [1, 0]})
    assert Graph.from_dataframe(ours).num_edges == 2
    with pytest.raises(GraphFormatError, match="missing"):
        Graph.from_dataframe(pd.DataFrame({"from": [0], "to": [1]}))
