"""Adaptive power method: stop recomputing nodes that have converged.

Kamvar, Haveliwala & Golub ("Adaptive methods for the computation of PageRank", Linear
Algebra and its Applications 386, 2004) observe that most pages of a web graph converge
in a few iterations while a few need many; Sgherzi skips converged nodes with a bitmask
and a branch per node. Here:

* **Freezing.** A node whose change ``|x'_i - x_i|`` stayed below ``theta`` for
  ``patience`` consecutive steps is frozen: it keeps its value and is no longer
  recomputed. ``theta`` is tied to ``tol`` so that the frozen nodes together cannot
  account for more than ``freeze_factor * tol`` of one step's residual::

      l1: theta = freeze_factor * tol / n     l2: ... * tol / sqrt(n)     linf: ... * tol

* **Compaction.** The rows still active are an index list (``np.flatnonzero``, host),
  rebuilt every ``compact_every`` steps; a step gathers the in-links of those rows only
  (CPU: a compiled loop over the list; GPU: lanes take rows from the list), so skipped
  work is not even visited. The dangling mass and the teleport term still come from the
  whole vector (the frozen part of the dangling mass is constant).
* **Verification.** When the residual over the active rows drops below ``tol`` (or every
  node is frozen), plain power steps over all nodes follow until *their* residual is
  below ``tol``. The residual reported last is therefore a true power-step residual,
  and the answer obeys the power method's bound: ``||x - x*||_1 <= alpha / (1 - alpha)
  * residual`` for the L1 criterion (``G`` contracts by alpha in L1), at most twice that
  after :func:`webrank.pagerank` rescales the scores to sum 1. Freezing only costs
  extra verification steps when ``theta`` is too loose; it cannot cost accuracy.

``info`` reports the work: ``rows_active`` (per step), ``edges_gathered`` and
``matvec_equivalents`` (edges gathered / edges of the graph), ``edge_gathers_saved``
(against a full step each iteration), the residual of the first full step
(``unfreeze_residual``: what freezing cost) and ``error_bound_l1``.

Needs ``dtype="float64"``: ``theta`` is ``tol / n`` per node (3e-16 at tol 1e-10 on a
300K-node graph), below the rounding of a float32 gathered vector.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.solvers import SolverOutput, in_epochs, register

__all__ = ["adaptive", "freeze_threshold"]

# Defaults, from web-NotreDame and cnr-2000 at tol 1e-10 (matvec equivalents; power: 111 /
# 116): freeze_factor 0.1: 111.8 / 113.2; 0.3: 110.9 / 112.2; 1: 110.8 / 111.0; 3: 110.9 /
# 112.1 (looser freezing saves gathers but needs more verification steps); patience 1 / 3
# and compact_every 2 / 8 are within +-1 of these. Stopping the adaptive phase at tol / 2 or
# tol / 5 did not help.
DEFAULT_FREEZE_FACTOR = 1.0
DEFAULT_PATIENCE = 2
DEFAULT_COMPACT_EVERY = 4


def freeze_threshold(tol: float, n: int, criterion: str, freeze_factor: float) -> float:
    """Per-node change below which a node counts as calm: ``freeze_factor`` times the
    share of ``tol`` one node has under ``criterion`` (n nodes)."""
    share = {"l1": tol / n, "l2": tol / np.sqrt(n), "linf": tol}[criterion]
    return float(freeze_factor) * share


def _l1_bound(residual: float, n: int, criterion: str, alpha: float) -> float:
    """Bound on ``||x - x*||_1`` from a power step's residual under ``criterion``."""
    r1 = residual * {"l1": 1.0, "l2": np.sqrt(n), "linf": float(n)}[criterion]
    return alpha / (1.0 - alpha) * r1


@register("adaptive", requires="adaptive")
def adaptive(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
             callback: Any = None, freeze_factor: float = DEFAULT_FREEZE_FACTOR,
             patience: int = DEFAULT_PATIENCE,
             compact_every: int = DEFAULT_COMPACT_EVERY) -> SolverOutput:
    """Power iteration that freezes converged nodes, then verifies with full steps.

    Parameters
    ----------
    freeze_factor : float, default 1.0
        Scale of the per-node freeze threshold ``theta`` relative to ``tol`` (see the
        module docstring); smaller freezes later and verifies in fewer steps.
    patience : int, default 2
        Consecutive steps a node's change must stay below ``theta`` before it freezes.
    compact_every : int, default 4
        Steps between two rebuilds of the active-row list.
    """
    if not (isinstance(freeze_factor, int | float) and 0 < float(freeze_factor) < np.inf):
        raise ValueError(f"freeze_factor must be a positive number, not {freeze_factor!r}")
    for name, value, top in (("patience", patience, 255), ("compact_every", compact_every,
                                                           None)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1 \
                or (top is not None and value > top):
            bound = f"in 1..{top}" if top else ">= 1"
            raise ValueError(f"{name} must be an integer {bound}, not {value!r}")
    if op.dtype != np.float64:
        raise ValueError("method='adaptive' needs dtype='float64': its per-node freeze "
                         "threshold (~tol/n) is below float32 rounding")
    xp = op.xp
    n, m = op.n, op.graph.num_edges
    theta = freeze_threshold(tol, n, criterion, freeze_factor)
    info: dict[str, Any] = {"freeze_threshold": theta, "freeze_factor": float(freeze_factor),
                            "patience": int(patience), "compact_every": int(compact_every)}
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False, info=info)
    # the rows still active are chosen on the host (n bytes of `calm` read per
    # compaction): CuPy's masks and scans would compile kernels on a first call
    in_degree = np.diff(op.to_host(op.graph.indptr)).astype(np.int64)
    calm = xp.zeros(n, dtype=np.uint8)
    rows = np.arange(n, dtype=np.int64)
    active_edges = m
    x = x0
    residuals: list[np.ndarray] = []
    rows_active: list[int] = []
    gathered = 0
    done = 0
    budget = max_iter - 1  # keep one step for the verification
    while done < budget and rows.size:
        out = op.adaptive_steps(x, rows, calm, steps=min(compact_every, budget - done),
                                theta=theta, tol=tol, criterion=criterion)
        x = out.x
        k = len(out.residuals)
        residuals.append(out.residuals)
        rows_active += [int(rows.size)] * k
        gathered += k * active_edges
        done += k
        if callback is not None:
            callback(done, float(out.residuals[-1]))
        if out.converged:
            break
        rows = np.flatnonzero(op.to_host(calm) < patience)
        active_edges = int(in_degree[rows].sum())
    info["adaptive_steps"] = done
    info["frozen_at_end"] = int(n - rows.size)

    def verify_callback(step: int, residual: float) -> None:
        if callback is not None:
            callback(done + step, residual)

    full = in_epochs(op.power_steps, x, tol=tol, max_steps=max_iter - done,
                     criterion=criterion, callback=verify_callback)
    k = len(full.residuals)
    residuals.append(full.residuals)
    rows_active += [n] * k
    gathered += k * m
    steps = done + k
    res = np.concatenate(residuals)
    info.update({
        "verify_steps": k,
        "unfreeze_residual": float(full.residuals[0]) if k else None,
        "rows_active": rows_active,
        "edges_gathered": int(gathered),
        "matvec_equivalents": gathered / m if m else float(steps),
        "edge_gathers_saved": 1.0 - gathered / (steps * m) if m else 0.0,
        "error_bound_l1": _l1_bound(float(res[-1]), n, criterion, op.alpha),
    })
    return SolverOutput(x=full.x, iterations=steps, matvecs=steps, residuals=res,
                        converged=full.converged, info=info)
