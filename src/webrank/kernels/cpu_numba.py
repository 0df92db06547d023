"""The Numba half of :mod:`webrank.kernels.cpu`: the parallel fused step and row-range sums.

Importing this module imports Numba (~0.25 s), and the first call of a kernel in a
process loads it from Numba's on-disk cache (~0.2 s, most of it Numba building its target
context) or, after an install or an edit of this file, compiles it (~2 s per signature
on a 2-core machine; ``benchmarks/first_call.py --parts compile``).
:mod:`webrank.kernels.cpu` therefore imports it only for graphs large enough for the
parallel kernel to pay (see :data:`webrank.kernels.cpu.SMALL_GRAPH_EDGES`); call the
kernels through that module.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(inline="always")
def pair_sums(indices, vals, xs, k, end):  # pragma: no cover - compiled
    """The two interleaved sums of :func:`range_sum` over links ``k, k + 1, ...`` while two
    remain: ``(even sum, odd sum, k)`` with ``k`` the first link not summed (``end`` for
    an even count, ``end - 1`` for an odd one)."""
    a0 = 0.0
    a1 = 0.0
    if vals.size > 0:  # products in float64 (float32 values times float32 xs would round)
        while k + 1 < end:
            a0 += np.float64(vals[k]) * xs[indices[k]]
            a1 += np.float64(vals[k + 1]) * xs[indices[k + 1]]
            k += 2
    else:
        while k + 1 < end:
            a0 += xs[indices[k]]
            a1 += xs[indices[k + 1]]
            k += 2
    return a0, a1, k


@njit(inline="always")
def range_sum(indices, vals, xs, k, end):  # pragma: no cover - compiled
    """``sum over k <= e < end of (vals[e] *) xs[indices[e]]`` in float64, in two
    interleaved sums (even and odd links): one chain of dependent adds per row would
    make the add's latency, not memory, the pull step's bound."""
    a0, a1, k = pair_sums(indices, vals, xs, k, end)
    if k < end:  # an odd count's last link
        if vals.size > 0:
            a0 += np.float64(vals[k]) * xs[indices[k]]
        else:
            a0 += xs[indices[k]]
    return a0 + a1


@njit(inline="always")
def row_sum(indptr, indices, vals, xs, i):  # pragma: no cover - compiled
    """:func:`range_sum` of row ``i`` of a CSR."""
    return range_sum(indices, vals, xs, indptr[i], indptr[i + 1])


@njit(inline="always")
def add_residual(res, diff, crit):  # pragma: no cover - compiled
    """A row's residual term added under criterion ``crit`` (L1, squared L2, max)."""
    if crit == 0:
        return res + diff
    if crit == 1:
        return res + diff * diff
    return diff if diff > res else res


@njit(inline="always")
def finish_row(i, acc, x, v, d, inv_out, alpha, dm, mass, delta, crit, x_out, xs_out, res,
               dmass, tmass):  # pragma: no cover - compiled
    """The end of row ``i`` of a power step given ``acc = (P^T xs)_i``: the dangling and
    teleport terms, ``x_out[i]``, ``xs_out[i]``; returns the running sums ``(res, dmass,
    tmass)`` with the row's residual term (criterion ``crit``), its dangling mass and its
    mass (of what the step wrote: the change, in delta mode) added."""
    vi = v[0] if v.size == 1 else v[i]
    di = d[0] if d.size == 1 else d[i]
    t = alpha * acc + alpha * dm * di
    if delta:
        t -= alpha * mass * vi  # drop the mass rounding put into D
        diff = abs(t)
        x_out[i] = x[i] + t
    else:
        t += (1.0 - alpha) * vi
        diff = abs(t - x[i])
        x_out[i] = t
    s = inv_out[i]
    xs_out[i] = t * s
    if s == 0.0:
        dmass += t
    return add_residual(res, diff, crit), dmass, tmass + t


@njit(parallel=True, cache=True, fastmath=False)
def fused_step(
    indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, mass, crit, delta, bounds,
    x_out, xs_out, partial,
):  # pragma: no cover - compiled
    """One fused power step over the row chunks ``bounds`` (see
    :func:`webrank.kernels.cpu.fused_step`); per chunk ``c`` it writes the residual, the
    dangling mass and the mass of the new vector to ``partial[c]``."""
    for c in prange(bounds.size - 1):
        res = 0.0
        dmass = 0.0
        tmass = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            acc = row_sum(indptr, indices, vals, xs, i)
            res, dmass, tmass = finish_row(i, acc, x, v, d, inv_out, alpha, dm, mass, delta,
                                           crit, x_out, xs_out, res, dmass, tmass)
        partial[c, 0] = res
        partial[c, 1] = dmass
        partial[c, 2] = tmass


