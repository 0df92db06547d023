"""CPU kernel of :mod:`webrank.backends.batch`: one fused power step of a row-major
n×k block of PageRank vectors (k personalizations at once), with Numba.

Importing this module imports Numba; :mod:`webrank.backends.batch` imports it only when
the Numba step is used.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, fastmath=False)
def block_step(indptr, indices, vals, g, x, vptr, vcol, vval, coef_v, d, coef_d, inv_out,
               alpha, delta, crit, bounds, x_out, g_out,
               partial):  # pragma: no cover - compiled
    """One fused step of a row-major block: for every row i and column q,

    t = alpha * sum_{j -> i} val(j,i) g[j,q] + coef_d[q] d[i,q] + coef_v[q] v[i,q];
    (d[i,q] = v[i,q] when ``d`` is empty, else the shared d[i]);
    x_out = t (or x + t in delta steps); g_out = t * inv_out[i].
    ``partial[:, q, c]`` gets chunk c's residual, dangling mass and mass of t in column q.
    Branches are hoisted out of the column loops so those stay plain vector loops.
    """
    b = x.shape[1]
    weighted = vals.size > 0
    shared_d = d.size > 0
    for c in prange(bounds.size - 1):
        acc = np.zeros(b)
        odd = np.zeros(b)
        res = np.zeros(b)
        dmass = np.zeros(b)
        tmass = np.zeros(b)
        for i in range(bounds[c], bounds[c + 1]):
            for q in range(b):
                acc[q] = 0.0
                odd[q] = 0.0
            # even and odd links in two sums, as the scalar kernel's row_sum adds them
            e = indptr[i]
            end = indptr[i + 1]
            while e + 1 < end:
                j0 = indices[e]
                j1 = indices[e + 1]
                if weighted:
                    w0 = np.float64(vals[e])
                    w1 = np.float64(vals[e + 1])
                    for q in range(b):
                        acc[q] += w0 * g[j0, q]
                        odd[q] += w1 * g[j1, q]
                else:
                    for q in range(b):
                        acc[q] += g[j0, q]
                        odd[q] += g[j1, q]
                e += 2
            if e < end:
                j0 = indices[e]
                w0 = np.float64(vals[e]) if weighted else 1.0
                for q in range(b):
                    acc[q] += w0 * g[j0, q] if weighted else g[j0, q]
            for q in range(b):
                acc[q] = alpha * (acc[q] + odd[q])
            if shared_d:
                di = d[i]
                for q in range(b):
                    acc[q] += coef_d[q] * di
            for e2 in range(vptr[i], vptr[i + 1]):
                col = vcol[e2]
                if not shared_d:  # d_c = v_c
                    acc[col] += coef_d[col] * vval[e2]
                acc[col] += coef_v[col] * vval[e2]
            s = inv_out[i]
            for q in range(b):
                g_out[i, q] = acc[q] * s
                tmass[q] += acc[q]
            if s == 0.0:
                for q in range(b):
                    dmass[q] += acc[q]
            # acc becomes the change of each column: t in delta steps, t - x otherwise
            if delta:
                for q in range(b):
                    x_out[i, q] = x[i, q] + acc[q]
            else:
                for q in range(b):
                    x_out[i, q] = acc[q]
                    acc[q] -= x[i, q]
            if crit == 0:
                for q in range(b):
                    res[q] += abs(acc[q])
            elif crit == 1:
                for q in range(b):
                    res[q] += acc[q] * acc[q]
            else:
                for q in range(b):
                    res[q] = max(res[q], abs(acc[q]))
        for q in range(b):
            partial[0, q, c] = res[q]
            partial[1, q, c] = dmass[q]
            partial[2, q, c] = tmass[q]
