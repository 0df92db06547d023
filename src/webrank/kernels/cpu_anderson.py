"""CPU kernels of Anderson mixing (:mod:`webrank.backends.anderson`), with Numba.

The history is a ring of ``M`` slots, each holding one application of the map, ``y ->
g(y)``: its residual ``F[s] = g(y_s) - y_s`` (float32: it only weighs the mixture,
through the Gram matrix) and its value ``G[s] = g(y_s)`` (float64: the mixture is made of
them), as rows of ``(M, n)`` arrays. The map's kernel records its output row by row as
it writes it (:func:`record_row`, inlined: the Gauss-Seidel sweep calls it, saving a pass
over the vectors); a mixing step then makes two passes over row chunks in parallel: the
new residual's products with the others (:func:`products`, float32 rows only) and the
mixture (:func:`mix`).

Measured on cnr-2000 (2 threads): recording in the sweep costs it 0.35 ms, against
1.2 ms for a pass of its own; summing the products in the sweep as well (one running sum
per slot, in memory) cost it 3 ms, in their own pass ~0.6 ms. Importing this module
imports Numba.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange


class Record(NamedTuple):
    """Where a map application goes into the history: ``F[slot] = g(y) - y``, ``G[slot]
    = g(y)``; the map's kernel calls :func:`record_row` for each row it writes."""

    F: np.ndarray
    G: np.ndarray
    slot: int


#: the :class:`Record` of a map application that records nothing (same array types)
NO_RECORD = Record(np.zeros((1, 0), dtype=np.float32), np.zeros((1, 0)), 0)


@njit(inline="always")
def record_row(i, gy, y, F, G, slot):  # pragma: no cover - compiled
    """Row ``i`` of a :class:`Record`: the map took ``y`` (the row's input) to ``gy``."""
    F[slot, i] = np.float32(gy - y)
    G[slot, i] = gy


@njit(parallel=True, cache=True, fastmath=False)
def _products(F, slot, slots, bounds, partial):  # pragma: no cover - compiled
    for c in prange(bounds.size - 1):
        lo, hi = bounds[c], bounds[c + 1]
        for q in range(slots.size):
            row = slots[q]
            # four interleaved sums: one chain of dependent adds would bound the pass
            a0 = a1 = a2 = a3 = 0.0
            i = lo
            while i + 3 < hi:
                a0 += np.float64(F[slot, i]) * np.float64(F[row, i])
                a1 += np.float64(F[slot, i + 1]) * np.float64(F[row, i + 1])
                a2 += np.float64(F[slot, i + 2]) * np.float64(F[row, i + 2])
                a3 += np.float64(F[slot, i + 3]) * np.float64(F[row, i + 3])
                i += 4
            while i < hi:
                a0 += np.float64(F[slot, i]) * np.float64(F[row, i])
                i += 1
            partial[c, q] = (a0 + a1) + (a2 + a3)


def products(F: np.ndarray, slot: int, slots: np.ndarray, bounds: np.ndarray,
             partial: np.ndarray) -> np.ndarray:
    """The dot products ``F[slot] . F[q]`` for ``q`` in ``slots`` (int64), float64, in
    ``slots`` order, summed over the row chunks ``bounds`` in order. ``partial``: float64
    scratch of at least (chunks, len(slots))."""
    _products(F, int(slot), slots, bounds, partial)
    return partial[: bounds.size - 1, : slots.size].sum(axis=0)


@njit(parallel=True, cache=True, fastmath=False)
def _mix(coef, slots, G, scale, weight, x, u, bounds, partial):  # pragma: no cover
    k = slots.size
    for c in prange(bounds.size - 1):
        mass = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            t = 0.0
            for q in range(k):
                t += coef[q] * G[slots[q], i]
            x[i] = t
            ui = t * scale[i]
            u[i] = ui
            mass += weight[i] * ui
        partial[c] = mass


def mix(coef: np.ndarray, slots: np.ndarray, G: np.ndarray, scale: np.ndarray,
        weight: np.ndarray, x: np.ndarray, u: np.ndarray, bounds: np.ndarray,
        partial: np.ndarray) -> float:
    """``x = sum_q coef[q] G[slots[q]]`` and ``u = x (.) scale``; returns ``weight . u``
    (float64 weights). ``partial``: float64 scratch of at least the chunks."""
    _mix(coef, slots, G, scale, weight, x, u, bounds, partial)
    return float(partial[: bounds.size - 1].sum())
