"""Edge arrays on their way to a :class:`~webrank.graph.Graph`: the checks and the
reshaping :meth:`Graph.from_edges <webrank.graph.Graph.from_edges>` and
:meth:`Graph.from_scipy <webrank.graph.Graph.from_scipy>` apply before the CSR is built
(node ids, weights, a symmetric matrix, both directions of an undirected edge, the
ids that occur renumbered), and the serial COO → CSR build of small graphs. The
policies they implement are the graph module's (see :mod:`webrank.graph`).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from webrank.build import first_bad_weight
from webrank.errors import GraphFormatError

__all__ = ["NUMPY_BUILD_EDGES", "NodeIds", "as_id_array", "both_directions",
           "check_symmetric", "check_weights", "compact_ids", "coo_to_csr",
           "keep_last_duplicate", "node_policy"]

NodeIds = Literal["appear", "range"]


def check_weights(w: Any, name: str | None) -> None:
    """Refuse a NaN, infinite or negative weight (``w``: an array, a Chunked, or Pieces,
    checked piece by piece without joining them)."""
    from webrank import build

    parts = w.arrays if isinstance(w, build.Pieces) else [
        w if isinstance(w, np.ndarray) else w.concatenate()]
    before = 0
    for values in parts:
        k = first_bad_weight(values)
        if k is not None:
            raise GraphFormatError(f"edge {before + k} has weight {values[k]!r}; weights "
                                   "must be finite and >= 0", path=name)
        before += values.size


def as_id_array(a: Any, what: str, name: str | None) -> np.ndarray:
    """Validate node ids: 1-D, integer-valued, non-negative; returns int64."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        arr = arr.ravel()
    if arr.dtype.kind == "f":
        if arr.size and not np.all(np.isfinite(arr) & (arr == np.floor(arr))):
            raise GraphFormatError(f"{what} holds non-integer node ids", path=name)
        out = (arr < 0) | (arr >= 2.0**63)  # checked before the cast would wrap them
        if out.any():
            k = int(np.argmax(out))
            why = "a negative node id" if arr[k] < 0 else "beyond the int64 range of node ids"
            raise GraphFormatError(f"{what}[{k}] = {float(arr[k])} is {why}", path=name)
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "u":
        if arr.size and arr.max() > np.iinfo(np.int64).max:
            raise GraphFormatError(f"{what} holds ids beyond int64", path=name)
        arr = arr.astype(np.int64)
    elif arr.dtype.kind != "i":
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        raise GraphFormatError(
            f"{what} must hold integer node ids (got dtype {arr.dtype}); "
            "pass labels= for string labels",
            path=name,
        )
    if arr.size and arr.min() < 0:
        k = int(np.argmin(arr))
        raise GraphFormatError(f"{what}[{k}] = {arr[k]} is a negative node id", path=name)
    return arr


def check_symmetric(row: np.ndarray, col: np.ndarray, values: np.ndarray | None,
                     name: str | None) -> None:
    """Refuse entries ``(row, col, values)`` (each ``(i, j)`` once) of a matrix that is
    not symmetric, naming the first ``(i, j)``, in row-major order, where ``A[i, j]``
    and ``A[j, i]`` differ (one of them absent, or of another value)."""
    by_row = np.lexsort((col, row))
    by_col = np.lexsort((row, col))  # the transpose's entries, in its row-major order
    same = (row[by_row] == col[by_col]) & (col[by_row] == row[by_col])
    if values is not None:
        same &= values[by_row] == values[by_col]
    if same.all():
        return
    k = int(np.argmin(same))
    mine = (int(row[by_row[k]]), int(col[by_row[k]]))
    mirrored = (int(col[by_col[k]]), int(row[by_col[k]]))
    i, j = min(mine, mirrored)
    raise GraphFormatError(f"directed=False takes a symmetric matrix (an undirected graph's "
                           f"adjacency), but A[{i}, {j}] != A[{j}, {i}]", path=name)


def node_policy(node_ids: NodeIds | None, num_nodes: Any, labels: Any) -> NodeIds:
    """``node_ids`` of :meth:`Graph.from_edges`, its default resolved (``"range"`` where
    ``num_nodes`` is given, else ``"appear"``) and checked against ``num_nodes``."""
    if node_ids is None:
        node_ids = "appear" if num_nodes is None else "range"
    elif node_ids not in ("appear", "range"):
        raise ValueError(f"node_ids must be 'appear' or 'range', not {node_ids!r}")
    if num_nodes is None:
        return node_ids
    if (isinstance(num_nodes, (bool, np.bool_)) or not isinstance(num_nodes, (int, np.integer))
            or num_nodes < 0):
        raise ValueError(f"num_nodes must be a non-negative integer, not {num_nodes!r}")
    if labels is not None:
        if num_nodes != len(labels):
            raise ValueError(f"num_nodes={num_nodes} but there are {len(labels)} labels: "
                             "with labels, every label is a node (leave num_nodes out)")
    elif node_ids == "appear":
        raise ValueError(
            f"num_nodes={num_nodes} makes the nodes 0..{num_nodes - 1}, but node_ids='appear' "
            "makes them the ids that occur in an edge: leave node_ids out (or pass 'range') "
            "to keep num_nodes nodes, or leave num_nodes out")
    return node_ids


