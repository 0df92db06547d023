"""CPU kernel of the ``adaptive`` method: one power step over a list of active rows
(compiled: ``native/solver_steps.cpp``).

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

from webrank.kernels.cpu import chunk_bounds
from webrank.kernels.native import lib, num_threads


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
    lib.adaptive_step(indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, crit, theta,
                      rows, bounds, calm, x_out, xs_out, partial, num_threads())
    p = partial[: bounds.size - 1]
    res = p[:, 0].max(initial=0.0) if crit == 2 else p[:, 0].sum()
    return float(res), float(p[:, 1].sum())
