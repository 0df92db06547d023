r"""Incremental PageRank: new ranks after a batch of edge insertions and deletions.

:func:`update` takes the result of an earlier run, the batch of changed edges, and
returns the PageRank of the changed graph, meeting the same stopping test as a full
:func:`webrank.pagerank` run (``||x_k - x_{k-1}|| < tol`` under the same criterion, on a
full power step of the new graph), usually after a fraction of the work.

API decisions
-------------
* ``previous_result`` is a :class:`~webrank.result.PageRankResult`; ``alpha``, ``tol``,
  ``criterion``, ``dtype`` default to its own (``alpha`` cannot change: new damping means
  a new problem, not an update). ``graph`` is the *old* graph (default
  ``previous_result.graph``); it must have ``len(previous_result.scores)`` nodes.
* ``added_edges`` / ``removed_edges`` are node *labels* (the ids of the input file, as
  in :meth:`Graph.index_of`), given as a tuple of columns ``(src, dst[, weight])`` or as
  an array-like of rows ``[(src, dst[, weight]), ...]`` (a tuple is read as columns, any
  other sequence as rows). Removals are applied first, then additions.
* Removing an edge that does not exist is a ``ValueError`` naming it (before any work);
  removing the same edge twice in one batch removes it once. A weight column on removed
  edges is ignored.
* Adding an edge that exists sets its weight (weighted graphs; the last of repeated
  additions wins, the ``duplicates="collapse"`` policy of :meth:`Graph.from_edges`) and is
  a no-op on unweighted graphs. Weighted graphs need weights on added edges, unweighted
  graphs refuse them (``ValueError``): convert the graph instead of guessing.
* Labels of added edges that are not nodes become **new nodes**, appended after the old
  ones in increasing label order, so old scores keep their positions. (A graph numbered
  ``0..n-1`` stays unlabelled when the new ids are exactly ``n, n+1, ...``.) A new node's
  starting value is its teleport share ``(1 - alpha) v_i``, the rank of a page nobody
  links to, before the frontier phase updates it; the old scores are rescaled as the
  teleport vector is (``n_old / n_new`` for uniform teleport), see below.
* ``PageRankResult`` does not store the personalization or dangling distributions. An
  update of a personalised result must be passed the same ``personalization`` /
  ``dangling`` (as for :func:`webrank.pagerank`, for the *new* node set; entries of the
  old nodes as before). Passing another one still gives the right answer for what was
  passed, but the warm start is then poor and the update costs about a full run.
* The result is a new ``PageRankResult`` whose ``graph`` is the new graph (build it
  alone with :func:`edit_graph`); ``method="incremental"``; ``iterations`` and
  ``residuals`` are the full verification power steps; ``info`` reports the frontier
  (sizes per step, rows processed), the work done in units of full steps, the final
  residual and the times of the graph edit, the frontier phase and the verification.

The new graph is spliced, not rebuilt: the removed in-links are located by binary search
within their CSR rows, deleted, and the added ones inserted at their sorted places
(``np.delete`` / ``np.insert``, a few memory copies of the edge arrays, far cheaper
than :meth:`Graph.from_edges` on the whole edge list). The out-link CSR the frontier needs
is cached on the graph and spliced the same way, so a chain of updates never transposes
the graph again (the first update of a graph builds it once, one O(m) transposition).

Algorithm
---------
PageRank with ``d = v`` (dangling rank sent where teleports go, the default) is
``x = y / sum(y)`` where y solves the *local* linear system

.. math::

    y = \alpha P^\top y + (1 - \alpha) v ,

dangling nodes simply contributing nothing (Langville & Meyer 2004, §5): the dangling
term of the Google matrix only rescales y. So the one global coupling of the problem,
the dangling mass, is handled exactly as the scalar ``sum(y)`` and never makes the
frontier global, even when nodes become dangling or stop being dangling.

1. *Warm start.* The previous scores map to the old system's fixed point,
   ``y0 = sigma (1 - alpha) / ((1 - alpha) + alpha D_old) x_old`` (``D_old``: the old
   dangling mass; ``sigma``: the share of the new teleport vector on old nodes,
   ``n_old / n_new`` when uniform). y0 solves the new system except on the rows whose
   in-sum changed.
2. *Dynamic frontier* (cf. Sahu, Kothapalli, Banerjee, "DF-P PageRank", 2024). The
   first active rows are the out-neighbours (in the new graph) of every source of a
   changed edge (its ``1/out-degree`` changed), the targets of removed edges, and the new
   nodes. Each step recomputes the active rows from the previous iterate (Jacobi, on the
   CPU: :mod:`webrank.backends.frontier`) and adds each row's change to its
   not-yet-propagated change ``acc``; rows whose ``acc`` exceeds the frontier tolerance
   ``tau`` activate their out-neighbours for the next step and reset ``acc``. Because
   every recompute reads current values, a row's residual is at most ``alpha`` times the
   ``acc`` of its in-neighbours; when the frontier is empty the L1 residual of the system
   is at most ``alpha * sum(acc) <= alpha * tau * n`` (``info["residual_bound"]``, in
   units of x: ``2 alpha sum(acc) / sum(y)``). ``tau = 0.05 tol / (alpha n)`` (times
   ``sum(y)``) makes that bound 0.1 tol, so one verification step suffices — but it is a
   worst-case bound: few nodes hold an ``acc`` near ``tau``. The default is the empirical
   ``tau = 10 tol / n`` for L1 (``10 tol / sqrt(n)`` for L2, ``0.1 tol`` for L-infinity):
   with random batches it does fewer row updates than the worst-case setting and, in
   every batch measured (cnr-2000 and R-MAT, 1e-5..1e-2 of the edges),
   left a residual that one verification step removed. If the frontier grows past
   ``max_frontier_fraction * n`` rows the phase stops and the verification steps take
   over: a row-subset step then costs about a full step, and on graphs where full steps
   converge fast (R-MAT, thanks to its dangling mass) the per-node frontier test needs
   more row updates than warm-started full steps.

When it pays off. Batches of edges with uniformly random endpoints reach most of a web
graph within a few hops, and a tight L1 tolerance asks for tiny per-node changes, so
the frontier only stays small for the smallest batches; past them the default hands
over to full steps and an update costs about a warm start. Localised changes (one
site's links) keep the frontier small. (Measured in the user guide, "The graph changed".)
3. *Verification.* From ``x0 = y / sum(y)``, full power steps of the new graph's Google
   matrix (on the chosen device) run until ``||x_k - x_{k-1}|| < tol`` — the same test,
   on the same step, as a full run, so the answer is as good as a full run's whatever
   the frontier phase did (wrong personalization, unconverged previous result, ...).

With a dangling distribution ``d`` different from ``v`` the dangling mass does not
factor out (x mixes two solutions of the local system, one of which is unknown). The
frontier phase then solves ``y = alpha P^T y + (1 - alpha) v + alpha D0 d`` with the
dangling mass frozen at its warm-start value ``D0``; the change of the true dangling
mass is a global error that the verification steps remove at rate ``alpha`` per step.
Still correct, but with less saving; ``info["dangling_exact"]`` says which case ran.

Device. The frontier phase runs on the CPU, where the scores already are; the
verification steps run on ``device`` (the GPU's fused step when it is chosen). The
frontier phase touches few rows per step and is latency bound; it is not ported to the
GPU.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from webrank.arrays import distinct
from webrank.backends import (
    PageRankOperator,
    device_name,
    make_frontier_operator,
    make_operator,
    resolve_device,
)
from webrank.build import out_link_csr
from webrank.edge_arrays import as_id_array
from webrank.errors import ConvergenceError, GraphFormatError
from webrank.graph import Graph, index_dtype
from webrank.ranking import as_distribution, check_scalar_args, gpus_for_call
from webrank.result import PageRankResult, merged_info
from webrank.solvers import in_epochs

__all__ = ["edit_graph", "update"]

_OUT_CSR = "incremental.out_csr"  # Graph.cached key of the out-link CSR (indptr, indices)


# -- edge batches -----------------------------------------------------------------------

def _parse_edges(edges: Any, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(src, dst, weight or None)`` label arrays from columns or rows (see module doc)."""
    if edges is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), None
    if isinstance(edges, tuple) and len(edges) in (2, 3) and all(
            np.ndim(c) == 1 for c in edges):
        cols = [np.asarray(c) for c in edges]
        if len({c.size for c in cols}) != 1:
            raise ValueError(f"{what}: columns differ in length "
                             f"({', '.join(str(c.size) for c in cols)})")
    else:
        try:
            arr = np.asarray(edges)
        except ValueError:
            raise ValueError(f"{what} must be (src, dst[, weight]) arrays or rows of "
                             "2 or 3 items") from None
        if arr.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), None
        if arr.ndim != 2 or arr.shape[1] not in (2, 3):
            raise ValueError(f"{what} must be (src, dst[, weight]) arrays or rows of 2 or 3 "
                             f"items; got an array of shape {arr.shape}")
        cols = [arr[:, k] for k in range(arr.shape[1])]
    weight = None
    if len(cols) == 3:
        try:
            weight = cols[2].astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: weights must be numbers") from None
        bad = ~np.isfinite(weight) | (weight < 0)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{what}: edge {k} has weight {weight[k]!r}; weights must be "
                             "finite and >= 0")
    return cols[0], cols[1], weight


