"""The ``"blocked"`` GPU engine: propagation blocking (layout: :mod:`webrank.blocking`).

Each power step is two kernels, a scatter and a gather
(:mod:`webrank.kernels.cuda_blocked`), replayed as a CUDA graph by the loop every GPU
engine shares (:class:`~webrank.backends.gpu_replay.Replay`, driving
:class:`BlockedRunStep`). Every DRAM access is a sequential stream: about 12 bytes per
link in float32 against the pull engine's 4-byte index plus a random 32-byte sector.

The layout is built on the device (a count and a fill kernel, about two passes over the
in-link indices) when the first power step needs it, inside the setup time, and cached on
the graph per device, precision and plan.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.backends.gpu import DeviceMatrix, GPUOperator, on_device
from webrank.backends.gpu_blocked_budget import SUM_ITEMSIZE, default_plan_args, plan_args
from webrank.backends.options import EngineOptions
from webrank.blocking import (
    BlockedLayout,
    BlockPlan,
    part_order_of,
    plan_blocks,
    tiles_of,
)
from webrank.errors import DeviceMemoryError
from webrank.kernels import cuda_blocked as kb
from webrank.kernels.criteria import StopTest

__all__ = ["BlockedGPUOperator", "BlockedRunStep", "blocked_device_bytes", "build_on_device",
           "default_plan_args", "layout_on_device"]

def blocked_device_bytes(num_nodes: int, num_edges: int, dtype: str = "float32",
                         weighted: bool = False, num_blocks: int | None = None) -> int:
    """Device memory the blocked layout and its message buffer take, in bytes.

    Per link: the 16-bit source and destination offsets and one message in the storage
    ``dtype``, plus the per-link value of a weighted graph; per (chunk, partition) block:
    8-byte pointers in two tables plus the counts the build holds for a moment; 8 bytes
    per node for the partition bookkeeping. ``num_blocks`` defaults to one block per 128
    links. The CSR the layout is built from is not included.
    """
    item = np.dtype(dtype).itemsize
    blocks = num_blocks if num_blocks is not None else max(1, num_edges // 128)
    per_link = 2 + 2 + item + (item if weighted else 0)
    return int(num_edges * per_link + 24 * blocks + 8 * num_nodes)


def build_on_device(csr: dict[str, Any], vals: Any, plan: BlockPlan, dtype: np.dtype,
                    sms: int) -> BlockedLayout:
    """The layout of ``plan`` built from a device CSR (``indptr``, ``indices``: the rows
    of a graph, or of one part of it, with global source ids) by the count and fill
    kernels; ``vals`` are the links' values (weighted graphs) or None."""
    return _build_on_device(csr, vals, plan, dtype, sms)[0]


def layout_on_device(csr: dict[str, Any], vals: Any, plan: BlockPlan, dtype: np.dtype,
                     sms: int) -> tuple[BlockedLayout, Any]:
    """:func:`build_on_device` and the layout's partition-major block table
    (:func:`part_major_blocks`, made on the host from the block pointers it has there)."""
    import cupy as cp

    layout, blk_ptr = _build_on_device(csr, vals, plan, dtype, sms)
    return layout, cp.asarray(part_major_blocks(blk_ptr, plan.num_parts, plan.num_chunks))


