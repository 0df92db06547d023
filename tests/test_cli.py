"""The webrank command line, run as a subprocess (exit codes, one-line errors, outputs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import dataset
from package_path import WEBRANK_PATH

SRC = WEBRANK_PATH


def webrank(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "webrank", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture
def small_graph(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("# a small web\n1\t2\n1\t4\n1\t5\n2\t1\n2\t3\n2\t5\n3\t6\n5\t3\n5\t4\n5\t6\n"
                 "6\t3\n6\t5\n")
    return p


def test_help_works_without_gpu():
    r = webrank("--help")
    assert r.returncode == 0 and "rank" in r.stdout and "info" in r.stdout


def test_rank_json_and_output(small_graph, tmp_path):
    out = tmp_path / "scores.csv"
    r = webrank("rank", small_graph, "--tol", "1e-12", "--json", "--top", "3", "-o", out,
                "--device", "cpu")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["converged"] and doc["device"] == "cpu"
    assert [t["node"] for t in doc["top"]] == [6, 3, 5]
    lines = out.read_text().splitlines()
    assert lines[0] == "node,score" and len(lines) == 7


def test_rank_table(small_graph):
    r = webrank("rank", small_graph, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "converged in" in r.stdout and "Top" in r.stdout


def test_personalize_file(small_graph, tmp_path):
    pf = tmp_path / "p.txt"
    pf.write_text("# seeds\n4 1.0\n")
    r = webrank("rank", small_graph, "--personalize", pf, "--json", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["top"][0]["node"] == 4
    pf.write_text("4 x\n")
    r = webrank("rank", small_graph, "--personalize", pf)
    assert r.returncode == 2 and "line 1" in r.stderr
    # a weight that is not a finite number >= 0, and a node the graph lacks: the file's
    # line, not a message without it
    for text, line, says in (("4 1\n5 nan\n", 2, "a weight must be a finite number >= 0"),
                             ("4 1\n# c\n5 -2\n", 3, "a weight must be a finite"),
                             ("4 1\n99 1\n", 2, "99 is not a node")):
        pf.write_text(text)
        r = webrank("rank", small_graph, "--personalize", pf)
        assert r.returncode == 2 and f"p.txt, line {line}: {says}" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_info_and_convert(small_graph, tmp_path):
    r = webrank("info", small_graph, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["nodes"] == 6 and info["edges"] == 12 and info["dangling"] == 1
    cache = tmp_path / "g.npz"
    r = webrank("convert", small_graph, cache)
    assert r.returncode == 0, r.stderr and cache.exists()
    r = webrank("rank", cache, "--json", "--device", "cpu")
    assert r.returncode == 0 and json.loads(r.stdout)["top"][0]["node"] == 6


def test_not_converged_exit_3(small_graph):
    r = webrank("rank", small_graph, "--max-iter", "2", "--tol", "1e-15", "--device", "cpu")
    assert r.returncode == 3
    assert "not converged" in r.stderr


@pytest.mark.parametrize(
    ("content", "args", "expect"),
    [
        ("1\t2\nfoo\tbar\n", (), "line 2"),
        ("1\t2\n3\n", (), "line 2"),
        ("1\t-2\n", (), "line 1"),
        ("1\t2\t-1.0\n", (), "line 1"),
        ("1\t2\tnan\n", (), "line 1"),
        ("", (), "empty"),
        ("# only a comment\n", (), ""),
        ("1\t2\n", ("--alpha", "1.5"), "alpha"),
        ("1\t2\n", ("--tol", "-1"), "tol"),
        ("1\t2\n", ("--criterion", "l9"), "criterion"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, content, args, expect):
    p = tmp_path / "bad.txt"
    p.write_text(content)
    r = webrank("rank", p, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert expect in err


def test_missing_file_and_unknown_extension(tmp_path):
    r = webrank("rank", tmp_path / "nope.txt")
    assert r.returncode == 2 and "nope.txt" in r.stderr and len(r.stderr.splitlines()) == 1
    q = tmp_path / "g.xyz"
    q.write_text("1 2\n")
    r = webrank("rank", q)
    assert r.returncode == 2 and "format" in r.stderr


def test_garbage_gzip(tmp_path):
    p = tmp_path / "g.txt.gz"
    p.write_bytes(b"\x1f\x8b" + bytes(np.random.default_rng(0).integers(0, 256, 500,
                                                                         dtype=np.uint8)))
    r = webrank("info", p)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_gpu_request_without_gpu_exit_2(small_graph):
    from webrank.backends import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    r = webrank("rank", small_graph, "--device", "gpu")
    assert r.returncode == 2 and "webrank[gpu]" in r.stderr


def test_output_is_atomic(small_graph, tmp_path):
    out = tmp_path / "keep.csv"
    out.write_text("old content\n")
    # a run that fails before writing leaves the user's file untouched
    r = webrank("rank", small_graph, "--alpha", "2", "-o", out)
    assert r.returncode == 2 and out.read_text() == "old content\n"


@pytest.mark.slow
def test_rank_real_dataset_cli(tmp_path):
    p = dataset("soc-Epinions1")
    r = webrank("rank", p, "--tol", "1e-10", "--json", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["n"] == 75879 and doc["converged"]


def test_demo_runs():
    r = webrank("demo", "--device", "cpu", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "web-NotreDame" in r.stdout and "converged" in r.stdout


def test_generate_then_rank_and_compare(tmp_path):
    out = tmp_path / "er.txt"
    r = webrank("generate", "er", "2000", "--out", out, "--seed", "3", "-p", "avg_degree=5")
    assert r.returncode == 0, r.stderr
    a, b = tmp_path / "a.csv", tmp_path / "b.npy"
    assert webrank("rank", out, "--tol", "1e-4", "-o", a, "--device", "cpu").returncode == 0
    assert webrank("rank", out, "--tol", "1e-12", "-o", b, "--device", "cpu").returncode == 0
    r = webrank("compare", a, b, "--json", "--top", "10")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert 0 < doc["l1"] < 1e-3 and doc["kendall_tau"] > 0.9 and doc["top_k"] == 10
    r = webrank("compare", a, a, "--json")
    assert json.loads(r.stdout)["l1"] == 0
    r = webrank("generate", "nope", "10", "--out", out)
    assert r.returncode == 2 and "unknown graph kind" in r.stderr


@pytest.mark.parametrize("name, text, says", [
    ("nan.csv", "node,score\n0,0.5\n1,nan\n2,0.1\n",
     "nan.csv, line 3: score nan of node 1: scores must be finite"),
    ("inf.tsv", "node\tscore\n0\tinf\n1\t0.5\n2\t0.1\n", "inf.tsv, line 2: score inf"),
    ("twice.csv", "node,score\n0,0.5\n1,0.3\n0,0.2\n",
     "twice.csv, line 4: node 0 appears twice (first on line 2)"),
    ("short.json", '{"node": [0, 1, 2], "score": [0.5, 0.5]}',
     "short.json: not a webrank score file: 3 nodes and 2 scores"),
])
def test_compare_refuses_score_files_that_would_give_nan_or_misalign(tmp_path, name, text,
                                                                     says):
    """A score file with a non-finite score, a node twice or lists of unequal length is
    one line naming the file (and line), exit 2: never NaN measures or a traceback."""
    good = tmp_path / "good.csv"
    good.write_text("node,score\n0,0.5\n1,0.3\n2,0.2\n")
    bad = tmp_path / name
    bad.write_text(text)
    for pair in ((bad, good), (good, bad)):
        r = webrank("compare", *pair)
        assert r.returncode == 2 and says in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    np.save(tmp_path / "block.npy", np.ones((2, 2)))
    r = webrank("compare", tmp_path / "block.npy", good)
    assert r.returncode == 2 and "not one vector" in r.stderr


def test_columns_name_a_parquet_files_edge_columns(tmp_path):
    """``--columns SRC,DST[,WEIGHT]``: a Parquet file whose columns are not src/dst ranks
    from the command line as ``webrank.load(..., columns=...)`` ranks it; a weight column
    named there must exist; a malformed value is one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"a": [0, 0, 1, 2], "b": [1, 2, 2, 0],
                             "c": [5.0, 1.0, 1.0, 1.0]}), f)
    r = webrank("rank", f, "--json", "--tol", "1e-12", "--device", "cpu")
    assert r.returncode == 2 and "--columns SRC,DST,WEIGHT" in r.stderr
    for cols, weight in (("a,b,c", "c"), ("a,b", None)):
        r = webrank("rank", f, "--columns", cols, "--json", "--tol", "1e-12",
                    "--device", "cpu", "--top", "3")
        assert r.returncode == 0, r.stderr
        want = webrank_pagerank_top(f, ("a", "b", weight) if weight else ("a", "b"))
        got = [(t["node"], t["score"]) for t in json.loads(r.stdout)["top"]]
        assert [n for n, _ in got] == [n for n, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-12)
    for bad in ("a", "a,,c", "a,b,c,d"):
        r = webrank("rank", f, "--columns", bad)
        assert r.returncode == 2 and "--columns" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = webrank("rank", f, "--columns", "a,b,weight")
    assert r.returncode == 2 and "missing column 'weight'" in r.stderr
    text = tmp_path / "e.txt"  # a text edge list's columns are its fields: not ignored
    text.write_text("0 1\n1 0\n")
    r = webrank("rank", text, "--columns", "a,b")
    assert r.returncode == 2 and "names the columns of Parquet edge tables" in r.stderr


