"""Running a partitioned PageRank: who am I, which transport, which parts, and the result.

Processes are started by the usual launchers and read their rank from the environment:

=========  ==================================  =========================================
launcher   rank / size / local rank            transport
=========  ==================================  =========================================
mpirun     OMPI_COMM_WORLD_* (Open MPI),       MPI (mpi4py); NCCL on GPUs, bootstrapped
           PMI_RANK/PMI_SIZE (MPICH)           over MPI
srun       SLURM_PROCID, SLURM_NTASKS,         as mpirun (srun --mpi=pmix starts MPI)
           SLURM_LOCALID
torchrun   RANK, WORLD_SIZE, LOCAL_RANK        NCCL on GPUs, bootstrapped and with host
                                               exchanges over torch.distributed (gloo)
=========  ==================================  =========================================

Without a launcher, one process runs every part: on the CPU (the parts share its memory)
or on several GPUs of one host (``gpus=N``: NCCL group calls from one process, no
launcher needed).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from webrank.distributed.comm import Comm, LocalComm
from webrank.distributed.launch import Launch, launch_info
from webrank.distributed.partition import Part, split_graph
from webrank.errors import DistributedError

__all__ = ["DistributedResult", "Launch", "check_gpus_per_host", "launch_info",
           "make_comm", "pagerank_parts"]

#: methods that run on a partitioned graph (the rest need more than the operator's
#: partitioned step and product)
PARTITIONED_METHODS = ("auto", "power", "gmres", "bicgstab", "aitken", "quadratic")


def check_gpus_per_host(local_size: int, visible: int, host: str | None = None) -> None:
    """DistributedError when a launcher put more ranks on a host than it has GPUs (each
    rank runs its part on a GPU of its own)."""
    if visible < 1:
        raise DistributedError(f"no GPU is visible on {host or socket.gethostname()}: run "
                               "the partitioned job on the CPU (--device cpu)")
    if local_size > visible:
        raise DistributedError(f"{local_size} ranks were started on "
                               f"{host or socket.gethostname()} but it has {visible} GPU(s): "
                               f"start at most {visible} rank(s) per host, one per GPU")


def make_comm(device: str, launch: Launch | None = None,
              gpus: int | None = None) -> tuple[Comm, list[int] | None]:
    """The transport for this process, and the GPU of each of its homes (None: CPU).

    ``gpus`` (without a launcher) drives that many GPUs of this host from this process.
    """
    launch = launch_info() if launch is None else launch
    if launch.launcher is None:
        if device == "gpu" and gpus and gpus > 1:
            import cupy as cp

            from webrank.distributed.comm import NCCLGroupComm

            visible = cp.cuda.runtime.getDeviceCount()
            if gpus > visible:
                raise DistributedError(f"gpus={gpus} asked for, but this host has {visible} "
                                       "GPU(s)")
            devices = list(range(int(gpus)))
            return NCCLGroupComm(devices), devices
        if device == "gpu":
            import cupy as cp

            from webrank.distributed.comm import NCCLGroupComm

            return NCCLGroupComm([cp.cuda.Device().id]), [cp.cuda.Device().id]
        return LocalComm(1), None
    if launch.launcher == "torchrun":
        from webrank.distributed.comm import TorchHostComm

        host: Comm = TorchHostComm()
    else:
        from webrank.distributed.comm import MPIComm

        host = MPIComm()
    if device != "gpu":
        return host, None
    import cupy as cp

    from webrank.distributed.comm import NCCLProcessComm

    check_gpus_per_host(launch.local_size, cp.cuda.runtime.getDeviceCount())
    cp.cuda.Device(launch.local_rank).use()
    return NCCLProcessComm(host, launch.local_rank), [launch.local_rank]


@dataclass
class DistributedResult:
    """The scores of this rank's rows, and how the partitioned run went.

    Attributes
    ----------
    scores : ndarray of float64
        Scores of rows ``row_begin:row_end`` (normalised over the whole graph).
    row_begin, row_end, n : int
        This rank's rows, and the nodes of the graph.
    rank, size : int
        This process and the number of processes.
    iterations, converged, residuals, method :
        As :class:`~webrank.result.PageRankResult`.
    top : list of (node, score)
        The graph's top ``k`` (the same on every rank).
    setup_time, elapsed : float
        Seconds to read and place the parts; seconds of the solve.
    info : dict
        Parts, edges per part, transport, per-phase times.
    """

    scores: np.ndarray
    row_begin: int
    row_end: int
    n: int
    rank: int
    size: int
    iterations: int
    converged: bool
    residuals: np.ndarray
    method: str
    top: list[tuple[Any, float]]
    setup_time: float
    elapsed: float
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def residual(self) -> float:
        return float(self.residuals[-1]) if len(self.residuals) else float("nan")

    def summary(self) -> dict[str, Any]:
        """The run's metadata as a JSON-ready dict."""
        return {"method": self.method, "iterations": self.iterations,
                "converged": self.converged, "residual": self.residual, "n": self.n,
                "ranks": self.size, "elapsed_s": self.elapsed, "setup_s": self.setup_time,
                **{k: v for k, v in self.info.items()
                   if k != "labels" and not isinstance(v, np.ndarray)}}


