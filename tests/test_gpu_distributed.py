"""GPUs beyond one card (GPU tests; those that need two GPUs skip on one): the streamed
engine under a tiny device-memory cap, several GPUs from one process (``gpus=2``), R-MAT
parts generated on the GPUs, one GPU per process under mpirun and torchrun, and the
faults of NCCL runs (a rank killed or stopped, a missing shard, a full disk)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from package_path import WEBRANK_PATH
from test_blocking import random_graph
from test_distributed import _mpirun, mpi_job, run_mpi

import webrank
from webrank.errors import DeviceMemoryError

pytestmark = pytest.mark.gpu


def gpu_count() -> int:
    from webrank.backends import gpu_available

    if not gpu_available():
        return 0
    import cupy as cp

    return cp.cuda.runtime.getDeviceCount()


two_gpus = pytest.mark.skipif(gpu_count() < 2, reason="needs two GPUs")


def reference(g, **kw):
    return webrank.pagerank(g, device="cpu", tol=1e-13, **kw)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stream_engine_under_a_small_memory_cap(rng, weighted, dtype):
    from webrank.backends.gpu_stream import stream_vector_bytes

    g = random_graph(rng, 40000, 400000, weighted)
    cap = stream_vector_bytes(g.n, dtype) + 2 * 8 * (g.num_edges // 6)  # about 6 chunks
    r = webrank.pagerank(g, device="gpu", engine="stream", dtype=dtype, tol=1e-11,
                         engine_options={"device_memory_limit": cap})
    assert r.info["engine"] == "stream" and r.info["chunks"] >= 3
    pull = webrank.pagerank(g, device="gpu", engine="pull", dtype=dtype, tol=1e-11)
    assert abs(r.iterations - pull.iterations) <= 1
    assert np.abs(r.scores - pull.scores).sum() < (1e-12 if dtype == "float64" else 1e-8)
    assert np.abs(r.scores - reference(g).scores).sum() < (1e-9 if dtype == "float64"
                                                           else 1e-6)
    # GMRES's products go through the chunks too
    gm = webrank.pagerank(g, device="gpu", engine="stream", method="gmres", tol=1e-11,
                          dtype=dtype, engine_options={"device_memory_limit": cap})
    # (float32 transition values of a weighted graph bound a product's accuracy)
    assert np.abs(gm.scores - reference(g).scores).sum() < (1e-9 if dtype == "float64"
                                                            else 1e-6)
    # a cap too small for the largest row is refused before any work
    with pytest.raises(DeviceMemoryError, match="largest row"):
        webrank.pagerank(g, device="gpu", engine="stream", engine_options={"chunk_edges": 10})


@pytest.mark.parametrize("engine", ["pull", "blocked"])
def test_partitioned_run_on_one_gpu(rng, engine):
    """One part through the GPU path of webrank.distributed (NCCL with one rank)."""
    from webrank.distributed.run import distributed_pagerank

    g = random_graph(rng, 20000, 200000, weighted=True)
    r = distributed_pagerank(g, device="gpu", tol=1e-12, engine=engine)
    assert r.info["part_engines"] == [engine]
    assert np.abs(r.scores - reference(g, method="power").scores).sum() < 1e-10


def test_device_csr_merges_links_a_slice_at_a_time(rng, monkeypatch):
    """csr_on_device merges equal keys in slices (CuPy's masks stop at 2**31 elements):
    slices far smaller than the graph give SciPy's CSR, duplicates counted across cuts."""
    import cupy as cp
    import scipy.sparse as sp

    import webrank.build_gpu as gb

    n, m = 3000, 40000
    src, dst = rng.integers(0, n, m), rng.integers(0, n // 100, m)  # many duplicates
    ref = sp.csr_matrix((np.ones(m), (dst, src)), shape=(n, n))
    ref.sum_duplicates()
    for piece in (997, 4096, 2**30):
        monkeypatch.setattr(gb, "_COMPACT_SLICE", piece)
        indptr, indices, weights = gb.csr_on_device(cp.asarray(src), cp.asarray(dst), n,
                                                    "sum")
        np.testing.assert_array_equal(cp.asnumpy(indptr), ref.indptr)
        np.testing.assert_array_equal(cp.asnumpy(indices), ref.indices)
        np.testing.assert_array_equal(cp.asnumpy(weights), ref.data)


@two_gpus
@pytest.mark.parametrize("method,engine", [("power", "pull"), ("power", "blocked"),
                                           ("gmres", "auto")])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_gpu_from_one_process(rng, method, engine, dtype):
    """All the GPUs of the host (2 or 4), forced: a graph this small runs on one."""
    gpus = gpu_count()
    g = random_graph(rng, 50000, 600000, weighted=True)
    r = webrank.pagerank(g, device="gpu", gpus=gpus, force_gpus=True, method=method,
                         dtype=dtype, tol=1e-11, engine=engine)
    one = webrank.pagerank(g, device="gpu", engine="pull", method=method, dtype=dtype,
                           tol=1e-11)
    assert r.info["parts"] == gpus and r.device == "gpu"
    if engine != "auto":
        assert r.info["part_engines"] == [engine] * gpus
    assert np.abs(r.scores - one.scores).sum() < (1e-12 if dtype == "float64" else 1e-7)
    with pytest.raises(ValueError, match="does not run on several GPUs"):
        webrank.pagerank(g, device="gpu", gpus=2, method="adaptive")


@two_gpus
@pytest.mark.parametrize("weighted", [False, True])
def test_a_gpu_graph_goes_to_the_other_gpus_device_to_device(rng, weighted):
    """A graph held on a GPU is split there and its parts copied to the GPUs that run
    them: its own arrays are left as they were (a placement renames its parts' sources
    in place), and the scores are one GPU's."""
    gpus = gpu_count()
    host = random_graph(rng, 50000, 600000, weighted=weighted)
    g = host.to_device()
    indices, out_weight = g.indices.get(), g.out_weight.get()
    r = webrank.pagerank(g, device="gpu", gpus=gpus, force_gpus=True, tol=1e-11)
    one = webrank.pagerank(host, device="gpu", engine="pull", tol=1e-11)
    assert r.info["parts"] == gpus and r.info["placement_reused"] is False
    assert np.abs(r.scores - one.scores).sum() < 1e-12
    np.testing.assert_array_equal(g.indices.get(), indices)
    np.testing.assert_array_equal(g.out_weight.get(), out_weight)
    again = webrank.pagerank(g, device="gpu", gpus=gpus, force_gpus=True, tol=1e-11,
                             alpha=0.7)
    assert again.info["placement_reused"] is True
    ref = webrank.pagerank(host, device="gpu", engine="pull", tol=1e-11, alpha=0.7)
    assert np.abs(again.scores - ref.scores).sum() < 1e-12


@two_gpus
def test_placement_is_kept_and_reused(rng):
    """The parts stay on the GPUs between calls: other alphas, personalization and
    tolerances reuse them and agree with one GPU; another GPU count replaces them."""
    g = random_graph(rng, 30000, 300000)
    kw = {"device": "gpu", "force_gpus": True, "tol": 1e-11}
    first = webrank.pagerank(g, gpus=2, **kw)
    assert first.info["placement_reused"] is False
    v = rng.random(g.n)
    for extra in ({"alpha": 0.7}, {"personalization": v}, {"tol": 1e-6}):
        r = webrank.pagerank(g, gpus=2, **{**kw, **extra})
        assert r.info["placement_reused"] is True
        one = webrank.pagerank(g, device="gpu", engine="pull",
                               **{"tol": 1e-11, **extra})
        assert np.abs(r.scores - one.scores).sum() < max(10 * one.tol, 1e-10)
    if gpu_count() > 2:
        r = webrank.pagerank(g, gpus=3, **kw)
        assert r.info["placement_reused"] is False and r.info["parts"] == 3
        assert sum(k[0] == "placement" for k in g._cache if isinstance(k, tuple)) == 1


@two_gpus
def test_update_runs_on_the_gpus_the_previous_run_asked_for(rng):
    """update() after a run on several GPUs places the new graph across them (forced
    here: the graph is small), agrees with a fresh run of the new graph, and keeps the
    new placement on result.graph for the next call; gpus=1 and a graph small enough
    to be faster on one GPU run on one."""
    g = random_graph(rng, 30000, 300000)
    kw = {"device": "gpu", "tol": 1e-11}
    first = webrank.pagerank(g, gpus=2, force_gpus=True, **kw)
    added = [(0, 5), (7, 11), (g.n - 1, 3)]
    r = webrank.update(first, added_edges=added, force_gpus=True)
    assert r.info["parts"] == 2 and r.info["gpus"] == 2 and r.device == "gpu"
    assert r.info["placement_reused"] is False and r.info["verify_steps"] > 0
    fresh = webrank.pagerank(r.graph, device="gpu", engine="pull", tol=1e-11)
    assert np.abs(r.scores - fresh.scores).sum() < 1e-9
    again = webrank.pagerank(r.graph, gpus=2, force_gpus=True, **kw)
    assert again.info["placement_reused"] is True
    small = webrank.update(first, added_edges=added)  # not forced: one GPU is faster
    assert small.info["gpus"] == 1 and small.info["gpus_reason"].startswith("one GPU")
    np.testing.assert_allclose(small.scores, r.scores, rtol=0, atol=1e-9)
    one = webrank.update(first, added_edges=added, gpus=1)
    assert "gpus" not in one.info and "parts" not in one.info


@two_gpus
def test_more_gpus_never_slower_on_a_small_graph(rng):
    """gpus=N on a graph one GPU holds and ranks faster runs on one, and says so."""
    g = random_graph(rng, 20000, 200000)
    r = webrank.pagerank(g, device="gpu", gpus=2, tol=1e-10)
    assert r.info["gpus"] == 1 and r.info["gpus_reason"].startswith("one GPU")
    assert "parts" not in r.info
    one = webrank.pagerank(g, device="gpu", tol=1e-10)
    np.testing.assert_allclose(r.scores, one.scores, rtol=0, atol=1e-15)


@two_gpus
@pytest.mark.parametrize("padded", [True, False])
def test_exchange_sends_only_linked_nodes(rng, monkeypatch, padded):
    """Dangling, isolated and self-linked nodes; the exchange packs the nodes some link
    reads, padded for NCCL's all-gather or unpadded by broadcasts: the same scores."""
    import webrank.distributed.placement as dop

    monkeypatch.setattr(dop, "PAD_LIMIT", 1e9 if padded else 0.0)
    n = 40000
    src = rng.integers(0, n // 3, 400000)  # two thirds of the nodes link nowhere
    dst = rng.integers(0, n, 400000)
    src[:500] = dst[:500]  # self-loops
    g = webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n + 50)  # 50 isolated
    for dtype in ("float64", "float32"):
        r = webrank.pagerank(g, device="gpu", gpus=2, force_gpus=True, tol=1e-12,
                             dtype=dtype)
        assert r.info["exchange"] == ("all-gather" if padded else "broadcasts")
        # (the sources: ids below n / 3, and the 500 self-linked nodes)
        assert r.info["exchanged_values"] <= (2 if padded else 1) * (n // 3 + 500)
        ref = reference(g)
        assert np.abs(r.scores - ref.scores).sum() < (1e-10 if dtype == "float64"
                                                      else 1e-6)


def test_rmat_shards_drawn_and_built_on_the_gpu(tmp_path):
    """`generate rmat --shards --device gpu`'s path: the shares drawn on the GPU, each
    row bucket's CSR built there and its out-degrees counted on the card; the
    shards are the graph of the same shares built in one piece."""
    import cupy as cp
    from test_distributed import _assert_shards_hold, _shares_graph

    from webrank.distributed.generate import write_rmat_shards

    info = write_rmat_shards(13, tmp_path / "s", 3, seed=2, device="gpu", chunk=20000,
                             bucket_links=9000)
    g = _shares_graph(13, 2, 20000, xp=cp)
    assert info["edges"] == g.num_edges
    _assert_shards_hold(tmp_path / "s", 3, g)


@two_gpus
def test_rmat_generated_across_two_gpus():
    import cupy as cp

    from webrank.distributed.comm import NCCLGroupComm
    from webrank.distributed.generate import rmat_parts
    from webrank.distributed.run import pagerank_parts

    parts, bounds, _ = rmat_parts(16, 16, devices=[0, 1], seed=3, chunk=2**18)
    # the same graph on the host, from the parts' rows
    indptr = [np.zeros(1, dtype=np.int64)]
    for p in parts:
        ip = cp.asnumpy(p.indptr).astype(np.int64)
        indptr.append(ip[1:] + indptr[-1][-1])
    g = webrank.Graph(indptr=np.concatenate(indptr),
                      indices=np.concatenate([cp.asnumpy(p.indices) for p in parts]),
                      out_weight=np.concatenate([cp.asnumpy(p.out_weight) for p in parts]))
    np.testing.assert_array_equal(g.out_weight, np.bincount(g.indices, minlength=g.n))
    comm = NCCLGroupComm([0, 1])
    _, _, scores = pagerank_parts(parts, bounds, comm, devices=[0, 1], tol=1e-12)
    assert np.abs(scores - reference(g, method="power").scores).sum() < 1e-10


@two_gpus
@pytest.mark.skipif(_mpirun() is None, reason="mpirun is not installed")
def test_one_gpu_per_process_under_mpirun(tmp_path, rng):
    from webrank.distributed.inputs import write_shards

    g = random_graph(rng, 30000, 300000)
    write_shards(g, tmp_path / "s", 2)
    out = run_mpi(2, [sys.executable, "-m", "webrank", "rank", str(tmp_path / "s"),
                      "--distributed", "--device", "gpu", "--tol", "1e-12", "-o",
                      str(tmp_path / "ranks")])
    assert out.returncode == 0, out.stderr[-2000:]
    import pyarrow.parquet as pq

    t = pq.read_table([str(tmp_path / "ranks" / f"part-{r:05d}.parquet") for r in range(2)])
    scores = np.zeros(g.n)
    scores[t["node"].to_numpy()] = t["score"].to_numpy()
    assert np.abs(scores - reference(g, method="power").scores).sum() < 1e-10
    # more ranks than the host has GPUs are refused, on every rank, in one line
    over = gpu_count() + 1
    write_shards(g, tmp_path / "s3", over)
    out = run_mpi(over, [sys.executable, "-m", "webrank", "rank", str(tmp_path / "s3"),
                         "--distributed", "--device", "gpu"])
    assert out.returncode != 0 and f"{over} ranks were started on" in out.stderr


@two_gpus
@pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun is not installed")
def test_one_gpu_per_process_under_torchrun(tmp_path, rng):
    from webrank.distributed.inputs import write_shards

    g = random_graph(rng, 20000, 200000)
    write_shards(g, tmp_path / "s", 2)
    env = {"PYTHONPATH": WEBRANK_PATH}
    import os

    out = subprocess.run(["torchrun", "--nproc_per_node", "2", "-m", "webrank", "rank",
                          str(tmp_path / "s"), "--distributed", "--device", "gpu", "--tol",
                          "1e-12", "--json"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, **env})
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"converged": true' in out.stdout


nccl_mpi = pytest.mark.skipif(gpu_count() < 2 or _mpirun() is None,
                              reason="needs two GPUs and mpirun")


@nccl_mpi
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nccl_processes_equal_one_process(tmp_path, dtype):
    out, scores, _ = mpi_job(tmp_path, 2, source={"random": [3000, 30000, 7, True]},
                                device="gpu", dtype=dtype, tol=1e-10)
    assert out.returncode == 0, out.stderr[-2000:]
    g = random_graph(np.random.default_rng(7), 3000, 30000, True)
    assert np.abs(scores - reference(g).scores).sum() < (1e-9 if dtype == "float64"
                                                         else 1e-5)


@nccl_mpi
def test_nccl_rank_that_dies_stops_the_run(tmp_path):
    out, _, _ = mpi_job(tmp_path, 2, source={"random": [20000, 200000, 1, False]},
                        device="gpu", die_at=5, tol=1e-14)
    assert out.returncode != 0
    assert "rank 1" in out.stderr or ",1]" in out.stderr, out.stderr[-1500:]
    assert not (tmp_path / "scores.npy").exists()


@nccl_mpi
def test_nccl_rank_that_hangs_is_named_and_the_run_stops(tmp_path):
    # rank 1 stops answering: rank 0's NCCL collective never completes; its stream is
    # polled with the deadline, the heartbeat names rank 1, and the job is aborted
    out, _, _ = mpi_job(tmp_path, 2, source={"random": [20000, 200000, 1, False]},
                        device="gpu", hang_at=5, tol=1e-14, timeout=4)
    assert out.returncode != 0
    assert "rank(s) 1 did not answer rank 0 within 4 s" in out.stderr, out.stderr[-1500:]
    assert not (tmp_path / "scores.npy").exists()


@nccl_mpi
def test_nccl_cli_faults_are_one_line_and_leave_no_output(tmp_path):
    """A missing shard and a full disk (RLIMIT_FSIZE) under ``mpirun -n 2 --device gpu``:
    one line, no traceback, no ``_SUCCESS`` nor parts that look complete."""
    from webrank.distributed.inputs import write_shards

    g = random_graph(np.random.default_rng(4), 20000, 100000)
    d = write_shards(g, tmp_path / "s", 2)
    broken = write_shards(g, tmp_path / "broken", 2)
    (broken / "part-00001-of-00002.npz").unlink()
    out = run_mpi(2, [sys.executable, "-m", "webrank", "rank", str(broken), "--distributed",
                      "--device", "gpu", "-o", str(tmp_path / "r0")])
    assert out.returncode != 0
    assert "webrank: shard part-00001-of-00002.npz is missing" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "r0").exists()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,tcp",
               PYTHONPATH=os.pathsep.join([WEBRANK_PATH,
                                           os.environ.get("PYTHONPATH", "")]))
    limited = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, "
               "(4096, 4096)); os.execv(sys.executable, [sys.executable, '-m', 'webrank', "
               "*sys.argv[1:]])")
    out_dir = tmp_path / "ranks"
    out = subprocess.run([_mpirun(), "-n", "2", sys.executable, "-c", limited, "rank",
                          str(d), "--distributed", "--device", "gpu", "-o", str(out_dir)],
                         capture_output=True, text=True, env=env, timeout=240)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "File too large" in out.stderr, out.stderr[-2000:]
    assert not (out_dir / "_SUCCESS").exists()
