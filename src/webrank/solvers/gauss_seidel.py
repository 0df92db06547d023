r"""Gauss-Seidel on the PageRank linear system (CPU only), accelerated by Anderson mixing.

Solves ``(I - alpha M) x = (1 - alpha) v`` (see :mod:`webrank.solvers.krylov`) by forward
sweeps over the in-link CSR, each node updated in place from the newest values of its
in-neighbours and the dangling mass (:mod:`webrank.kernels.cpu_gauss_seidel`). A sweep
reads every link once, the cost of one power step, and on web graphs removes the error
about twice as fast (Arasu, Novak, Tomkins & Tomlin 2002). A sweep is sequential (each
update reads the ones before it); ``blocks`` row blocks are swept at once, one per
thread, Gauss-Seidel inside a block and Jacobi between blocks, at a few more sweeps.

The dangling rows are not swept: no row reads a dangling node's value, only the
dangling mass does, and that follows exactly from the other rows
(:mod:`webrank.kernels.cpu_gauss_seidel`); they are solved in one pass at each check.

Every ``anderson_every`` sweeps the iterate is replaced by the Anderson mixture of the
last ``anderson + 1`` recorded sweeps, the sweep before each mixing being recorded
(:mod:`webrank.solvers.anderson`): the sweeps are the fixed-point map, the mixing its
extrapolation. On the shared web graphs at tol 1e-10 (2 blocks) this cuts the sweeps
from 62 to 45 (cnr-2000), 88 to 38 (web-NotreDame) and 102 to 44 (soc-Epinions1) at
alpha 0.85, and 843 to 235, 1299 to 167, 1664 to 185 at 0.99 — fewer passes than GMRES
at a fraction of its vector work (``benchmarks/results/cpu_methods.json``;
docs/solvers.md).

Stopping rule: the power method's, ``||b - A x|| < tol`` for the sweep vector ``x``
(the change one power step would make, see :mod:`webrank.solvers.krylov`), confirmed by
one explicit product (counted in ``matvecs``). The change ``||x_{k+1} - x_k||`` per sweep
is the cheap estimate: for a forward sweep ``b - A x_{k+1} = -U (x_{k+1} - x_k)`` with
``U`` the strictly upper part of ``A``, so in L1 the residual is at most ``alpha`` times
the change (each column of ``M`` sums to 1). A confirming product is made when the
change, scaled by the residual per unit change of the last confirmed check (before the
first: ``alpha`` in L1, 1 in the other norms), drops below ``tol``. The vector
returned is always a sweep's output (its dangling rows solved), never a mixture, and
the one the confirming product checked.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from webrank.solvers import SolverOutput, register
from webrank.solvers.krylov import RunRecord

#: Anderson history depth (iterates combined: one more) and sweeps between mixings.
#: Measured on the three shared graphs (alpha 0.85-0.99, 1-16 blocks): depth 5 every 2
#: sweeps was within a few sweeps of every deeper or more frequent mixing, at a third of
#: their vector work; docs/solvers.md.
DEFAULT_ANDERSON = 5
DEFAULT_ANDERSON_EVERY = 2
#: row chunks of the mixing passes (a constant, not the thread count: see below)
MIX_CHUNKS = 64


class _LumpedSystem:
    """The system the sweeps solve: the non-dangling nodes' rows, with the dangling nodes
    lumped into their mass (see the module docstring); built once per graph, block count
    and (weighted graphs) dtype, and cached on the graph."""

    def __init__(self, op: Any, blocks: int) -> None:
        # the kernel module imports Numba: not when the solver registry loads
        from webrank.kernels.cpu_gauss_seidel import block_layout, self_loop_weights

        g = op.graph
        n = g.n
        weighted = g.weights is not None
        dangling = g.dangling
        with np.errstate(divide="ignore"):
            inv_out = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, g.out_weight))
        # the operator's edge values (rounded to its dtype), so both solve the same system
        vals = (g.transition_values().astype(op.dtype).astype(np.float64) if weighted
                else np.zeros(0))
        self.live = np.flatnonzero(~dangling)  # the rows swept, ascending
        self.lumped = np.flatnonzero(dangling)
        compact = np.full(n, -1, dtype=np.int64)
        compact[self.live] = np.arange(self.live.size)
        link_row = np.repeat(np.arange(n), np.diff(g.indptr))
        # compact ids keep the order; a source is dangling only through zero-weight
        # links, which carry nothing: dropped
        sources = compact[g.indices]
        counted = sources >= 0
        kept = counted & ~dangling[link_row]  # the live rows' links, in CSR order
        indptr = np.zeros(self.live.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(compact[link_row[kept]], minlength=self.live.size),
                  out=indptr[1:])
        indices = sources[kept].astype(g.indices.dtype)
        live_vals = vals[kept] if weighted else vals
        self.layout = block_layout(indptr, indices, live_vals, blocks)
        self.self_weight = self_loop_weights(indptr, indices, live_vals, inv_out[self.live])
        # each live node's links into the dangling rows, valued as the sums read them
        into = counted & dangling[link_row]
        self.mass_weight = np.bincount(sources[into], weights=vals[into] if weighted
                                       else None, minlength=self.live.size).astype(float)
        self.scale = np.ones(self.live.size) if weighted else inv_out[self.live]
        # what expand reads: the graph's CSR (not the graph: it holds this in its cache)
        self.n, self.indptr, self.indices, self.vals = n, g.indptr, g.indices, vals

    @classmethod
    def of(cls, op: Any, blocks: int) -> _LumpedSystem:
        key = ("gauss-seidel system", int(blocks),
               str(np.dtype(op.dtype)) if op.graph.weights is not None else None)
        cache = op.graph._cache
        if key not in cache:
            cache[key] = cls(op, blocks)
        return cache[key]

    def inputs(self, op: Any) -> tuple[dict[str, Any], _Lumped]:
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
        return kernel, _Lumped(v_rows, d_rows, v_total, d_total)

    def expand(self, alpha: float, lumped: _Lumped, x: np.ndarray, u: np.ndarray,
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


class _Lumped(NamedTuple):
    """The distributions on the dangling rows: per row (or 1/n, uniform) and in total."""

    v: np.ndarray | float
    d: np.ndarray | float
    v_total: float
    d_total: float


def _count(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        kind = "a positive" if low == 1 else "a non-negative"
        raise ValueError(f"{name} must be {kind} integer, not {value!r}")
    return int(value)


@register("gauss-seidel")
def gauss_seidel(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
                 callback: Any = None, blocks: int | None = None,
                 anderson: int = DEFAULT_ANDERSON,
                 anderson_every: int = DEFAULT_ANDERSON_EVERY) -> SolverOutput:
    """Forward Gauss-Seidel sweeps, Anderson-mixed, until the confirmed power residual is
    below ``tol``.

    Parameters
    ----------
    blocks : int, optional
        Row blocks (of about equal links) swept at once, one per thread: Gauss-Seidel
        inside each, the other blocks' values from the sweep's start. Default: the
        Numba thread count (1 is the classic sequential sweep). The answer depends on
        ``blocks``, not on the thread count: give it to get the same bits on machines
        with different thread counts.
    anderson : int, default 5
        Anderson history depth (``anderson + 1`` iterates mixed); 0 turns mixing off
        (plain sweeps).
    anderson_every : int, default 2
        Sweeps between two mixings.

    Returns
    -------
    SolverOutput
        ``iterations``: sweeps. ``matvecs``: sweeps (each reads every link once, one
        operator product's work) plus the confirming products. ``residuals[k]``: the
        change ``||x_{k+1} - x_k||`` (criterion norm) of sweep k+1; the last entry is the
        confirmed step residual of the returned vector. ``info``: ``sweeps``,
        ``blocks``, ``anderson``, ``anderson_every``, ``mixes`` and ``restarts`` (mixings
        refused by the safeguards), ``checks``.

    ``x`` is float64 whatever ``dtype`` (it is updated in place, and so is its gathered
    copy ``x / out-degree``, in float64 too); weighted edge values are rounded to ``dtype`` as
    the operator rounds them, so the confirming product checks the system swept.
    """
    from webrank.kernels.cpu import num_threads
    from webrank.kernels.cpu_gauss_seidel import block_sweep
    from webrank.solvers.anderson import AndersonMixer

    blocks = num_threads() if blocks is None else _count("blocks", blocks, 1)
    anderson = _count("anderson", anderson, 0)
    anderson_every = _count("anderson_every", anderson_every, 1)
    run = RunRecord(op, tol, max_iter, criterion, callback)
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    system = _LumpedSystem.of(op, max(1, min(blocks, op.n)))
    inputs, lumped = system.inputs(op)
    alpha = op.alpha

    def lumped_mass(links_into: float) -> float:
        # the dangling rows' mass m solves m = alpha (links_into + d(D) m) + (1 - alpha) v(D)
        # exactly, given the live rows' links into them
        return ((alpha * links_into + (1.0 - alpha) * lumped.v_total)
                / (1.0 - alpha * lumped.d_total))

    layout = inputs["layout"]
    partial = np.zeros((layout.bounds.size - 1, 2))
    weight = inputs["mass_weight"]
    x = np.array(op.to_host(x0), dtype=np.float64)[system.live]
    u_all = np.zeros(layout.buffer_size)  # u, the halo, the zero slot (block_sweep)
    u = u_all[: x.size]
    np.multiply(x, inputs["scale"], out=u)
    # the mixer's sums in a fixed number of chunks: the same bits on any thread count
    mixer = (AndersonMixer(x.size, anderson, inputs["scale"], weight, MIX_CHUNKS)
             if anderson else None)
    dm = lumped_mass(float(weight @ u))
    # confirmed residual per unit change: from the last check; before it, the bound
    # alpha in L1 (see the module docstring)
    ratio = alpha if criterion == "l1" else 1.0
    res = np.inf
    while True:
        # the last sweep before a mixing writes its output to the mixer's history
        mixing = mixer is not None and (run.iterations + 1) % anderson_every == 0
        change, links_into = block_sweep(
            alpha=alpha, dm=dm, criterion=criterion, x=x, u=u_all, partial=partial,
            record=mixer.record() if mixing else None, **inputs)
        dm = lumped_mass(links_into)
        op.matvecs += 1  # a sweep is one pass over the links
        run.record(change)
        if change * ratio < tol or run.iterations == max_iter:
            checked, _r, res = run.check(system.expand(alpha, lumped, x, u, dm))
            if res < tol or run.iterations == max_iter:
                break
            x[...] = checked[system.live]  # (clipped)
            np.multiply(x, inputs["scale"], out=u)
            dm = lumped_mass(float(weight @ u))
            run.failed_checks += 1
            if change > 0:
                ratio = res / change
        if mixing:
            dm = lumped_mass(mixer.mix(x, u))
    info = {"sweeps": run.iterations, "blocks": len(partial), "anderson": anderson,
            "anderson_every": anderson_every}
    if mixer is not None:
        info.update(mixes=mixer.mixes, restarts=mixer.restarts)
    return run.finish(checked, res, info)


gauss_seidel.devices = ("cpu",)  # sequential sweeps: see the module docstring
gauss_seidel.device_note = (": Gauss-Seidel sweeps are sequential; on the GPU use "
                             "method='gmres' or 'bicgstab'")
