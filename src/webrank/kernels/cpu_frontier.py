"""CPU kernels of incremental PageRank (:mod:`webrank.incremental`): Jacobi steps over a
dynamic frontier of rows, compiled with the package (``native/frontier.cpp``).

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

A step's sums (the change and ``sum(acc)``'s change) are taken in the order of the active
rows even when the rows run on several threads: the same bits at any thread count.
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.native import lib, num_threads

__all__ = ["PARALLEL_ROWS", "frontier_step", "out_neighbours"]

PARALLEL_ROWS = 4096  # active rows from which a frontier step uses all threads


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
    active = np.ascontiguousarray(active, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    # threads pay off only on large frontiers: a parallel region costs tens of
    # microseconds to start, far more on an oversubscribed machine
    threads = num_threads() if active.size >= PARALLEL_ROWS else 1
    change, held, edges = lib.frontier_step(indptr, indices, vals, inv_out, y, ys, b, alpha,
                                            active, acc, tau, new_vals, propagate, out_indptr,
                                            out_indices, flag, threads)
    if edges < flag.size // 32:
        # few candidates: walking their out-links costs O(edges), not O(n)
        nxt = _collect(out_indptr, out_indices, active, propagate, flag, True, edges)
    else:
        nxt = np.flatnonzero(flag)
        flag[nxt] = 0
    return nxt, float(change), float(held)


def out_neighbours(out_indptr: np.ndarray, out_indices: np.ndarray, rows: np.ndarray,
                   flag: np.ndarray) -> np.ndarray:
    """Sorted, distinct out-neighbours of ``rows`` (``flag``: zeroed uint8 scratch of n)."""
    rows = np.ascontiguousarray(rows)
    if rows.dtype not in (np.int32, np.int64):  # what the kernel takes
        rows = rows.astype(np.int64)
    total = int((out_indptr[rows + 1] - out_indptr[rows]).sum()) if rows.size else 0
    return _collect(out_indptr, out_indices, rows, np.ones(rows.size, np.bool_), flag, False,
                    total)


def _collect(out_indptr: np.ndarray, out_indices: np.ndarray, rows: np.ndarray,
             propagate: np.ndarray, flag: np.ndarray, marked: bool, total: int) -> np.ndarray:
    """Distinct out-neighbours of the propagating rows, sorted; resets their flags.
    ``marked``: the flags are already set (by a step) rather than to be set here; ``total``:
    the out-degree sum of the propagating rows (a bound on the count)."""
    buf = np.empty(total, dtype=np.int64)
    count = lib.frontier_collect(out_indptr, out_indices, rows, propagate, flag, marked, buf)
    return buf[:count].copy() if count < total // 2 else buf[:count]
