r"""Anderson mixing: a fixed-point iteration ``x <- g(x)`` accelerated by combining its
last few steps.

Given the last ``k <= m + 1`` applications of the map, ``y_j -> g_j = g(y_j)``, with
residuals ``f_j = g_j - y_j``, the next iterate is

.. math::

    x_{k+1} = \sum_j a_j\, g_j, \qquad
    a = \arg\min_{\sum_j a_j = 1} \Bigl\| \sum_j a_j f_j \Bigr\|_2 ,

the combination whose linearised residual is smallest ("type II" Anderson mixing,
Walker & Ni 2011; for a linear ``g`` it is GMRES in disguise, without its
orthogonalisation). The ``y_j`` need not be earlier mixtures: any steps of the map
serve as secant information (Fang & Saad 2009), so the Gauss-Seidel solver records the
last sweep before each mixing, whose input and output it holds anyway.

The weights come from the ``k x k`` Gram matrix ``H = F^T F`` of the residuals:
``a = H^{-1} 1 / (1^T H^{-1} 1)``, solved after scaling ``H`` to unit diagonal, with a
pseudo-inverse so that nearly dependent residuals cannot blow it up.

Safeguards (a mixed iterate that is worse is dropped, not followed): the history is
restarted (only the newest step kept, ``x_{k+1} = g_k``) when the newest residual is
larger than the one before it, or when the weights are not finite or sum, in absolute
value, to more than :data:`MAX_WEIGHT`.

Used by the Gauss-Seidel solver (:mod:`webrank.solvers.gauss_seidel`) every
``anderson_every`` sweeps — mixing every few sweeps rather than every one keeps most of
the gain at a fraction of the vector work ("alternating" Anderson, Pratapa, Suryanarayana
& Pask 2016).

References
----------
.. [1] D. G. Anderson, "Iterative procedures for nonlinear integral equations", J. ACM
   12(4), 1965.
.. [2] H. F. Walker, P. Ni, "Anderson acceleration for fixed-point iterations", SIAM J.
   Numer. Anal. 49(4), 2011.
.. [3] H. Fang, Y. Saad, "Two classes of multisecant methods for nonlinear
   acceleration", Numer. Linear Algebra Appl. 16(3), 2009.
.. [4] P. P. Pratapa, P. Suryanarayana, J. E. Pask, "Anderson acceleration of the Jacobi
   iterative method: an efficient alternative to Krylov methods for large, sparse
   linear systems", J. Comput. Phys. 306, 2016.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: a combination whose weights sum, in absolute value, to more than this is refused
#: (the residuals were nearly dependent: the extrapolation would amplify rounding)
MAX_WEIGHT = 1e4


def mixing_weights(gram: np.ndarray) -> np.ndarray | None:
    """``argmin a^T H a`` subject to ``sum(a) = 1`` for a Gram matrix ``H`` (k x k), or None
    when it is not usable (a zero or non-finite residual, weights too large)."""
    d = np.sqrt(np.diag(gram))
    if not np.all(np.isfinite(gram)) or not np.all(d > 0):
        return None
    unit = gram / np.outer(d, d)
    w = np.linalg.lstsq(unit, 1.0 / d, rcond=1e-13)[0] / d
    total = w.sum()
    if not np.isfinite(total) or total == 0:
        return None
    a = w / total
    return a if np.abs(a).sum() <= MAX_WEIGHT else None


class AndersonMixer:
    """Anderson mixing of the last ``m + 1`` recorded steps of a map applied in place.

    The caller holds the iterate in ``x``. The map's kernel writes ``g(y)`` to ``x`` and,
    with ``y``, to the history (:meth:`record`: row by row, saving a pass); :meth:`mix`
    then writes the mixture to ``x`` (and times ``scale`` to ``u``) in two parallel
    passes of :mod:`webrank.kernels.cpu_anderson`.

    Parameters
    ----------
    n : int
        Vector length.
    m : int
        History depth: up to ``m + 1`` iterates are combined (``2 (m + 1) n`` floats).
    scale : float64 ndarray
        What :meth:`mix` multiplies into ``u``.
    weight : float64 ndarray
        :meth:`mix` returns ``weight . u``.
    chunks : int
        Parallel row chunks of the passes.
    """

    def __init__(self, n: int, m: int, scale: np.ndarray, weight: np.ndarray,
                 chunks: int) -> None:
        slots = m + 1
        self.F = np.empty((slots, n), dtype=np.float32)  # residuals: weights only
        self.G = np.empty((slots, n))
        self.gram = np.zeros((slots, slots))
        self.scale, self.weight = scale, weight
        self.bounds = np.linspace(0, n, max(1, min(chunks, n)) + 1).astype(np.int64)
        self.partial = np.zeros((self.bounds.size - 1, slots))
        self.partial_mass = np.zeros(self.bounds.size - 1)
        self.history: list[int] = []  # slots of the earlier steps, oldest first
        self.current = 0  # the slot the next recorded step goes to
        self.last_norm = math.inf
        self.restarts = 0
        self.mixes = 0

    def record(self) -> Any:
        """Where the map writes its next step ``y -> g(y)`` before :meth:`mix`: a
        :class:`~webrank.kernels.cpu_anderson.Record` for its kernel's rows."""
        from webrank.kernels.cpu_anderson import Record

        return Record(self.F, self.G, self.current)

    def mix(self, x: np.ndarray, u: np.ndarray) -> float:
        """After a recorded step (:meth:`record`): write the mixture to ``x`` and times
        ``scale`` to ``u``; return ``weight . u``."""
        from webrank.kernels import cpu_anderson

        slot = self.current
        slots = np.array([*self.history, slot], dtype=np.int64)
        dots = cpu_anderson.products(self.F, slot, slots, self.bounds, self.partial)
        self.gram[slot, slots] = dots
        self.gram[slots, slot] = dots
        norm = math.sqrt(max(dots[-1], 0.0))
        weights = None
        if slots.size > 1 and norm <= self.last_norm:
            weights = mixing_weights(self.gram[np.ix_(slots, slots)])
        if weights is None:  # plain step; the older steps are dropped
            self.restarts += slots.size > 1
            slots = slots[-1:]
            weights = np.ones(1)
        self.last_norm = norm
        self.mixes += 1
        kept = [int(s) for s in slots]
        if len(kept) == self.F.shape[0]:  # full: the oldest slot takes the next step
            nxt = kept.pop(0)  # (mixed in below: mix reads G, the next record writes it)
        else:
            nxt = next(s for s in range(self.F.shape[0]) if s not in kept)
        self.history, self.current = kept, nxt
        return cpu_anderson.mix(weights, slots, self.G, self.scale, self.weight, x, u,
                                self.bounds, self.partial_mass)
