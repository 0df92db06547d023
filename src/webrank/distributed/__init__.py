"""PageRank beyond one GPU or one process: row-partitioned graphs over NCCL and MPI.

* :mod:`~webrank.distributed.partition` — the graph split 1D by rows, balanced by in-links;
* :mod:`~webrank.distributed.comm` — the transports (one process, MPI, NCCL);
* :mod:`~webrank.distributed.placement` — GPU parts placed once per graph, the exchange;
* :mod:`~webrank.distributed.operator` — the partitioned Google matrix the solvers run on;
* :mod:`~webrank.distributed.inputs` — shards, partitioned edge files, partitioned output;
* :mod:`~webrank.distributed.launch` — this process's rank and its host's share;
* :mod:`~webrank.distributed.run` — the run and its result.

``webrank.pagerank(graph, device="gpu", gpus=2)`` drives several GPUs of one host from one
process; ``mpirun -n 16 webrank rank shards/ --distributed -o ranks/`` runs one process per
part (docs/distributed.md). Nothing is imported here until used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "Part": "webrank.distributed.partition",
    "split_graph": "webrank.distributed.partition",
    "edge_balanced_bounds": "webrank.distributed.partition",
    "PartitionedOperator": "webrank.distributed.operator",
    "Placement": "webrank.distributed.placement",
    "LocalComm": "webrank.distributed.comm",
    "MPIComm": "webrank.distributed.comm",
    "NCCLGroupComm": "webrank.distributed.comm",
    "NCCLProcessComm": "webrank.distributed.comm",
    "write_shards": "webrank.distributed.inputs",
    "read_shard": "webrank.distributed.inputs",
    "write_scores": "webrank.distributed.inputs",
    "distributed_pagerank": "webrank.distributed.run",
    "DistributedResult": "webrank.distributed.run",
    "launch_info": "webrank.distributed.launch",
    "Launch": "webrank.distributed.launch",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'webrank.distributed' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
