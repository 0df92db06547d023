"""The convergence criteria as every kernel takes them, CPU and CUDA.

A kernel gets a criterion as a small integer code and compares its residual with a
tolerance in its own units: the L2 residual is kept squared (the square root is taken
once, on the host, when a residual is reported), a fixed-point run's residuals are
counted in Q1.63 ulps. :class:`StopTest` holds one run's test and turns what the kernels
wrote back into residuals in the user's units; the backends of both devices import it
from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CRITERION_CODE", "L2", "LINF", "Q63_ULP", "StopTest", "kernel_criterion"]

#: the code of each convergence criterion in every kernel, CPU and CUDA
CRITERION_CODE = {"l1": 0, "l2": 1, "linf": 2}
#: the code whose residuals the kernels keep squared
L2 = CRITERION_CODE["l2"]
#: the per-node criterion: residuals combine by their maximum, not their sum
LINF = CRITERION_CODE["linf"]
#: one Q1.63 unit: the resolution of the fixed-point kernels, the unit of their residuals
Q63_ULP = 2.0 ** -63


def kernel_criterion(criterion: str, tol: float, unit: float = 1.0) -> tuple[int, float]:
    """``(code, tol_cmp)``: the kernels' code of ``criterion`` and the tolerance their
    residuals are compared with, in units of ``unit`` (a fixed-point run's ulp) and
    squared under L2 (the kernels keep the squared sum)."""
    scaled = tol / unit
    return CRITERION_CODE[criterion], scaled * scaled if criterion == "l2" else scaled


@dataclass(frozen=True)
class StopTest:
    """One run's stopping test as the kernels take it.

    Attributes
    ----------
    code : int
        The criterion's kernel code (:data:`CRITERION_CODE`).
    tol_cmp : float
        The tolerance in the kernels' units (squared under L2, in ``unit``).
    unit : float, default 1.0
        The value of one unit of the kernels' residuals (:data:`Q63_ULP` for the
        fixed-point kernels).
    """

    code: int
    tol_cmp: float
    unit: float = 1.0

    @classmethod
    def of(cls, criterion: str, tol: float, unit: float = 1.0) -> StopTest:
        """The test ``||x' - x|| < tol`` under ``criterion`` ("l1", "l2", "linf")."""
        code, tol_cmp = kernel_criterion(criterion, tol, unit)
        return cls(code, tol_cmp, unit)

    def residuals(self, kept: Any) -> Any:
        """Residuals as reported (float64, the user's units) from what the kernels kept
        (a number or a host array): the square root under L2, times ``unit``."""
        values = np.sqrt(kept) if self.code == L2 else kept
        return values * self.unit if self.unit != 1.0 else values

    def first_below(self, kept: np.ndarray, first: int,
                    callback: Callable[[int, float], Any] | None) -> int | None:
        """Scan a batch of step residuals as the kernels kept them, ``kept[s - first]``
        that of step ``s``: the first step whose residual is below the tolerance, or
        None. Tells ``callback`` (if given) that step, or the batch's last, and its
        residual in the user's units."""
        below = np.flatnonzero(kept < self.tol_cmp)
        stop = first + int(below[0]) if below.size else None
        if callback is not None:
            r = kept[below[0]] if below.size else kept[-1]
            callback(stop or first + kept.size - 1, float(self.residuals(r)))
        return stop
