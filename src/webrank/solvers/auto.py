"""``method="auto"`` (the default): the solver expected to be fastest here.

The rule, from measurements at tol 1e-10 on the real graphs (the numbers, machines and
commands are in docs/solvers.md and docs/benchmarks.md):

* **GPU** — ``power``. The fused power step replayed as a CUDA graph costs less than one
  Krylov iteration's host round trip, so power is the fastest in wall time at every
  alpha although GMRES needs several times fewer products; every other method is slower
  per step too.
* **CPU, graphs on the parallel compiled kernels** (from
  :data:`~webrank.kernels.cpu.SMALL_GRAPH_EDGES` links) — ``gauss-seidel``: one block
  per thread, the dangling rows lumped, Anderson-mixed every two sweeps. It was the
  fastest method, or within 7% of it, at alpha 0.85 and 0.99 on cnr-2000,
  web-NotreDame and soc-Epinions1, on 2, 4 and 16 cores.
* **CPU, smaller graphs** (the compiled step on one thread) — ``gmres`` from
  ``alpha >= KRYLOV_MIN_ALPHA``, else ``power``.

``info`` says what was picked and why; ``result.method`` is the method that ran.
"""

from __future__ import annotations

from typing import Any

from webrank.solvers import SolverOutput, get_solver, register

KRYLOV_MIN_ALPHA = 0.98


def choose_method(op: Any) -> tuple[str, str]:
    """(method, reason) for this operator's device, graph size and alpha."""
    if op.name != "cpu":
        return "power", "GPU: the fused power step in a CUDA graph is fastest"
    threads = op.threads
    if op.kernel != "native":  # a small graph on the serial step
        if op.alpha >= KRYLOV_MIN_ALPHA:
            return "gmres", (f"small graph on the serial step, alpha >= {KRYLOV_MIN_ALPHA}: "
                             "GMRES needs 4.6-6.6x fewer products")
        return "power", f"small graph, alpha < {KRYLOV_MIN_ALPHA}: the serial power step"
    return "gauss-seidel", (f"CPU with {threads} threads: Gauss-Seidel in {threads} "
                            "blocks, the dangling rows lumped, Anderson-mixed")


@register("auto")
def auto(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
         callback: Any = None) -> SolverOutput:
    """Run the method :func:`choose_method` picks (see the module docstring)."""
    name, reason = choose_method(op)
    out = get_solver(name)(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                           callback=callback)
    out.info.update({"method": name, "auto_reason": reason})
    return out
