"""Communicators: what a partitioned PageRank needs from its transport, and the four that
provide it.

A run has P parts (:mod:`webrank.distributed.partition`); a process holds one or more
**homes** (the host memory of a CPU process, or one GPU), each running one or more parts
and holding full-length vectors. Per step a run needs two collectives:

* ``allgatherv(bufs, bounds)``: after each home wrote the ``bounds[i]:bounds[i + 1]`` slice
  of every part i it runs, every home's buffer holds every slice (variable slice sizes);
* ``allreduce(bufs, op)``: elementwise sum or max of a few numbers over all homes.

Implementations (no home-made transport: MPI through mpi4py, NCCL through CuPy):

================  ===================================  ===============================
communicator      who                                  transport
================  ===================================  ===============================
LocalComm         one process, all parts, one home     none (parts share the buffers)
MPIComm           one CPU process per part             MPI (mpirun, srun)
NCCLGroupComm     one process, one GPU per part        NCCL group calls
NCCLProcessComm   one process per GPU                  NCCL; MPI or torchrun bootstrap
================  ===================================  ===============================

Failures do not hang a run forever: MPI collectives are non-blocking requests waited on
with a deadline (``timeout``, default :data:`DEFAULT_TIMEOUT` seconds), GPU streams are
polled with one; on expiry a heartbeat to rank 0 finds the ranks that stopped answering,
and the error names them (:class:`~webrank.errors.DistributedError`). Launchers report a
rank that exits as well (mpirun: "process exited with non-zero status").
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from webrank.errors import DistributedError

__all__ = [
    "DEFAULT_TIMEOUT",
    "Comm",
    "LocalComm",
    "MPIComm",
    "NCCLGroupComm",
    "NCCLProcessComm",
]

#: seconds a collective may take before the run is declared broken
DEFAULT_TIMEOUT = float(os.environ.get("WEBRANK_COMM_TIMEOUT", 600.0))
_HEARTBEAT_TAG = 7717


class Comm(ABC):
    """The transport of a partitioned run (see the module docstring).

    Attributes
    ----------
    rank, size : int
        This process and the number of processes.
    homes : list of list of int
        For each home of this process, the parts it runs.
    num_parts : int
        Parts of the whole run.
    """

    rank: int = 0
    size: int = 1
    homes: list[list[int]]
    num_parts: int

    @abstractmethod
    def allgatherv(self, bufs: list[Any], bounds: np.ndarray) -> None:
        """Fill every home's buffer with every part's slice (see the module docstring)."""

    @abstractmethod
    def allreduce(self, bufs: list[Any], op: str = "sum") -> None:
        """Elementwise ``op`` ("sum" or "max") over all homes, in place."""

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """A Python object from ``root`` to every process."""
        return obj

    def allgather_obj(self, obj: Any) -> list[Any]:
        """Every process's ``obj``, in rank order."""
        return [obj]

    def allreduce_host(self, buf: np.ndarray, op: str = "sum") -> None:
        """:meth:`allreduce` of one host (NumPy) array, in place, whatever this
        communicator's device buffers are."""
        self.allreduce([buf], op)

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Rows of ``send`` (grouped by destination rank, ``counts[r]`` rows for rank r)
        exchanged: the rows every rank sent here, in rank order (host arrays)."""
        return send

    def heartbeat(self, step: int) -> None:  # noqa: B027 - a no-op in one process
        """Raise :class:`~webrank.errors.DistributedError` naming the ranks that do not
        answer rank 0 within the timeout (a no-op in one process)."""

    def sum_host(self, value: float) -> float:
        """Sum of a host number over all processes."""
        return float(value)

    def close(self) -> None:  # noqa: B027 - most transports hold nothing to release
        """Release the transport's resources."""

    def abort(self, code: int = 1) -> None:  # noqa: B027 - nothing to stop in one process
        """Stop every process of the run now (a failed rank must not leave the others
        waiting in a collective)."""


class LocalComm(Comm):
    """All parts in this process, sharing one home's buffers: nothing to exchange."""

    def __init__(self, num_parts: int = 1) -> None:
        self.num_parts = int(num_parts)
        self.homes = [list(range(self.num_parts))]

    def allgatherv(self, bufs: list[Any], bounds: np.ndarray) -> None:
        return None

    def allreduce(self, bufs: list[Any], op: str = "sum") -> None:
        return None


