"""PageRank solvers, written once against :class:`~webrank.backends.PageRankOperator`.

A solver is a function ``solve(op, x0, *, tol, max_iter, criterion, **options)`` that
returns a :class:`SolverOutput`. Solvers touch arrays only through ``op.xp`` and the
operator's methods, so the same code runs on NumPy and CuPy. They are registered by
name in :data:`SOLVERS`; :func:`get_solver` validates a name before any work is done.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["EPOCH_STEPS", "SOLVERS", "SPECS", "SolverOutput", "SolverSpec", "get_solver",
           "in_epochs", "register", "solver_spec"]

#: steps an operator is asked for at once: its per-step history (a residual row per
#: step, on the device for the GPU engines) is sized by them, never by ``max_iter``
EPOCH_STEPS = 1 << 16
#: ``tol=0`` ("until nothing changes"): the run stops when a step changes nothing or when
#: this many steps in a row bring no smaller residual (the rounding floor is reached)
STALL_STEPS = 50
#: the tolerance the operators are given for ``tol=0``: a residual below it is exactly 0
_UNCHANGED = float(np.nextafter(0.0, 1.0))


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


def in_epochs(steps: Callable[..., Any], x: Any, *, max_steps: int, callback: Any = None,
              **kwargs: Any) -> Any:
    """``steps(x, max_steps=..., callback=..., **kwargs)`` (an operator's
    ``power_steps`` or ``fixed_steps``) run in epochs of at most :data:`EPOCH_STEPS`
    steps, each from the last one's iterate, until it converges or ``max_steps`` are
    taken: one :class:`~webrank.backends.base.StepsResult` of them all (``callback``
    sees the step numbers of the whole run).

    ``tol=0`` runs until nothing changes: until a step leaves the iterate as it was
    (residual exactly 0), or :data:`STALL_STEPS` steps in a row bring no smaller
    residual (the rounding floor); either counts as converged."""
    until_unchanged = kwargs.get("tol") == 0
    if until_unchanged:  # Sgherzi's epsilon = 0: runs of STALL_STEPS, to a stall
        kwargs["tol"] = _UNCHANGED
    epoch = STALL_STEPS if until_unchanged else EPOCH_STEPS
    done = 0
    best = np.inf
    residuals: list[np.ndarray] = []
    while True:
        def numbered(step: int, residual: float, _offset: int = done) -> None:
            callback(_offset + step, residual)

        out = steps(x, max_steps=min(epoch, max_steps - done),
                    callback=None if callback is None else numbered, **kwargs)
        residuals.append(np.asarray(out.residuals))
        done += len(out.residuals)
        x = out.x
        if out.converged or done >= max_steps or len(out.residuals) == 0:
            break
        if until_unchanged:
            low = float(residuals[-1].min())
            if not low < best:  # no smaller residual in a whole run: stalled
                out.converged = True
                break
            best = low
    out.residuals = np.concatenate(residuals) if len(residuals) > 1 else residuals[0]
    return out


SolverFn = Callable[..., SolverOutput]
SOLVERS: dict[str, SolverFn] = {}


@dataclass(frozen=True)
class SolverSpec:
    """What :func:`webrank.pagerank` needs to know of a solver before running it."""

    name: str
    solve: SolverFn
    #: the devices it runs on ("cpu", "gpu")
    devices: tuple[str, ...] = ("cpu", "gpu")
    #: the operator capability it runs on (:attr:`PageRankOperator.capabilities`), if any
    requires: str | None = None
    #: what the refusal on another device adds (": Gauss-Seidel sweeps are sequential...")
    device_note: str = ""
    #: the operator kind it needs instead of the device's ("hybrid")
    operator: str | None = None


SPECS: dict[str, SolverSpec] = {}


def register(name: str, *, devices: tuple[str, ...] = ("cpu", "gpu"),
             requires: str | None = None, device_note: str = "",
             operator: str | None = None) -> Callable[[SolverFn], SolverFn]:
    """Decorator adding a solver to :data:`SOLVERS`, with its :class:`SolverSpec`."""

    def wrap(fn: SolverFn) -> SolverFn:
        SOLVERS[name] = fn
        SPECS[name] = SolverSpec(name, fn, tuple(devices), requires, device_note, operator)
        return fn

    return wrap


def solver_summary() -> str:
    """The registered solvers in one line, where each runs: "auto, power, ...,
    gauss-seidel (CPU), hybrid (GPU+CPU)" (the CLI's ``--method`` help)."""
    _load_all()
    auto = [SPECS["auto"]] if "auto" in SPECS else []
    words = []
    for spec in auto + [s for s in SPECS.values() if s.name != "auto"]:
        where = ("GPU+CPU" if spec.operator == "hybrid"
                 else "/".join(d.upper() for d in spec.devices))
        words.append(spec.name if where == "CPU/GPU" else f"{spec.name} ({where})")
    return ", ".join(words)


def solver_spec(name: str) -> SolverSpec:
    """The :class:`SolverSpec` of ``name`` (ValueError as :func:`get_solver`)."""
    get_solver(name)
    return SPECS[name]


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


@functools.cache
def _load_all() -> None:
    """Import the solver modules, once (a call costs a dictionary lookup after that)."""
    from importlib import import_module

    for module in _SOLVER_MODULES:
        import_module(module)