def _build_on_device(csr: dict[str, Any], vals: Any, plan: BlockPlan, dtype: np.dtype,
                     sms: int) -> tuple[BlockedLayout, np.ndarray]:
    """The layout, and its block pointers on the host. The entries are counted and placed
    by our kernels; the small tables (C * P block pointers, the tiles, the partitions'
    order: thousands to a few million numbers) are made on the host, where NumPy needs no
    kernel compiled, and copied up."""
    import cupy as cp

    num_parts, num_chunks, bits = plan.num_parts, plan.num_chunks, plan.chunk_bits
    indptr, indices = csr["indptr"], csr["indices"]
    ip, ix = indptr.dtype.name, indices.dtype.name
    part_ptr = cp.asarray(plan.part_ptr)
    weighted = vals is not None
    grid = int(min(num_parts, 4 * sms))
    counts = cp.zeros(num_chunks * num_parts, dtype=cp.int64)
    cw = int(min(num_chunks, kb.COUNT_WINDOW))
    count = kb.get_kernel(kb.count_name(ip, ix))
    count.max_dynamic_shared_size_bytes = 4 * cw
    count((grid,), (kb.BLOCK,),
          kb.COUNT.pack(P=num_parts, part_ptr=part_ptr, indptr=indptr, indices=indices,
                        chunk_bits=bits, C=num_chunks, cw=cw, counts=counts),
          shared_mem=4 * cw)
    blk_host = np.zeros(num_chunks * num_parts + 1, dtype=np.int64)
    np.cumsum(counts.get(), out=blk_host[1:])
    del counts
    blk_ptr = cp.asarray(blk_host)
    m = int(blk_host[-1])
    src_local = cp.empty(m, dtype=cp.uint16)
    dst_local = cp.empty(m, dtype=cp.uint16)
    vals_out = cp.empty(m, dtype=dtype) if weighted else cp.zeros(1, dtype=dtype)
    fw = int(min(num_chunks, kb.FILL_WINDOW))
    smem = 8 * fw + 4 * (plan.part_rows_max + 1)
    fill = kb.get_kernel(kb.fill_name(ip, ix, dtype.name, weighted))
    fill.max_dynamic_shared_size_bytes = smem
    fill((grid,), (kb.BLOCK,),
         kb.FILL.pack(P=num_parts, part_ptr=part_ptr, indptr=indptr, indices=indices,
                      vals_in=vals if weighted else vals_out, chunk_bits=bits, C=num_chunks,
                      cw=fw, blk_ptr=blk_ptr, src_local=src_local, dst_local=dst_local,
                      vals_out=vals_out), shared_mem=smem)
    tile_ptr, tile_chunk = tiles_of(blk_host, num_parts, num_chunks, plan.tile_entries)
    layout = BlockedLayout(plan=plan, blk_ptr=blk_ptr, src_local=src_local,
                           dst_local=dst_local, vals=vals_out if weighted else None,
                           tile_ptr=cp.asarray(tile_ptr), tile_chunk=cp.asarray(tile_chunk),
                           part_order=cp.asarray(part_order_of(blk_host, num_parts,
                                                               num_chunks)))
    return layout, blk_host


def part_major_blocks(blk_ptr: Any, num_parts: int, num_chunks: int) -> Any:
    """The block table partition-major, ``(P + 1) x C``: block (c, p) is entries
    ``t[p, c] : t[p + 1, c]`` (row P holds each chunk's end), so that the gather reads
    one partition's block bounds in two coalesced rows."""
    xp = __import__("cupy") if type(blk_ptr).__module__.startswith("cupy") else np
    table = xp.empty((num_parts + 1, num_chunks), dtype=xp.int64)
    table[:num_parts] = blk_ptr[:-1].reshape(num_chunks, num_parts).T
    table[num_parts] = blk_ptr[num_parts::num_parts]
    return table


