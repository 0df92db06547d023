"""Beyond one GPU, measured: strong and weak scaling over the GPUs of one host, a graph no
single GPU here builds or holds, and out-of-core runs against the host-link floor.

    cd benchmarks/distributed
    python distributed_bench.py env                 # links and bandwidths
    python distributed_bench.py strong 27           # R-MAT 27 on 1 and 2 GPUs
    python distributed_bench.py scaling 22,24,27    # 1/2/4 GPUs via pagerank
    python distributed_bench.py large 29            # generated across the GPUs
    python distributed_bench.py ooc 28 --cap 0.25   # streamed, capped memory
    python distributed_bench.py cli DATA_DIR        # rank --gpus, mpirun
    python distributed_bench.py cpu DATA_DIR        # mpirun -n 2 on the CPU

(on a GPU host: ``bash benchmarks/gpu_host/run.sh scaling`` or ``run.sh distributed``).

Each prints a table and appends a JSON record (machine, GPUs, commit, date, numbers) to
``--out`` (default ``distributed_results.jsonl``). Milliseconds per iteration are
marginal costs (time of k2 steps minus k1 steps, over k2 - k1), float32 gathers, alpha
0.85; times to tol 1e-10 are whole calls (setup excluded for graphs already placed).
NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Published records:
``benchmarks/results/distributed/`` (``h100x4/``, ``h200x2/``, ``cpu_2core/``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# the GPU scripts' shared helpers live beside them in benchmarks/gpu/
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from gpu_graphs import device_graph, sync_all, timed

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
ALPHA, TOL = 0.85, 1e-10


def _marginal(run: Any, k1: int, k2: int, repeats: int = 3) -> float:
    """ms per step from runs of k1 and k2 steps (after a warm-up run)."""
    run(k1)
    _, t1 = timed(lambda: run(k1), repeats)
    _, t2 = timed(lambda: run(k2), repeats)
    return 1e3 * (t2 - t1) / (k2 - k1)


def measure_env() -> dict[str, Any]:
    import cupy as cp
    import cupyx
    from cupy.cuda import nccl

    from webrank.distributed.comm import NCCLGroupComm

    gpus = cp.cuda.runtime.getDeviceCount()
    topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout
    nbytes = 2**30
    host = cupyx.empty_pinned(nbytes // 4, dtype=np.float32)
    host[...] = 1.0
    dev = cp.empty(nbytes // 4, dtype=np.float32)
    _, t_h2d = timed(lambda: dev.set(host), 5)
    _, t_d2h = timed(lambda: dev.get(out=host), 5)
    other = cp.empty_like(dev)
    _, t_d2d = timed(lambda: cp.copyto(other, dev), 5)
    out = {"gpus": gpus, "topology": topo, "nccl": nccl.get_version(),
           "h2d_GBps": nbytes / t_h2d / 1e9, "d2h_GBps": nbytes / t_d2h / 1e9,
           "d2d_copy_TBps": 2 * nbytes / t_d2d / 1e12}
    if gpus >= 2:
        comm = NCCLGroupComm(list(range(gpus)))
        n = 2**28  # 1 GiB of float32: the gathered vector of R-MAT 28
        bufs = []
        for d in range(gpus):
            with cp.cuda.Device(d):
                bufs.append(cp.ones(n, dtype=np.float32))
        bounds = (np.arange(gpus + 1, dtype=np.int64) * n) // gpus
        _, t = timed(lambda: comm.allgatherv(bufs, bounds), 5)
        out["allgather_1GiB_ms"] = 1e3 * t
        out["allgather_busbw_GBps"] = 4 * n * (gpus - 1) / gpus / t / 1e9
        peer = []
        with cp.cuda.Device(1):
            peer = cp.empty(n, dtype=np.float32)
        _, t = timed(lambda: peer.data.copy_from_device(bufs[0].data, 4 * n), 5)
        out["peer_copy_GBps"] = 4 * n / t / 1e9
    return out


def measure_strong(scale: int) -> dict[str, Any]:
    """R-MAT ``scale`` on one GPU (pull and blocked engines, and auto) and on every GPU."""
    import cupy as cp

    import webrank

    gpus = cp.cuda.runtime.getDeviceCount()
    t0 = time.perf_counter()
    g = device_graph("rmat", scale, device=0)
    build_s = time.perf_counter() - t0
    out: dict[str, Any] = {"scale": scale, "n": g.n, "edges": g.num_edges, "build_s": build_s}

    def steps(k: int, **kw: Any) -> Any:
        return webrank.pagerank(g, alpha=ALPHA, tol=1e-300, max_iter=k, device="gpu",
                                dtype="float32", raise_on_nonconvergence=False, **kw)

    for engine in ("pull", "blocked"):
        steps(2, engine=engine)  # layouts and kernels ready
        out[f"1gpu_{engine}_ms"] = _marginal(lambda k, e=engine: steps(k, engine=e), 10, 40)
        r, t = timed(lambda e=engine: webrank.pagerank(
            g, alpha=ALPHA, tol=TOL, device="gpu", dtype="float32", engine=e), 2)
        out[f"1gpu_{engine}_to_tol_ms"] = 1e3 * t
        out["iterations"] = r.iterations
        cp.get_default_memory_pool().free_all_blocks()
    if gpus < 2:
        return out
    host = g.to_host()
    g = None  # frees the device copy (the closures above are done with it)
    for d in range(gpus):
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()
    from webrank.distributed.run import multi_gpu_operator
    from webrank.solvers import get_solver

    x0 = np.full(host.n, 1.0 / host.n)
    for engine in ("blocked", "pull"):  # the step each part runs (part_engine)
        t0 = time.perf_counter()
        op = multi_gpu_operator(host, gpus, ALPHA, None, None, "float32", check_every=64,
                                engine=engine)
        out[f"{gpus}gpu_{engine}_place_s"] = time.perf_counter() - t0

        def run(k: int, tol: float = 1e-300, op: Any = op) -> Any:
            return get_solver("power")(op, x0, tol=tol, max_iter=k, criterion="l1")

        run(4)
        out[f"{gpus}gpu_{engine}_ms"] = _marginal(run, 10, 40)
        r, t = timed(lambda run=run: run(1000, TOL), 2)
        out[f"{gpus}gpu_{engine}_to_tol_ms"] = 1e3 * t
        out[f"{gpus}gpu_iterations"] = r.iterations
        if engine == "blocked":
            # the all-gather alone, as in a step (the gathered vector, float32)
            bufs = []
            for h in op._homes:
                with cp.cuda.Device(h.device):
                    bufs.append(cp.zeros(host.n, dtype=np.float32))
            _, t = timed(lambda op=op, bufs=bufs: op.comm.allgatherv(bufs, op.bounds), 5)
            out[f"{gpus}gpu_allgather_ms"] = 1e3 * t
            del bufs
        del op, run
        for d in range(gpus):
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()
    out[f"{gpus}gpu_ms"] = min(out[f"{gpus}gpu_blocked_ms"], out[f"{gpus}gpu_pull_ms"])
    best1 = min(out["1gpu_pull_ms"], out["1gpu_blocked_ms"])
    out["speedup_vs_best_1gpu"] = best1 / out[f"{gpus}gpu_ms"]
    out["speedup_vs_1gpu_pull"] = out["1gpu_pull_ms"] / out[f"{gpus}gpu_ms"]
    return out


def _host_rmat(scale: int) -> Any:
    """R-MAT ``scale`` built on GPU 0, as a host graph (what a user passes)."""
    import cupy as cp

    g = device_graph("rmat", scale, device=0).to_host()
    cp.get_default_memory_pool().free_all_blocks()
    return g


def _forget_all(g: Any) -> None:
    import cupy as cp

    g.forget(lambda k: True)
    for d in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()


def measure_scaling(scales: list[int], real: str | None = None) -> dict[str, Any]:
    """1, 2, ... every GPU, all timed the same way: ``webrank.pagerank(g, device="gpu",
    gpus=N, force_gpus=True)`` on one host graph, per engine (one GPU's engine, or each
    part's). ``first_s``: the first call (placement included); ``whole_ms``: median of
    three later calls to tol 1e-10 (placement reused); ``step_ms``: marginal cost of a
    step from runs of 10 and 40 steps; ``l1_vs_1gpu``: L1 distance of the scores to one
    GPU's (pull). Then the exchange alone, and a real graph with ``gpus=N`` unforced."""
    import cupy as cp

    import webrank

    visible = cp.cuda.runtime.getDeviceCount()
    counts = [c for c in (1, 2, 4, 8) if c <= visible]
    out: dict[str, Any] = {"gpus_visible": visible}
    for scale in scales:
        g = _host_rmat(scale)
        row: dict[str, Any] = {"n": g.n, "edges": g.num_edges}
        ref = None
        for gpus in counts:
            for engine in ("pull", "blocked"):
                kw: dict[str, Any] = {"device": "gpu", "dtype": "float32",
                                      "engine": engine, "alpha": ALPHA}
                if gpus > 1:
                    kw.update(gpus=gpus, force_gpus=True)
                sync_all()
                t0 = time.perf_counter()
                r = webrank.pagerank(g, tol=TOL, **kw)
                first = time.perf_counter() - t0
                r, whole = timed(lambda g=g, kw=kw: webrank.pagerank(g, tol=TOL, **kw), 3)

                def steps(k: int, g: Any = g, kw: dict[str, Any] = kw) -> Any:
                    return webrank.pagerank(g, tol=1e-300, max_iter=k,
                                            raise_on_nonconvergence=False, **kw)

                cell = {"first_s": first, "whole_ms": 1e3 * whole,
                        "solve_ms": 1e3 * r.elapsed, "setup_ms": 1e3 * r.setup_time,
                        "step_ms": _marginal(steps, 10, 40), "iterations": r.iterations}
                if ref is None:
                    ref = r.scores
                cell["l1_vs_1gpu"] = float(np.abs(r.scores - ref).sum())
                for key in ("exchange", "exchanged_values", "placement_s", "part_engines",
                            "engine", "placement_phases"):
                    if key in r.info:
                        cell[key] = r.info[key]
                row[f"{gpus}gpu_{engine}"] = cell
                print(scale, gpus, engine, json.dumps(cell, default=str), flush=True)
            if gpus > 1:
                op_key = next(k for k in g._cache if isinstance(k, tuple)
                              and k[:2] == ("placement", gpus))
                pl = g._cache[op_key]
                bufs = _full_bufs(pl, pl.exchange.width)
                _, t = timed(lambda pl=pl, bufs=bufs: pl.exchange.move(pl.comm, bufs), 5)
                row[f"{gpus}gpu_exchange_ms"] = 1e3 * t
                full = _full_bufs(pl, g.n)  # the node-ordered all-gather this replaced
                _, t = timed(lambda pl=pl, full=full: pl.comm.allgatherv(full, pl.bounds), 3)
                row[f"{gpus}gpu_unpacked_allgatherv_ms"] = 1e3 * t
                del bufs, full
            _forget_all(g)
        best1 = min(row["1gpu_pull"]["step_ms"], row["1gpu_blocked"]["step_ms"])
        whole1 = min(row["1gpu_pull"]["whole_ms"], row["1gpu_blocked"]["whole_ms"])
        for gpus in counts[1:]:
            step = min(row[f"{gpus}gpu_pull"]["step_ms"], row[f"{gpus}gpu_blocked"]["step_ms"])
            whole = min(row[f"{gpus}gpu_pull"]["whole_ms"],
                        row[f"{gpus}gpu_blocked"]["whole_ms"])
            row[f"{gpus}gpu_step_speedup"] = best1 / step
            row[f"{gpus}gpu_whole_speedup"] = whole1 / whole
        if counts[-1] > 1:  # the same graph held on GPU 0: split there, parts copied over
            gd = g.to_device()
            gpus = counts[-1]
            sync_all()
            t0 = time.perf_counter()
            r = webrank.pagerank(gd, tol=TOL, device="gpu", dtype="float32", gpus=gpus,
                                 force_gpus=True, engine="blocked")
            row[f"{gpus}gpu_from_gpu_graph"] = {
                "first_s": time.perf_counter() - t0, "placement_s": r.info["placement_s"],
                "placement_phases": r.info["placement_phases"],
                "l1_vs_1gpu": float(np.abs(r.scores - ref).sum())}
            print(scale, "from a GPU graph", row[f"{gpus}gpu_from_gpu_graph"], flush=True)
            _forget_all(gd)
            del gd, r
        out[f"rmat{scale}"] = row
        print(scale, {k: v for k, v in row.items() if "speedup" in k or "exchange" in k},
              flush=True)
        del g
    if real:
        g = webrank.load(real)
        res = {}
        for gpus in counts:
            kw = {"device": "gpu", "dtype": "float32", "tol": TOL}
            if gpus > 1:
                kw["gpus"] = gpus
            webrank.pagerank(g, **kw)
            r, t = timed(lambda kw=kw: webrank.pagerank(g, **kw), 5)
            res[f"gpus{gpus}"] = {"whole_ms": 1e3 * t, "ran_on": r.info.get("gpus", gpus),
                                  "reason": r.info.get("gpus_reason")}
        res["ratio_max_vs_1"] = res[f"gpus{counts[-1]}"]["whole_ms"] / res["gpus1"]["whole_ms"]
        out["real"] = {"graph": real, **res}
        print(out["real"], flush=True)
    return out


def _full_bufs(pl: Any, n: int) -> list[Any]:
    """A float32 vector of ``n`` zeros on each GPU of a placement."""
    import cupy as cp

    bufs = []
    for h in pl.homes:
        with cp.cuda.Device(h.device):
            bufs.append(cp.zeros(n, dtype=np.float32))
    return bufs


def measure_large(scale: int) -> dict[str, Any]:
    """R-MAT ``scale`` generated and built across every GPU, then ranked."""
    import cupy as cp

    from webrank.distributed.comm import NCCLGroupComm
    from webrank.distributed.generate import rmat_parts
    from webrank.distributed.operator import PartitionedOperator
    from webrank.solvers import get_solver

    devices = list(range(cp.cuda.runtime.getDeviceCount()))
    t0 = time.perf_counter()
    parts, bounds, timing = rmat_parts(scale, 16, devices=devices, seed=scale)
    build_s = time.perf_counter() - t0
    edges = sum(int(p.indices.size) for p in parts)
    comm = NCCLGroupComm(devices)
    op = PartitionedOperator(parts, bounds, comm, ALPHA, None, None, "float32",
                             devices=devices, check_every=64)
    n = int(bounds[-1])
    x0 = np.full(n, 1.0 / n)

    def run(k: int, tol: float = 1e-300) -> Any:
        return get_solver("power")(op, x0, tol=tol, max_iter=k, criterion="l1")

    run(3)
    ms = _marginal(run, 6, 26, repeats=2)
    r, t = timed(lambda: run(1000, TOL), 1)
    mem = []
    for d in devices:
        with cp.cuda.Device(d):
            free, total = cp.cuda.runtime.memGetInfo()
            mem.append((total - free) / 2**30)
    return {"scale": scale, "n": n, "edges": edges, "gpus": len(devices),
            "generate_route_build_s": build_s, **timing, "ms_per_iteration": ms,
            "to_tol_ms": 1e3 * t, "iterations": r.iterations, "converged": r.converged,
            "edges_per_s_per_gpu": edges / len(devices) / (ms / 1e3),
            "device_GiB_used": mem,
            "part_edges": [int(p.indices.size) for p in parts]}


def _rmat_on_host(scale: int) -> Any:
    """R-MAT ``scale`` built across every GPU (half the memory each) and copied to the
    host as one graph."""
    import cupy as cp

    import webrank
    from webrank.distributed.generate import rmat_parts

    devices = list(range(cp.cuda.runtime.getDeviceCount()))
    parts, _, _ = rmat_parts(scale, 16, devices=devices, seed=scale)
    indptr, indices, out_weight, base = [np.zeros(1, dtype=np.int64)], [], [], 0
    for p in parts:
        with cp.cuda.Device(p.indices.device.id):
            ip = cp.asnumpy(p.indptr).astype(np.int64)
            indptr.append(ip[1:] + base)
            base += int(ip[-1])
            indices.append(cp.asnumpy(p.indices))
            out_weight.append(cp.asnumpy(p.out_weight))
    del parts
    for d in devices:
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()
    return webrank.Graph(indptr=np.concatenate(indptr), indices=np.concatenate(indices),
                         out_weight=np.concatenate(out_weight), name=f"rmat-{scale}")


def measure_ooc(scale: int, cap: float) -> dict[str, Any]:
    """R-MAT ``scale`` streamed from pinned host memory with the device memory capped at
    ``cap`` of the graph's CSR (plus the vectors)."""
    import cupy as cp

    import webrank
    from webrank.backends.gpu_stream import stream_vector_bytes

    t0 = time.perf_counter()
    g = _rmat_on_host(scale)
    cp.get_default_memory_pool().free_all_blocks()
    build_s = time.perf_counter() - t0
    csr = g.indices.nbytes + g.indptr.nbytes
    limit = int(stream_vector_bytes(g.n, "float32") + cap * csr)
    steps = 6
    t1 = time.perf_counter()
    r = webrank.pagerank(g, alpha=ALPHA, tol=1e-300, max_iter=steps, device="gpu",
                         dtype="float32", engine="stream",
                         engine_options={"device_memory_limit": limit},
                         raise_on_nonconvergence=False)
    wall = time.perf_counter() - t1
    env = measure_env()
    step = statistics.median(r.info["step_s"][1:])
    floor = r.info["bytes_streamed_per_step"] / (env["h2d_GBps"] * 1e9)
    return {"scale": scale, "n": g.n, "edges": g.num_edges, "build_and_copy_s": build_s,
            "csr_GiB": csr / 2**30, "device_limit_GiB": limit / 2**30,
            "chunks": r.info["chunks"], "pin_s": r.info["pin_s"], "setup_s": r.setup_time,
            "step_s": step, "steps": r.info["step_s"], "wall_s": wall,
            "h2d_GBps": env["h2d_GBps"], "floor_s": floor, "step_over_floor": step / floor,
            "bytes_per_edge_streamed": r.info["bytes_streamed_per_step"] / g.num_edges}


def measure_cli(data: str) -> dict[str, Any]:
    """`webrank rank --gpus 2`, and `mpirun -n 2 ... --distributed` as a user runs them."""
    cnr = str(Path(data) / "cnr-2000.txt.gz")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    runs = {}
    cmds = {
        "gpus2": [sys.executable, "-m", "webrank", "rank", cnr, "--gpus", "2", "--tol",
                  "1e-10", "--top", "5"],
        "convert": [sys.executable, "-m", "webrank", "convert", cnr, "/tmp/cnr-shards",
                    "--shards", "2"],
        "mpirun": ["mpirun", "-n", "2", sys.executable, "-m", "webrank", "rank",
                   "/tmp/cnr-shards", "--distributed", "--device", "gpu", "--tol", "1e-10",
                   "--top", "5", "-o", "/tmp/cnr-ranks"],
        "torchrun": ["torchrun", "--nproc_per_node", "2", "-m", "webrank", "rank",
                     "/tmp/cnr-shards", "--distributed", "--device", "gpu", "--tol",
                     "1e-10", "--top", "5"],
    }
    for name, cmd in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        runs[name] = {"cmd": " ".join(cmd).replace(sys.executable, "python"),
                      "rc": p.returncode, "s": time.perf_counter() - t0,
                      "stdout": p.stdout[-2500:], "stderr": p.stderr[-1500:]}
    return runs


def measure_cpu(data: str, ranks: int = 2) -> dict[str, Any]:
    """The CPU cluster path on this machine: each shared graph in ``ranks`` shards ranked
    by ``mpirun -n ranks ... --distributed --device cpu``, against one process (the same
    power method, in this process) and the partitioned operator in one process; the
    ranks' Parquet parts are compared with the single-process scores (L1). Medians of
    three runs; a run of two steps gives each process's fixed cost."""
    import tempfile

    import pyarrow.parquet as pq

    import webrank
    from webrank.distributed.comm import LocalComm
    from webrank.distributed.inputs import write_shards
    from webrank.distributed.partition import split_graph
    from webrank.distributed.run import pagerank_parts

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    out: dict[str, Any] = {"ranks": ranks, "cores": os.cpu_count()}
    for name in ("cnr-2000", "web-NotreDame", "soc-Epinions1"):
        g = webrank.load(str(Path(data) / f"{name}.txt.gz"))
        kw = {"alpha": ALPHA, "tol": TOL, "method": "power"}
        webrank.pagerank(g, **kw)  # compiled and warm
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            one = webrank.pagerank(g, **kw)
            times.append(time.perf_counter() - t0)
        parts = split_graph(g, ranks)
        bounds = np.array([p.row_begin for p in parts] + [g.n], dtype=np.int64)
        t0 = time.perf_counter()
        pagerank_parts(parts, bounds, LocalComm(ranks), **kw)
        local_s = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            write_shards(g, f"{tmp}/shards", ranks)
            cmd = ["mpirun", "-n", str(ranks), sys.executable, "-m", "webrank", "rank",
                   f"{tmp}/shards", "--distributed", "--device", "cpu", "--tol", str(TOL),
                   "--method", "power", "--json", "-o", f"{tmp}/ranks"]
            def mpirun(args: list[str]) -> tuple[dict[str, Any], float]:
                t0 = time.perf_counter()
                p = subprocess.run(args, capture_output=True, text=True, env=env,
                                   timeout=600)
                if p.returncode:
                    raise RuntimeError(f"{' '.join(args)} failed: {p.stderr[-2000:]}")
                return json.loads(p.stdout.strip().splitlines()[-1]), \
                    time.perf_counter() - t0

            runs = [mpirun(cmd) for _ in range(3)]
            summary = runs[0][0]
            full_s = statistics.median(r["elapsed_s"] for r, _ in runs)
            wall = statistics.median(w for _, w in runs)
            # two steps: the per-process fixed cost (Numba's cache loaded, threads started)
            two = statistics.median(mpirun(
                [*cmd[:cmd.index("--tol")], "--tol", "1e-300", "--max-iter", "2",
                 "--method", "power", "--json"])[0]["elapsed_s"] for _ in range(3))
            table = pq.read_table(f"{tmp}/ranks")
            nodes = table.column("node").to_numpy()
            if g.labels is not None:  # the parts name nodes by their labels
                order = np.argsort(g.labels)
                nodes = order[np.searchsorted(g.labels[order], nodes)]
            scores = np.zeros(g.n)
            scores[nodes] = table.column("score").to_numpy()
        out[name] = {
            "n": g.n, "edges": g.num_edges, "iterations": one.iterations,
            "one_process_s": statistics.median(times),
            "partitioned_one_process_s": local_s,
            "mpirun_compute_s": full_s, "mpirun_read_s": summary["setup_s"],
            "mpirun_iterations": summary["iterations"], "mpirun_wall_s": wall,
            "mpirun_compute_over_one_process": full_s / statistics.median(times),
            "mpirun_two_steps_s": two,
            "mpirun_ms_per_step": 1e3 * (full_s - two)
            / max(summary["iterations"] - 2, 1),
            "one_process_ms_per_step": 1e3 * statistics.median(times) / one.iterations,
            "l1_vs_one_process": float(np.abs(scores - one.scores).sum()),
            "cmd": " ".join(cmd).replace(sys.executable, "python"),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["env", "strong", "scaling", "large", "ooc", "cli",
                                     "cpu"])
    ap.add_argument("--real", default=None, help="scaling: a real graph file, gpus=N unforced")
    ap.add_argument("arg", nargs="?")
    ap.add_argument("--cap", type=float, default=0.25)
    ap.add_argument("--out", default="distributed_results.jsonl")
    args = ap.parse_args()
    from webrank.bench.env import environment

    if args.what == "env":
        res = measure_env()
    elif args.what == "strong":
        res = measure_strong(int(args.arg))
    elif args.what == "scaling":
        res = measure_scaling([int(x) for x in args.arg.split(",")], args.real)
    elif args.what == "large":
        res = measure_large(int(args.arg))
    elif args.what == "ooc":
        res = measure_ooc(int(args.arg), args.cap)
    elif args.what == "cpu":
        res = measure_cpu(args.arg or ".")
    else:
        res = measure_cli(args.arg or ".")
    doc = {"what": args.what, "arg": args.arg, "environment": environment(), "result": res}
    with open(args.out, "a") as f:
        f.write(json.dumps(doc, default=str) + "\n")
    print(json.dumps(res, indent=1, default=str)[:6000])


if __name__ == "__main__":
    main()
