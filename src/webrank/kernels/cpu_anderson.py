"""CPU kernels of Anderson mixing (:mod:`webrank.backends.anderson`), compiled
(``native/solver_steps.cpp``).

The history is a ring of ``M`` slots, each holding one application of the map, ``y ->
g(y)``: its residual ``F[s] = g(y_s) - y_s`` (float32: it only weighs the mixture,
through the Gram matrix) and its value ``G[s] = g(y_s)`` (float64: the mixture is made of
them), as rows of ``(M, n)`` arrays. The map's kernel records its output row by row as
it writes it (the Gauss-Seidel sweep takes a :class:`Record`, saving a pass over the
vectors); a mixing step then makes two passes over row chunks in parallel: the new
residual's products with the others (:func:`products`, float32 rows only) and the
mixture (:func:`mix`).

Measured on cnr-2000 (2 threads): recording in the sweep costs it 0.35 ms, against
1.2 ms for a pass of its own; summing the products in the sweep as well (one running sum
per slot, in memory) cost it 3 ms, in their own pass ~0.6 ms.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from webrank.kernels.native import lib, num_threads


class Record(NamedTuple):
    """Where a map application goes into the history: ``F[slot] = g(y) - y`` (float32),
    ``G[slot] = g(y)`` (float64), for each row the map's kernel writes."""

    F: np.ndarray
    G: np.ndarray
    slot: int


#: the :class:`Record` of a map application that records nothing (same array types)
NO_RECORD = Record(np.zeros((1, 0), dtype=np.float32), np.zeros((1, 0)), 0)


def products(F: np.ndarray, slot: int, slots: np.ndarray, bounds: np.ndarray,
             partial: np.ndarray) -> np.ndarray:
    """The dot products ``F[slot] . F[q]`` for ``q`` in ``slots`` (int64), float64, in
    ``slots`` order, summed over the row chunks ``bounds`` in order. ``partial``: float64
    scratch of at least (chunks, len(slots))."""
    lib.anderson_products(F, int(slot), slots, bounds, partial, num_threads())
    return partial[: bounds.size - 1, : slots.size].sum(axis=0)


def mix(coef: np.ndarray, slots: np.ndarray, G: np.ndarray, scale: np.ndarray,
        weight: np.ndarray, x: np.ndarray, u: np.ndarray, bounds: np.ndarray,
        partial: np.ndarray) -> float:
    """``x = sum_q coef[q] G[slots[q]]`` and ``u = x (.) scale``; returns ``weight . u``
    (float64 weights). ``partial``: float64 scratch of at least the chunks."""
    lib.anderson_mix(coef, slots, G, scale, weight, x, u, bounds, partial, num_threads())
    return float(partial[: bounds.size - 1].sum())