def webrank_pagerank_top(path, columns):
    import webrank as wr

    return wr.pagerank(wr.load(path, columns=columns), device="cpu", tol=1e-12).top(3)


def test_console_script_leaves_without_teardown_after_success(tmp_path, monkeypatch, capsys):
    """`webrank` (the console script) ends a successful command at once, its output
    flushed and its files written; a failing command exits with its code, and a process
    with MPI loaded exits the usual way (MPI finalizes at exit)."""
    import webrank.cli as cli_mod

    p = tmp_path / "g.txt"
    p.write_text("0 1\n1 2\n2 0\n2 1\n")
    out = tmp_path / "s.parquet"
    exits: list[int] = []
    monkeypatch.setattr(cli_mod.os, "_exit", exits.append)
    monkeypatch.setattr(sys, "argv", ["webrank", "rank", str(p), "--device", "cpu",
                                      "--json", "-o", str(out)])
    cli_mod.run()
    assert exits == [0] and out.exists()
    assert json.loads(capsys.readouterr().out)["converged"] is True
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", object())
    cli_mod.run()
    assert exits == [0]  # returned the usual way this time
    monkeypatch.setattr(sys, "argv", ["webrank", "rank", str(tmp_path / "missing.txt")])
    with pytest.raises(SystemExit) as failed:
        cli_mod.run()
    assert failed.value.code != 0 and exits == [0]