class BlockedStep:
    """A blocked layout on the current device with its message buffer and kernels: one
    power step of its rows (:meth:`launch`), for :class:`BlockedGPUOperator` and for the
    parts of a partitioned run (:mod:`webrank.distributed.placement`)."""

    def __init__(self, layout: BlockedLayout, part_blocks: Any, n_src: int, dtype: np.dtype,
                 weighted: bool, sms: int) -> None:
        import cupy as cp

        self.layout, self.part_blocks, self.n_src = layout, part_blocks, int(n_src)
        plan = layout.plan
        self.part_ptr = cp.asarray(plan.part_ptr - plan.row_begin)
        m = layout.num_entries
        try:
            self.msg = cp.empty(m + 4, dtype=dtype)  # 4 more: 16-byte stores
        except cp.cuda.memory.OutOfMemoryError:
            raise DeviceMemoryError(m * np.dtype(dtype).itemsize,
                                    cp.cuda.runtime.memGetInfo()[0],
                                    "the blocked engine's message buffer") from None
        self.dummy_vals = cp.zeros(1, dtype=dtype)
        self.scatter_smem = (1 << plan.chunk_bits) * np.dtype(dtype).itemsize
        self.gather_smem = max(plan.part_rows_max, 1) * SUM_ITEMSIZE
        t = np.dtype(dtype).name
        self.scatter = kb.get_kernel(kb.scatter_name(t, weighted))
        self.scatter.max_dynamic_shared_size_bytes = self.scatter_smem
        self.gather = kb.get_kernel(kb.gather_name(t))
        self.gather.max_dynamic_shared_size_bytes = self.gather_smem
        self.scatter_grid = int(max(1, min(layout.num_tiles, 2 * sms)))

    def bind(self, *, v: Any, d: Any, uniform_v: bool, uniform_d: bool, inv_out: Any,
             alpha: float, inv_n: float, crit: int, tol_cmp: float, chunk: Any) -> None:
        """Fix a run's constants (the layout, the Google matrix's vectors, the stopping
        test, the replay counter ``chunk``) for the :meth:`launch` calls that follow.
        ``v``, ``d`` and ``inv_out`` are indexed by the layout's rows."""
        L = self.layout
        vals = L.vals if L.vals is not None else self.dummy_vals
        self._scatter_args = kb.SCATTER.bind(
            ntiles=L.num_tiles, tile_ptr=L.tile_ptr, tile_chunk=L.tile_chunk,
            chunk_bits=L.plan.chunk_bits, n_src=self.n_src, src_local=L.src_local, vals=vals,
            msg=self.msg, tol_cmp=tol_cmp, chunk=chunk)
        self._gather_args = kb.GATHER.bind(
            P=L.num_parts, C=L.num_chunks, part_order=L.part_order, part_ptr=self.part_ptr,
            part_blocks=self.part_blocks, dst_local=L.dst_local, msg=self.msg, v=v, d=d,
            uniform_v=uniform_v, uniform_d=uniform_d, inv_out=inv_out, alpha=alpha,
            inv_n=inv_n, x_offset=0, crit=crit, tol_cmp=tol_cmp, chunk=chunk)

    def launch(self, *, xs_in: Any, x_in: Any, acc_prev: Any, acc_out: Any, mode: int,
               x_out: Any, xs_out: Any, step0: int, chunk_len: int, max_steps: int) -> None:
        """Queue the scatter and the gather of one step on the current stream, with the
        constants of the last :meth:`bind`. ``x_in`` and ``x_out`` are indexed by the
        layout's rows, ``xs_out`` too (a view of the full vector at the first row);
        ``step0``, ``chunk_len`` and ``max_steps`` place the step in a replayed window
        (see ``wr_skip_step``)."""
        window = {"step0": step0, "chunk_len": chunk_len, "max_steps": max_steps}
        self.scatter((self.scatter_grid,), (kb.BLOCK,), self._scatter_args.pack(
            xs=xs_in, acc_prev=acc_prev, **window), shared_mem=self.scatter_smem)
        self.gather((max(self.layout.num_parts, 1),), (kb.BLOCK,), self._gather_args.pack(
            x=x_in, acc_prev=acc_prev, acc_out=acc_out, mode=mode, x_out=x_out,
            xs_out=xs_out, **window), shared_mem=self.gather_smem)


def blocked_step_of(csr: dict[str, Any], vals: Any, n_src: int, dtype: np.dtype, sms: int,
                    plan_args: dict[str, int] | None = None) -> BlockedStep:
    """Plan, build and wrap the blocked layout of a device CSR (rows with global sources)."""
    plan = plan_blocks(csr["indptr"], n_src=n_src, workers=sms,
                       searchsorted=gpu_arrays.searchsorted,
                       **(plan_args or default_plan_args(dtype)))
    layout, table = layout_on_device(csr, vals, plan, dtype, sms)
    return BlockedStep(layout, table, n_src, dtype, vals is not None, sms)


