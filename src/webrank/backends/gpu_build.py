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

from webrank.build_gpu import csr_on_device, out_weight_of
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
        lo = min(int(src.min()), int(dst.min()))  # (CuPy's precompiled reductions)
        hi = max(int(src.max()), int(dst.max()))
        if lo < 0 or hi >= n:
            raise GraphFormatError(f"node id {lo if lo < 0 else hi} is out of range for "
                                   f"num_nodes={n}", path=name)
    # keys, sort scratch (about the keys again), the flag array and the int32 indices
    need = m * (8 + 8 + 1 + 4) + 24 * (n + 1)
    free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    if need > free:
        raise DeviceMemoryError(need, free, name or f"{m:,} edges")

    indptr, indices, weights = csr_on_device(src, dst, n, duplicates)
    out_weight = out_weight_of(indices, weights, n)  # (weights: link counts)
    return Graph(indptr=indptr, indices=indices, out_weight=out_weight, weights=weights,
                 name=name)


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
