"""CPU kernels: the fused PageRank step, parallel with Numba or serial with SciPy.

One pass over the in-link CSR per iteration computes, for every node i,

    x'[i]  = alpha * sum_{j -> i} val(j,i) * xs[j] + alpha * dm * d[i] + (1 - alpha) * v[i]
    xs'[i] = x'[i] * inv_out[i]          (the vector the next pass gathers)

and the reductions the next pass and the stopping test need: the residual under the
chosen norm and the dangling mass of x'. Two implementations compute this same step:

* :func:`fused_step`, Numba (:mod:`webrank.kernels.cpu_numba`), one pass, parallel over
  rows split into chunks of equal *edge* count (a row-count split would leave one
  thread with every hub of a web graph);
* :func:`scipy_step`, one SciPy CSR product and a few NumPy vector operations, serial.
  Graphs with fewer than :data:`SMALL_GRAPH_EDGES` edges take it (the choice is
  :func:`use_numba`). There the process never imports Numba nor loads its cached
  kernel, most of a first call; once warm the serial step is slower by microseconds a
  step, and it does not slow down when other processes hold the cores (a parallel step
  then waits for its threads). It is also the step of any size where Numba cannot be
  imported. Measurements: docs/benchmarks.md, "First calls".

Numba is imported when a Numba kernel is first needed, not with this module; reading
``HAVE_NUMBA`` imports it (the modules that compile kernels of their own read it).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from types import ModuleType
from typing import Any

import numpy as np

#: one Q1.63 unit: the resolution of the fixed-point kernels (webrank.kernels.cpu_fixed)
Q63_ULP = 2.0 ** -63
#: the code of each convergence criterion in every kernel, CPU and CUDA
CRITERION_CODE = {"l1": 0, "l2": 1, "linf": 2}


def kernel_criterion(criterion: str, tol: float, unit: float = 1.0) -> tuple[int, float]:
    """``(code, tol_cmp)``: the kernels' code of ``criterion`` and the tolerance their
    residuals are compared with, in units of ``unit`` (a fixed-point run's ulp) and
    squared under L2 (the kernels keep the squared sum)."""
    scaled = tol / unit
    return CRITERION_CODE[criterion], scaled * scaled if criterion == "l2" else scaled

# Graphs with fewer edges than this take the serial SciPy step (see the module docstring).
# Measured, not guessed, by ``python benchmarks/first_call.py --parts crossover
# first-solve`` on the 2-core machine of CI (web-NotreDame's subgraphs and Erdos-Renyi
# graphs, tol 1e-10; table and reading in docs/benchmarks.md, "First calls"). Warm, on a
# quiet machine, Numba's step is as fast or faster at every size (1.0-1.5x; at most ~10 us
# a step below 60K edges), so there is no warm crossover; under load from other processes
# the serial step was faster up to ~1M edges. A fresh process's first call is 0.4-0.6 s
# faster with the serial step (no Numba import, no cached-kernel load) up to ~1.3M edges.
# The threshold is where a process ranking one graph must make tens rather than hundreds
# of warm solves before Numba's faster steps repay its start: 400-900 up to 58K edges,
# 34 at 178K. On more cores Numba gains: ``WEBRANK_SMALL_GRAPH_EDGES`` sets it (read at
# import; 0: always Numba).
SMALL_GRAPH_EDGES = int(os.environ.get("WEBRANK_SMALL_GRAPH_EDGES") or 150_000)

_logger = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    # PEP 562: HAVE_NUMBA is computed (and Numba imported) only when it is read
    if name == "HAVE_NUMBA":
        return _numba() is not None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _numba() -> ModuleType | None:
    """The numba module, imported on first need; None where it cannot be imported."""
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    _install_compile_listener()
    return numba


@functools.cache
def numba_kernels() -> ModuleType | None:
    """:mod:`webrank.kernels.cpu_numba`, or None without Numba."""
    if _numba() is None:  # pragma: no cover - numba is a dependency
        return None
    from webrank.kernels import cpu_numba

    return cpu_numba


@functools.cache
def _numba_installed() -> bool:
    return find_spec("numba") is not None


def num_threads() -> int:
    """Threads the Numba kernels use, without importing Numba.

    Returns
    -------
    int
        Numba's thread count once Numba is imported (``numba.set_num_threads`` may have
        changed it); before, what it will be: ``NUMBA_NUM_THREADS``, else the CPUs this
        process may run on. 1 where Numba is not installed.
    """
    numba = sys.modules.get("numba")
    # set_num_threads may have changed it (a Numba still being imported by another thread
    # has no get_num_threads yet: then its default, below)
    get = getattr(numba, "get_num_threads", None)
    if get is not None:
        return get()
    if not _numba_installed():  # pragma: no cover - numba is a dependency
        return 1
    # Numba's own default (numba.core.config), without importing Numba for it
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env:
        return int(env)
    return available_cpus()


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; all of them elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def use_numba(num_edges: int) -> bool:
    """Whether a graph takes the parallel Numba step rather than :func:`scipy_step`.

    Parameters
    ----------
    num_edges : int
        Edges of the graph (stored CSR entries).

    Returns
    -------
    bool
        True from :data:`SMALL_GRAPH_EDGES` edges on (default 150,000), where Numba can
        be imported (then it is imported, the first time).
    """
    return num_edges >= SMALL_GRAPH_EDGES and numba_kernels() is not None


# -- telling users that a kernel compiles ------------------------------------------------
_compile_watchers: list[Callable[[bool], None]] = []


@contextlib.contextmanager
def compile_notice(notify: Callable[[bool], None]) -> Iterator[None]:
    """Report Numba compiling a kernel while the block runs (the CLI shows a spinner).

    A kernel compiles once per signature after an install, an upgrade or an edit of its
    module (seconds); Numba caches it on disk (``__pycache__`` beside the module, or
    ``NUMBA_CACHE_DIR``), and loading the cached copy is not
    reported. Compiles are also logged at INFO (logger ``webrank.kernels.cpu``) with
    their seconds, in the block or not. Importing Numba is left to the kernels: a block
    that ranks a small graph imports nothing.

    Parameters
    ----------
    notify : callable
        ``notify(True)`` when a compile starts, ``notify(False)`` when it has finished
        (nested compiles count as one), from the compiling thread.

    Examples
    --------
    >>> with compile_notice(lambda on: print("compiling" if on else "done")):
    ...     webrank.pagerank(graph)  # doctest: +SKIP
    """
    _compile_watchers.append(notify)
    if "numba" in sys.modules:  # imported elsewhere: listen from now on
        _install_compile_listener()
    try:
        yield
    finally:
        _compile_watchers.remove(notify)


@functools.cache
def _install_compile_listener() -> None:
    """Forward Numba's ``numba:compile`` events (sent on a cache miss only) to the
    watchers of :func:`compile_notice`; nested compiles count as one."""
    from numba.core import event

    class _Forward(event.Listener):
        depth = 0
        start = 0.0

        def on_start(self, ev: Any) -> None:
            self.depth += 1
            if self.depth == 1:
                self.start = time.perf_counter()
                for notify in list(_compile_watchers):
                    notify(True)

        def on_end(self, ev: Any) -> None:
            self.depth -= 1
            if self.depth == 0:
                func = getattr(ev.data.get("dispatcher"), "py_func", None)
                _logger.info("compiled the CPU kernel %s in %.2f s (cached for later runs)",
                             getattr(func, "__qualname__", "?"),
                             time.perf_counter() - self.start)
                for notify in list(_compile_watchers):
                    notify(False)

    event.register("numba:compile", _Forward())


def chunk_bounds(indptr: np.ndarray, chunks: int) -> np.ndarray:
    """Row boundaries splitting the CSR into ``chunks`` pieces of about equal edge count."""
    n = indptr.size - 1
    m = int(indptr[-1])
    targets = np.linspace(0, m, chunks + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.unique(np.clip(bounds, 0, n))


@dataclass(frozen=True)
class StepTerms:
    """What a power step adds to its link sums, the same every step of a run.

    Attributes
    ----------
    v, d : ndarray of float64
        The teleport and dangling distributions (length 1, holding ``1/n``, when uniform).
    inv_out : ndarray of float64
        Each node's gather scale (:func:`webrank.graph.gather_scale`).
    alpha : float
        The damping factor.
    crit : int
        The residual: L1 sum (0), L2 *squared* sum (1) or max (2); see
        :func:`kernel_criterion`.
    """

    v: np.ndarray
    d: np.ndarray
    inv_out: np.ndarray
    alpha: float
    crit: int


def fused_step(
    indptr: np.ndarray,
    indices: np.ndarray,
    vals: np.ndarray,
    terms: StepTerms,
    *,
    xs: np.ndarray,
    x: np.ndarray,
    dm: float,
    mass: float,
    delta: bool,
    bounds: np.ndarray,
    x_out: np.ndarray,
    xs_out: np.ndarray,
    partial: np.ndarray,
) -> tuple[float, float, float]:
    """One fused power step; returns ``(residual, dangling mass, mass)`` of the new vector.

    ``vals`` is empty for unweighted graphs; ``terms`` holds what is the same every step
    (:class:`StepTerms`); ``dm`` and ``mass`` are the dangling mass and the mass of the
    vector gathered (the previous step's returns).

    Plain step (``delta=False``): ``xs`` holds ``x / out``; writes ``x' = G x`` and
    ``x' / out``. Delta step (``delta=True``): ``xs`` holds ``(x_k - x_{k-1}) / out``;
    the change obeys ``D' = alpha (P^T D + (dangling . D) d)`` (the teleport term cancels),
    so the step writes ``x' = x + D'`` and ``D' / out``. Rounding ``D`` to float32 errs
    relative to ``D``, which vanishes, where rounding ``x`` errs relative to ``x``: with a
    float32 gather the plain step stalls at an L1 residual near 1e-8, the delta step
    does not. The true ``D`` sums to zero; rounding gives it a little mass, which the
    iteration would only damp by ``alpha`` a step, so each delta step subtracts
    ``alpha * mass(D) * v`` (``mass`` is the previous step's third return value).

    Runs the parallel Numba kernel over the row chunks ``bounds`` (per-chunk sums in
    ``partial``, ``bounds.size - 1`` rows of 3); without Numba, :func:`scipy_step`.
    """
    jit = numba_kernels()
    t = terms
    if jit is None:  # pragma: no cover - only without numba
        return scipy_step(in_link_matrix(indptr, indices, vals, xs.size),
                          np.flatnonzero(t.inv_out == 0), t, xs=xs, x=x, dm=dm, mass=mass,
                          delta=delta, x_out=x_out, xs_out=xs_out)
    jit.fused_step(indptr, indices, vals, xs, x, t.v, t.d, t.inv_out, t.alpha, dm, mass,
                   t.crit, delta, bounds, x_out, xs_out, partial)
    p = partial[: bounds.size - 1]
    res = p[:, 0].max() if t.crit == 2 else p[:, 0].sum()
    return float(res), float(p[:, 1].sum()), float(p[:, 2].sum())


#: rows of a partition of the CPU's blocked layout: their float64 sums (128 KiB) stay in a
#: core's L2 (measured on cnr-2000 and web-NotreDame with 8-32K rows: within noise of
#: each other; 4K rows is slower); ``WEBRANK_CPU_PART_ROWS`` overrides (at most 65,536)
BLOCKED_PART_ROWS = int(os.environ.get("WEBRANK_CPU_PART_ROWS") or 16384)
#: a (source, run) pair covers at most this many links (run lengths are 16-bit)
MAX_RUN = 65535


@dataclass(frozen=True)
class CPUBlockedLayout:
    """The in-link CSR re-laid out for the CPU's blocked (partition-centric) step.

    Rows are cut into partitions of at most :data:`BLOCKED_PART_ROWS` rows, balanced by
    in-links (:func:`webrank.blocking.plan_blocks`). Inside partition ``p`` the links are
    ordered by source, then row, and grouped into **pairs**: a source and the run of its
    links into the partition. A step reads ``xs`` once per pair, not once per link, and
    adds it to the run's rows in a partition-sized array that stays in cache (Lakhotia,
    Kannan, Prasanna, "Accelerating PageRank using Partition-Centric Processing", USENIX
    ATC 2018). Web graphs ordered by host have few pairs: cnr-2000 has 0.13 pairs per
    link at 16K-row partitions, web-NotreDame 0.21.

    Attributes
    ----------
    part_ptr : ndarray of int64, shape (P + 1,)
        Partition p holds rows ``part_ptr[p]:part_ptr[p + 1]``.
    edge_ptr : ndarray of int64, shape (P + 1,)
        Its links are ``edge_ptr[p]:edge_ptr[p + 1]`` of ``dst_local`` (the CSR's range).
    pair_ptr : ndarray of int64, shape (P + 1,)
        Its pairs are ``pair_ptr[p]:pair_ptr[p + 1]``.
    pair_src : ndarray of int32 or int64
        The source of each pair.
    pair_len : ndarray of uint16
        The links of each pair (consecutive in ``dst_local``).
    dst_local : ndarray of uint16, shape (m,)
        Each link's row minus its partition's first row.
    vals : ndarray, shape (m,) or (0,)
        Each link's transition value in layout order (weighted graphs), else empty.
    """

    part_ptr: np.ndarray
    edge_ptr: np.ndarray
    pair_ptr: np.ndarray
    pair_src: np.ndarray
    pair_len: np.ndarray
    dst_local: np.ndarray
    vals: np.ndarray

    @property
    def num_pairs(self) -> int:
        return int(self.pair_src.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the layout's arrays."""
        return int(sum(a.nbytes for a in (self.part_ptr, self.edge_ptr, self.pair_ptr,
                                          self.pair_src, self.pair_len, self.dst_local,
                                          self.vals)))


def blocked_layout(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                   part_rows: int | None = None, max_run: int = MAX_RUN
                   ) -> CPUBlockedLayout:
    """Build the :class:`CPUBlockedLayout` of an in-link CSR (one Numba kernel, two
    parallel passes: each partition's links radix-sorted by source, then the pairs and
    local rows; about 15 pull steps' time).

    Parameters
    ----------
    indptr, indices : ndarray
        The in-link CSR (rows are destinations; indices sorted or not within a row).
    vals : ndarray
        Per-link transition values (weighted graphs), or empty.
    part_rows : int, optional
        Most rows in a partition (default :data:`BLOCKED_PART_ROWS`; at most 65,536).
    max_run : int, default 65,535
        Most links in one pair (tests lower it to exercise the cut).

    Raises
    ------
    RuntimeError
        Without Numba (the caller takes the pull step then).
    """
    from webrank.blocking import MAX_LOCAL, plan_blocks

    jit = numba_kernels()
    if jit is None:  # pragma: no cover - numba is a dependency
        raise RuntimeError("the blocked CPU step needs Numba")
    rows = int(part_rows or BLOCKED_PART_ROWS)
    if not 1 <= rows <= MAX_LOCAL:
        raise ValueError(f"part_rows must be in 1..{MAX_LOCAL}, not {rows}")
    if not 1 <= max_run <= MAX_RUN:
        raise ValueError(f"max_run must be in 1..{MAX_RUN}, not {max_run}")
    n = indptr.size - 1
    plan = plan_blocks(indptr, n_src=n, part_rows_max=rows, workers=num_threads())
    part_ptr = plan.part_ptr.astype(np.int64)
    edge_ptr = np.asarray(indptr, dtype=np.int64)[part_ptr]
    widest = int(np.diff(edge_ptr).max(initial=0))
    order = np.empty(int(indptr[-1]), dtype=np.int32 if widest < 2**31 else np.int64)
    key_bits = max(16, 16 * -(-max(n - 1, 1).bit_length() // 16))  # 16-bit digits
    pair_ptr, pair_src, pair_len, dst_local, lvals = jit.blocked_layout(
        indptr, indices, vals, part_ptr, key_bits, max_run, order)
    return CPUBlockedLayout(part_ptr=part_ptr, edge_ptr=edge_ptr, pair_ptr=pair_ptr,
                            pair_src=pair_src, pair_len=pair_len, dst_local=dst_local,
                            vals=lvals)


def blocked_step(layout: CPUBlockedLayout, terms: StepTerms, *, xs: np.ndarray,
                 x: np.ndarray, dm: float, mass: float, delta: bool, x_out: np.ndarray,
                 xs_out: np.ndarray, partial: np.ndarray) -> tuple[float, float, float]:
    """:func:`fused_step` through a :class:`CPUBlockedLayout` (same arguments and
    returns; ``partial`` needs a row per partition). A row's sum adds its links in
    source order (the pull step in two interleaved sums): the two agree to rounding."""
    jit = numba_kernels()
    L, t = layout, terms
    jit.blocked_step(L.part_ptr, L.edge_ptr, L.pair_ptr, L.pair_src, L.pair_len,
                     L.dst_local, L.vals, xs, x, t.v, t.d, t.inv_out, t.alpha, dm, mass,
                     t.crit, delta, x_out, xs_out, partial)
    p = partial[: L.part_ptr.size - 1]
    res = p[:, 0].max() if t.crit == 2 else p[:, 0].sum()
    return float(res), float(p[:, 1].sum()), float(p[:, 2].sum())


#: graphs below this many edges multiply through :class:`EdgeSums` (NumPy) rather than
#: SciPy: up to 2.7x slower a product (~0.1 ms at 30,000 edges), but a small graph's first
#: call never imports scipy.sparse (~0.1-0.2 s of a fresh process)
NUMPY_PRODUCT_EDGES = 1 << 15


class EdgeSums:
    """An in-link matrix whose product is one NumPy ``bincount``: row ``i`` of ``A @ x`` is
    ``sum(vals[k] * x[indices[k]])`` over the row's links in CSR order, the float64
    products and the order of SciPy's CSR product (so the same bits)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None,
                 shape: tuple[int, int]) -> None:
        self.shape = shape
        self.indices = indices
        self.data = data  # None: every entry is 1
        self._rows = np.repeat(np.arange(shape[0]), np.diff(indptr))

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        terms = x[self.indices]
        if self.data is not None:
            terms = self.data * terms
        # (float64 even without links, where bincount would give int64 zeros)
        return np.bincount(self._rows, weights=terms,
                           minlength=self.shape[0]).astype(np.float64, copy=False)


def in_link_matrix(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                   num_sources: int | None = None) -> Any:
    """The in-link CSR of a graph as the matrix :func:`scipy_step` multiplies by.

    Parameters
    ----------
    indptr, indices : ndarray of int
        The CSR's row pointers (rows + 1) and source nodes (one per edge).
    vals : ndarray of float
        The transition values of a weighted graph (one per edge, any float dtype), or
        empty for an unweighted one.
    num_sources : int, optional
        Columns: the nodes of the whole graph when the rows are one part of it (default:
        as many as rows).

    Returns
    -------
    scipy.sparse.csr_array or EdgeSums
        rows x num_sources, float64: ``vals`` as entries (exactly, a float32 value
        widened), or ones; an :class:`EdgeSums` below :data:`NUMPY_PRODUCT_EDGES` edges
        (vector products only).
    """
    n = indptr.size - 1
    shape = (n, num_sources or n)
    if indices.size < NUMPY_PRODUCT_EDGES:
        return EdgeSums(indptr, indices, vals.astype(np.float64) if vals.size else None, shape)
    import scipy.sparse as sp

    data = vals.astype(np.float64) if vals.size else np.ones(indices.size)
    return sp.csr_array((data, indices, indptr), shape=shape)


def scipy_step(
    matrix: Any,
    dangling: np.ndarray,
    terms: StepTerms,
    *,
    xs: np.ndarray,
    x: np.ndarray,
    dm: float,
    mass: float,
    delta: bool,
    x_out: np.ndarray,
    xs_out: np.ndarray,
) -> tuple[float, float, float]:
    """:func:`fused_step` on one thread: a SciPy product and NumPy vector operations.

    The same step, plain or delta, as :func:`fused_step`. Its row sums are float64 (in
    edge order; the Numba kernel adds even and odd links apart) and each product
    ``val * xs[j]`` is float64 in both, so a run agrees with the Numba step to the
    round-off of the sums (~1e-16 relative).

    Parameters
    ----------
    matrix : scipy.sparse.csr_array
        The graph's :func:`in_link_matrix`.
    dangling : ndarray of int
        Indices of the nodes whose ``inv_out`` is 0.
    terms, xs, x, dm, mass, delta, x_out, xs_out
        As for :func:`fused_step` (``x_out`` and ``xs_out`` are written).

    Returns
    -------
    tuple of float
        ``(residual, dangling mass, mass)`` of the new vector, as :func:`fused_step`.
    """
    inv_out, alpha, crit = terms.inv_out, terms.alpha, terms.crit
    # uniform v and d (length 1) as Python floats: scalar adds, no temporary n-vectors
    v = float(terms.v[0]) if terms.v.size == 1 else terms.v
    d = float(terms.d[0]) if terms.d.size == 1 else terms.d
    t = matrix @ xs  # float64: SciPy upcasts a float32 xs exactly
    t *= alpha
    t += alpha * dm * d
    if delta:
        t -= alpha * mass * v
        np.add(x, t, out=x_out)
        diff = np.abs(t)
    else:
        t += (1.0 - alpha) * v
        diff = t - x
        np.abs(diff, out=diff)
        x_out[:] = t
    np.multiply(t, inv_out, out=xs_out, casting="unsafe")
    res = diff.sum() if crit == 0 else diff @ diff if crit == 1 else diff.max()
    return float(res), float(t[dangling].sum()), float(t.sum())


def row_range_sums(begin: np.ndarray, end: np.ndarray, indices: np.ndarray,
                   vals: np.ndarray, xs: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[r] = sum of (vals[k] *) xs[indices[k]] for k in [begin[r], end[r])``.

    Parts of CSR rows summed in parallel, without the GIL (the hybrid method runs this
    while the GPU works). ``vals`` is empty for unweighted graphs. Returns ``out``.
    """
    jit = numba_kernels()
    if jit is not None:
        jit.row_range_sums(begin, end, indices, vals, xs, out)
        return out
    for r in range(begin.size):  # pragma: no cover - only without numba
        sl = slice(begin[r], end[r])
        g = xs[indices[sl]].astype(np.float64)
        out[r] = (vals[sl] * g).sum() if vals.size else g.sum()
    return out


def default_chunks() -> int:
    """Chunks per step: several per thread so uneven rows balance out
    (``WEBRANK_CPU_CHUNKS`` overrides, for experiments)."""
    override = os.environ.get("WEBRANK_CPU_CHUNKS")
    return int(override) if override else max(1, num_threads() * 8)
