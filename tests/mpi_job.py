"""A partitioned PageRank job for the MPI tests (tests/test_distributed.py), started as
``mpirun -n P python tests/mpi_job.py CONFIG.json``.

CONFIG: ``source`` (a shard directory, an edge-file directory, or ``{"random": [n, m,
seed, weighted]}``), ``method``, ``dtype``, ``tol``, ``out`` (rank 0 saves the full
scores there as .npy, with the iterations beside them as JSON), optionally ``die_at``
(rank 1 exits at that step) or ``hang_at`` (rank 1 stops answering at that step) and
``timeout`` (seconds a collective may take); ``device`` "gpu" runs rank r on GPU r,
exchanging through NCCL (the MPI communicator bootstraps it and carries the heartbeats).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    from webrank.distributed.comm import MPIComm
    from webrank.distributed.run import distributed_pagerank

    timeout = float(cfg.get("timeout", 60))
    comm = MPIComm(timeout=timeout)
    device = cfg.get("device", "cpu")
    devices = None
    if device == "gpu":
        import cupy as cp

        from webrank.distributed.comm import NCCLProcessComm

        cp.cuda.Device(comm.rank).use()
        comm = NCCLProcessComm(comm, comm.rank, timeout=timeout)
        devices = [comm.rank]
    source = cfg["source"]
    if isinstance(source, dict):
        sys.path.insert(0, str(Path(__file__).parent))
        from test_blocking import random_graph

        n, m, seed, weighted = source["random"]
        source = random_graph(np.random.default_rng(seed), n, m, weighted)

    never = float("inf")

    def callback(step: int, residual: float) -> None:
        # at or after the step: on a GPU the callback sees one step per batch of steps
        if comm.rank == 1 and step >= cfg.get("die_at", never):
            os._exit(5)
        if comm.rank == 1 and step >= cfg.get("hang_at", never):
            time.sleep(3600)

    try:
        r = distributed_pagerank(source, comm=comm, device=device, devices=devices,
                                 method=cfg.get("method", "power"),
                                 dtype=cfg.get("dtype", "float64"),
                                 tol=cfg.get("tol", 1e-12), callback=callback)
    except Exception as exc:
        print(f"rank {comm.rank}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        comm.abort(3)
        raise
    pieces = comm.allgather_obj((r.row_begin, r.scores))
    if comm.rank == 0:
        full = np.zeros(r.n)
        for r0, scores in pieces:
            full[r0:r0 + scores.size] = scores
        np.save(cfg["out"], full)
        Path(cfg["out"] + ".json").write_text(json.dumps(
            {"iterations": r.iterations, "residuals": r.residuals.tolist(), "size": r.size,
             "parts": r.info["parts"]}))


if __name__ == "__main__":
    main()
