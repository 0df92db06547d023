"""Device arrays of the GPU operators, made without CuPy's own kernels.

A first GPU run used to spend seconds compiling CuPy's kernels with NVRTC (an
elementwise operation, a reduction, a cast, a fancy index or a scan each, about 0.2 s
apiece), none of them part of a power step. What a run needs around its steps is made
here instead, from what costs no compilation:

* host work where the data is small or on the host anyway (NumPy), and copies between
  host and device of the same dtype (``cupy.asarray`` of a NumPy array, ``.get()`` of a
  contiguous array: plain copies);
* copies on the device by ``cupy.copyto`` between contiguous arrays of one dtype (a
  memcpy), zeros by ``cupy.zeros`` (a memset), sorts by ``ndarray.sort`` in place
  (CuPy's precompiled radix sort);
* the kernels of :mod:`webrank.kernels.cuda_arrays` (prebuilt with the package, like the
  steps' own) for the rest: fills, the per-node scaling, history rows, the gathered
  vector, normalisation, the split rows, binary searches, the out-degree order.

Not used on that path: ``cupy.full``, ``astype``/``copy`` (a copy kernel even between
equal dtypes), arithmetic and comparisons, boolean masks, ``flatnonzero``, ``diff``,
``cumsum`` (a copy kernel first), ``bincount``, ``argsort`` (copies its input), and
``cupy.dot`` of two vectors (a multiply kernel and a sum into its output).
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from webrank.arrays import array_module
from webrank.kernels import cuda_arrays as ka
from webrank.kernels import cuda_vectors as kv
from webrank.kernels.cuda_common import launch_strided
from webrank.kernels.cuda_staging import (
    PINNED_RESULTS,
    STAGING_SLICE_BYTES,
    download,
    pinned_empty,
    upload,
)

__all__ = [
    "LANDING_MIN_BYTES",
    "PINNED_MIN_BYTES",
    "STAGING_SLICE_BYTES",
    "HostLanding",
    "aitken",
    "axpy",
    "clip_negative",
    "copy_vector",
    "device_attribute",
    "divide",
    "dot",
    "download",
    "full",
    "gather_vector",
    "gemv",
    "google_product",
    "heavy_rows",
    "is_device_float64",
    "node_scale",
    "norm",
    "normalized",
    "out_degree_order",
    "pinned_empty",
    "rebase",
    "remap",
    "scale",
    "scale_rows",
    "scatter_add",
    "searchsorted",
    "sent_count",
    "sent_slots",
    "take",
    "take_columns",
    "transition_values",
    "upload",
    "vector_sums",
    "work_stream",
    "write_history_start",
]

_thread_streams = threading.local()


def work_stream() -> Any:
    """The calling thread's non-blocking stream on the current device, made on first use
    and kept: the GPU operators queue their work on it (not on the legacy default
    stream, on which CUDA graphs cannot be captured).

    One stream for all the calls of a thread, not one per call: CuPy's memory pool keeps
    the blocks it frees apart for each stream, so a stream made per call found none, and
    every vector its call made went to ``cudaMalloc`` (0.5-0.6 ms of a 4 ms call on
    cnr-2000 on an H200: ``benchmarks/gpu/persistent_anatomy.py``). One per thread: a
    CUDA graph is captured on a stream by one thread."""
    import cupy as cp

    streams = getattr(_thread_streams, "by_device", None)
    if streams is None:
        streams = _thread_streams.by_device = {}
    device = cp.cuda.Device().id
    stream = streams.get(device)
    if stream is None:
        stream = streams[device] = cp.cuda.Stream(non_blocking=True)
    return stream


def device_attribute(name: str) -> int:
    """The current device's attribute ``name`` (CuPy's spelling, e.g.
    ``"MultiProcessorCount"``, ``"L2CacheSize"``), read once per device (CuPy's
    ``Device.attributes`` asks the driver for all of them each time)."""
    import cupy as cp

    return _device_attribute(cp.cuda.Device().id, name)


@functools.cache
def _device_attribute(device: int, name: str) -> int:
    import cupy as cp

    return int(cp.cuda.Device(device).attributes[name])


def _launch(name: str, n: int, args: tuple, family: Any = ka) -> None:
    launch_strided(family.get_kernel(name), n, family.BLOCK, args)


def full(n: int, value: float, dtype: Any = np.float64) -> Any:
    """An n-vector of ``value`` on the current device (``cupy.full``)."""
    import cupy as cp

    dtype = np.dtype(dtype)
    out = cp.empty(int(n), dtype=dtype)
    if n:
        _launch(ka.fill_name(dtype.name), n, ka.FILL_VALUE.pack(n=n, value=value, out=out))
    return out


#: vectors of at least this many bytes come down into a prepared pageable array
#: (:class:`HostLanding`) where no page-locked one is kept for them
LANDING_MIN_BYTES = 1 << 23
#: vectors of at least this many bytes may come down into a page-locked array (smaller
#: ones copy in microseconds either way)
PINNED_MIN_BYTES = 1 << 16

_landing_lock = threading.Lock()
_landing_pool: ThreadPoolExecutor | None = None


def _landing_worker() -> ThreadPoolExecutor:
    """The one thread that prepares landing arrays (made on first use)."""
    global _landing_pool
    with _landing_lock:
        if _landing_pool is None:
            _landing_pool = ThreadPoolExecutor(1, thread_name_prefix="webrank-landing")
        return _landing_pool


class HostLanding:
    """Host memory for one vector coming down from the device, made ready while the
    device still works on it.

    A copy into a new NumPy array pays the array's page faults as it writes it: R-MAT
    22's scores (34 MB) took 10-13 ms to come down into a new array on an H100 host,
    3.5 ms into one whose pages were already there (docs/benchmarks.md). Two ways:

    * a page-locked array of the process's pool
      (:data:`~webrank.kernels.cuda_staging.PINNED_RESULTS`), where a vector of this
      size came down before: the copy runs at the link's speed straight into it;
    * else a worker thread allocates a NumPy array and touches its pages (compiled, on
      all threads, without the GIL: :func:`webrank.kernels.cpu_build.touch_pages`)
      while the caller's solve runs, and :meth:`receive` copies the vector in through
      two page-locked buffers kept for the process
      (:class:`~webrank.kernels.cuda_staging.Staging`). No CUDA call is made off the
      caller's thread: page-locking the array there (``cudaHostRegister``) made the copy
      itself five times faster but held the driver, and the solve's launches waited.

    Parameters
    ----------
    n : int
        Entries of the vector.
    dtype : dtype, default float64
    pinned : numpy.ndarray, optional
        A page-locked array of ``n`` entries to land in (no worker then).
    """

    def __init__(self, n: int, dtype: Any = np.float64, pinned: np.ndarray | None = None
                 ) -> None:
        self.n, self.dtype = int(n), np.dtype(dtype)
        self._pinned = pinned
        self._future: Future | None = (
            None if pinned is not None else _landing_worker().submit(self._prepare))

    @classmethod
    def for_vector(cls, n: int, dtype: Any = np.float64) -> HostLanding | None:
        """A landing for a vector of ``n`` entries: page-locked where the pool has (or may
        lock) one, else a prepared pageable array from ``LANDING_MIN_BYTES`` on, else
        ``None`` (a small vector's plain copy costs less than a worker)."""
        itemsize = np.dtype(dtype).itemsize
        pinned = PINNED_RESULTS.take(n, dtype) if n * itemsize >= PINNED_MIN_BYTES else None
        if pinned is not None:
            return cls(n, dtype, pinned=pinned)
        if n * itemsize >= LANDING_MIN_BYTES:
            return cls(n, dtype)
        return None

    def _prepare(self) -> np.ndarray:
        from webrank.kernels.cpu_build import touch_pages

        return touch_pages(np.empty(self.n, dtype=self.dtype))

    def fits(self, x: Any) -> bool:
        """Whether ``x`` can land here (a contiguous device vector of n entries of this
        dtype) and the landing is still unused."""
        return ((self._future is not None or self._pinned is not None)
                and array_module(x) is not np
                and getattr(x, "shape", None) == (self.n,) and x.dtype == self.dtype
                and x.flags.c_contiguous)

    def receive(self, x: Any) -> np.ndarray:
        """``x`` copied into the landing array (waits for the array, then for the copy);
        the array is the caller's from then on."""
        if not self.fits(x):
            raise ValueError("this vector does not fit the landing array")
        if self._pinned is not None:
            out, self._pinned = self._pinned, None
            x.get(out=out)  # one copy at the link's speed
            return out
        future, self._future = self._future, None
        return download(x, future.result())

    def discard(self) -> None:
        """Give up the landing (its array is freed once made, a page-locked one goes
        back to its pool)."""
        self._future = self._pinned = None


def is_device_float64(x: Any) -> bool:
    """Whether ``x`` is a C-contiguous float64 array on the device (what a kernel of ours
    may read as it is, and a memcpy may copy)."""
    import cupy as cp

    return isinstance(x, cp.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous


def copy_vector(x: Any) -> Any:
    """A float64 copy of ``x`` on the current device: a memcpy for a contiguous float64
    CuPy array (``cupy.array(x)`` would launch a copy kernel), an upload for a host
    array; anything else through CuPy."""
    import cupy as cp

    if isinstance(x, np.ndarray):
        return cp.asarray(np.ascontiguousarray(x, dtype=np.float64))
    if is_device_float64(x):
        out = cp.empty_like(x)
        cp.copyto(out, x)
        return out
    return cp.array(x, dtype=np.float64)


def node_scale(out_weight: Any, weighted: bool) -> tuple[Any, Any]:
    """``(inv_out, dangling)`` of the device out-weights: what each node's value is
    multiplied by before its out-links carry it (:func:`webrank.graph.gather_scale`, in
    the same bits) and the dangling mask (``out_weight == 0``, bool)."""
    import cupy as cp

    n = int(out_weight.size)
    inv_out = cp.empty(n, dtype=np.float64)
    dangling = cp.empty(n, dtype=np.bool_)
    if n:
        _launch(ka.node_scale_name(bool(weighted)), n, ka.NODE_SCALE.pack(
            n=n, out_weight=out_weight, inv_out=inv_out, dangling=dangling))
    return inv_out, dangling


def write_history_start(x: Any, dangling: Any, row: Any) -> None:
    """Write ``(inf, dangling mass, mass, L1 norm)`` of the float64 vector ``x`` into
    ``row`` (four contiguous float64 on the device: a step history's row 0), in a fixed
    order of additions. ``dangling``: the bool mask, or None (dangling mass 0)."""
    import cupy as cp

    n = int(x.size)
    partial = cp.empty(3 * ka.SUM_BLOCKS, dtype=np.float64)
    mask = dangling if dangling is not None else cp.zeros(1, dtype=np.bool_)
    ka.get_kernel("wr_sums_blocks")((ka.SUM_BLOCKS,), (ka.BLOCK,), ka.SUMS_BLOCKS.pack(
        n=n, x=x, has_mask=dangling is not None, mask=mask, partial=partial))
    ka.get_kernel("wr_sums_total")((1,), (ka.BLOCK,), ka.SUMS_TOTAL.pack(
        nblocks=ka.SUM_BLOCKS, partial=partial, out=row))


def vector_sums(x: Any, dangling: Any = None) -> tuple[float, float, float]:
    """``(mass, L1 norm, dangling mass)`` of the float64 vector ``x`` (waits for them)."""
    import cupy as cp

    row = cp.empty(4, dtype=np.float64)
    write_history_start(x, dangling, row)
    _, dm, mass, l1 = row.get().tolist()
    return mass, l1, dm


def divide(x: Any, total: float) -> Any:
    """``x / total`` (a new float64 vector)."""
    import cupy as cp

    out = cp.empty_like(x)
    n = int(x.size)
    if n:
        _launch("wr_divide", n, ka.DIVIDE.pack(n=n, x=x, total=total, out=out))
    return out


def normalized(x: Any) -> Any:
    """``x / x.sum()`` where the sum is positive, else a copy of ``x`` (a new float64
    vector): the sum in a fixed order (:func:`write_history_start`), the division reading
    it on the device, so nothing waits for it."""
    import cupy as cp

    row = cp.empty(4, dtype=np.float64)
    write_history_start(x, None, row)
    out = cp.empty_like(x)
    n = int(x.size)
    if n:
        _launch("wr_normalize", n, ka.NORMALIZE.pack(n=n, x=x, row=row, out=out))
    return out


def gather_vector(x: Any, inv_out: Any, dtype: Any, xs_pos: Any = None,
                  index_dtype: Any = np.int32) -> Any:
    """``x * inv_out`` in the storage ``dtype``, at ``xs_pos[i]`` for a reordered gather
    (None: in node order)."""
    import cupy as cp

    dtype = np.dtype(dtype)
    n = int(x.size)
    xs = cp.empty(n, dtype=dtype)
    permuted = xs_pos is not None
    pos = xs_pos if permuted else cp.zeros(1, dtype=index_dtype)
    if n:
        _launch(ka.gather_vector_name(pos.dtype.name, dtype.name), n, ka.GATHER_VECTOR.pack(
            n=n, x=x, inv_out=inv_out, permuted=permuted, xs_pos=pos, xs=xs))
    return xs


def heavy_rows(indptr: Any, threshold: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                     int, int]:
    """The rows of a device CSR with more than ``threshold`` in-links, on the host:
    ``(rows, first link, in-degree)`` (int64, by row), the in-links of the other rows
    and their number. Two passes over the row pointers; only the few rows found come
    back."""
    import cupy as cp

    n = int(indptr.size) - 1
    ip = indptr.dtype.name
    stats = cp.zeros(2, dtype=np.uint64)
    if n > 0:
        _launch(ka.heavy_count_name(ip), n, ka.HEAVY_COUNT.pack(
            n=n, indptr=indptr, threshold=threshold, stats=stats))
    n_heavy, light_links = (int(v) for v in stats.get())
    found = [cp.empty(n_heavy, dtype=np.int64) for _ in range(3)]
    if n_heavy:
        cursor = cp.zeros(1, dtype=np.uint64)
        _launch(ka.heavy_collect_name(ip), n, ka.HEAVY_COLLECT.pack(
            n=n, indptr=indptr, threshold=threshold, cursor=cursor, rows=found[0],
            begin=found[1], deg=found[2]))
    rows, begin, deg = (a.get() for a in found)
    return (*sorted_by_row(rows, begin, deg), light_links, n - n_heavy)


def sorted_by_row(rows: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, ...]:
    """``rows`` ascending and ``columns`` in the same order (the heavy rows arrive in the
    order their threads found them)."""
    order = np.argsort(rows, kind="stable")
    return (rows[order], *(c[order] for c in columns))


def searchsorted(ptr: Any, targets: np.ndarray) -> np.ndarray:
    """``numpy.searchsorted(ptr, targets, side="left")`` of an ascending device array and
    host targets, on the host (int64)."""
    import cupy as cp

    want = cp.asarray(np.ascontiguousarray(targets, dtype=np.int64))
    out = cp.empty(want.size, dtype=np.int64)
    if want.size:
        _launch(ka.searchsorted_name(ptr.dtype.name), want.size, ka.SEARCHSORTED.pack(
            nptr=ptr.size, ptr=ptr, ntargets=want.size, targets=want, out=out))
    return out.get()


def out_degree_order(indices: Any, n: int) -> tuple[Any, Any]:
    """``(pos, gather_indices)`` of the out-degree order (see
    :func:`webrank.backends.gpu.gather_order`): the nodes by decreasing out-degree, ties
    by id, as one 64-bit key each sorted in place."""
    import cupy as cp

    m = int(indices.size)
    ix = indices.dtype.name
    counts = cp.zeros(max(n, 1), dtype=np.int32)
    if m:
        _launch(ka.count_sources_name(ix), m, ka.COUNT_SOURCES.pack(
            m=m, indices=indices, counts=counts))
    keys = cp.empty(n, dtype=np.int64)
    if n:
        _launch("wr_degree_keys", n, ka.DEGREE_KEYS.pack(n=n, counts=counts, keys=keys))
    del counts
    keys.sort()
    pos = cp.empty(n, dtype=indices.dtype)
    if n:
        _launch(ka.order_positions_name(ix), n, ka.ORDER_POSITIONS.pack(n=n, keys=keys,
                                                                         pos=pos))
    del keys
    gather = cp.empty(m, dtype=indices.dtype)
    if m:
        _launch(ka.relabel_name(ix), m, ka.RELABEL.pack(m=m, indices=indices, pos=pos,
                                                        out=gather))
    return pos, gather


def transition_values(indices: Any, weights: Any, out_weight: Any, dtype: Any) -> Any:
    """The transition value of each in-link of a weighted graph on the device, in the
    storage ``dtype`` (:meth:`webrank.Graph.transition_values`, in the same bits)."""
    import cupy as cp

    dtype = np.dtype(dtype)
    m = int(indices.size)
    vals = cp.empty(m, dtype=dtype)
    if m:
        _launch(ka.transition_values_name(indices.dtype.name, dtype.name), m,
                ka.TRANSITION_VALUES.pack(m=m, indices=indices, weights=weights,
                                          out_weight=out_weight, vals=vals))
    return vals


# -- the solvers' vector algebra: cuBLAS (precompiled) and kernels of cuda_vectors ------

def _contiguous(*arrays: Any) -> None:
    for a in arrays:  # cuBLAS is called with unit strides
        if not a.flags.c_contiguous:
            raise ValueError("a contiguous device vector is needed")


def axpy(a: float, x: Any, y: Any) -> Any:
    """``y += a x`` in place (cuBLAS, float64); returns ``y``."""
    from cupy import cublas

    _contiguous(x, y)
    if y.size:
        cublas.axpy(float(a), x, y)
    return y


def scale(a: float, x: Any) -> Any:
    """``x *= a`` in place (cuBLAS); returns ``x``."""
    from cupy import cublas

    _contiguous(x)
    if x.size:
        cublas.scal(float(a), x)
    return x


def dot(x: Any, y: Any) -> float:
    """``x . y`` (cuBLAS, into host memory)."""
    from cupy import cublas

    _contiguous(x, y)
    if not x.size:
        return 0.0
    return float(cublas.dot(x, y, out=np.empty((), dtype=x.dtype)))


def norm(x: Any, criterion: str) -> float:
    """``||x||`` under ``criterion`` (cuBLAS ``asum``, ``nrm2`` or ``iamax``)."""
    from cupy import cublas

    _contiguous(x)
    if not x.size:
        return 0.0
    if criterion == "l1":
        return float(cublas.asum(x, out=np.empty((), dtype=x.dtype)))
    if criterion == "l2":
        return float(cublas.nrm2(x, out=np.empty((), dtype=x.dtype)))
    at = int(cublas.iamax(x, out=np.empty((), dtype=np.int32)))  # 1-based
    return abs(float(x[at - 1].get()))


def gemv(a_rows: Any, x: Any, *, transpose: bool, a: float = 1.0, y: Any = None,
         b: float = 1.0) -> Any:
    """``y = a A x + b y`` (``transpose``: ``A^T``) for a C-contiguous float64 matrix ``A``
    (cuBLAS); without ``y``, a new vector ``A x`` (or ``A^T x``)."""
    import cupy as cp
    from cupy import cublas

    _contiguous(a_rows, x)
    if y is None:
        y = cp.zeros(a_rows.shape[1] if transpose else a_rows.shape[0], dtype=np.float64)
    _contiguous(y)
    if a_rows.size:
        cublas.gemv("T" if transpose else "N", float(a), a_rows, x, float(b), y)
    elif b != 1.0:
        scale(b, y)
    return y


def clip_negative(x: Any) -> Any:
    """``max(x, 0)`` (a new float64 vector)."""
    import cupy as cp

    out = cp.empty_like(x)
    if x.size:
        _launch("wr_clip_negative", x.size, kv.CLIP_NEGATIVE.pack(n=x.size, x=x, out=out),
                kv)
    return out


def aitken(x2: Any, x1: Any, x0: Any) -> Any:
    """The guarded Aitken extrapolation per node (a new float64 vector,
    :meth:`webrank.backends.base.Operator.aitken`)."""
    import cupy as cp

    out = cp.empty_like(x0)
    if x0.size:
        _launch("wr_aitken", x0.size, kv.AITKEN.pack(n=x0.size, x2=x2, x1=x1, x0=x0, out=out),
                kv)
    return out


def google_product(indptr: Any, indices: Any, vals: Any, x: Any, inv_out: Any,
                   alpha: float, cd: float, d: Any, cv: float, v: Any) -> Any:
    """``alpha P^T (x / out) + cd d + cv v`` (``vals`` the links' transition values of a
    weighted graph, None for counts), a new float64 vector; one warp per row."""
    import cupy as cp

    n = int(indptr.size) - 1
    y = cp.empty(n, dtype=np.float64)
    if n:
        name = kv.google_product_name(indptr.dtype.name, indices.dtype.name,
                                      None if vals is None else vals.dtype.name)
        launch_strided(kv.get_kernel(name), n * 32, kv.BLOCK, kv.GOOGLE_PRODUCT.pack(
            n=n, indptr=indptr, indices=indices, vals=x if vals is None else vals, x=x,
            inv_out=inv_out, alpha=alpha, cd=cd, d=d, cv=cv, v=v, y=y))
    return y


def scatter_add(rows: Any, values: Any, out: Any) -> None:
    """``out[rows] += values`` (int64 ``rows``, all distinct; float64)."""
    n = int(rows.size)
    if n:
        _launch("wr_scatter_add", n, kv.SCATTER_ADD.pack(n=n, rows=rows, values=values,
                                                         out=out), kv)


def scale_rows(x: Any, factor: Any, dtype: Any, out: Any = None) -> Any:
    """``x * factor[:, None]`` of a row-major n×b float64 block, in ``dtype`` (into
    ``out``, a row-major block of that dtype, if given)."""
    import cupy as cp

    if out is None:
        out = cp.empty(x.shape, dtype=dtype)
    n, b = x.shape
    if x.size:
        _launch(kv.scale_rows_name(out.dtype.name), x.size, kv.SCALE_ROWS.pack(
            n=n, b=b, x=x, scale=factor, out=out), kv)
    return out


def take_columns(block: Any, keep: np.ndarray) -> Any:
    """Columns ``keep`` of a row-major n×b block, as a new row-major block."""
    import cupy as cp

    n, b = block.shape
    keep = np.asarray(keep, dtype=np.int64)
    out = cp.empty((n, keep.size), dtype=block.dtype)
    if out.size:
        _launch(kv.take_columns_name(block.dtype.name), out.size, kv.TAKE_COLUMNS.pack(
            n=n, b=b, nk=keep.size, keep=cp.asarray(keep), src=block, dst=out), kv)
    return out


def take(src: Any, idx: Any, out: Any) -> Any:
    """``out[k] = src[idx[k]]`` for every k of ``idx`` (``out`` as long as ``idx``)."""
    n = int(idx.size)
    if n:
        _launch(kv.take_name(src.dtype.name, idx.dtype.name), n,
                kv.TAKE.pack(n=n, src=src, idx=idx, out=out), kv)
    return out


def remap(idx: Any, slot: Any) -> Any:
    """``idx[k] = slot[idx[k]]`` in place (``slot`` of ``idx``'s dtype)."""
    m = int(idx.size)
    if m:
        _launch(kv.remap_name(idx.dtype.name), m, kv.REMAP.pack(m=m, idx=idx, slot=slot), kv)
    return idx


def rebase(ptr: Any, base: int, dtype: Any) -> Any:
    """``ptr - base`` in ``dtype`` (a new array on ``ptr``'s device): the row pointers of
    a slice of a CSR, starting at 0."""
    import cupy as cp

    n = int(ptr.size)
    out = cp.empty(n, dtype=dtype)
    if n:
        _launch(ka.rebase_name(ptr.dtype.name, out.dtype.name), n,
                ka.REBASE.pack(n=n, ptr=ptr, base=base, out=out))
    return out


def sent_count(out_weight: Any) -> tuple[Any, int]:
    """How many of the rows of ``out_weight`` (float64, device) have out-links, and the
    tile offsets :func:`sent_slots` takes (the first pass of its scan)."""
    return ka.tile_offsets(int(out_weight.size), ka.TILE_POSITIVE, weights=out_weight)


def sent_slots(out_weight: Any, counted: tuple[Any, int], first: int, zero: int,
               slot: Any) -> Any:
    """The rows with out-links (``out_weight > 0``) numbered in row order from ``first``:
    ``slot[row]`` their number (every other row's ``zero``), and their rows returned (a
    new array of ``slot``'s dtype, as long as ``counted``'s total from
    :func:`sent_count`). ``slot`` is as long as ``out_weight``."""
    import cupy as cp

    offsets, count = counted
    n = int(out_weight.size)
    sources = cp.empty(count, dtype=slot.dtype)
    if n:
        ka.get_kernel(ka.sent_slots_name(slot.dtype.name))(
            (int(offsets.size),), (ka.BLOCK,), ka.SENT_SLOTS.pack(
                len=n, weights=out_weight, tile_offsets=offsets, first=first, zero=zero,
                sources=sources, slot=slot))
    return sources
