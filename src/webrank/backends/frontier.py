"""The frontier phase of an incremental update, on the CPU.

:func:`webrank.update` first recomputes only the rows a batch of edge changes reaches:
Jacobi steps of the local system ``y = alpha P^T y + b`` over a *dynamic frontier* of
active rows (the out-neighbours of the rows whose change exceeded a tolerance), with the
compiled kernels of :mod:`webrank.kernels.cpu_frontier`. The math, the tolerance and the
residual bound are in :mod:`webrank.incremental`; this module runs the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from webrank.arrays import distinct
from webrank.backends.base import Operator
from webrank.graph import Graph
from webrank.kernels import cpu_frontier

__all__ = ["FrontierOperator", "FrontierRun"]


@dataclass
class FrontierRun:
    """What :meth:`FrontierOperator.run` did: active rows per step, why it stopped
    (``"empty"``: no row left to update; ``"too large"``; ``"max_iter"``), and the change
    computed but not passed on (``sum(acc)``, in the units of ``y``)."""

    sizes: list[int]
    stop: str
    held: float


class FrontierOperator(Operator):
    """The Google matrix of ``graph`` (CPU) stepping only the rows an edit reaches.

    Parameters
    ----------
    graph : Graph
        The (new) graph.
    alpha : float
        Damping factor in [0, 1).
    out_links : (ndarray, ndarray)
        The out-link CSR of ``graph``: ``(indptr, targets)``.

    Its capabilities hold "frontier" (the steps are the compiled kernels of
    :mod:`webrank.kernels.cpu_frontier`, always built); :meth:`run` requires it.
    """

    name = "cpu"

    def __init__(self, graph: Graph, alpha: float,
                 out_links: tuple[np.ndarray, np.ndarray]) -> None:
        super().__init__(graph, alpha, "float64")
        self.out_links = out_links
        self.capabilities = frozenset({"frontier"})

    def run(self, y: np.ndarray, b: np.ndarray, sources: np.ndarray,
            also_active: np.ndarray, *, tau: float, max_steps: int,
            max_fraction: float) -> FrontierRun:
        """Jacobi steps over the dynamic frontier, updating ``y`` in place.

        Parameters
        ----------
        y, b : ndarray of float64
            The iterate of the local system and its right-hand side (length 1: uniform).
        sources : ndarray of int
            Rows whose out-links changed: their out-neighbours start active.
        also_active : ndarray of int
            Rows active from the start besides those (targets of removed links, new
            nodes).
        tau : float
            A row passes its accumulated change on to its out-neighbours above this (in
            the units of ``y``).
        max_steps : int
            Most steps.
        max_fraction : float
            Stop once more than this fraction of the rows is active.
        """
        self.require("frontier", "the frontier phase")
        graph, n = self.graph, self.n
        vals = graph.transition_values()
        inv_out = graph.gather_scale()
        if vals is None:
            vals = np.zeros(0)
        out_indptr, out_targets = self.out_links
        ys = y * inv_out
        acc = np.zeros(n)
        flag = np.zeros(n, np.uint8)
        active = cpu_frontier.out_neighbours(out_indptr, out_targets, sources, flag)
        active = distinct(np.concatenate([active, also_active])).astype(np.int64)
        new_vals = np.empty(n)
        propagate = np.empty(n, bool)
        held = 0.0
        sizes: list[int] = []
        stop = "empty"
        while active.size:
            if active.size > max_fraction * n:
                stop = "too large"
                break
            if len(sizes) >= max_steps:
                stop = "max_iter"
                break
            sizes.append(int(active.size))
            active, _, held_step = cpu_frontier.frontier_step(
                graph.indptr, graph.indices, vals, inv_out, y, ys, b, self.alpha, active,
                acc, tau, new_vals, propagate, out_indptr, out_targets, flag)
            held += held_step
        return FrontierRun(sizes=sizes, stop=stop, held=held)
