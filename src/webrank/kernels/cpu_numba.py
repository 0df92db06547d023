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


@njit(parallel=True, cache=True, fastmath=False)
def fused_step(
    indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, mass, crit, delta, bounds,
    x_out, xs_out, partial,
):  # pragma: no cover - compiled
    """One fused power step over the row chunks ``bounds`` (see
    :func:`webrank.kernels.cpu.fused_step`); per chunk ``c`` it writes the residual, the
    dangling mass and the mass of the new vector to ``partial[c]``."""
    nchunks = bounds.size - 1
    uniform_v = v.size == 1
    uniform_d = d.size == 1
    weighted = vals.size > 0
    for c in prange(nchunks):
        res = 0.0
        dmass = 0.0
        tmass = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            acc = 0.0
            if weighted:
                for k in range(indptr[i], indptr[i + 1]):
                    acc += vals[k] * xs[indices[k]]
            else:
                for k in range(indptr[i], indptr[i + 1]):
                    acc += xs[indices[k]]
            vi = v[0] if uniform_v else v[i]
            di = d[0] if uniform_d else d[i]
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
            tmass += t
            if crit == 0:
                res += diff
            elif crit == 1:
                res += diff * diff
            elif diff > res:
                res = diff
        partial[c, 0] = res
        partial[c, 1] = dmass
        partial[c, 2] = tmass


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
