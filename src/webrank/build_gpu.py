"""Edge columns → in-link CSR on the GPU: the build of :mod:`webrank.build`, on the card.

A run on the GPU needs the graph there; building the CSR on the host first costs a
parallel CPU sort, Numba's start in a fresh process (seconds on some hosts) and then the
upload of the CSR anyway. Here the parsed columns go up as they are and the card does
the rest:

* **node ids** (``node_ids="appear"``): a presence map over the id range marks the ids
  that occur, its prefix sum renumbers them in increasing order (ids spread far beyond
  the link count, such as hashes, are sorted instead: ``unique`` + ``searchsorted``);
* **CSR**: each link becomes a 64-bit key ``(target << 32) | source``, one radix sort
  (CuPy's ``sort``, CUB underneath) orders them by row and by source within a row,
  neighbouring equal keys are the duplicates (:func:`csr_on_device`);
* **weights** follow their keys through a stable ``argsort``: the last weight of a
  repeated link wins (file order), or they are added (``duplicates="sum"``; in an order
  of the card's choosing, so a sum may differ from the host build's in its last bit).

The result is the graph :meth:`webrank.Graph.from_edges` defines, with CuPy arrays.
The code is array-agnostic (``xp``): with NumPy it runs on the host, which is how the
tests check it against the host build on machines without a GPU.
Peak device memory: about 40 bytes per link unweighted (the int64 columns, the keys and
the sort's scratch), 64 weighted (:func:`device_build_bytes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.arrays import array_module, to_device
from webrank.build import Chunked, Pieces, fixed_node_set

__all__ = ["csr_on_device", "device_build_bytes", "edge_csr_on_device"]

_MAX_NODES = 2**31 - 1  # sources must fit the low 32 bits of a key, and int32 indices
_COMPACT_SLICE = 1 << 30  # keys merged per step (below CuPy's 2**31 mask limit)
#: ids up to this many times the link count are renumbered through a presence map
_DENSE_RANGE = 4


def device_build_bytes(num_edges: int, id_range: int, weighted: bool) -> int:
    """Device bytes :func:`edge_csr_on_device` holds at its peak, about: the int64
    columns (16 a link), the keys and the sort's scratch (16), the int32 indices (4),
    weights, their order and their sorted copy (24), and the presence map."""
    per_link = 36 + (24 if weighted else 0)
    return int(per_link * num_edges + 5 * min(id_range, _DENSE_RANGE * num_edges + 1))


def edge_csr_on_device(src: Any, dst: Any, weight: Any, *,
                       num_nodes: int | None, node_ids: str, labels: Any,
                       duplicates: str, name: str | None,
                       xp: Any = None) -> dict[str, Any] | None:
    """The arrays of :meth:`webrank.Graph.from_edges` (``indptr``, ``indices``,
    ``out_weight``, ``weights``, ``labels``), built on the current CUDA device from
    host columns already checked there (int64 ids >= 0, float64 weights >= 0; arrays,
    :class:`~webrank.build.Chunked` or :class:`~webrank.build.Pieces`).
    ``xp``: the array module, CuPy by default (NumPy runs the same steps on the host).

    Returns None where the device cannot take it (2**31 nodes or more, or not enough
    free memory): the caller builds on the host.

    Raises
    ------
    GraphFormatError
        An id beyond ``num_nodes`` (``node_ids="range"``) or beyond the labels.
    """
    if xp is None:
        import cupy as xp
    cp = xp
    m = int(src.size)
    if m == 0 or (weight is not None and m > _MAX_NODES):
        return None  # (weighted links are merged on the device below 2**31 links)
    # the links' part of the peak, checked before the columns go up (a presence map
    # spans at most DENSE_RANGE * m ids); the nodes' part once the ids are known
    if cp is not np and device_build_bytes(m, _DENSE_RANGE * m + 1, weight is not None) \
            > _free_bytes(cp):
        return None
    d_src, d_dst = _upload(src, cp.int64, cp), _upload(dst, cp.int64, cp)
    hi = int(cp.maximum(d_src.max(), d_dst.max()))
    fixed, node_labels = fixed_node_set(hi, m, labels=labels, node_ids=node_ids,
                                        num_nodes=num_nodes, name=name)
    compact = fixed is None
    n = fixed or 0  # "appear": known once the ids are renumbered
    if n > _MAX_NODES or (cp is not np and 24 * n > _free_bytes(cp)):
        return None  # (the row pointers, the degrees and their count for n nodes)
    if compact:  # node_ids="appear": renumber the ids that occur
        d_src, d_dst, ids = _compact(d_src, d_dst, hi, m, cp)
        n = int(ids.size)
        if n > _MAX_NODES:
            return None
        if n != hi + 1:  # else the ids already are 0..n-1
            node_labels = ids if cp is np else ids.get()
        del ids
    d_w = None if weight is None else _upload(weight, cp.float64, cp)
    indptr, indices, weights = csr_on_device(d_src, d_dst, n, duplicates, d_w)
    del d_src, d_dst, d_w
    out_weight = (cp.bincount(indices, minlength=n) if weights is None else
                  cp.bincount(indices, weights=weights, minlength=n)).astype(cp.float64)
    return {"indptr": indptr, "indices": indices, "out_weight": out_weight,
            "weights": weights, "labels": node_labels}


def _upload(col: Any, dtype: Any, cp: Any) -> Any:
    """A host column (an array, or a reader's :class:`~webrank.build.Chunked` or
    :class:`~webrank.build.Pieces`, copied part by part, never joined on the host) as a
    device array of ``dtype``."""
    if isinstance(col, Chunked):
        parts = [col.data[a:a + c] for a, c in zip(col.starts.tolist(),
                                                   col.counts.tolist(), strict=True)]
    elif isinstance(col, Pieces):
        parts = col.arrays
    else:
        parts = [col]
    if cp is np:
        return np.asarray(parts[0] if len(parts) == 1 else np.concatenate(parts), dtype=dtype)
    if len(parts) == 1:
        return to_device(parts[0], dtype)
    out = cp.empty(col.size, dtype=dtype)
    at = 0
    for part in parts:
        out[at:at + part.size] = to_device(part, dtype)
        at += part.size
    return out


def _free_bytes(cp: Any) -> int:
    """Free device memory, the memory pool's cached blocks included."""
    return int(cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes())


