"""GPU backend: CuPy arrays and the fused CUDA step of :mod:`webrank.kernels.cuda`.

The graph goes to the device once (cached on the Graph object for later runs: the CSR
once per device, edge values once per precision, the heavy-row segments once per
threshold, the persistent engine's staged layout once per threshold and grid, the
uniform teleport vector). The operators of a thread queue their work on one stream
(:func:`webrank.backends.gpu_arrays.work_stream`). Power steps are captured as a CUDA
graph and replayed; the host reads the residual history once per replay, one small copy,
instead of synchronising each step.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.arrays import array_module, to_device, to_host
from webrank.backends.base import PageRankOperator, StepsResult
from webrank.backends.fixed_point import FixedPointMatrix
from webrank.backends.gpu_replay import Replay
from webrank.backends.options import CHECK_EVERY, EngineOptions
from webrank.errors import DeviceMemoryError
from webrank.graph import Graph
from webrank.kernels import cuda as kernels
from webrank.kernels.criteria import Q63_ULP, StopTest
from webrank.kernels.cuda_common import ACC_WIDTH

BLOCK = 256
HEAVY_THRESHOLD = 64  # in-links above which a row goes to warps of its own
#: the same for the persistent engine, whose warps stage the other rows' in-links: on an
#: H200, 32 and 64 within 6% of each other on cnr-2000, web-NotreDame and R-MAT 17,
#: 64 faster on the web-like graphs of 2**18-2**19 nodes (4-9% a step), 16 and 128 up
#: to twice as slow (benchmarks/gpu/persistent_sweep.py, persistent_phases.py)
PERSISTENT_HEAVY_THRESHOLD = 64
HEAVY_SEGMENT = 256  # in-links per warp in such a row
#: blocks per multiprocessor of the persistent kernel (at most what fits), of
#: kernels.SOLVE_BLOCK threads: 1024 threads a multiprocessor, as many as its registers
#: allow
PERSISTENT_BLOCKS_PER_SM = 2
# "auto" reorders graphs with at least this many edges (R-MAT 19 and up): smaller ones
# keep their gathered vector in L2 anyway (measured in docs/benchmarks.md)
REORDER_MIN_EDGES = 2**23


def heavy_segments(indptr: Any, threshold: int,
                   head: int | None = None) -> dict[str, Any]:
    """Rows with more than ``threshold`` in-links, cut into HEAVY_SEGMENT-edge pieces
    (``seg_row``/``begin``/``end``, host arrays), their count, and the mean in-degree of
    the others.

    ``head`` (the hybrid method) keeps only the first ``head`` in-links of each such row
    on the GPU; the caller adds the rest of the row's sum itself. ``indptr`` on the host
    is read with NumPy; on the device two kernels find the rows
    (:func:`webrank.backends.gpu_arrays.heavy_rows`) and only those come back.
    """
    if array_module(indptr) is np:
        deg = np.diff(indptr)
        heavy = deg > threshold
        rows = np.flatnonzero(heavy).astype(np.int64)
        light_links = int(deg[~heavy].sum(dtype=np.int64))
        light_rows = int(deg.size - rows.size)
        row_begin = np.asarray(indptr[rows], dtype=np.int64)
        row_deg = np.asarray(deg[rows], dtype=np.int64)
    else:
        rows, row_begin, row_deg, light_links, light_rows = gpu_arrays.heavy_rows(
            indptr, threshold)
    return cut_heavy_rows(rows, row_begin, row_deg, light_links, light_rows, head,
                          indptr.dtype)


def cut_heavy_rows(rows: np.ndarray, row_begin: np.ndarray, row_deg: np.ndarray,
                   light_links: int, light_rows: int, head: int | None,
                   ptr_dtype: Any) -> dict[str, Any]:
    """:func:`heavy_segments` of the rows found (ascending ``rows``, their first in-link
    and in-degree; the in-links and number of the other rows), on the host: the
    heavy rows are few (thousands)."""
    covered = row_deg if head is None else np.minimum(row_deg, head)
    nseg = -(-covered // HEAVY_SEGMENT)
    slot = np.repeat(np.arange(rows.size), nseg)
    first = np.cumsum(nseg) - nseg
    within = np.arange(slot.size) - np.repeat(first, nseg)
    begin = row_begin[slot] + within * HEAVY_SEGMENT
    end = np.minimum(begin + HEAVY_SEGMENT, (row_begin + covered)[slot])
    # the mean of the light rows' in-degrees, as NumPy's mean gives it
    light_mean = float(np.float64(light_links) / light_rows) if light_rows else 1.0
    return {"seg_row": rows[slot], "begin": begin.astype(ptr_dtype),
            "end": end.astype(ptr_dtype), "n_heavy": int(rows.size),
            "light_mean": light_mean}


def edge_values(graph: Graph, dtype: Any) -> Any:
    """The transition values of a weighted graph's in-links on the device, in ``dtype``:
    converted on the host and copied up (a host graph), or made on the device from its
    weights (:func:`gpu_arrays.transition_values`)."""
    if graph.on_gpu:
        return gpu_arrays.transition_values(graph.indices, graph.weights, graph.out_weight,
                                            dtype)
    return to_device(graph.transition_values(), dtype)


def on_device(graph: Graph, key: tuple, nbytes: int, build: Any) -> Any:
    """``build()`` uploaded once per device and ``key``, kept in the Graph's cache.

    Raises DeviceMemoryError (what is needed, what is free) instead of letting CUDA run
    out of memory half way through an upload.
    """
    import cupy as cp

    full = ("gpu", cp.cuda.Device().id, *key)
    if not graph.is_cached(full):
        free, _total = cp.cuda.runtime.memGetInfo()
        free += cp.get_default_memory_pool().free_bytes()
        if nbytes > free:
            raise DeviceMemoryError(nbytes, free, f"{graph!r}")
    return graph.cached(full, build)


#: what a row costs the staged row pass, in in-links (its bounds, x, 1/out and the two
#: writes), when warps are given rows of equal work (:func:`staged_layout`)
STAGED_ROW_COST = 2


def staged_layout(indptr: Any, indices: Any, vals: Any, weighted: bool, threshold: int,
                  nwarps: int) -> dict[str, Any]:
    """What the persistent kernel's staged row pass reads (``wr_pull_rows_staged``), on
    the device: :func:`staged_rows` of the graph's CSR (``vals``: the links' values, or
    one placeholder for an unweighted graph), made on the host (the engine runs graphs
    held in L2) and copied up; where no row is split, the CSR itself stands for the
    light rows' CSR."""
    import cupy as cp

    host = staged_rows(to_host(indptr), indices, vals if weighted else None, threshold,
                       nwarps)
    out = {"warp_rows": cp.asarray(host["warp_rows"])}
    if host["indices"] is None:
        out.update(indptr=indptr, indices=indices, vals=vals)
    else:
        out.update(indptr=cp.asarray(host["indptr"]), indices=cp.asarray(host["indices"]),
                   vals=cp.asarray(host["vals"]) if weighted else vals)
    return out


