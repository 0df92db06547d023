r"""Gauss-Seidel on the PageRank linear system (CPU only), as the GAP benchmark does.

Solves ``(I - alpha M) x = (1 - alpha) v`` (see :mod:`webrank.solvers.krylov`) by forward
sweeps over the in-link CSR, each node updated in place from the newest values of its
in-neighbours and the dangling mass (:mod:`webrank.kernels.cpu_gauss_seidel`). A sweep
reads every link once, the cost of one power step, and on web graphs removes the error
about twice as fast (Arasu, Novak, Tomkins & Tomlin 2002). A sweep is sequential (each
update reads the ones before it); ``blocks`` row blocks are swept at once, one per
thread, Gauss-Seidel inside a block and Jacobi between blocks, at a few more sweeps
(``blocks=1``: the classic sweep on one thread). Not on the GPU.

Stopping rule: the power method's, ``||b - A x|| < tol`` for the sweep vector ``x``
(the change one power step would make, see :mod:`webrank.solvers.krylov`), confirmed by
one explicit product (counted in ``matvecs``). The change ``||x_{k+1} - x_k||`` per sweep
is the cheap estimate: for a forward sweep ``b - A x_{k+1} = -U (x_{k+1} - x_k)`` with
``U`` the strictly upper part of ``A``, so in L1 the residual is at most ``alpha`` times
the change. A confirming product is made when the change, scaled by the residual per
unit change of the last confirmed check (1 before the first), drops below ``tol``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.solvers import SolverOutput, register
from webrank.solvers.krylov import RunRecord

#: row blocks swept at once by default: one, the classic sweep. Blocks pay where most
#: links stay inside their block and the order carries the flow (cnr-2000 at alpha 0.85:
#: 64 sweeps with 4 blocks against 60, 0.33 s against 0.52 s on 2 threads) and cost sweeps
#: elsewhere (web-NotreDame: 99 against 59, slower than one block); docs/solvers.md
DEFAULT_BLOCKS = 1


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
    return {"layout": layout, "scale": np.ones(n) if weighted else inv_out, "v": v, "d": d,
            "dangling": dangling, "self_weight": self_weight,
            "row_scale": 1.0 / (1.0 - op.alpha * (self_weight + d_own))}


@register("gauss-seidel")
def gauss_seidel(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
                 callback: Any = None, blocks: int = DEFAULT_BLOCKS) -> SolverOutput:
    """Forward Gauss-Seidel sweeps until the confirmed power residual is below ``tol``.

    Parameters
    ----------
    blocks : int, default 1
        Row blocks (of about equal links) swept at once, one per thread: Gauss-Seidel
        inside each, the other blocks' values from the sweep's start. 1 is the classic
        sequential sweep; more blocks use more threads at a few more sweeps. The answer
        depends on ``blocks``, not on the thread count.

    Returns
    -------
    SolverOutput
        ``iterations``: sweeps. ``matvecs``: sweeps (each reads every link once, one
        operator product's work) plus the confirming products. ``residuals[k]``: the
        change ``||x_{k+1} - x_k||`` (criterion norm) of sweep k+1; the last entry is the
        confirmed step residual of the returned vector. ``info["sweeps"]``,
        ``info["checks"]``.

    ``x`` is float64 whatever ``dtype`` (it is updated in place, and so is its gathered
    copy ``x / out-degree``, in float64 too); weighted edge values are rounded to ``dtype`` as
    the operator rounds them, so the confirming product checks the system swept.
    """
    from webrank.kernels.cpu_gauss_seidel import block_sweep

    if isinstance(blocks, bool) or not isinstance(blocks, int | np.integer) or blocks < 1:
        raise ValueError(f"blocks must be a positive integer, not {blocks!r}")
    run = RunRecord(op, tol, max_iter, criterion, callback)
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    inputs = _sweep_inputs(op, blocks)
    layout = inputs["layout"]
    partial = np.zeros((layout.bounds.size - 1, 2))
    x = np.array(op.to_host(x0), dtype=np.float64)
    u_cur, u_new = x * inputs["scale"], np.empty_like(x)
    dm = float(x[inputs["dangling"]].sum())
    ratio = 1.0  # confirmed residual per unit change, from the last check
    res = np.inf
    while run.iterations < max_iter:
        change, dm = block_sweep(alpha=op.alpha, dm=dm, criterion=criterion, x=x,
                                 u_cur=u_cur, u_new=u_new, partial=partial, **inputs)
        u_cur, u_new = u_new, u_cur
        op.matvecs += 1  # a sweep is one pass over the links
        run.record(change)
        if change * ratio < tol or run.iterations == max_iter:
            x, _r, res = run.check(x)
            dm = float(x[inputs["dangling"]].sum())
            np.multiply(x, inputs["scale"], out=u_cur)  # the check may have replaced x
            if res < tol:
                break
            run.failed_checks += run.iterations < max_iter
            if change > 0:
                ratio = res / change
    return run.finish(x, res, {"sweeps": run.iterations, "blocks": len(partial)})


gauss_seidel.devices = ("cpu",)  # sequential sweeps: see the module docstring
gauss_seidel.device_note = (": Gauss-Seidel sweeps are sequential; on the GPU use "
                             "method='gmres' or 'bicgstab'")