class BlockedRunStep:
    """A :class:`BlockedStep` over a whole graph as the blocked engine's
    :class:`~webrank.backends.gpu_replay.ReplayedStep`: the Google matrix's vectors bound
    with each run's stopping test and replay counter."""

    def __init__(self, blocked: BlockedStep, matrix: DeviceMatrix) -> None:
        self.blocked, self.matrix = blocked, matrix

    def gather_vector(self, x: Any) -> Any:
        """``x / out_degree`` in the storage dtype, in the graph's own order."""
        m = self.matrix
        return gpu_arrays.gather_vector(x, m.inv_out, m.dtype, None, m.csr["indices"].dtype)

    def begin(self, test: StopTest, chunk: Any) -> None:
        """Bind the run's constants to the step (its kernels and buffers are made with
        the layout)."""
        m = self.matrix
        self.blocked.bind(v=m.v, d=m.d, uniform_v=m.uniform_v, uniform_d=m.uniform_d,
                          inv_out=m.inv_out, alpha=m.alpha, inv_n=1.0 / m.n, crit=test.code,
                          tol_cmp=test.tol_cmp, chunk=chunk)

    def launch(self, **window: Any) -> None:
        """One step: the scatter, then the gather and finish (:meth:`BlockedStep.launch`)."""
        self.blocked.launch(**window)


class BlockedGPUOperator(GPUOperator):
    """The ``"blocked"`` engine: propagation blocking, a scatter and a gather kernel per
    step (see the module docstring; its :class:`BlockedRunStep` is replayed by the GPU
    engines' one loop, :class:`~webrank.backends.gpu_replay.Replay`).

    Its options (:class:`~webrank.backends.options.EngineOptions`): ``part_rows``, most
    rows per destination partition (default and most: what fits in a block's 96 KiB
    of 8-byte shared-memory sums, 12,288); ``chunk_bits``, the
    largest source chunk, ``2**chunk_bits`` ids (default and most: 128 KiB of ``xs``,
    2**15 sources in float32).
    """

    engine = "blocked"

    def __init__(self, graph: Any, alpha: float, personalization: Any, dangling: Any,
                 dtype: str, options: EngineOptions) -> None:
        super().__init__(graph, alpha, personalization, dangling, dtype, options)
        self._plan_args = plan_args(self.dtype, options.part_rows, options.chunk_bits)
        self._layout: BlockedLayout | None = None
        self._step: BlockedRunStep | None = None

    # -- the layout, built when the first power step needs it ---------------------------
    def prepare_steps(self) -> None:
        if self._layout is not None:
            return
        import cupy as cp

        graph = self.graph
        t0 = time.perf_counter()
        # the plan depends only on the graph and its arguments: made once (its cuts are
        # searched on the device and brought back, a sync and ~1 ms at R-MAT 22)
        plan = graph.cached(
            ("blocked plan", cp.cuda.Device().id, self._sms,
             *sorted(self._plan_args.items())),
            lambda: plan_blocks(self._g["indptr"], n_src=self.n, workers=self._sms,
                                searchsorted=gpu_arrays.searchsorted, **self._plan_args))
        key = ("blocked", self.dtype.name, plan.part_rows_max, plan.chunk_bits,
               int(plan.part_ptr.size))
        weighted = self._weighted
        need = blocked_device_bytes(self.n, graph.num_edges, self.dtype.name, weighted,
                                    plan.num_parts * plan.num_chunks)
        built = graph.is_cached(("gpu", cp.cuda.Device().id, *key))

        def build() -> dict[str, Any]:
            layout, table = layout_on_device(self._g, self._vals if weighted else None,
                                             plan, self.dtype, self._sms)
            return {"layout": layout, "part_blocks": table}

        cached = on_device(graph, key, need, build)
        self._layout = cached["layout"]
        self._step = BlockedRunStep(BlockedStep(self._layout, cached["part_blocks"], self.n,
                                                self.dtype, weighted, self._sms), self.matrix)
        cp.cuda.get_current_stream().synchronize()
        self.info.update({
            "engine": self.engine,
            "parts": plan.num_parts, "chunks": plan.num_chunks,
            "chunk_bits": plan.chunk_bits, "part_rows_max": plan.part_rows_max,
            "tiles": self._layout.num_tiles,
            "layout_bytes": self._layout.nbytes + int(cached["part_blocks"].nbytes),
            "layout_build_s": 0.0 if built else time.perf_counter() - t0,
        })

    def _power_step(self) -> BlockedRunStep:
        return self._step
