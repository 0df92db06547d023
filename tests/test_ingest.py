"""The parallel ingestion paths (the canonical-form parse of plain edge lists on all
cores, the parallel CSR build) give the same graph as the serial paths, on random edge
lists and files of every kind: duplicates, self-loops, sparse and string ids, weights,
headers, comments, gzip, CRLF."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webrank import build, load
from webrank.errors import GraphFormatError
from webrank.graph import Graph
from webrank.io import edgelist


@pytest.fixture
def parallel(monkeypatch):
    """Every size takes the parallel parse and build."""
    monkeypatch.setattr(build, "PARALLEL_BUILD_EDGES", 0)
    monkeypatch.setattr(edgelist, "PARALLEL_PARSE_BYTES", 0)


@pytest.fixture
def serial(monkeypatch):
    monkeypatch.setattr(build, "PARALLEL_BUILD_EDGES", 1 << 62)
    monkeypatch.setattr(edgelist, "PARALLEL_PARSE_BYTES", 1 << 62)


def same(a: Graph, b: Graph) -> None:
    assert a.n == b.n and a.num_edges == b.num_edges
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.indices.dtype == b.indices.dtype
    assert (a.weights is None) == (b.weights is None)
    if a.weights is not None:
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-14)
    np.testing.assert_allclose(a.out_weight, b.out_weight, rtol=1e-14)
    assert (a.labels is None) == (b.labels is None)
    if a.labels is not None:
        assert a.labels.tolist() == b.labels.tolist()


def load_both(monkeypatch, path, **kw) -> tuple[Graph, Graph]:
    with monkeypatch.context() as mp:
        mp.setattr(build, "PARALLEL_BUILD_EDGES", 1 << 62)
        mp.setattr(edgelist, "PARALLEL_PARSE_BYTES", 1 << 62)
        ref = load(path, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(build, "PARALLEL_BUILD_EDGES", 0)
        mp.setattr(edgelist, "PARALLEL_PARSE_BYTES", 0)
        got = load(path, **kw)
    return got, ref


edges = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=300)
id_scale = st.sampled_from([1, 3, 1000, 10**12])  # dense, gappy, sparse (hash-like) ids


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=edges, scale=id_scale, sep=st.sampled_from(["\t", " ", ","]),
       crlf=st.booleans(), header=st.booleans(), comment=st.booleans(),
       compress=st.booleans(), dup=st.sampled_from(["collapse", "sum"]),
       node_ids=st.sampled_from(["appear", "range"]), weighted=st.booleans(),
       data=st.data())
def test_files_read_the_same_on_every_path(tmp_path, monkeypatch, edges, scale, sep, crlf,
                                           header, comment, compress, dup, node_ids,
                                           weighted, data):
    if node_ids == "range" and scale > 1000:
        node_ids = "appear"  # (a range of 10**13 nodes is refused, on every path)
    end = "\r\n" if crlf else "\n"
    weights = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.25, 3.0]),
                                 min_size=len(edges), max_size=len(edges)))
    lines = [sep.join([str(s * scale), str(d * scale)] + ([repr(w)] if weighted else []))
             for (s, d), w in zip(edges, weights, strict=True)]
    if comment:  # a comment in the middle: the canonical-form parse must hand over
        lines.insert(len(lines) // 2, "# a comment")
    text = ("source" + sep + "target" + (sep + "weight" if weighted else "") + end
            if header else "") + end.join(lines) + end
    path = tmp_path / ("g.txt.gz" if compress else "g.txt")
    raw = text.encode()
    path.write_bytes(gzip.compress(raw) if compress else raw)
    got, ref = load_both(monkeypatch, path, duplicates=dup, node_ids=node_ids)
    same(got, ref)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=st.lists(st.tuples(st.sampled_from(["a", "b", "x/1", "http://h/p?q=1", "ü",
                                                 "node 7", "z"]),
                                st.sampled_from(["a", "b", "c", "http://h/", "ü", "9"])),
                      min_size=1, max_size=200),
       sep=st.sampled_from(["\t", ","]), dup=st.sampled_from(["collapse", "sum"]))
def test_string_labels_read_the_same_on_every_path(tmp_path, monkeypatch, edges, sep, dup):
    if sep == "," or any(" " in s for e in edges for s in e):
        sep = "\t"
    path = tmp_path / "g.tsv"
    path.write_text("".join(f"{s}{sep}{d}\n" for s, d in edges), encoding="utf-8")
    got, ref = load_both(monkeypatch, path, labels="string", duplicates=dup)
    same(got, ref)


@settings(max_examples=60, deadline=None)
@given(src=st.lists(st.integers(0, 60), min_size=1, max_size=400), data=st.data(),
       dup=st.sampled_from(["collapse", "sum"]), weighted=st.booleans(),
       node_ids=st.sampled_from(["appear", "range"]), pieces=st.integers(1, 9))
def test_parallel_build_is_the_serial_build(src, data, dup, weighted, node_ids, pieces):
    dst = data.draw(st.lists(st.integers(0, 60), min_size=len(src), max_size=len(src)))
    w = (np.asarray(data.draw(st.lists(st.floats(0, 5), min_size=len(src),
                                       max_size=len(src)))) if weighted else None)
    s, d = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    ref = Graph.from_edges(s, d, w, duplicates=dup, node_ids=node_ids)
    # chunks with gaps between them, as the parallel parse leaves them
    cuts = np.linspace(0, s.size, pieces + 1).astype(np.int64)
    gap = np.arange(pieces) * 3
    data = [np.zeros(s.size + 3 * pieces, a.dtype) for a in (s, d)]
    for col, a in zip(data, (s, d), strict=True):
        for c in range(pieces):
            col[cuts[c] + gap[c]:cuts[c + 1] + gap[c]] = a[cuts[c]:cuts[c + 1]]
    sc = build.Chunked(data[0], cuts[:-1] + gap, np.diff(cuts))
    dc = build.Chunked(data[1], sc.starts, sc.counts)
    wc = None
    if w is not None:
        wd = np.zeros(data[0].size)
        for c in range(pieces):
            wd[cuts[c] + gap[c]:cuts[c + 1] + gap[c]] = w[cuts[c]:cuts[c + 1]]
        wc = build.Chunked(wd, sc.starts, sc.counts)
    got = Graph(**build.csr_from_chunks(sc, dc, wc, num_nodes=None,
                                        node_ids=node_ids, labels=None,
                                        duplicates=dup, name=None))
    same(got, ref)
    np.testing.assert_array_equal(sc.concatenate(), s)


def test_sorted_and_shuffled_rows_and_heavy_rows(parallel):
    # rows longer than the insertion sort's limit, in and out of source order, with
    # repeats: merged as the serial build merges them
    rng = np.random.default_rng(3)
    src = np.concatenate([rng.integers(0, 500, 3000), np.arange(400)])
    dst = np.concatenate([np.zeros(3000, np.int64) + 7, rng.integers(0, 500, 400)])
    w = rng.random(src.size)
    for order in (np.arange(src.size), np.argsort(src, kind="stable"), rng.permutation(src.size)):
        for dup in ("collapse", "sum"):
            for weights in (None, w[order]):
                got = Graph.from_edges(src[order], dst[order], weights, duplicates=dup)
                with pytest.MonkeyPatch.context() as mp:
                    mp.setattr(build, "PARALLEL_BUILD_EDGES", 1 << 62)
                    ref = Graph.from_edges(src[order], dst[order], weights, duplicates=dup)
                same(got, ref)


def test_canonical_parse_hands_over_where_the_form_ends(tmp_path, parallel):
    # each of these leaves the canonical form; the general reader decides
    base = "".join(f"{i}\t{(i * 7) % 50}\n" for i in range(200))
    expect = len({(i, (i * 7) % 50) for i in range(200)} | {(5, 6)})
    for tail in ["5\t6\n\n", "+5\t6\n", "5 \t6\n", "# c\n5\t6\n", "5\t6\r\n", "5\t6"]:
        p = tmp_path / "g.txt"
        p.write_text(base + tail)
        assert load(p).num_edges == expect, tail
    p.write_text(base + "5\t0x1f\n")
    with pytest.raises(Exception, match="line 201"):
        load(p)
    p.write_text(base + "5\t-3\n")
    with pytest.raises(Exception, match="negative node id"):
        load(p)
    p.write_text(base + "5\t1" + "0" * 18 + "\n")  # past the canonical 18 digits
    assert load(p).labels[-1] == 10**18


def test_canonical_files_take_the_parallel_parse(tmp_path, parallel, monkeypatch):
    def no_pyarrow(*args, **kwargs):
        raise AssertionError("the pyarrow path ran")

    monkeypatch.setattr(edgelist, "fast_read", no_pyarrow)
    for sep, end in [("\t", "\n"), (",", "\r\n"), (" ", "\n")]:
        p = tmp_path / "g.txt"
        p.write_text("# header comment\n" + "".join(f"{i + 9}{sep}{(i * 7) % 50 + 9}{end}"
                                                   for i in range(300)))
        g = load(p)
        assert g.num_edges == 300 and g.labels[0] == 9


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_factorize_in_parallel_slices_is_the_serial_numbering(monkeypatch, threads):
    # slices hashed in threads, dictionaries merged: the same codes and labels (first
    # appearance, src-then-dst interleaved) as one hash pass, across chunk boundaries
    import pyarrow as pa

    from webrank import tables

    rng = np.random.default_rng(threads)
    words = np.array([f"http://h{i % 13}.org/{i}" for i in range(3000)])
    src = pa.chunked_array([pa.array(words[rng.integers(0, 3000, 700)]) for _ in range(3)])
    dst = pa.chunked_array([pa.array(words[rng.integers(0, 2000, 1050)]) for _ in range(2)])
    want = tables.factorize(src, dst, threads=1)
    monkeypatch.setattr(tables, "PARALLEL_ENCODE_MIN", 64)
    got = tables.factorize(src, dst, threads=threads)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # first appearance: label 0 is src[0], label 1 the next new one in file order
    assert got[2][0] == src[0].as_py() and got[0][0] == 0


def test_parallel_parse_takes_int32_columns_and_int64_past_them(tmp_path, parallel):
    """The parallel parse writes int32 columns (half the memory); an id past int32's
    range is seen in the ranges' bounds and the file is parsed again into int64."""
    from webrank.io.edgelist import read_edge_columns

    small = tmp_path / "small.txt"
    small.write_text("".join(f"{i} {(7 * i) % 1000}\n" for i in range(1000)))
    src, dst, _, _ = read_edge_columns(small)
    assert build.joined(src).dtype == np.int32
    big = tmp_path / "big.txt"
    ids = [0, 5, 2**31 - 1, 2**31, 3 * 2**32 + 7]
    big.write_text("".join(f"{a} {b}\n" for a in ids for b in ids))
    src, dst, _, _ = read_edge_columns(big)
    got_src, got_dst = build.joined(src), build.joined(dst)
    assert got_src.dtype == np.int64
    np.testing.assert_array_equal(got_src, np.repeat(ids, len(ids)))
    np.testing.assert_array_equal(got_dst, np.tile(ids, len(ids)))
    g = load(big)
    assert g.n == 5 and g.num_edges == 25


