"""Text readers on hostile lines: a line longer than the cap is refused on
every path without being held in memory; ids of thousands of digits, binary seeds and
personalization files are GraphFormatErrors naming the file and line; RFC 4180 quoting
in .csv files; the --delimiter option; a first edge of column words is kept."""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from package_path import WEBRANK_PATH

import webrank
from webrank.errors import GraphFormatError, InputWarning
from webrank.io import edge_parse, edgelist

SRC = WEBRANK_PATH
LONG = 3 << 20  # a line of 3 MiB: over the 1 MiB cap


def _main(capsys, *args) -> tuple[int, str, str]:
    """``webrank ARGS`` in this process: (exit code, stdout, stderr)."""
    from webrank.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(code: int, err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    for w in words:
        assert w in lines[0], (w, lines[0])


def _write(path: Path, data: bytes) -> Path:
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1)
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------ item 4: long lines
@pytest.mark.parametrize("kind", ["comment", "digits"])
@pytest.mark.parametrize("suffix", [".txt.gz", ".txt"])
def test_a_long_line_after_the_first_edge_is_refused_on_every_path(tmp_path, monkeypatch,
                                                                   kind, suffix):
    body = b"#" + b"x" * LONG if kind == "comment" else b"1" * LONG
    p = _write(tmp_path / f"g{suffix}", b"0 1\n" + body + b"\n1 2\n2 0\n")
    for labels in ("int", "string"):
        with pytest.raises(GraphFormatError, match=r"line 2: no line end in 1 MiB") as e:
            webrank.load(p, labels=labels)
        assert e.value.line == 2 and e.value.text.startswith(body[:20].decode())
    # the exact line scanner (taken where pyarrow cannot parse a file) refuses it too
    monkeypatch.setattr(edgelist, "fast_read", lambda *a, **k: None)
    monkeypatch.setattr(edgelist, "_refuse_long_lines", lambda *a: None)
    for labels in ("int", "string"):
        with pytest.raises(GraphFormatError, match=r"line 2: no line end in 1 MiB"):
            webrank.load(p, labels=labels)


def test_a_line_of_exactly_the_cap_is_read(tmp_path):
    # 1 MiB with its line end: the longest line taken, on the mapped and the gzip paths
    pad = (1 << 20) - len(b"0 1") - 1
    for suffix in (".txt", ".txt.gz"):
        p = _write(tmp_path / f"g{suffix}", b"5 6\n0 1" + b" " * pad + b"\n1 2\n")
        assert webrank.load(p).num_edges == 3
        p = _write(tmp_path / f"h{suffix}", b"5 6\n0 1" + b" " * (pad + 1) + b"\n1 2\n")
        with pytest.raises(GraphFormatError, match="line 2: no line end"):
            webrank.load(p)


