"""Power iteration with periodic extrapolation (Praveen et al., Algorithms 3 and 4).

Kamvar, Haveliwala, Manning and Golub ("Extrapolation methods for accelerating PageRank
computations", WWW 2003) observe that after some power steps the error is dominated by a
few eigenvectors of the Google matrix; combining the last iterates cancels them:

* **Aitken** Δ² (Praveen et al.'s Algorithm 4), from three successive iterates, per node::

      x*_i = x_i^(k) - (x_i^(k) - x_i^(k-1))^2 / (x_i^(k) - 2 x_i^(k-1) + x_i^(k-2))

  It assumes the error is one eigenvector; a node whose last changes do not shrink
  geometrically, or whose extrapolated value would be negative, keeps ``x_i^(k)``.
* **Quadratic** extrapolation (Praveen et al.'s "future work"), from four iterates: assumes
  the error lies in the span of two eigenvectors; the coefficients come from a 2x2
  least-squares problem on the differences ``y_j = x^(k-3+j) - x^(k-3)``.

Either result is made a probability vector again (negative entries clipped, renormalised)
and the power method continues; extrapolation is applied every ``period`` steps. It
costs no matrix-vector product, only a few vector operations, so ``matvecs`` equals the
number of power steps. The stopping test is the power step's residual, as for ``power``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from webrank.solvers import SolverOutput, register

# Steps between extrapolations. Ours, from web-NotreDame at tol 1e-10 (matvecs for period
# 10 / 25 / 50): quadratic, alpha 0.85: 99 / 96 / 92 (power: 111); alpha 0.99: 1515 / 1424
# / 1407 (power: 1598). Guarded Aitken, alpha 0.99: 2168 / 1951 / 1656.
DEFAULT_PERIOD = 50


def aitken_extrapolate(op: Any, x2: Any, x1: Any, x0: Any) -> Any:
    """Aitken Δ² from iterates ``x^(k-2), x^(k-1), x^(k)`` (guarded, renormalised).

    Written with the per-node ratio ``r = (x^(k) - x^(k-1)) / (x^(k-1) - x^(k-2))``:
    ``x* = x^(k) + (x^(k) - x^(k-1)) r / (1 - r)``, which is the Δ² formula. A node is
    extrapolated only where ``0 < r < 0.999`` (its last two changes shrink with the same
    sign, the geometric convergence Aitken assumes) and ``x*`` is not negative; elsewhere
    it keeps ``x^(k)`` (the operator's :meth:`~webrank.backends.base.Operator.aitken`).
    Unguarded, repeated Δ² on web-NotreDame diverged (L1 error 0.07 after 20,000 steps
    at alpha 0.85, period 10).
    """
    return op.normalized(op.aitken(x2, x1, x0))


def quadratic_extrapolate(op: Any, x3: Any, x2: Any, x1: Any, x0: Any) -> Any:
    """Quadratic extrapolation from ``x^(k-3), ..., x^(k)`` (Kamvar et al. 2003, §5)."""
    y1, y2, y3 = (op.axpy(-1.0, x3, op.copy(x)) for x in (x2, x1, x0))
    g11, g12, g22 = op.dot(y1, y1), op.dot(y1, y2), op.dot(y2, y2)
    r1, r2 = -op.dot(y1, y3), -op.dot(y2, y3)
    det = g11 * g22 - g12 * g12
    if not np.isfinite(det) or abs(det) <= 1e-30 * max(g11 * g22, 1e-300):
        return x0  # the differences are (numerically) collinear: nothing to extrapolate
    gamma1 = (r1 * g22 - r2 * g12) / det
    gamma2 = (g11 * r2 - g12 * r1) / det
    gamma3 = 1.0
    beta0, beta1, beta2 = gamma1 + gamma2 + gamma3, gamma2 + gamma3, gamma3
    x = op.scale(beta0, op.copy(x2))
    op.axpy(beta1, x1, x)
    op.axpy(beta2, x0, x)
    x = op.clipped(x)
    return op.normalized(x) if op.total(x) > 0 else x0


def _extrapolated_power(
    op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str, period: int,
    depth: int, extrapolate: Callable[..., Any], callback: Any,
) -> SolverOutput:
    if int(period) < depth:
        raise ValueError(f"period must be an integer >= {depth}, not {period!r}")
    residuals: list[np.ndarray] = []
    x = x0
    done = 0
    extrapolations = 0

    def advance(x: Any, steps: int) -> tuple[Any, bool]:
        nonlocal done
        out = op.power_steps(x, tol=tol, max_steps=steps, criterion=criterion)
        residuals.append(out.residuals)
        done += len(out.residuals)
        if callback is not None and len(out.residuals):
            callback(done, float(out.residuals[-1]))
        return out.x, out.converged

    while done < max_iter:
        # power steps up to the extrapolation point, then the last `depth` iterates one by one
        bulk = min(period, max_iter - done) - (depth - 1)
        if bulk > 0:
            x, converged = advance(x, bulk)
            if converged:
                break
        history = [x]
        converged = False
        while len(history) < depth and done < max_iter:
            x, converged = advance(x, 1)
            history.append(x)
            if converged:
                break
        if converged or done >= max_iter:
            break
        x = extrapolate(op, *history)
        extrapolations += 1
    res = np.concatenate(residuals) if residuals else np.zeros(0)
    return SolverOutput(x=x, iterations=done, matvecs=done, residuals=res,
                        converged=bool(res.size and res[-1] < tol),
                        info={"extrapolations": extrapolations, "period": int(period)})


@register("aitken")
def aitken(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
           callback: Any = None, period: int = DEFAULT_PERIOD) -> SolverOutput:
    """Power method with Aitken Δ² extrapolation every ``period`` steps (default 50)."""
    return _extrapolated_power(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                               period=period, depth=3, extrapolate=aitken_extrapolate,
                               callback=callback)


@register("quadratic")
def quadratic(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
              callback: Any = None, period: int = DEFAULT_PERIOD) -> SolverOutput:
    """Power method with quadratic extrapolation every ``period`` steps (default 50)."""
    return _extrapolated_power(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                               period=period, depth=4, extrapolate=quadratic_extrapolate,
                               callback=callback)