def staged_rows(indptr: np.ndarray, indices: Any, vals: Any, threshold: int,
                nwarps: int) -> dict[str, Any]:
    """The staged row pass's layout, on the host (``indices`` and ``vals``, the links'
    values or None, on either device: copied down only where a row is split):

    * the in-link CSR of the rows of at most ``threshold`` in-links, the other rows'
      ranges empty (``indptr``, ``indices``, ``vals``: None for an unweighted graph), so
      that any 32 consecutive rows' in-links are contiguous; the split rows keep theirs in
      the full CSR. ``indices`` is None where no row is split (the CSR is its own);
    * ``warp_rows``: the first row of each of ``nwarps`` warps and the end (int64),
      ranges of about equal in-links plus :data:`STAGED_ROW_COST` a row."""
    deg = np.diff(indptr)
    light = deg <= threshold
    if light.all():
        light_ptr = indptr
        out: dict[str, Any] = {"indptr": indptr, "indices": None, "vals": None}
    else:
        keep = np.repeat(light, deg)
        light_ptr = np.zeros_like(indptr)
        np.cumsum(np.where(light, deg, 0), out=light_ptr[1:])
        out = {"indptr": light_ptr, "indices": to_host(indices)[keep],
               "vals": None if vals is None else to_host(vals)[keep]}
    n = deg.size
    cost = np.arange(n + 1, dtype=np.int64) * STAGED_ROW_COST + light_ptr
    targets = np.arange(nwarps + 1, dtype=np.int64) * int(cost[-1]) // nwarps
    warp_rows = np.searchsorted(cost, targets, side="left").astype(np.int64)
    warp_rows[-1] = n
    out["warp_rows"] = warp_rows
    return out


def gather_order(indices: Any, n: int, kind: str) -> tuple[Any, Any]:
    """``(pos, gather_indices)``: node j's slot in the gathered vector and the in-link
    indices relabelled to those slots. ``"out-degree"``: slots by decreasing out-degree
    (ties by id), so the most-read entries share cache lines and stay in L2. Our kernels
    and CuPy's radix sort, one 64-bit key per node (:func:`gpu_arrays.out_degree_order`)."""
    if kind != "out-degree":
        raise ValueError(f"no gather order {kind!r}")
    return gpu_arrays.out_degree_order(indices, n)


def upload_csr(graph: Graph) -> dict[str, Any]:
    """CSR, dangling mask and the 1/out-degree scaling (1 for weighted graphs): the
    arrays copied up as they are (nothing, for a graph already on the device), the two
    per-node ones made there from the out-weights by one kernel
    (:func:`gpu_arrays.node_scale`: ``gather_scale`` and ``out_weight == 0`` in the same
    bits)."""
    upload = gpu_arrays.upload  # through the page-locked staging buffers
    out_weight = upload(graph.out_weight)
    inv_out, dangling = gpu_arrays.node_scale(out_weight, graph.is_weighted)
    return {"indptr": upload(graph.indptr), "indices": upload(graph.indices),
            "dangling": dangling, "inv_out": inv_out}


