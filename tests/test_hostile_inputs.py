"""Hostile and odd inputs: refused early, in one line, exit 2, never a traceback, never
an allocation sized by a header, an id or max_iter; interrupts stop the run."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from package_path import WEBRANK_PATH

import webrank
from webrank.errors import GraphFormatError, HostMemoryError

SRC = WEBRANK_PATH


def cli(*args, limit_bytes: int | None = None, timeout: float = 120
        ) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def limit() -> None:
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "webrank", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout,
                          preexec_fn=limit)


def one_line(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for w in words:
        assert w in lines[0], (w, lines[0])


# ------------------------------------------------------------ sizes from headers and ids
def test_mtx_header_declaring_billions_of_nodes(tmp_path):
    p = tmp_path / "big.mtx"
    p.write_text("%%MatrixMarket matrix coordinate pattern general\n"
                 "3000000000 3000000000 2\n1 2\n2 1\n")
    with pytest.raises(HostMemoryError, match="3,000,000,000 declared nodes"):
        webrank.load(p)
    one_line(cli("rank", p, limit_bytes=8 << 30), "memory needed", "declared size")


def test_range_node_ids_with_one_huge_id(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("0 3000000000\n3000000000 0\n")
    with pytest.raises(HostMemoryError, match="--node-ids appear"):
        webrank.load(p, node_ids="range")
    assert webrank.load(p).n == 2  # the ids that occur: two nodes
    one_line(cli("info", p, "--node-ids", "range", limit_bytes=8 << 30), "memory needed")


def test_nothing_is_sized_by_max_iter(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("0 1\n1 2\n2 0\n")
    r = cli("rank", p, "--max-iter", "1000000000", "--device", "cpu", "--json",
            limit_bytes=3 << 30)  # 7.45 GiB were allocated for the residuals before
    assert r.returncode == 0, r.stderr[-2000:]
    res = webrank.pagerank(webrank.load(p), max_iter=10**9, tol=1e-12, device="cpu")
    assert res.iterations < 5


def test_epochs_continue_a_long_run(monkeypatch):
    from webrank import solvers

    monkeypatch.setattr(solvers, "EPOCH_STEPS", 7)  # runs of 7 steps, one after the other
    g = webrank.Graph.from_edges([0, 1, 2, 2, 3], [1, 2, 0, 3, 0])
    ref = webrank.pagerank(g, tol=1e-13, method="power", device="cpu")
    steps: list[int] = []
    got = webrank.pagerank(g, tol=1e-13, method="power", device="cpu",
                           callback=lambda k, r: steps.append(k))
    assert got.iterations == ref.iterations > 7 and steps == list(range(1, got.iterations + 1))
    np.testing.assert_allclose(got.scores, ref.scores, atol=1e-14)
    short = webrank.pagerank(g, tol=1e-13, method="power", device="cpu", max_iter=10,
                             raise_on_nonconvergence=False)
    assert short.iterations == 10 and not short.converged


# --------------------------------------------------------------- refused from the start
def test_binary_files_are_refused_from_their_first_block(tmp_path):
    p = tmp_path / "zeros.txt"
    p.write_bytes(b"\0" * (50 << 20))
    t = time.perf_counter()
    one_line(cli("rank", p), "binary data")
    assert time.perf_counter() - t < 20  # (9 s and more before, reading it all)
    with pytest.raises(GraphFormatError, match="binary data"):
        webrank.load("/dev/zero", format="edgelist")  # a stream without end


def test_a_line_without_end_is_refused(tmp_path):
    p = tmp_path / "long.txt"
    p.write_bytes(b"1" * (3 << 20))
    with pytest.raises(GraphFormatError, match="no line end"):
        webrank.load(p)


def test_a_directory_says_what_it_is(tmp_path):
    one_line(cli("rank", tmp_path), "is a directory, not a graph file")
    (tmp_path / "webrank-shards.json").write_text("{}")
    one_line(cli("rank", tmp_path), "directory of shards", "--distributed")


def test_negative_top_is_refused(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("0 1\n1 0\n")
    one_line(cli("rank", p, "--top", "-5"), "--top")


def test_several_gpus_without_cupy_is_one_line(tmp_path):
    if webrank.gpu_available():
        pytest.skip("a GPU is usable here")
    p = tmp_path / "c.txt"
    p.write_text("0 1\n1 0\n")
    one_line(cli("rank", p, "--gpus", "2"), "GPU")


@pytest.mark.parametrize("defect", ["nan", "zero", "negative", "fractional"])
def test_caches_are_validated(tmp_path, defect):
    g = webrank.Graph.from_edges([0, 1, 2], [1, 2, 0])
    ow = g.out_weight.copy()
    ow[1] = {"nan": np.nan, "zero": 0.0, "negative": -1.0, "fractional": 1.5}[defect]
    if defect == "zero":
        ow[:] = 0.0
    bad = webrank.Graph(indptr=g.indptr, indices=g.indices, out_weight=ow, name=None)
    p = tmp_path / "g.npz"
    webrank.io.save_graph(bad, p)
    with pytest.raises(GraphFormatError, match="corrupt webrank graph cache"):
        webrank.load(p)
    one_line(cli("rank", p), "corrupt webrank graph cache")


def test_truncated_gzip_always_ends_in_one_line(tmp_path):
    # a corrupt stream used to be raised into pyarrow's reader thread, which aborted
    # the process at exit now and then (exit 134, "terminate called ...")
    import gzip

    body = "".join(f"{i}\t{(i * 7919) % 100003}\n" for i in range(300_000)).encode()
    p = tmp_path / "t.txt.gz"
    p.write_bytes(gzip.compress(body)[:400_000])
    for _ in range(6):
        one_line(cli("info", p), "truncated gzip")


def test_ctrl_c_during_the_load_stops_with_130_and_writes_nothing(tmp_path):
    p = tmp_path / "big.txt"
    rng = np.random.default_rng(0)
    with open(p, "w") as f:
        for _ in range(6):
            a = rng.integers(0, 10**6, (500_000, 2))
            f.write("\n".join(f"{x}\t{y}" for x, y in a) + "\n")
    out = tmp_path / "ranks.parquet"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "webrank", "rank", str(p), "-o",
                             str(out), "--device", "cpu"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert not out.exists() and not list(tmp_path.glob(".ranks*"))


@pytest.mark.parametrize("method", ["power", "fixed"])
def test_tol_zero_runs_until_nothing_changes(method):
    from webrank import solvers

    g = webrank.Graph.from_edges([0, 1, 2, 2, 3, 4], [1, 2, 0, 3, 4, 0])
    r = webrank.pagerank(g, tol=0, method=method, device="cpu", max_iter=100_000)
    assert r.converged and r.iterations < 2000
    last_best = int(np.argmin(r.residuals))
    # stopped at an unchanged iterate, or a full stall run after the last improvement
    assert r.residual == 0 or r.iterations - 1 - last_best >= solvers.STALL_STEPS - 1
    assert r.error_bound < 1e-13
    with pytest.raises(ValueError, match="tol=0"):
        webrank.pagerank(g, tol=0, method="gmres")
    assert webrank.pagerank(g, tol=0).method == "power"  # auto
    with pytest.raises(ValueError, match="non-negative"):
        webrank.pagerank(g, tol=-1.0)
