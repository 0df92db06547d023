"""The GPU block operator: the fused power step of k PageRank vectors on the device
(:mod:`webrank.kernels.cuda_ppr`; see :mod:`webrank.backends.batch`)."""

from __future__ import annotations

from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.arrays import to_host
from webrank.backends.batch import Batch, BatchOperator
from webrank.backends.gpu import OnGPU, on_device, upload_csr
from webrank.backends.seeds import SeedColumns
from webrank.errors import DeviceMemoryError
from webrank.graph import Graph
from webrank.kernels.criteria import CRITERION_CODE

__all__ = ["GPUBatchOperator", "gpu_batch_operator"]

# fraction of free GPU memory (after the graph is uploaded) a batch may use
GPU_BATCH_FRACTION = 0.8
MAX_GPU_BLOCK = 256  # columns per GPU block: 8 per lane of a warp (kernels.cuda_ppr)


class GPUBatchOperator(OnGPU, BatchOperator):
    """GPU: the fused block step of :mod:`webrank.kernels.cuda_ppr` over a row-major block
    (one warp per row or long-row segment; index read once for all columns)."""

    kernel = "cuda-fused"
    name = "gpu"

    def __init__(self, graph, dtype, alpha, shared_d, csr, vals) -> None:
        import cupy as cp

        from webrank.kernels import cuda_ppr

        super().__init__(graph, cp, dtype, alpha, shared_d, "C")
        self.csr, self.vals = csr, vals
        self.weighted = vals is not None
        self.inv_out = csr["inv_out"]
        dangling = self.to_host(csr["dangling"])
        self.dangling_idx = cp.asarray(np.flatnonzero(dangling))
        self._dangling_f = cp.asarray(dangling.astype(np.float64))  # for the column sums
        self._ones = None
        self._cuda = cuda_ppr
        indptr = to_host(graph.indptr).astype(np.int64)
        self._ip = graph.indptr.dtype
        self._items = _work_items(indptr, cuda_ppr.SEGMENT, cp, self._ip)
        self._scratch = None
        sms = gpu_arrays.device_attribute("MultiProcessorCount")
        self._grid = int(min(max(1, -(-self._items["n"] // 8)), sms * 16))
        self._out: dict[tuple, tuple[Any, Any]] = {}

    def width(self, k: int, batch_size: int | None) -> int:
        """Columns per batch: ``batch_size`` or as many as free device memory holds (the
        graph is already on the device), at most :data:`MAX_GPU_BLOCK` (the kernel's
        8 columns per lane of a warp)."""
        cap = min(k, MAX_GPU_BLOCK)
        if batch_size is not None:
            return int(min(batch_size, cap))
        cp = self.xp
        free, _total = cp.cuda.runtime.memGetInfo()
        free += cp.get_default_memory_pool().free_bytes()
        budget = int(GPU_BATCH_FRACTION * free)
        # x and x_out (float64), g and g_out, a long row's scratch (at most n/512 rows)
        per_column = self.n * (2 * 8 + 2 * self.dtype.itemsize + 1)
        if budget < per_column:
            raise DeviceMemoryError(per_column, max(budget, 0), "one personalized column")
        return int(max(1, min(cap, budget // per_column)))

    # the block algebra of BatchOperator by prebuilt kernels and cuBLAS (row-major blocks)
    def start(self, pers: SeedColumns) -> Batch:
        n, b = self.n, pers.shape[1]
        x = gpu_arrays.full(n * b, 1.0 / n).reshape(n, b)
        dm = float(len(self.dangling_idx)) / n
        return Batch(x=x, g=self.gathered(x), pers=pers, vdev=self.upload_pers(pers),
                     dmass=np.full(b, dm), mass=np.ones(b))

    def gathered(self, x: Any, out: Any = None) -> Any:
        return gpu_arrays.scale_rows(x, self.inv_out, self.dtype, out)

    def column_sums(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        if self._ones is None:
            self._ones = gpu_arrays.full(self.n, 1.0)
        return self.to_host(x.T @ self._ones), self.to_host(x.T @ self._dangling_f)

    def columns(self, x: Any, keep: np.ndarray) -> Any:
        return gpu_arrays.take_columns(x, keep)

    def difference(self, a: Any, b: Any) -> Any:
        out = gpu_arrays.copy_vector(a.reshape(-1)).reshape(a.shape)
        gpu_arrays.axpy(-1.0, b.reshape(-1), out.reshape(-1))
        return out

    def upload_pers(self, pers: SeedColumns) -> tuple[Any, Any, Any]:
        m = pers.by_row()  # rows = nodes: a row's warp adds its own entries
        cp = self.xp
        return (cp.asarray(m.indptr.astype(self._ip)), cp.asarray(m.indices.astype(np.int32)),
                cp.asarray(m.data.astype(np.float64)))

    def step(self, block: Batch, criterion: str) -> np.ndarray:
        cp, it = self.xp, self._items
        b = block.x.shape[1]
        if self._scratch is None or self._scratch.size < it["nlong"] * b:
            self._scratch = cp.zeros(max(it["nlong"] * b, 1))  # cleared by the kernel
        key = (b,)
        if key not in self._out:  # the previous step's buffers become the outputs
            self._out = {key: (cp.empty_like(block.x), cp.empty_like(block.g))}
        x_out, g_out = self._out[key]
        cv, cd = self.coefficients(block)
        coef = cp.asarray(np.concatenate([cv, cd]))
        acc = cp.zeros(3 * b)
        shared = self.d is not None
        kernel = self._cuda.get_kernel(self._ip.name, self.csr["indices"].dtype.name,
                                       self.dtype.name, self.weighted,
                                       self._cuda.columns_per_lane(b))
        vptr, vcol, vval = block.vdev
        kernel((self._grid,), (256,), self._cuda.PPR_STEP.pack(
            nitems=it["n"], item_row=it["row"], item_begin=it["begin"], item_end=it["end"],
            item_slot=it["slot"], slot_nseg=it["nseg"], scratch=self._scratch,
            slot_count=it["count"], b=b, indices=self.csr["indices"],
            vals=self.vals if self.weighted else g_out, g=block.g, x=block.x, vptr=vptr,
            vcol=vcol, vval=vval, coef_v=coef[:b], coef_d=coef[b:], shared_d=shared,
            d=self.d if shared else coef, inv_out=self.inv_out, alpha=self.alpha,
            delta=block.delta, crit=CRITERION_CODE[criterion], x_out=x_out, g_out=g_out,
            acc=acc), shared_mem=3 * b * 8)
        stats = self.to_host(acc).reshape(3, b)  # the one synchronisation per step
        self._out[key] = (block.x, block.g)
        block.g = g_out
        self.after_step(block, x_out, stats[1], stats[2])
        return stats[0]

    def compact(self, block: Batch, keep: np.ndarray) -> None:
        super().compact(block, keep)
        self._out = {}


def _work_items(indptr: np.ndarray, segment: int, cp: Any, ip: np.dtype) -> dict[str, Any]:
    """One work item per row of at most ``segment`` in-links, else one per segment; a
    cut row gets a slot (its scratch row and counter) shared by its segments."""
    deg = np.diff(indptr)
    nseg = np.maximum(1, -(-deg // segment))
    row = np.repeat(np.arange(deg.size, dtype=np.int64), nseg)
    first = np.cumsum(nseg) - nseg
    within = np.arange(row.size) - np.repeat(first, nseg)
    begin = indptr[:-1][row] + within * segment
    end = np.minimum(begin + segment, indptr[1:][row])
    long_rows = np.flatnonzero(nseg > 1)
    slot_of_row = np.full(deg.size, -1, dtype=np.int32)
    slot_of_row[long_rows] = np.arange(long_rows.size, dtype=np.int32)
    return {"n": int(row.size), "row": cp.asarray(row), "begin": cp.asarray(begin.astype(ip)),
            "end": cp.asarray(end.astype(ip)), "slot": cp.asarray(slot_of_row[row]),
            "nseg": cp.asarray(nseg[long_rows].astype(np.int32)),
            "count": cp.zeros(max(long_rows.size, 1), dtype=np.int32),
            "nlong": int(long_rows.size)}


def gpu_batch_operator(graph: Graph, dtype: str, alpha: float, shared_d: Any
                       ) -> GPUBatchOperator:
    """The fused block step on the device CSR of the GPU backend's per-graph cache."""
    import cupy as cp

    n, m = graph.n, graph.num_edges
    isz = np.dtype(dtype).itemsize
    csr_bytes = 0 if graph.on_gpu else graph.indptr.nbytes + graph.indices.nbytes
    g = on_device(graph, ("csr",), csr_bytes + 17 * n, lambda: upload_csr(graph))
    tv = graph.transition_values()
    vals = None if tv is None else on_device(  # the same key as GPUOperator's
        graph, ("vals", np.dtype(dtype).name), m * isz, lambda: cp.asarray(tv.astype(dtype)))
    return GPUBatchOperator(graph, dtype, alpha, shared_d, g, vals)