def test_parallel_parse_slots_are_made_only_where_written():
    """The parse's slot columns (a line per 4 bytes of each range, most never written)
    come from an anonymous map of small pages: zeros, writable, and resident only
    where written (NumPy's own large arrays ask for 2 MiB pages, which made every
    range's slots resident on 16 threads)."""
    import os

    from webrank.io.edge_parse import sparse_array

    def resident_bytes() -> int:  # now, not the peak
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc (Linux)")
    a = sparse_array(1 << 28, np.int32)  # 1 GiB of address space
    assert a.dtype == np.int32 and a.size == 1 << 28 and a.flags.writeable
    before = resident_bytes()
    a[:: 1 << 20] = 7  # one entry every 4 MiB: 256 pages written
    assert int(a[:: 1 << 20].sum()) == 7 * 256 and a[1] == 0
    assert resident_bytes() - before < 64 << 20  # 256 small pages, not 256 huge ones
    assert sparse_array(0, np.int64).size == 0


@pytest.mark.parametrize("late_wide_id", [False, True])
def test_ids_of_many_blocks_come_back_whole(tmp_path, late_wide_id):
    """A compressed file of many of pyarrow's blocks: its ids come back as int32 copied
    a record batch at a time (each batch's buffers given back as it is copied), or as
    int64 where a late id passes int32, every id in place; a negative id in a late block
    still ends in the exact reader's one-line error."""
    import gzip

    from webrank.io.edgelist import read_edge_columns

    lines = 600_000  # several of pyarrow's 4 MiB blocks
    src = np.arange(lines, dtype=np.int64)
    dst = (src * 7919) % lines
    if late_wide_id:
        dst[-1] = 2**33 + 5
    text = "".join(f"{a}\t{b}\n" for a, b in zip(src.tolist(), dst.tolist(), strict=True))
    path = tmp_path / "many.txt.gz"
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write(text)
    got_src, got_dst, _, _ = read_edge_columns(path)
    assert build.joined(got_dst).dtype == (np.int64 if late_wide_id else np.int32)
    np.testing.assert_array_equal(build.joined(got_src), src)
    np.testing.assert_array_equal(build.joined(got_dst), dst)
    bad = tmp_path / "negative.txt.gz"
    with gzip.open(bad, "wt", compresslevel=1) as f:
        f.write(text + "5\t-3\n")
    with pytest.raises(GraphFormatError, match=f"line {lines + 1}"):
        load(bad)


