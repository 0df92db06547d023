"""CPU kernels of incremental PageRank (:mod:`webrank.incremental`): Jacobi steps over a
dynamic frontier of rows, JIT-compiled with Numba.

The frontier phase solves the linear system

    y = alpha * P^T y + b            (P: row-stochastic on non-dangling rows, 0 on dangling)

touching only the *active* rows. :func:`frontier_step` recomputes every active row from
the previous iterate (Jacobi, so the result does not depend on thread timing):

    y'[i] = alpha * sum_{j -> i} val(j, i) * ys[j] + b[i],     ys[j] = y[j] * inv_out[j]

and accumulates ``acc[i] += |y'[i] - y[i]|``, the change of node i not yet passed on to
its out-neighbours. A node whose ``acc`` exceeds the frontier tolerance ``tau`` is
*propagating*: its out-neighbours are active in the next step and its ``acc`` is reset.
Every change is thus either propagated or counted in ``acc``; the L1 residual of the
system is at most ``alpha * sum(acc)`` once no row is active (see webrank.incremental).

The same step marks the out-neighbours of propagating rows in an n-byte flag array
(through the out-link CSR) and returns them as the next active list (sorted, distinct):
a walk over those out-links while they are few, a scan of the flags when they are many.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit, prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only without numba
    HAVE_NUMBA = False

__all__ = ["HAVE_NUMBA", "PARALLEL_ROWS", "frontier_step", "out_neighbours"]

PARALLEL_ROWS = 4096  # active rows from which a frontier step uses all threads


if HAVE_NUMBA:
    from webrank.kernels.cpu_numba import row_sum

    def _frontier_step_body(indptr, indices, vals, inv_out, y, ys, b, alpha, active, acc, tau,
                            new_vals, propagate, out_indptr, out_indices,
                            flag):  # pragma: no cover - compiled
        na = active.size
        uniform_b = b.size == 1
        # pass 1: new values from the previous iterate (Jacobi)
        for t in prange(na):
            i = active[t]
            s = row_sum(indptr, indices, vals, ys, i)
            new_vals[t] = alpha * s + (b[0] if uniform_b else b[i])
        # pass 2: commit, account for the change, mark the out-neighbours of propagating
        # rows (every writer stores 1, so the unsynchronised flag writes are benign)
        change = 0.0  # L1 norm of this step's change
        held = 0.0  # change of sum(acc)
        edges = 0  # out-links of the propagating rows
        for t in prange(na):
            i = active[t]
            yi = new_vals[t]
            diff = abs(yi - y[i])
            y[i] = yi
            ys[i] = yi * inv_out[i]
            before = acc[i]
            after = before + diff
            change += diff
            if after > tau:
                propagate[t] = True
                acc[i] = 0.0
                kept = -before
                for k in range(out_indptr[i], out_indptr[i + 1]):
                    flag[out_indices[k]] = 1
                edges += out_indptr[i + 1] - out_indptr[i]
            else:
                propagate[t] = False
                acc[i] = after
                kept = diff
            held += kept
        return change, held, edges

    # one source, two compilations: threads pay off only on large frontiers (a parallel
    # region costs tens of microseconds to start, far more on an oversubscribed machine)
    _frontier_step_par = njit(parallel=True, cache=True)(_frontier_step_body)
    _frontier_step_seq = njit(cache=True)(_frontier_step_body)

    @njit(cache=True)
    def _collect(out_indptr, out_indices, rows, propagate, flag, marked):  # pragma: no cover
        """Distinct out-neighbours of the propagating rows, sorted; resets their flags.
        ``marked``: the flags are already set (by a step) rather than to be set here."""
        total = 0
        for t in range(rows.size):
            if propagate[t]:
                i = rows[t]
                total += out_indptr[i + 1] - out_indptr[i]
        buf = np.empty(total, dtype=np.int64)
        count = 0
        want = 1 if marked else 0
        for t in range(rows.size):
            if propagate[t]:
                i = rows[t]
                for k in range(out_indptr[i], out_indptr[i + 1]):
                    j = out_indices[k]
                    if flag[j] == want:
                        flag[j] = 1 - want
                        buf[count] = j
                        count += 1
        out = np.sort(buf[:count])
        if not marked:
            for t in range(count):
                flag[out[t]] = 0
        return out


def frontier_step(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                  inv_out: np.ndarray, y: np.ndarray, ys: np.ndarray, b: np.ndarray,
                  alpha: float, active: np.ndarray, acc: np.ndarray, tau: float,
                  new_vals: np.ndarray, propagate: np.ndarray, out_indptr: np.ndarray,
                  out_indices: np.ndarray, flag: np.ndarray) -> tuple[np.ndarray, float, float]:
    """One Jacobi step over the rows in ``active``, in place; returns the next active list.

    Parameters
    ----------
    indptr, indices : in-link CSR of the graph (rows = targets).
    vals : per-edge transition values ``w / out_weight`` (weighted), or empty (unweighted).
    inv_out : ``1 / out_degree`` (unweighted) or 1 (weighted); 0 on dangling nodes.
    y, ys : the iterate and ``y * inv_out`` (float64, length n), updated on active rows.
    b : the constant term, length n or length 1 (uniform).
    alpha : damping factor.
    active : sorted int64 row indices to recompute.
    acc : per-node change not yet propagated (float64, length n), updated.
    tau : frontier tolerance (same units as y).
    new_vals, propagate : float64 and bool scratch of length >= ``active.size``.
    out_indptr, out_indices : out-link CSR (rows = sources), for the next frontier.
    flag : uint8 scratch of length n, all zero on entry and on return.

    Returns
    -------
    (next_active, change, held) : the sorted, distinct out-neighbours of the rows that
    propagated; the L1 norm of this step's change; the change of ``sum(acc)``.
    """
    kernel = _frontier_step_par if active.size >= PARALLEL_ROWS else _frontier_step_seq
    change, held, edges = kernel(indptr, indices, vals, inv_out, y, ys, b, alpha, active,
                                 acc, tau, new_vals, propagate, out_indptr, out_indices, flag)
    if edges < flag.size // 32:
        # few candidates: walking their out-links costs O(edges), not O(n)
        nxt = _collect(out_indptr, out_indices, active, propagate, flag, True)
    else:
        nxt = np.flatnonzero(flag)
        flag[nxt] = 0
    return nxt, float(change), float(held)


def out_neighbours(out_indptr: np.ndarray, out_indices: np.ndarray, rows: np.ndarray,
                   flag: np.ndarray) -> np.ndarray:
    """Sorted, distinct out-neighbours of ``rows`` (``flag``: zeroed uint8 scratch of n)."""
    return _collect(out_indptr, out_indices, rows, np.ones(rows.size, np.bool_), flag, False)
