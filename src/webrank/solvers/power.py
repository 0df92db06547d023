"""The power method (Praveen et al., Algorithm 2; Sgherzi §2).

    x_{k+1} = alpha P^T x_k + alpha (dangling . x_k) d + (1 - alpha) v

The Google matrix is never formed: the operator applies its sparse part and adds the
rank-one dangling and teleport terms. Each iteration is one fused pass of the backend
(:meth:`~webrank.backends.PageRankOperator.power_steps`). The iteration converges
linearly with rate alpha (the second eigenvalue of the Google matrix is at most alpha;
Haveliwala & Kamvar 2003), so about ``log(tol) / log(alpha)`` steps are needed.
"""

from __future__ import annotations

from typing import Any

from webrank.solvers import SolverOutput, in_epochs, register


@register("power")
def power(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
          callback: Any = None) -> SolverOutput:
    """Power iteration until ``||x_{k+1} - x_k|| < tol`` (absolute, under ``criterion``)."""
    if max_iter == 0:
        import numpy as np

        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    out = in_epochs(op.power_steps, x0, tol=tol, max_steps=max_iter, criterion=criterion,
                    callback=callback)
    k = len(out.residuals)
    return SolverOutput(x=out.x, iterations=k, matvecs=k, residuals=out.residuals,
                        converged=out.converged, normalized=out.normalized)
