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

from typing import Any

import numpy as np

from webrank.kernels import cuda_arrays as ka

__all__ = ["copy_vector", "divide", "full", "gather_vector", "heavy_rows", "node_scale",
           "out_degree_order", "searchsorted", "transition_values", "vector_sums",
           "write_history_start"]

#: most blocks of a grid-strided launch
MAX_GRID = 1 << 16


def _grid(n: int) -> int:
    return int(max(1, min(-(-int(n) // ka.BLOCK), MAX_GRID)))


def _launch(name: str, n: int, args: tuple) -> None:
    ka.get_kernel(name)((_grid(n),), (ka.BLOCK,), args)


def full(n: int, value: float, dtype: Any = np.float64) -> Any:
    """An n-vector of ``value`` on the current device (``cupy.full``)."""
    import cupy as cp

    dtype = np.dtype(dtype)
    out = cp.empty(int(n), dtype=dtype)
    if n:
        _launch(ka.fill_name(dtype.name), n, ka.FILL_VALUE.pack(n=n, value=value, out=out))
    return out


def copy_vector(x: Any) -> Any:
    """A float64 copy of ``x`` on the current device: a memcpy for a contiguous float64
    CuPy array (``cupy.array(x)`` would launch a copy kernel), an upload for a host
    array; anything else through CuPy."""
    import cupy as cp

    if isinstance(x, np.ndarray):
        return cp.asarray(np.ascontiguousarray(x, dtype=np.float64))
    if isinstance(x, cp.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous:
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