def test_pyarrow_parses_int32_ids_and_again_as_int64_past_the_head(tmp_path, monkeypatch):
    """Where the head's ids have at most nine digits pyarrow parses int32 columns (8
    bytes a link for the table, no int64 table to copy from); an id past int32 beyond the
    head makes the reader parse the file again as int64, with the same graph as the
    exact scanner's."""
    import gzip

    import pyarrow.csv as pacsv

    from webrank.io.edgelist import read_edge_columns

    types = []
    real = pacsv.read_csv

    def watched(*args, **kwargs):
        types.append({str(t) for t in kwargs["convert_options"].column_types.values()})
        return real(*args, **kwargs)

    monkeypatch.setattr(pacsv, "read_csv", watched)
    lines = 300_000  # far past the head the layout is sniffed from
    small = tmp_path / "small.txt.gz"
    with gzip.open(small, "wt") as f:
        f.write("".join(f"{i}\t{(7 * i) % lines}\n" for i in range(lines)))
    src, dst, _, _ = read_edge_columns(small)
    assert types == [{"int32"}]
    assert build.joined(src).dtype == np.int32
    np.testing.assert_array_equal(build.joined(dst), (7 * np.arange(lines)) % lines)
    wide = tmp_path / "wide.txt.gz"
    with gzip.open(wide, "wt") as f:
        f.write("".join(f"{i}\t{i + 1}\n" for i in range(lines)))
        f.write(f"{3 * 2**32 + 7}\t5\n")
    types.clear()
    src, dst, _, _ = read_edge_columns(wide)
    assert types == [{"int32"}, {"int64"}]
    assert build.joined(src).dtype == np.int64
    assert build.joined(src)[-1] == 3 * 2**32 + 7 and build.joined(dst)[-1] == 5
    assert build.joined(src).size == lines + 1
    weighted = tmp_path / "w.txt.gz"  # long decimals in the weights do not count
    with gzip.open(weighted, "wt") as f:
        f.write("".join(f"{i} {i + 1} 0.12345678901234\n" for i in range(1000)))
    types.clear()
    assert load(weighted).num_edges == 1000 and "int32" in types[0]


