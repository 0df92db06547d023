"""CPU kernel of :mod:`webrank.backends.batch`: one fused power step of a row-major
n×k block of PageRank vectors (k personalizations at once), compiled
(``native/solver_steps.cpp``).
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.native import lib, num_threads


def block_step(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray, g: np.ndarray,
               x: np.ndarray, vptr: np.ndarray, vcol: np.ndarray, vval: np.ndarray,
               coef_v: np.ndarray, d: np.ndarray, coef_d: np.ndarray, inv_out: np.ndarray,
               alpha: float, delta: bool, crit: int, bounds: np.ndarray, x_out: np.ndarray,
               g_out: np.ndarray, partial: np.ndarray) -> None:
    """One fused step of a row-major block: for every row i and column q,

    t = alpha * sum_{j -> i} val(j,i) g[j,q] + coef_d[q] d[i,q] + coef_v[q] v[i,q];
    (d[i,q] = v[i,q] when ``d`` is empty, else the shared d[i]);
    x_out = t (or x + t in delta steps); g_out = t * inv_out[i].
    ``partial[:, q, c]`` gets chunk c's residual, dangling mass and mass of t in column q.
    Each column's link sum takes even and odd links in two sums, as the scalar step's
    row sums do.
    """
    lib.ppr_block_step(indptr, indices, vals, g, x, vptr, vcol, vval, coef_v, d, coef_d,
                       inv_out, float(alpha), bool(delta), int(crit), bounds, x_out, g_out,
                       partial, num_threads())


def chunk_totals(partial: np.ndarray, crit: int) -> np.ndarray:
    """Each column's step sums from :func:`block_step`'s ``partial`` (3, b, chunks):
    (3, b) float64 of residual (max over chunks for ``crit`` 2), dangling mass and mass,
    added chunk by chunk as :func:`webrank.kernels.cpu.fused_step` adds its own: a column
    gets the same bits in a block as stepped alone."""
    out = np.empty(partial.shape[:2])
    lib.ppr_chunk_totals(partial, int(crit), out)
    return out
