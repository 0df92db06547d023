"""``method="auto"`` (the default): the solver expected to be fastest here.

The choice follows measurements at tol 1e-10 on web-NotreDame and cnr-2000
(``benchmarks/cpu_method_choice.py``, ``webrank bench seed-extrapolation``; the reading is
in ``docs/solvers.md``):

* **GPU** — ``power``. The fused power step replayed as a CUDA graph costs 0.02–0.03 ms
  on these graphs, less than one Krylov iteration's host round trip: at alpha 0.99
  power takes 58 ms against GMRES's 236 ms on cnr-2000 (H100) although GMRES needs 6.6x
  fewer products; every other method is slower per step too.
* **CPU, graphs on the Numba kernels** (from :data:`~webrank.kernels.cpu.SMALL_GRAPH_EDGES`
  links) — ``gauss-seidel``: one block per thread, the dangling rows lumped,
  Anderson-mixed every two sweeps. At tol 1e-10 it was the fastest method, or within 7%
  of it, at every alpha measured (0.85 and 0.99) on cnr-2000, web-NotreDame and
  soc-Epinions1, on 2 cores (the development VM) and on 2, 4 and 16 cores of the H100
  host: on 2 cores 1.6-2.7x power at 0.85, 5.6-13x power and 1.9-19x GMRES at 0.99; on
  16 cores cnr-2000 at 0.85 in 0.089 s against power's 0.131 (web-NotreDame 0.116
  against 0.108: the 7%) and 0.39 s against 1.95 at 0.99 (``benchmarks/cpu_engines.py
  --methods``, ``benchmarks/results/cpu_methods*``; docs/solvers.md).
* **CPU, smaller graphs** (the serial SciPy step, no Numba import) — ``gmres`` from
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
    if getattr(op, "kernel", None) != "numba":  # a small graph on the serial SciPy step
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
