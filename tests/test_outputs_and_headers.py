"""No output overwrites an input or fails after the work; no first line is dropped as a
header unless it cannot be an edge or the user is told."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from webrank import load, pagerank
from webrank.cli import main
from webrank.errors import GraphFormatError, InputWarning

CYCLE = "0 1\n1 2\n2 0\n2 3\n"


def run(capsys, *args) -> tuple[int, str, str]:
    """``webrank ARGS`` in this process: (exit code, stdout, stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("webrank: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, err)


# ------------------------------------------------------------------ outputs
@pytest.mark.parametrize("name", ["g.txt", "g.csv", "g.tsv"])
def test_rank_output_onto_its_graph_is_refused(tmp_path, capsys, name):
    g = tmp_path / name
    g.write_text(CYCLE)
    code, _, err = run(capsys, "rank", g, "-o", g, "--device", "cpu")
    assert code == 2
    one_line_error(err, "is the input")
    assert g.read_text() == CYCLE


def test_output_onto_a_link_of_the_input_is_refused(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text(CYCLE)
    (tmp_path / "sym.txt").symlink_to(g)
    os.link(g, tmp_path / "hard.txt")
    for inp, out in [(tmp_path / "sym.txt", g), (g, tmp_path / "hard.txt")]:
        code, _, err = run(capsys, "rank", inp, "-o", out, "--device", "cpu")
        assert code == 2
        one_line_error(err, "is the input")
    assert g.read_text() == CYCLE


def test_rank_output_onto_the_personalization_file_is_refused(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text(CYCLE)
    p = tmp_path / "p.txt"
    p.write_text("1 1.0\n")
    code, _, err = run(capsys, "rank", g, "--personalize", p, "-o", p, "--device", "cpu")
    assert code == 2 and p.read_text() == "1 1.0\n"
    one_line_error(err, "is the input")


@pytest.mark.parametrize("onto", ["graph", "seeds"])
def test_ppr_output_onto_an_input_is_refused(tmp_path, capsys, onto):
    g = tmp_path / "g.csv"
    g.write_text(CYCLE)
    s = tmp_path / "seeds.csv"
    s.write_text("0\n1 2\n")
    target = g if onto == "graph" else s
    before = target.read_text()
    code, _, err = run(capsys, "ppr", g, "--seeds", s, "-o", target, "--device", "cpu")
    assert code == 2 and target.read_text() == before
    one_line_error(err, "is the input")


def test_convert_onto_itself_is_refused(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text(CYCLE)
    npz = tmp_path / "g.npz"
    assert run(capsys, "convert", g, npz)[0] == 0
    before = npz.read_bytes()
    code, _, err = run(capsys, "convert", npz, npz)
    assert code == 2 and npz.read_bytes() == before
    one_line_error(err, "is the input")


def test_distributed_output_inside_its_input_directory_is_refused(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text(CYCLE)
    shards = tmp_path / "shards"
    assert run(capsys, "convert", g, shards, "--shards", "2")[0] == 0
    code, _, err = run(capsys, "rank", shards, "--distributed", "-o", shards / "ranks")
    assert code == 2
    one_line_error(err, "inside the input directory")


@pytest.mark.parametrize(("output", "words"), [
    ("missing/dir/ranks.csv", ["missing/dir' does not exist"]),
    ("ranks.xlsx", ["unknown output type", ".parquet"]),
    ("ranks", ["unknown output type"]),
])
def test_bad_output_is_refused_before_the_load(tmp_path, capsys, output, words):
    # the graph is broken: had it been read first, the error would be about it
    g = tmp_path / "g.txt"
    g.write_text("0 1\nnot an edge\n")
    code, _, err = run(capsys, "rank", g, "-o", tmp_path / output)
    assert code == 2
    one_line_error(err, *words)
    assert ".tmp" not in err  # no internal temporary file named


def test_output_directory_is_refused_for_a_file(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text(CYCLE)
    code, _, err = run(capsys, "rank", g, "-o", tmp_path)
    assert code == 2
    one_line_error(err, "is a directory")


# ------------------------------------------------------------------ headers
def test_string_labels_cycle_of_column_names_is_read_whole(tmp_path):
    # "u v" is made of usual column names, but u and v are pages of the graph
    p = tmp_path / "c.txt"
    p.write_text("u v\nv w\nw u\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and nothing to say
        g = load(p, labels="string")
    assert g.n == 3 and g.num_edges == 3
    np.testing.assert_allclose(pagerank(g, tol=1e-12).scores, 1 / 3, rtol=1e-9)


def test_unused_column_names_are_a_header_with_a_warning(tmp_path):
    p = tmp_path / "links.csv"
    p.write_text("source,target\na,b\nb,c\nc,a\n")
    with pytest.warns(InputWarning, match="line 1: 'source,target' read as a header"):
        g = load(p, labels="string")
    assert g.labels.tolist() == ["a", "b", "c"] and g.num_edges == 3
    g2 = load(p, labels="string", header=False)
    assert g2.n == 5 and g2.labels.tolist()[:2] == ["source", "target"]


@pytest.mark.parametrize("text", [
    "src dst weight\na b 1.5\nb c 2\n",    # a third field that is no number above weights
    "from to w\na b\nb c\n",               # another field count than the lines below
])
def test_column_names_that_cannot_be_an_edge_are_a_header_silently(tmp_path, text):
    p = tmp_path / "w.txt"
    p.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = load(p, labels="string")
    assert g.labels.tolist() == ["a", "b", "c"] and g.num_edges == 2


def test_header_true_skips_a_numeric_first_line(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("100 200\n" + CYCLE)
    assert load(p).n == 6
    g = load(p, header=True)
    assert g.n == 4 and g.num_edges == 4


def test_header_false_reads_a_word_line_as_an_edge(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("src dst\n" + CYCLE)
    assert load(p).num_edges == 4  # integer ids: "src dst" cannot be an edge
    with pytest.raises(GraphFormatError, match="line 1"):
        load(p, header=False)


def test_a_single_line_of_column_names_says_how_to_read_it(tmp_path, capsys):
    p = tmp_path / "one.txt"
    p.write_text("u v\n")
    with pytest.raises(GraphFormatError, match="--no-header"):
        load(p, labels="string")
    assert load(p, labels="string", header=False).num_edges == 1


def test_cli_header_flags_and_the_warning_line(tmp_path, capsys):
    p = tmp_path / "links.csv"
    p.write_text("source,target\na,b\nb,c\nc,a\n")
    code, out, err = run(capsys, "info", p, "--labels", "string", "--json")
    assert code == 0 and '"nodes": 3' in out
    assert err.startswith("webrank: warning: ") and err.count("\n") == 1
    code, out, err = run(capsys, "info", p, "--labels", "string", "--json", "--no-header")
    assert code == 0 and '"nodes": 5' in out and not err
    code, out, err = run(capsys, "info", p, "--labels", "string", "--json", "--header")
    assert code == 0 and '"nodes": 3' in out and not err


def test_header_option_is_checked():
    from webrank.io import ReadOptions

    with pytest.raises(ValueError, match="header must be"):
        ReadOptions(header="yes")


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".txt"])
def test_scores_as_text_read_back_exactly_with_awkward_labels(tmp_path, ext, monkeypatch):
    from webrank.graph import Graph
    from webrank.io import columns
    from webrank.result import load_scores

    monkeypatch.setattr(columns, "_SLICE_ROWS", 2)  # several slices, formatted in parallel
    labels = np.array(["a,b", 'say "hi"', "tab\there", "plain", "ü"], dtype=object)
    g = Graph.from_edges([0, 1, 2, 3, 4, 0], [1, 2, 3, 4, 0, 2], labels=labels)
    r = pagerank(g, tol=1e-12)
    r.save(tmp_path / f"s{ext}")
    text = (tmp_path / f"s{ext}").read_text()
    assert text.splitlines()[0] == ("node,score" if ext == ".csv" else "node\tscore")
    got_labels, got = load_scores(tmp_path / f"s{ext}")
    assert got_labels.tolist() == labels.tolist()
    assert np.array_equal(got, r.scores)  # shortest round-trip text: the same float64


def test_warmup_runs_its_kernel_groups_in_fresh_processes(monkeypatch):
    """`webrank warmup` runs each group of GPU paths in a process of its own and reports
    each; a failing group is reported with its error (no GPU here: unknown groups)."""
    import webrank.warmup as warm

    monkeypatch.setattr(warm, "GPU_TASKS", ("no-such-group", "nor-this-one"))
    seen = []
    results = warm.fill_caches(jobs=2, report=lambda t, s, ok: seen.append(t))
    assert sorted(seen) == ["no-such-group", "nor-this-one"]
    assert not results["no-such-group"]["ok"]
    assert "unknown warm-up task" in results["no-such-group"]["error"]


def test_warmup_tasks_take_the_device_build_on_small_inputs(monkeypatch):
    """A warm-up task lowers the GPU build's threshold in its own process (a module
    setting, not the environment), so that its few thousand links compile what large
    inputs run."""
    import webrank.warmup as warm
    from webrank import build_gpu

    monkeypatch.setattr(build_gpu, "HOST_BUILD_EDGES", build_gpu.HOST_BUILD_EDGES)
    warm._lower_thresholds()
    assert build_gpu.HOST_BUILD_EDGES == 0


def test_warmup_needs_a_gpu():
    """Without a GPU `webrank warmup` says so in one line (nothing to compile: the CPU
    kernels come compiled with the package)."""
    import subprocess
    import sys

    from webrank.backends import gpu_available

    if gpu_available():
        pytest.skip("a GPU is usable here")
    out = subprocess.run([sys.executable, "-m", "webrank", "warmup"], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "gpu" in out.stderr
