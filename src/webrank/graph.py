"""The graph container: a directed graph stored as its in-link CSR.

PageRank pulls rank along in-links (``x'[i] = sum over j -> i of x[j] / out(j)``), so the
matrix webrank keeps is ``A`` with ``A[i, j] != 0`` iff there is an edge ``j -> i``:
row = target, column = source. Rows are stored as CSR (``indptr``, ``indices``),
sources sorted within each row.

Node-set and edge policy (the same as ``networkx.DiGraph`` built from the same edge list):

* **Node set** — by default the nodes are the ids that occur in some edge
  (``node_ids="appear"``); they are numbered ``0..n-1`` in increasing id order and the
  original ids are kept in :attr:`Graph.labels`. ``node_ids="range"`` uses ``0..max id``,
  or ``0..num_nodes-1`` where ``num_nodes`` is given (which implies ``"range"``, as
  igraph's ``Graph(n, edges)``), so ids that never occur become isolated nodes (they are
  dangling and receive only teleport and dangling rank).
* **Duplicate edges** — ``duplicates="collapse"`` (default) keeps one edge, as a
  ``DiGraph`` does; with weights the last occurrence's weight wins, as when networkx
  adds the same edge twice. ``duplicates="sum"`` adds the weights of parallel edges
  (a multigraph, as ``networkx.pagerank`` treats a ``MultiDiGraph``).
* **Self-loops** are kept, as networkx keeps them: a page linking to itself keeps part
  of its rank.
* **Weights** must be finite and non-negative. A node whose out-edges all have weight 0
  has out-weight 0 and is treated as dangling, as in networkx.
* **Undirected graphs** (``directed=False``) — each edge ``{u, v}`` becomes ``u -> v``
  and ``v -> u`` with its weight, and a self-loop ``{u, u}`` one edge ``u -> u``: the
  directed graph networkx's PageRank ranks for an ``nx.Graph`` (``G.to_directed()``).
  Parallel edges then follow ``duplicates``: collapsed, the last listing of ``{u, v}``
  (in either order) gives both directions their weight, as ``nx.Graph.add_edge``;
  summed, as an ``nx.MultiGraph``. igraph's PageRank of an undirected graph is the same
  (with ``duplicates="sum"``, igraph keeping parallel edges) except at a self-loop,
  which igraph counts twice (its degree convention): list such a loop twice with
  ``duplicates="sum"`` to match igraph there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from webrank.arrays import array_module
from webrank.edge_arrays import (
    NodeIds,
    as_id_array,
    both_directions,
    check_symmetric,
    check_weights,
    compact_ids,
    coo_to_csr,
    keep_last_duplicate,
    node_policy,
)
from webrank.errors import GraphFormatError

__all__ = ["Graph", "gather_scale"]

Duplicates = Literal["collapse", "sum"]

_INT32_MAX = np.iinfo(np.int32).max


def index_dtype(limit: int) -> np.dtype:
    """The smallest of int32/int64 that holds values up to ``limit``."""
    return np.dtype(np.int32) if limit <= _INT32_MAX else np.dtype(np.int64)


@dataclass(frozen=True, eq=False, repr=False)
class Graph:
    """A directed graph for PageRank, stored as its in-link CSR.

    Build one with :meth:`Graph.from_edges` or :func:`webrank.load`; the constructor
    takes already-validated arrays.

    Attributes
    ----------
    indptr : ndarray of int32 or int64, shape (n + 1,)
        Row pointers of the in-link CSR (int64 once the edge count needs it).
    indices : ndarray of int32 or int64, shape (m,)
        Source node of each in-link, sorted within each row (int32 while n < 2**31).
    weights : ndarray of float64, shape (m,), or None
        Edge weights aligned with ``indices``; None for an unweighted graph.
    out_weight : ndarray of float64, shape (n,)
        Out-degree (unweighted) or total out-weight of each node.
    labels : ndarray or None
        Original node id/label of each node when it differs from ``0..n-1``.
    name : str or None
        Where the graph came from (file name), for messages and reports.

    Examples
    --------
    >>> import webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
    >>> g.n, g.num_edges, g.is_weighted
    (3, 4, False)
    >>> g.out_weight.tolist()  # out-links of nodes 0, 1, 2
    [1.0, 1.0, 2.0]
    """

    indptr: np.ndarray
    indices: np.ndarray
    out_weight: np.ndarray
    weights: np.ndarray | None = None
    labels: np.ndarray | None = None
    name: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, compare=False)

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_edges(
        cls,
        src: Any,
        dst: Any,
        weight: Any = None,
        *,
        num_nodes: int | None = None,
        node_ids: NodeIds | None = None,
        labels: Sequence[Any] | np.ndarray | None = None,
        duplicates: Duplicates = "collapse",
        name: str | None = None,
        device: Literal["cpu", "gpu"] = "cpu",
        directed: bool = True,
    ) -> Graph:
        """Build a graph from edge arrays ``src[k] -> dst[k]`` (vectorised, no edge loop).

        Parameters
        ----------
        src, dst : array_like of non-negative int
            Source and target node ids of each edge.
        weight : array_like of float, optional
            Edge weights (finite, >= 0). None for an unweighted graph.
        num_nodes : int, optional
            The nodes are ``0..num_nodes-1`` (ids that occur in no edge are isolated
            nodes, as igraph's ``Graph(num_nodes, edges)``): giving it implies
            ``node_ids="range"`` and cannot go with ``"appear"``. With ``labels``, it
            must be ``len(labels)``.
        node_ids : {"appear", "range"}, optional
            ``"appear"`` (the default without ``num_nodes``): nodes are the ids that
            occur in an edge (networkx's node set for the same file), renumbered
            ``0..n-1`` in increasing id order, original ids in :attr:`labels` unless
            they already are ``0..n-1``. ``"range"`` (the default with ``num_nodes``):
            nodes are ``0..num_nodes-1`` (default ``max id + 1``); absent ids are
            isolated nodes.
        labels : sequence, optional
            When given, ``src``/``dst`` are indices into ``labels`` (codes of string
            labels, say); every label is a node, even one without edges.
        duplicates : {"collapse", "sum"}, default "collapse"
            Parallel edges: keep one (the last weight wins), or add their weights.
        name : str, optional
            Shown in messages and reports.
        device : {"cpu", "gpu"}, default "cpu"
            Where the CSR is built: ``"gpu"`` builds it on the current CUDA device
            (:mod:`webrank.build_gpu`; needs CuPy) and the graph keeps CuPy arrays
            (:attr:`on_gpu`), for a run there; it is built on the host instead where the
            device lacks the memory. The graph is the same either way.
        directed : bool, default True
            False: an undirected graph, each edge ``{u, v}`` linking both ways (a
            self-loop once; weights apply to both directions; see the module docstring
            for parallel edges and how this compares with networkx and igraph).

        Raises
        ------
        GraphFormatError
            Mismatched lengths, negative or non-integer ids, ids beyond ``num_nodes``,
            non-finite or negative weights.
        ValueError
            An unknown ``node_ids``, ``duplicates`` or ``device``; ``num_nodes`` that is
            not a non-negative integer, given with ``node_ids="appear"``, or other than
            ``len(labels)``; ``directed`` other than True/False.

        Examples
        --------
        >>> Graph.from_edges([0], [1], num_nodes=4).n  # nodes 2 and 3 are isolated
        4
        >>> Graph.from_edges([0, 1], [1, 1], directed=False).num_edges  # 0-1 both ways
        3
        """
        from webrank import build

        node_ids = node_policy(node_ids, num_nodes, labels)
        num_nodes = None if num_nodes is None else int(num_nodes)
        if not isinstance(directed, (bool, np.bool_)):
            raise ValueError(f"directed must be True or False, not {directed!r}")
        if duplicates not in ("collapse", "sum"):
            raise ValueError(f"duplicates must be 'collapse' or 'sum', not {duplicates!r}")
        # columns from a reader come chunked or in pieces (int64 ids, checked there;
        # see webrank.build)
        chunked = isinstance(src, (build.Chunked, build.Pieces))
        if not chunked:
            src = as_id_array(src, "src", name)
            dst = as_id_array(dst, "dst", name)
        if src.size != dst.size:
            raise GraphFormatError(
                f"src and dst differ in length ({src.size} vs {dst.size})", path=name
            )
        w = None
        if weight is not None:
            w = (weight if isinstance(weight, (build.Chunked, build.Pieces))
                 else np.asarray(weight, dtype=np.float64).ravel())
            if w.size != src.size:
                raise GraphFormatError(
                    f"weight has {w.size} entries for {src.size} edges", path=name
                )
            check_weights(w, name)
        if device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', not {device!r}")
        if not directed:  # the one place where an undirected graph becomes directed
            src, dst, w = both_directions(src, dst, w)
        # a node whose weights add up beyond float64: scaled (exactly) to finite sums
        src, dst, w = build.finite_weight_sums(src, dst, w)
        if device == "gpu":
            from webrank.build_gpu import edge_csr_on_device

            arrays = edge_csr_on_device(src, dst, w, num_nodes=num_nodes, node_ids=node_ids,
                                        labels=labels, duplicates=duplicates, name=name)
            if arrays is not None:
                return cls(**arrays, name=name)
        if isinstance(src, build.Pieces):  # on the host: one array each
            src, dst, w = build.joined(src), build.joined(dst), build.joined(w)
        if src.size >= build.parallel_build_edges() and build.use_parallel_build(src.size):
            src = build.as_chunks(src)
            arrays = build.csr_from_chunks(
                src, build.as_chunks(dst, like=src),
                None if w is None else build.as_chunks(w, like=src), num_nodes=num_nodes,
                node_ids=node_ids, labels=labels, duplicates=duplicates, name=name)
            if arrays is not None:
                return cls(**arrays, name=name)
        src, dst, w = build.joined(src), build.joined(dst), build.joined(w)
        max_id = int(max(src.max(initial=-1), dst.max(initial=-1)))

        n, node_labels = build.fixed_node_set(max_id, src.size, labels=labels,
                                              node_ids=node_ids, num_nodes=num_nodes,
                                              name=name)
        if n is None:  # "appear": the ids that occur, renumbered
            src, dst, node_labels, n = compact_ids(src, dst, max_id)

        return cls._from_codes(src, dst, w, n, node_labels, duplicates, name)

    @classmethod
    def from_dataframe(
        cls,
        df: Any,
        source: str | None = None,
        target: str | None = None,
        weight: str | None = None,
        *,
        labels: Literal["int", "string"] = "int",
        node_ids: NodeIds = "appear",
        duplicates: Duplicates = "collapse",
        name: str | None = None,
        device: Literal["cpu", "gpu"] = "cpu",
        directed: bool = True,
    ) -> Graph:
        """Build a graph from an edge table: pandas, Polars, pyarrow, or any Arrow stream.

        Every library takes one path, Arrow's C stream interface (``__arrow_c_stream__``,
        implemented by pandas >= 2.2, Polars and pyarrow; an older pandas is converted
        with ``pyarrow.Table.from_pandas``), then the code that reads Parquet edge
        tables: the same edges give the same graph as ``webrank.load`` of a file.

        Parameters
        ----------
        df : DataFrame or table
            One row per edge ``source -> target``; other columns are ignored.
        source, target : str, optional
            Names of the id columns; by default "source" and "target" (networkx's
            ``from_pandas_edgelist`` names) where the table has both, else "src" and
            "dst". Integer (or integral float) columns are node ids
            (>= 0, < 2**63); string or categorical columns are node labels, numbered in
            order of first appearance (``src[0], dst[0], src[1], ...``), exactly as
            ``webrank.load(path, labels="string")`` numbers them.
        weight : str, optional
            Name of the weight column (numbers, finite, >= 0). Default None: unweighted,
            whatever columns the table has.
        labels : {"int", "string"}, default "int"
            ``"string"`` treats integer id columns as labels too (kept as integers).
        node_ids : {"appear", "range"}, default "appear"
            Node set for integer ids, see :meth:`from_edges`.
        duplicates : {"collapse", "sum"}, default "collapse"
            Parallel edges: keep one (the last weight wins), or add their weights.
        name : str, optional
            Shown in messages and reports.
        device : {"cpu", "gpu"}, default "cpu"
            Where the CSR is built (see :meth:`from_edges`).
        directed : bool, default True
            False: each row is an undirected edge, linking both ways (see
            :meth:`from_edges`).

        Returns
        -------
        Graph

        Raises
        ------
        GraphFormatError
            A missing column (the message lists the table's columns), a null (column and
            first row, 0-based position), a negative, non-integer or too large id, an id
            column of another type, a non-numeric, NaN, infinite or negative weight
            (row and value).
        TypeError
            ``df`` is not a table.
        ValueError
            An unknown ``labels``, ``node_ids`` or ``duplicates`` value, or a
            ``directed`` other than True/False.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"src": ["a", "b", "c"], "dst": ["b", "c", "a"]})
        >>> Graph.from_dataframe(df).labels.tolist()
        ['a', 'b', 'c']
        """
        from webrank.tables import as_arrow_table, edge_columns, require_columns

        if labels not in ("int", "string"):
            raise ValueError(f"labels must be 'int' or 'string', not {labels!r}")
        table = as_arrow_table(df, name)
        if source is None and target is None:
            # networkx's from_pandas_edgelist names, then webrank's own
            have = set(table.column_names)
            source, target = (("source", "target") if {"source", "target"} <= have
                              else ("src", "dst"))
        source = "src" if source is None else source
        target = "dst" if target is None else target
        wanted = [source, target] + ([weight] if weight is not None else [])
        require_columns(table.column_names, wanted, name, where="the table",
                        hint="source=, target= and weight=")
        src, dst, w, node_labels = edge_columns(table, source, target, weight,
                                                labels=labels, name=name)
        return cls.from_edges(src, dst, w, node_ids=node_ids, labels=node_labels,
                              duplicates=duplicates, name=name, device=device,
                              directed=directed)

    @classmethod
    def from_scipy(
        cls,
        a: Any,
        *,
        weight: bool = True,
        keep_zeros: bool = False,
        name: str | None = None,
        directed: bool = True,
    ) -> Graph:
        """Build a graph from an adjacency matrix ``A[i, j]`` = weight of link ``i -> j``.

        Parameters
        ----------
        a : scipy sparse array or matrix, or array_like, shape (n, n)
            Any SciPy sparse format, or a dense 2-D array. Nodes are ``0..n-1``; a node
            without links is isolated (dangling). Repeated entries of a COO matrix mean
            their sum, as in SciPy.
        weight : bool, default True
            True: the entries are the link weights (finite, >= 0). False: every link
            weighs 1 (the values only say where links are).
        keep_zeros : bool, default False
            False: a zero entry is not a link, stored (explicit) or not. True: an
            explicit zero of a sparse matrix is a link of weight 0 (with
            ``weight=False``, a link of weight 1). Dense arrays store no zeros.
        name : str, optional
            Shown in messages and reports.
        directed : bool, default True
            False: ``A`` is the adjacency matrix of an undirected graph, which must be
            symmetric (the links, and with ``weight`` their weights): ``A[i, j]`` and
            ``A[j, i]`` are the one edge ``{i, j}``, linking both ways, and ``A[i, i]``
            a self-loop counted once (networkx's ``from_numpy_array`` and PageRank).
            The graph is the one ``directed=True`` gives; the flag checks the matrix.

        Returns
        -------
        Graph

        Raises
        ------
        GraphFormatError
            A matrix that is not 2-D or not square (its shape is in the message), complex
            or non-numeric entries, a NaN, infinite or negative entry (its ``(i, j)`` and
            value); with ``directed=False``, a matrix that is not symmetric (the first
            ``(i, j)`` where ``A[i, j] != A[j, i]``).
        """
        from webrank.tables import adjacency_edges

        if not isinstance(directed, (bool, np.bool_)):
            raise ValueError(f"directed must be True or False, not {directed!r}")
        row, col, values, n = adjacency_edges(a, keep_zeros=keep_zeros, name=name)
        if not directed:
            check_symmetric(row, col, values if weight else None, name)
        return cls.from_edges(row, col, values if weight else None, node_ids="range",
                              num_nodes=n, name=name)

    @classmethod
    def _from_codes(
        cls,
        src: np.ndarray,
        dst: np.ndarray,
        w: np.ndarray | None,
        n: int,
        labels: np.ndarray | None,
        duplicates: Duplicates,
        name: str | None,
    ) -> Graph:
        """Build the CSR from ids already in ``0..n-1``."""
        m = src.size
        idx = index_dtype(max(n, m))
        data = np.ones(m, dtype=np.int32) if w is None else w
        indptr, indices, data = coo_to_csr(dst.astype(idx, copy=False),
                                            src.astype(idx, copy=False), data, n)
        if w is not None and duplicates == "collapse" and data.size < m:
            # parallel weighted edges were summed: redo keeping the last weight
            src, dst, w = keep_last_duplicate(src, dst, w, n)
            indptr, indices, data = coo_to_csr(dst.astype(idx), src.astype(idx), w, n)
        indptr = indptr.astype(index_dtype(data.size), copy=False)
        indices = indices.astype(index_dtype(n), copy=False)
        weights = None if w is None else np.asarray(data, dtype=np.float64)
        if w is None and duplicates == "sum" and data.size and data.max() > 1:
            # parallel unweighted edges become one edge of weight = multiplicity
            weights = data.astype(np.float64)
        if weights is None:
            out_weight = np.bincount(indices, minlength=n).astype(np.float64)
        else:
            out_weight = np.bincount(indices, weights=weights, minlength=n)
        return cls(indptr=indptr, indices=indices, out_weight=out_weight, weights=weights,
                   labels=labels, name=name)

    # -- basic properties ---------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of nodes."""
        return self.indptr.size - 1

    @property
    def num_nodes(self) -> int:
        """Number of nodes (alias of :attr:`n`)."""
        return self.n

    @property
    def num_edges(self) -> int:
        """Number of (distinct) edges."""
        return int(self.indices.size)

    @property
    def is_weighted(self) -> bool:
        """True when edges carry weights."""
        return self.weights is not None

    @property
    def dangling_mask(self) -> np.ndarray:
        """Boolean mask of the dangling nodes (no out-edge, or only zero-weight ones).

        (``pagerank(dangling=...)`` is another thing: the distribution their rank goes to.)
        """
        return self.out_weight == 0

    def gather_scale(self) -> Any:
        """What each node's value is multiplied by before its out-links carry it: see
        :func:`gather_scale` (NumPy or CuPy, as the graph's arrays)."""
        return gather_scale(self.out_weight, self.is_weighted)

    # -- derived data kept with the graph ------------------------------------------------
    def cached(self, key: Any, build: Callable[[], Any]) -> Any:
        """What ``build()`` returns, built on the first call for ``key`` and kept with the
        graph (its arrays do not change): layouts, device copies, transposes."""
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = build()
        return value

    def is_cached(self, key: Any) -> bool:
        """Whether :meth:`cached` already holds ``key``."""
        return key in self._cache

    def forget(self, match: Callable[[Any], bool]) -> None:
        """Drop the cached values whose key ``match`` accepts (their memory, on the host or
        a GPU, is freed with them; a value with a ``close()`` method is closed first)."""
        for key in [k for k in self._cache if match(k)]:
            close = getattr(self._cache.pop(key), "close", None)
            if close is not None:
                close()

    def remember(self, key: Any, value: Any) -> None:
        """Keep ``value`` for ``key`` (derived data computed elsewhere, e.g. spliced from
        the graph this one was edited from)."""
        self._cache[key] = value

    @property
    def in_degree(self) -> np.ndarray:
        """Number of in-links of each node (int64)."""
        return np.diff(self.indptr).astype(np.int64, copy=False)

    @property
    def out_degree(self) -> np.ndarray:
        """Number of out-links of each node (int64), whatever the weights."""
        if "out_degree" not in self._cache:
            self._cache["out_degree"] = np.bincount(self.indices, minlength=self.n)
        return self._cache["out_degree"]

    @property
    def targets(self) -> np.ndarray:
        """Target (row) of each stored in-link, aligned with :attr:`indices`."""
        if "targets" not in self._cache:
            self._cache["targets"] = np.repeat(
                np.arange(self.n, dtype=self.indices.dtype), np.diff(self.indptr)
            )
        return self._cache["targets"]

    @property
    def num_self_loops(self) -> int:
        """Number of edges ``i -> i``."""
        return int(np.count_nonzero(self.indices == self.targets))

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The edge list ``(src, dst, weight)`` in node-index space, sorted by target."""
        return self.indices, self.targets, self.weights

    def node_labels(self) -> np.ndarray:
        """Label of every node: the original ids/labels, or ``0..n-1``."""
        return self.labels if self.labels is not None else np.arange(self.n)

    def index_of(self, labels: Any) -> np.ndarray:
        """Node indices of the given labels (ids as in the input file).

        Raises ``KeyError`` naming the first label that is not a node.
        """
        want = np.asarray(labels)
        if self.labels is None:
            try:
                idx = want.astype(np.int64)
            except (TypeError, ValueError):
                raise KeyError(f"{want.ravel()[0]!r} is not a node id") from None
            bad = (idx < 0) | (idx >= self.n) | (idx != want)
            if bad.any():
                raise KeyError(f"{want.ravel()[int(np.argmax(bad))]!r} is not a node")
            return idx
        try:
            _, idx = self.lookup(want)
        except TypeError:
            raise KeyError(f"{want.ravel()[0]!r} is not a node label") from None
        if (idx < 0).any():
            raise KeyError(f"{want.ravel()[int(np.argmax(idx < 0))]!r} is not a node")
        return idx

    def lookup(self, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(labels, index)``: the labels as an array of this graph's label type (text
        labels of a graph that stores them as Python strings become the same), and the
        node index of each, -1 where a label is not a node. For a graph of labels
        (``self.labels`` not None); ``TypeError`` when the labels cannot be compared
        with the graph's (text against numbers)."""
        if self.labels is None:
            raise ValueError("this graph's nodes are 0..n-1; it has no labels to look up")
        keys = np.asarray(labels)
        text_graph = self.labels.dtype.kind in "USO"
        if keys.size and text_graph != (keys.dtype.kind in "USO"):
            raise TypeError(f"labels of type {keys.dtype} do not compare with this graph's "
                            f"labels ({self.labels.dtype})")
        if self.labels.dtype == object and keys.dtype.kind in "US":
            keys = keys.astype(object)  # NumPy does not order str against object arrays
        order = self._cache.get("label_order")
        if order is None:
            order = self._cache["label_order"] = np.argsort(self.labels, kind="stable")
        sorted_labels = self.labels[order]
        pos = np.minimum(np.searchsorted(sorted_labels, keys), self.n - 1)
        found = sorted_labels[pos] == keys
        return keys, np.where(found, order[pos], -1).astype(np.int64)

    def unweighted(self) -> Graph:
        """The same graph with every weight dropped (out-weights become out-degrees)."""
        if self.weights is None:
            return self
        out = np.bincount(self.indices, minlength=self.n).astype(np.float64)
        return Graph(indptr=self.indptr, indices=self.indices, out_weight=out,
                     labels=self.labels, name=self.name)

    def to_scipy(self) -> Any:
        """The in-link matrix as a SciPy CSR array (weights, or 1 per edge)."""
        import scipy.sparse as sp

        data = self.weights if self.weights is not None else np.ones(self.num_edges)
        return sp.csr_array((data, self.indices, self.indptr), shape=(self.n, self.n))

    def transition_values(self) -> np.ndarray | None:
        """Per-in-link probability ``w(j->i) / out_weight(j)`` for weighted graphs.

        None for unweighted graphs, whose solvers scale ``x`` by ``1/out_degree``
        instead of storing a value per edge.
        """
        if self.weights is None:
            return None
        if "tvalues" not in self._cache:
            ow = self.out_weight[self.indices]
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(ow > 0, self.weights / ow, 0.0)
            self._cache["tvalues"] = v
        return self._cache["tvalues"]

    @property
    def on_gpu(self) -> bool:
        """True for a graph whose arrays live on the GPU (CuPy arrays), as
        :func:`webrank.backends.gpu_build.graph_on_device` builds them."""
        return type(self.indptr).__module__.split(".")[0] == "cupy"

    def to_device(self) -> Graph:
        """This graph with CuPy arrays on the current CUDA device (itself when already
        there); the labels stay on the host. Needs CuPy."""
        if self.on_gpu:
            return self
        from webrank.arrays import to_device

        return self._with_arrays(to_device)

    def _with_arrays(self, move: Callable[[Any], Any]) -> Graph:
        """This graph with ``move`` applied to each of its arrays (the labels kept)."""

        def moved(a: Any) -> Any:
            return None if a is None else move(a)

        return Graph(indptr=moved(self.indptr), indices=moved(self.indices),
                     out_weight=moved(self.out_weight), weights=moved(self.weights),
                     labels=self.labels, name=self.name)

    def to_host(self) -> Graph:
        """This graph with NumPy arrays (itself when already on the host)."""
        if not self.on_gpu:
            return self
        return self._with_arrays(lambda a: a.get())

    def nbytes(self) -> int:
        """Bytes held by the CSR, weights, degrees and labels."""
        parts = [self.indptr, self.indices, self.out_weight, self.weights, self.labels]
        return sum(p.nbytes for p in parts if p is not None)

    def __repr__(self) -> str:
        kind = "weighted" if self.is_weighted else "unweighted"
        src = f", name={self.name!r}" if self.name else ""
        return f"<webrank.Graph n={self.n:,} edges={self.num_edges:,} {kind}{src}>"


def gather_scale(out_weight: Any, weighted: bool) -> Any:
    """Per node, the factor its value is multiplied by before its out-links carry it:
    ``1 / out_weight`` for an unweighted graph (whose links then need no values), 1 for a
    weighted one (whose transition values already hold ``w / out_weight``), and 0 for a
    dangling node (``out_weight == 0``), whose rank is redistributed instead. NumPy or
    CuPy, as ``out_weight``."""
    xp = array_module(out_weight)
    if weighted:
        return xp.where(out_weight > 0, 1.0, 0.0)
    return xp.where(out_weight > 0, 1.0 / xp.where(out_weight > 0, out_weight, 1.0), 0.0)
