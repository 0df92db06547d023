r"""Many personalized PageRanks in one run: ``webrank.personalized_pagerank``.

k personalization vectors :math:`v_1..v_k` (seed sets) are solved together as one
n×k block :math:`X`. Each power step is one sparse × dense-block product (SpMM) of the
in-link CSR with the block scaled by 1/out-degree, so the CSR (indices and values) is
read once per step for all k columns instead of once per column:

.. math::

    X' = \alpha A (D_{out}^{-1} X) + \alpha\, d\, m^\top + (1 - \alpha) V,
    \qquad m_c = \textstyle\sum_{j\ \mathrm{dangling}} X_{jc},

with :math:`d` the dangling distribution (by default each column's own :math:`v_c`,
as networkx does with ``dangling=None``). Column c is the fixed point of
``webrank.pagerank(graph, personalization=v_c)``.

Kernels. On the CPU a Numba kernel, parallel over row chunks of equal edge count, does
the whole step in one pass over a row-major block (gather, teleport and dangling terms,
residual and dangling mass per column): a separate NumPy pass over the block costs
about as much as the product itself, so fusing matters. On the GPU the same fused step
is a CUDA kernel (:mod:`webrank.kernels.cuda_ppr`: a warp per row or long-row segment,
lanes over columns, one synchronisation per step); cuSPARSE's SpMM plus CuPy array
operations was slower than k single runs of the GPU engine. Without Numba the CPU step
is ``csr @ block`` (SciPy, on a row-major block: a column-major one costs a copy per
product) plus elementwise NumPy operations. The measurements behind these choices are
in the documentation's benchmarks page (personalized PageRank).

A one-column block runs pagerank's own scalar fused kernel (the block kernel's column
loops cost more than they share at width 1). Every column's arithmetic is the same
whatever the batch, its width or the kernel, so results are bitwise identical across
``batch_size`` values and equal to ``webrank.pagerank``'s on the CPU.

Converged columns are frozen: their iterate is stored when they converge, and once a
quarter of the block has converged the block is compacted to the active columns. On
web-NotreDame (k = 64, tol 1e-10, iterations 120–144) that cuts the column-steps by
16 % but the time by only ~2 %: a step's cost is mostly per row, not per column.

Measured (``benchmarks/methods/ppr_batch.py``, 2 shared cores, web-NotreDame, tol 1e-10):
k = 16, 64, 256 batched runs are 4.3×, 6.0×, 5.5× faster than k single runs.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from webrank.backends import device_name, make_batch_operator, resolve_device
from webrank.backends.seeds import SeedColumns
from webrank.errors import ConvergenceError
from webrank.graph import Graph
from webrank.orders import best_indices
from webrank.ranking import (
    as_distribution,
    check_scalar_args,
    dtype_name,
    is_node,
    prepare_graph,
)

__all__ = ["PersonalizedConvergenceError", "PersonalizedPageRankResult",
           "personalized_pagerank"]

# compact the block once at most this fraction of its columns is still active
COMPACT_BELOW = 0.75
#: the file types :meth:`PersonalizedPageRankResult.save` writes
ROW_SUFFIXES = (".csv", ".tsv", ".parquet", ".json")


# -- the result -----------------------------------------------------------------------------
@dataclass(repr=False)
class PersonalizedPageRankResult:
    """k personalized PageRank vectors and how they were obtained.

    Attributes
    ----------
    scores : ndarray of float64, shape (n, k), or None
        Column c is the PageRank of personalization c (node order, sums to 1). None
        when only the top nodes were kept (``top=``).
    top_index : ndarray of int64, shape (k, top), or None
        Node indices of the ``top`` highest-scored nodes of each column, best first
        (ties by node index).
    top_nodes : ndarray, shape (k, top), or None
        The same nodes as labels (ids as in the input file).
    top_scores : ndarray of float64, shape (k, top), or None
        Their scores.
    iterations : ndarray of int64, shape (k,)
        Power steps each column took until it converged (or ``max_iter``).
    converged : ndarray of bool, shape (k,)
        Whether each column's last residual is below ``tol``.
    residuals : ndarray of float64, shape (k,)
        Last residual ``||x_k - x_{k-1}||`` of each column under ``criterion``.
    elapsed : float
        Compute seconds (all batches, after setup).
    setup_time : float
        Seconds preparing the graph on the device (upload, matrix build).
    batch_size : int
        Columns solved together per batch.
    num_batches : int
        Batches run.
    block_steps : int
        Products of the CSR with a block, all batches together.
    column_steps : int
        Columns carried through those products (the SpMM work, in single-vector units).
    device, device_name, dtype, criterion, tol, alpha :
        The parameters of the run.
    graph : Graph
        The graph ranked (for labels).

    Examples
    --------
    >>> import webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
    >>> pp = webrank.personalized_pagerank(g, [[0], [2]], top=3, tol=1e-10)
    >>> [node for node, _ in pp.top(0, 1)]  # seed 0's best page: node 1, which 0 links to
    [1]
    """

    scores: np.ndarray | None
    top_index: np.ndarray | None
    top_nodes: np.ndarray | None
    top_scores: np.ndarray | None
    iterations: np.ndarray
    converged: np.ndarray
    residuals: np.ndarray
    elapsed: float
    setup_time: float
    batch_size: int
    num_batches: int
    block_steps: int
    column_steps: int
    device: str
    device_name: str
    dtype: str
    criterion: str
    tol: float
    alpha: float
    graph: Graph | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> int:
        """Number of personalization vectors (columns)."""
        return int(self.iterations.size)

    @property
    def all_converged(self) -> bool:
        """True when every column converged."""
        return bool(self.converged.all())

    def top(self, column: int, count: int = 10) -> list[tuple[Any, float]]:
        """The ``count`` best ``(label, score)`` of one column, ties broken by node index."""
        if not 0 <= column < self.k:
            raise IndexError(f"column {column} out of range for {self.k} columns")
        if self.scores is not None:
            idx, val = _top_of_column(self.scores[:, column], count)
        else:
            if count > self.top_index.shape[1]:
                raise ValueError(f"only the top {self.top_index.shape[1]} nodes were kept")
            idx, val = self.top_index[column, :count], self.top_scores[column, :count]
        labels = self.graph.node_labels() if self.graph is not None else None
        return [(_py(labels[i]) if labels is not None else int(i), float(s))
                for i, s in zip(idx, val, strict=True)]

    def rows(self, count: int | None = None) -> dict[str, np.ndarray]:
        """The ranking as long-format columns ``seed_set, rank, node, score``.

        ``seed_set`` is the 0-based column (seed set) number and ``rank`` is 1-based.
        Uses the kept top lists, or every node of a dense result (``count`` limits it).
        """
        if self.scores is not None:
            take = self.scores.shape[0] if count is None else min(count, self.scores.shape[0])
            pairs = [_top_of_column(self.scores[:, c], take) for c in range(self.k)]
            index = np.array([p[0] for p in pairs]).reshape(self.k, take)
            score = np.array([p[1] for p in pairs]).reshape(self.k, take)
        else:
            take = self.top_index.shape[1] if count is None else min(count,
                                                                     self.top_index.shape[1])
            index, score = self.top_index[:, :take], self.top_scores[:, :take]
        labels = self.graph.node_labels() if self.graph is not None else np.arange(
            int(index.max(initial=-1)) + 1)
        return {"seed_set": np.repeat(np.arange(self.k), take),
                "rank": np.tile(np.arange(1, take + 1), self.k),
                "node": np.asarray(labels)[index.ravel()],
                "score": score.ravel().astype(np.float64)}

    def to_pandas(self, count: int | None = None) -> Any:
        """The rows of :meth:`rows` as a ``pandas.DataFrame``: one row per (seed set, node)
        of the top lists, best first within a seed set; needs pandas.

        Parameters
        ----------
        count : int, optional
            Rows per seed set (default: the kept top lists, or every node of a dense
            result).

        Returns
        -------
        pandas.DataFrame
            ``seed_set`` (int64, 0-based), ``rank`` (int64, 1 = best), ``node`` (label),
            ``score`` (float64).
        """
        from webrank.io.frames import columns_to_pandas

        return columns_to_pandas(self.rows(count))

    def to_arrow(self, count: int | None = None) -> Any:
        """The rows of :meth:`rows` as a ``pyarrow.Table`` (columns as :meth:`to_pandas`).

        Parameters
        ----------
        count : int, optional
            Rows per seed set, as in :meth:`to_pandas` (default: all kept).

        Returns
        -------
        pyarrow.Table
            ``seed_set`` and ``rank`` (int64), ``node`` (int64 or string), ``score``
            (double).
        """
        from webrank.io.frames import columns_to_arrow

        return columns_to_arrow(self.rows(count))

    def summary(self) -> dict[str, Any]:
        """The run's metadata as a JSON-ready dict (no scores)."""
        return {
            "device": self.device, "device_name": self.device_name, "dtype": self.dtype,
            "alpha": self.alpha, "tol": self.tol, "criterion": self.criterion,
            "k": self.k, "all_converged": self.all_converged,
            "iterations_max": int(self.iterations.max()),
            "iterations_min": int(self.iterations.min()),
            "residual_max": float(np.nanmax(self.residuals)) if self.iterations.any() else None,
            "elapsed_s": self.elapsed, "setup_s": self.setup_time,
            "batch_size": self.batch_size, "num_batches": self.num_batches,
            "block_steps": self.block_steps, "column_steps": self.column_steps,
            "n": self.graph.n if self.graph is not None else None, **self.info,
        }

    def save(self, path: str | os.PathLike, count: int | None = None) -> None:
        """Write the rows of :meth:`rows` to ``path``, format by extension, atomically.

        ``.csv``/``.tsv``: a header ``seed_set,rank,node,score`` then one line per row;
        ``.parquet``: those four columns; ``.json``: the summary plus the four columns
        as lists.
        """
        from webrank.io.columns import write_columns

        ext = Path(path).suffix.lower()
        if ext not in ROW_SUFFIXES:
            raise ValueError(f"cannot save rankings as {ext or 'a file without extension'!r}: "
                             f"use {', '.join(ROW_SUFFIXES)}")
        write_columns(path, self.rows(count), summary=self.summary())

    def __repr__(self) -> str:
        done = int(self.converged.sum())
        return (f"<PersonalizedPageRankResult k={self.k} device={self.device} "
                f"dtype={self.dtype} converged {done}/{self.k}, iterations "
                f"{int(self.iterations.min())}-{int(self.iterations.max())}, "
                f"batch {self.batch_size}, {self.elapsed * 1e3:.1f} ms>")


