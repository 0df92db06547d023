"""Batch operators: the power step of k PageRank vectors at once, per device.

:func:`webrank.personalized_pagerank` solves k personalizations as one n×k batch ``X``
(one column per personalization; "batch", not the "blocked" engines' propagation
blocking); a batch operator owns the batch's device arrays and runs its steps (see
:mod:`webrank.personalized` for the math). Three implementations, one interface
(:class:`BatchOperator`: ``start``, ``step``, ``compact``):

* :class:`CPUBatchOperator`: the fused compiled step (:mod:`webrank.kernels.cpu_ppr`) over
  a row-major block; a one-column block runs pagerank's own scalar step
  (:func:`webrank.kernels.cpu.fused_step`), so a column's arithmetic is the same whatever
  its batch;
* :class:`ArrayBatchOperator`: ``csr @ block`` (SciPy) and array operations, the CPU step
  of the array path (tests run it: :data:`USE_NATIVE`);
* :class:`~webrank.backends.gpu_batch.GPUBatchOperator`: the fused CUDA step
  (:mod:`webrank.kernels.cuda_ppr`).

:func:`webrank.backends.make_batch_operator` picks one; its :meth:`BatchOperator.width`
sizes the batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.backends.base import Operator
from webrank.backends.seeds import SeedColumns, SeedRows
from webrank.graph import Graph
from webrank.kernels import cpu as kernels
from webrank.kernels.cpu import chunk_bounds, default_chunks
from webrank.kernels.criteria import CRITERION_CODE

__all__ = ["ArrayBatchOperator", "Batch", "BatchOperator", "CPUBatchOperator",
           "cpu_batch_operator"]

# CPU batches hold at most this many bytes of working blocks (and a quarter of free RAM)
CPU_BATCH_BYTES = 2 * 2**30
# None or True: the compiled step; False forces the array step on the CPU too (tests run
# the GPU's array code path with it)
USE_NATIVE: bool | None = None


@dataclass
class Batch:
    """The state of one batch: iterate, gathered block, per-column terms."""

    x: Any  # (n, b) float64 iterate
    g: Any  # (n, b) dtype: x / out (plain steps) or (x - x_prev) / out (delta steps)
    pers: SeedColumns  # host n×b personalization columns
    vdev: Any  # the personalization on the device (each operator's own form)
    dmass: np.ndarray  # (b,) dangling mass of what g was built from
    mass: np.ndarray  # (b,) total mass of what g was built from (delta steps)
    delta: bool = False
    dense_v: np.ndarray | None = None  # the column of a one-column block, as a vector


class BatchOperator(Operator):
    """The Google matrix of one graph on one device, stepping an n×k batch of vectors:
    block start, step and compaction (shared logic; each device its own step)."""

    kernel = "?"
    name = "cpu"

    def __init__(self, graph: Graph, xp: Any, dtype: str, alpha: float,
                 shared_d: np.ndarray | None, order: str) -> None:
        super().__init__(graph, alpha, dtype)
        self.xp = xp
        self.order = order
        self.d = None if shared_d is None else xp.asarray(shared_d)

    def width(self, k: int, batch_size: int | None) -> int:
        """Columns per batch of ``k`` vectors: ``batch_size``, or as many as the memory
        budget holds (at most :data:`CPU_BATCH_BYTES` and a quarter of free RAM)."""
        if batch_size is not None:
            return int(min(batch_size, k))
        budget = min(CPU_BATCH_BYTES, available_ram() // 4)
        per_column = self.n * (2 * 8 + 2 * self.dtype.itemsize)  # x, x_out; g, g_out
        return int(max(1, min(k, budget // per_column)))

    def start(self, pers: SeedColumns) -> Batch:
        n, b = self.n, pers.shape[1]
        x = self.xp.full((n, b), 1.0 / n, order=self.order)
        dm = float(len(self.dangling_idx)) / n
        return Batch(x=x, g=self.gathered(x), pers=pers, vdev=self.upload_pers(pers),
                      dmass=np.full(b, dm), mass=np.ones(b))

    # -- block algebra (the GPU's by prebuilt kernels: gpu_batch) ---------------------
    def gathered(self, x: Any, out: Any = None) -> Any:
        """``x / out-degree`` per row of a float64 block, in the storage dtype (into
        ``out`` if given)."""
        if out is None:
            out = self.xp.empty(x.shape, dtype=self.dtype, order=self.order)
        self.xp.multiply(x, self.inv_out[:, None], out=out, casting="unsafe")
        return out

    def column_sums(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per column of a float64 block: the sum and the sum over the dangling rows."""
        return self.to_host(x.sum(axis=0)), self.to_host(x[self.dangling_idx].sum(axis=0))

    def columns(self, x: Any, keep: np.ndarray) -> Any:
        """Columns ``keep`` of a block, as a new block in this operator's order."""
        return self.xp.array(x[:, self.xp.asarray(keep)], order=self.order)

    def coefficients(self, block: Batch) -> tuple[np.ndarray, np.ndarray]:
        """Per-column factors of the teleport term v_c and of the dangling term d_c.

        Applied as ``alpha * P^T g + cd * d + cv * v``, in pagerank's kernel's order, so
        a column's arithmetic is the same whatever its batch or kernel.
        """
        a = self.alpha
        if block.delta:  # the change obeys D' = a (P^T D + m(D) d); drop rounding mass
            cv = -a * block.mass
            cd = a * block.dmass
        else:
            cv = np.full(block.mass.size, 1.0 - a)
            cd = a * block.dmass
        return cv, cd

    def after_step(self, block: Batch, x_new: Any, dmass, mass) -> None:
        """Bookkeeping after a step to ``x_new`` (``dmass``/``mass``: of the step's output)."""
        block.dmass, block.mass = dmass, mass
        if self.delta_steps and not block.delta:
            # switch to delta steps: from now on gather (x_k - x_{k-1}) / out
            d1 = self.difference(x_new, block.x)
            self.gathered(d1, out=block.g)
            block.mass, block.dmass = self.column_sums(d1)
            block.delta = True
        block.x = x_new

    def difference(self, a: Any, b: Any) -> Any:
        """``a - b`` of two blocks (a new block)."""
        return a - b

    def compact(self, block: Batch, keep: np.ndarray) -> None:
        block.x = self.columns(block.x, keep)
        block.g = self.columns(block.g, keep)
        block.pers = block.pers.select(keep)
        block.vdev = self.upload_pers(block.pers)
        block.dmass, block.mass = block.dmass[keep], block.mass[keep]
        block.dense_v = None


