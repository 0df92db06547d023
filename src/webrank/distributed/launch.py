"""How this process was started: its rank among the processes of a launcher (mpirun,
srun, torchrun) and how many of them share its host.

A foundation module (it reads the environment only), so that the CPU kernels can size
their threads by it: processes a launcher starts side by side on one host without
binding them to cores (``mpirun --bind-to none``, torchrun) each see every core of the
host, and each running a thread per core leaves the cores oversubscribed many times
over; OpenMP's waiting threads then spin against each other's work.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Launch", "launch_info"]


@dataclass(frozen=True)
class Launch:
    """How this process was started."""

    launcher: str | None  # "mpi", "slurm", "torchrun", or None
    rank: int
    size: int
    local_rank: int
    local_size: int


def launch_info(env: Mapping[str, str] | None = None) -> Launch:
    """This process's rank, size, local rank and local size from the launcher's variables
    (:class:`Launch`; ``launcher`` None and size 1 when no launcher started it)."""
    env = os.environ if env is None else env

    def get(*names: str) -> int | None:
        for name in names:
            value = env.get(name, "").strip()
            if value.isdigit():
                return int(value)
        return None

    if get("OMPI_COMM_WORLD_SIZE", "PMI_SIZE") is not None:
        kind = "mpi"
        rank, size = get("OMPI_COMM_WORLD_RANK", "PMI_RANK"), get("OMPI_COMM_WORLD_SIZE",
                                                                  "PMI_SIZE")
        local = get("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
        local_size = get("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")
    elif get("SLURM_PROCID") is not None and get("SLURM_NTASKS") is not None:
        kind = "slurm"
        rank, size = get("SLURM_PROCID"), get("SLURM_NTASKS")
        local = get("SLURM_LOCALID")
        local_size = get("SLURM_NTASKS_PER_NODE") or _slurm_tasks_here(env)
    elif get("WORLD_SIZE") is not None and get("RANK") is not None:
        kind = "torchrun"
        rank, size = get("RANK"), get("WORLD_SIZE")
        local, local_size = get("LOCAL_RANK"), get("LOCAL_WORLD_SIZE")
    else:
        return Launch(None, 0, 1, 0, 1)
    return Launch(kind, int(rank or 0), int(size or 1), int(local or 0),
                  int(local_size or size or 1))


def _slurm_tasks_here(env: Mapping[str, str]) -> int | None:
    """This node's task count from ``SLURM_TASKS_PER_NODE`` (e.g. ``"4(x2),3"``: four on
    each of the first two nodes, three on the third) and ``SLURM_NODEID``."""
    spec, node = env.get("SLURM_TASKS_PER_NODE", ""), env.get("SLURM_NODEID", "0")
    if not node.isdigit():
        return None
    counts: list[int] = []
    for entry in filter(None, spec.split(",")):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", entry)
        if match is None:
            return None
        counts += [int(match[1])] * int(match[2] or 1)
    return counts[int(node)] if int(node) < len(counts) else None