class OnGPU:
    """The host side of an operator whose arrays are CuPy's: mixed in before its base
    (:class:`GPUOperator`, :class:`~webrank.backends.gpu_batch.GPUBatchOperator`)."""

    xp: Any
    n: int
    #: host memory being made ready for the scores (see :meth:`solving`)
    _landing: gpu_arrays.HostLanding | None = None

    def to_host(self, a: Any) -> np.ndarray:
        """Copy a device array to a NumPy array (waits for the work that writes it)."""
        return self.xp.asnumpy(a)

    def scores_to_host(self, x: Any) -> np.ndarray:
        """The solve's answer copied to the host: into the host memory made ready during
        the solve (:meth:`solving`) where it fits, else as :meth:`to_host`. Only the
        answer lands there: vectors a solver brings to the host on its way do not."""
        landing = self._landing
        if landing is not None and landing.fits(x):
            self._landing = None
            return landing.receive(x)
        return self.to_host(x)

    def solving(self) -> contextlib.AbstractContextManager:
        """Host memory for the solve's n-vector of scores, made ready before the copy
        (:meth:`gpu_arrays.HostLanding.for_vector`): a page-locked array kept from an
        earlier call of this size, or one a worker thread allocates and faults in while
        the solve runs, so that :meth:`scores_to_host` does not fault pages in behind the
        copy."""
        return self._landing_during_solve()

    @contextlib.contextmanager
    def _landing_during_solve(self) -> Iterator[None]:
        if self._landing is None:
            self._landing = gpu_arrays.HostLanding.for_vector(self.n)
        try:
            yield
        except BaseException:
            self._landing, landing = None, self._landing
            if landing is not None:
                landing.discard()
            raise

    def synchronize(self) -> None:
        """Wait for the work queued on the current stream."""
        self.xp.cuda.get_current_stream().synchronize()

    def full(self, value: float) -> Any:
        """An n-vector of float64 ``value`` on the device (a fill kernel of ours, not
        ``cupy.full``, which is compiled on a process's first use)."""
        return gpu_arrays.full(self.n, value)

    def normalized(self, x: Any) -> Any:
        """``x / x.sum()`` where the sum is positive, else a copy of ``x`` (the sum in a
        fixed order, the division by a kernel of ours that reads it on the device)."""
        return gpu_arrays.normalized(x)

    # the solvers' vector algebra (Operator's) by cuBLAS and prebuilt kernels
    def copy(self, x: Any) -> Any:
        return gpu_arrays.copy_vector(x)

    def axpy(self, a: float, x: Any, y: Any) -> Any:
        return gpu_arrays.axpy(a, x, y)

    def scale(self, a: float, x: Any) -> Any:
        return gpu_arrays.scale(a, x)

    def dot(self, x: Any, y: Any) -> float:
        return gpu_arrays.dot(x, y)

    def total(self, x: Any) -> float:
        return gpu_arrays.vector_sums(x)[0]

    def norm(self, x: Any, criterion: str) -> float:
        return gpu_arrays.norm(x, criterion)

    def clipped(self, x: Any) -> Any:
        return gpu_arrays.clip_negative(x)

    def aitken(self, x2: Any, x1: Any, x0: Any) -> Any:
        return gpu_arrays.aitken(x2, x1, x0)

    def project(self, basis: Any, w: Any) -> np.ndarray:
        return gpu_arrays.gemv(basis, w, transpose=False).get()

    def add_combination(self, basis: Any, c: np.ndarray, y: Any, a: float = 1.0) -> Any:
        return gpu_arrays.gemv(basis, self.asarray(c), transpose=True, a=a, y=y)

    def combine_rows(self, q: np.ndarray, basis: Any) -> Any:
        out = self.xp.empty((q.shape[0], basis.shape[1]), dtype=np.float64)
        for i, row in enumerate(np.asarray(q, dtype=np.float64)):  # (few rows)
            gpu_arrays.gemv(basis, self.asarray(row), transpose=True, a=1.0, y=out[i],
                            b=0.0)
        return out


@dataclass(frozen=True)
class DeviceMatrix:
    """The Google matrix of one graph on the current device, as an engine's step object
    reads it (the operator's own arrays, not copies).

    Attributes
    ----------
    graph : Graph
        The graph (the device caches of its CSR, heavy rows and gather orders).
    n : int
        Nodes.
    alpha : float
        Damping factor.
    dtype : numpy.dtype
        Storage precision of the gathered vector.
    csr : dict
        ``indptr``, ``indices`` (the in-link CSR), ``dangling`` and ``inv_out`` on the
        device (:func:`upload_csr`).
    vals : cupy.ndarray
        The in-links' transition values in ``dtype`` (a weighted graph), else one zero.
    weighted : bool
        Whether the graph has weights.
    inv_out : cupy.ndarray
        ``1 / out-degree`` per node (1 for weighted graphs), float64.
    v, d : cupy.ndarray
        Teleport and dangling distributions, float64.
    uniform_v, uniform_d : bool
        Whether ``v`` / ``d`` are uniform (the kernels then read one value).
    sms : int
        The device's multiprocessors.
    """

    graph: Graph
    n: int
    alpha: float
    dtype: np.dtype
    csr: dict[str, Any]
    vals: Any
    weighted: bool
    inv_out: Any
    v: Any
    d: Any
    uniform_v: bool
    uniform_d: bool
    sms: int