#: seconds an MPI wait polls without sleeping
SPIN_S = 0.05


def _wait(request: Any, what: str, rank: int, timeout: float, heartbeat: Any) -> None:
    """Wait for an MPI request with a deadline; on expiry, name the silent ranks."""
    start = time.monotonic()
    deadline = start + timeout
    # Open MPI moves a non-blocking collective on only inside MPI calls: Test without
    # pause for a while (a step's collectives take microseconds to milliseconds), then
    # back off so that a long wait does not burn a core.
    while not request.Test():
        now = time.monotonic()
        if now > deadline:
            heartbeat()  # raises naming the ranks that stopped answering, if it can
            raise DistributedError(f"rank {rank}: {what} did not complete within "
                                   f"{timeout:.0f} s; a rank may have died")
        if now - start > SPIN_S:
            time.sleep(min(1e-3, (now - start - SPIN_S) / 10))


class MPIComm(Comm):
    """One part per MPI process (host buffers), through mpi4py.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD``.
    timeout : float
        Seconds a collective may take (:data:`DEFAULT_TIMEOUT`).
    """

    def __init__(self, comm: Any = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.num_parts = self.size
        self.homes = [[self.rank]]
        self.timeout = float(timeout)

    def _mpi_type(self, a: np.ndarray) -> Any:
        return self.MPI._typedict[a.dtype.char]

    def allgatherv(self, bufs: list[Any], bounds: np.ndarray) -> None:
        (buf,) = bufs
        counts = np.diff(bounds).astype(np.int64)
        req = self.comm.Iallgatherv(self.MPI.IN_PLACE, [buf, (counts, bounds[:-1]),
                                                        self._mpi_type(buf)])
        _wait(req, "all-gather", self.rank, self.timeout, lambda: self.heartbeat(-1))

    def allreduce(self, bufs: list[Any], op: str = "sum") -> None:
        (buf,) = bufs
        mpi_op = self.MPI.MAX if op == "max" else self.MPI.SUM
        req = self.comm.Iallreduce(self.MPI.IN_PLACE, buf, op=mpi_op)
        _wait(req, "all-reduce", self.rank, self.timeout, lambda: self.heartbeat(-1))

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return self.comm.bcast(obj, root=root)

    def allgather_obj(self, obj: Any) -> list[Any]:
        return self.comm.allgather(obj)

    def sum_host(self, value: float) -> float:
        buf = np.array([float(value)])
        self.allreduce([buf], "sum")
        return float(buf[0])

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        counts = np.asarray(counts, dtype=np.int64)
        recv_counts = np.empty_like(counts)
        self.comm.Alltoall(counts, recv_counts)
        width = int(np.prod(send.shape[1:])) if send.ndim > 1 else 1
        out = np.empty((int(recv_counts.sum()), *send.shape[1:]), dtype=send.dtype)
        sc, rc = counts * width, recv_counts * width
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
        mtype = self._mpi_type(send)
        req = self.comm.Ialltoallv([np.ascontiguousarray(send), (sc, sd), mtype],
                                   [out, (rc, rd), mtype])
        _wait(req, "all-to-all", self.rank, self.timeout, lambda: self.heartbeat(-1))
        return out

    def heartbeat(self, step: int) -> None:
        """Rank 0 waits for a word from every rank (point to point, with the timeout);
        the ranks that stay silent are named in the error."""
        tag = _HEARTBEAT_TAG
        if self.rank != 0:
            self.comm.Isend(np.array([step], dtype=np.int64), dest=0, tag=tag)
            if step < 0:  # a stuck collective: let rank 0 name the silent ranks and stop
                time.sleep(self.timeout + 5.0)
            return
        bufs = [np.empty(1, dtype=np.int64) for _ in range(self.size)]
        reqs = {r: self.comm.Irecv(bufs[r], source=r, tag=tag) for r in range(1, self.size)}
        deadline = time.monotonic() + self.timeout
        while reqs and time.monotonic() < deadline:
            reqs = {r: q for r, q in reqs.items() if not q.Test()}
            time.sleep(1e-3)
        if reqs:
            silent = ", ".join(str(r) for r in sorted(reqs))
            at = f" at step {step}" if step >= 0 else ""
            raise DistributedError(f"rank(s) {silent} did not answer rank 0 within "
                                   f"{self.timeout:.0f} s{at}; stopping the run")

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)