@pytest.mark.parametrize("argv, gpu", [
    (["rank", "g.txt"], True),  # --device defaults to auto
    (["rank", "g.txt", "--device", "gpu"], True),
    (["ppr", "g.txt", "-s", "0", "--device=auto"], True),
    (["rank", "g.txt", "--device", "cpu"], False),
    (["rank", "g.txt", "--device=cpu"], False),
    (["rank", "shards/", "--distributed", "--device", "gpu"], False),
    (["convert", "g.txt", "g.npz"], False),
    (["--version"], False),
    ([], False),
])
def test_console_starts_the_cuda_context_only_for_gpu_commands(argv, gpu, monkeypatch):
    """The console script's peek at its words: the CUDA context is started early only
    for a command that will use this process's first GPU."""
    import importlib.util

    from webrank import console

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())  # CuPy "found"
    monkeypatch.delenv("WEBRANK_GPU_WARMUP", raising=False)
    assert console.may_use_gpu(argv) is gpu
    monkeypatch.setenv("WEBRANK_GPU_WARMUP", "0")
    assert console.may_use_gpu(argv) is False
    monkeypatch.delenv("WEBRANK_GPU_WARMUP")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # no CuPy
    assert console.may_use_gpu(argv) is False


def test_early_cuda_context_is_harmless_without_a_driver(monkeypatch):
    """No CUDA driver library (this machine, or a CPU-only container): the thread ends
    quietly and nothing else changes."""
    import ctypes

    from webrank.kernels import cuda_context

    def no_library(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    monkeypatch.setattr(cuda_context, "_started", None)
    cuda_context.start_primary_context()
    cuda_context._started.join(timeout=10)
    assert not cuda_context._started.is_alive()
    started = cuda_context._started
    cuda_context.start_primary_context()  # idempotent
    assert cuda_context._started is started