def _node_index(graph: Graph, keys: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, index)``: the labels normalised to the graph's label type, and the node
    index of each (-1 where the label is not a node)."""
    labels = graph.labels
    if labels is None or labels.dtype.kind in "iu":
        try:
            keys = as_id_array(keys, what, graph.name)
        except GraphFormatError:
            raise ValueError(f"{what}: this graph's nodes are integer ids; got "
                             f"{np.asarray(keys).ravel()[:3].tolist()}...") from None
        if labels is None:
            return keys, np.where(keys < graph.n, keys, -1)
    try:
        return graph.lookup(keys)
    except TypeError:
        raise ValueError(f"{what}: labels of type {np.asarray(keys).dtype} do not compare "
                         f"with this graph's labels ({labels.dtype})") from None


def _find_in_rows(indptr: np.ndarray, cols: np.ndarray, rows: np.ndarray,
                  keys: np.ndarray) -> np.ndarray:
    """Position of the first column >= key within each CSR row (vectorised bisection;
    columns are sorted within rows). O(len(rows) * log(max row length))."""
    lo = indptr[rows].astype(np.int64)
    hi = indptr[rows + 1].astype(np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        right = open_ & (cols[np.minimum(mid, cols.size - 1)] < keys)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


def _locate(indptr: np.ndarray, cols: np.ndarray, rows: np.ndarray,
            keys: np.ndarray) -> np.ndarray:
    """Position of entry (row, key) in the CSR, or -1 where it is absent."""
    pos = _find_in_rows(indptr, cols, rows, keys)
    inside = pos < indptr[rows + 1]
    hit = inside & (cols[np.where(inside, pos, 0)] == keys) if cols.size else inside
    return np.where(hit, pos, -1)


def _splice_csr(indptr: np.ndarray, cols: np.ndarray, data: np.ndarray | None, n_new: int,
                del_pos: np.ndarray, del_rows: np.ndarray, add_rows: np.ndarray,
                add_cols: np.ndarray, add_data: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The CSR with the entries at ``del_pos`` deleted and (add_rows, add_cols) inserted
    at their sorted places (they must be absent after the deletion), grown to n_new rows."""
    n_old = indptr.size - 1
    counts = np.zeros(n_new, np.int64)
    counts[:n_old] = np.diff(indptr)
    counts -= np.bincount(del_rows, minlength=n_new)
    if del_pos.size:
        cols = np.delete(cols, del_pos)
        data = None if data is None else np.delete(data, del_pos)
    kept_indptr = np.zeros(n_new + 1, np.int64)
    np.cumsum(counts, out=kept_indptr[1:])
    if add_rows.size:
        order = np.lexsort((add_cols, add_rows))
        add_rows, add_cols = add_rows[order], add_cols[order]
        where = _find_in_rows(kept_indptr, cols, add_rows, add_cols)
        cols = np.insert(cols, where, add_cols.astype(cols.dtype))
        if data is not None:
            data = np.insert(data, where, add_data[order])
        counts += np.bincount(add_rows, minlength=n_new)
    new_indptr = np.zeros(n_new + 1, np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    m = int(new_indptr[-1])
    return (new_indptr.astype(index_dtype(m), copy=False),
            cols.astype(index_dtype(n_new), copy=False), data)


def _out_csr(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The out-link CSR ``(indptr, targets)`` of ``graph`` (targets sorted), cached."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        return out_link_csr(graph.indptr, graph.indices)  # a compiled counting sort

    return graph.cached(_OUT_CSR, build)


class _Edit:
    """A batch of edge changes in node-index space, and the graph it produced."""

    def __init__(self, graph: Graph, n_new: int, src_del: np.ndarray, dst_del: np.ndarray,
                 src_add: np.ndarray, dst_add: np.ndarray, src_reweighted: np.ndarray,
                 new_graph: Graph) -> None:
        self.graph, self.n_new, self.new_graph = graph, n_new, new_graph
        self.src_del, self.dst_del = src_del, dst_del
        self.src_add, self.dst_add = src_add, dst_add
        self.src_reweighted = src_reweighted

    @property
    def changed_sources(self) -> np.ndarray:
        """Nodes whose out-links (and so transition probabilities) changed."""
        return distinct(np.concatenate([self.src_del, self.src_add, self.src_reweighted]))


def _resolve_edit(graph: Graph, added_edges: Any, removed_edges: Any) -> _Edit:
    """Validate the batch against ``graph`` and splice the new graph (see module doc)."""
    n = graph.n
    # removals: every edge must exist
    rs, rd, _ = _parse_edges(removed_edges, "removed_edges")
    rs_keys, rs_idx = _node_index(graph, rs, "removed_edges")
    rd_keys, rd_idx = _node_index(graph, rd, "removed_edges")
    if rs_idx.size:
        pos = np.full(rs_idx.size, -1, np.int64)
        known = (rs_idx >= 0) & (rd_idx >= 0)
        pos[known] = _locate(graph.indptr, graph.indices, rd_idx[known], rs_idx[known])
        if (pos < 0).any():
            k = int(np.argmax(pos < 0))
            raise ValueError(f"removed_edges: edge {rs_keys[k]!r} -> {rd_keys[k]!r} is not "
                             "in the graph")
        del_pos, first = np.unique(pos, return_index=True)
        src_del, dst_del = rs_idx[first], rd_idx[first]
    else:
        del_pos = src_del = dst_del = np.zeros(0, np.int64)

    # additions: labels that are not nodes become new nodes
    as_, ad, aw = _parse_edges(added_edges, "added_edges")
    if graph.is_weighted and as_.size and aw is None:
        raise ValueError("added_edges: the graph is weighted; give (src, dst, weight)")
    if not graph.is_weighted and aw is not None:
        raise ValueError("added_edges: the graph is unweighted; give (src, dst) only")
    as_keys, as_idx = _node_index(graph, as_, "added_edges")
    ad_keys, ad_idx = _node_index(graph, ad, "added_edges")
    missing = np.concatenate([as_keys[as_idx < 0], ad_keys[ad_idx < 0]])
    new_labels = distinct(missing)
    n_new = n + new_labels.size
    if new_labels.size:
        as_idx = np.where(as_idx < 0, n + np.searchsorted(new_labels, as_keys), as_idx)
        ad_idx = np.where(ad_idx < 0, n + np.searchsorted(new_labels, ad_keys), ad_idx)
    if as_idx.size:
        # repeated additions: the last one wins (reversed unique keeps last occurrences)
        key = ad_idx * n_new + as_idx
        _, last = np.unique(key[::-1], return_index=True)
        keep = np.sort(key.size - 1 - last)
        as_idx, ad_idx = as_idx[keep], ad_idx[keep]
        aw = None if aw is None else aw[keep]
    # an added edge between old nodes may already exist (and not be removed now)
    exists = np.full(as_idx.size, -1, np.int64)
    old = (as_idx < n) & (ad_idx < n)
    if old.any():
        exists[old] = _locate(graph.indptr, graph.indices, ad_idx[old], as_idx[old])
        exists[np.isin(exists, del_pos)] = -1
    present = exists >= 0
    data = graph.weights
    src_reweighted = np.zeros(0, np.int64)
    if data is not None and present.any():
        differs = data[exists[present]] != aw[present]
        src_reweighted = as_idx[present][differs]
        data = data.copy()
        data[exists[present]] = aw[present]
    src_add, dst_add = as_idx[~present], ad_idx[~present]
    w_add = None if aw is None else aw[~present]

    if (del_pos.size == 0 and src_add.size == 0 and src_reweighted.size == 0
            and n_new == n):
        return _Edit(graph, n, src_del, dst_del, src_add, dst_add, src_reweighted, graph)

    indptr, indices, weights = _splice_csr(graph.indptr, graph.indices, data, n_new,
                                           del_pos, dst_del, dst_add, src_add, w_add)
    if weights is None:
        out_weight = np.zeros(n_new)
        out_weight[:n] = graph.out_weight
        # unweighted out-weights are integer counts: updating them in place is exact
        np.subtract.at(out_weight, src_del, 1.0)
        np.add.at(out_weight, src_add, 1.0)
    else:
        # as Graph.from_edges sums them (an updated float sum could miss 0 by rounding)
        out_weight = np.bincount(indices, weights=weights, minlength=n_new)
    labels = graph.labels
    if new_labels.size and not (labels is None and new_labels[0] == n
                                and new_labels[-1] == n_new - 1):
        labels = np.concatenate([graph.node_labels(), new_labels])
    new_graph = Graph(indptr=indptr, indices=indices, out_weight=out_weight, weights=weights,
                      labels=labels, name=graph.name)
    # the out-link CSR, spliced rather than transposed again
    out_indptr, out_targets = _out_csr(graph)
    pos_out = _locate(out_indptr, out_targets, src_del, dst_del)
    new_graph.remember(_OUT_CSR, _splice_csr(out_indptr, out_targets, None, n_new, pos_out,
                                             src_del, src_add, dst_add, None)[:2])
    return _Edit(graph, n_new, src_del, dst_del, src_add, dst_add, src_reweighted, new_graph)


def edit_graph(graph: Graph, added_edges: Any = None, removed_edges: Any = None) -> Graph:
    """``graph`` with ``removed_edges`` deleted, then ``added_edges`` added.

    The edges and the rules (new nodes appended, existing edges re-weighted, missing
    removals an error) are those of :func:`update`. Node order of ``graph`` is kept. The
    result equals ``Graph.from_edges`` on the edited edge list with the same node
    numbering, built by splicing the CSR instead (O(m) memory copies, no sort).
    """
    return _resolve_edit(graph, added_edges, removed_edges).new_graph


# -- the update -------------------------------------------------------------------------

def _previous(previous_result: Any, graph: Any) -> tuple[Graph, np.ndarray]:
    """The old graph, on the host (the edit is found and applied there, for a graph
    loaded for the GPU too; the solve then runs on the device asked for), and the
    previous scores, checked against it."""
    if not isinstance(previous_result, PageRankResult):
        raise ValueError("previous_result must be a PageRankResult (from webrank.pagerank "
                         f"or webrank.update), not {type(previous_result).__name__}")
    old = previous_result.graph if graph is None else graph
    if not isinstance(old, Graph):
        raise ValueError("graph must be the old webrank.Graph (previous_result has none)")
    old = old.to_host()
    x_old = np.asarray(previous_result.scores, dtype=np.float64)
    if x_old.shape != (old.n,):
        raise ValueError(f"previous_result has {x_old.size} scores; the graph has "
                         f"{old.n} nodes")
    return old, x_old


def _check_update_options(tol: float, frontier: Any, frontier_tol: Any,
                          max_frontier_fraction: Any) -> None:
    """ValueError, before any work, for the options only :func:`update` takes."""
    if tol == 0:
        raise ValueError("tol must be a positive number for update (tol=0, until nothing "
                         "changes, is pagerank's)")
    if frontier_tol is not None and not (float(frontier_tol) > 0 and np.isfinite(frontier_tol)):
        raise ValueError(f"frontier_tol must be a positive number, not {frontier_tol!r}")
    if not (isinstance(frontier, bool | np.bool_) or frontier == "auto"):
        raise ValueError(f"frontier must be True, False or 'auto', not {frontier!r}")
    if not 0.0 < float(max_frontier_fraction) <= 1.0:
        raise ValueError("max_frontier_fraction must be in (0, 1], not "
                         f"{max_frontier_fraction!r}")


def _frontier_choice(frontier: Any, device: str) -> tuple[bool, str]:
    """Whether the frontier phase runs, and why (``info["frontier_choice"]``)."""
    if frontier == "auto":
        on_cpu = device != "gpu"
        return on_cpu, ("frontier phase on the CPU, then full steps" if on_cpu else
                        "no frontier phase: on the GPU, warm-started steps of the whole "
                        "graph cost less than the CPU's frontier phase")
    return bool(frontier), ("frontier phase (asked)" if frontier
                            else "no frontier phase (asked)")


def update(
    previous_result: PageRankResult,
    graph: Graph | None = None,
    added_edges: Any = None,
    removed_edges: Any = None,
    *,
    personalization: Any = None,
    dangling: Any = None,
    tol: float | None = None,
    criterion: str | None = None,
    max_iter: int = 1000,
    device: str = "auto",
    frontier: bool | str = "auto",
    frontier_tol: float | None = None,
    max_frontier_fraction: float = 0.5,
    gpus: int | None = None,
    force_gpus: bool = False,
    raise_on_nonconvergence: bool = True,
) -> PageRankResult:
    """PageRank of the graph after a batch of edge changes, from the previous result.

    See the module docstring for the rules and the algorithm: a warm start from the
    previous scores, a dynamic-frontier phase that recomputes only the rows the change
    reaches (CPU), then full power steps of the new graph until the residual
    ``||x_k - x_{k-1}||`` is below ``tol`` — the stopping test of :func:`webrank.pagerank`.

    Parameters
    ----------
    previous_result : PageRankResult
        A run on the old graph (its ``alpha`` is kept; ``tol``, ``criterion``, ``dtype``
        are the defaults here).
    graph : Graph, optional
        The old graph; default ``previous_result.graph``.
    added_edges, removed_edges : optional
        ``(src, dst[, weight])`` column arrays or rows of node labels. Removals first.
    personalization, dangling : array_like or mapping, optional
        As for :func:`webrank.pagerank`, over the new node set. Not stored in a result:
        pass the ones the previous run used (default uniform / ``v``).
    tol : float, optional
        Absolute tolerance of the final residual; default ``previous_result.tol``.
    criterion : {"l1", "l2", "linf"}, optional
        Residual norm; default ``previous_result.criterion``.
    max_iter : int, default 1000
        Most full verification steps (and most frontier steps).
    device : {"auto", "cpu", "gpu"}, default "auto"
        Where the verification steps run (the frontier phase runs on the CPU).
    frontier : bool or "auto", default "auto"
        False skips the frontier phase: power iteration of the new graph warm-started
        from the previous scores. ``"auto"``: the frontier phase on the CPU, skipped when
        the steps run on the GPU, where the warm-started steps of the whole graph cost
        less than the CPU's frontier phase (measured in docs/benchmarks.md,
        ``benchmarks/methods/incremental.py``); ``info["frontier_choice"]`` says which and why.
    frontier_tol : float, optional
        Change of a node (in units of the scores) above which it activates its
        out-neighbours; default ``10 tol / n`` for L1 (module docstring, step 2).
    max_frontier_fraction : float, default 0.5
        The frontier phase stops when more than this fraction of the rows is active.
    gpus : int, optional
        GPUs of this host the verification steps run on, the new graph split across
        them as by ``webrank.pagerank(graph, gpus=N)`` (and, as there, kept on smaller
        graphs to as many GPUs as pay: ``info["gpus_reason"]``). Default: the GPUs the
        previous run asked for (one, unless it asked for more and ``device`` is not
        "cpu"). The new graph's placement is kept on ``result.graph`` for later calls.
    force_gpus : bool, default False
        Split across all ``gpus`` even where fewer would be faster.
    raise_on_nonconvergence : bool, default True
        If False, return an unconverged result instead of raising ConvergenceError.

    Returns
    -------
    PageRankResult
        Scores of the new graph (``result.graph``), ``method="incremental"``; ``info``
        holds ``frontier_sizes`` (active rows per frontier step), ``frontier_rows``
        (their sum), ``verify_steps``, ``work_full_steps`` (rows processed / n),
        ``work_vs_previous_run`` (rows processed / (n * previous iterations)),
        ``residual_bound`` (bound on the residual left by the frontier phase),
        ``final_residual``, ``dangling_exact``, edit counts and phase times.

    Raises
    ------
    ValueError
        Bad arguments or edges (a removed edge that does not exist, weights on an
        unweighted graph, ...), before any work.
    ConvergenceError
        Not converged within ``max_iter`` verification steps.

    References
    ----------
    A. N. Langville, C. D. Meyer, "Deeper Inside PageRank", Internet Mathematics 1(3),
    2004 (restarting from the old ranks); S. Sahu, K. Kothapalli, D. S. Banerjee,
    "DF-P PageRank" (dynamic frontier), 2024.

    Examples
    --------
    >>> import webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
    >>> r = webrank.pagerank(g, tol=1e-10)
    >>> r2 = webrank.update(r, added_edges=[(0, 2)])
    >>> r2.method, [node for node, _ in r2.top(3)]
    ('incremental', [2, 1, 0])
    """
    old, x_old = _previous(previous_result, graph)
    alpha = float(previous_result.alpha)
    tol = previous_result.tol if tol is None else tol
    criterion = previous_result.criterion if criterion is None else criterion
    dtype = previous_result.dtype
    check_scalar_args(alpha, tol, max_iter, criterion, dtype, device)
    _check_update_options(tol, frontier, frontier_tol, max_frontier_fraction)

    t0 = time.perf_counter()
    edit = _resolve_edit(old, added_edges, removed_edges)
    new = edit.new_graph
    v = as_distribution(personalization, new, "personalization")
    d = as_distribution(dangling, new, "dangling")
    if gpus is None:  # as many as the previous run asked for, where GPUs may run
        gpus = int(previous_result.info.get("gpus_asked", 1)) if device != "cpu" else 1
    gpus, gpus_info = gpus_for_call(new, gpus, force=force_gpus, device=device,
                                    method="power", dtype=dtype)
    device = "gpu" if gpus > 1 else resolve_device(device)
    t_edit = time.perf_counter() - t0
    frontier, choice = _frontier_choice(frontier, device)
    y, b, dangling_exact = _warm_start(x_old, old, new.n, v, d, alpha)

    t1 = time.perf_counter()
    stats = _frontier_phase(edit, y, b, alpha, tol, criterion, max_iter, frontier_tol,
                            max_frontier_fraction, enabled=frontier)
    t2 = time.perf_counter()

    op = _verify_operator(new, gpus, device, alpha, v, d, dtype)
    x0 = op.asarray(y / y.sum())
    op.synchronize()
    t3 = time.perf_counter()
    steps = in_epochs(op.power_steps, x0, tol=tol, max_steps=max_iter, criterion=criterion)
    op.synchronize()
    t4 = time.perf_counter()

    scores = op.to_host(steps.x).astype(np.float64, copy=False)
    scores = scores / scores.sum()
    k = len(steps.residuals)
    info = {
        **stats,
        **_work_info(stats["frontier_rows"], steps.residuals, new.n,
                     previous_result.iterations),
        "dangling_exact": dangling_exact,
        **_edit_counts(edit, old.n),
        "graph_edit_s": t_edit,
        "frontier_s": t2 - t1,
        "verify_s": t4 - t3,
        "frontier_device": "cpu",
        "frontier_choice": choice,
    }
    if gpus_info:  # the placement's entries (phases, reuse) and how many GPUs ran
        info = merged_info(info, op.info, gpus_info)
    result = PageRankResult(
        scores=scores, iterations=k, converged=steps.converged,
        residuals=np.asarray(steps.residuals, dtype=np.float64), elapsed=t4 - t0,
        device=device, dtype=dtype, method="incremental", criterion=criterion, tol=tol,
        alpha=alpha, matvecs=k, setup_time=t_edit + (t3 - t2),
        device_name=device_name(device), graph=new, info=info, personalization=v,
        dangling=d)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return result


def _verify_operator(new: Graph, gpus: int, device: str, alpha: float, v: np.ndarray | None,
                     d: np.ndarray | None, dtype: str) -> PageRankOperator:
    """The operator of the new graph that the verification steps run on: the graph
    placed across ``gpus`` GPUs (the placement kept on the graph) when more than one,
    else one operator on ``device``."""
    if gpus > 1:
        from webrank.distributed.run import multi_gpu_operator

        return multi_gpu_operator(new, gpus, alpha, v, d, dtype)
    return make_operator(new, device=device, alpha=alpha, personalization=v, dangling=d,
                         dtype=dtype)


def _work_info(frontier_rows: int, residuals: Any, n: int,
               previous_iterations: int) -> dict[str, Any]:
    """The work entries of ``info``: the verification steps, the last residual, and the
    rows processed (frontier rows plus n per full step) in rows, in full steps and as a
    fraction of the previous run's ``n * iterations`` (NaN where that run took none)."""
    k = len(residuals)
    work_rows = frontier_rows + k * n
    return {
        "verify_steps": k,
        "final_residual": float(residuals[-1]) if k else float("nan"),
        "work_rows": int(work_rows),
        "work_full_steps": work_rows / n,
        "work_vs_previous_run": (work_rows / (n * previous_iterations)
                                 if previous_iterations else float("nan")),
    }


def _edit_counts(edit: _Edit, n_old: int) -> dict[str, int]:
    """The edit's entries of ``info``: edges removed, added and reweighted, new nodes."""
    return {
        "edges_removed": int(edit.src_del.size),
        "edges_added": int(edit.src_add.size),
        "edges_reweighted": int(edit.src_reweighted.size),
        "new_nodes": edit.new_graph.n - n_old,
    }


def _warm_start(x_old: np.ndarray, old: Graph, n: int, v_given: np.ndarray | None,
                d_given: np.ndarray | None,
                alpha: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(y0, b, dangling_exact)``: the previous scores (of the ``old`` graph) mapped onto
    the local system ``y = alpha P^T y + b`` of the new graph of ``n`` nodes (module
    docstring, step 1); b has length 1 when the teleport vector is uniform (``v_given``
    None). ``dangling_exact``: the dangling distribution is the teleport vector's
    (``d_given`` None, or equal to it within 1e-15), so the dangling mass needs no
    freezing."""
    n_old = x_old.size
    v = np.full(n, 1.0 / n) if v_given is None else v_given
    d = v if d_given is None else d_given
    dangling_exact = d_given is None or bool(np.allclose(d, v, rtol=0, atol=1e-15))
    uniform = v_given is None
    sigma_v = float(v[:n_old].sum())  # old teleport vector = v[:n_old] / sigma_v
    d_old = float(x_old[old.dangling_mask].sum())
    if dangling_exact:
        b = (1.0 - alpha) * (np.array([v[0]]) if uniform else v)
        scale = sigma_v * (1.0 - alpha) / ((1.0 - alpha) + alpha * d_old)
    else:
        # dangling mass frozen at the value that keeps the old fixed point one
        sigma_d = float(d[:n_old].sum())
        d0 = d_old * sigma_v / sigma_d if sigma_d > 0 else d_old
        b = (1.0 - alpha) * v + alpha * d0 * d
        scale = sigma_v
    y = np.empty(n)
    y[:n_old] = scale * x_old
    y[n_old:] = b[0] if b.size == 1 else b[n_old:]  # a new page nobody links to yet
    return y, b, dangling_exact


def _frontier_phase(edit: _Edit, y: np.ndarray, b: np.ndarray, alpha: float, tol: float,
                    criterion: str, max_steps: int, frontier_tol: float | None,
                    max_fraction: float, *, enabled: bool) -> dict[str, Any]:
    """Jacobi steps over the dynamic frontier, updating ``y`` in place (module doc, 2)."""
    new = edit.new_graph
    n = new.n
    stats: dict[str, Any] = {"frontier_sizes": [], "frontier_rows": 0, "frontier_steps": 0,
                             "frontier_tol": None, "residual_bound": float("nan")}
    op = make_frontier_operator(new, alpha=alpha, out_links=_out_csr(new)) if enabled else None
    if op is None:
        stats["frontier_stop"] = "disabled"
        return stats
    total = float(y.sum())  # y is in units of total * x
    if frontier_tol is None:
        frontier_tol = {"l1": 10.0 * tol / n, "l2": 10.0 * tol / np.sqrt(n),
                        "linf": 0.1 * tol}[criterion]
    tau = float(frontier_tol) * total
    stats["frontier_tol"] = tau / total
    run = op.run(y, b, edit.changed_sources,
                 np.concatenate([edit.dst_del, np.arange(edit.graph.n, n)]), tau=tau,
                 max_steps=max_steps, max_fraction=max_fraction)
    sizes, stop, held = run.sizes, run.stop, run.held
    stats.update(frontier_sizes=sizes, frontier_rows=int(sum(sizes)),
                 frontier_steps=len(sizes), frontier_stop=stop,
                 # x = y / sum(y): ||G x - x||_1 <= 2 ||r_y||_1 / sum(y) <= 2 alpha held / sum
                 residual_bound=(2.0 * alpha * max(held, 0.0) / float(y.sum())
                                 if stop == "empty" else float("nan")))
    return stats