def pagerank_parts(parts: list[Part], bounds: np.ndarray, comm: Comm, *,
                   devices: list[int] | None = None, alpha: float = 0.85,
                   tol: float = 1e-6, max_iter: int = 1000, criterion: str = "l1",
                   dtype: str = "float64", method: str = "auto",
                   personalization: np.ndarray | None = None,
                   dangling: np.ndarray | None = None, callback: Any = None,
                   check_every: int = 16, engine: str = "auto", whole: bool = True
                   ) -> tuple[Any, Any, np.ndarray]:
    """Run a solver on this process's parts: ``(operator, solver output, scores)``, the
    scores normalised: full length and the same on every process, or (``whole=False``)
    this process's rows only (``operator.local_span()``), with no all-gather of the
    result.

    Raises
    ------
    ValueError
        A method that does not run partitioned (see :data:`PARTITIONED_METHODS`).
    """
    from webrank.distributed.operator import PartitionedOperator
    from webrank.solvers import get_solver

    if method not in PARTITIONED_METHODS:
        raise ValueError(f"method {method!r} does not run on a partitioned graph; use one "
                         f"of {', '.join(PARTITIONED_METHODS)}")
    op = PartitionedOperator(parts, bounds, comm, alpha, personalization, dangling, dtype,
                             devices=devices, check_every=check_every, engine=engine)
    # the uniform start on the operator's devices (each GPU its rows), as pagerank()
    # starts: no full-length host vector per process (8.6 GB at a billion nodes)
    x0 = op.full(1.0 / op.n)
    out = get_solver(method)(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                             callback=callback)
    if whole:
        x = np.asarray(out.x, dtype=np.float64)
        total = x.sum()
    else:
        x = op.local_rows(out.x)
        total = comm.sum_host(x.sum())
    scores = x / total if total > 0 else x
    return op, out, scores


def top_of(scores: np.ndarray, k: int, labels: Any = None, *, first: int = 0,
           comm: Comm | None = None) -> list[tuple[Any, float]]:
    """The ``k`` best nodes as (label, score), ties by node index: of ``scores``, the
    rows from ``first`` on; with ``comm``, of every process's rows (each offers its own
    ``k`` best, O(rows), and every process merges the same candidates)."""
    from webrank.orders import best_indices

    best = best_indices(scores, k)
    ids, values = best + int(first), scores[best].astype(np.float64)
    if comm is not None and comm.size > 1:
        offers = comm.allgather_obj((ids, values))
        ids = np.concatenate([i for i, _ in offers])
        values = np.concatenate([v for _, v in offers])
        keep = best_indices(values, k)  # the offers come in node order: ties by node
        ids, values = ids[keep], values[keep]
    names = ids if labels is None else labels.take(ids)  # (a collective where distributed)
    return [(n.item() if hasattr(n, "item") else n, float(v))
            for n, v in zip(names, values, strict=True)]


