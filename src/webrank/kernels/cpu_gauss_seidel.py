r"""CPU kernel: one Gauss-Seidel sweep over the PageRank linear system, with Numba.

The system is ``(I - alpha M) x = (1 - alpha) v`` with ``M = P^T + d 1_D^T`` (see
:mod:`webrank.solvers.krylov`). Row ``i`` of ``M`` is the in-link row ``i`` of the CSR
(``val(j, i) = w_ji / out_j``) plus ``d_i`` in every dangling column. A sweep visits the
nodes in order and solves row ``i`` for ``x_i`` with the newest values of all others:

.. math::

    x_i \leftarrow \frac{\alpha \bigl(\sum_{j \to i,\ j \ne i} val(j,i)\, x_j
        + d_i\, (m_D - [i \in D]\, x_i)\bigr) + (1 - \alpha) v_i}
        {1 - \alpha\, (val(i,i) + [i \in D]\, d_i)},

where ``m_D`` is the *current* dangling mass, updated after each dangling node changes:
exact Gauss-Seidel on the full (rank-one-updated) matrix, not a lagged approximation.
``I - alpha M`` is a nonsingular M-matrix, so the sweep is a regular splitting and
converges for every alpha < 1 (Varga, Matrix Iterative Analysis, Thm 3.13).

A sweep is inherently sequential: each ``x_i`` reads the ``x_j`` written before it in
the same sweep, so the kernel runs on one thread (a multicoloured or block variant could
run in parallel, but is a different iteration with a different rate).
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.cpu import CRITERION_CODE, HAVE_NUMBA

if HAVE_NUMBA:
    from numba import njit
else:  # pragma: no cover - exercised only without numba

    def njit(*_args, **_kwargs):
        return lambda f: f


@njit(cache=True, fastmath=False)
def _sweep(indptr, indices, vals, inv_out, v, d, dangling, self_weight, alpha, dm, crit,
           x):  # pragma: no cover - compiled
    n = indptr.size - 1
    uniform_v = v.size == 1
    uniform_d = d.size == 1
    weighted = vals.size > 0
    change = 0.0
    for i in range(n):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if j != i:
                if weighted:
                    acc += vals[k] * x[j]
                else:
                    acc += inv_out[j] * x[j]
        vi = v[0] if uniform_v else v[i]
        di = d[0] if uniform_d else d[i]
        old = x[i]
        diag = self_weight[i]
        dm_others = dm
        if dangling[i]:
            dm_others -= old
            diag += di
        new = (alpha * (acc + di * dm_others) + (1.0 - alpha) * vi) / (1.0 - alpha * diag)
        x[i] = new
        if dangling[i]:
            dm = dm_others + new
        diff = abs(new - old)
        if crit == 0:
            change += diff
        elif crit == 1:
            change += diff * diff
        elif diff > change:
            change = diff
    return change, dm


def self_loop_weights(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                      inv_out: np.ndarray) -> np.ndarray:
    """``M_ii`` from links only: ``val(i, i)`` of each node's self-loop, 0 without one."""
    n = indptr.size - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    loop = indices == rows
    out = np.zeros(n)
    w = vals[loop] if vals.size else inv_out[rows[loop]]
    np.add.at(out, rows[loop], w)
    return out


def gauss_seidel_sweep(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                       inv_out: np.ndarray, v: np.ndarray, d: np.ndarray,
                       dangling: np.ndarray, self_weight: np.ndarray, alpha: float,
                       dm: float, criterion: str, x: np.ndarray) -> tuple[float, float]:
    """One in-place forward sweep over ``x`` (float64); returns ``(change, dangling mass)``.

    Parameters
    ----------
    indptr, indices : in-link CSR (row i lists the sources j of links j -> i).
    vals : float64 per-link ``w_ji / out_j`` of weighted graphs; empty if unweighted.
    inv_out : float64 ``1 / out_degree`` (0 for dangling nodes); used when unweighted.
    v, d : teleport and dangling distributions; length 1 means uniform ``1/n``.
    dangling : bool mask of dangling nodes.
    self_weight : :func:`self_loop_weights`.
    dm : dangling mass of ``x`` on entry (kept current during the sweep).
    criterion : the norm of ``x_new - x_old`` returned as ``change`` ("l1", "l2", "linf").
    """
    change, dm = _sweep(indptr, indices, vals, inv_out, v, d, dangling, self_weight,
                        float(alpha), float(dm), CRITERION_CODE[criterion], x)
    if criterion == "l2":
        change = np.sqrt(change)
    return float(change), float(dm)
