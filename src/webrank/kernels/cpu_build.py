"""Kernels of the parallel CSR build (:mod:`webrank.build`): edge columns in chunks → id
range, presence of ids, in-link CSR. Chunk ``c`` of a column ``col`` is
``col[starts[c]:starts[c] + counts[c]]`` (a reader's chunks may leave gaps between them).

The build is a parallel bucket sort by target row (a counting sort per bucket):

1. :func:`id_bounds` and :func:`mark_and_count`: the smallest and largest id, which ids
   occur (for ``node_ids="appear"``), and the edges per chunk and *fine bucket* (rows
   ``r >> shift``), one pass each over the chunks, chunks in parallel; the caller groups
   fine buckets into coarse ones of about equal edge counts;
2. :func:`scatter`: every edge to its coarse bucket's region, in file order (each chunk
   owns a slice of every region), ids renumbered on the way, as int64 keys;
3. :func:`sort_buckets`: each bucket, on one thread and in cache, counting-sorted by
   row, each row sorted by source and its parallel edges merged (kept in file order, so
   "the last weight wins" holds);
4. :func:`gather_rows`: the buckets' merged rows moved together where merging removed
   edges; :func:`count_sources`: out-weights from private histograms.

Everything is O(m + n) and, but for the prefix sums, parallel. The loops are C++ with
OpenMP (``native/build.cpp``), compiled with the package; id columns may be any signed
integer dtype, ``src`` and ``dst`` alike or not.
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.native import lib, num_threads

__all__ = ["COLLAPSE", "SUM", "copy_bytes", "copy_pieces", "count_sources", "gather_rows",
           "id_bounds", "mark_and_count", "scatter", "sort_buckets", "sum_rows",
           "touch_pages", "transpose_csr"]

# merging modes of sort_buckets
COLLAPSE, SUM = 0, 1


def _i64(a: np.ndarray) -> np.ndarray:
    """A small per-chunk or per-bucket array as the int64 the kernels take (no copy when
    it is one already)."""
    return np.ascontiguousarray(a, dtype=np.int64)


def id_bounds(src: np.ndarray, dst: np.ndarray, starts: np.ndarray,
              counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per chunk, the smallest and largest id among its sources and targets
    (``(lo, hi)``, int64 arrays; an empty chunk gives ``(INT64_MAX, -1)``)."""
    lo = np.empty(starts.size, np.int64)
    hi = np.empty(starts.size, np.int64)
    lib.id_bounds(src, dst, _i64(starts), _i64(counts), lo, hi, num_threads())
    return lo, hi


def mark_and_count(src: np.ndarray, dst: np.ndarray, starts: np.ndarray,
                   counts: np.ndarray, present: np.ndarray, shift: int, nfine: int,
                   src_ends: np.ndarray) -> np.ndarray:
    """One pass over the edges: ``present[id] = 1`` for every id that occurs (where
    ``present`` is not empty; racing writes of the same byte, each made only where the
    byte is still 0, so the lines stay shared between cores), the edges per (chunk,
    fine bucket ``target id >> shift``) (returned), and per chunk its first and last
    source and whether its sources never decrease (``src_ends[c]``: first, last,
    sorted 0/1)."""
    fine = np.zeros((starts.size, nfine), np.int64)
    lib.mark_and_count(src, dst, _i64(starts), _i64(counts), present, shift, fine,
                       src_ends, num_threads())
    return fine


def sum_rows(counts: np.ndarray, node_ids: np.ndarray) -> np.ndarray:
    """``counts.sum(axis=0)`` in float64, at ``node_ids`` (all columns if empty)."""
    counts = np.ascontiguousarray(counts)
    out = np.empty(node_ids.size if node_ids.size else counts.shape[1], np.float64)
    lib.sum_rows(counts, _i64(node_ids), out, num_threads())
    return out


def scatter(src: np.ndarray, dst: np.ndarray, w: np.ndarray, starts: np.ndarray,
            counts: np.ndarray, newid: np.ndarray, shift: int, coarse_of: np.ndarray,
            cursor: np.ndarray, keys: np.ndarray, out_w: np.ndarray,
            out_links: np.ndarray, edge_runs: np.ndarray) -> None:
    """Every edge to its coarse bucket (``coarse_of[target >> shift]``) at the chunk's
    next slot ``cursor[chunk, bucket]``, as the key ``target << 32 | source`` (the target
    id as read, the source renumbered by ``newid`` unless it is empty); its weight ``w``
    to ``out_w`` where ``out_w`` is not empty.

    Where ``out_links`` is not empty (the columns are in source order, so a source's
    links are one run that at most the chunks at its ends share), the links of each
    source by id: runs inside a chunk added to ``out_links``, the chunk's first and last
    run left in ``edge_runs[c]`` for the caller to add."""
    lib.scatter(src, dst, w, _i64(starts), _i64(counts), newid, shift, coarse_of,
                _i64(cursor), keys, out_w, out_links, edge_runs, num_threads())


