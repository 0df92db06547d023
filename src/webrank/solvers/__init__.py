"""PageRank solvers, written once against :class:`~webrank.backends.PageRankOperator`.

A solver is a function ``solve(op, x0, *, tol, max_iter, criterion, **options)`` that
returns a :class:`SolverOutput`. Solvers touch arrays only through ``op.xp`` and the
operator's methods, so the same code runs on NumPy and CuPy. They are registered by
name in :data:`SOLVERS`; :func:`get_solver` validates a name before any work is done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SOLVERS", "SolverOutput", "get_solver", "register"]


@dataclass
class SolverOutput:
    """What a solver hands back to :func:`webrank.pagerank`."""

    x: Any  # backend array
    iterations: int
    matvecs: int
    residuals: np.ndarray
    converged: bool
    info: dict[str, Any] = field(default_factory=dict)
    #: ``x`` already sums to 1 as the solver defines it and is returned as is: a float
    #: sum taken again would add in a device-dependent order and move ulps (``fixed``
    #: divides by its exact integer total, so both devices return the same bits)
    normalized: bool = False


SolverFn = Callable[..., SolverOutput]
SOLVERS: dict[str, SolverFn] = {}


def register(name: str) -> Callable[[SolverFn], SolverFn]:
    """Decorator adding a solver to :data:`SOLVERS`."""

    def wrap(fn: SolverFn) -> SolverFn:
        SOLVERS[name] = fn
        return fn

    return wrap


def get_solver(name: str) -> SolverFn:
    """The solver called ``name``; ``ValueError`` listing the known ones otherwise."""
    _load_all()
    try:
        return SOLVERS[name]
    except KeyError:
        known = ", ".join(sorted(SOLVERS))
        raise ValueError(f"unknown method {name!r}; choose one of: {known}") from None


# modules whose import registers their solvers (one line per module)
_SOLVER_MODULES = (
    "webrank.solvers.power",
    "webrank.solvers.extrapolation",
    "webrank.solvers.hybrid",
    "webrank.solvers.krylov",
    "webrank.solvers.gauss_seidel",
    "webrank.solvers.adaptive",
    "webrank.solvers.fixed",
    "webrank.solvers.auto",
)


def _load_all() -> None:
    from importlib import import_module

    for module in _SOLVER_MODULES:
        import_module(module)
