r"""Gauss-Seidel on the PageRank linear system (CPU only), accelerated by Anderson mixing.

Solves ``(I - alpha M) x = (1 - alpha) v`` (see :mod:`webrank.solvers.krylov`) by forward
sweeps over the in-link CSR, each node updated in place from the newest values of its
in-neighbours and the dangling mass (the operator's "sweep" capability,
:mod:`webrank.backends.sweep`). A sweep reads every link once, the cost of one power
step, and on web graphs removes the error about twice as fast (Arasu, Novak, Tomkins &
Tomlin 2002). A sweep is sequential (each update reads the ones before it); ``blocks``
row blocks are swept at once, one per thread, Gauss-Seidel inside a block and Jacobi
between blocks, at a few more sweeps.

The dangling rows are not swept: no row reads a dangling node's value, only the
dangling mass does, and that follows exactly from the other rows
(:mod:`webrank.backends.sweep`); they are solved in one pass at each check.

Every ``anderson_every`` sweeps the iterate is replaced by the Anderson mixture of the
last ``anderson + 1`` recorded sweeps, the sweep before each mixing being recorded
(:mod:`webrank.backends.anderson`): the sweeps are the fixed-point map, the mixing its
extrapolation. On the shared web graphs at tol 1e-10 (2 blocks) this cuts the sweeps
from 62 to 45 (cnr-2000), 88 to 38 (web-NotreDame) and 102 to 44 (soc-Epinions1) at
alpha 0.85, and 843 to 235, 1299 to 167, 1664 to 185 at 0.99 — fewer passes than GMRES
at a fraction of its vector work (``benchmarks/results/cpu/cpu_2core/cpu_methods.json``;
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


def _count(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        kind = "a positive" if low == 1 else "a non-negative"
        raise ValueError(f"{name} must be {kind} integer, not {value!r}")
    return int(value)


@register("gauss-seidel", devices=("cpu",), requires="sweep",
          device_note=(": Gauss-Seidel sweeps are sequential; on the GPU use "
                       "method='gmres' or 'bicgstab'"))
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
        CPU kernels' thread count (1 is the classic sequential sweep). The answer depends on
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
    blocks = op.threads if blocks is None else _count("blocks", blocks, 1)
    anderson = _count("anderson", anderson, 0)
    anderson_every = _count("anderson_every", anderson_every, 1)
    run = RunRecord(op, tol, max_iter, criterion, callback)
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    sweeps = op.sweeps(x0, blocks=blocks, anderson=anderson)
    # confirmed residual per unit change: from the last check; before it, the bound
    # alpha in L1 (see the module docstring)
    ratio = op.alpha if criterion == "l1" else 1.0
    res = np.inf
    while True:
        # the last sweep before a mixing writes its output to the mixer's history
        mixing = anderson > 0 and (run.iterations + 1) % anderson_every == 0
        change = sweeps.sweep(criterion, record=mixing)
        op.matvecs += 1  # a sweep is one pass over the links
        run.record(change)
        if change * ratio < tol or run.iterations == max_iter:
            checked, _r, res = run.check(sweeps.full())
            if res < tol or run.iterations == max_iter:
                break
            sweeps.restart(checked)  # from the clipped, checked iterate
            run.failed_checks += 1
            if change > 0:
                ratio = res / change
        if mixing:
            sweeps.mix()
    info = {"sweeps": run.iterations, "blocks": sweeps.blocks, "anderson": anderson,
            "anderson_every": anderson_every}
    if sweeps.mixer is not None:
        info.update(mixes=sweeps.mixer.mixes, restarts=sweeps.mixer.restarts)
    return run.finish(checked, res, info)
