"""Row partitions of the in-link CSR: the unit of PageRank on several GPUs or processes.

A graph is split **1D by destination rows** into P parts of about equal in-link counts:
part i owns rows ``bounds[i]:bounds[i + 1]`` (global node ids) with every in-link of those
rows, sources kept as global ids. A power step on part i needs the gathered vector ``xs``
of *all* sources and writes ``xs`` of its own rows only, so one step of the whole graph is
each part's step followed by an all-gather of the parts' slices of ``xs`` (and an
all-reduce of four numbers: residual, dangling mass, mass, L1 norm). Part i's memory is its
share of the links plus the full ``xs`` (4 bytes per node in float32).

This is cuGraph's 1D decomposition. A 2D split (a √P x √P grid of blocks of the matrix,
each GPU gathering only the ``xs`` of its column block and reducing partial row sums
along its row of the grid) moves ``n / √P`` instead of ``n`` values per GPU per step; it
pays once the all-gather of the full ``xs`` costs more than a part's share of the links,
that is when P approaches the average in-degree (docs/distributed.md has the model).
:class:`Part` keeps the row range explicit so that a column range can be added beside it.

The weighted case keeps the raw weights on the links and divides by the out-weight at the
source (``xs = x / out_weight``), so no part needs another part's out-weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.arrays import to_host
from webrank.graph import Graph

__all__ = ["Part", "edge_balanced_bounds", "histogram_bounds", "split_graph"]


@dataclass
class Part:
    """Rows ``row_begin:row_end`` of a graph's in-link CSR, sources as global ids.

    Attributes
    ----------
    index : int
        Part number (0-based), the rank that owns it.
    row_begin, row_end : int
        The rows (destination node ids) this part owns.
    n : int
        Nodes of the whole graph (sources are ids in ``0..n-1``).
    indptr : ndarray of int32 or int64, shape (rows + 1,)
        Row pointers, starting at ``indptr_base`` (int32 where the part's links fit,
        once rebased).
    indices : ndarray of int32 or int64
        Source of each in-link (global id).
    weights : ndarray of float64 or None
        Raw weight of each in-link (weighted graphs); None when unweighted.
    out_weight : ndarray of float64, shape (rows,)
        Out-degree (or total out-weight) of each row's node, over the whole graph.
    indptr_base : int
        ``indptr[0]``: 0 once rebased; else the part's row pointers are a view of the
        whole graph's, its links ``indices`` start at that link of the graph (a GPU
        placement rebases them on the GPU, :func:`split_graph`'s ``rebased=False``).
    renamed : bool
        Whether ``indices`` (a GPU array, used in place) now hold the slots of a run's
        exchange instead of node ids: such a part belongs to that run
        (:class:`~webrank.distributed.placement.Placement`).
    """

    index: int
    row_begin: int
    row_end: int
    n: int
    indptr: Any
    indices: Any
    weights: Any
    out_weight: Any
    indptr_base: int = 0
    renamed: bool = False

    @property
    def rows(self) -> int:
        return self.row_end - self.row_begin

    @property
    def num_edges(self) -> int:
        return int(self.indices.size)

    def nbytes(self) -> int:
        arrays = (self.indptr, self.indices, self.weights, self.out_weight)
        return int(sum(a.nbytes for a in arrays if a is not None))


def edge_balanced_bounds(indptr: np.ndarray, parts: int) -> np.ndarray:
    """Row bounds (``parts + 1`` ids, non-decreasing) splitting the CSR into ``parts``
    ranges of about equal in-link counts. A range may be empty (a hub row holding more
    than its share of the links, or more parts than rows)."""
    if parts < 1:
        raise ValueError(f"parts must be a positive integer, not {parts!r}")
    n = indptr.size - 1
    m = int(indptr[-1])
    targets = np.arange(parts + 1, dtype=np.float64) * (m / parts)
    if isinstance(indptr, np.ndarray):
        bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    else:  # a GPU's row pointers: a bisection of single reads (no kernel to compile)
        bounds = np.array([_first_at_least(indptr, t) for t in targets], dtype=np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.maximum.accumulate(np.clip(bounds, 0, n))


def _first_at_least(indptr: Any, target: float) -> int:
    """The first row ``r`` with ``indptr[r] >= target`` (``np.searchsorted``'s left
    side), by bisection over single entries of a GPU array."""
    lo, hi = 0, indptr.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if int(indptr[mid]) < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


def histogram_bounds(counts: np.ndarray, n: int, parts: int) -> np.ndarray:
    """Row bounds from a coarse in-link histogram (``counts[b]`` links into the node ids
    ``b * n // B : (b + 1) * n // B``, B = ``counts.size``): what ranks that each hold a
    share of the edges agree on after one all-reduce of the histogram, without any of them
    holding the whole CSR. Balanced to one bucket."""
    buckets = counts.size
    edges = np.cumsum(counts, dtype=np.float64)
    total = edges[-1] if edges.size else 0.0
    targets = np.arange(1, parts, dtype=np.float64) * (total / parts)
    cut = np.searchsorted(edges, targets, side="left") + 1  # buckets before the cut
    starts = (np.arange(buckets + 1, dtype=np.int64) * n) // buckets
    bounds = np.concatenate([[0], starts[np.minimum(cut, buckets)], [n]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


def split_graph(graph: Graph, parts: int | None = None,
                bounds: np.ndarray | None = None, *, on_device: bool = False,
                rebased: bool = True) -> list[Part]:
    """The graph as ``parts`` row parts (``bounds`` from :func:`edge_balanced_bounds`
    unless given): each part's links and out-weights are views of the graph's, its row
    pointers rebased to 0 (a new array), or with ``rebased=False`` views too (for the
    GPUs, which rebase them faster than the host: :class:`Part`'s ``indptr_base``).
    Host arrays, or with ``on_device`` a GPU graph's parts stay on its GPU (views of its
    arrays: copy a part before changing it)."""
    g = graph if on_device and graph.on_gpu else graph.to_host()
    if bounds is None:
        bounds = edge_balanced_bounds(g.indptr, int(parts or 1))
    bounds = np.asarray(bounds, dtype=np.int64)
    if bounds[0] != 0 or bounds[-1] != g.n or np.any(np.diff(bounds) < 0):
        raise ValueError(f"row bounds must rise from 0 to n={g.n}, not {bounds.tolist()}")
    indptr = g.indptr

    def part(i: int) -> Part:
        r0, r1 = int(bounds[i]), int(bounds[i + 1])
        lo, hi = int(indptr[r0]), int(indptr[r1])
        views = {"indices": g.indices[lo:hi], "out_weight": g.out_weight[r0:r1],
                 "weights": None if g.weights is None else g.weights[lo:hi]}
        if not rebased:
            return Part(index=i, row_begin=r0, row_end=r1, n=g.n,
                        indptr=indptr[r0:r1 + 1], indptr_base=lo, **views)
        # rebased to 0, in int32 where the part's links allow (one pass, half the bytes;
        # a GPU graph's on the host: its part goes up from there)
        ptr = np.subtract(to_host(indptr[r0:r1 + 1]), lo,
                          dtype=np.int32 if hi - lo < 2**31 else np.int64)
        return Part(index=i, row_begin=r0, row_end=r1, n=g.n, indptr=ptr, **views)

    count = bounds.size - 1
    if count < 2 or g.n < 1 << 20 or g.on_gpu or not rebased:
        return [part(i) for i in range(count)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(count, 16)) as pool:  # NumPy's passes run side by side
        return list(pool.map(part, range(count)))
