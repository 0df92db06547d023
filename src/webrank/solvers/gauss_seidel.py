r"""Gauss-Seidel on the PageRank linear system (CPU only), accelerated by Anderson mixing.

Solves ``(I - alpha M) x = (1 - alpha) v`` (see :mod:`webrank.solvers.krylov`) by forward
sweeps over the in-link CSR, each node updated in place from the newest values of its
in-neighbours and the dangling mass (:mod:`webrank.kernels.cpu_gauss_seidel`). A sweep
reads every link once, the cost of one power step, and on web graphs removes the error
about twice as fast (Arasu, Novak, Tomkins & Tomlin 2002). A sweep is sequential (each
update reads the ones before it); ``blocks`` row blocks are swept at once, one per
thread, Gauss-Seidel inside a block and Jacobi between blocks, at a few more sweeps.

Every ``anderson_every`` sweeps the iterate is replaced by the Anderson mixture of the
last ``anderson + 1`` (:mod:`webrank.solvers.anderson`): the sweeps are the fixed-point
map, the mixing its extrapolation. On the shared web graphs at tol 1e-10 (2 blocks) this
cuts the sweeps from 65 to 45 (cnr-2000), 88 to 42 (web-NotreDame) and 102 to 46
(soc-Epinions1) at alpha 0.85, and 837 to 248, 1287 to 168, 1646 to 189 at 0.99 —
fewer passes than GMRES at a fraction of its vector work
(``benchmarks/results/cpu_methods.json``; docs/solvers.md).

Stopping rule: the power method's, ``||b - A x|| < tol`` for the sweep vector ``x``
(the change one power step would make, see :mod:`webrank.solvers.krylov`), confirmed by
one explicit product (counted in ``matvecs``). The change ``||x_{k+1} - x_k||`` per sweep
is the cheap estimate: for a forward sweep ``b - A x_{k+1} = -U (x_{k+1} - x_k)`` with
``U`` the strictly upper part of ``A``, so in L1 the residual is at most ``alpha`` times
the change (each column of ``M`` sums to 1). A confirming product is made when the
change, scaled by the residual per unit change of the last confirmed check (before the
first: ``alpha`` in L1, 1 in the other norms), drops below ``tol``. The
vector returned is always a sweep's output, never a mixture, so the confirmed residual
is the one of the vector the user gets.
"""

from __future__ import annotations

from typing import Any

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


def _sweep_inputs(op: Any, blocks: int) -> dict[str, Any]:
    """The kernel's arrays for the operator's graph and distributions (float64); the
    block layout and the self-loop weights cached on the graph."""
    # the kernel module imports Numba: not when the solver registry loads (webrank.solvers)
    from webrank.kernels.cpu_gauss_seidel import block_layout, self_loop_weights

    g = op.graph
    weighted = g.weights is not None
    dangling = g.dangling
    with np.errstate(divide="ignore"):
        inv_out = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, g.out_weight))
    key = ("gauss-seidel layout", int(blocks), str(np.dtype(op.dtype)) if weighted else None)
    if key not in g._cache:
        # the operator's edge values (rounded to its dtype), so both solve the same system
        vals = (g.transition_values().astype(op.dtype).astype(np.float64) if weighted
                else np.zeros(0))
        g._cache[key] = (block_layout(g.indptr, g.indices, vals, blocks),
                         self_loop_weights(g.indptr, g.indices, vals, inv_out))
    layout, self_weight = g._cache[key]
    n = g.n
    uniform = np.array([1.0 / n])
    v = np.ascontiguousarray(uniform if op.uniform_v else op.to_host(op.teleport()),
                             dtype=np.float64)
    d = np.ascontiguousarray(uniform if op.uniform_d else op.to_host(op.dangling_dist()),
                             dtype=np.float64)
    d_own = np.where(dangling, d if d.size > 1 else d[0], 0.0)
    row_scale = (1.0 / (1.0 - op.alpha * (self_weight + d_own))).astype(np.float32)
    return {"layout": layout, "scale": np.ones(n) if weighted else inv_out, "v": v, "d": d,
            "dangling": dangling, "row_scale": row_scale}


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
    inputs = _sweep_inputs(op, min(blocks, op.n))
    layout = inputs["layout"]
    partial = np.zeros((layout.bounds.size - 1, 2))
    dangling = inputs["dangling"]
    x = np.array(op.to_host(x0), dtype=np.float64)
    u_all = np.zeros(layout.buffer_size)  # u, the halo, the zero slot (block_sweep)
    u = u_all[: x.size]
    np.multiply(x, inputs["scale"], out=u)
    # the mixer's sums in a fixed number of chunks: the same bits on any thread count
    mixer = (AndersonMixer(x.size, anderson, inputs["scale"], dangling, MIX_CHUNKS)
             if anderson else None)
    dm = float(x[dangling].sum())
    # confirmed residual per unit change: from the last check; before it, the bound
    # alpha in L1 (see the module docstring)
    ratio = op.alpha if criterion == "l1" else 1.0
    res = np.inf
    while run.iterations < max_iter:
        # the last sweep before a mixing writes its output to the mixer's history
        mixing = mixer is not None and (run.iterations + 1) % anderson_every == 0
        change, dm = block_sweep(alpha=op.alpha, dm=dm, criterion=criterion, x=x, u=u_all,
                                 partial=partial, record=mixer.record() if mixing else None,
                                 **inputs)
        op.matvecs += 1  # a sweep is one pass over the links
        run.record(change)
        if change * ratio < tol or run.iterations == max_iter:
            checked, _r, res = run.check(x)
            x[...] = checked  # (clipped)
            np.multiply(x, inputs["scale"], out=u)
            dm = float(x[dangling].sum())
            if res < tol:
                break
            run.failed_checks += run.iterations < max_iter
            if change > 0:
                ratio = res / change
        if mixing:
            dm = mixer.mix(x, u)
    info = {"sweeps": run.iterations, "blocks": len(partial), "anderson": anderson,
            "anderson_every": anderson_every}
    if mixer is not None:
        info.update(mixes=mixer.mixes, restarts=mixer.restarts)
    return run.finish(x, res, info)


gauss_seidel.devices = ("cpu",)  # sequential sweeps: see the module docstring
gauss_seidel.device_note = (": Gauss-Seidel sweeps are sequential; on the GPU use "
                             "method='gmres' or 'bicgstab'")
