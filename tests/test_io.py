"""Reading and writing graph files: every format round-tripped, and the real datasets."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from conftest import DATASETS, write

from webrank.errors import GraphFormatError
from webrank.files.atomic import atomic_write
from webrank.files.sources import open_binary
from webrank.graph import Graph
from webrank.io import (
    FORMATS,
    ReadOptions,
    detect_format,
    load,
    save_graph,
    write_adjacency,
    write_edgelist,
    write_mtx,
    write_parquet,
)
from webrank.io import edgelist as el


# ----------------------------------------------------------------------------- helpers
def edge_set(g: Graph) -> set:
    """Edges as (label, label[, weight]) triples, independent of node numbering."""
    src, dst, w = g.edges()
    lab = g.node_labels()
    s, d = lab[src].tolist(), lab[dst].tolist()
    if w is None:
        return set(zip(s, d, strict=True))
    return set(zip(s, d, w.tolist(), strict=True))


def same_graph(g: Graph, ref: Graph) -> None:
    assert g.n == ref.n
    assert g.num_edges == ref.num_edges
    assert edge_set(g) == edge_set(ref)
    assert (g.labels is None) == (ref.labels is None)
    if ref.labels is not None:
        assert g.labels.tolist() == ref.labels.tolist()


SRC = np.array([0, 0, 1, 2, 2, 3, 5, 5])
DST = np.array([1, 2, 2, 0, 3, 3, 0, 1])  # 3 -> 3 is a self-loop; id 4 never appears
WTS = np.array([0.5, 1.0, 2.25, 3.0, 0.1, 1e-300, 7.0, 1 / 3])


def lines(sep: str, weights: bool = False) -> str:
    rows = zip(SRC, DST, WTS, strict=True)
    return "".join(sep.join([str(s), str(d)] + ([repr(float(w))] if weights else [])) + "\n"
                   for s, d, w in rows)


# ------------------------------------------------------------------------ edge lists
@pytest.mark.parametrize("sep", ["\t", " ", ","])
@pytest.mark.parametrize("weights", [False, True])
def test_edgelist_separators(tmp_path, sep, weights):
    p = write(tmp_path / "g.txt", lines(sep, weights))
    ref = Graph.from_edges(SRC, DST, WTS if weights else None)
    same_graph(load(p), ref)
    assert load(p).name == str(p)


@pytest.mark.parametrize(
    ("header", "sep", "weights"),
    [("source,target", ",", False), ("src\tdst", "\t", False), ("src dst weight", " ", True),
     ("FromNodeId\tToNodeId\tWeight", "\t", True)],
)
def test_edgelist_header_is_skipped(tmp_path, header, sep, weights):
    p = write(tmp_path / "g.csv", header + "\n" + lines(sep, weights))
    same_graph(load(p), Graph.from_edges(SRC, DST, WTS if weights else None))


def test_edgelist_comments_top_and_middle(tmp_path):
    body = lines("\t").splitlines()
    text = ("# SNAP-style header\n% matrix-market-style comment\n# FromNodeId\tToNodeId\n"
            + "\n".join(body[:3]) + "\n# a comment in the middle\n\n% another\n"
            + "\n".join(body[3:]) + "\n# trailing comment\n")
    same_graph(load(write(tmp_path / "g.txt", text)), Graph.from_edges(SRC, DST))


def test_edgelist_ragged_whitespace_and_crlf(tmp_path):
    text = "".join(f"  {s} \t  {d}   \r\n" for s, d in zip(SRC, DST, strict=True))
    same_graph(load(write(tmp_path / "g.txt", text)), Graph.from_edges(SRC, DST))


def test_edgelist_bom_and_no_final_newline(tmp_path):
    p = write(tmp_path / "g.txt", b"\xef\xbb\xbf" + lines("\t").rstrip("\n").encode())
    same_graph(load(p), Graph.from_edges(SRC, DST))


@pytest.mark.parametrize("suffix", [".txt.gz", ".txt.bz2", ".tsv.gz", ".edges.bz2"])
def test_edgelist_compressed(tmp_path, suffix):
    p = write(tmp_path / f"g{suffix}", "# c\n" + lines("\t", True))
    same_graph(load(p), Graph.from_edges(SRC, DST, WTS))


def test_gzip_under_a_plain_name_is_decompressed(tmp_path):
    p = tmp_path / "g.txt"
    p.write_bytes(gzip.compress(lines("\t").encode()))
    same_graph(load(p), Graph.from_edges(SRC, DST))


def test_edgelist_string_labels_urls(tmp_path):
    urls = ["http://a.example/", "https://b.example/x?q=1,2", "http://c.example/#frag",
            "ftp://d.example/%20x"]
    edges = [(0, 1), (1, 2), (2, 0), (3, 1), (1, 1)]
    text = "# links\n" + "".join(f"{urls[s]}\t{urls[d]}\n" for s, d in edges)
    g = load(write(tmp_path / "links.tsv", text), labels="string")
    assert g.labels.tolist() == urls  # first-appearance order
    assert edge_set(g) == {(urls[s], urls[d]) for s, d in edges}
    # space separated too; labels with '#' or '%' inside are kept
    text = "".join(f"{urls[s]} {urls[d]}\n" for s, d in edges)
    assert edge_set(load(write(tmp_path / "l2.txt", text), labels="string")) == edge_set(g)


def test_string_labels_first_appearance_is_interleaved(tmp_path):
    g = load(write(tmp_path / "g.txt", "b a\nc b\na d\n"), labels="string")
    assert g.labels.tolist() == ["b", "a", "c", "d"]
    g = load(write(tmp_path / "g.txt", "b\ta\nc\tb\na\td\n"), labels="string")
    assert g.labels.tolist() == ["b", "a", "c", "d"]


def test_string_labels_with_inner_spaces_tab_separated(tmp_path):
    g = load(write(tmp_path / "g.tsv", "New York\tBoston\nBoston\tSan Jose \n"),
             labels="string")
    assert g.labels.tolist() == ["New York", "Boston", "San Jose"]


def test_string_labels_weighted_and_comments_in_the_middle(tmp_path):
    text = "a\tb\t1.5\n# mid\nb\tc\t2\n"
    g = load(write(tmp_path / "g.tsv", text), labels="string")
    assert edge_set(g) == {("a", "b", 1.5), ("b", "c", 2.0)}


@pytest.mark.parametrize("node_ids", ["appear", "range"])
def test_node_ids(tmp_path, node_ids):
    p = write(tmp_path / "g.txt", lines("\t"))
    g = load(p, node_ids=node_ids)
    ref = Graph.from_edges(SRC, DST, node_ids=node_ids)
    same_graph(g, ref)
    assert g.n == (5 if node_ids == "appear" else 6)


def test_duplicates_collapse_and_sum(tmp_path):
    p = write(tmp_path / "g.txt", "0 1 1.0\n0 1 2.5\n1 0 1\n")
    assert edge_set(load(p)) == {(0, 1, 2.5), (1, 0, 1.0)}  # last weight wins
    assert edge_set(load(p, duplicates="sum")) == {(0, 1, 3.5), (1, 0, 1.0)}
    p = write(tmp_path / "u.txt", "0 1\n0 1\n1 0\n")
    assert load(p).num_edges == 2 and load(p).weights is None
    assert edge_set(load(p, duplicates="sum")) == {(0, 1, 2.0), (1, 0, 1.0)}


def test_self_loops_kept(tmp_path):
    g = load(write(tmp_path / "g.txt", "0 0\n0 1\n1 1\n"))
    assert g.num_self_loops == 2 and g.num_edges == 3


def test_weighted_option(tmp_path):
    p = write(tmp_path / "g.txt", lines(" ", True))
    assert load(p).is_weighted
    assert not load(p, weighted=False).is_weighted
    same_graph(load(p, weighted=False), Graph.from_edges(SRC, DST))
    assert load(p, weighted=True).is_weighted


def test_explicit_delimiter_and_format(tmp_path):
    p = write(tmp_path / "g.dat", lines(";"))
    same_graph(load(p, format="edgelist", delimiter=";"), Graph.from_edges(SRC, DST))


def test_fast_and_exact_paths_agree(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    m = 5000
    s, d = rng.integers(0, 700, m), rng.integers(0, 700, m)
    w = rng.random(m).round(6)
    text = "# head\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(s, d, w, strict=True))
    p = write(tmp_path / "g.txt.gz", text)
    fast = load(p)
    fast_s = load(p, labels="string")
    monkeypatch.setattr(el, "fast_read", lambda *a, **k: None)
    same_graph(load(p), fast)
    same_graph(load(p, labels="string"), fast_s)
    same_graph(fast, Graph.from_edges(s, d, w))


def test_edgelist_write_roundtrip(tmp_path):
    g = Graph.from_edges(SRC, DST, WTS)
    for name in ("w.txt", "w.txt.gz", "w.txt.bz2"):
        write_edgelist(g, tmp_path / name)
        back = load(tmp_path / name)
        same_graph(back, g)  # weights are written exactly (shortest round-trip repr)
    gs = Graph.from_edges([0, 1], [1, 2], labels=np.array(["x y", "ü", "http://z/"],
                                                          dtype=object))
    write_edgelist(gs, tmp_path / "s.tsv")
    same_graph(load(tmp_path / "s.tsv", labels="string"), gs)


def test_write_edgelist_refuses_labels_it_cannot_read_back(tmp_path):
    for bad in ("#tag", " padded", "", "two\nlines", "a\tb"):
        g = Graph.from_edges([0], [1], labels=np.array(["ok", bad], dtype=object))
        with pytest.raises(ValueError, match=r"cannot be written|cannot write"):
            write_edgelist(g, tmp_path / "g.tsv")
    assert not (tmp_path / "g.tsv").exists()


def test_hex_looking_tokens_are_labels_in_string_mode(tmp_path):
    g = load(write(tmp_path / "g.txt", "0x1f 0x20\n0x20 x\n"), labels="string")
    assert g.labels.tolist() == ["0x1f", "0x20", "x"]


def test_progress_callback(tmp_path):
    p = write(tmp_path / "g.txt.gz", lines("\t") * 2000)
    calls = []
    load(p, progress=lambda done, total: calls.append((done, total)))
    size = p.stat().st_size
    assert calls and calls[-1] == (size, size)
    assert all(t == size and 0 <= d <= size for d, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_open_binary_reads_all_compressions(tmp_path):
    data = lines("\t").encode() * 100
    for name in ("a.txt", "a.txt.gz", "a.txt.bz2"):
        write(tmp_path / name, data)
        with open_binary(tmp_path / name) as f:
            assert f.read() == data


# ------------------------------------------------------------------- other formats
def test_adjacency_seed_002_figure_1(tmp_path):
    text = "# dest in_degree sources\n1 2 3 7\n2 4 4 5 7 9\n3 3 2 7 9\n4 1 1\n"
    g = load(write(tmp_path / "fig1.adj", text))
    assert edge_set(g) == {(3, 1), (7, 1), (4, 2), (5, 2), (7, 2), (9, 2), (2, 3), (7, 3),
                           (9, 3), (1, 4)}
    assert g.labels.tolist() == [1, 2, 3, 4, 5, 7, 9]
    assert load(tmp_path / "fig1.adj", node_ids="range").n == 10


def test_adjacency_roundtrip(tmp_path):
    g = Graph.from_edges(SRC, DST, node_ids="range")  # node 4 is isolated
    write_adjacency(g, tmp_path / "g.adj")
    same_graph(load(tmp_path / "g.adj"), g)
    write(tmp_path / "g.adj.gz", (tmp_path / "g.adj").read_bytes())
    same_graph(load(tmp_path / "g.adj.gz"), g)


def test_adjacency_zero_in_degree_node_and_string_labels(tmp_path):
    p = write(tmp_path / "s.adj", "a 2 b c\nb 0\n% c\nd 1 a\n")
    g = load(p, labels="string")
    assert g.labels.tolist() == ["a", "b", "c", "d"]
    assert edge_set(g) == {("b", "a"), ("c", "a"), ("a", "d")}
    g = load(write(tmp_path / "i.adj", "10 1 20\n30 0\n"))
    assert g.labels.tolist() == [10, 20, 30]


@pytest.mark.parametrize("weights", [False, True])
def test_mtx_roundtrip(tmp_path, weights):
    g = Graph.from_edges(SRC, DST, WTS if weights else None, node_ids="range")
    write_mtx(g, tmp_path / "g.mtx")
    back = load(tmp_path / "g.mtx")
    same_graph(back, g)
    assert back.is_weighted == weights
    if weights:
        assert not load(tmp_path / "g.mtx", weighted=False).is_weighted


def test_mtx_row_is_source_and_symmetric(tmp_path):
    p = write(tmp_path / "a.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                  "% comment\n3 3 2\n1 2\n3 1\n")
    assert edge_set(load(p)) == {(0, 1), (2, 0)}  # entry (i, j) is the edge i -> j
    p = write(tmp_path / "s.mtx.gz", "%%MatrixMarket matrix coordinate integer symmetric\n"
                                     "4 4 2\n2 1 3\n3 3 1\n")
    g = load(p)
    assert g.n == 4
    assert edge_set(g) == {(1, 0, 3.0), (0, 1, 3.0), (2, 2, 1.0)}


def test_parquet_int_columns(tmp_path):
    g = Graph.from_edges(SRC, DST, WTS)
    write_parquet(g, tmp_path / "g.parquet")
    same_graph(load(tmp_path / "g.parquet"), g)
    assert not load(tmp_path / "g.parquet", weighted=False).is_weighted
    write_parquet(g, tmp_path / "c.pq", columns=("from", "to", "w"))
    same_graph(load(tmp_path / "c.pq", columns=("from", "to", "w")), g)
    same_graph(load(tmp_path / "c.pq", columns=("from", "to")), Graph.from_edges(SRC, DST))


def test_parquet_string_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.table({"a": ["x", "y", "x"], "b": ["y", "z", "z"],
                  "c": pa.array(["y", "z", "z"]).dictionary_encode()})
    pq.write_table(t, tmp_path / "s.parquet")
    g = load(tmp_path / "s.parquet", columns=("a", "b"))
    assert g.labels.tolist() == ["x", "y", "z"]
    assert edge_set(g) == {("x", "y"), ("y", "z"), ("x", "z")}
    assert edge_set(load(tmp_path / "s.parquet", columns=("a", "c"))) == edge_set(g)
    # integer columns as labels on request
    pq.write_table(pa.table({"src": [7, 9], "dst": [9, 8]}), tmp_path / "i.parquet")
    gi = load(tmp_path / "i.parquet", labels="string")
    assert gi.labels.tolist() == [7, 9, 8]


def test_native_cache_roundtrip(tmp_path):
    cases = [
        Graph.from_edges(SRC, DST),
        Graph.from_edges(SRC, DST, WTS, node_ids="range"),
        Graph.from_edges(SRC * 1000, DST * 1000),  # int labels
        Graph.from_edges([0, 1], [1, 2], [1.0, 2.0],
                         labels=np.array(["http://é/", "", "b"], dtype=object)),
        Graph.from_edges([0, 1], [1, 2], labels=np.array(["u", "vé", "w"])),  # numpy str
    ]
    for i, g in enumerate(cases):
        p = tmp_path / f"g{i}.npz"
        save_graph(g, p)
        back = load(p)
        for a in ("indptr", "indices", "out_weight", "weights", "labels"):
            x, y = getattr(back, a), getattr(g, a)
            assert (x is None) == (y is None), a
            if x is not None:
                assert np.array_equal(x, y), a
                assert x.dtype == y.dtype or a == "labels", a
        assert back.name == str(p)
        assert load(p, format="native").n == g.n
        with np.load(p, allow_pickle=False) as z:  # nothing pickled
            assert "__webrank_format__" in z.files


def test_native_cache_read_for_the_card(tmp_path, monkeypatch):
    # device="gpu": members memory-mapped, handed to the staged upload, checked where
    # they land (here the upload is a host copy, so the card's path runs without a card)
    import webrank.kernels.cuda_staging

    moved = []
    monkeypatch.setattr(webrank.kernels.cuda_staging, "upload",
                        lambda a, threads=None: moved.append(type(a)) or np.array(a))
    for i, g in enumerate([Graph.from_edges(SRC, DST), Graph.from_edges(SRC, DST, WTS),
                           Graph.from_edges([0], [0], num_nodes=3, node_ids="range")]):
        p = tmp_path / f"g{i}.npz"
        save_graph(g, p)
        back = load(p, device="gpu")
        for a in ("indptr", "indices", "out_weight", "weights", "labels"):
            x, y = getattr(back, a), getattr(g, a)
            assert (x is None) == (y is None) and (x is None or np.array_equal(x, y)), a
    assert np.memmap in moved
    bad = tmp_path / "bad.npz"
    np.savez(bad, __webrank_format__=np.array("webrank-graph"), __webrank_version__=np.array(1),
             indptr=np.array([0, 2, 1, 2]), indices=np.array([0, 1]), out_weight=np.ones(3))
    with pytest.raises(GraphFormatError, match="not non-decreasing"):
        load(bad, device="gpu")


def test_native_cache_from_text_file(tmp_path):
    p = write(tmp_path / "g.txt", lines("\t", True))
    g = load(p)
    save_graph(g, tmp_path / "g.npz")
    same_graph(load(tmp_path / "g.npz"), g)


def test_atomic_write_success_and_failure(tmp_path):
    p = tmp_path / "out.bin"
    with atomic_write(p) as f:
        f.write(b"one")
    assert p.read_bytes() == b"one"
    with pytest.raises(RuntimeError), atomic_write(p) as f:
        f.write(b"two")
        raise RuntimeError
    with pytest.raises(KeyboardInterrupt), atomic_write(p, "w") as f:
        f.write("three")
        raise KeyboardInterrupt
    assert p.read_bytes() == b"one"
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]  # no temporary left behind
    with atomic_write(tmp_path / "t.txt", "w") as f:
        f.write("é\n")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "é\n"
    umask = os.umask(0)
    os.umask(umask)
    # the permissions open() would give, not mkstemp's 0600
    assert (tmp_path / "t.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_detect_format_and_formats_table():
    assert detect_format("a/b.txt.gz") == "edgelist"
    assert detect_format("x.CSV") == "edgelist"
    assert detect_format("x.adj.bz2") == "adjacency"
    assert detect_format("x.mtx") == "mtx"
    assert detect_format("x.pq") == "parquet"
    assert detect_format("x.npz") == "webrank"
    assert detect_format("x.properties") == "bvgraph"
    assert set(FORMATS) == {"edgelist", "adjacency", "mtx", "parquet", "webrank", "bvgraph"}


# ---------------------------------------------------------------------- ReadOptions
def test_read_options_validate():
    opts = ReadOptions()
    assert (opts.labels, opts.delimiter, opts.weighted, opts.node_ids, opts.duplicates,
            opts.columns, opts.progress, opts.name) == (
        "int", None, None, "appear", "collapse", ("src", "dst", "weight"), None, None)
    for kw, message in [
        ({"labels": "float"}, "labels must be 'int' or 'string', not 'float'"),
        ({"node_ids": "all"}, "node_ids must be 'appear' or 'range', not 'all'"),
        ({"duplicates": "max"}, "duplicates must be 'collapse' or 'sum', not 'max'"),
        ({"delimiter": "ab"}, "delimiter must be one character"),
        ({"weighted": "yes"}, "weighted must be None, True or False, not 'yes'"),
        ({"columns": ("a",)}, r"columns must be \(src, dst\) or \(src, dst, weight\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            ReadOptions(**kw)
    assert ReadOptions(columns=["a", "b"]).columns == ("a", "b")  # kept as a tuple
    with pytest.raises(AttributeError):
        opts.labels = "string"  # frozen


def test_read_options_of_merges():
    base = ReadOptions(labels="string", duplicates="sum")
    assert ReadOptions.of() == ReadOptions()
    assert ReadOptions.of(None, node_ids="range") == ReadOptions(node_ids="range")
    assert ReadOptions.of(base) is base
    merged = ReadOptions.of(base, duplicates="collapse", name="g")
    assert merged == ReadOptions(labels="string", duplicates="collapse", name="g")
    assert base.duplicates == "sum"  # unchanged
    with pytest.raises(TypeError, match="unexpected keyword argument 'label'"):
        ReadOptions.of(base, label="string")
    with pytest.raises(ValueError, match="labels must be"):
        ReadOptions.of(base, labels="float")
    with pytest.raises(TypeError, match="options must be a ReadOptions"):
        ReadOptions.of({"labels": "string"})


def test_load_with_read_options(tmp_path):
    p = write(tmp_path / "g.csv", "a,b,1.5\nb,c,2\nc,a,0.5\na,b,3\n")
    by_keywords = load(p, labels="string")
    by_options = load(p, options=ReadOptions(labels="string"))
    same_graph(by_options, by_keywords)
    assert by_options.name == by_keywords.name == str(p)
    np.testing.assert_array_equal(by_options.weights, by_keywords.weights)
    # keywords win over options; a name in the options is kept
    g = load(p, options=ReadOptions(labels="string", duplicates="sum", name="links"),
             duplicates="collapse")
    same_graph(g, by_keywords)
    assert g.name == "links"
    # every reader takes them; a format ignores the options that do not apply to it...
    m = tmp_path / "g.mtx"
    write_mtx(by_keywords, m)
    same_graph(load(m, options=ReadOptions(labels="string", delimiter=",")), load(m))
    # ...and its reader still refuses them as keywords, as before
    from webrank.io import read_mtx

    with pytest.raises(TypeError, match=r"read_mtx\(\) got an unexpected keyword argument "
                                        "'labels'"):
        read_mtx(m, labels="string")
    with pytest.raises(TypeError, match="load"):
        load(p, name="x")


# --------------------------------------------------------------------- real datasets
needs_data = pytest.mark.skipif(not DATASETS.is_dir(), reason="shared datasets absent")


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "nodes", "edges"),
    [("web-NotreDame.txt.gz", 325_729, 1_497_134), ("cnr-2000.txt.gz", 325_557, 3_216_152),
     ("soc-Epinions1.txt.gz", 75_879, 508_837)],
)
def test_real_datasets(name, nodes, edges):
    g = load(DATASETS / name)
    assert (g.n, g.num_edges) == (nodes, edges)


@needs_data
@pytest.mark.slow
def test_soc_epinions_node_ids_and_networkx():
    p = DATASETS / "soc-Epinions1.txt.gz"
    assert load(p, node_ids="range").n == 75_888
    g = load(p)
    assert g.n == 75_879
    nx = pytest.importorskip("networkx")
    h = nx.read_edgelist(p, create_using=nx.DiGraph, nodetype=int, comments="#")
    assert h.number_of_nodes() == g.n and h.number_of_edges() == g.num_edges
    ref = np.array(sorted(h.edges()), dtype=np.int64)
    src, dst, _ = g.edges()
    lab = g.node_labels()
    got = np.column_stack([lab[src], lab[dst]]).astype(np.int64)
    got = got[np.lexsort((got[:, 1], got[:, 0]))]
    assert np.array_equal(got, ref)


@needs_data
@pytest.mark.slow
def test_real_dataset_native_cache_and_bvgraph(tmp_path):
    g = load(DATASETS / "cnr-2000.txt.gz")
    save_graph(g, tmp_path / "cnr.npz")
    back = load(tmp_path / "cnr.npz")
    assert np.array_equal(back.indptr, g.indptr) and np.array_equal(back.indices, g.indices)
    bv = DATASETS / "law" / "cnr-2000.graph"
    if bv.exists():
        pytest.importorskip("webrank.io.bvgraph")
        b = load(bv)
        assert b.n == g.n and np.array_equal(b.indptr, g.indptr)
        assert np.array_equal(b.indices, g.indices)


@pytest.mark.parametrize("arrow_type", ["int32", "int64", "uint64", "float32", "float64"])
def test_numpy_of_reads_arrow_buffers_as_to_numpy(arrow_type):
    # the pandas-free conversion the readers use: offsets of sliced arrays, several
    # chunks, empty chunks and columns, and nulls (which fall back to pyarrow) all agree
    import pyarrow as pa

    from webrank.files.arrow import numpy_of

    base = pa.array(np.arange(10) * 3, type=getattr(pa, arrow_type)())
    cases = [base, base.slice(3, 5), base.slice(10),
             pa.chunked_array([base.slice(2, 3), base.slice(0, 0), base.slice(7)]),
             pa.chunked_array([], type=base.type)]
    for col in cases:
        got = numpy_of(col)
        want = np.asarray(col.to_pylist(), dtype=got.dtype)
        assert got.dtype == np.dtype(col.type.to_pandas_dtype())
        np.testing.assert_array_equal(got, want)
    with_null = pa.array([1, None, 3], type=base.type)
    np.testing.assert_array_equal(numpy_of(with_null), with_null.to_numpy(zero_copy_only=False))


def test_parquet_int_ids_come_in_a_row_group_at_a_time(tmp_path, monkeypatch):
    """An unweighted edge table of integer ids is read a row group at a time into int32
    columns (8 bytes a link, not the table's 16 and its copy's 16): the same graph as
    the table path; ids past int32's range, negative ids or nulls fall back to the
    table, whose checks name the row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from webrank.io import parquet

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 5000, 20000), rng.integers(0, 5000, 20000)
    took = []
    rows_of = parquet._int32_columns
    monkeypatch.setattr(parquet, "_int32_columns",
                        lambda *a: took.append(rows_of(*a)) or took[-1])
    p = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst}), p, row_group_size=3000)
    g, ref = load(p), Graph.from_edges(src, dst)
    assert took[-1] is not None and took[-1][0].dtype == np.int32
    for a in ("indptr", "indices", "out_weight", "labels"):
        x, y = getattr(g, a), getattr(ref, a)
        assert (x is None) == (y is None) and (x is None or np.array_equal(x, y)), a
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"src": np.append(src, 2**40), "dst": np.append(dst, 7)}), big,
                   row_group_size=3000)
    assert load(big).n == ref.n + 1 and took[-1] is None
    neg = tmp_path / "neg.parquet"
    pq.write_table(pa.table({"src": np.append(src, -1), "dst": np.append(dst, 7)}), neg,
                   row_group_size=3000)
    with pytest.raises(GraphFormatError, match="row 20000: negative node id"):
        load(neg)
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"src": pa.array([*src[:10].tolist(), None]), "dst": dst[:11]}),
                   nulls, row_group_size=4)
    with pytest.raises(GraphFormatError, match="null in row 10"):
        load(nulls)
    corrupt = bytearray(p.read_bytes())  # data pages damaged, the footer intact
    for i in range(2000, 6000):
        corrupt[i] ^= 0x5A
    bad = tmp_path / "corrupt.parquet"
    bad.write_bytes(bytes(corrupt))
    with pytest.raises(GraphFormatError, match=r"corrupt\.parquet: cannot read the Parquet data"):
        load(bad)