class CPUBatchOperator(BatchOperator):
    """CPU: the fused compiled step over a row-major block."""

    kernel = "native"

    def __init__(self, graph, dtype, alpha, shared_d) -> None:
        super().__init__(graph, np, dtype, alpha, shared_d, "C")
        vals = graph.transition_values()
        self.inv_out = graph.gather_scale()
        self.vals = (np.zeros(0, dtype=self.dtype) if vals is None
                     else vals.astype(self.dtype))
        self.dangling_idx = np.flatnonzero(graph.dangling_mask)
        self.bounds = chunk_bounds(graph.indptr, default_chunks())
        self.d_arg = np.zeros(0) if self.d is None else self.d
        self._out: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def upload_pers(self, pers: SeedColumns) -> SeedRows:
        return pers.by_row()  # rows = nodes: the kernel adds row i's entries

    def step(self, block: Batch, criterion: str) -> np.ndarray:
        b = block.x.shape[1]
        key = (b,)
        if key not in self._out:  # the output buffers: the previous block's, reused
            self._out = {key: (np.empty_like(block.x), np.empty_like(block.g))}
        x_out, g_out = self._out[key]
        if b == 1:
            res, dmass, mass = self._single_step(block, criterion, x_out, g_out)
            self._out[key] = (block.x, block.g)
            block.g = g_out
            self.after_step(block, x_out, dmass, mass)
            return res
        from webrank.kernels import cpu_ppr

        cv, cd = self.coefficients(block)
        # (quantity, column, chunk): each column's chunk sums are added in the order
        # pagerank's scalar step adds its own (cpu_ppr.chunk_totals)
        partial = np.zeros((3, b, self.bounds.size - 1))
        v = block.vdev
        cpu_ppr.block_step(self.graph.indptr, self.graph.indices, self.vals, block.g,
                           block.x, v.indptr, v.indices, v.data, cv, self.d_arg, cd,
                           self.inv_out, self.alpha, block.delta, CRITERION_CODE[criterion],
                           self.bounds, x_out, g_out, partial)
        res, dmass, mass = cpu_ppr.chunk_totals(partial, CRITERION_CODE[criterion])
        # the old buffers become the next step's outputs
        self._out[key] = (block.x, block.g)
        x_new, block.g = x_out, g_out
        self.after_step(block, x_new, dmass, mass)
        return res

    def _single_step(self, block, criterion, x_out, g_out):
        """A one-column block: pagerank's own scalar fused kernel (faster than the block
        kernel at width 1, whose column loops then cost more than they share)."""
        if block.dense_v is None:
            block.dense_v = block.pers.dense_column(0)
        v = block.dense_v
        d = v if self.d is None else self.d
        partial = np.zeros((self.bounds.size - 1, 3))
        g = self.graph
        terms = kernels.StepTerms(v=v, d=d, inv_out=self.inv_out, alpha=self.alpha,
                                  crit=CRITERION_CODE[criterion])
        res, dmass, mass = kernels.fused_step(
            g.indptr, g.indices, self.vals, terms, xs=block.g[:, 0], x=block.x[:, 0],
            dm=float(block.dmass[0]), mass=float(block.mass[0]), delta=block.delta,
            bounds=self.bounds, x_out=x_out[:, 0], xs_out=g_out[:, 0], partial=partial)
        return np.array([res]), np.array([dmass]), np.array([mass])

    def compact(self, block: Batch, keep: np.ndarray) -> None:
        super().compact(block, keep)
        self._out = {}