def distributed_pagerank(source: Any, *, device: str = "cpu", alpha: float = 0.85,
                         tol: float = 1e-6, max_iter: int = 1000, criterion: str = "l1",
                         dtype: str = "float64", method: str = "auto", top: int = 10,
                         comm: Comm | None = None, devices: list[int] | None = None,
                         callback: Any = None, engine: str = "auto",
                         **read_options: Any) -> DistributedResult:
    """PageRank of a graph no single process reads: each rank reads its part of
    ``source`` (a shard directory, a Parquet directory, a list of edge files, or a
    :class:`~webrank.graph.Graph` every rank holds, as in tests), runs the partitioned
    solver with the others, and returns its rows' scores (:class:`DistributedResult`).

    Started by mpirun, srun or torchrun (:func:`launch_info`); without a launcher it is
    one process with one part. ``device="gpu"`` runs each rank's part on its GPU (the
    local rank's), exchanging through NCCL; ``engine`` picks each GPU part's step
    (:func:`~webrank.distributed.placement.part_engine`). See docs/distributed.md.
    """
    from webrank.distributed.inputs import read_part
    from webrank.graph import Graph
    from webrank.result import merged_info

    t0 = time.perf_counter()
    if comm is None:
        comm, devices = make_comm(device)
    labels = None
    if isinstance(source, Graph):
        if source.labels is not None:
            labels = source.labels
        all_parts = split_graph(source, comm.num_parts)
        bounds = np.array([p.row_begin for p in all_parts] + [source.n], dtype=np.int64)
        parts = [all_parts[i] for home in comm.homes for i in home]
    else:
        part, bounds, labels = read_part(source, comm, **read_options)
        parts = [part]
    t1 = time.perf_counter()
    op, out, scores = pagerank_parts(parts, bounds, comm, devices=devices, alpha=alpha,
                                     tol=tol, max_iter=max_iter, criterion=criterion,
                                     dtype=dtype, method=method, callback=callback,
                                     engine=engine, whole=False)
    t2 = time.perf_counter()
    r0, r1 = op.local_span()
    best = top_of(scores, top, labels, first=r0, comm=comm)
    return DistributedResult(
        scores=scores, row_begin=r0, row_end=r1, n=int(bounds[-1]),
        rank=comm.rank, size=comm.size, iterations=out.iterations,
        converged=out.converged, residuals=np.asarray(out.residuals),
        method=out.info.get("method", method), top=best,
        setup_time=t1 - t0, elapsed=t2 - t1,
        info=merged_info(op.info, op.timings, {"labels": labels,
                                               "top_s": time.perf_counter() - t2}))


#: links each GPU of a ``pagerank(graph, gpus=N)`` run needs at least, or fewer GPUs
#: answer sooner: each step's exchange and launches on every GPU cost more than the share
#: of the links they take off the others (the measurements: docs/distributed.md, "One
#: host, several GPUs")
LINKS_PER_GPU = 30_000_000


