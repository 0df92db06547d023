r"""Gauss-Seidel on the PageRank linear system (CPU only), as the GAP benchmark does.

Solves ``(I - alpha M) x = (1 - alpha) v`` (see :mod:`webrank.solvers.krylov`) by forward
sweeps over the in-link CSR, each node updated in place from the newest values of its
in-neighbours and the current dangling mass (:mod:`webrank.kernels.cpu_gauss_seidel`).
A sweep reads every link once, the cost of one power step, and on web graphs removes the
error about twice as fast (Arasu, Novak, Tomkins & Tomlin 2002). Sweeps are sequential
(each update reads the ones before it), so this runs on one thread, and not on the GPU.

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


def _sweep_inputs(op: Any) -> dict[str, Any]:
    """The kernel's arrays for the operator's graph and distributions (float64)."""
    # the kernel module imports Numba: not when the solver registry loads (webrank.solvers)
    from webrank.kernels.cpu_gauss_seidel import self_loop_weights

    g = op.graph
    tv = g.transition_values()
    # the operator's edge values (rounded to its dtype), so both solve the same system
    vals = np.zeros(0) if tv is None else tv.astype(op.dtype).astype(np.float64)
    dangling = g.dangling
    with np.errstate(divide="ignore"):
        inv_out = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, g.out_weight))
    n = g.n
    uniform = np.array([1.0 / n])
    v = uniform if op.uniform_v else op.to_host(op.teleport())
    d = uniform if op.uniform_d else op.to_host(op.dangling_dist())
    return {"indptr": g.indptr, "indices": g.indices, "vals": vals, "inv_out": inv_out,
            "v": np.ascontiguousarray(v, dtype=np.float64),
            "d": np.ascontiguousarray(d, dtype=np.float64), "dangling": dangling,
            "self_weight": self_loop_weights(g.indptr, g.indices, vals, inv_out)}


@register("gauss-seidel")
def gauss_seidel(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
                 callback: Any = None) -> SolverOutput:
    """Forward Gauss-Seidel sweeps until the confirmed power residual is below ``tol``.

    Returns
    -------
    SolverOutput
        ``iterations``: sweeps. ``matvecs``: sweeps (each reads every link once, one
        operator product's work) plus the confirming products. ``residuals[k]``: the
        change ``||x_{k+1} - x_k||`` (criterion norm) of sweep k+1; the last entry is the
        confirmed step residual of the returned vector. ``info["sweeps"]``,
        ``info["checks"]``.

    ``x`` is float64 whatever ``dtype`` (it is updated in place; there is no separately
    stored gathered vector to round); weighted edge values are rounded to ``dtype`` as
    the operator rounds them, so the confirming product checks the system swept.
    """
    from webrank.kernels.cpu_gauss_seidel import gauss_seidel_sweep

    run = RunRecord(op, tol, max_iter, criterion, callback)
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    inputs = _sweep_inputs(op)
    x = np.array(op.to_host(x0), dtype=np.float64)
    dm = float(x[inputs["dangling"]].sum())
    ratio = 1.0  # confirmed residual per unit change, from the last check
    res = np.inf
    while run.iterations < max_iter:
        change, dm = gauss_seidel_sweep(alpha=op.alpha, dm=dm, criterion=criterion, x=x,
                                        **inputs)
        op.matvecs += 1  # a sweep is one pass over the links
        run.record(change)
        if change * ratio < tol or run.iterations == max_iter:
            x, _r, res = run.check(x)
            dm = float(x[inputs["dangling"]].sum())
            if res < tol:
                break
            run.failed_checks += run.iterations < max_iter
            if change > 0:
                ratio = res / change
    return run.finish(x, res, {"sweeps": run.iterations})


gauss_seidel.devices = ("cpu",)  # sequential sweeps: see the module docstring
gauss_seidel.device_note = (": Gauss-Seidel sweeps are sequential; on the GPU use "
                             "method='gmres' or 'bicgstab'")
