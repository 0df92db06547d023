"""``method="auto"`` (the default): the solver expected to be fastest here.

The choice follows measurements at tol 1e-10 on web-NotreDame and cnr-2000
(``benchmarks/cpu_method_choice.py``, ``webrank bench seed-extrapolation``; the reading is
in ``docs/solvers.md``):

* **GPU** — ``power``. The fused power step replayed as a CUDA graph costs 0.02–0.03 ms
  on these graphs, less than one Krylov iteration's host round trip: at alpha 0.99
  power takes 58 ms against GMRES's 236 ms on cnr-2000 (H100) although GMRES needs 6.6x
  fewer products; every other method is slower per step too.
* **CPU, at most ``FEW_THREADS`` threads** — ``gmres`` from ``alpha >= KRYLOV_MIN_ALPHA``,
  else ``power``. On 2 cores at alpha 0.99, GMRES took 5.6 s against power's 8.1 s on
  cnr-2000 and 6.1 s against 6.2 s on web-NotreDame; at 0.95 and below power was fastest
  (Gauss–Seidel, one thread, needs half the passes but each costs 2.3x a 2-thread power
  step; 1.2x slower than power at 0.95).
* **CPU, more threads** — ``power``: its step scales with the threads while GMRES's
  vector work is single-threaded NumPy (reasoned, not measured on such a machine).

``info`` says what was picked and why; ``result.method`` is the method that ran.
"""

from __future__ import annotations

from typing import Any

from webrank.solvers import SolverOutput, get_solver, register

FEW_THREADS = 4
KRYLOV_MIN_ALPHA = 0.98


def choose_method(op: Any) -> tuple[str, str]:
    """(method, reason) for this operator's device, threads and alpha."""
    if op.name != "cpu":
        return "power", "GPU: the fused power step in a CUDA graph is fastest"
    from webrank.kernels.cpu import num_threads

    threads = num_threads()
    if threads > FEW_THREADS:
        return "power", f"CPU with {threads} threads: the parallel power step"
    if op.alpha >= KRYLOV_MIN_ALPHA:
        return "gmres", (f"CPU with {threads} threads, alpha >= {KRYLOV_MIN_ALPHA}: GMRES "
                         "needs 4.6-6.6x fewer products")
    return "power", f"CPU, alpha < {KRYLOV_MIN_ALPHA}: the parallel power step"


@register("auto")
def auto(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
         callback: Any = None) -> SolverOutput:
    """Run the method :func:`choose_method` picks (see the module docstring)."""
    name, reason = choose_method(op)
    out = get_solver(name)(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                           callback=callback)
    out.info.update({"method": name, "auto_reason": reason})
    return out
