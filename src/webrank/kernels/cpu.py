"""CPU kernels: the fused PageRank step (compiled C++), parallel or on one thread.

One pass over the in-link CSR per iteration computes, for every node i,

    x'[i]  = alpha * sum_{j -> i} val(j,i) * xs[j] + alpha * dm * d[i] + (1 - alpha) * v[i]
    xs'[i] = x'[i] * inv_out[i]          (the vector the next pass gathers)

and the reductions the next pass and the stopping test need: the residual under the
chosen norm and the dangling mass of x'.

* :func:`fused_step`, compiled with the package (``native/power.cpp``, OpenMP), one
  pass, parallel over rows split into chunks of equal *edge* count (a row-count split
  would leave one thread with every hub of a web graph). Graphs with fewer than
  :data:`SMALL_GRAPH_EDGES` edges run it on one thread over one chunk (the choice is
  :func:`use_native`): a serial step does not slow down when other processes hold the
  cores (a parallel step then waits for its threads);
* :func:`in_link_matrix`, the CSR as SciPy's matrix (or, for small graphs, NumPy's
  :class:`EdgeSums`): the generic product of a distributed run's CPU parts. No solve on
  one machine uses SciPy (its import is 0.2-0.3 s of a first call on 2 cores, and the
  compiled step on one thread is as fast); the tests hold the compiled step to a SciPy
  one (``tests/reference.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.arrays import distinct
from webrank.kernels.native import available_cpus, lib, num_threads

__all__ = [
    "SMALL_GRAPH_EDGES", "CPUBlockedLayout", "EdgeSums",
    "StepTerms", "available_cpus", "blocked_layout", "blocked_step", "chunk_bounds",
    "default_chunks", "fused_step", "in_link_matrix", "num_threads",
    "row_range_sums", "use_native",
]

# Graphs with fewer edges than this take the serial step (see the module docstring):
# below it a parallel step's thread start-up outweighs its gain. ``WEBRANK_SMALL_GRAPH_EDGES``
# sets it (read at import; 0: always the compiled step).
SMALL_GRAPH_EDGES = int(os.environ.get("WEBRANK_SMALL_GRAPH_EDGES") or 150_000)


def use_native(num_edges: int) -> bool:
    """Whether a graph takes the parallel compiled step rather than the serial one.

    Parameters
    ----------
    num_edges : int
        Edges of the graph (stored CSR entries).

    Returns
    -------
    bool
        True from :data:`SMALL_GRAPH_EDGES` edges on (default 150,000).
    """
    return num_edges >= SMALL_GRAPH_EDGES


def chunk_bounds(indptr: np.ndarray, chunks: int) -> np.ndarray:
    """Row boundaries splitting the CSR into ``chunks`` pieces of about equal edge count."""
    n = indptr.size - 1
    m = int(indptr[-1])
    targets = np.linspace(0, m, chunks + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return distinct(np.clip(bounds, 0, n), is_sorted=True)


@dataclass(frozen=True)
class StepTerms:
    """What a power step adds to its link sums, the same every step of a run.

    Attributes
    ----------
    v, d : ndarray of float64
        The teleport and dangling distributions (length 1, holding ``1/n``, when uniform).
    inv_out : ndarray of float64
        Each node's gather scale (:func:`webrank.graph.gather_scale`).
    alpha : float
        The damping factor.
    crit : int
        The residual: L1 sum (0), L2 *squared* sum (1) or max (2); see
        :func:`webrank.kernels.criteria.kernel_criterion`.
    """

    v: np.ndarray
    d: np.ndarray
    inv_out: np.ndarray
    alpha: float
    crit: int


def fused_step(
    indptr: np.ndarray,
    indices: np.ndarray,
    vals: np.ndarray,
    terms: StepTerms,
    *,
    xs: np.ndarray,
    x: np.ndarray,
    dm: float,
    mass: float,
    delta: bool,
    bounds: np.ndarray,
    x_out: np.ndarray,
    xs_out: np.ndarray,
    partial: np.ndarray,
    threads: int | None = None,
) -> tuple[float, float, float]:
    """One fused power step; returns ``(residual, dangling mass, mass)`` of the new vector.

    ``vals`` is empty for unweighted graphs; ``terms`` holds what is the same every step
    (:class:`StepTerms`); ``dm`` and ``mass`` are the dangling mass and the mass of the
    vector gathered (the previous step's returns).

    Plain step (``delta=False``): ``xs`` holds ``x / out``; writes ``x' = G x`` and
    ``x' / out``. Delta step (``delta=True``): ``xs`` holds ``(x_k - x_{k-1}) / out``;
    the change obeys ``D' = alpha (P^T D + (dangling . D) d)`` (the teleport term cancels),
    so the step writes ``x' = x + D'`` and ``D' / out``. Rounding ``D`` to float32 errs
    relative to ``D``, which vanishes, where rounding ``x`` errs relative to ``x``: with a
    float32 gather the plain step stalls at an L1 residual near 1e-8, the delta step
    does not. The true ``D`` sums to zero; rounding gives it a little mass, which the
    iteration would only damp by ``alpha`` a step, so each delta step subtracts
    ``alpha * mass(D) * v`` (``mass`` is the previous step's third return value).

    Runs the compiled kernel over the row chunks ``bounds`` (per-chunk sums in
    ``partial``, ``bounds.size - 1`` rows of 3) on ``threads`` threads (default
    :func:`num_threads`; 1 with one chunk: the serial step of small graphs).
    """
    t = terms
    return lib.fused_step(indptr, indices, vals, xs, x, t.v, t.d, t.inv_out, t.alpha, dm,
                          mass, t.crit, delta, bounds, x_out, xs_out, partial,
                          num_threads() if threads is None else int(threads))


#: rows of a partition of the CPU's blocked layout: their float64 sums (128 KiB) stay in a
#: core's L2 (measured on cnr-2000 and web-NotreDame with 8-32K rows: within noise of
#: each other; 4K rows is slower); ``WEBRANK_CPU_PART_ROWS`` overrides (at most 65,536)
BLOCKED_PART_ROWS = int(os.environ.get("WEBRANK_CPU_PART_ROWS") or 16384)
#: a (source, run) pair covers at most this many links (run lengths are 16-bit)
MAX_RUN = 65535


@dataclass(frozen=True)
class CPUBlockedLayout:
    """The in-link CSR re-laid out for the CPU's blocked (partition-centric) step.

    Rows are cut into partitions of at most :data:`BLOCKED_PART_ROWS` rows, balanced by
    in-links (:func:`webrank.blocking.plan_blocks`). Inside partition ``p`` the links are
    ordered by source, then row, and grouped into **pairs**: a source and the run of its
    links into the partition. A step reads ``xs`` once per pair, not once per link, and
    adds it to the run's rows in a partition-sized array that stays in cache (Lakhotia,
    Kannan, Prasanna, "Accelerating PageRank using Partition-Centric Processing", USENIX
    ATC 2018). Web graphs ordered by host have few pairs: cnr-2000 has 0.13 pairs per
    link at 16K-row partitions, web-NotreDame 0.21.

    Attributes
    ----------
    part_ptr : ndarray of int64, shape (P + 1,)
        Partition p holds rows ``part_ptr[p]:part_ptr[p + 1]``.
    edge_ptr : ndarray of int64, shape (P + 1,)
        Its links are ``edge_ptr[p]:edge_ptr[p + 1]`` of ``dst_local`` (the CSR's range).
    pair_ptr : ndarray of int64, shape (P + 1,)
        Its pairs are ``pair_ptr[p]:pair_ptr[p + 1]``.
    pair_src : ndarray of int32 or int64
        The source of each pair.
    pair_len : ndarray of uint16
        The links of each pair (consecutive in ``dst_local``).
    dst_local : ndarray of uint16, shape (m,)
        Each link's row minus its partition's first row.
    vals : ndarray, shape (m,) or (0,)
        Each link's transition value in layout order (weighted graphs), else empty.
    """

    part_ptr: np.ndarray
    edge_ptr: np.ndarray
    pair_ptr: np.ndarray
    pair_src: np.ndarray
    pair_len: np.ndarray
    dst_local: np.ndarray
    vals: np.ndarray

    @property
    def num_pairs(self) -> int:
        return int(self.pair_src.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the layout's arrays."""
        return int(sum(a.nbytes for a in (self.part_ptr, self.edge_ptr, self.pair_ptr,
                                          self.pair_src, self.pair_len, self.dst_local,
                                          self.vals)))


def blocked_layout(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                   part_rows: int | None = None, max_run: int = MAX_RUN
                   ) -> CPUBlockedLayout:
    """Build the :class:`CPUBlockedLayout` of an in-link CSR (two parallel compiled passes:
    each partition's links radix-sorted by source, then the pairs and local rows; about 15
    pull steps' time).

    Parameters
    ----------
    indptr, indices : ndarray
        The in-link CSR (rows are destinations; indices sorted or not within a row).
    vals : ndarray
        Per-link transition values (weighted graphs), or empty.
    part_rows : int, optional
        Most rows in a partition (default :data:`BLOCKED_PART_ROWS`; at most 65,536).
    max_run : int, default 65,535
        Most links in one pair (tests lower it to exercise the cut).
    """
    from webrank.blocking import MAX_LOCAL, plan_blocks

    rows = int(part_rows or BLOCKED_PART_ROWS)
    if not 1 <= rows <= MAX_LOCAL:
        raise ValueError(f"part_rows must be in 1..{MAX_LOCAL}, not {rows}")
    if not 1 <= max_run <= MAX_RUN:
        raise ValueError(f"max_run must be in 1..{MAX_RUN}, not {max_run}")
    n = indptr.size - 1
    plan = plan_blocks(indptr, n_src=n, part_rows_max=rows, workers=num_threads())
    part_ptr = plan.part_ptr.astype(np.int64)
    edge_ptr = np.asarray(indptr, dtype=np.int64)[part_ptr]
    widest = int(np.diff(edge_ptr).max(initial=0))
    order = np.empty(int(indptr[-1]), dtype=np.int32 if widest < 2**31 else np.int64)
    key_bits = max(16, 16 * -(-max(n - 1, 1).bit_length() // 16))  # 16-bit digits
    threads = num_threads()
    pair_ptr = np.zeros(part_ptr.size, dtype=np.int64)
    lib.blocked_layout_order(indptr, indices, part_ptr, key_bits, max_run, order,
                             pair_ptr[1:], threads)
    np.cumsum(pair_ptr, out=pair_ptr)
    pairs, m = int(pair_ptr[-1]), int(indices.size)
    pair_src = np.empty(pairs, dtype=indices.dtype)
    pair_len = np.empty(pairs, dtype=np.uint16)
    dst_local = np.empty(m, dtype=np.uint16)
    lvals = np.empty(m if vals.size else 0, dtype=vals.dtype)
    lib.blocked_layout_fill(indptr, indices, vals, part_ptr, max_run, order, pair_ptr,
                            pair_src, pair_len, dst_local, lvals, threads)
    return CPUBlockedLayout(part_ptr=part_ptr, edge_ptr=edge_ptr, pair_ptr=pair_ptr,
                            pair_src=pair_src, pair_len=pair_len, dst_local=dst_local,
                            vals=lvals)


def blocked_step(layout: CPUBlockedLayout, terms: StepTerms, *, xs: np.ndarray,
                 x: np.ndarray, dm: float, mass: float, delta: bool, x_out: np.ndarray,
                 xs_out: np.ndarray, partial: np.ndarray) -> tuple[float, float, float]:
    """:func:`fused_step` through a :class:`CPUBlockedLayout` (same arguments and
    returns; ``partial`` needs a row per partition). A row's sum adds its links in
    source order (the pull step in two interleaved sums): the two agree to rounding."""
    L, t = layout, terms
    return lib.blocked_step(L.part_ptr, L.edge_ptr, L.pair_ptr, L.pair_src, L.pair_len,
                            L.dst_local, L.vals, xs, x, t.v, t.d, t.inv_out, t.alpha, dm,
                            mass, t.crit, delta, x_out, xs_out, partial, num_threads())


#: graphs below this many edges multiply through :class:`EdgeSums` (NumPy) rather than
#: SciPy: up to 2.7x slower a product (~0.1 ms at 30,000 edges), but a small graph's first
#: call never imports scipy.sparse (~0.1-0.2 s of a fresh process)
NUMPY_PRODUCT_EDGES = 1 << 15


class EdgeSums:
    """An in-link matrix whose product is one NumPy ``bincount``: row ``i`` of ``A @ x`` is
    ``sum(vals[k] * x[indices[k]])`` over the row's links in CSR order, the float64
    products and the order of SciPy's CSR product (so the same bits)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None,
                 shape: tuple[int, int]) -> None:
        self.shape = shape
        self.indices = indices
        self.data = data  # None: every entry is 1
        self._rows = np.repeat(np.arange(shape[0]), np.diff(indptr))

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        terms = x[self.indices]
        if self.data is not None:
            terms = self.data * terms
        # (float64 even without links, where bincount would give int64 zeros)
        return np.bincount(self._rows, weights=terms,
                           minlength=self.shape[0]).astype(np.float64, copy=False)


def in_link_matrix(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                   num_sources: int | None = None) -> Any:
    """The in-link CSR of a graph as a matrix for generic products (``A @ x``).

    Parameters
    ----------
    indptr, indices : ndarray of int
        The CSR's row pointers (rows + 1) and source nodes (one per edge).
    vals : ndarray of float
        The transition values of a weighted graph (one per edge, any float dtype), or
        empty for an unweighted one.
    num_sources : int, optional
        Columns: the nodes of the whole graph when the rows are one part of it (default:
        as many as rows).

    Returns
    -------
    scipy.sparse.csr_array or EdgeSums
        rows x num_sources, float64: ``vals`` as entries (exactly, a float32 value
        widened), or ones; an :class:`EdgeSums` below :data:`NUMPY_PRODUCT_EDGES` edges
        (vector products only).
    """
    n = indptr.size - 1
    shape = (n, num_sources or n)
    if indices.size < NUMPY_PRODUCT_EDGES:
        return EdgeSums(indptr, indices, vals.astype(np.float64) if vals.size else None, shape)
    import scipy.sparse as sp

    data = vals.astype(np.float64) if vals.size else np.ones(indices.size)
    return sp.csr_array((data, indices, indptr), shape=shape)


def row_range_sums(begin: np.ndarray, end: np.ndarray, indices: np.ndarray,
                   vals: np.ndarray, xs: np.ndarray, out: np.ndarray,
                   threads: int | None = None) -> np.ndarray:
    """``out[r] = sum of (vals[k] *) xs[indices[k]] for k in [begin[r], end[r])``.

    Parts of CSR rows summed in parallel (``threads``, default :func:`num_threads`),
    without the GIL (the hybrid method runs this while the GPU works), each in order:
    SciPy's bits. ``vals`` is empty for unweighted graphs. Returns ``out``.
    """
    lib.row_range_sums(begin, end, indices, vals, xs, out,
                       num_threads() if threads is None else int(threads))
    return out


def default_chunks() -> int:
    """Chunks per step: several per thread so uneven rows balance out
    (``WEBRANK_CPU_CHUNKS`` overrides, for experiments)."""
    override = os.environ.get("WEBRANK_CPU_CHUNKS")
    return int(override) if override else max(1, num_threads() * 8)