@njit(parallel=True, cache=True, fastmath=False)
def blocked_step(
    part_ptr, edge_ptr, pair_ptr, pair_src, pair_len, dst_local, lvals, xs, x, v, d,
    inv_out, alpha, dm, mass, crit, delta, x_out, xs_out, partial,
):  # pragma: no cover - compiled
    """One fused power step through a partition-centric layout (see
    :func:`webrank.kernels.cpu.blocked_layout`): per destination partition, each of its
    (source, run) pairs reads ``xs`` once and adds it to the run's rows in an array that
    stays in the core's cache; then the rows are finished as in :func:`fused_step`.
    Per partition ``p`` it writes the residual, dangling mass and mass to ``partial[p]``.
    """
    weighted = lvals.size > 0
    for p in prange(part_ptr.size - 1):
        r0 = part_ptr[p]
        acc = np.zeros(part_ptr[p + 1] - r0)
        k = edge_ptr[p]
        for q in range(pair_ptr[p], pair_ptr[p + 1]):
            val = np.float64(xs[pair_src[q]])
            end = k + pair_len[q]
            if weighted:
                while k < end:
                    acc[dst_local[k]] += np.float64(lvals[k]) * val
                    k += 1
            else:
                while k < end:
                    acc[dst_local[k]] += val
                    k += 1
        res = 0.0
        dmass = 0.0
        tmass = 0.0
        for r in range(acc.size):
            res, dmass, tmass = finish_row(r0 + r, acc[r], x, v, d, inv_out, alpha, dm, mass,
                                           delta, crit, x_out, xs_out, res, dmass, tmass)
        partial[p, 0] = res
        partial[p, 1] = dmass
        partial[p, 2] = tmass


@njit(parallel=True, cache=True)
def blocked_layout(indptr, indices, vals, part_ptr, key_bits, max_run, order
                   ):  # pragma: no cover - compiled
    """The arrays of :func:`webrank.kernels.cpu.blocked_layout`, in two parallel passes
    over the partitions (one compiled function: a process loads one cached kernel).

    1. Each partition's links in a stable order by source (``order``: offsets inside the
       partition's CSR range, so one source's links keep their rows ascending), by an
       LSD radix sort of 16-bit digits over ``key_bits`` bits of the source ids; and its
       number of (source, run) pairs, runs cut at ``max_run`` links.
    2. The pairs (source, links), each link's row inside its partition, and the links'
       values in layout order (weighted graphs).

    Returns ``(pair_ptr, pair_src, pair_len, dst_local, layout_vals)``.
    """
    parts = part_ptr.size - 1
    pair_ptr = np.zeros(parts + 1, dtype=np.int64)
    for p in prange(parts):
        lo = indptr[part_ptr[p]]
        hi = indptr[part_ptr[p + 1]]
        cur = np.arange(hi - lo)
        nxt = np.empty(hi - lo, dtype=np.int64)
        count = np.empty(65537, dtype=np.int64)
        for shift in range(0, key_bits, 16):
            count[:] = 0
            for t in range(cur.size):
                count[((indices[lo + t] >> shift) & 0xFFFF) + 1] += 1
            for b in range(65536):
                count[b + 1] += count[b]
            for t in range(cur.size):
                key = (indices[lo + cur[t]] >> shift) & 0xFFFF
                nxt[count[key]] = cur[t]
                count[key] += 1
            cur, nxt = nxt, cur
        pairs = 0
        run = 0
        prev = -1
        for t in range(cur.size):
            order[lo + t] = cur[t]
            j = indices[lo + cur[t]]
            if j != prev or run == max_run:
                pairs += 1
                run = 0
                prev = j
            run += 1
        pair_ptr[p + 1] = pairs
    for p in range(parts):
        pair_ptr[p + 1] += pair_ptr[p]
    m = indices.size
    pair_src = np.empty(pair_ptr[parts], dtype=indices.dtype)
    pair_len = np.empty(pair_ptr[parts], dtype=np.uint16)
    dst_local = np.empty(m, dtype=np.uint16)
    weighted = vals.size > 0
    layout_vals = np.empty(m if weighted else 0, dtype=vals.dtype)
    for p in prange(parts):
        r0 = part_ptr[p]
        lo = indptr[r0]
        hi = indptr[part_ptr[p + 1]]
        local_row = np.empty(hi - lo, dtype=np.uint16)
        for r in range(r0, part_ptr[p + 1]):
            for k in range(indptr[r], indptr[r + 1]):
                local_row[k - lo] = r - r0
        q = pair_ptr[p] - 1
        run = 0
        prev = -1
        for t in range(hi - lo):
            src = order[lo + t]
            j = indices[lo + src]
            if j != prev or run == max_run:
                q += 1
                pair_src[q] = j
                pair_len[q] = 0
                run = 0
                prev = j
            pair_len[q] += 1
            run += 1
            dst_local[lo + t] = local_row[src]
            if weighted:
                layout_vals[lo + t] = vals[lo + src]
    return pair_ptr, pair_src, pair_len, dst_local, layout_vals


@njit(parallel=True, cache=True, nogil=True)
def row_range_sums(begin, end, indices, vals, xs, out):  # pragma: no cover - compiled
    """``out[r] = sum of (vals[k] *) xs[indices[k]] for k in [begin[r], end[r])``, in
    float64, rows in parallel, without the GIL."""
    weighted = vals.size > 0
    for r in prange(begin.size):
        acc = 0.0
        for k in range(begin[r], end[r]):
            if weighted:
                acc += np.float64(vals[k]) * np.float64(xs[indices[k]])
            else:
                acc += np.float64(xs[indices[k]])
        out[r] = acc
