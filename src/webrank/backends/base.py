"""The operator interface every backend implements, and the code they share.

A backend turns a :class:`~webrank.graph.Graph` plus the PageRank parameters into a
:class:`PageRankOperator`: the Google matrix applied matrix-free,

    G x = alpha * (P^T x + (dangling . x) d) + (1 - alpha) * (1 . x) v,

never formed. Solvers (``webrank.solvers``) are written once against this interface and
the array module ``op.xp`` (NumPy or CuPy); only the hot loop, :meth:`power_steps`, is a
fused kernel per backend.

Precision. ``dtype`` is the storage precision of the *gathered* vector
``xs = x / out_degree`` — the array read once per edge, the bandwidth that matters.
The iterate ``x`` itself, row sums of float64 runs and every reduction (dangling mass,
residual) are float64, so a float32 run still reaches residuals of 1e-12: with
everything in float32 the L1 residual of a 300K-node graph stalls near 1e-8 (the sum of
per-node rounding), and ``tol=1e-10`` could never be met.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.backends.fixed_point import FixedPointMatrix
from webrank.graph import Graph

CRITERIA = ("l1", "l2", "linf")
#: storage precisions of the gathered vector (the iterate and its sums are float64)
DTYPES = ("float64", "float32")


#: the power steps each device offers (``engine=``): the one list the backends validate
#: against and the CLI's ``--engine`` offers
CPU_ENGINES = ("auto", "pull", "blocked")
GPU_ENGINES = ("auto", "pull", "blocked", "persistent", "stream")
#: the steps of the parts of a partitioned run (one part per rank or GPU)
PART_ENGINES = ("auto", "pull", "blocked")

@dataclass
class StepsResult:
    """What :meth:`PageRankOperator.power_steps` returns."""

    x: Any  # final iterate (backend array, float64)
    residuals: np.ndarray  # one residual per step taken (host float64)
    converged: bool
    #: ``x`` was scaled to sum 1 by the steps themselves (the persistent engine's last
    #: pass), so the caller need not normalise it again
    normalized: bool = False


class Operator:
    """One graph's Google matrix on one device: what every operator of webrank shares.

    An operator owns the device copy of what its steps read and the device's array
    module; features drive it, solvers see only it. Three kinds of work, one shape:

    * :class:`PageRankOperator`: one vector (the CPU, each GPU engine, the CPU+GPU
      hybrid, and the parts of a partitioned run,
      :class:`webrank.distributed.operator.PartitionedOperator`);
    * :class:`webrank.backends.batch.BatchOperator`: k vectors at once, an n×k batch
      (personalized PageRank);
    * :class:`webrank.backends.frontier.FrontierOperator`: the rows an edit of the graph
      reaches (the frontier phase of an incremental update).

    Parameters
    ----------
    graph : Graph or None
        The graph (None for an operator over parts held elsewhere; give ``n``).
    alpha : float
        Damping factor in [0, 1).
    dtype : {"float32", "float64"}
        Storage precision of the gathered vector (see the module docstring).
    n : int, optional
        Nodes, when ``graph`` is None.
    """

    name: str = "?"
    xp: Any = np
    #: what runs its steps: "native" or "scipy" (the CPU's parallel or serial step), "cuda"
    #: (a GPU engine); the batch operators' "native", "spmm" or "cuda-fused"
    kernel: str = "?"
    #: what the operator offers beyond its basic step, which a solver or feature may
    #: :meth:`require`: "sweep" (Gauss-Seidel, :meth:`PageRankOperator.sweeps`),
    #: "adaptive" (:meth:`PageRankOperator.adaptive_steps`), "fixed_point"
    #: (:meth:`PageRankOperator.fixed_point`), "frontier" (the frontier steps of
    #: :class:`~webrank.backends.frontier.FrontierOperator`)
    capabilities: frozenset[str] = frozenset()

    def __init__(self, graph: Graph | None, alpha: float, dtype: str, *,
                 n: int | None = None) -> None:
        self.graph = graph
        self.n = graph.n if graph is not None else int(n)
        self.alpha = float(alpha)
        self.dtype = np.dtype(dtype)
        # float32 gathers iterate on the change x_k - x_{k-1} (see kernels.cpu.fused_step)
        self.delta_steps = self.dtype == np.float32

    @property
    def on_device(self) -> bool:
        """Whether this operator's vectors live on a GPU (the result is normalised there
        and copied down once)."""
        return self.xp is not np

    def asarray(self, a: Any) -> Any:
        """Move a host array to this backend (float64)."""
        return self.xp.asarray(a, dtype=np.float64)

    def to_host(self, a: Any) -> np.ndarray:
        """Move a backend array to a NumPy array."""
        return np.asarray(a)

    def synchronize(self) -> None:
        """Wait for queued device work (no-op on the CPU)."""
        return None

    def full(self, value: float) -> Any:
        """An n-vector of float64 ``value`` on this backend."""
        return self.xp.full(self.n, value, dtype=np.float64)

    def start_vector(self) -> Any:
        """The uniform start ``1/n`` of a solve, on this backend: a fresh vector (an
        engine whose steps never write their start may keep one)."""
        return self.full(1.0 / self.n)

    def normalized(self, x: Any) -> Any:
        """``x`` divided by its sum where that is positive, else ``x``, on this backend."""
        total = float(x.sum())
        return x / total if total > 0 else x

    # -- the vector algebra of the solvers (float64 n-vectors of this backend). NumPy
    #    here; a GPU operator does each with cuBLAS or a prebuilt kernel, since CuPy's own
    #    operations are compiled on a process's first use of each (about 0.2 s apiece)
    def copy(self, x: Any) -> Any:
        """A float64 copy of ``x`` on this backend."""
        return self.xp.array(x, dtype=np.float64)

    def axpy(self, a: float, x: Any, y: Any) -> Any:
        """``y += a x`` in place; returns ``y``."""
        y += a * x
        return y

    def scale(self, a: float, x: Any) -> Any:
        """``x *= a`` in place; returns ``x``."""
        x *= a
        return x

    def dot(self, x: Any, y: Any) -> float:
        """``x . y`` as a host float."""
        return float(x @ y)

    def total(self, x: Any) -> float:
        """``sum(x)`` as a host float."""
        return float(x.sum())

    def norm(self, x: Any, criterion: str) -> float:
        """``||x||`` under ``criterion`` ("l1", "l2" or "linf") as a host float."""
        if criterion == "l1":
            return float(np.abs(x).sum())
        if criterion == "l2":
            return float(np.sqrt(x @ x))
        return float(np.abs(x).max()) if x.size else 0.0

    def clipped(self, x: Any) -> Any:
        """``max(x, 0)`` per entry (a new vector)."""
        return np.maximum(x, 0.0)

    def project(self, basis: Any, w: Any) -> np.ndarray:
        """``basis @ w`` on the host (``basis``: k rows of length n, contiguous)."""
        return self.to_host(basis @ w)

    def add_combination(self, basis: Any, c: np.ndarray, y: Any, a: float = 1.0) -> Any:
        """``y += a basis^T c`` in place (``c``: k host coefficients); returns ``y``."""
        y += a * (basis.T @ self.asarray(c))
        return y

    def combine_rows(self, q: np.ndarray, basis: Any) -> Any:
        """``q @ basis``: rows combining the rows of ``basis`` (``q``: host, r x k)."""
        return self.asarray(q) @ basis

    def aitken(self, x2: Any, x1: Any, x0: Any) -> Any:
        """Guarded Aitken extrapolation per node from iterates ``x^(k-2), x^(k-1),
        x^(k)`` (:func:`webrank.solvers.extrapolation.aitken_extrapolate`; not
        renormalised): with ``r = (x0 - x1) / (x1 - x2)``, ``x0 + (x0 - x1) r / (1 - r)``
        where ``0 < r < 0.999`` and that is not negative, else ``x0``."""
        d1 = x0 - x1
        d0 = x1 - x2
        nz = d0 != 0
        r = np.where(nz, d1 / np.where(nz, d0, 1.0), 0.0)
        ok = nz & (r > 0) & (r < 0.999)
        x = np.where(ok, x0 + d1 * r / np.where(ok, 1.0 - r, 1.0), x0)
        return np.where(x >= 0, x, x0)

    def require(self, capability: str | None, method: str) -> None:
        """ValueError, before any work, when ``method`` needs a capability this operator
        lacks."""
        if capability is not None and capability not in self.capabilities:
            offered = ", ".join(sorted(self.capabilities)) or "none"
            raise ValueError(f"method {method!r} needs {capability!r} steps, which the "
                             f"{self.name} backend does not offer (it offers: {offered})")


class PageRankOperator(Operator, ABC):
    """The Google matrix of one graph on one device, with its fused power step, for one
    vector at a time.

    Parameters
    ----------
    graph : Graph or None
        None for the parts of a partitioned run (then ``n``).
    alpha : float
        Damping factor in [0, 1).
    personalization : ndarray of float64 or None
        Teleport distribution v (normalised, length n); None = uniform.
    dangling : ndarray of float64 or None
        Distribution d of the dangling nodes' rank (normalised); None = v.
    dtype : {"float32", "float64"}
        Storage precision of the gathered vector (see module docstring).
    n : int, optional
        Nodes, when ``graph`` is None.
    """

    def __init__(
        self,
        graph: Graph | None,
        alpha: float,
        personalization: np.ndarray | None,
        dangling: np.ndarray | None,
        dtype: str,
        *,
        n: int | None = None,
    ) -> None:
        super().__init__(graph, alpha, dtype, n=n)
        self.uniform_v = personalization is None
        self.uniform_d = dangling is None and personalization is None
        self.matvecs = 0  # Google-matrix products done so far (power steps count too)
        #: what the backend did (engine, preprocessing), merged into the result's ``info``
        self.info: dict[str, Any] = {}

    def scores_to_host(self, x: Any) -> np.ndarray:
        """The solve's answer on the host (:meth:`to_host` here; the GPU's lands in host
        memory made ready while it solved)."""
        return self.to_host(x)

    def solving(self) -> contextlib.AbstractContextManager:
        """The context a solve runs in (:func:`webrank.pagerank` enters it around the
        solver): what the backend needs set while solvers drive it; nothing here."""
        return contextlib.nullcontext()

    def no_steps(self, x: Any) -> StepsResult:
        """What :meth:`power_steps` returns when asked for no step: ``x`` (a float64 copy,
        on this backend), no residuals, not converged."""
        return StepsResult(x=self.xp.array(x, dtype=np.float64), residuals=np.zeros(0),
                           converged=False)

    def prepare_steps(self) -> None:
        """Build what :meth:`power_steps` needs (a layout, kernels), so that it counts as
        setup time; a no-op for backends that need nothing more."""
        return None

    # -- the operator ---------------------------------------------------------------
    @abstractmethod
    def propagate(self, x: Any) -> Any:
        """``P^T x``: rank pushed along out-links, no dangling or teleport term."""

    @abstractmethod
    def dangling_mass(self, x: Any) -> float:
        """Sum of ``x`` over dangling nodes."""

    @abstractmethod
    def teleport(self) -> Any:
        """The teleport vector v (backend array, float64)."""

    @abstractmethod
    def dangling_dist(self) -> Any:
        """The dangling distribution d (backend array, float64)."""

    def matvec(self, x: Any) -> Any:
        """``G x`` for any vector x (not only probability vectors): linear in x."""
        self.matvecs += 1
        y = self.scale(self.alpha, self.propagate(x))
        self.axpy(self.alpha * self.dangling_mass(x), self.dangling_dist(), y)
        return self.axpy((1.0 - self.alpha) * self.total(x), self.teleport(), y)

    @abstractmethod
    def power_steps(
        self, x: Any, *, tol: float, max_steps: int, criterion: str,
        callback: Any = None,
    ) -> StepsResult:
        """Run up to ``max_steps`` fused power steps from ``x``.

        Each step is ``x' = alpha P^T x + alpha (dangling . x) d + (1 - alpha) v``
        (Praveen et al., Algorithm 2) with the residual ``||x' - x||`` under ``criterion``.
        Stops after the first step whose residual is below ``tol``. ``callback(step,
        residual)``, if given, is called as steps complete (after each batch on a GPU).
        """

    def sweeps(self, x0: Any, *, blocks: int, anderson: int) -> Any:
        """Gauss-Seidel sweeps from ``x0`` in ``blocks`` row blocks, Anderson-mixed with
        depth ``anderson`` (capability "sweep"): an object with ``sweep(criterion,
        record)``, ``mix()``, ``full()``, ``restart(x)``, ``blocks`` and ``mixer`` (see
        :class:`webrank.backends.sweep.Sweeps`)."""
        raise NotImplementedError(f"the {self.name} backend has no Gauss-Seidel sweeps")

    def fixed_point(self, product: str) -> Any:
        """The fixed-point steps of this operator's Google matrix with ``product``
        rounding (capability "fixed_point"):
        :class:`webrank.backends.fixed_point.FixedPointSteps`."""
        from webrank.backends.fixed_point import FixedPointSteps

        self.require("fixed_point", "fixed")
        return FixedPointSteps(self, product)

    # -- primitives of the adaptive and fixed-point methods (webrank.solvers.adaptive/fixed)
    def adaptive_steps(
        self, x: Any, rows: Any, calm: Any, *, steps: int, theta: float, tol: float,
        criterion: str,
    ) -> StepsResult:
        """Up to ``steps`` power steps that recompute only the nodes in ``rows``.

        For ``i`` in ``rows`` (int64 backend array, any order, no repeats) the step is the
        power step of :meth:`power_steps`; every other node keeps its value in ``x``
        (frozen). The dangling mass each step needs is that of the whole vector (the
        frozen nodes' share is constant). Per node in ``rows`` the step also updates
        ``calm`` (uint8, length n, in place): +1 (saturating at 255) when
        ``|x'_i - x_i| < theta``, else 0. The residual is ``||x' - x||`` under
        ``criterion`` over the rows computed (frozen nodes change by 0). Stops after the
        first step whose residual is below ``tol``. ``x`` (float64) is not modified; the
        returned ``x`` may be a working buffer that the next call overwrites.
        """
        raise NotImplementedError(f"the {self.name} backend has no adaptive steps")

    def fixed_steps(
        self, x: Any, *, matrix: FixedPointMatrix, tol: float, max_steps: int,
        criterion: str, callback: Any = None, calm: Any = None, theta: int = 0,
        patience: int = 0,
    ) -> StepsResult:
        """Up to ``max_steps`` power steps in unsigned fixed point (Q1.63 in ``uint64``).

        ``x`` is the Q1.63 iterate (uint64 backend array), ``matrix`` the Google matrix in
        fixed point (:class:`~webrank.backends.fixed_point.FixedPointMatrix`). See
        :func:`webrank.kernels.cpu_fixed.fixed_step` for the step. Residuals are
        returned in real units (ulps times 2**-63) and compared with ``tol`` exactly as
        :meth:`power_steps` does; the returned ``x`` is uint64 Q1.63.

        With ``patience > 0`` the nodes already converged are skipped: ``calm`` (uint8,
        n, backend array, updated in place) counts the steps in a row each node changed
        by at most ``theta`` ulps; a node whose count reached ``patience`` keeps its
        value and gathers nothing (the mask of converged nodes of the kernel's
        :func:`~webrank.kernels.cpu_fixed.fixed_step`).
        """
        raise NotImplementedError(f"the {self.name} backend has no fixed-point steps")
