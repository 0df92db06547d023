"""Graph construction on the GPU: device edge arrays → in-link CSR, never leaving the card.

For graphs generated on the device (``webrank.generate.rmat(..., xp=cupy)``) or already
there, building the CSR on the host would cost two PCIe copies and a CPU sort of a
billion keys. Here the edges become 64-bit keys ``(target << 32) | source``, one radix sort
(CuPy's ``sort``, CUB/Thrust underneath) orders them by row and by source within a row,
neighbouring equal keys are the duplicates, and

* ``indices`` are the low 32 bits of the sorted keys (the sources),
* ``indptr`` is a binary search of every row's first key in the sorted keys,
* ``out_weight`` is a histogram of the sources,

so the only O(m) temporaries are the keys and the sort's scratch space (about 16 bytes
per edge at the peak, on top of the input). The result is a :class:`~webrank.graph.Graph`
whose arrays are CuPy arrays (``graph.on_gpu``): ``webrank.pagerank(graph, device="gpu")``
uses them in place; :meth:`~webrank.graph.Graph.to_host` copies it for the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.errors import DeviceMemoryError, GraphFormatError
from webrank.graph import Graph

__all__ = ["graph_on_device"]

_MAX_NODES = 2**31 - 1  # sources must fit the low 32 bits of a key, and int32 indices


def graph_on_device(src: Any, dst: Any, num_nodes: int, *, duplicates: str = "collapse",
                    name: str | None = None) -> Graph:
    """The in-link CSR of the edges ``src[k] -> dst[k]``, built on the GPU.

    Parameters
    ----------
    src, dst : cupy.ndarray of int32 or int64
        Node ids in ``0..num_nodes-1`` (node set ``"range"``), on the current device.
    num_nodes : int
        Number of nodes n (at most 2**31 - 1).
    duplicates : {"collapse", "sum"}, default "collapse"
        Parallel edges: keep one (a ``DiGraph``), or keep their count as the edge's
        weight (a multigraph).
    name : str, optional
        Shown in messages and reports.

    Returns
    -------
    Graph
        Unweighted (or multiplicity-weighted) graph with CuPy arrays.

    Raises
    ------
    GraphFormatError
        Mismatched lengths, or an id outside ``0..num_nodes-1``.
    DeviceMemoryError
        The keys and the sort's scratch space do not fit in free device memory.
    """
    import cupy as cp

    if duplicates not in ("collapse", "sum"):
        raise ValueError(f"duplicates must be 'collapse' or 'sum', not {duplicates!r}")
    n = int(num_nodes)
    if not 0 < n <= _MAX_NODES:
        raise ValueError(f"num_nodes must be in 1..{_MAX_NODES}, not {num_nodes!r}")
    src, dst = cp.asarray(src).ravel(), cp.asarray(dst).ravel()
    if src.shape != dst.shape:
        raise GraphFormatError(f"src and dst differ in length ({src.size} vs {dst.size})",
                               path=name)
    if src.dtype.kind not in "iu" or dst.dtype.kind not in "iu":
        raise GraphFormatError("node ids must be integers", path=name)
    m = int(src.size)
    if m:
        lo = int(cp.minimum(src.min(), dst.min()))
        hi = int(cp.maximum(src.max(), dst.max()))
        if lo < 0 or hi >= n:
            raise GraphFormatError(f"node id {lo if lo < 0 else hi} is out of range for "
                                   f"num_nodes={n}", path=name)
    # keys, sort scratch (about the keys again), the flag array and the int32 indices
    need = m * (8 + 8 + 1 + 4) + 24 * (n + 1)
    free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    if need > free:
        raise DeviceMemoryError(need, free, name or f"{m:,} edges")

    indptr, indices, weights = csr_on_device(src, dst, n, duplicates)
    out_weight = (cp.bincount(indices, minlength=n) if weights is None else
                  cp.bincount(indices, weights=weights, minlength=n)).astype(cp.float64)
    return Graph(indptr=indptr, indices=indices, out_weight=out_weight, weights=weights,
                 name=name)


_COMPACT_SLICE = 1 << 30  # keys merged per step (below CuPy's 2**31 mask limit)


def csr_on_device(src: Any, row: Any, rows: int, duplicates: str = "collapse"
                  ) -> tuple[Any, Any, Any]:
    """The CSR of the links ``src[k] -> row[k]`` (CuPy arrays, rows ``0..rows-1``: the
    whole graph, or one part of it in webrank.distributed): keys ``(row << 32) | src``,
    one radix sort, neighbouring equal keys merged (``"sum"`` keeps their count as the
    weight), row pointers from the counts of each row. Returns ``(indptr, indices,
    weights or None)``, int32 indices, int32 or int64 row pointers. The keys are the
    only O(m) temporary (about 16 bytes per link at the sort's peak)."""
    import cupy as cp

    keys = (row.astype(cp.int64) << 32) | src.astype(cp.int64)
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
    # the low 32 bits of each key are its source (ids < 2**31, so the cast keeps them)
    indices = keys[:nnz].astype(cp.int32)
    del keys
    indptr = cp.zeros(rows + 1, dtype=cp.int32 if nnz <= _MAX_NODES else cp.int64)
    indptr[1:] = cp.cumsum(row_counts)
    return indptr, indices, weights


def device_bytes(num_nodes: int, num_edges: int, dtype: str = "float32") -> int:
    """Device memory a PageRank run of the GPU engine holds, in bytes.

    The pattern-only CSR (4-byte indices; 4- or 8-byte row pointers), the gathered
    vector in ``dtype``, and the float64 vectors of the iteration (x and its successor,
    v, d, 1/out-degree, the split rows' sums: six n-vectors), plus the out-weights and
    dangling flags: about ``4 m + (61 + 2 itemsize) n`` bytes.
    """
    item = np.dtype(dtype).itemsize
    ptr = 4 if num_edges <= _MAX_NODES else 8
    return int(4 * num_edges + ptr * (num_nodes + 1)
               + num_nodes * (8 * 6 + 2 * item + 8 + 1))
