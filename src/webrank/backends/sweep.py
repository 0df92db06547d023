"""Gauss-Seidel sweeps on the CPU: the ``sweep`` capability of
:class:`~webrank.backends.cpu.CPUOperator`, which :mod:`webrank.solvers.gauss_seidel`
drives.

The sweeps solve the non-dangling nodes' rows with the dangling nodes lumped into their
mass (no row reads a dangling node's value, only the dangling mass does, and that follows
exactly from the other rows); ``blocks`` row blocks are swept at once, one per thread
(:mod:`webrank.kernels.cpu_gauss_seidel`). :class:`Sweeps` holds one run's state: the
live rows' iterate, its gathered copy, the dangling mass, and the Anderson mixer of
:mod:`webrank.backends.anderson`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["MIX_CHUNKS", "LumpedSystem", "Sweeps"]

#: row chunks of the mixing passes (a constant, not the thread count: the same bits on
#: any thread count)
MIX_CHUNKS = 64


class LumpedSystem:
    """The system the sweeps solve: the non-dangling nodes' rows, with the dangling nodes
    lumped into their mass (see the module docstring); built once per graph, block count
    and (weighted graphs) dtype, and cached on the graph."""

    def __init__(self, op: Any, blocks: int) -> None:
        # the kernel module loads the compiled extension: not when the solver registry loads
        from webrank.kernels.cpu_gauss_seidel import swept_system

        g = op.graph
        n = g.n
        weighted = g.weights is not None
        dangling = g.dangling_mask
        with np.errstate(divide="ignore"):
            inv_out = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, g.out_weight))
        # the operator's edge values (rounded to its dtype), so both solve the same system
        vals = (g.transition_values().astype(op.dtype).astype(np.float64) if weighted
                else np.zeros(0))
        self.live = np.flatnonzero(~dangling)  # the rows swept, ascending
        self.lumped = np.flatnonzero(dangling)
        system = swept_system(g.indptr, g.indices, vals, self.live, inv_out[self.live],
                              blocks)
        self.layout = system.layout
        self.self_weight = system.self_weight
        # each live node's links into the dangling rows, valued as the sums read them
        self.mass_weight = system.mass_weight
        self.scale = np.ones(self.live.size) if weighted else inv_out[self.live]
        # what expand reads: the graph's CSR (not the graph: it holds this in its cache)
        self.n, self.indptr, self.indices, self.vals = n, g.indptr, g.indices, vals

    @classmethod
    def of(cls, op: Any, blocks: int) -> LumpedSystem:
        key = ("gauss-seidel system", int(blocks),
               str(np.dtype(op.dtype)) if op.graph.weights is not None else None)
        return op.graph.cached(key, lambda: cls(op, blocks))

    def inputs(self, op: Any) -> tuple[dict[str, Any], Lumped]:
        """The sweep kernel's arrays for the operator's alpha and distributions, and the
        distributions on the dangling rows."""
        n = self.n
        parts = []
        for uniform, dist in ((op.uniform_v, op.teleport), (op.uniform_d, op.dangling_dist)):
            if uniform:  # length 1: uniform 1/n, for the kernel and for expand
                parts.append((np.array([1.0 / n]), 1.0 / n, self.lumped.size / n))
            else:
                full = np.asarray(op.to_host(dist()), dtype=np.float64)
                rows = full[self.lumped]
                parts.append((np.ascontiguousarray(full[self.live]), rows, float(rows.sum())))
        (v, v_rows, v_total), (d, d_rows, d_total) = parts
        row_scale = (1.0 / (1.0 - op.alpha * self.self_weight)).astype(np.float32)
        kernel = {"layout": self.layout, "scale": self.scale, "v": v, "d": d,
                  "mass_weight": self.mass_weight, "row_scale": row_scale}
        return kernel, Lumped(v_rows, d_rows, v_total, d_total)

    def expand(self, alpha: float, lumped: Lumped, x: np.ndarray, u: np.ndarray,
               dm: float) -> np.ndarray:
        """The whole vector from the live rows' ``x`` (``u = x (.) scale``) and the dangling
        mass ``dm``: each dangling row solved from its in-links, one pass over them."""
        from webrank.kernels.cpu import row_range_sums

        full = np.empty(self.n)
        full[self.live] = x
        gathered = np.zeros(self.n)
        gathered[self.live] = u
        rows = self.lumped
        acc = row_range_sums(self.indptr[rows], self.indptr[rows + 1], self.indices,
                             self.vals, gathered, np.empty(rows.size))
        full[rows] = alpha * acc + (alpha * dm) * lumped.d + (1.0 - alpha) * lumped.v
        return full


class Lumped(NamedTuple):
    """The distributions on the dangling rows: per row (or 1/n, uniform) and in total."""

    v: np.ndarray | float
    d: np.ndarray | float
    v_total: float
    d_total: float


class Sweeps:
    """One Gauss-Seidel run's state on the CPU, from ``x0`` (host or operator array).

    Parameters
    ----------
    op : CPUOperator
        The operator (graph, alpha, distributions, dtype of the edge values).
    x0 : array
        The starting vector (all n nodes).
    blocks : int
        Row blocks swept at once.
    anderson : int
        Anderson history depth (0: no mixing).
    """

    def __init__(self, op: Any, x0: Any, blocks: int, anderson: int) -> None:
        from webrank.backends.anderson import AndersonMixer

        self.alpha = op.alpha
        self.system = LumpedSystem.of(op, max(1, min(blocks, op.n)))
        self.inputs, self.lumped = self.system.inputs(op)
        layout = self.inputs["layout"]
        self.partial = np.zeros((layout.bounds.size - 1, 2))
        self.weight = self.inputs["mass_weight"]
        self.x = np.array(op.to_host(x0), dtype=np.float64)[self.system.live]
        self.u_all = np.zeros(layout.buffer_size)  # u, the halo, the zero slot
        self.u = self.u_all[: self.x.size]
        np.multiply(self.x, self.inputs["scale"], out=self.u)
        # the mixer's sums in a fixed number of chunks: the same bits on any thread count
        self.mixer = (AndersonMixer(self.x.size, anderson, self.inputs["scale"], self.weight,
                                    MIX_CHUNKS) if anderson else None)
        self.dm = self._mass(float(self.weight @ self.u))

    @property
    def blocks(self) -> int:
        return len(self.partial)

    def _mass(self, links_into: float) -> float:
        # the dangling rows' mass m solves m = alpha (links_into + d(D) m) + (1 - alpha)
        # v(D) exactly, given the live rows' links into them
        a, lumped = self.alpha, self.lumped
        return (a * links_into + (1.0 - a) * lumped.v_total) / (1.0 - a * lumped.d_total)

    def sweep(self, criterion: str, record: bool = False) -> float:
        """One forward sweep in place; its change ``||x_{k+1} - x_k||`` under
        ``criterion``. ``record``: the sweep also goes to the mixer's history (the
        sweep before a :meth:`mix`)."""
        from webrank.kernels.cpu_gauss_seidel import block_sweep

        change, links_into = block_sweep(
            alpha=self.alpha, dm=self.dm, criterion=criterion, x=self.x, u=self.u_all,
            partial=self.partial, record=self.mixer.record() if record else None,
            **self.inputs)
        self.dm = self._mass(links_into)
        return change

    def mix(self) -> None:
        """Replace the iterate by the Anderson mixture of the recorded sweeps."""
        self.dm = self._mass(self.mixer.mix(self.x, self.u))

    def full(self) -> np.ndarray:
        """The whole vector: the live rows and the dangling rows solved from them."""
        return self.system.expand(self.alpha, self.lumped, self.x, self.u, self.dm)

    def restart(self, full: np.ndarray) -> None:
        """Continue from ``full`` (all n nodes; after a failed check)."""
        self.x[...] = full[self.system.live]
        np.multiply(self.x, self.inputs["scale"], out=self.u)
        self.dm = self._mass(float(self.weight @ self.u))
