"""Numba kernels of the parallel CSR build (:mod:`webrank.build`): edge columns in
chunks → id range, presence of ids, in-link CSR. Chunk ``c`` of a column ``col`` is
``col[starts[c]:starts[c] + counts[c]]`` (a reader's chunks may leave gaps between them).

The build is a parallel bucket sort by target row (a counting sort per bucket):

1. :func:`id_bounds` and :func:`mark_present`: the smallest and largest id, and which ids
   occur (for ``node_ids="appear"``), one pass each over the chunks, chunks in parallel;
2. :func:`fine_counts`: edges per chunk and *fine bucket* (rows ``r >> shift``);
   the caller groups fine buckets into coarse ones of about equal edge counts;
3. :func:`scatter`: every edge to its coarse bucket's region, in file order (each chunk
   owns a slice of every region), ids renumbered on the way, as int32;
4. :func:`sort_buckets`: each bucket, on one thread and in cache, counting-sorted by
   row, each row sorted by source and its parallel edges merged (kept in file order, so
   "the last weight wins" holds);
5. :func:`gather_rows`: the buckets' merged rows moved together where merging removed
   edges; :func:`bincount`: out-weights from private histograms.

Everything is O(m + n) and, but for the prefix sums, parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# merging modes of sort_buckets
COLLAPSE, SUM = 0, 1
_INSERTION_MAX = 24  # rows up to this length are sorted by insertion (stable, in cache)
_INT64_MAX = np.iinfo(np.int64).max


@njit(parallel=True, cache=True)
def id_bounds(src, dst, starts, counts):  # pragma: no cover - compiled
    """Per chunk, the smallest and largest id among its sources and targets
    (``(lo, hi)``, int64 arrays; an empty chunk gives ``(INT64_MAX, -1)``)."""
    nc = starts.size
    lo = np.empty(nc, np.int64)
    hi = np.empty(nc, np.int64)
    for c in prange(nc):
        a = np.int64(_INT64_MAX)
        b = np.int64(-1)
        for k in range(starts[c], starts[c] + counts[c]):
            u = src[k]
            v = dst[k]
            a = min(a, min(u, v))
            b = max(b, max(u, v))
        lo[c] = a
        hi[c] = b
    return lo, hi


@njit(parallel=True, cache=True)
def mark_and_count(src, dst, starts, counts, present, shift, nfine,
                   src_ends):  # pragma: no cover - compiled
    """One pass over the edges: ``present[id] = 1`` for every id that occurs (where
    ``present`` is not empty; racing writes of the same byte, each made only where the
    byte is still 0, so the lines stay shared between cores), the edges per (chunk,
    fine bucket ``target id >> shift``) (returned), and per chunk its first and last
    source and whether its sources never decrease (``src_ends[c]``: first, last,
    sorted 0/1)."""
    nc = starts.size
    mark = present.size > 0
    fine = np.zeros((nc, nfine), np.int64)
    for c in prange(nc):
        a = starts[c]
        e = a + counts[c]
        ordered = 1
        prev = src[a] if e > a else 0
        for k in range(a, e):
            u = src[k]
            v = dst[k]
            fine[c, v >> shift] += 1
            if u < prev:
                ordered = 0
            prev = u
            if mark:  # read first: a store takes the line from every other core
                if present[u] == 0:
                    present[u] = 1
                if present[v] == 0:
                    present[v] = 1
        if e > a:
            src_ends[c, 0] = src[a]
            src_ends[c, 1] = src[e - 1]
        src_ends[c, 2] = ordered
    return fine


@njit(parallel=True, cache=True)
def sum_rows(counts, node_ids):  # pragma: no cover - compiled
    """``counts.sum(axis=0)`` in float64, at ``node_ids`` (all columns if empty)."""
    n = node_ids.size if node_ids.size else counts.shape[1]
    out = np.empty(n, np.float64)
    for i in prange(n):
        j = node_ids[i] if node_ids.size else np.int64(i)
        t = np.int64(0)
        for g in range(counts.shape[0]):
            t += counts[g, j]
        out[i] = t
    return out


@njit(parallel=True, cache=True)
def scatter(src, dst, w, starts, counts, newid, shift, coarse_of, cursor, keys, out_w,
            out_links, edge_runs):  # pragma: no cover - compiled
    """Every edge to its coarse bucket (``coarse_of[target >> shift]``) at the chunk's
    next slot ``cursor[chunk, bucket]``, as the key ``target << 32 | source`` (the target
    id as read, the source renumbered by ``newid`` unless it is empty); its weight ``w``
    to ``out_w`` where ``out_w`` is not empty.

    Where ``out_links`` is not empty (the columns are in source order, so a source's
    links are one run that at most the chunks at its ends share), the links of each
    source by id: runs inside a chunk added to ``out_links``, the chunk's first and last
    run left in ``edge_runs[c]`` for the caller to add."""
    weighted = out_w.size > 0
    renumber = newid.size > 0
    runs = out_links.size > 0
    for c in prange(starts.size):
        a = starts[c]
        e = a + counts[c]
        cur = cursor[c].copy()
        run = 0  # links of the current run of one source
        first_run = True
        for k in range(a, e):
            v = dst[k]
            b = coarse_of[v >> shift]
            p = cur[b]
            cur[b] = p + 1
            u = newid[src[k]] if renumber else src[k]
            keys[p] = (v << 32) | u
            if weighted:
                out_w[p] = w[k]
            if runs:
                if k > a and src[k] != src[k - 1]:  # a run ends: its source is the chunk's
                    if first_run:
                        edge_runs[c, 0] = run
                        first_run = False
                    else:
                        out_links[src[k - 1]] += run
                    run = 0
                run += 1
        if runs and e > a:
            if first_run:
                edge_runs[c, 0] = run
            else:
                edge_runs[c, 1] = run


@njit(inline="always")
def _insertion_sort(keys, vals, a, e, with_vals):  # pragma: no cover - compiled
    """Stable sort of ``keys[a:e]`` (and ``vals`` alongside)."""
    for i in range(a + 1, e):
        k = keys[i]
        v = vals[i] if with_vals else 0.0
        j = i - 1
        while j >= a and keys[j] > k:
            keys[j + 1] = keys[j]
            if with_vals:
                vals[j + 1] = vals[j]
            j -= 1
        keys[j + 1] = k
        if with_vals:
            vals[j + 1] = v


@njit(inline="always")
def _is_sorted_distinct(keys, a, e):  # pragma: no cover - compiled
    for k in range(a + 1, e):
        if keys[k] <= keys[k - 1]:
            return False
    return True


@njit(parallel=True, cache=True)
def sort_buckets(bucket_start, id_start, keys, w_in, newid, indices, w, row_kept, bucket_kept,
                 mode, count_weights):  # pragma: no cover - compiled
    """Each coarse bucket ``b`` (keys ``bucket_start[b]:bucket_start[b + 1]``, target ids
    ``id_start[b]:id_start[b + 1]``), on one thread: counting-sorted by target into the
    same stretch of ``indices`` (and ``w``), each row sorted by source (stably), parallel
    edges merged (``mode`` COLLAPSE: the last weight wins; SUM: weights added;
    ``count_weights``: unweighted edges whose weight becomes their multiplicity), the
    merged rows packed from the bucket's start. ``row_kept[row]``: links of each row
    (the row of target id t is ``newid[t]``, or t where ``newid`` is empty);
    ``bucket_kept[b]``: of bucket b."""
    weighted = w_in.size > 0
    renumber = newid.size > 0
    for b in prange(bucket_start.size - 1):
        o0 = bucket_start[b]
        o1 = bucket_start[b + 1]
        t0 = id_start[b]
        nt = id_start[b + 1] - t0
        start = np.zeros(nt + 1, np.int32)  # (a bucket holds < 2**31 links)
        for k in range(o0, o1):
            start[(keys[k] >> 32) - t0 + 1] += 1
        for i in range(nt):
            start[i + 1] += start[i]
        pos = start[:nt].copy()
        for k in range(o0, o1):
            i = (keys[k] >> 32) - t0
            p = o0 + pos[i]
            pos[i] += 1
            indices[p] = keys[k] & 0xFFFFFFFF
            if weighted:
                w[p] = w_in[k]
        out = o0
        for i in range(nt):
            a = o0 + start[i]
            e = o0 + start[i + 1]
            if a == e:
                continue
            if _is_sorted_distinct(indices, a, e):  # (files in source order: most rows)
                if out < a:  # rows before lost links: move up
                    for k in range(a, e):
                        indices[out + k - a] = indices[k]
                        if weighted or count_weights:
                            w[out + k - a] = w[k] if weighted else 1.0
                elif count_weights:
                    w[a:e] = 1.0
                row_kept[newid[t0 + i] if renumber else t0 + i] = e - a
                out += e - a
                continue
            if e - a <= _INSERTION_MAX:
                _insertion_sort(indices, w, a, e, weighted)
            elif weighted:
                order = np.argsort(indices[a:e], kind="mergesort")
                ks = indices[a:e][order]
                vs = w[a:e][order]
                indices[a:e] = ks
                w[a:e] = vs
            else:
                indices[a:e].sort()
            first = out
            for k in range(a, e):
                u = indices[k]
                if out > first and indices[out - 1] == u:  # a parallel edge
                    if weighted:
                        if mode == SUM:
                            w[out - 1] += w[k]
                        else:
                            w[out - 1] = w[k]
                    elif count_weights:
                        w[out - 1] += 1.0
                    continue
                indices[out] = u
                if weighted:
                    w[out] = w[k]
                elif count_weights:
                    w[out] = 1.0
                out += 1
            row_kept[newid[t0 + i] if renumber else t0 + i] = out - first
        bucket_kept[b] = out - o0


@njit(parallel=True, cache=True)
def gather_rows(bucket_start, bucket_dest, bucket_kept, src, w, indices,
                weights):  # pragma: no cover - compiled
    """Each bucket's ``bucket_kept[b]`` merged links from ``bucket_start[b]`` of
    ``src`` (and ``w``) to ``bucket_dest[b]`` of ``indices`` (and ``weights``, unless it
    is empty)."""
    weighted = weights.size > 0
    for b in prange(bucket_kept.size):
        o = bucket_start[b]
        t = bucket_dest[b]
        for k in range(bucket_kept[b]):
            indices[t + k] = src[o + k]
            if weighted:
                weights[t + k] = w[o + k]


@njit(parallel=True, cache=True)
def count_sources(idx, hist):  # pragma: no cover - compiled
    """``np.bincount(idx, minlength=n)`` in float64, counted in the rows of ``hist``
    (groups x n, zeros; one private histogram per group of links) and summed in
    parallel."""
    m = idx.size
    groups = hist.shape[0]
    step = (m + groups - 1) // groups
    for g in prange(groups):
        h = hist[g]
        for k in range(g * step, min(m, (g + 1) * step)):
            h[idx[k]] += 1
    return sum_rows(hist, np.zeros(0, np.int64))
