"""Kumar et al.'s hybrid engine: the GPU sums the first N in-links of every page, the CPU the
rest, at the same time; the partial sums are added before the step finishes.

Kumar et al. (CUDA and Cell, LAW web graphs) proposed the split because a few pages have
in-degrees in the hundreds of thousands: a GPU thread per row waits on them while the CPU
could take the long tails. Each step here

1. copies ``xs = x / out`` of the current iterate to pinned host memory (n values);
2. queues the GPU part: rows of at most ``gpu_links`` in-links whole, and the first
   ``gpu_links`` in-links of longer rows (warps of 256-edge segments, as the GPU engine
   splits heavy rows);
3. meanwhile sums the remaining in-links of the long rows on the CPU (Numba, all cores);
4. uploads those tail sums, adds them to the rows' sums and runs the fused step (dangling
   and teleport terms, residual) on the GPU.

The pure-GPU engine already balances long rows on the device (see
:mod:`webrank.kernels.cuda`), so the split cannot beat it on one GPU: every step pays a
host round trip and an n-vector copy over PCIe. It is kept as ``method="hybrid"`` to
measure Kumar et al.'s design honestly (``webrank bench hybrid``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.backends.gpu import GPUOperator, PullStep
from webrank.backends.options import DEFAULT_GPU_LINKS, EngineOptions
from webrank.graph import Graph
from webrank.kernels import cpu as cpu_kernels
from webrank.kernels.criteria import StopTest


class HybridOperator(GPUOperator):
    """GPU operator whose long rows are finished on the CPU every step (Kumar et al.).

    Its options (:class:`~webrank.backends.options.EngineOptions`, ``HYBRID_OPTIONS``):
    ``gpu_links`` (default DEFAULT_GPU_LINKS), N: the GPU sums the first N in-links of
    every row, the CPU the rest. Larger N leaves less to the CPU; with N above the
    largest in-degree nothing is. ``lanes_per_row`` and ``heavy_threshold`` as for
    :class:`~webrank.backends.gpu.GPUOperator`. CUDA graphs are off (the host takes part
    in every step), and the gathered vector keeps the graph's order (the CPU's share
    reads the host CSR).
    """

    name = "hybrid"
    engine = "pull"  # (its GPU part is the pull step; info["engine"] says so)

    def __init__(self, graph: Graph, alpha: float, personalization: np.ndarray | None,
                 dangling: np.ndarray | None, dtype: str,
                 options: EngineOptions) -> None:
        gpu_links = DEFAULT_GPU_LINKS if options.gpu_links is None else options.gpu_links
        # the CPU's share gathers from the host CSR in the graph's own order
        options = dataclasses.replace(options, use_graph=False, check_every=1,
                                      gpu_links=int(gpu_links), reorder=None)
        super().__init__(graph, alpha, personalization, dangling, dtype, options)
        self.gpu_links = int(gpu_links)
        self._pull = PullStep(self.matrix, options)
        self._step = HybridStep(self._pull, graph.to_host(), self.gpu_links, self.replay.stream,
                                self.info)

    def _power_step(self) -> HybridStep:
        return self._step


class HybridStep:
    """The hybrid method's step (a :class:`~webrank.backends.gpu_replay.ReplayedStep`):
    ``pull``'s two kernels, with the in-links of each row past the first ``gpu_links``
    summed on the CPU between them and added to ``pull.heavy_sum``.

    Its split and costs go to ``info`` (the operator's): ``gpu_links``, ``cpu_rows``,
    ``cpu_edge_share``, ``cpu_seconds``, ``wait_seconds`` and ``steps``, updated by
    every step.
    """

    def __init__(self, pull: PullStep, host: Graph, gpu_links: int, stream: Any,
                 info: dict[str, Any]) -> None:
        import cupy as cp

        self.pull, self.stream, self.info = pull, stream, info
        dtype = pull.matrix.dtype
        indptr = host.indptr  # the CPU's share reads the host CSR
        deg = np.diff(indptr)
        rows = np.flatnonzero(deg > gpu_links)
        self._tail_begin = (indptr[rows] + gpu_links).astype(np.int64)
        self._tail_end = indptr[rows + 1].astype(np.int64)
        self._indices_host = host.indices
        tv = host.transition_values()
        self._vals_host = np.zeros(0, dtype=dtype) if tv is None else tv.astype(dtype)
        self._tail_rows = cp.asarray(rows)
        self._xs_host = gpu_arrays.pinned_empty(host.n, dtype=dtype)
        self._tail_host = gpu_arrays.pinned_empty(rows.size, dtype=np.float64)
        self._tail_dev = cp.empty(rows.size, dtype=np.float64)
        total = int(deg.sum())
        info.update({
            "gpu_links": gpu_links,
            "cpu_rows": int(rows.size),
            "cpu_edge_share": float((self._tail_end - self._tail_begin).sum() / total)
            if total else 0.0,
            "cpu_seconds": 0.0,
            "wait_seconds": 0.0,
            "steps": 0,
        })

    def gather_vector(self, x: Any) -> Any:
        return self.pull.gather_vector(x)

    def begin(self, test: StopTest, chunk: Any) -> None:
        self.pull.begin(test, chunk)

    def launch(self, *, xs_in: Any, x_in: Any, acc_prev: Any, acc_out: Any, mode: int,
               x_out: Any, xs_out: Any, step0: int, chunk_len: int, max_steps: int) -> None:
        """One step with the long rows' tails summed on the CPU while the GPU works."""
        self.info["steps"] += 1
        if not self._tail_begin.size:
            return self.pull.launch(xs_in=xs_in, x_in=x_in, acc_prev=acc_prev,
                                    acc_out=acc_out, mode=mode, x_out=x_out, xs_out=xs_out,
                                    step0=step0, chunk_len=chunk_len, max_steps=max_steps)
        t0 = time.perf_counter()
        xs_in.get(stream=self.stream, out=self._xs_host)  # waits for the previous step
        t1 = time.perf_counter()
        self.pull.launch_heavy(xs_in, acc_prev, step0, chunk_len, max_steps)  # GPU: heads
        cpu_kernels.row_range_sums(self._tail_begin, self._tail_end, self._indices_host,
                                   self._vals_host, self._xs_host, self._tail_host)
        t2 = time.perf_counter()
        self._tail_dev.set(self._tail_host, stream=self.stream)
        gpu_arrays.scatter_add(self._tail_rows, self._tail_dev, self.pull.heavy_sum)
        self.pull.launch_fused(xs_in, x_in, acc_prev, acc_out, mode, x_out, xs_out, step0,
                               chunk_len, max_steps)
        self.info["wait_seconds"] += t1 - t0
        self.info["cpu_seconds"] += t2 - t1
        return None
