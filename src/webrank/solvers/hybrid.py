"""Kumar et al.'s hybrid CPU+GPU power method (``method="hybrid"``, GPU machines only).

The iteration is the power method's; what differs is where the sums are done: the GPU
sums the first ``gpu_links`` in-links of every page, the CPU the rest of the long rows,
concurrently, and the partial sums are added each step
(:class:`~webrank.backends.hybrid.HybridOperator`). The operator's ``info`` reports the
split: rows and share of the edges left to the CPU, the CPU's seconds and the time spent
waiting for the GPU's vector.
"""

from __future__ import annotations

from typing import Any

from webrank.solvers import SolverOutput, register
from webrank.solvers.power import power


@register("hybrid", devices=("gpu",), operator="hybrid")
def hybrid(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
           callback: Any = None) -> SolverOutput:
    """Power iteration with Kumar et al.'s CPU+GPU split of every row's in-links.

    Engine option ``gpu_links`` (N, default 1024): in-links per row summed on the GPU.
    """
    return power(op, x0, tol=tol, max_iter=max_iter, criterion=criterion, callback=callback)

