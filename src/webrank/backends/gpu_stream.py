"""The ``"stream"`` GPU engine: graphs larger than the GPU's memory (out of core).

The vectors stay on the device (x twice in float64, the gathered ``xs`` twice, 1/out-degree,
the dangling weights, v, d, the long rows' sums: 64 bytes per node in float32, see
:func:`stream_vector_bytes`); the in-link CSR stays in pinned host memory, cut into row
chunks, and is streamed through two device buffers every step: while the pull kernel
(:mod:`webrank.kernels.cuda`) runs on chunk k, chunk k + 1 is copied in on a second
stream, so that the step costs about ``max(bytes streamed / host-to-device bandwidth,
compute)``. A chunk is the unit of :mod:`webrank.distributed` too (a row part); here they
run one after another on one GPU.

``device_memory_limit`` caps the bytes the engine may hold on the device (so that tests and
benchmarks stream graphs that would fit); without it the engine uses what is free.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.backends.base import PageRankOperator, StepsResult
from webrank.backends.gpu import BLOCK, HEAVY_THRESHOLD, OnGPU, heavy_segments
from webrank.backends.gpu_replay import kept_residuals
from webrank.backends.options import EngineOptions
from webrank.errors import DeviceMemoryError
from webrank.graph import Graph
from webrank.kernels import cuda as kernels
from webrank.kernels.criteria import StopTest

__all__ = ["StreamedGPUOperator", "stream_row_chunks", "stream_vector_bytes"]


def stream_vector_bytes(n: int, dtype: str) -> int:
    """Device bytes of the vectors a streamed run keeps: x and its successor (float64),
    ``xs`` twice, 1/out-degree, the dangling weights, v, d and the split rows' sums."""
    item = np.dtype(dtype).itemsize
    return int(n * (8 * 2 + 2 * item + 8 + 8 + 8 + 8 + 8))


def stream_row_chunks(indptr: np.ndarray, chunk_edges: int) -> np.ndarray:
    """Bounds of consecutive row chunks of at most ``chunk_edges`` links each (a row
    longer than that alone in its chunk), from an int64 row-pointer array: int64,
    ``0 ... n``."""
    n = indptr.size - 1
    bounds = [0]
    while bounds[-1] < n:
        a = bounds[-1]
        b = int(np.searchsorted(indptr, indptr[a] + chunk_edges, side="right")) - 1
        bounds.append(max(min(b, n), a + 1))
    return np.asarray(bounds, dtype=np.int64)