def test_pyarrow_path_keeps_int32_ids_where_they_fit(tmp_path):
    """A compressed edge list goes through pyarrow's reader: its int64 columns come back
    as int32 where every id fits (8 bytes a link beside the table, not 16), as int64
    past int32's range, and the same graph either way."""
    import gzip

    from webrank.io.edgelist import read_edge_columns

    small = tmp_path / "small.txt.gz"
    with gzip.open(small, "wt") as f:
        f.write("".join(f"{i}\t{(7 * i) % 1000}\n" for i in range(1000)))
    src, dst, _, _ = read_edge_columns(small)
    assert build.joined(src).dtype == np.int32 and build.joined(dst).dtype == np.int32
    np.testing.assert_array_equal(build.joined(dst), (7 * np.arange(1000)) % 1000)
    big = tmp_path / "big.txt.gz"
    ids = [0, 5, 2**31 - 1, 2**31, 3 * 2**32 + 7]
    with gzip.open(big, "wt") as f:
        f.write("".join(f"{a}\t{b}\n" for a in ids for b in ids))
    src, dst, _, _ = read_edge_columns(big)
    assert build.joined(src).dtype == np.int64
    np.testing.assert_array_equal(build.joined(src), np.repeat(ids, len(ids)))
    g = load(big)
    assert g.n == 5 and g.num_edges == 25
