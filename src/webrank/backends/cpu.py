"""CPU backend: NumPy arrays, SciPy for generic products, a fused step for the hot loop.

The fused power step (:mod:`webrank.kernels.cpu`) is, by ``engine``:

* ``"pull"``: the parallel compiled kernel over the in-link CSR (each row gathers its
  sources' values);
* ``"blocked"``: the parallel compiled kernel over the partition-centric layout
  (:class:`~webrank.kernels.cpu.CPUBlockedLayout`: rows in cache-sized partitions, each
  source's value read once per partition and added to its run of rows), built once per
  graph and kept in its cache;
* ``"auto"`` (default): the same compiled pull step on one thread below
  :data:`~webrank.kernels.cpu.SMALL_GRAPH_EDGES` edges (a parallel step's thread start
  outweighs its gain there, and a serial step does not wait for threads that other
  processes hold up); above it, with at least :data:`BLOCKED_MIN_THREADS` threads,
  blocked when the solve is expected to take enough steps to repay the layout's build
  (:data:`BLOCKED_MIN_STEPS`), else pull.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np

from webrank.backends.base import PageRankOperator, StepsResult
from webrank.backends.fixed_point import FixedPointMatrix
from webrank.backends.options import DEFAULTS, EngineOptions
from webrank.graph import Graph
from webrank.kernels import cpu as kernels
from webrank.kernels.criteria import Q63_ULP, StopTest

#: "auto" takes the blocked step when a solve is expected to take at least this many
#: steps (``log(tol) / log(alpha)``, at most ``max_iter``). Measured by
#: ``benchmarks/cpu/cpu_engines.py`` on 2 cores: the layout costs about 10-15 pull steps to
#: build and saves a fifth to a third of each step on the shared web graphs.
BLOCKED_MIN_STEPS = 40
#: ... and only with at least this many threads. With the compiled C++ pull step, two
#: threads run the blocked step no faster than the pull step on any graph measured
#: (docs/benchmarks.md, "First answer after a fresh install"), so a solve there pays the
#: layout for nothing; the rule for many threads stands as measured before, until it is
#: measured again with the C++ kernels.
BLOCKED_MIN_THREADS = 8


class CPUOperator(PageRankOperator):
    """The Google matrix on the CPU (see :class:`~webrank.backends.base.PageRankOperator`).

    Parameters
    ----------
    options : EngineOptions
        Its ``engine``, ``"auto"``, ``"pull"`` or ``"blocked"``: the power step (see the
        module docstring), checked for the CPU by :meth:`EngineOptions.for_device`.

    Attributes
    ----------
    kernel : {"native", "serial"}
        How the compiled power step runs, chosen once from the edge count by
        :func:`webrank.kernels.cpu.use_native` (an explicit ``engine`` runs in
        parallel): on all the kernels' threads, or on one (small graphs).
    """

    capabilities = frozenset({"sweep", "adaptive", "fixed_point"})

    name = "cpu"
    xp = np

    def __init__(
        self,
        graph: Graph,
        alpha: float,
        personalization: np.ndarray | None,
        dangling: np.ndarray | None,
        dtype: str,
        options: EngineOptions = DEFAULTS,
    ) -> None:
        engine = options.engine
        super().__init__(graph, alpha, personalization, dangling, dtype)
        n = self.n
        self._v = np.full(n, 1.0 / n) if personalization is None else personalization
        if dangling is None:
            self._d = self._v
        else:
            self._d = dangling
        # length-1 arrays tell the kernel "uniform" (saves reading two n-vectors)
        self._v_k = np.array([1.0 / n]) if self.uniform_v else self._v
        self._d_k = np.array([1.0 / n]) if self.uniform_d else self._d
        self._dangling = graph.dangling_mask
        self._inv_out = graph.gather_scale()
        vals = graph.transition_values()
        self._vals = (np.zeros(0, dtype=self.dtype) if vals is None
                      else vals.astype(self.dtype))
        native = kernels.use_native(graph.num_edges) if engine == "auto" else True
        self.kernel = "native" if native else "serial"
        self._step_threads = None if native else 1
        self._bounds = (kernels.chunk_bounds(graph.indptr, kernels.default_chunks())
                        if native else np.array([0, n], dtype=np.int64))
        self._partial = np.zeros((self._bounds.size, 3))
        self.engine = engine
        self.info["kernel"] = self.kernel

    def teleport(self) -> np.ndarray:
        return self._v

    def solving(self) -> contextlib.AbstractContextManager:
        """With the parallel kernels: BLAS on one thread while the solver runs. A
        solver's BLAS calls (GMRES's orthogonalisation, Anderson's small solves) are
        short, and BLAS's worker threads busy-wait after each one (OpenBLAS for ~0.1 s)
        on the cores the kernels' threads need: GMRES on soc-Epinions1 at alpha 0.99
        took 1.06 s with them, 0.56 s with one BLAS thread, on 2 cores."""
        if self.kernel != "native":
            return contextlib.nullcontext()
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # a dependency, but a source tree may run without it
            return contextlib.nullcontext()
        return threadpool_limits(limits=1, user_api="blas")

    def dangling_dist(self) -> np.ndarray:
        return self._d

    def dangling_mass(self, x: Any) -> float:
        return float(x[self._dangling].sum())

    def propagate(self, x: Any) -> np.ndarray:
        # any float n-vector (SciPy's LinearOperator passes (n, 1) columns): float64 rows
        # summed in order by the compiled kernel (SciPy's bits), shaped as given
        x = np.asarray(x)
        flat = np.ascontiguousarray(x.reshape(-1), dtype=np.float64)
        xs = flat if self._vals.size else flat * self._inv_out
        g = self.graph
        out = kernels.row_range_sums(g.indptr[:-1], g.indptr[1:], g.indices, self._vals,
                                     xs, np.empty(self.n), threads=self._step_threads)
        return out.reshape(x.shape)

    def power_steps(
        self, x: Any, *, tol: float, max_steps: int, criterion: str,
        callback: Any = None,
    ) -> StepsResult:
        g = self.graph
        test = StopTest.of(criterion, tol)
        x = np.array(x, dtype=np.float64)
        xs = (x * self._inv_out).astype(self.dtype)
        x_next = np.empty_like(x)
        xs_next = np.empty_like(xs)
        dm = self.dangling_mass(x)
        residuals: list[float] = []
        converged = False
        steps = 0
        delta = False
        mass = 0.0
        layout = None
        if self.kernel == "native" and self._step_engine(tol, max_steps) == "blocked":
            layout = self._blocked_layout()
            partial = np.zeros((layout.part_ptr.size, 3))
        terms = kernels.StepTerms(v=self._v_k, d=self._d_k, inv_out=self._inv_out,
                                  alpha=self.alpha, crit=test.code)
        while steps < max_steps:
            if layout is not None:
                res, dm, mass = kernels.blocked_step(
                    layout, terms, xs=xs, x=x, dm=dm, mass=mass, delta=delta, x_out=x_next,
                    xs_out=xs_next, partial=partial)
            else:
                res, dm, mass = kernels.fused_step(
                    g.indptr, g.indices, self._vals, terms, xs=xs, x=x, dm=dm, mass=mass,
                    delta=delta, bounds=self._bounds, x_out=x_next, xs_out=xs_next,
                    partial=self._partial, threads=self._step_threads)
            if self.delta_steps and not delta:
                # switch to delta steps: gather (x_1 - x_0) / out from now on
                d1 = x_next - x
                xs_next[:] = d1 * self._inv_out
                dm = float(d1[self._dangling].sum())
                mass = float(d1.sum())
                delta = True
            x, x_next = x_next, x
            xs, xs_next = xs_next, xs
            residuals.append(float(test.residuals(res)))
            steps += 1
            if callback is not None:
                callback(steps, residuals[-1])
            if res < test.tol_cmp:
                converged = True
                break
        self.matvecs += steps
        return StepsResult(x=x, residuals=np.asarray(residuals, dtype=np.float64),
                           converged=converged)

    def _step_engine(self, tol: float, max_steps: int) -> str:
        """The compiled power step for a solve to ``tol`` in at most ``max_steps`` steps
        (``"auto"``: with enough threads, blocked when its layout is built already or the
        solve is long enough to repay it); recorded in ``info["engine"]``."""
        engine = self.engine
        if engine == "auto":
            key = ("cpu-blocked", kernels.BLOCKED_PART_ROWS, self._vals.dtype.str)
            expected = (np.log(tol) / np.log(self.alpha) if 0 < tol < 1 and 0 < self.alpha < 1
                        else max_steps)
            long = min(expected, max_steps) >= BLOCKED_MIN_STEPS
            wide = kernels.num_threads() >= BLOCKED_MIN_THREADS
            engine = "blocked" if wide and (self.graph.is_cached(key) or long) else "pull"
        self.info["engine"] = engine
        return engine

    def _blocked_layout(self) -> kernels.CPUBlockedLayout:
        """The graph's blocked layout, built on first use and kept in its cache (its
        build time in ``info["layout_build_s"]``; 0 when it was cached)."""
        g = self.graph
        key = ("cpu-blocked", kernels.BLOCKED_PART_ROWS, self._vals.dtype.str)
        t0 = time.perf_counter()
        layout = g.cached(key, lambda: kernels.blocked_layout(g.indptr, g.indices, self._vals))
        self.info["layout_build_s"] = time.perf_counter() - t0
        self.info["layout_pairs_per_link"] = layout.num_pairs / max(g.num_edges, 1)
        return layout

    # -- adaptive and fixed-point steps (see PageRankOperator.adaptive_steps/fixed_steps)
    @property
    def threads(self) -> int:
        """Threads the parallel CPU kernels use."""
        return kernels.num_threads()

    def sweeps(self, x0: Any, *, blocks: int, anderson: int) -> Any:
        from webrank.backends.sweep import Sweeps

        return Sweeps(self, x0, blocks, anderson)

    def adaptive_steps(
        self, x: Any, rows: Any, calm: Any, *, steps: int, theta: float, tol: float,
        criterion: str,
    ) -> StepsResult:
        from webrank.kernels import cpu_adaptive

        g = self.graph
        test = StopTest.of(criterion, tol)
        # both buffers hold x, so the rows not in `rows` keep their value in either
        x_cur = np.array(x, dtype=np.float64)
        x_new = x_cur.copy()
        xs_cur = x_cur * self._inv_out
        xs_new = xs_cur.copy()
        vals = self._vals.astype(np.float64, copy=False)
        dm = self.dangling_mass(x_cur)
        bounds = cpu_adaptive.row_bounds(g.indptr, rows, kernels.default_chunks())
        partial = np.zeros((max(bounds.size, 1), 2))
        residuals = np.empty(steps)
        done, converged = 0, False
        while done < steps:
            res, ddm = cpu_adaptive.adaptive_step(
                g.indptr, g.indices, vals, xs=xs_cur, x=x_cur, v=self._v_k, d=self._d_k,
                inv_out=self._inv_out, alpha=self.alpha, dm=dm, crit=test.code,
                theta=float(theta), rows=rows, bounds=bounds, calm=calm, x_out=x_new,
                xs_out=xs_new, partial=partial)
            dm += ddm
            x_cur, x_new = x_new, x_cur
            xs_cur, xs_new = xs_new, xs_cur
            residuals[done] = test.residuals(res)
            done += 1
            if res < test.tol_cmp:
                converged = True
                break
        self.matvecs += done
        return StepsResult(x=x_cur, residuals=residuals[:done], converged=converged)

    def fixed_steps(
        self, x: Any, *, matrix: FixedPointMatrix, tol: float, max_steps: int,
        criterion: str, callback: Any = None, calm: Any = None, theta: int = 0,
        patience: int = 0,
    ) -> StepsResult:
        from webrank.kernels import cpu_fixed

        g = self.graph
        test = StopTest.of(criterion, tol, Q63_ULP)
        x_cur = np.array(x, dtype=np.uint64)
        x_new = np.empty_like(x_cur)
        xs_cur = cpu_fixed.mulfrac_array(x_cur, matrix.node_scale, matrix.product)
        xs_new = np.empty_like(x_cur)
        dm = int(x_cur[self._dangling].sum(dtype=np.uint64))
        k = self._bounds.size
        partial_res, partial_dm = np.zeros(k), np.zeros(k, dtype=np.uint64)
        residuals: list[float] = []
        done, converged = 0, False
        while done < max_steps:
            res, dm = cpu_fixed.fixed_step(
                g.indptr, g.indices, matrix.edge_vals, xs=xs_cur, x=x_cur,
                node_scale=matrix.node_scale, tele=matrix.tele, dist=matrix.dist,
                alpha_q=matrix.alpha_q, dm=dm, crit=test.code, product=matrix.product,
                bounds=self._bounds, x_out=x_new, xs_out=xs_new, partial_res=partial_res,
                partial_dm=partial_dm, calm=calm, theta=theta, patience=patience)
            x_cur, x_new = x_new, x_cur
            xs_cur, xs_new = xs_new, xs_cur
            residuals.append(float(test.residuals(res)))
            done += 1
            if callback is not None:
                callback(done, residuals[-1])
            if res < test.tol_cmp:
                converged = True
                break
        self.matvecs += done
        return StepsResult(x=x_cur, residuals=np.asarray(residuals, dtype=np.float64),
                           converged=converged)
