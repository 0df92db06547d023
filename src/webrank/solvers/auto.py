"""``method="auto"`` (the default): the solver expected to be fastest here.

The choice follows measurements at tol 1e-10 on web-NotreDame and cnr-2000
(``benchmarks/cpu_method_choice.py``, ``webrank bench seed-extrapolation``; the reading is
in ``docs/solvers.md``):

* **GPU** — ``power``. The fused power step replayed as a CUDA graph costs 0.02–0.03 ms
  on these graphs, less than one Krylov iteration's host round trip: at alpha 0.99
  power takes 58 ms against GMRES's 236 ms on cnr-2000 (H100) although GMRES needs 6.6x
  fewer products; every other method is slower per step too.
* **CPU, at most ``FEW_THREADS`` threads, graphs on the Numba kernels** (from
  :data:`~webrank.kernels.cpu.SMALL_GRAPH_EDGES` links) — ``gauss-seidel``: one block
  per thread, Anderson-mixed every two sweeps. On 2 cores at tol 1e-10 it was the
  fastest method at every alpha measured (0.85-0.99) on cnr-2000, web-NotreDame and
  soc-Epinions1: 1.3x power at 0.85, 4-7x power and 2.5-5x GMRES at 0.99
  (``benchmarks/cpu_engines.py --methods``; docs/solvers.md).
* **CPU, smaller graphs** (the serial SciPy step, no Numba import) — ``gmres`` from
  ``alpha >= KRYLOV_MIN_ALPHA``, else ``power``.
* **CPU, more threads** — ``power`` below ``KRYLOV_MIN_ALPHA``, ``gauss-seidel`` from
  it. On 16 cores (the H100 host of the device tool) power was fastest at 0.85
  (cnr-2000 0.14 s; Gauss-Seidel's 16 blocks cost sweeps), Gauss-Seidel at 0.99 (cnr-2000
  0.64 s against power's 1.94 and GMRES's 6.7; web-NotreDame 1.26 against 1.45;
  soc-Epinions1 0.31 against 0.63).

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
    if getattr(op, "kernel", None) != "numba":  # a small graph on the serial SciPy step
        if op.alpha >= KRYLOV_MIN_ALPHA:
            return "gmres", (f"small graph on the serial step, alpha >= {KRYLOV_MIN_ALPHA}: "
                             "GMRES needs 4.6-6.6x fewer products")
        return "power", f"small graph, alpha < {KRYLOV_MIN_ALPHA}: the serial power step"
    if threads <= FEW_THREADS or op.alpha >= KRYLOV_MIN_ALPHA:
        return "gauss-seidel", (f"CPU with {threads} threads, alpha {op.alpha}: Gauss-Seidel "
                                f"in {threads} blocks, Anderson-mixed")
    return "power", (f"CPU with {threads} threads, alpha < {KRYLOV_MIN_ALPHA}: the parallel "
                     "power step")


@register("auto")
def auto(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
         callback: Any = None) -> SolverOutput:
    """Run the method :func:`choose_method` picks (see the module docstring)."""
    name, reason = choose_method(op)
    out = get_solver(name)(op, x0, tol=tol, max_iter=max_iter, criterion=criterion,
                           callback=callback)
    out.info.update({"method": name, "auto_reason": reason})
    return out
