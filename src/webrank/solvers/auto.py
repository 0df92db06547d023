"""``method="auto"`` (the default): the solver expected to be fastest here.

The choice follows the measurements in ``docs/solvers.md`` (web-NotreDame and cnr-2000,
tol 1e-10):

* **GPU** — ``power``. The fused power step replayed as a CUDA graph costs 0.02–0.03 ms
  on these graphs, less than one GMRES iteration's host round trip: at alpha 0.99 power
  takes 0.05 s against GMRES's 0.26 s on cnr-2000 (H100) although GMRES needs 6.6x
  fewer products; adaptive and fixed-point iterations are slower per step.
* **CPU, few threads** (at most ``GS_MAX_THREADS``) — ``gauss-seidel`` from
  ``alpha >= GS_MIN_ALPHA``: a sweep uses each new value at once and needs about half
  the power method's passes; single-threaded, it still wins while the power step has
  few threads to share. Below that alpha, ``power``.
* **CPU, many threads** — ``gmres`` from ``alpha >= KRYLOV_MIN_ALPHA`` (4.7–6.6x fewer
  products at 0.99; its vector work parallelises with NumPy), else ``power``.

float32 gathers and methods' own options do not change the choice. ``info`` says what
was picked and why; ``result.method`` is the method that ran.
"""

from __future__ import annotations

from typing import Any

from webrank.solvers import SolverOutput, get_solver, register

GS_MAX_THREADS = 4
GS_MIN_ALPHA = 0.9
KRYLOV_MIN_ALPHA = 0.95


def choose_method(op: Any) -> tuple[str, str]:
    """(method, reason) for this operator's device, threads and alpha."""
    if op.name != "cpu":
        return "power", "GPU: the fused power step in a CUDA graph is fastest"
    from webrank.kernels.cpu import HAVE_NUMBA, num_threads

    threads = num_threads()
    if threads <= GS_MAX_THREADS and HAVE_NUMBA:
        if op.alpha >= GS_MIN_ALPHA:
            return "gauss-seidel", (f"CPU with {threads} threads, alpha >= {GS_MIN_ALPHA}: "
                                    "Gauss-Seidel needs about half the passes")
        return "power", f"CPU, alpha < {GS_MIN_ALPHA}: the parallel power step"
    if op.alpha >= KRYLOV_MIN_ALPHA:
        return "gmres", (f"CPU with {threads} threads, alpha >= {KRYLOV_MIN_ALPHA}: GMRES "
                         "needs several times fewer products")
    return "power", f"CPU with {threads} threads, alpha < {KRYLOV_MIN_ALPHA}"


@register("auto")
def auto(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
         callback: Any = None) -> SolverOutput:
    """Run the method :func:`choose_method` picks (see the module docstring)."""
    name, reason = choose_method(op)
    out = get_solver(name)(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                           callback=callback)
    out.info.update({"method": name, "auto_reason": reason})
    return out
