"""CPU kernel of the ``adaptive`` method: one power step over a list of active rows.

Kamvar, Haveliwala & Golub ("Adaptive methods for the computation of PageRank", 2004)
stop recomputing pages that have converged; Sgherzi did the same with a bitmask and a
branch per row. Here the active rows are a compacted index list (``rows``), so a step
costs the in-links of the active rows only and no thread walks a frozen row. For each
``i`` in ``rows``::

    x'[i]  = alpha * sum_{j -> i} val(j,i) * xs[j] + alpha * dm * d[i] + (1 - alpha) * v[i]
    xs'[i] = x'[i] * inv_out[i]
    calm[i] = calm[i] + 1 if |x'[i] - x[i]| < theta else 0      (saturating at 255)

Rows not in the list keep their value (the caller keeps both buffers equal there). The
dangling mass of the new vector is the old one plus the change over active dangling rows
(the frozen rows' part is constant), so the kernel returns that change, not a full sum.
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.cpu import HAVE_NUMBA, chunk_bounds

if HAVE_NUMBA:
    from numba import njit, prange

    from webrank.kernels.cpu_numba import row_sum

    @njit(parallel=True, cache=True, fastmath=False)
    def _adaptive_step_numba(
        indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, crit, theta, rows, bounds,
        calm, x_out, xs_out, partial,
    ):  # pragma: no cover - compiled
        nchunks = bounds.size - 1
        uniform_v = v.size == 1
        uniform_d = d.size == 1
        for c in prange(nchunks):
            res = 0.0
            ddm = 0.0
            for r in range(bounds[c], bounds[c + 1]):
                i = rows[r]
                acc = row_sum(indptr, indices, vals, xs, i)
                vi = v[0] if uniform_v else v[i]
                di = d[0] if uniform_d else d[i]
                t = alpha * acc + alpha * dm * di + (1.0 - alpha) * vi
                diff = abs(t - x[i])
                s = inv_out[i]
                if s == 0.0:
                    ddm += t - x[i]
                x_out[i] = t
                xs_out[i] = t * s
                if diff < theta:
                    if calm[i] < 255:
                        calm[i] += 1
                else:
                    calm[i] = 0
                if crit == 0:
                    res += diff
                elif crit == 1:
                    res += diff * diff
                elif diff > res:
                    res = diff
            partial[c, 0] = res
            partial[c, 1] = ddm


def row_bounds(indptr: np.ndarray, rows: np.ndarray, chunks: int) -> np.ndarray:
    """Boundaries (positions in ``rows``) splitting the active rows into ``chunks``
    pieces of about equal work: in-links plus one per row."""
    deg = indptr[rows + 1] - indptr[rows]
    cum = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(deg + 1, out=cum[1:])
    return chunk_bounds(cum, chunks)


def adaptive_step(
    indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray, *, xs: np.ndarray,
    x: np.ndarray, v: np.ndarray, d: np.ndarray, inv_out: np.ndarray, alpha: float,
    dm: float, crit: int, theta: float, rows: np.ndarray, bounds: np.ndarray,
    calm: np.ndarray, x_out: np.ndarray, xs_out: np.ndarray, partial: np.ndarray,
) -> tuple[float, float]:
    """One power step over ``rows`` (see the module docstring).

    Returns ``(residual over the active rows, change of the dangling mass)``; the
    residual is the L1 sum, L2 *squared* sum or max by ``crit`` (0/1/2). ``vals`` is
    empty for unweighted graphs, ``v``/``d`` have length 1 when uniform, ``bounds``
    come from :func:`row_bounds` and ``partial`` has at least ``bounds.size - 1`` rows.
    """
    if not HAVE_NUMBA:  # pragma: no cover - numba is a dependency
        raise RuntimeError("method='adaptive' on the CPU needs Numba (pip install numba)")
    _adaptive_step_numba(indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, crit,
                         theta, rows, bounds, calm, x_out, xs_out, partial)
    p = partial[: bounds.size - 1]
    res = p[:, 0].max(initial=0.0) if crit == 2 else p[:, 0].sum()
    return float(res), float(p[:, 1].sum())