def gpus_for(graph: Any, gpus: int, dtype: str, *, force: bool = False) -> tuple[int, str]:
    """How many of the ``gpus`` asked for ``webrank.pagerank(graph, gpus=gpus)`` runs on,
    and why: all of them where the graph does not fit one GPU, else as many as give each
    at least :data:`LINKS_PER_GPU` links (one for small graphs). ``force`` keeps
    ``gpus``."""
    import cupy as cp

    from webrank.backends.gpu_engines import pull_working_bytes

    if force:
        return gpus, f"{gpus} GPUs, as forced"
    m = graph.num_edges
    need = pull_working_bytes(graph.n, m, dtype)
    with cp.cuda.Device(0):
        free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    if need > 0.9 * free:
        return gpus, (f"{gpus} GPUs: the graph ({need / 2**30:.1f} GiB with its vectors) "
                      f"does not fit one GPU's free memory ({free / 2**30:.1f} GiB)")
    use = int(min(gpus, max(1, m // LINKS_PER_GPU)))
    if use == gpus:
        return gpus, f"{gpus} GPUs: {m:,} links, at least {LINKS_PER_GPU:,} a GPU"
    where = "one GPU" if use == 1 else f"{use} GPUs"
    return use, (f"{where}: {m:,} links are faster on {where} than on {gpus} (each GPU "
                 f"pays for its exchange below {LINKS_PER_GPU:,} links; force_gpus=True "
                 f"runs on {gpus})")


def _copy_to_their_gpus(parts: list[Part], devices: list[int]) -> None:
    """The parts of a graph held on a GPU (views of its arrays there) copied device to
    device to the GPUs they run on (over NVLink or PCIe, not through the host). Each part
    gets arrays of its own, as a placement renames its sources in place; the weights come
    to the host, where the placement converts them to the run's precision."""
    import cupy as cp

    for part, device in zip(parts, devices, strict=True):
        if part.weights is not None:
            part.weights = part.weights.get()
        for name in ("indptr", "indices", "out_weight"):
            view = getattr(part, name)
            with cp.cuda.Device(device):
                own = cp.empty(view.shape, dtype=view.dtype)
                if view.size:  # (a peer copy where the devices differ)
                    own.data.copy_from_device(view.data, view.nbytes)
            setattr(part, name, own)


def multi_gpu_operator(graph: Any, gpus: int, alpha: float,
                       personalization: np.ndarray | None, dangling: np.ndarray | None,
                       dtype: str, check_every: int = 16, engine: str = "auto") -> Any:
    """The operator of ``webrank.pagerank(graph, device="gpu", gpus=N)``: the graph split
    into N row parts, one per GPU of this host, driven from this process through NCCL
    group calls (:class:`~webrank.distributed.comm.NCCLGroupComm`).

    The placement (parts on the GPUs, the exchange, the communicator) is kept on the
    graph, as one GPU keeps its layouts: later calls on the graph (other alphas,
    personalization vectors, tolerances) start at once. One placement per graph: asking
    for another GPU count or engine replaces it."""
    from webrank.distributed.operator import PartitionedOperator
    from webrank.distributed.placement import Placement

    if isinstance(gpus, bool) or not isinstance(gpus, int | np.integer) or gpus < 1:
        raise ValueError(f"gpus must be a positive integer, not {gpus!r}")
    key = ("placement", int(gpus), engine, np.dtype(dtype).name)

    def place() -> Placement:
        graph.forget(lambda k: isinstance(k, tuple) and k[:1] == ("placement",))
        t0 = time.perf_counter()
        comm, devices = make_comm("gpu", Launch(None, 0, 1, 0, 1), gpus=int(gpus))
        t1 = time.perf_counter()
        parts = split_graph(graph, int(gpus), on_device=True, rebased=False)
        if graph.on_gpu:
            _copy_to_their_gpus(parts, devices)
        bounds = np.array([p.row_begin for p in parts] + [graph.n], dtype=np.int64)
        t2 = time.perf_counter()
        placement = Placement.build(parts, bounds, comm, devices, dtype, engine)
        placement.timings.update(comm_s=t1 - t0, split_s=t2 - t1)
        placement.seconds += t2 - t0
        return placement

    reused = graph.is_cached(key)
    placement = graph.cached(key, place)
    op = PartitionedOperator(None, None, None, alpha, personalization, dangling, dtype,
                             check_every=check_every, placement=placement)
    op.info["placement_reused"] = reused
    return op