# -- NCCL (GPUs) ------------------------------------------------------------------------------
def _nccl_type(dtype: np.dtype) -> int:
    from cupy.cuda import nccl

    return {np.dtype(np.float32): nccl.NCCL_FLOAT32, np.dtype(np.float64): nccl.NCCL_FLOAT64,
            np.dtype(np.int64): nccl.NCCL_INT64,
            np.dtype(np.int32): nccl.NCCL_INT32}[np.dtype(dtype)]


def _wait_streams(streams: list[Any], what: str, timeout: float, heartbeat: Any) -> None:
    """Wait for GPU streams with a deadline (a stuck collective never returns)."""
    deadline = time.monotonic() + timeout
    for stream in streams:
        while not stream.done:
            if time.monotonic() > deadline:
                heartbeat()
                raise DistributedError(f"{what} did not complete within {timeout:.0f} s; "
                                       "a rank may have died")
            time.sleep(1e-4)


class _NCCLBase(Comm):
    """Grouped NCCL calls over this process's homes (one GPU each)."""

    comms: list[Any]
    streams: list[Any]
    timeout: float = DEFAULT_TIMEOUT

    def allgatherv(self, bufs: list[Any], bounds: np.ndarray) -> None:
        """One broadcast per part, its owner the root, grouped: an all-gather of
        variable-sized slices (NCCL's all-gather wants equal ones)."""
        from cupy.cuda import nccl

        item = bufs[0].dtype.itemsize
        kind = _nccl_type(bufs[0].dtype)
        nccl.groupStart()
        for part in range(self.num_parts):
            count = int(bounds[part + 1] - bounds[part])
            if count == 0:
                continue
            offset = int(bounds[part]) * item
            for comm, buf, stream in zip(self.comms, bufs, self.streams, strict=True):
                ptr = buf.data.ptr + offset  # in place: the root sends, the others receive
                comm.broadcast(ptr, ptr, count, kind, self._root(part), stream.ptr)
        nccl.groupEnd()

    def allgather_equal(self, bufs: list[Any], count: int) -> None:
        """In-place all-gather of equal slices: NCCL rank r has written
        ``buf[r * count:(r + 1) * count]``; afterwards every buffer holds every slice.
        NCCL's own all-gather (ring or NVLink tree), about twice the bandwidth of the
        per-part broadcasts of :meth:`allgatherv`, for slices padded to one size."""
        from cupy.cuda import nccl

        item = bufs[0].dtype.itemsize
        kind = _nccl_type(bufs[0].dtype)
        nccl.groupStart()
        for comm, buf, stream in zip(self.comms, bufs, self.streams, strict=True):
            base = buf.data.ptr
            comm.allGather(base + comm.rank_id() * count * item, base, count, kind,
                           stream.ptr)
        nccl.groupEnd()

    def allreduce(self, bufs: list[Any], op: str = "sum") -> None:
        from cupy.cuda import nccl

        nccl_op = nccl.NCCL_MAX if op == "max" else nccl.NCCL_SUM
        kind = _nccl_type(bufs[0].dtype)
        nccl.groupStart()
        for comm, buf, stream in zip(self.comms, bufs, self.streams, strict=True):
            comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, kind, nccl_op, stream.ptr)
        nccl.groupEnd()

    def _root(self, part: int) -> int:
        """The NCCL rank that owns ``part`` (one part per NCCL rank)."""
        return part

    def wait(self, what: str) -> None:
        _wait_streams(self.streams, what, self.timeout, lambda: self.heartbeat(-1))

    def close(self) -> None:
        for comm in self.comms:
            comm.destroy()
        self.comms = []