class PersonalizedConvergenceError(ConvergenceError):
    """Some columns did not converge within ``max_iter``; ``.result`` holds them all."""

    def __init__(self, result: PersonalizedPageRankResult) -> None:
        self.result = result
        bad = np.flatnonzero(~result.converged)
        worst = float(result.residuals[bad].max()) if bad.size else float("nan")
        Exception.__init__(
            self,
            f"personalized PageRank: {bad.size} of {result.k} columns (first: {bad[:5].tolist()})"
            f" did not converge in {int(result.iterations.max(initial=0))} iterations (worst "
            f"{result.criterion} residual {worst:.3e} > tol {result.tol:.1e}); raise max_iter, "
            "loosen tol, or pass raise_on_nonconvergence=False to get the last iterates")


# -- the public function ----------------------------------------------------------------------
def personalized_pagerank(
    graph: Graph | str | os.PathLike,
    seeds: Any,
    *,
    alpha: float = 0.85,
    top: int | None = None,
    tol: float = 1e-6,
    max_iter: int = 1000,
    criterion: str = "l1",
    dangling: Any = None,
    weight: bool | None = True,
    dtype: str = "float64",
    device: str = "auto",
    batch_size: int | None = None,
    raise_on_nonconvergence: bool = True,
) -> PersonalizedPageRankResult:
    r"""Personalized PageRank of many seed sets at once (one SpMM per step for all).

    Column c solves :math:`x_c = \alpha P^\top x_c + \alpha (\sum_{j\,\mathrm{dangling}}
    x_{c,j})\, d_c + (1 - \alpha) v_c` — the same fixed point as
    ``webrank.pagerank(graph, personalization=v_c, dangling=d_c)`` — by power steps on the
    n×k block of all columns, started from the uniform vector as ``pagerank`` is. The
    cost of a step grows far slower than k: the CSR is streamed once per step for all
    columns of a batch.

    Parameters
    ----------
    graph : Graph or path
        The graph; a path is loaded with :func:`webrank.load`.
    seeds : sequence of node collections or mappings, or scipy.sparse matrix (n, k)
        The personalization vectors. A sequence: item c is a collection (set, list,
        tuple, array) of node *labels* — ids as in the input file, as the keys of
        ``pagerank``'s personalization mapping — whose teleport mass is spread evenly
        (duplicates count once), or a ``{label: weight}`` mapping. A SciPy sparse matrix
        (or array) of shape (n, k): column c is v_c in node-*index* order, like
        ``pagerank``'s array personalization. Each v_c is normalised to sum 1.
    alpha : float, default 0.85
        Damping factor, in [0, 1).
    top : int, optional
        Keep only the ``top`` best nodes of each column (``top_index``, ``top_nodes``,
        ``top_scores``) instead of the dense n×k ``scores``: memory stays at one batch.
    tol : float, default 1e-6
        Per-column absolute bound: column c is done after the first step with
        ``||x_c' - x_c|| < tol`` under ``criterion``; the run ends when all are done.
    max_iter : int, default 1000
        Most power steps per column.
    criterion : {"l1", "l2", "linf"}, default "l1"
        Residual norm, per column.
    dangling : array_like or mapping, optional
        One distribution (as ``pagerank``'s ``dangling``) where dangling nodes send their
        rank in every column. Default: each column's own personalization (networkx's
        ``dangling=None``).
    weight : bool or None, default True
        Use edge weights when the graph has them; False or None ranks the links alone
        (as :func:`webrank.pagerank`'s ``weight``).
    dtype : {"float64", "float32"}, default "float64"
        Storage precision of the block gathered along edges; iterates and sums stay
        float64. float32 steps iterate on the change ``x_k - x_{k-1}`` after the first
        (as ``pagerank`` does), so small tolerances stay reachable.
    device : {"auto", "cpu", "gpu"}, default "auto"
        ``"auto"`` uses the GPU when CuPy sees one.
    batch_size : int, optional
        Columns per batch. Default: as many as fit — on the GPU, 80 % of the free memory
        (``cudaMemGetInfo`` plus CuPy's pool) after the graph; on the CPU, the smaller of
        2 GiB and a quarter of the available RAM.
    raise_on_nonconvergence : bool, default True
        If False, return the last iterates with ``converged`` False where not done.

    Returns
    -------
    PersonalizedPageRankResult
        ``scores`` (n×k) or the top lists, per-column ``iterations``/``converged``/
        ``residuals``, timings and the batch size used.

    Raises
    ------
    ValueError
        An invalid argument or seed set (an unknown label, an empty set, a column of
        zeros, ...), before any work.
    PersonalizedConvergenceError
        (a :class:`~webrank.errors.ConvergenceError`) some column did not converge.
    DeviceUnavailableError, DeviceMemoryError
        No usable GPU for ``device="gpu"``; not even one column fits in GPU memory.

    References
    ----------
    T. H. Haveliwala, "Topic-Sensitive PageRank", WWW 2002; G. Jeh, J. Widom, "Scaling
    Personalized Web Search", WWW 2003 (a teleport distribution per seed set).

    Examples
    --------
    >>> import webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
    >>> pp = webrank.personalized_pagerank(g, [{0}, {2}], tol=1e-10)
    >>> pp.k, [node for node, _ in pp.top(0, 2)]
    (2, [1, 2])
    """
    check_scalar_args(alpha, tol, max_iter, criterion, dtype, device)
    if tol == 0:
        raise ValueError("tol must be a positive number for personalized_pagerank (tol=0, "
                         "until nothing changes, is pagerank's)")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int | np.integer)
                            or top < 1):
        raise ValueError(f"top must be a positive integer or None, not {top!r}")
    if batch_size is not None and (isinstance(batch_size, bool)
                                   or not isinstance(batch_size, int | np.integer)
                                   or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer or None, not {batch_size!r}")
    graph = prepare_graph(graph, weight)
    n = graph.n
    pers = personalization_matrix(graph, seeds)  # n×k by column, columns normalised
    k = pers.shape[1]
    shared_d = as_distribution(dangling, graph, "dangling")
    dtype = dtype_name(dtype)
    top = None if top is None else min(int(top), n)
    device = resolve_device(device)

    t0 = time.perf_counter()
    op = make_batch_operator(graph, device=device, alpha=alpha, dangling=shared_d,
                             dtype=dtype)
    width = op.width(k, batch_size)
    t1 = time.perf_counter()

    scores = np.empty((n, k)) if top is None else None
    top_index = np.empty((k, top), dtype=np.int64) if top is not None else None
    top_scores = np.empty((k, top)) if top is not None else None
    iterations = np.zeros(k, dtype=np.int64)
    converged = np.zeros(k, dtype=bool)
    residuals = np.full(k, np.nan)

    def store(col: int, block_x: Any, q: int) -> None:
        """Keep column ``col``'s final iterate, column ``q`` of the block ``block_x``."""
        # a copy (the block's buffers are reused), normalised, on the host
        x = op.to_host(op.normalized(op.columns(block_x, np.array([q])).reshape(-1)))
        if top is None:
            scores[:, col] = x
        else:
            top_index[col], top_scores[col] = _top_of_column(x, top)

    tol_cmp = tol * tol if criterion == "l2" else tol
    block_steps = column_steps = 0
    batches = range(0, k, width)
    for start in batches:
        cols = np.arange(start, min(start + width, k))
        steps, col_steps = _solve_batch(
            op, pers.select(cols), cols, tol_cmp=tol_cmp, criterion=criterion,
            max_iter=max_iter, iterations=iterations, converged=converged,
            residuals=residuals, store=store)
        block_steps += steps
        column_steps += col_steps
    op.synchronize()
    t2 = time.perf_counter()
    if criterion == "l2":
        residuals = np.sqrt(residuals)

    labels = graph.node_labels()
    result = PersonalizedPageRankResult(
        scores=scores, top_index=top_index,
        top_nodes=None if top_index is None else np.asarray(labels)[top_index],
        top_scores=top_scores, iterations=iterations, converged=converged,
        residuals=residuals, elapsed=t2 - t1, setup_time=t1 - t0, batch_size=width,
        num_batches=len(batches), block_steps=block_steps, column_steps=column_steps,
        device=device, device_name=device_name(device), dtype=dtype,
        criterion=criterion, tol=tol, alpha=float(alpha), graph=graph,
        info={"kernel": op.kernel},
    )
    if raise_on_nonconvergence and not result.all_converged:
        raise PersonalizedConvergenceError(result)
    return result


def personalization_matrix(graph: Graph, seeds: Any) -> SeedColumns:
    """The seeds as n×k columns of float64, each summing to 1.

    Accepts the ``seeds`` forms of :func:`personalized_pagerank`; raises ValueError
    naming the seed set (0-based) and the label at fault.
    """
    n = graph.n
    scipy_sparse = sys.modules.get("scipy.sparse")  # a SciPy matrix means SciPy is loaded
    if scipy_sparse is not None and scipy_sparse.issparse(seeds):
        if seeds.ndim != 2 or seeds.shape[0] != n:
            raise ValueError(f"the seeds matrix has shape {seeds.shape}; the graph has {n} "
                             "nodes, so it must be (n, k)")
        coo = scipy_sparse.coo_array(seeds)
        if not np.all(np.isfinite(coo.data)):
            raise ValueError("the seeds matrix must be finite")
        if (coo.data < 0).any():
            raise ValueError("the seeds matrix must be non-negative")
        m = SeedColumns.from_entries(n, seeds.shape[1], coo.row, coo.col, coo.data)
    else:
        if isinstance(seeds, str | bytes | Mapping) or not isinstance(seeds, Sequence | np.ndarray):
            raise ValueError("seeds must be a list of node collections (one per seed set) "
                             "or a scipy.sparse (n, k) matrix")
        rows, cols, vals = [], [], []
        for c, item in enumerate(seeds):
            if isinstance(item, Mapping):
                keys = list(item.keys())
                weights = np.asarray(list(item.values()), dtype=np.float64)
            elif isinstance(item, str | bytes) or not hasattr(item, "__iter__"):
                raise ValueError(f"seed set {c} is {item!r}, not a collection of node labels; "
                                 "write a single node as [node]")
            else:
                keys = list(dict.fromkeys(np.asarray(list(item)).ravel().tolist()))
                weights = np.ones(len(keys))
            if not keys:
                raise ValueError(f"seed set {c} is empty")
            try:
                idx = graph.index_of(np.asarray(keys))
            except KeyError:
                bad = next(key for key in keys if not is_node(graph, key))
                raise ValueError(f"seed set {c}: node {_py(bad)!r} is not in the graph") \
                    from None
            if not np.all(np.isfinite(weights)) or (weights < 0).any():
                raise ValueError(f"seed set {c}: weights must be finite and non-negative")
            rows.append(idx)
            cols.append(np.full(idx.size, c, dtype=np.int64))
            vals.append(weights)
        k = len(rows)
        if k == 0:
            raise ValueError("seeds holds no seed set")
        m = SeedColumns.from_entries(n, k, np.concatenate(rows), np.concatenate(cols),
                                     np.concatenate(vals))
    if m.shape[1] == 0:
        raise ValueError("seeds holds no seed set")
    sums = m.sums()
    empty = np.flatnonzero(sums <= 0)
    if empty.size:
        raise ValueError(f"seed set {int(empty[0])} has no positive weight")
    return m.scaled(1.0 / sums)


# -- the batch loop, written once against the array module ------------------------------------
def _solve_batch(op, pers: SeedColumns, cols: np.ndarray, *, tol_cmp: float,
                 criterion: str, max_iter: int, iterations, converged, residuals,
                 store) -> tuple[int, int]:
    """Power steps on one batch until every column converged or ``max_iter``.

    Column ``cols[q]`` of the outputs gets its iterate (via ``store``) the step it
    converges; converged columns leave the block once a quarter of it has converged.
    Returns (block products, columns carried through them).
    """
    block = op.start(pers)
    active = cols.copy()  # original column of each block column
    done = np.zeros(active.size, dtype=bool)  # converged columns still in the block
    steps = col_steps = 0
    while steps < max_iter and active.size:
        res = op.step(block, criterion)
        steps += 1
        col_steps += active.size
        live = ~done
        iterations[active[live]] = steps
        residuals[active[live]] = res[live]
        newly = np.flatnonzero(live & (res < tol_cmp))
        for q in newly:
            store(int(active[q]), block.x, q)
        converged[active[newly]] = True
        done[newly] = True
        if done.all():
            return steps, col_steps
        if done.any() and (~done).sum() <= COMPACT_BELOW * done.size:
            keep = np.flatnonzero(~done)
            op.compact(block, keep)
            active, done = active[keep], done[keep]
    for q in np.flatnonzero(~done):  # max_iter reached (or max_iter = 0)
        store(int(active[q]), block.x, q)
    return steps, col_steps


# -- batch sizing and top lists ---------------------------------------------------------------
def _top_of_column(x: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the ``count`` largest entries of a 1-D array, best first,
    ties broken by node index (as :meth:`PageRankResult.top`)."""
    best = best_indices(x, count)
    return best, x[best].astype(np.float64)


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x