class StreamedGPUOperator(OnGPU, PageRankOperator):
    """The Google matrix on a GPU with the CSR streamed from pinned host memory.

    Its options (:class:`~webrank.backends.options.EngineOptions`):
    ``device_memory_limit``, the bytes this engine may hold on the device (vectors + two
    chunk buffers; default: 90% of the free device memory); ``chunk_edges``, links per
    chunk (default: half of what the limit leaves for the buffers, at most 2**28; at
    least the largest in-degree); ``check_every`` (default 1: a streamed step takes long
    enough that reading the residual every step costs nothing). ``graph_steps`` and
    ``use_graph`` are taken and unused: a streamed step is not a CUDA graph (its copies
    and kernels are queued per chunk).
    """

    name = "gpu"
    kernel = "cuda"
    engine = "stream"

    def __init__(self, graph: Graph, alpha: float, personalization: np.ndarray | None,
                 dangling: np.ndarray | None, dtype: str,
                 options: EngineOptions) -> None:
        import cupy as cp

        if graph.on_gpu:
            raise ValueError("engine='stream' streams a graph from host memory: pass "
                             "graph.to_host()")
        super().__init__(graph, alpha, personalization, dangling, dtype)
        self.xp = cp
        self.check_every = 1 if options.check_every is None else options.check_every
        values = graph.transition_values()
        self._weighted = values is not None
        vec = stream_vector_bytes(graph.n, self.dtype.name)
        per_edge = graph.indices.dtype.itemsize + (self.dtype.itemsize if self._weighted
                                                   else 0)
        deg = np.diff(graph.indptr)
        free, chunk_edges = self._chunk_edges(graph, deg, options, vec, per_edge)
        indptr = graph.indptr.astype(np.int64, copy=False)
        self.chunks = stream_row_chunks(indptr, chunk_edges)
        group = self._pin(graph, deg, indptr, values)
        buf_edges = int(np.diff(indptr[self.chunks]).max(initial=1))
        rows_max = int(np.diff(self.chunks).max())
        try:
            self._device_buffers(graph, personalization, dangling, buf_edges, rows_max)
        except cp.cuda.memory.OutOfMemoryError:
            raise DeviceMemoryError(vec + 2 * buf_edges * per_edge, free, repr(graph)) from None
        self._kernels(graph, group, rows_max)
        streamed = graph.num_edges * per_edge + (graph.n + self.chunks.size) * 4
        self.info = {"engine": "stream", "chunks": int(self.chunks.size - 1),
                     "chunk_edges": chunk_edges, "bytes_streamed_per_step": int(streamed),
                     "device_bytes": int(vec + 2 * buf_edges * per_edge),
                     "pin_s": self.setup_pin_s}

    @staticmethod
    def _chunk_edges(graph: Graph, deg: np.ndarray, options: EngineOptions, vec: int,
                     per_edge: int) -> tuple[int, int]:
        """``(free device bytes, links per chunk)``: the option, or half of what the
        limit leaves beside the vectors (at most 2**28). DeviceMemoryError where the
        limit is past what is free, or two chunks cannot hold the largest row."""
        import cupy as cp

        free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
        limit = (int(0.9 * free) if options.device_memory_limit is None
                 else int(options.device_memory_limit))
        if limit > 0.98 * free:
            raise DeviceMemoryError(limit, free, "device_memory_limit")
        chunk_edges = options.chunk_edges
        if chunk_edges is None:
            chunk_edges = min((limit - vec) // (2 * per_edge) - 2 * graph.n // 1024, 2**28)
        need = int(deg.max(initial=0))
        if int(chunk_edges) < max(need, 1):
            raise DeviceMemoryError(vec + 2 * max(need, 1) * per_edge, limit,
                                    f"{graph!r}: the vectors and two chunks holding the "
                                    f"largest row ({need:,} in-links)")
        return free, int(chunk_edges)

    def _pin(self, graph: Graph, deg: np.ndarray, indptr: np.ndarray,
             values: np.ndarray | None) -> int:
        """The CSR copied into pinned host memory (copies from it run without staging),
        each chunk's row pointers rebased to the chunk, and each chunk's long rows split
        into segments; returns the thread group of the pull kernel's short rows."""
        import cupy as cp

        t0 = time.perf_counter()
        n, m = graph.n, graph.num_edges
        self._h_indices = gpu_arrays.pinned_empty(m, dtype=graph.indices.dtype)
        self._h_indices[...] = graph.indices
        self._h_vals = None
        if values is not None:
            self._h_vals = gpu_arrays.pinned_empty(m, dtype=self.dtype)
            self._h_vals[...] = values
        self._h_indptr = gpu_arrays.pinned_empty(n + self.chunks.size, dtype=np.int32)
        self._ptr_at = np.zeros(self.chunks.size, dtype=np.int64)
        light = deg[deg <= HEAVY_THRESHOLD]
        group = kernels.pick_group((float(light.mean()) if light.size else 1.0) / 16)
        self._chunk_heavy = []
        pos = 0
        for a, b in zip(self.chunks[:-1], self.chunks[1:], strict=True):
            local = (indptr[a:b + 1] - indptr[a]).astype(np.int32)
            self._ptr_at[len(self._chunk_heavy)] = pos
            self._h_indptr[pos:pos + local.size] = local
            pos += local.size
            heavy = heavy_segments(local, HEAVY_THRESHOLD)
            self._chunk_heavy.append({
                "nseg": int(heavy["seg_row"].size),
                "seg_row": cp.asarray(heavy["seg_row"]), "begin": cp.asarray(heavy["begin"]),
                "end": cp.asarray(heavy["end"]),
                "threshold": HEAVY_THRESHOLD if heavy["n_heavy"] else np.iinfo(np.int64).max})
        self.setup_pin_s = time.perf_counter() - t0
        return group

    def _device_buffers(self, graph: Graph, personalization: np.ndarray | None,
                        dangling: np.ndarray | None, buf_edges: int, rows_max: int) -> None:
        """The two chunk buffers and the vectors on the device."""
        import cupy as cp

        self._d_indices = [cp.empty(max(buf_edges, 1), dtype=graph.indices.dtype)
                           for _ in range(2)]
        self._d_vals = [cp.empty(max(buf_edges, 1) if self._weighted else 1,
                                 dtype=self.dtype) for _ in range(2)]
        self._d_indptr = [cp.empty(rows_max + 1, dtype=np.int32) for _ in range(2)]
        dangling_mask = graph.dangling_mask
        if self._weighted:
            inv = np.where(dangling_mask, 0.0, 1.0)
        else:
            with np.errstate(divide="ignore"):
                inv = np.where(dangling_mask, 0.0, 1.0 / graph.out_weight)
        self._inv_out = cp.asarray(inv)
        self._dangling_f = cp.asarray(dangling_mask.astype(np.float64))
        self._dangling = cp.asarray(dangling_mask)
        self._v = (gpu_arrays.full(graph.n, 1.0 / graph.n) if personalization is None
                   else cp.asarray(personalization))
        self._d = self._v if dangling is None else cp.asarray(dangling)
        self._heavy_sum = cp.zeros(rows_max, dtype=np.float64)

    def _kernels(self, graph: Graph, group: int, rows_max: int) -> None:
        """The pull kernels (short rows by ``group`` threads, long rows' segments), the
        launch shape and the two streams."""
        import cupy as cp

        ix = graph.indices.dtype.name
        self._fused = kernels.get_kernel("int32", ix, self.dtype.name, self._weighted, group)
        self._heavy_kernel = kernels.get_kernel("int32", ix, self.dtype.name, self._weighted,
                                             None)
        sms = gpu_arrays.device_attribute("MultiProcessorCount")
        self._grid = int(min(max(1, -(-rows_max // (BLOCK // group))), sms * 16))
        self._block = BLOCK
        self._compute = cp.cuda.Stream(non_blocking=True)
        self._copy = cp.cuda.Stream(non_blocking=True)
        self._no_chunk = cp.zeros(1, dtype=np.uint64)
        self._xs_pos = cp.zeros(1, dtype=graph.indices.dtype)

    # -- operator primitives ------------------------------------------------------------
    def synchronize(self) -> None:
        self._compute.synchronize()

    def teleport(self) -> Any:
        return self._v

    def dangling_dist(self) -> Any:
        return self._d

    def dangling_mass(self, x: Any) -> float:
        return float(self.xp.dot(x, self._dangling_f))

    def _stream_chunks(self, run: Any) -> None:
        """Copy every chunk in (two buffers, on the copy stream) and ``run(k, buffer)`` on
        the compute stream once it is there."""
        cp = self.xp
        copied = [cp.cuda.Event(), cp.cuda.Event()]
        used = [cp.cuda.Event(), cp.cuda.Event()]
        used[0].record(self._compute)
        used[1].record(self._compute)
        for k in range(self.chunks.size - 1):
            b = k % 2
            a0, a1 = int(self.chunks[k]), int(self.chunks[k + 1])
            e0, e1 = int(self.graph.indptr[a0]), int(self.graph.indptr[a1])
            p0 = int(self._ptr_at[k])
            self._copy.wait_event(used[b])  # the kernel that read this buffer is done
            self._d_indptr[b][: a1 - a0 + 1].set(self._h_indptr[p0:p0 + a1 - a0 + 1],
                                                 stream=self._copy)
            if e1 > e0:
                self._d_indices[b][: e1 - e0].set(self._h_indices[e0:e1], stream=self._copy)
                if self._weighted:
                    self._d_vals[b][: e1 - e0].set(self._h_vals[e0:e1], stream=self._copy)
            copied[b].record(self._copy)
            self._compute.wait_event(copied[b])
            with self._compute:
                run(k, b)
            used[b].record(self._compute)

    def propagate(self, x: Any) -> Any:
        """``P^T x``, chunk by chunk (for GMRES and the other Krylov methods)."""
        import cupyx.scipy.sparse as csp

        cp = self.xp
        xs = x if self._weighted else x * self._inv_out
        y = cp.zeros(self.n)

        def run(k: int, b: int) -> None:
            a0, a1 = int(self.chunks[k]), int(self.chunks[k + 1])
            e = int(self.graph.indptr[a1] - self.graph.indptr[a0])
            data = (self._d_vals[b][:e].astype(np.float64) if self._weighted
                    else cp.ones(e, dtype=np.float64))
            mat = csp.csr_matrix((data, self._d_indices[b][:e], self._d_indptr[b][: a1 - a0 + 1]),
                                 shape=(a1 - a0, self.n))
            y[a0:a1] = mat @ xs

        self._stream_chunks(run)
        self._compute.synchronize()
        return y

    def power_steps(self, x: Any, *, tol: float, max_steps: int, criterion: str,
                    callback: Any = None) -> StepsResult:
        from webrank.kernels.cuda_common import ACC_WIDTH, DELTA, FIRST_DELTA, PLAIN

        cp = self.xp
        if max_steps < 1:
            return self.no_steps(x)
        test = StopTest.of(criterion, tol)
        n = self.n
        with self._compute:
            # (no CuPy kernel: those are compiled on a process's first use)
            xb = [gpu_arrays.copy_vector(x), cp.empty(n)]
            xsb = [gpu_arrays.gather_vector(xb[0], self._inv_out, self.dtype),
                   cp.empty(n, dtype=self.dtype)]
            hist = cp.zeros((max_steps + 1, ACC_WIDTH), dtype=np.float64)
            gpu_arrays.write_history_start(xb[0], self._dangling, hist[0])
            self._heavy_sum.fill(0)
        # (no replay counter: every queued step runs)
        skip = {"chunk": self._no_chunk, "step0": 0, "chunk_len": 0, "max_steps": 1}
        stop, done, first = None, 0, 1
        step_s: list[float] = []
        while stop is None and done < max_steps:
            last = min(done + self.check_every, max_steps)
            for step in range(done + 1, last + 1):
                i, o = (step - 1) % 2, step % 2
                mode = ((FIRST_DELTA if step == 1 else DELTA) if self.delta_steps else PLAIN)
                t0 = time.perf_counter()

                def run(k: int, b: int, i=i, o=o, mode=mode, step=step) -> None:
                    a0, a1 = int(self.chunks[k]), int(self.chunks[k + 1])
                    h = self._chunk_heavy[k]
                    v = self._v[0:1] if self.uniform_v else self._v[a0:a1]
                    d = self._d[0:1] if self.uniform_d else self._d[a0:a1]
                    if h["nseg"]:
                        self._heavy_kernel(
                            (int(min(-(-h["nseg"] // (self._block // 32)), 1024)),),
                            (self._block,), kernels.HEAVY_ROWS.pack(
                                nseg=h["nseg"], seg_row=h["seg_row"], seg_begin=h["begin"],
                                seg_end=h["end"], indices=self._d_indices[b],
                                vals=self._d_vals[b], xs=xsb[i], heavy_sum=self._heavy_sum,
                                acc_prev=hist[step - 1], tol_cmp=test.tol_cmp, **skip))
                    self._fused((self._grid,), (self._block,), kernels.FUSED_STEP.pack(
                        n=a1 - a0, indptr=self._d_indptr[b], indices=self._d_indices[b],
                        vals=self._d_vals[b], xs=xsb[i], x=xb[i][a0:a1], v=v, d=d,
                        uniform_v=self.uniform_v, uniform_d=self.uniform_d,
                        inv_out=self._inv_out[a0:a1], alpha=self.alpha, inv_n=1.0 / n,
                        acc_prev=hist[step - 1], acc_out=hist[step], crit=test.code,
                        tol_cmp=test.tol_cmp, mode=mode, x_out=xb[o][a0:a1],
                        xs_out=xsb[o][a0:a1], **skip, heavy_threshold=h["threshold"],
                        heavy_sum=self._heavy_sum, permuted=0, xs_pos=self._xs_pos))

                self._stream_chunks(run)
                self._compute.synchronize()
                step_s.append(time.perf_counter() - t0)
            stop = test.first_below(kept_residuals(hist, first, last), first, callback)
            done, first = last, last + 1
        steps = stop if stop is not None else done
        residuals = test.residuals(kept_residuals(hist, 1, steps))
        self.matvecs += steps
        self.info["step_s"] = step_s
        return StepsResult(x=xb[steps % 2], residuals=residuals, converged=stop is not None)