def _compact(src: Any, dst: Any, hi: int, m: int, cp: Any) -> tuple[Any, Any, Any]:
    """``(src, dst, ids)``: the ids that occur, ascending, and the links renumbered into
    them (int32)."""
    if hi < _DENSE_RANGE * m:
        present = cp.zeros(hi + 1, dtype=cp.int32)
        present[src] = 1
        present[dst] = 1
        ids = cp.flatnonzero(present)
        code = cp.cumsum(present, dtype=cp.int32)
        del present
        code -= 1
        return code[src], code[dst], ids
    ids = cp.unique(cp.concatenate([src, dst]))
    return (cp.searchsorted(ids, src).astype(cp.int32),
            cp.searchsorted(ids, dst).astype(cp.int32), ids)


def csr_on_device(src: Any, row: Any, rows: int, duplicates: str = "collapse",
                  weight: Any = None) -> tuple[Any, Any, Any]:
    """The CSR of the links ``src[k] -> row[k]`` (CuPy arrays, rows ``0..rows-1``: the
    whole graph, or one part of it in webrank.distributed): keys ``(row << 32) | src``,
    one radix sort, neighbouring equal keys merged. Unweighted (``weight`` None),
    ``"sum"`` keeps a merged link's count as its weight; with ``weight`` (float64, one
    per link) the last of a repeated link's weights wins, or with ``"sum"`` they add up.
    Returns ``(indptr, indices, weights or None)``, int32 indices, int32 or int64 row
    pointers. The keys are the only O(m) temporary unweighted (about 16 bytes per link
    at the sort's peak)."""
    cp = array_module(src)
    keys = (row.astype(cp.int64) << 32) | src.astype(cp.int64)
    if weight is not None:
        return _weighted_csr(keys, weight, rows, duplicates)
    keys.sort()
    m = int(keys.size)
    row_counts = cp.zeros(rows, dtype=cp.int64)
    starts = []
    nnz = 0
    last_key = keys[:0]
    # Merged in place a slice at a time: CuPy's boolean-mask indexing stops at 2**31
    # elements, and a slice's survivors never land past the slice's own start.
    for lo in range(0, m, _COMPACT_SLICE):
        hi = min(m, lo + _COMPACT_SLICE)
        first = cp.empty(hi - lo, dtype=cp.bool_)
        cp.not_equal(keys[lo + 1:hi], keys[lo:hi - 1], out=first[1:])
        # the slice before ends with last_key (read before that slice was rewritten)
        first[:1] = keys[lo:lo + 1] != last_key if lo else True
        last_key = keys[hi - 1:hi].copy()
        if duplicates == "sum":
            starts.append(cp.flatnonzero(first) + lo)
        kept = keys[lo:hi][first]
        del first
        keys[nnz:nnz + kept.size] = kept
        row_counts += cp.bincount((kept >> 32).astype(cp.int32), minlength=rows)
        nnz += int(kept.size)
        del kept
    weights = None
    if starts:
        counts = cp.diff(cp.append(cp.concatenate(starts), m))
        if int(counts.max()) > 1:
            weights = counts.astype(cp.float64)
        del counts
    del starts
    return _csr_of_keys(keys[:nnz], row_counts, weights)


def _weighted_csr(keys: Any, weight: Any, rows: int, duplicates: str
                  ) -> tuple[Any, Any, Any]:
    """:func:`csr_on_device` with per-link weights (fewer than 2**31 links)."""
    cp = array_module(keys)
    m = int(keys.size)
    if m > _MAX_NODES:
        raise ValueError("weighted links are merged on the device below 2**31 links")
    order = cp.argsort(keys, kind="stable")  # file order within a key
    keys = keys[order]
    w = weight[order]
    del order
    first = cp.empty(m, dtype=cp.bool_)
    first[0] = True
    cp.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = cp.flatnonzero(first)
    if duplicates == "sum":
        weights = cp.bincount(cp.cumsum(first) - 1, weights=w)
    else:  # the last link of each run of equal keys
        weights = w[cp.append(starts[1:] - 1, m - 1)]
    del first, w
    kept = keys[starts]
    del keys, starts
    row_counts = cp.bincount((kept >> 32).astype(cp.int32), minlength=rows)
    return _csr_of_keys(kept, row_counts, weights)


def _csr_of_keys(keys: Any, row_counts: Any, weights: Any) -> tuple[Any, Any, Any]:
    """``(indptr, indices, weights)`` of sorted, merged keys and their rows' counts."""
    cp = array_module(keys)
    nnz = int(keys.size)
    # the low 32 bits of each key are its source (ids < 2**31, so the cast keeps them)
    indices = keys.astype(cp.int32)
    indptr = cp.zeros(row_counts.size + 1, dtype=cp.int32 if nnz <= _MAX_NODES
                      else cp.int64)
    indptr[1:] = cp.cumsum(row_counts)
    return indptr, indices, weights