class NCCLGroupComm(_NCCLBase):
    """One process driving several GPUs, one part each, through NCCL group calls.

    Parameters
    ----------
    devices : sequence of int
        CUDA device ids, one per part.
    """

    def __init__(self, devices: list[int]) -> None:
        import cupy as cp
        from cupy.cuda import nccl

        self.devices = [int(d) for d in devices]
        self.num_parts = len(self.devices)
        self.homes = [[i] for i in range(self.num_parts)]
        self.comms = nccl.NcclCommunicator.initAll(self.devices)
        self.streams = []
        for d in self.devices:
            with cp.cuda.Device(d):
                self.streams.append(cp.cuda.Stream(non_blocking=True))


class NCCLProcessComm(_NCCLBase):
    """One GPU per process; the NCCL communicator is bootstrapped over ``host`` (an
    :class:`MPIComm`, or :class:`TorchHostComm` under torchrun), which also carries the
    host-side exchanges (routing edges, objects, heartbeats).

    Parameters
    ----------
    host : Comm
        The process group's host transport.
    device : int
        This process's CUDA device.
    timeout : float
        Seconds a collective may take.
    """

    def __init__(self, host: Comm, device: int, timeout: float = DEFAULT_TIMEOUT) -> None:
        import cupy as cp
        from cupy.cuda import nccl

        self.host = host
        self.rank, self.size = host.rank, host.size
        self.num_parts = self.size
        self.homes = [[self.rank]]
        self.device = int(device)
        self.timeout = float(timeout)
        uid = host.bcast(nccl.get_unique_id() if self.rank == 0 else None)
        with cp.cuda.Device(self.device):
            self.comms = [nccl.NcclCommunicator(self.size, uid, self.rank)]
            self.streams = [cp.cuda.Stream(non_blocking=True)]

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return self.host.bcast(obj, root)

    def allgather_obj(self, obj: Any) -> list[Any]:
        return self.host.allgather_obj(obj)

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return self.host.alltoallv(send, counts)

    def heartbeat(self, step: int) -> None:
        self.host.heartbeat(step)

    def sum_host(self, value: float) -> float:
        return self.host.sum_host(value)

    def allreduce_host(self, buf: np.ndarray, op: str = "sum") -> None:
        self.host.allreduce_host(buf, op)

    def abort(self, code: int = 1) -> None:
        for comm in self.comms:
            comm.abort()
        self.host.abort(code)


class TorchHostComm(Comm):
    """Host-side exchanges through ``torch.distributed`` (gloo), for processes started by
    torchrun (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in the environment)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        import datetime

        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
        self.dist = dist
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        self.num_parts = self.size
        self.homes = [[self.rank]]

    def allgatherv(self, bufs: list[Any], bounds: np.ndarray) -> None:
        (buf,) = bufs
        pieces = self.allgather_obj(buf[bounds[self.rank]:bounds[self.rank + 1]].copy())
        for r, piece in enumerate(pieces):
            buf[bounds[r]:bounds[r + 1]] = piece

    def allreduce(self, bufs: list[Any], op: str = "sum") -> None:
        (buf,) = bufs
        values = np.stack(self.allgather_obj(np.asarray(buf).copy()))
        buf[...] = values.max(axis=0) if op == "max" else values.sum(axis=0)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        box = [obj]
        self.dist.broadcast_object_list(box, src=root)
        return box[0]

    def allgather_obj(self, obj: Any) -> list[Any]:
        out = [None] * self.size
        self.dist.all_gather_object(out, obj)
        return out

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        # through object all-gathers: every rank receives every rank's lists, so this
        # moves P times the data of an all-to-all (fine for routing a few ranks' shares;
        # MPI's alltoallv is the efficient path)
        starts = np.concatenate([[0], np.cumsum(counts)])
        outgoing = [send[starts[r]:starts[r + 1]] for r in range(self.size)]
        lists = self.allgather_obj(outgoing)
        return np.concatenate([lists[r][self.rank] for r in range(self.size)])

    def sum_host(self, value: float) -> float:
        return float(sum(self.allgather_obj(float(value))))

    def heartbeat(self, step: int) -> None:
        return None  # torchrun's agent reports and stops a group whose rank died

    def abort(self, code: int = 1) -> None:
        os._exit(code)  # torchrun's agent then stops the other ranks