_PEAK = """
import resource, sys, webrank
webrank.load(sys.argv[1])  # the same edges without the long line: imports, pools
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    webrank.load(sys.argv[2])
    print("loaded")
except webrank.GraphFormatError as e:
    print(e.line, e.reason)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


@pytest.mark.parametrize("kind", ["comment", "digits"])
def test_a_gzip_of_a_long_line_takes_no_memory_for_it(tmp_path, kind):
    # 64 MiB in 64 KB of gzip: the line was held whole, 2-4x (a 2 GiB one: 4.3-8.5 GB)
    n = 64 << 20
    body = b"#" + b"x" * n if kind == "comment" else b"1" * n
    normal = _write(tmp_path / "normal.txt.gz", b"0 1\n1 2\n2 0\n")
    bomb = _write(tmp_path / "bomb.txt.gz", b"0 1\n" + body + b"\n1 2\n2 0\n")
    assert bomb.stat().st_size < 1 << 20
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", _PEAK, str(normal), str(bomb)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    where, growth = r.stdout.splitlines()
    assert where.startswith("2 no line end in 1 MiB"), where
    assert int(growth) < 32, f"peak RSS grew by {growth} MiB reading a {n >> 20} MiB line"


def test_adjacency_mtx_seeds_and_personalization_lines_are_bounded(tmp_path, capsys):
    # adjacency: a long comment is skipped unread, a line may list many sources, but a
    # field over the cap is refused (an id of 3 MiB used to make a 3 MiB-wide array)
    adj = _write(tmp_path / "g.adj.gz", b"1 1 2\n#" + b"x" * LONG + b"\n2 1 1\n")
    assert webrank.load(adj).num_edges == 2
    many = 400_000
    adj = _write(tmp_path / "many.adj",
                 b"0 %d " % many + b" ".join(b"%d" % (i % 7 + 1) for i in range(many))
                 + b"\n")
    assert webrank.load(adj).num_edges == 7
    adj = _write(tmp_path / "digits.adj.gz", b"1 1 2\n2 1 " + b"1" * LONG + b"\n")
    for labels in ("int", "string"):
        with pytest.raises(GraphFormatError, match="line 2: a field of more than 1 MiB"):
            webrank.load(adj, labels=labels)
    # Matrix Market: SciPy's reader sees the data end before the long line
    head = b"%%MatrixMarket matrix coordinate pattern general\n"
    for body in (b"%" + b"x" * LONG, b"1" * LONG):
        mtx = _write(tmp_path / "g.mtx.gz", head + b"3 3 2\n1 2\n" + body + b"\n2 3\n")
        with pytest.raises(GraphFormatError, match="line 4: no line end in 1 MiB"):
            webrank.load(mtx)
        mtx = _write(tmp_path / "h.mtx.gz", head + body + b"\n3 3 2\n1 2\n2 3\n")
        with pytest.raises(GraphFormatError, match="line 2: no line end in 1 MiB"):
            webrank.load(mtx)
    # seeds and personalization files: read a piece at a time too
    g = tmp_path / "g.txt"
    g.write_text("0 1\n1 2\n2 0\n")
    seeds = _write(tmp_path / "seeds.txt", b"#" + b"x" * LONG + b"\n0 1\n2\n")
    code, out, err = _main(capsys, "ppr", g, "--seeds", seeds, "--device", "cpu", "--json")
    assert code == 0 and json.loads(out)["k"] == 2, err
    seeds = _write(tmp_path / "seeds2.txt", b"0\n0 " + b"1" * LONG + b"\n")
    _one_line(*_main(capsys, "ppr", g, "--seeds", seeds, "--device", "cpu")[::2],
              "seeds2.txt, line 2", "a field of more than 1 MiB")
    pers = _write(tmp_path / "p.txt", b"0 1\n" + b"1" * LONG + b"\n")
    _one_line(*_main(capsys, "rank", g, "--personalize", pers, "--device", "cpu")[::2],
              "p.txt, line 2", "a field of more than 1 MiB")


# ----------------------------------------------------- item 7: ids of thousands of digits
def test_ids_beyond_python_int_digit_limit_are_graph_format_errors(tmp_path):
    big = "1" * 5000  # int() refuses more than 4,300 digits: "Exceeds the limit ..."
    cases = {"g.txt": f"0 1\n{big} 2\n", "g.txt.gz": f"0 1\n1 {big}\n",
             "n.txt": f"0 1\n-{big} 2\n", "g.adj": f"0 1 1\n1 1 {big}\n",
             "w.txt": f"0 1 1\n1 2 {big}x\n"}
    for name, text in cases.items():
        p = _write(tmp_path / name, text.encode())
        with pytest.raises(GraphFormatError) as e:
            webrank.load(p)
        msg = str(e.value)
        assert e.value.path == str(p) and e.value.line == 2, msg
        assert ("beyond the int64 range" in msg or "negative node id" in msg
                or "is not a number" in msg), msg
        assert "5,00" in msg and len(msg) < 600, msg  # the id shortened, with its length


# ----------------------------------------- item 10: binary seeds / personalization files
def test_binary_seeds_and_personalization_files_name_the_file_and_line(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text("0 1\n1 2\n2 0\n")
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"0\n1 \xb4\xe9t\xe9\n")  # Latin-1, not UTF-8
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"0 1\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n")
    for opt in ("--seeds", "--personalize"):
        cmd = ("ppr", g, "--seeds") if opt == "--seeds" else ("rank", g, "--personalize")
        for labels in ("int", "string"):
            _one_line(*_main(capsys, *cmd, latin, "--device", "cpu", "--labels",
                             labels)[::2], "latin.txt, line 2", "not UTF-8")
        _one_line(*_main(capsys, *cmd, binary, "--device", "cpu")[::2],
                  "blob.txt, line 2", "binary")


# ------------------------------------------------------ item 12: RFC 4180 quoted .csv
def _csv_file(path: Path, rows, header=("source", "target", "weight"), end="\r\n") -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator=end)
        if header:
            w.writerow(header)
        w.writerows(rows)
    return path


def _edges(g) -> list:
    s, d, w = g.edges()
    lab = g.node_labels()
    return sorted(zip(lab[s].tolist(), lab[d].tolist(),
                      [None] * len(s) if w is None else w.tolist(), strict=True))


@pytest.mark.parametrize("path", ["fast", "exact"])
def test_quoted_csv_as_python_csv_and_pandas_write_it(tmp_path, monkeypatch, path):
    if path == "exact":
        monkeypatch.setattr(edgelist, "fast_read", lambda *a, **k: None)
    a, b, c = "http://a.example/x,y", 'http://b.example/say"hi"', "two\nlines"
    rows = [(a, b, 1.5), (b, a, 2.0), (b, c, 0.5), (c, "d", 1.0)]
    for name in ("links.csv", "links.csv.gz"):
        p = _csv_file(tmp_path / "plain.csv", rows)
        if name.endswith(".gz"):
            p = _write(tmp_path / name, p.read_bytes())
        with warnings.catch_warnings():
            warnings.simplefilter("error", InputWarning)  # the header: 3 words, no doubt
            g = webrank.load(p, labels="string")
        assert _edges(g) == sorted(rows), name
    # integer ids may be quoted; "" inside stands for a quote; no header
    p = _csv_file(tmp_path / "ids.csv", [(1, 2), ("3", "1")], header=None)
    p.write_text(p.read_text().replace("3,1", '"3","1"'))
    assert _edges(webrank.load(p)) == [(1, 2, None), (3, 1, None)]
    # a quote left open is named, with its line
    bad = tmp_path / "bad.csv"
    bad.write_text('a,b\nc,"d\n')
    with pytest.raises(GraphFormatError, match="line 2: a quoted field without its closing"):
        webrank.load(bad, labels="string")
    # quoted line breaks across pyarrow's blocks (cut at line ends, quotes aside): the
    # halves are noticed, the exact scanner reads the file ("\n" ends, as pandas writes)
    rows = [(f"n{i % 7}" if i % 9 else f"x{i}\ny{i}", f"m{i % 5}") for i in range(300)]
    p = _csv_file(tmp_path / "multi.csv", rows, header=("source", "target"), end="\n")
    for block in (97, 256, 1000):
        monkeypatch.setattr(edge_parse, "_BLOCK", block)
        assert _edges(webrank.load(p, labels="string", header=True)) == [
            (a, b, None) for a, b in sorted(set(rows))], block
    # outside .csv files quotes stay literal
    txt = tmp_path / "q.txt"
    txt.write_text('"a" "b"\n')
    assert webrank.load(txt, labels="string").node_labels().tolist() == ['"a"', '"b"']


def test_delimiter_option_cli_and_load(tmp_path, capsys):
    p = tmp_path / "semi.txt"
    p.write_text("0;1\n1;2\n2;0\n")
    with pytest.raises(GraphFormatError, match="found 1 column"):
        webrank.load(p)
    for d in (";", "semicolon", "SEMICOLON"):
        assert webrank.load(p, delimiter=d).num_edges == 3
    t = tmp_path / "tabs.txt"
    t.write_text("a b\tc\nc\ta b\n")
    assert webrank.load(t, labels="string", delimiter="tab").node_labels().tolist() == \
        ["a b", "c"]
    assert webrank.ReadOptions(delimiter="\\t").delimiter == "\t"
    with pytest.raises(ValueError, match="one character"):
        webrank.load(p, delimiter=";;")
    for cmd in (("info", p, "--json"), ("convert", p, tmp_path / "g.npz"),
                ("rank", p, "--json", "--device", "cpu")):
        code, _, err = _main(capsys, *cmd, "--delimiter", "semicolon")
        assert code == 0, err
    assert json.loads(_main(capsys, "info", p, "--json", "--delimiter", ";")[1])["edges"] == 3
    _one_line(*_main(capsys, "info", p, "--delimiter", "ab")[::2], "--delimiter",
              "one character")


# ---------------------------------------------- test gap: _drop_unused_header's `or`
@pytest.mark.parametrize("text", ["u v\nu w\nw x\n", "u v\nw v\nx w\n"])
def test_a_first_edge_of_column_words_whose_one_label_recurs_is_kept(tmp_path, text):
    # "u v" looks like a header (two column names), but "u" (or "v") is a page of
    # another line, as a source only or as a target only: the line is an edge
    p = tmp_path / "g.txt"
    p.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        g = webrank.load(p, labels="string")
    assert g.num_edges == 3
    first = text.split("\n", 1)[0].split()
    assert (first[0], first[1], None) in _edges(g)