def both_directions(src: Any, dst: Any, w: Any) -> tuple[Any, Any, Any]:
    """The directed edges of the undirected edges ``{src[k], dst[k]}``: ``src[k] ->
    dst[k]`` then ``dst[k] -> src[k]`` for each k in turn (the reverse left out for a
    self-loop), weights to both. Kept in that order, the last listing of an edge is the
    last of both its directions (what ``duplicates="collapse"`` keeps). On the host;
    columns in pieces (for a build on the GPU) stay in pieces, chunked ones are joined."""
    from webrank import build

    if isinstance(src, build.Pieces) and isinstance(dst, build.Pieces):
        sizes = [a.size for a in src.arrays]
        if ([a.size for a in dst.arrays] == sizes
                and (w is None or (isinstance(w, build.Pieces)
                                   and [a.size for a in w.arrays] == sizes))):
            parts = [interleave(s, d, None if w is None else x) for s, d, x in
                     zip(src.arrays, dst.arrays,
                         [None] * len(sizes) if w is None else w.arrays, strict=True)]
            return (build.Pieces([p[0] for p in parts]), build.Pieces([p[1] for p in parts]),
                    None if w is None else build.Pieces([p[2] for p in parts]))
    return interleave(build.joined(src), build.joined(dst), build.joined(w))


def interleave(src: np.ndarray, dst: np.ndarray, w: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``src[0] -> dst[0], dst[0] -> src[0], src[1] -> dst[1], ...`` (no reverse of a
    self-loop), and the weights repeated alike."""
    both_src = np.column_stack([src, dst]).ravel()
    both_dst = np.column_stack([dst, src]).ravel()
    both_w = None if w is None else np.repeat(np.asarray(w), 2)
    loops = src == dst
    if loops.any():
        keep = np.ones(both_src.size, dtype=bool)
        keep[1::2] = ~loops
        both_src, both_dst = both_src[keep], both_dst[keep]
        both_w = None if both_w is None else both_w[keep]
    return both_src, both_dst, both_w


def compact_ids(
    src: np.ndarray, dst: np.ndarray, max_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Renumber the ids that occur to ``0..n-1`` (increasing id order)."""
    m = src.size
    if max_id < 0:
        return src, dst, None, 0
    if max_id <= 4 * m + 1024:
        # dense id space: a presence bitmap and a prefix sum, O(m + max_id)
        present = np.zeros(max_id + 1, dtype=bool)
        present[src] = True
        present[dst] = True
        n = int(np.count_nonzero(present))
        if n == max_id + 1:
            return src, dst, None, n
        newid = np.cumsum(present, dtype=np.int64) - 1
        labels = np.flatnonzero(present)
        return newid[src], newid[dst], labels, n
    # sparse id space (hashes, ...): sort-based
    labels, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    return inv[:m], inv[m:], labels, labels.size


#: edge counts below which :func:`coo_to_csr` sorts with NumPy: a small graph's first
#: call then never imports scipy.sparse (~0.1-0.2 s of a fresh process)
NUMPY_BUILD_EDGES = 1 << 15


def coo_to_csr(rows: np.ndarray, cols: np.ndarray, data: np.ndarray,
                n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of the n x n CSR of the entries ``(rows, cols, data)``:
    columns ascending within each row, duplicate entries summed.

    From :data:`NUMPY_BUILD_EDGES` entries on SciPy's COO -> CSR conversion does it (a C++
    counting sort by row, then an in-row sort and a duplicate merge: O(m + n), 2-5x
    faster than a sort of the keys from 10,000 entries); below, one NumPy sort of the
    keys, which needs no SciPy import. The same arrays either way (duplicate float
    entries are summed in another order)."""
    if rows.size >= NUMPY_BUILD_EDGES:
        import scipy.sparse as sp

        a = sp.csr_array((data, (rows, cols)), shape=(n, n))
        a.sum_duplicates()
        return a.indptr, a.indices, a.data
    key = rows.astype(np.int64) * n + cols  # by row, then column
    order = np.argsort(key)
    key, rows, cols, data = key[order], rows[order], cols[order], data[order]
    first = np.ones(key.size, dtype=bool)  # the first entry of each (row, column)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    if starts.size < rows.size:
        data = np.add.reduceat(data, starts)
        rows, cols = rows[starts], cols[starts]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols, data


def keep_last_duplicate(
    src: np.ndarray, dst: np.ndarray, w: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop all but the last occurrence of each (src, dst) pair (weighted collapse)."""
    key = dst.astype(np.int64) * n + src
    # np.unique returns first occurrences; on the reversed keys those are the last ones.
    _, first_in_reversed = np.unique(key[::-1], return_index=True)
    if first_in_reversed.size == key.size:
        return src, dst, w
    keep = np.sort(key.size - 1 - first_in_reversed)
    return src[keep], dst[keep], w[keep]