class PullStep:
    """The pull engine's power step: one fused CSR kernel over every row
    (:mod:`webrank.kernels.cuda`), the rows of more than ``heavy_threshold`` in-links
    summed before it by warps of their own (Kumar et al.'s imbalance); a
    :class:`~webrank.backends.gpu_replay.ReplayedStep`.

    Made once per operator from its options (``lanes_per_row``, ``heavy_threshold``,
    ``reorder``, ``gpu_links``; see :class:`GPUOperator`); ``heavy_threshold`` here is the
    engine's default where the options leave it unset. Its row split (``group``,
    ``heavy_threshold``, ``grid``) is also what the adaptive and fixed-point steps use;
    the hybrid method queues its two kernels apart (:meth:`launch_heavy`,
    :meth:`launch_fused`) and adds the CPU's sums to ``heavy_sum`` between them.
    """

    def __init__(self, matrix: DeviceMatrix, options: EngineOptions,
                 heavy_threshold: int = HEAVY_THRESHOLD) -> None:
        import cupy as cp

        self.matrix = m = matrix
        graph, n = m.graph, m.n
        gpu_links, reorder = options.gpu_links, options.reorder
        threshold = (heavy_threshold if options.heavy_threshold is None
                     else int(options.heavy_threshold))
        if gpu_links is not None:
            # every row that is cut must go through the per-row sums
            threshold = min(threshold, int(gpu_links))
        self.heavy_threshold = threshold
        self.heavy = on_device(
            graph, ("heavy", threshold, gpu_links), 24 * graph.num_edges // HEAVY_SEGMENT,
            lambda: {k: cp.asarray(v) if isinstance(v, np.ndarray) else v
                     for k, v in heavy_segments(graph.indptr, threshold, gpu_links).items()})
        if reorder == "auto":
            reorder = "out-degree" if graph.num_edges >= REORDER_MIN_EDGES else None
        self.reorder = reorder
        indices = m.csr["indices"]
        if reorder is None:
            self.gather_indices = indices
            self.xs_pos = cp.zeros(1, dtype=indices.dtype)
        else:
            self.xs_pos, self.gather_indices = on_device(
                graph, ("reorder", reorder), 4 * graph.num_edges + 4 * n,
                lambda: gather_order(indices, n, reorder))
        self.n_heavy = self.heavy["n_heavy"]
        self.nseg = int(self.heavy["seg_row"].size)
        self.group = (kernels.pick_group(self.heavy["light_mean"] / 16)
                      if options.lanes_per_row is None else int(options.lanes_per_row))
        ip, ix = graph.indptr.dtype.name, graph.indices.dtype.name
        self._kernel = kernels.get_kernel(ip, ix, m.dtype.name, m.weighted, self.group)
        rows_per_block = BLOCK // self.group
        self.grid = int(min(max(1, -(-n // rows_per_block)), m.sms * 16))
        # per-row sums of the split rows (zero again after each step reads them)
        self.heavy_sum = cp.zeros(n if self.n_heavy else 1, dtype=np.float64)
        if self.n_heavy:
            self._heavy_kernel = kernels.get_kernel(ip, ix, m.dtype.name, m.weighted, None)
            self._heavy_grid = int(min(-(-self.nseg // (BLOCK // 32)), m.sms * 16))
        # rows above this many in-links take the heavy path (none: no row does)
        self.threshold = threshold if self.n_heavy else np.iinfo(np.int64).max

    def gather_vector(self, x: Any) -> Any:
        """``x / out_degree`` in the storage dtype and in the gather order (one kernel)."""
        m = self.matrix
        return gpu_arrays.gather_vector(x, m.inv_out, m.dtype,
                                        None if self.reorder is None else self.xs_pos,
                                        m.csr["indices"].dtype)

    def begin(self, test: StopTest, chunk: Any) -> None:
        """Zero the split rows' sums and bind the kernels' arguments that stay the same
        through a run (cast and placed): a launch then names the dozen that change."""
        m, h = self.matrix, self.heavy
        self.heavy_sum.fill(0)
        self._heavy_args = kernels.HEAVY_ROWS.bind(
            nseg=self.nseg, seg_row=h["seg_row"], seg_begin=h["begin"], seg_end=h["end"],
            indices=self.gather_indices, vals=m.vals, heavy_sum=self.heavy_sum,
            tol_cmp=test.tol_cmp, chunk=chunk)
        self._fused_args = kernels.FUSED_STEP.bind(
            n=m.n, indptr=m.csr["indptr"], indices=self.gather_indices,
            vals=m.vals, v=m.v, d=m.d, uniform_v=m.uniform_v,
            uniform_d=m.uniform_d, inv_out=m.inv_out, alpha=m.alpha,
            inv_n=1.0 / m.n, crit=test.code, tol_cmp=test.tol_cmp, chunk=chunk,
            heavy_threshold=self.threshold, heavy_sum=self.heavy_sum,
            permuted=self.reorder is not None, xs_pos=self.xs_pos)

    def launch(self, *, xs_in: Any, x_in: Any, acc_prev: Any, acc_out: Any, mode: int,
               x_out: Any, xs_out: Any, step0: int, chunk_len: int, max_steps: int) -> None:
        """Queue one fused step: the split rows' warps, then every row."""
        self.launch_heavy(xs_in, acc_prev, step0, chunk_len, max_steps)
        self.launch_fused(xs_in, x_in, acc_prev, acc_out, mode, x_out, xs_out, step0,
                          chunk_len, max_steps)

    def launch_heavy(self, xs_in, row_in, step0, chunk_len, max_steps) -> None:
        """Queue the warps that sum the split rows into ``heavy_sum``."""
        if self.n_heavy:
            self._heavy_kernel((self._heavy_grid,), (BLOCK,), self._heavy_args.pack(
                xs=xs_in, acc_prev=row_in, step0=step0, chunk_len=chunk_len,
                max_steps=max_steps))

    def launch_fused(self, xs_in, x_in, row_in, row_out, mode, x_out, xs_out, step0,
                     chunk_len, max_steps) -> None:
        """Queue the fused step over all rows (split rows read ``heavy_sum``)."""
        self._kernel((self.grid,), (BLOCK,), self._fused_args.pack(
            xs=xs_in, x=x_in, acc_prev=row_in, acc_out=row_out, mode=mode, x_out=x_out,
            xs_out=xs_out, step0=step0, chunk_len=chunk_len, max_steps=max_steps))


class GPUOperator(OnGPU, PageRankOperator):
    """The Google matrix on an NVIDIA GPU (see :class:`~webrank.backends.base.PageRankOperator`):
    what every engine that holds the CSR on the device shares.

    The device copy of the graph and the vectors (:attr:`matrix`), the generic products,
    the adaptive and fixed-point steps (over a :class:`PullStep`'s row split:
    :meth:`pull_step`), and :meth:`power_steps`: the engine's step object
    (:meth:`_power_step`, a :class:`~webrank.backends.gpu_replay.ReplayedStep`) driven
    by the one CUDA-graph loop, :meth:`Replay.run <webrank.backends.gpu_replay.Replay.run>`.
    The engines: :class:`PullGPUOperator`, :class:`PersistentGPUOperator`,
    :class:`~webrank.backends.gpu_blocked.BlockedGPUOperator`,
    :class:`~webrank.backends.hybrid.HybridOperator`.

    Its options (:class:`~webrank.backends.options.EngineOptions`, checked there): every
    engine's ``check_every``, ``graph_steps``, ``use_graph`` (power steps queued between
    two reads of the residual history without graphs; steps captured in one CUDA graph,
    whose replays stop at the exact step count; False: plain launches); the pull step's
    ``lanes_per_row``, ``heavy_threshold`` (rows with more in-links are summed by warps
    of their own: Kumar et al.'s imbalance) and ``reorder``: ``"out-degree"`` stores the
    gathered vector ``xs`` with the nodes most read (the most out-links) at the front,
    so that its hot part stays in L2 (hub clustering; a one-off relabelling of the
    in-link indices on the device, about 6 steps' time, cached on the graph; ``x`` keeps
    the graph's order); ``"auto"``: out-degree order for graphs of REORDER_MIN_EDGES
    edges or more. ``gpu_links`` (the hybrid method's): only the first ``gpu_links``
    in-links of a row are summed on the GPU; the hybrid step adds the rest.
    """

    capabilities = frozenset({"adaptive", "fixed_point"})

    name = "gpu"
    kernel = "cuda"
    engine = "?"

    def __init__(
        self,
        graph: Graph,
        alpha: float,
        personalization: np.ndarray | None,
        dangling: np.ndarray | None,
        dtype: str,
        options: EngineOptions,
    ) -> None:
        import cupy as cp

        super().__init__(graph, alpha, personalization, dangling, dtype)
        self.xp = cp
        self._stream = gpu_arrays.work_stream()
        self.replay = Replay(
            stream=self._stream, graph_steps=options.graph_steps, use_graph=options.use_graph,
            check_every=CHECK_EVERY if options.check_every is None else options.check_every)
        n = self.n
        # the CSR plus this operator's working vectors (x, xs, v, d, sums: ~6 n doubles)
        work = n * (8 * 6 + 2 * self.dtype.itemsize)
        csr_bytes = 0 if graph.on_gpu else graph.indptr.nbytes + graph.indices.nbytes
        self._g = on_device(graph, ("csr",), csr_bytes + 17 * n + work,
                             lambda: upload_csr(graph))
        self._weighted = graph.weights is not None
        self._vals = cp.zeros(1, dtype=self.dtype) if not self._weighted else on_device(
            graph, ("vals", self.dtype.name), graph.num_edges * self.dtype.itemsize,
            lambda: edge_values(graph, self.dtype))
        self._inv_out = self._g["inv_out"]
        # the uniform teleport vector: one per graph and device, read only
        self._v = (on_device(graph, ("uniform",), 8 * n, lambda: gpu_arrays.full(n, 1.0 / n))
                   if personalization is None else cp.asarray(personalization))
        self._d = self._v if dangling is None else cp.asarray(dangling)
        self._sms = gpu_arrays.device_attribute("MultiProcessorCount")
        #: the Google matrix as the engines' step objects read it
        self.matrix = DeviceMatrix(
            graph=graph, n=n, alpha=self.alpha, dtype=self.dtype, csr=self._g,
            vals=self._vals, weighted=self._weighted, inv_out=self._inv_out, v=self._v,
            d=self._d, uniform_v=self.uniform_v, uniform_d=self.uniform_d, sms=self._sms)
        #: what the engine did, merged into the result's ``info``
        self.info: dict[str, Any] = {"engine": self.engine}
        self._pull: PullStep | None = None

    #: whether a call may keep this operator on its graph for the next call with the same
    #: parameters (:func:`webrank.backends.gpu_engines.kept_operator`)
    keep_between_calls = False

    def detach(self) -> None:
        """Drop this operator's references to its graph, to be kept on the graph between
        calls: a reference back from the graph's cache would hold the graph, and its
        device memory, until a full garbage collection."""
        self._bind_graph(None)

    def attach(self, graph: Graph) -> None:
        """Take this operator, kept on ``graph``, for a call: the graph back, and the
        calling thread's stream (another thread's call may have made it)."""
        self._bind_graph(graph)
        stream = gpu_arrays.work_stream()
        if stream is not self._stream:
            self._stream = stream
            self.replay = dataclasses.replace(self.replay, stream=stream)

    def _bind_graph(self, graph: Graph | None) -> None:
        self.graph = graph
        self.matrix = dataclasses.replace(self.matrix, graph=graph)
        if self._pull is not None:
            self._pull.matrix = self.matrix

    def pull_step(self) -> PullStep:
        """The pull step whose row split the adaptive and fixed-point steps use: the
        engine's own, else one with the default tuning in the graph's order, made on
        first use."""
        if self._pull is None:
            self._pull = PullStep(self.matrix, EngineOptions(reorder=None))
        return self._pull

    def _power_step(self) -> Any:
        """The engine's :class:`~webrank.backends.gpu_replay.ReplayedStep` (made by
        :meth:`prepare_steps` where it needs a layout)."""
        raise NotImplementedError(f"the {self.engine} engine has no replayed step")

    # -- operator primitives ----------------------------------------------------------
    def teleport(self) -> Any:
        return self._v

    def dangling_dist(self) -> Any:
        return self._d

    def dangling_mass(self, x: Any) -> float:
        return gpu_arrays.vector_sums(x, self._g["dangling"])[2]

    def _host_indptr(self) -> np.ndarray:
        """The row pointers on the host (kept: the adaptive steps split rows by them)."""
        if not hasattr(self, "_indptr_host"):
            self._indptr_host = to_host(self.graph.indptr)
        return self._indptr_host

    def _host_dangling(self) -> np.ndarray:
        """The dangling mask on the host (kept)."""
        if not hasattr(self, "_dangling_host"):
            self._dangling_host = self.to_host(self._g["dangling"])
        return self._dangling_host

    def _start_history(self, x: Any, row: Any) -> None:
        """Row 0 of a step history: ``(inf, dangling mass, mass, L1 norm)`` of ``x``,
        written on the device (no host synchronisation)."""
        gpu_arrays.write_history_start(x, self._g["dangling"], row)

    def propagate(self, x: Any) -> Any:
        return gpu_arrays.google_product(
            self._g["indptr"], self._g["indices"], self._vals if self._weighted else None,
            x, self._inv_out, 1.0, 0.0, self._v, 0.0, self._v)

    def matvec(self, x: Any) -> Any:
        """``G x`` by one kernel (the product and both rank-one terms); the sums it needs
        by one more."""
        self.matvecs += 1
        mass, _, dm = gpu_arrays.vector_sums(x, self._g["dangling"])
        return gpu_arrays.google_product(
            self._g["indptr"], self._g["indices"], self._vals if self._weighted else None,
            x, self._inv_out, self.alpha, self.alpha * dm, self._d,
            (1.0 - self.alpha) * mass, self._v)

    # -- the power steps ---------------------------------------------------------------
    def power_steps(
        self, x: Any, *, tol: float, max_steps: int, criterion: str, callback: Any = None
    ) -> StepsResult:
        if max_steps < 1:
            return self.no_steps(x)
        test = StopTest.of(criterion, tol)
        self.prepare_steps()
        step = self._power_step()
        with self._stream:
            out = self.replay.run(step, gpu_arrays.copy_vector(x), test=test,
                                  max_steps=max_steps, delta_steps=self.delta_steps,
                                  start_history=self._start_history, callback=callback)
        self.matvecs += out.residuals.size
        return out

    # -- adaptive and fixed-point steps (see PageRankOperator.adaptive_steps/fixed_steps)
    def adaptive_steps(
        self, x: Any, rows: Any, calm: Any, *, steps: int, theta: float, tol: float,
        criterion: str,
    ) -> StepsResult:
        from webrank.kernels import cuda_adaptive

        cp = self.xp
        if self.dtype != np.float64:
            raise ValueError("adaptive steps gather float64 (dtype='float64')")
        test = StopTest.of(criterion, tol)
        pull = self.pull_step()
        g = self._g
        ip, ix = g["indptr"].dtype.name, g["indices"].dtype.name
        sms = gpu_arrays.device_attribute("MultiProcessorCount")
        # the rows split by in-degree on the host (CuPy's masks would compile kernels)
        rows = np.asarray(self.to_host(rows), dtype=np.int64)
        indptr = self._host_indptr()
        heavy = (indptr[rows + 1] - indptr[rows]) > pull.heavy_threshold
        heavy_rows, light_rows = cp.asarray(rows[heavy]), cp.asarray(rows[~heavy])
        n_heavy, n_light = int(heavy_rows.size), int(light_rows.size)
        with self._stream:
            # both buffers hold x, so the rows not in `rows` keep their value in either
            x_cur = gpu_arrays.copy_vector(x)
            x_new = gpu_arrays.copy_vector(x_cur)
            xs_cur = gpu_arrays.gather_vector(x_cur, self._inv_out, np.float64)
            xs_new = gpu_arrays.copy_vector(xs_cur)
            # row s: (residual, dangling mass of x_{s-1}, change of it in step s)
            first = np.zeros((steps + 1, 3))
            first[0, :2] = np.inf, gpu_arrays.vector_sums(x_cur, g["dangling"])[2]
            acc = cp.asarray(first)
            light_kernel = cuda_adaptive.get_kernel(ip, ix, self._weighted, pull.group)
            block_kernel = cuda_adaptive.get_kernel(ip, ix, self._weighted, None)
            light_grid = int(min(max(1, -(-n_light // (BLOCK // pull.group))), sms * 16))
            heavy_grid = int(min(max(1, n_heavy), sms * 8))
            bufs = ((x_cur, xs_cur), (x_new, xs_new))
            # what stays the same through the call, bound once: a step names six arguments
            run = dict(n=self.n, indptr=g["indptr"], indices=g["indices"], vals=self._vals,
                       v=self._v, d=self._d, uniform_v=self.uniform_v,
                       uniform_d=self.uniform_d, inv_out=self._inv_out, alpha=self.alpha,
                       theta=theta, calm=calm, crit=test.code, tol_cmp=test.tol_cmp)
            block_args = cuda_adaptive.BLOCK_ROWS.bind(nrows=n_heavy, rows=heavy_rows, **run)
            light_args = cuda_adaptive.ROWS.bind(nrows=n_light, rows=light_rows, **run)
            for s in range(1, steps + 1):
                (x_in, xs_in), (x_out, xs_out) = bufs[(s - 1) % 2], bufs[s % 2]
                step = dict(xs=xs_in, x=x_in, acc_prev=acc[s - 1], acc_out=acc[s],
                            x_out=x_out, xs_out=xs_out)
                if n_heavy:
                    block_kernel((heavy_grid,), (cuda_adaptive.BLOCK,),
                                 block_args.pack(**step))
                if n_light:
                    light_kernel((light_grid,), (BLOCK,), light_args.pack(**step))
            res = acc[1:].get()[:, 0]  # the one sync of the call (rows: a column needs a kernel)
        below = np.flatnonzero(res < test.tol_cmp)
        done = int(below[0]) + 1 if below.size else steps
        residuals = test.residuals(res[:done])
        self.matvecs += done
        return StepsResult(x=bufs[done % 2][0], residuals=residuals, converged=bool(below.size))

    def fixed_steps(
        self, x: Any, *, matrix: FixedPointMatrix, tol: float, max_steps: int,
        criterion: str, callback: Any = None, calm: Any = None, theta: int = 0,
        patience: int = 0,
    ) -> StepsResult:
        from webrank.kernels import cuda_fixed

        cp = self.xp
        n = self.n
        test = StopTest.of(criterion, tol, Q63_ULP)
        pull = self.pull_step()
        g = self._g
        ip, ix = g["indptr"].dtype.name, g["indices"].dtype.name
        weighted = int(matrix.edge_vals.size) > 0
        # the whole of every heavy row (the hybrid method's operator cuts them short)
        heavy = on_device(
            self.graph, ("heavy", pull.heavy_threshold, None),
            24 * self.graph.num_edges // HEAVY_SEGMENT,
            lambda: {k: cp.asarray(v) if isinstance(v, np.ndarray) else v
                     for k, v in heavy_segments(self.graph.indptr, pull.heavy_threshold,
                                                 None).items()})
        n_heavy, nseg = heavy["n_heavy"], int(heavy["seg_row"].size)
        threshold = pull.heavy_threshold if n_heavy else np.iinfo(np.int64).max
        step_kernel = cuda_fixed.get_kernel("step", ip, ix, weighted, matrix.product,
                                            pull.group)
        sms = gpu_arrays.device_attribute("MultiProcessorCount")
        vals = matrix.edge_vals if weighted else cp.zeros(1, dtype=np.uint64)
        dist_k = matrix.dist if int(matrix.dist.size) else cp.zeros(1, dtype=np.uint64)
        mask = calm if patience > 0 else cp.zeros(1, dtype=np.uint8)
        # the first history entries on the host: residual inf, the exact dangling mass
        x_host = self.to_host(x).astype(np.uint64, copy=False)
        res_first = np.zeros(max_steps + 1)
        res_first[0] = np.inf
        dm_first = np.zeros(max_steps + 1, dtype=np.uint64)
        dm_first[0] = x_host[self._host_dangling()].sum(dtype=np.uint64)
        with self._stream:
            x_cur = cp.asarray(x_host)
            x_new = cp.empty_like(x_cur)
            xs_cur = cp.empty_like(x_cur)
            xs_new = cp.empty_like(x_cur)
            cuda_fixed.get_kernel("scale", ip, ix, weighted, matrix.product)(
                (pull.grid,), (BLOCK,),
                cuda_fixed.SCALE.pack(n=n, x=x_cur, node_scale=matrix.node_scale, xs=xs_cur))
            heavy_sum = cp.zeros(n if n_heavy else 1, dtype=np.uint64)
            if n_heavy:
                heavy_kernel = cuda_fixed.get_kernel("heavy", ip, ix, weighted,
                                                     matrix.product)
                heavy_grid = int(min(-(-nseg // (BLOCK // 32)), sms * 16))
            # entry s: residual (ulps) of step s and the dangling mass of x_s (Q1.63)
            res_hist = cp.asarray(res_first)
            dm_hist = cp.asarray(dm_first)
            bufs = ((x_cur, xs_cur), (x_new, xs_new))
            # the Google matrix and the run's constants, bound once
            heavy_args = cuda_fixed.HEAVY.bind(
                nseg=nseg, seg_row=heavy["seg_row"], seg_begin=heavy["begin"],
                seg_end=heavy["end"], indices=g["indices"], vals=vals, heavy_sum=heavy_sum,
                tol_cmp=test.tol_cmp, calm=mask, patience=patience)
            step_args = cuda_fixed.STEP.bind(
                n=n, indptr=g["indptr"], indices=g["indices"], vals=vals,
                node_scale=matrix.node_scale, tele=matrix.tele,
                uniform_t=int(matrix.tele.size) == 1, dist=dist_k,
                uniform_d=int(matrix.dist.size) == 0, alpha_q=matrix.alpha_q, crit=test.code,
                tol_cmp=test.tol_cmp, heavy_threshold=threshold, heavy_sum=heavy_sum, calm=mask,
                theta=theta, patience=patience)
            done, stop = 0, None
            while stop is None and done < max_steps:
                last = min(done + self.replay.check_every, max_steps)
                for s in range(done + 1, last + 1):
                    (x_in, xs_in), (x_out, xs_out) = bufs[(s - 1) % 2], bufs[s % 2]
                    if n_heavy:
                        heavy_kernel((heavy_grid,), (BLOCK,), heavy_args.pack(
                            xs=xs_in, x=x_in, res_prev=res_hist[s - 1 : s]))
                    step_kernel((pull.grid,), (BLOCK,), step_args.pack(
                        xs=xs_in, x=x_in, res_prev=res_hist[s - 1 : s],
                        dm_prev=dm_hist[s - 1 : s], res_out=res_hist[s : s + 1],
                        dm_out=dm_hist[s : s + 1], x_out=x_out, xs_out=xs_out))
                res = cp.asnumpy(res_hist[done + 1 : last + 1])  # one sync per batch
                stop = test.first_below(res, done + 1, callback)
                done = last
            steps = stop if stop is not None else done
            residuals = cp.asnumpy(res_hist[1 : steps + 1])
        residuals = test.residuals(residuals)
        self.matvecs += steps
        return StepsResult(x=bufs[steps % 2][0], residuals=residuals,
                           converged=stop is not None)


class PullGPUOperator(GPUOperator):
    """The ``"pull"`` engine: one fused CSR kernel per step (:class:`PullStep`), replayed
    as a CUDA graph. Takes the pull step's options (see :class:`GPUOperator`)."""

    engine = "pull"

    def __init__(self, graph: Graph, alpha: float, personalization: np.ndarray | None,
                 dangling: np.ndarray | None, dtype: str, options: EngineOptions) -> None:
        super().__init__(graph, alpha, personalization, dangling, dtype, options)
        self._pull = PullStep(self.matrix, options)

    def _power_step(self) -> PullStep:
        return self.pull_step()


class PersistentGPUOperator(GPUOperator):
    """The ``"persistent"`` engine: every power step of a solve in one cooperative launch.

    The pull engine's step (the split rows' segments, then the rows), separated by
    grid-wide barriers, with the residual test on the device
    (:mod:`webrank.kernels.cuda`'s ``wr_pull_solve``): one launch and one synchronisation
    per solve, no CUDA-graph capture. Made for graphs that fit in L2, whose steps take
    tens of microseconds. Its row pass stages 32 rows' in-links at a time, each warp
    taking rows of about equal work (:func:`staged_layout`); the first launch copies the
    start vector in and the last normalises the answer. Blocks of
    :data:`~webrank.kernels.cuda.SOLVE_BLOCK` threads. A call may keep this operator on
    the graph for the next call of the same parameters (``keep_between_calls``,
    :func:`~webrank.backends.gpu_engines.kept_operator`). Takes the pull engine's
    ``heavy_threshold`` (default :data:`PERSISTENT_HEAVY_THRESHOLD`) and ``reorder``,
    and ``launch_steps``: steps per launch (default: all of them, so a solve is one
    launch; with a ``callback`` the default is 64, so that progress is reported).
    """

    engine = "persistent"
    # its setup is 5-10% of a small graph's whole warm call
    keep_between_calls = True

    def __init__(self, graph: Graph, alpha: float, personalization: np.ndarray | None,
                 dangling: np.ndarray | None, dtype: str, options: EngineOptions) -> None:
        import cupy as cp

        super().__init__(graph, alpha, personalization, dangling, dtype, options)
        self.launch_steps = options.launch_steps
        self._pull = pull = PullStep(self.matrix, options, PERSISTENT_HEAVY_THRESHOLD)
        self.info["heavy_threshold"] = pull.heavy_threshold
        g = self.graph
        ip, ix = g.indptr.dtype.name, g.indices.dtype.name
        self._solve = kernels.get_solve_kernel(ip, ix, self.dtype.name, self._weighted)
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            self._solve.kernel.ptr, kernels.SOLVE_BLOCK, 0)
        # fewer blocks than fit: a grid-wide barrier costs about one atomic per block
        self._solve_grid = int(max(1, min(per_sm, PERSISTENT_BLOCKS_PER_SM)) * self._sms)
        self.info["persistent_grid"] = self._solve_grid
        self._nwarps = self._solve_grid * (kernels.SOLVE_BLOCK // 32)
        self._partials = cp.empty(self._solve_grid)  # the normalising sum, by block
        self._start: Any = None  # the uniform start (start_vector)
        threshold = pull.threshold
        light_bytes = 0 if not pull.n_heavy else (
            (g.indptr.itemsize + g.indices.itemsize
             + (self.dtype.itemsize if self._weighted else 0)) * (g.n + g.num_edges))
        self._staged = on_device(
            g, ("staged", threshold, pull.reorder, self.dtype.name if self._weighted
                else None, self._nwarps, STAGED_ROW_COST),
            light_bytes + 8 * (self._nwarps + 1),
            lambda: staged_layout(self._g["indptr"], pull.gather_indices, self._vals,
                                  self._weighted, threshold, self._nwarps))
        h, staged = pull.heavy, self._staged
        # the launch's arguments that stay from call to call, cast once
        self._solve_args = kernels.PULL_SOLVE.bind(
            n=self.n, indptr=self._g["indptr"], indices=pull.gather_indices,
            vals=self._vals, light_indptr=staged["indptr"], light_indices=staged["indices"],
            light_vals=staged["vals"], v=self._v, d=self._d, uniform_v=self.uniform_v,
            uniform_d=self.uniform_d, inv_out=self._inv_out, alpha=self.alpha,
            nseg=pull.nseg, seg_row=h["seg_row"], seg_begin=h["begin"], seg_end=h["end"],
            heavy_threshold=pull.threshold, heavy_sum=pull.heavy_sum,
            permuted=pull.reorder is not None, xs_pos=pull.xs_pos,
            warp_rows=staged["warp_rows"], nwarps=self._nwarps, delta=self.delta_steps,
            partials=self._partials)

    def start_vector(self) -> Any:
        """The uniform start, made once and kept with the operator: its steps only read
        their start (the first launch copies it in)."""
        if self._start is None:
            self._start = self.full(1.0 / self.n)
        return self._start

    def power_steps(self, x: Any, *, tol: float, max_steps: int, criterion: str,
                    callback: Any = None) -> StepsResult:
        cp = self.xp
        if max_steps < 1:
            return self.no_steps(x)
        test = StopTest.of(criterion, tol)
        batch = self.launch_steps or (64 if callback is not None else max_steps)
        with self._stream:
            # the first launch copies x into xa, its gathered values into xsa and its sums
            # into row 0 of hist
            x0 = x if gpu_arrays.is_device_float64(x) else gpu_arrays.copy_vector(x)
            xa, xb = cp.empty(self.n), cp.empty(self.n)
            xsa, xsb = cp.empty(self.n, dtype=self.dtype), cp.empty(self.n, dtype=self.dtype)
            # row s: kernels.SLOTS slots of (residual, dangling mass, mass, L1 norm) after
            # step s, which the kernel adds up; then entry s: step s's residual as the
            # kernel reduced and tested it (one zeroed block for both)
            rows = (max_steps + 1) * kernels.SLOTS * ACC_WIDTH
            block = cp.zeros(rows + max_steps + 1, dtype=np.float64)
            hist, tested = block[:rows], block[rows:]
            # (the split rows' sums, heavy_sum, are zero: each step clears what it read)
            first, stop = 1, None
            kept: list[np.ndarray] = []  # the residuals of each launch, as copied back
            while stop is None and first <= max_steps:
                last = min(first + batch - 1, max_steps)
                self._solve((self._solve_grid,), (kernels.SOLVE_BLOCK,),
                            self._solve_args.pack(
                                x_a=xa, x_b=xb, xs_a=xsa, xs_b=xsb, hist=hist,
                                residuals=tested, s_first=first, s_last=last,
                                crit=test.code, tol_cmp=test.tol_cmp, start=first == 1,
                                x0=x0, last_launch=last == max_steps))
                # the one sync per launch
                kept.append(cp.asnumpy(tested[first:last + 1]))
                stop = test.first_below(kept[-1], first, callback)
                first = last + 1
            steps = stop if stop is not None else max_steps
            residuals = np.concatenate(kept)[:steps]
        self.matvecs += steps
        # the kernel's last pass scaled the answer to sum 1
        return StepsResult(x=(xb if steps % 2 else xa), residuals=test.residuals(residuals),
                           converged=stop is not None, normalized=True)