class ArrayBatchOperator(BatchOperator):
    """``csr @ block`` (SciPy) + array operations: the array step (CPU or GPU arrays)."""

    kernel = "spmm"

    def __init__(self, graph, xp, dtype, alpha, shared_d, matrix, inv_out, dangling_idx,
                 order) -> None:
        super().__init__(graph, xp, dtype, alpha, shared_d, order)
        self.matrix = matrix
        self.inv_out = inv_out
        self.dangling_idx = dangling_idx

    def upload_pers(self, pers: SeedColumns) -> tuple[Any, Any, Any]:
        xp = self.xp
        return (xp.asarray(pers.indices), xp.asarray(pers.column_entries()),
                xp.asarray(pers.data))

    def step(self, block: Batch, criterion: str) -> np.ndarray:
        xp, a = self.xp, self.alpha
        cv, cd = self.coefficients(block)
        t = self.matrix @ block.g
        t = t.astype(np.float64, copy=False) if t.dtype != np.float64 else t
        t *= a
        if self.d is not None:
            t += self.d[:, None] * xp.asarray(cd)[None, :]
        rows, cols, vals = block.vdev
        # (row, col) pairs are unique (summed duplicates), so += by fancy index is exact
        if self.d is None:  # d_c = v_c
            t[rows, cols] += vals * xp.asarray(cd)[cols]
        t[rows, cols] += vals * xp.asarray(cv)[cols]
        if block.delta:
            diff = t
            x_new = block.x + t
        else:
            diff = t - block.x
            x_new = t
        if criterion == "l1":
            res = xp.abs(diff).sum(axis=0)
        elif criterion == "l2":
            res = (diff * diff).sum(axis=0)
        else:
            res = xp.abs(diff).max(axis=0)
        # residual, dangling mass and mass per column: one device-to-host copy per step
        stats = self.to_host(xp.stack([res, t[self.dangling_idx].sum(axis=0),
                                       t.sum(axis=0)]))
        xp.multiply(t, self.inv_out[:, None], out=block.g, casting="unsafe")
        self.after_step(block, x_new, stats[1], stats[2])
        return stats[0]


def cpu_batch_operator(graph: Graph, dtype: str, alpha: float,
                       shared_d: np.ndarray | None) -> BatchOperator:
    """The block operator of ``graph`` on the CPU: the compiled step, or (``USE_NATIVE``
    False) SciPy's SpMM and NumPy. (The GPU's: :func:`webrank.backends.gpu_batch.
    gpu_batch_operator`; both behind :func:`webrank.backends.make_batch_operator`.)"""
    if USE_NATIVE is None or USE_NATIVE:
        return CPUBatchOperator(graph, dtype, alpha, shared_d)
    vals = graph.transition_values()
    data = (np.ones(graph.num_edges) if vals is None else vals).astype(dtype)
    import scipy.sparse as sp

    matrix = sp.csr_array((data, graph.indices, graph.indptr), shape=(graph.n, graph.n))
    return ArrayBatchOperator(graph, np, dtype, alpha, shared_d, matrix,
                              graph.gather_scale(), np.flatnonzero(graph.dangling_mask), "C")


def available_ram() -> int:
    """Available memory in bytes, or 8 GiB when it cannot be read."""
    from webrank.memory import available_bytes

    return available_bytes() or 8 * 2**30


