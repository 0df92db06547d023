"""Graph construction at the speed of the reader: edge columns → in-link CSR on all cores.

:meth:`Graph.from_edges` and the file readers hand their edge columns here, as one array
or as the chunks a parallel reader produced (:class:`Chunked`: one buffer with chunk
offsets, never joined). The result is the graph :meth:`Graph.from_edges` defines (node
set, duplicates, rows sorted by source), built by the parallel bucket sort of
:mod:`webrank.kernels.cpu_build`:

* one pass finds the id range; one marks the ids that occur (``node_ids="appear"``) and
  counts the edges of each chunk per fine bucket of target ids, whose counts place the
  coarse buckets (about equal edge counts, cut at fine-bucket boundaries);
* the scatter writes each edge as one int64 key ``target << 32 | source`` (the source
  renumbered) into its bucket's region, in file order, and counts the out-links of a
  source-ordered file in runs;
* each bucket, on one thread and in cache, is counting-sorted by row into the int32
  indices, each row sorted by source and its parallel edges merged (the last weight
  wins, or they add up);
* out-weights come from those runs, or else from private per-thread histograms.

Peak memory: the input columns, plus 12 bytes a link (the int64 keys and the int32
indices, which become the CSR; 16 more with weights), plus a few n-sized arrays.

Small inputs (below :data:`PARALLEL_BUILD_EDGES`), sparse id spaces (ids spread far
beyond the edge count, such as hashes: sorted instead) and graphs of 2**31 ids or more
take :mod:`webrank.graph`'s serial path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.arrays import array_module
from webrank.errors import GraphFormatError

__all__ = [
    "Chunked",
    "Pieces",
    "as_chunks",
    "build_csr",
    "csr_from_chunks",
    "finite_weight_sums",
    "first_bad_weight",
    "fixed_node_set",
    "id_bounds",
    "joined",
    "out_link_csr",
    "parallel_build_edges",
    "use_parallel_build",
]

#: edge counts from which the parallel build (compiled kernels, :mod:`webrank.kernels.cpu_build`)
#: runs; below, NumPy's serial sort (``webrank.graph``), which needs no SciPy: the same
#: size as ``webrank.edge_arrays.NUMPY_BUILD_EDGES``, so that no build imports SciPy's sparse
#: module (0.2 s of a first call on 2 cores; docs/benchmarks.md)
PARALLEL_BUILD_EDGES = 1 << 15

_FINE_BITS = 12  # 4096 fine buckets: their counts place the coarse bucket boundaries
_BUCKET_EDGES = 1 << 17  # coarse buckets of about this many links (1 MB of keys)
_INT32_LIMIT = 2**31 - 1
#: weight sums are kept below this (a sixteenth of the largest float64): room for the
#: rounding of any order of summation
_SUM_LIMIT = 2.0**1020


@dataclass(eq=False)
class Chunked:
    """A column in chunks, as a parallel reader produced it: chunk ``c`` is
    ``data[starts[c]:starts[c] + counts[c]]`` (gaps between chunks are not part of the
    column). :meth:`Graph.from_edges` builds from chunked columns without joining
    them; the columns of one graph share ``starts`` and ``counts``.

    ``bounds``: ``(smallest, largest)`` id of this column *and its partner* (sources and
    targets), where already known (:func:`id_bounds`), else None.
    """

    data: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    bounds: tuple[int, int] | None = None

    @property
    def size(self) -> int:
        return int(self.counts.sum())

    def concatenate(self) -> np.ndarray:
        """The column as one array (a view where the chunks lie end to end)."""
        m = self.size
        if self.starts.size == 0:
            return self.data[:0]
        ends = self.starts + self.counts
        if self.starts[0] == 0 and (self.starts[1:] == ends[:-1]).all():
            return self.data[:m]
        return np.concatenate([self.data[a:e] for a, e in zip(self.starts, ends, strict=True)])


@dataclass
class Pieces:
    """A column as the separate arrays a reader produced (pyarrow's record batches),
    for a build on the GPU: uploaded piece by piece, never joined on the host.
    :meth:`Graph.from_edges` joins them for a build on the host."""

    arrays: list[np.ndarray]

    @property
    def size(self) -> int:
        return sum(int(a.size) for a in self.arrays)

    def concatenate(self) -> np.ndarray:
        """The column as one array (the one piece itself, when there is one)."""
        if len(self.arrays) == 1:
            return self.arrays[0]
        return np.concatenate(self.arrays)


def joined(col: Any) -> Any:
    """A column as one array, whether given chunked or in pieces, or not (None stays
    None)."""
    return col.concatenate() if isinstance(col, (Chunked, Pieces)) else col


def parallel_build_edges() -> int:
    """The edge count from which :func:`use_parallel_build` says yes."""
    return PARALLEL_BUILD_EDGES


def use_parallel_build(num_edges: int) -> bool:
    """Whether the parallel build pays for this many edges."""
    return num_edges >= parallel_build_edges()


def as_chunks(col: Any, like: Chunked | None = None) -> Chunked:
    """A column as :class:`Chunked`: one passes through; an array is cut like ``like``
    (which it must fit) or into 4 chunks per thread of about equal size, so that the
    chunk-parallel passes have work for every thread."""
    if isinstance(col, Chunked):
        return col
    arr = np.ascontiguousarray(col)
    if like is not None:
        return Chunked(arr, like.starts, like.counts)
    from webrank.kernels.cpu import num_threads

    bounds = np.linspace(0, arr.size, 4 * num_threads() + 1).astype(np.int64)
    return Chunked(arr, bounds[:-1], np.diff(bounds))


def id_bounds(src: Chunked, dst: Chunked) -> tuple[int, int]:
    """``(smallest, largest)`` id of the chunked columns (``(0, -1)`` without edges), on
    all cores for large columns; kept in ``src.bounds`` and ``dst.bounds``."""
    if src.bounds is not None:
        return src.bounds
    if src.size == 0:
        lo, hi = 0, -1
    elif use_parallel_build(src.size):
        from webrank.kernels import cpu_build

        los, his = cpu_build.id_bounds(src.data, dst.data, src.starts, src.counts)
        lo, hi = int(los.min()), int(his.max())
    else:
        s, d = src.concatenate(), dst.concatenate()
        lo, hi = int(min(s.min(), d.min())), int(max(s.max(), d.max()))
    src.bounds = dst.bounds = (lo, hi)
    return lo, hi


def build_csr(
    src: Chunked,
    dst: Chunked,
    weight: Chunked | None,
    num_ids: int,
    *,
    appear: bool = False,
    duplicates: str = "collapse",
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """The in-link CSR of the edges ``src -> dst`` given in chunks.

    Parameters
    ----------
    src, dst : Chunked int64 columns
        The edge endpoints (chunked alike), ids in ``0..num_ids-1``.
    weight : Chunked float64 column, optional
        Edge weights, chunked like ``src``; None for an unweighted graph.
    num_ids : int
        The id space, at most 2**31 - 1 ids.
    appear : bool, default False
        False: every id is a node. True: the nodes are the ids that occur, numbered in
        increasing id order.
    duplicates : {"collapse", "sum"}, default "collapse"
        Parallel edges: keep one (with weights the last one's), or add their weights
        (unweighted: an edge weighing its multiplicity, where any edge repeats).

    Returns
    -------
    indptr : int32 or int64 array (n + 1)
    indices : int32 array
        Sources, sorted within each row.
    weights : float64 array or None
    out_weight : float64 array (n)
    node_ids : int64 array or None
        With ``appear``, the id of each node, where some id does not occur.
    """
    from webrank.kernels import cpu_build
    from webrank.kernels.cpu import num_threads

    if not 0 < num_ids <= _INT32_LIMIT:
        raise ValueError(f"the parallel build takes 1..2**31-1 ids, not {num_ids}")
    m = src.size
    threads = num_threads()
    starts, counts = src.starts, src.counts
    chunks = starts.size

    # presence of ids, and edges per (chunk, fine bucket of target ids): one pass
    shift = max(0, int(num_ids - 1).bit_length() - _FINE_BITS)
    nfine = ((num_ids - 1) >> shift) + 1
    present = np.zeros(num_ids if appear else 0, np.uint8)
    src_ends = np.zeros((chunks, 3), np.int64)  # first, last source; in order?
    fine = cpu_build.mark_and_count(src.data, dst.data, starts, counts, present, shift,
                                    nfine, src_ends)
    # unweighted columns in source order (as most edge lists are written): out-degrees
    # counted in runs by the scatter; otherwise from the finished indices
    count_out = bool(weight is None and src_ends[:, 2].all()
                     and (src_ends[1:, 0] >= src_ends[:-1, 1]).all())
    count_dtype = np.int32 if m < _INT32_LIMIT else np.int64
    out_links = np.zeros(num_ids if count_out else 0, count_dtype)
    edge_runs = np.zeros((chunks, 2), np.int64)
    node_ids, newid = _numbering(present, num_ids) if appear else (None, None)
    del present
    n = num_ids if node_ids is None else node_ids.size
    ids = np.zeros(0, np.int32) if newid is None else newid
    coarse_of, id_start, cursor = _coarse_buckets(fine, m, threads, shift, num_ids)
    del fine
    nbuckets = id_start.size - 1
    bucket_start = np.append(cursor[0], m)

    weighted = weight is not None
    count_weights = not weighted and duplicates == "sum"
    keys = np.empty(m, np.int64)
    w_in = np.empty(m if weighted else 0, np.float64)
    cpu_build.scatter(src.data, dst.data, weight.data if weighted else w_in, starts, counts,
                      ids, shift, coarse_of, cursor, keys, w_in, out_links, edge_runs)
    if count_out:  # the runs at the chunks' ends
        np.add.at(out_links, src_ends[:, 0], edge_runs[:, 0])
        np.add.at(out_links, src_ends[:, 1], edge_runs[:, 1])
    del cursor
    indices = np.empty(m, np.int32)
    w = np.empty(m if weighted or count_weights else 0, np.float64)
    row_kept = np.zeros(n, np.int64)
    bucket_kept = np.zeros(nbuckets, np.int64)
    mode = cpu_build.SUM if duplicates == "sum" else cpu_build.COLLAPSE
    cpu_build.sort_buckets(bucket_start, id_start, keys, w_in, ids, indices, w, row_kept,
                           bucket_kept, mode, count_weights)
    del keys, w_in
    nnz = int(bucket_kept.sum())
    indptr = np.empty(n + 1, np.int64)
    indptr[0] = 0
    np.cumsum(row_kept, out=indptr[1:])
    weights = w if w.size else None
    if nnz < m:  # merged: the buckets' rows packed end to end
        # each bucket's first row: the nodes of smaller id before it
        first_row = (id_start[:-1] if node_ids is None
                     else np.searchsorted(node_ids, id_start[:-1]))
        packed = np.empty(nnz, np.int32)
        packed_w = np.empty(nnz, np.float64) if w.size else np.zeros(0)
        cpu_build.gather_rows(bucket_start, indptr[first_row], bucket_kept, indices, w,
                              packed, packed_w)
        indices, weights = packed, (packed_w if w.size else None)
        del w
    if count_weights and weights is not None and not (weights > 1).any():
        weights = None  # no edge repeats: unweighted after all
    if nnz <= _INT32_LIMIT:
        indptr = indptr.astype(np.int32)
    if weights is None and count_out and nnz == m:  # (no parallel edge merged away)
        out_weight = cpu_build.sum_rows(out_links[None, :], np.zeros(0, np.int64)
                                        if node_ids is None else node_ids)
    elif weights is None:
        # private int32 histograms in at most the memory of the indices
        groups = int(max(1, min(threads, nnz // max(n, 1))))
        out_weight = cpu_build.count_sources(indices, np.zeros((groups, n), count_dtype))
    else:  # serial: the same float64 sums, in the same order, as np.bincount
        out_weight = np.bincount(indices, weights=weights, minlength=n)
    return indptr, indices, weights, out_weight, node_ids


def _numbering(present: np.ndarray, num_ids: int) -> tuple[np.ndarray | None,
                                                               np.ndarray | None]:
    """``(node_ids, newid)`` of ``node_ids="appear"``: the ids that occur (ascending) and
    each id's node number (int32); ``(None, None)`` where every id occurs."""
    node_ids = np.flatnonzero(present)
    if node_ids.size == num_ids:
        return None, None
    newid = np.zeros(num_ids, np.int32)
    newid[node_ids] = np.arange(node_ids.size, dtype=np.int32)
    return node_ids, newid


def _coarse_buckets(fine: np.ndarray, m: int, threads: int, shift: int, num_ids: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fine buckets (target ids ``>> shift``; ``fine``: edges per chunk and fine
    bucket) grouped into coarse buckets of about equal edge counts, a few per thread:
    ``(coarse_of, id_start, cursor)`` — each fine bucket's coarse bucket, each coarse
    bucket's first id (and ``num_ids`` after the last), and where each (chunk, bucket)
    pair's edges start in the scattered keys (each bucket's region holds chunk 0's
    edges, then chunk 1's, ...: file order)."""
    chunks, nfine = fine.shape
    per_fine = fine.sum(axis=0)
    nbuckets = int(min(nfine, max(4 * threads, -(-m // _BUCKET_EDGES))))
    # fine bucket f goes to the coarse bucket where the running edge count before it falls
    coarse_of = np.minimum((np.cumsum(per_fine) - per_fine) * nbuckets // max(m, 1),
                           nbuckets - 1)
    # (renumbered 0, 1, ... where it changes: a huge fine bucket leaves no empty ones)
    coarse_of = np.concatenate(([0], np.cumsum(np.diff(coarse_of) > 0))).astype(np.int32)
    nbuckets = int(coarse_of[-1]) + 1
    first_fine = np.flatnonzero(np.diff(coarse_of, prepend=-1))  # of each coarse bucket
    id_start = np.append(first_fine.astype(np.int64) << shift, num_ids)
    per_bucket = np.add.reduceat(fine, first_fine, axis=1).T.ravel()
    cursor = np.cumsum(per_bucket) - per_bucket
    return coarse_of, id_start, np.ascontiguousarray(cursor.reshape(nbuckets, chunks).T)


def csr_from_chunks(
    src: Chunked,
    dst: Chunked,
    weight: Chunked | None,
    *,
    num_nodes: int | None,
    node_ids: str,
    labels: np.ndarray | None,
    duplicates: str,
    name: str | None,
) -> Any:
    """The arrays of :meth:`Graph.from_edges` of chunked int64 columns, built on all
    cores: a dict of ``indptr``, ``indices``, ``out_weight``, ``weights`` and ``labels``
    (the Graph's fields), or None where the serial path must build it (no edges, a
    sparse id space, 2**31 nodes or more). Arguments and errors as
    :meth:`Graph.from_edges`; weights already checked."""
    m = src.size
    if m == 0:
        return None
    lo, hi = id_bounds(src, dst)
    if lo < 0:
        raise GraphFormatError(f"negative node id {lo}; node ids must be >= 0", path=name)
    appear = False
    num_ids, node_labels = fixed_node_set(hi, m, labels=labels, node_ids=node_ids,
                                          num_nodes=num_nodes, name=name)
    if num_ids is None:
        if hi > 4 * m + 1024:
            return None  # sparse ids (hashes): the serial path sorts them
        num_ids, appear = hi + 1, True
    if num_ids > _INT32_LIMIT:
        return None
    indptr, indices, weights, out_weight, present = build_csr(
        src, dst, weight, num_ids, appear=appear, duplicates=duplicates)
    if appear:
        node_labels = present
    return {"indptr": indptr, "indices": indices, "out_weight": out_weight,
            "weights": weights, "labels": node_labels}


def fixed_node_set(hi: int, num_edges: int, *, labels: Any, node_ids: str,
                   num_nodes: int | None, name: str | None
                   ) -> tuple[int | None, np.ndarray | None]:
    """``(n, labels)`` of a node set the edges do not decide: ``len(labels)`` nodes with
    labels, ``num_nodes`` (default ``hi + 1``) with ``node_ids="range"`` (its host
    memory checked); ``(None, None)`` for ``"appear"``, whose nodes are the ids that
    occur.

    Raises
    ------
    GraphFormatError
        The largest id ``hi`` is beyond the labels or ``num_nodes``.
    """
    if labels is not None:
        node_labels = np.asarray(labels)
        if hi >= len(node_labels):
            raise GraphFormatError(f"edge endpoint {hi} is out of range for "
                                   f"{len(node_labels)} labels", path=name)
        return len(node_labels), node_labels
    if node_ids == "range":
        from webrank.memory import check_node_memory

        n = hi + 1 if num_nodes is None else int(num_nodes)
        if hi >= n:
            raise GraphFormatError(f"node id {hi} is out of range for num_nodes={n}",
                                   path=name)
        check_node_memory(n, num_edges, num_nodes is None, name)
        return n, None
    return None, None


def first_bad_weight(w: np.ndarray) -> int | None:
    """Position of the first NaN, infinite or negative entry of ``w`` (weights must be
    finite and >= 0), or None; every reader names it in its own terms."""
    if array_module(w) is not np:  # one prebuilt kernel (CuPy's operations compile)
        from webrank.kernels import cuda_vectors as kv
        from webrank.kernels.cuda_common import find_first

        w = w.astype(np.float64, copy=False)
        return find_first(kv.get_kernel("wr_weight_bad"), int(w.size), kv.BLOCK,
                          lambda bad: kv.WEIGHT_BAD.pack(m=int(w.size), weights=w, bad=bad))[0]
    bad = ~np.isfinite(w) | (w < 0)
    return int(np.argmax(bad)) if bool(bad.any()) else None


def finite_weight_sums(src: Any, dst: Any, weight: Any) -> tuple[Any, Any, Any]:
    """The edge columns with the weights of each source node whose out-links could add
    up beyond the float64 range scaled down by one power of two, so that every sum the
    build makes (out-weights, parallel links added up) is finite.

    A node's transition probabilities ``w / out_weight`` do not change: the scale is
    exact (a power of two) and the same for all of the node's links; a link whose scaled
    weight falls below the normal range weighs less than 2**-1000 of its node's
    out-weight, which float64 cannot tell from 0 either. Nodes whose sums stay below
    2**1020 keep their weights as given.

    ``src``/``dst``/``weight``: arrays, :class:`Chunked` or :class:`Pieces` (weights
    already checked: finite, >= 0). Returned as given where no sum can overflow, the
    largest weight times the edge count below 2**1020 (one pass over the weights, the
    common case); else as plain arrays, the weights a scaled copy.
    """
    if weight is None:
        return src, dst, weight
    m = int(weight.size)
    if isinstance(weight, Pieces):
        parts = weight.arrays
    elif isinstance(weight, Chunked):
        parts = [weight.data[a:a + c] for a, c in zip(weight.starts, weight.counts,
                                                       strict=True)]
    else:
        parts = [weight]
    top = max((float(p.max()) for p in parts if p.size), default=0.0)
    if top * m < _SUM_LIMIT:
        return src, dst, weight
    s, d = joined(src), joined(dst)
    w = np.array(joined(weight), dtype=np.float64)
    _, node = np.unique(s, return_inverse=True)
    shift = m.bit_length() + 4  # 2**shift >= 16 m: a scaled sum stays below 2**1020
    scale = 2.0**-shift
    # every sum of a node's links is at most the sum of all of them (parallel links
    # added up): those that may reach 2**1020 are scaled; the rest keep their weights
    total = np.bincount(node.ravel(), weights=w * scale)
    big = total >= _SUM_LIMIT * scale / 2
    w[big[node.ravel()]] *= scale
    return s, d, w


def out_link_csr(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The out-link CSR ``(indptr, targets)`` of an in-link CSR (host arrays): row j
    lists the nodes j links to, ascending. A compiled counting sort, O(n + m)."""
    from webrank.kernels import cpu_build

    return cpu_build.transpose_csr(np.asarray(indptr), np.asarray(indices))
