"""Bad input: every case raises GraphFormatError naming the file (and line + text)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import write

from webrank.errors import GraphFormatError
from webrank.graph import Graph
from webrank.io import load, save_graph


def fails(path: Path, line: int | None = None, text: str | None = None, match: str | None = None,
          **kw) -> GraphFormatError:
    """Load ``path``; check the error names the file, the line and the offending text."""
    with pytest.raises(GraphFormatError, match=match) as info:
        load(path, **kw)
    e = info.value
    msg = str(e)
    assert path.name in msg
    assert e.path == str(path)
    assert e.line == line, msg
    if text is not None:
        assert e.text == text
        assert repr(text) in msg
    return e


GOOD = "".join(f"{i}\t{(i * 7) % 50}\n" for i in range(50))  # 50 good lines


# ------------------------------------------------------------------- edge-list lines
def test_non_numeric_id_suggests_string_labels(tmp_path):
    p = write(tmp_path / "g.txt", "# c\n0\t1\n1\tpage.html\n")
    e = fails(p, 3, "1\tpage.html", match="not a non-negative integer")
    assert 'labels="string"' in str(e) and "--labels string" in str(e)


def test_urls_in_int_mode(tmp_path):
    p = write(tmp_path / "g.txt", "http://a/ http://b/\nhttp://b/ http://c/\n")
    e = fails(p, 2, "http://b/ http://c/")  # line 1 is taken as a header
    assert 'labels="string"' in str(e)


def test_one_column(tmp_path):
    fails(write(tmp_path / "g.txt", "# c\n0\n1\n"), 2, "0", match="1 column")


def test_four_columns(tmp_path):
    fails(write(tmp_path / "g.txt", "0 1 2 3\n"), 1, "0 1 2 3", match="4 columns")


def test_row_with_a_different_column_count(tmp_path):
    p = write(tmp_path / "g.txt", GOOD + "7\t8\t9\n" + GOOD)
    fails(p, 51, "7\t8\t9", match="expected 2 columns")
    p = write(tmp_path / "w.txt", "0 1 1.0\n1 2\n")
    fails(p, 2, "1 2", match="expected 3 columns")


def test_negative_id(tmp_path):
    fails(write(tmp_path / "g.txt", GOOD + "3\t-4\n"), 51, "3\t-4", match="negative node id")


def test_negative_id_after_blank_lines_and_comments(tmp_path):
    # pyarrow skips blank lines, so the row index is not the line number: the exact
    # scanner must count lines itself
    text = "# h\n\n" + GOOD + "\n\n" + GOOD + "% c\n\n-1\t5\n" + GOOD
    fails(write(tmp_path / "g.txt.gz", text), 107, "-1\t5", match="negative")


def test_id_beyond_int64(tmp_path):
    p = write(tmp_path / "g.txt", GOOD + "99999999999999999999\t1\n")
    fails(p, 51, "99999999999999999999\t1", match="beyond the int64 range")
    p = write(tmp_path / "h.txt", "9223372036854775808 1\n")  # 2**63
    fails(p, 1, "9223372036854775808 1", match="int64")


def test_hex_id_is_not_an_integer(tmp_path):
    # pyarrow would read 0x1f as 31; the exact scanner refuses it
    fails(write(tmp_path / "g.txt", GOOD + "0x1f\t2\n"), 51, "0x1f\t2", match="0x1f")


@pytest.mark.parametrize("device", ["cpu", "gpu"], ids=["host-build", "card-build"])
def test_hex_id_far_into_a_mapped_file(tmp_path, monkeypatch, device):
    # a plain file goes to pyarrow as a memory map, searched for x/X a slice at a time
    # beside the parse: an id in the last slice, and one across a slice's end
    from webrank.io import edge_parse, edgelist
    from webrank.io.options import ReadOptions

    monkeypatch.setattr(edge_parse.MappedSource, "_SLICE", 64)
    monkeypatch.setattr(edgelist, "PARALLEL_PARSE_BYTES", 1 << 40)  # (not the parallel parse)
    body = GOOD * 20
    for bad in ["0X1F\t2", "7\t0x2"]:
        p = write(tmp_path / "g.txt", body + bad + "\n" + GOOD)
        with pytest.raises(GraphFormatError, match=f"line {1001}"):
            edgelist.read_edge_columns(p, options=ReadOptions(device=device))
    # a search slower than the parse still runs to the end of the file
    search = edge_parse.MappedSource._find_hex

    def slow_search(self):
        import time

        time.sleep(0.3)
        search(self)

    monkeypatch.setattr(edge_parse.MappedSource, "_find_hex", slow_search)
    p = write(tmp_path / "g.txt", body + "7\t0x2\n" + GOOD)
    with pytest.raises(GraphFormatError, match="line 1001"):
        edgelist.read_edge_columns(p, options=ReadOptions(device=device))
    seen = []
    p = write(tmp_path / "g.txt", body)
    src, _, _, _ = edgelist.read_edge_columns(
        p, options=ReadOptions(device=device, progress=lambda done, total: seen.append(
            (done, total))))
    assert sum(a.size for a in getattr(src, "arrays", [src])) == 1000
    assert seen[-1] == (p.stat().st_size,) * 2


@pytest.mark.parametrize("bad", ["nan", "inf", "-0.5", "-inf", "NaN"])
def test_bad_weight(tmp_path, bad):
    text = "".join(f"{i} {i + 1} 1.5\n" for i in range(30)) + f"3 4 {bad}\n"
    fails(write(tmp_path / "g.txt", text), 31, f"3 4 {bad}", match="weight")


def test_non_numeric_weight(tmp_path):
    fails(write(tmp_path / "g.txt", "0 1 1.5\n1 2 heavy\n"), 2, "1 2 heavy",
          match="not a number")


def test_weighted_true_without_weights(tmp_path):
    fails(write(tmp_path / "g.txt", "0 1\n"), 1, "0 1", match="no weight column",
          weighted=True)


def test_empty_field_in_csv(tmp_path):
    fails(write(tmp_path / "g.csv", "0,1\n1,\n"), 2, "1,", match="empty field")


def test_bad_line_deep_in_a_large_gzip_file(tmp_path):
    body = "".join(f"{i}\t{i + 1}\n" for i in range(20000))
    p = write(tmp_path / "big.txt.gz", "# comment\n" + body + "5\tfive\n" + body)
    fails(p, 20002, "5\tfive", match="labels=")


def test_string_labels_invalid_utf8(tmp_path):
    p = write(tmp_path / "g.txt", b"a b\nc \xff\xfe\n")
    e = fails(p, 2, labels="string")
    assert "UTF-8" in str(e)


# ---------------------------------------------------------------------- whole files
def test_empty_file(tmp_path):
    fails(write(tmp_path / "g.txt", ""), match="empty file")
    fails(write(tmp_path / "g.txt.gz", ""), match="empty file")


def test_only_comments(tmp_path):
    fails(write(tmp_path / "g.txt", "# a\n% b\n\n"), match="only comments")
    fails(write(tmp_path / "h.csv", "# a\nsource,target\n"), match="only comments or a header")


def test_missing_file(tmp_path):
    fails(tmp_path / "nope.txt", match="no such file")
    fails(tmp_path / "nope.xyz", match="no such file")
    fails(tmp_path / "nope.parquet", match="no such file")
    fails(tmp_path / "nope.npz", match="no such file")
    fails(tmp_path / "nope.dat", match="no such file", format="edgelist")
    assert issubclass(GraphFormatError, ValueError)


def test_directory(tmp_path):
    d = tmp_path / "dir.txt"
    d.mkdir()
    fails(d, match="directory")


def test_unreadable_file(tmp_path, monkeypatch):
    p = write(tmp_path / "g.txt", GOOD)
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        p.chmod(0)
    else:  # root reads anything: pretend the permission check failed
        real = os.access
        monkeypatch.setattr(os, "access", lambda f, mode: False if str(f) == str(p)
                            else real(f, mode))
    try:
        fails(p, match="permission denied")
    finally:
        p.chmod(0o644)


def test_binary_garbage(tmp_path):
    rng = np.random.default_rng(0)
    p = write(tmp_path / "g.txt", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    e = fails(p, line=fails_line(p), match="binary|not UTF-8")
    assert e.line >= 1


def fails_line(p: Path) -> int:
    """The line of the first NUL byte (what the loader reports for binary data)."""
    data = p.read_bytes()
    assert b"\x00" in data
    return data.count(b"\n", 0, data.find(b"\x00")) + 1


def test_native_cache_with_a_text_suffix(tmp_path):
    save_graph(Graph.from_edges([0], [1]), tmp_path / "g.npz")
    p = tmp_path / "g.txt"
    p.write_bytes((tmp_path / "g.npz").read_bytes())
    fails(p, line=fails_line(p), match="binary")


def test_corrupt_gzip(tmp_path):
    data = bytearray(gzip.compress(GOOD.encode() * 200))
    data[len(data) // 2] ^= 0xFF
    data[len(data) // 2 + 1] ^= 0xFF
    p = tmp_path / "g.txt.gz"
    p.write_bytes(bytes(data))
    fails(p, match="corrupt or truncated gzip")


def test_truncated_gzip(tmp_path):
    data = gzip.compress(GOOD.encode() * 200)
    p = tmp_path / "g.txt.gz"
    p.write_bytes(data[: len(data) // 2])
    fails(p, match="corrupt or truncated gzip")


def test_gz_suffix_on_plain_text(tmp_path):
    p = tmp_path / "g.txt.gz"
    p.write_text(GOOD)
    fails(p, match="not a gzip file")


def test_corrupt_bz2(tmp_path):
    p = tmp_path / "g.txt.bz2"
    p.write_bytes(b"BZh9" + bytes(range(256)) * 4)
    fails(p, match="bz2")


def test_unknown_extension(tmp_path):
    p = write(tmp_path / "g.foo", GOOD)
    e = fails(p, match="format=")
    for ext in (".txt", ".adj", ".mtx", ".parquet", ".npz", ".graph"):
        assert ext in str(e)


def test_bad_parameters(tmp_path):
    p = write(tmp_path / "g.txt", GOOD)
    for kw in ({"format": "xml"}, {"labels": "float"}, {"node_ids": "all"},
               {"duplicates": "max"}, {"delimiter": "ab"}, {"weighted": "yes"}):
        with pytest.raises(ValueError):
            load(p, **kw)


# -------------------------------------------------------------------- other formats
def test_adjacency_in_degree_mismatch(tmp_path):
    p = write(tmp_path / "g.adj", "# d k s\n1 2 3 7\n2 3 4 5\n")
    fails(p, 3, "2 3 4 5", match="in_degree is 3 but the line lists 2")


def test_adjacency_bad_tokens(tmp_path):
    fails(write(tmp_path / "a.adj", "1 1 2\n2 x 1\n"), 2, "2 x 1", match="in_degree")
    fails(write(tmp_path / "b.adj", "1 1 2\n\n2 1 q\n"), 3, "2 1 q", match="labels=")
    fails(write(tmp_path / "c.adj", "1 1 2\n2\n"), 2, "2", match="at least")
    fails(write(tmp_path / "d.adj", "1 1 -2\n"), 1, "1 1 -2", match="negative")
    fails(write(tmp_path / "e.adj", "# only\n"), match="only comments")
    fails(write(tmp_path / "f.adj", ""), match="empty")


def test_mtx_errors(tmp_path):
    fails(write(tmp_path / "a.mtx", "1 2\n"), 1, "1 2", match="not a Matrix Market")
    p = write(tmp_path / "b.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                  "3 3 2\n1 2 1.0\n4 1 1.0\n")
    fails(p, 4, "4 1 1.0", match="out of bounds")
    p = write(tmp_path / "c.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                  "3 2 1\n1 2 1.0\n")
    fails(p, match="square")
    p = write(tmp_path / "d.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                  "3 3 1\n1 2 -1.0\n")
    fails(p, match="finite and >= 0")
    p = write(tmp_path / "e.mtx", "%%MatrixMarket matrix coordinate complex general\n"
                                  "2 2 1\n1 2 1.0 0.0\n")
    fails(p, 1, match="complex")


def test_parquet_errors(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [0, 1], "b": [1, 2]}), tmp_path / "g.parquet")
    e = fails(tmp_path / "g.parquet", match="missing column")
    assert "'a'" in str(e) and "'b'" in str(e)
    fails(tmp_path / "g.parquet", match="missing column", columns=("a", "b", "w"),
          weighted=True)
    pq.write_table(pa.table({"src": [0, None], "dst": [1, 2]}), tmp_path / "n.parquet")
    fails(tmp_path / "n.parquet", match="null in row 1")
    pq.write_table(pa.table({"src": [0, -3], "dst": [1, 2]}), tmp_path / "m.parquet")
    fails(tmp_path / "m.parquet", match="row 1: negative")
    pq.write_table(pa.table({"src": [0], "dst": [1], "weight": [float("nan")]}),
                   tmp_path / "w.parquet")
    fails(tmp_path / "w.parquet", match="row 0: weight nan")
    fails(write(tmp_path / "x.parquet", GOOD), match="not a readable Parquet")


def test_native_cache_errors(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    fails(tmp_path / "other.npz", match="not written by webrank.save_graph")
    fails(write(tmp_path / "junk.npz", GOOD), match="not an .npz")
    fails(write(tmp_path / "empty.npz", b""), match="empty")
    np.savez(tmp_path / "v9.npz", __webrank_format__=np.array("webrank-graph"),
             __webrank_version__=np.array(9))
    fails(tmp_path / "v9.npz", match="version 9")
    np.savez(tmp_path / "bad.npz", __webrank_format__=np.array("webrank-graph"),
             __webrank_version__=np.array(1), indptr=np.array([0, 2]),
             indices=np.array([0, 5]), out_weight=np.zeros(1))
    fails(tmp_path / "bad.npz", match="corrupt")
    fails(write(tmp_path / "c.npz.gz", GOOD), match="compressed")
