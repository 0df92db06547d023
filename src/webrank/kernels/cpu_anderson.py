"""CPU kernels of Anderson mixing (:mod:`webrank.solvers.anderson`), with Numba: the two
passes over the history that a mixing step makes, rows in parallel chunks.

The history is a ring of ``M`` slots, each holding an iterate's residual
``F[s] = g(x_s) - x_s`` (float32: it only weighs the mixture, through the Gram matrix)
and map value ``G[s] = g(x_s)`` (float64: the mixture is made of them) as rows of
``(M, n)`` arrays; ``base`` holds the current iterate ``x_s`` in float64. Importing this
module imports Numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, fastmath=False)
def _record(gx, base, F, G, slot, slots, bounds, partial):  # pragma: no cover - compiled
    k = slots.size
    for c in prange(bounds.size - 1):
        for q in range(k):
            partial[c, q] = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            f = np.float32(gx[i] - base[i])
            F[slot, i] = f
            G[slot, i] = gx[i]
            for q in range(k):
                partial[c, q] += np.float64(f) * np.float64(F[slots[q], i])


@njit(parallel=True, cache=True, fastmath=False)
def _mix(coef, slots, G, scale, dangling, x, u, base, bounds,
         partial):  # pragma: no cover - compiled
    k = slots.size
    for c in prange(bounds.size - 1):
        mass = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            t = 0.0
            for q in range(k):
                t += coef[q] * G[slots[q], i]
            x[i] = t
            u[i] = t * scale[i]
            base[i] = t
            mass += t if dangling[i] else 0.0
        partial[c] = mass


def record(gx: np.ndarray, base: np.ndarray, F: np.ndarray, G: np.ndarray, slot: int,
           slots: np.ndarray, bounds: np.ndarray, partial: np.ndarray) -> np.ndarray:
    """Store ``g(x_s) = gx`` in slot ``slot`` (``base`` holds ``x_s``): ``F[slot] = gx -
    x_s``, ``G[slot] = gx``; return the dot products ``F[slot] . F[q]`` for ``q`` in
    ``slots`` (float64, in ``slots`` order; ``slot`` among them). ``bounds``: row chunks;
    ``partial``: float64 scratch of at least (chunks, len(slots))."""
    _record(gx, base, F, G, int(slot), slots, bounds, partial)
    return partial[: bounds.size - 1, : slots.size].sum(axis=0)


def mix(coef: np.ndarray, slots: np.ndarray, G: np.ndarray, scale: np.ndarray,
        dangling: np.ndarray, x: np.ndarray, u: np.ndarray, base: np.ndarray,
        bounds: np.ndarray, partial: np.ndarray) -> float:
    """``x = sum_q coef[q] G[slots[q]]``, also written to ``base`` (the next iterate) and,
    times ``scale``, to ``u``; returns the mass of ``x`` on the ``dangling`` (bool)
    nodes. ``partial``: float64 scratch of at least the chunks."""
    _mix(coef, slots, G, scale, dangling, x, u, base, bounds, partial)
    return float(partial[: bounds.size - 1].sum())