def sort_buckets(bucket_start: np.ndarray, id_start: np.ndarray, keys: np.ndarray,
                 w_in: np.ndarray, newid: np.ndarray, indices: np.ndarray, w: np.ndarray,
                 row_kept: np.ndarray, bucket_kept: np.ndarray, mode: int,
                 count_weights: bool) -> None:
    """Each coarse bucket ``b`` (keys ``bucket_start[b]:bucket_start[b + 1]``, target ids
    ``id_start[b]:id_start[b + 1]``), on one thread: counting-sorted by target into the
    same stretch of ``indices`` (and ``w``), each row sorted by source (stably), parallel
    edges merged (``mode`` COLLAPSE: the last weight wins; SUM: weights added;
    ``count_weights``: unweighted edges whose weight becomes their multiplicity), the
    merged rows packed from the bucket's start. ``row_kept[row]``: links of each row
    (the row of target id t is ``newid[t]``, or t where ``newid`` is empty);
    ``bucket_kept[b]``: of bucket b."""
    lib.sort_buckets(_i64(bucket_start), _i64(id_start), keys, w_in, newid, indices, w,
                     row_kept, bucket_kept, int(mode), bool(count_weights), num_threads())


def gather_rows(bucket_start: np.ndarray, bucket_dest: np.ndarray, bucket_kept: np.ndarray,
                src: np.ndarray, w: np.ndarray, indices: np.ndarray,
                weights: np.ndarray) -> None:
    """Each bucket's ``bucket_kept[b]`` merged links from ``bucket_start[b]`` of
    ``src`` (and ``w``) to ``bucket_dest[b]`` of ``indices`` (and ``weights``, unless it
    is empty)."""
    lib.gather_rows(_i64(bucket_start), _i64(bucket_dest), _i64(bucket_kept), src, w,
                    indices, weights, num_threads())


def count_sources(idx: np.ndarray, hist: np.ndarray) -> np.ndarray:
    """``np.bincount(idx, minlength=n)`` in float64, counted in the rows of ``hist``
    (groups x n, zeros; one private histogram per group of links) and summed in
    parallel."""
    lib.count_sources(idx, hist, num_threads())
    return sum_rows(hist, np.zeros(0, np.int64))


def touch_pages(a: np.ndarray) -> np.ndarray:
    """Write one zero byte in each 4 KiB page of the new array ``a`` (all threads, the
    GIL released): its pages are faulted in before a copy fills it. Returns ``a``."""
    lib.touch_pages(a, num_threads())
    return a


def copy_bytes(dst: np.ndarray, src: np.ndarray, threads: int | None = None, *,
               streaming: bool = True) -> np.ndarray:
    """Copy ``src`` into ``dst`` (both C-contiguous, of equal byte sizes; dtypes may
    differ) on ``threads`` threads (default all), the GIL released. ``streaming``:
    non-temporal stores where the CPU has them (False: ``memcpy``, for comparison).
    Returns ``dst``."""
    lib.copy_bytes(dst, src, threads or num_threads(), streaming)
    return dst


def copy_pieces(dst: np.ndarray, pieces: list[np.ndarray], threads: int | None = None, *,
                streaming: bool = True) -> np.ndarray:
    """Copy ``pieces`` (C-contiguous arrays) end to end into ``dst`` (C-contiguous, as
    many bytes as the pieces together) on ``threads`` threads (default all), the GIL
    released, in blocks of 256 KiB across all the pieces (many small pieces use every
    thread). ``streaming`` as :func:`copy_bytes`. Returns ``dst``."""
    lib.copy_pieces(dst, pieces, threads or num_threads(), streaming)
    return dst


def transpose_csr(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The transpose of an n x n CSR (an in-link CSR's out-link CSR): ``(indptr,
    columns)``, columns ascending within each row; int32 where they fit. O(n + m), one
    thread (a counting sort)."""
    n, m = indptr.size - 1, int(indptr[-1]) if indptr.size else 0
    out_indptr = np.empty(n + 1, dtype=np.int32 if m < 2**31 else np.int64)
    out_cols = np.empty(m, dtype=np.int32 if n < 2**31 else np.int64)
    lib.transpose_csr(indptr, indices[:m], out_indptr, out_cols)
    return out_indptr, out_cols
