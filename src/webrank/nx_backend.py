"""NetworkX backend: ``nx.pagerank(G, backend="webrank")`` runs webrank's solver.

Installing webrank registers this module through NetworkX's entry points
(``networkx.backends`` → :data:`backend_interface`, ``networkx.backend_info`` →
:func:`get_info`), so with networkx >= 3.2 any of these run PageRank on webrank::

    nx.pagerank(G, backend="webrank")                 # one call
    NETWORKX_BACKEND_PRIORITY=webrank python app.py   # every call (networkx >= 3.3)
    NETWORKX_AUTOMATIC_BACKENDS=webrank python app.py # the same, networkx 3.2 name
    nx.config.backend_priority.algos = ["webrank"]    # the same, from Python

The function keeps NetworkX's signature and semantics exactly (see :func:`pagerank`):
the same fixed point, the same ``len(G) * tol`` stopping rule on the L1 change, the same
iteration count, a dict keyed by the original nodes and
:exc:`networkx.PowerIterationFailedConvergence` when NetworkX would raise it. Whatever it
cannot reproduce exactly (``alpha`` outside [0, 1), negative or non-finite weights or
personalization values, ...) it declines: dispatched automatically (backend priority),
through :func:`should_run`, so NetworkX runs its own code instead; called with
``backend="webrank"``, by raising an error that names the argument (``ValueError`` for
a value, ``TypeError`` for a type: ``alpha=-0.5`` is "alpha must be in [0, 1) for the
webrank backend, not -0.5 ..."), where NetworkX's dispatcher would only say the call is
not implemented "for the given arguments". Edge data it cannot rank (negative or
non-numeric weights) is declined while converting, by ``NotImplementedError``, which
NetworkX chains under its own message when the backend was named.

Options (``nx.config.backends.webrank``): ``device`` ("auto", "cpu", "gpu"; default
"auto": the GPU when CuPy sees one) and ``dtype`` ("float64" default; "float32" halves
the memory traffic of the gather but no longer matches NetworkX to round-off).

Converting a NetworkX graph walks its adjacency dicts once at C speed (``map`` and
``np.fromiter``; no Python code runs per edge) and builds webrank's in-link CSR with
SciPy. The seconds it took are kept in :attr:`ConvertedGraph.convert_seconds` and logged
(logger ``webrank.nx_backend``, level INFO), apart from the solve time, which is logged
too and kept with the last result in :attr:`ConvertedGraph.last_result`. NetworkX
caches the converted graph on ``G`` (``G.__networkx_cache__``), so later calls on an
unchanged graph skip the conversion.
"""

from __future__ import annotations

import inspect
import logging
import math
import numbers
import time
from collections.abc import Mapping
from itertools import chain
from operator import methodcaller
from typing import Any

import networkx as nx
import numpy as np

# webrank.graph (and SciPy) are imported where used: NetworkX loads this module's
# get_info whenever it is imported, and that must stay cheap

__all__ = [
    "ConvertedGraph",
    "backend_interface",
    "can_run",
    "convert_from_nx",
    "convert_to_nx",
    "get_info",
    "on_start_tests",
    "pagerank",
    "should_run",
]

BACKEND_NAME = "webrank"
_logger = logging.getLogger(__name__)



class BackendConfig(nx.utils.Config):
    """Options of the webrank backend (``nx.config.backends.webrank``).

    Attributes
    ----------
    device : {"auto", "cpu", "gpu"}, default "auto"
        Where PageRank runs; "auto" uses the GPU when CuPy sees one, else the CPU.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the vector gathered along edges. float64 reproduces NetworkX to
        round-off; float32 is faster on a GPU but agrees only to about 1e-7 per node.
    """

    device: str = "auto"
    dtype: str = "float64"

    def _on_setattr(self, key: str, value: Any) -> Any:
        from webrank.backends import DEVICES, DTYPES

        allowed = {"device": DEVICES, "dtype": DTYPES}[key]
        if value not in allowed:
            raise ValueError(f"webrank backend: {key} must be one of {allowed}, not {value!r}")
        return value


def _config() -> BackendConfig:
    """The live config when the entry point is installed, else the defaults."""
    cfg = nx.config.backends.get(BACKEND_NAME)
    return cfg if cfg is not None else BackendConfig()


def get_info() -> dict[str, Any]:
    """Backend metadata read by NetworkX (``networkx.backend_info`` entry point)."""
    return {
        "backend_name": BACKEND_NAME,
        "project": "webrank",
        "package": "webrank",
        "short_summary": "PageRank on web-scale graphs, on NVIDIA GPUs or any CPU.",
        "functions": {
            "pagerank": {
                "additional_docs": (
                    "Same results, iteration count and len(G) * tol stopping rule as\n"
                    "NetworkX. Runs on the GPU when CuPy sees one (config: device, dtype).\n"
                    "Calls it cannot reproduce exactly (alpha outside [0, 1), negative or\n"
                    "non-finite weights or personalization/nstart/dangling values) run\n"
                    "with NetworkX instead when dispatched automatically; with\n"
                    "backend='webrank' they raise an error naming the argument."
                ),
                "additional_parameters": {},
            },
        },
        "default_config": BackendConfig(),
    }


class ConvertedGraph:
    """A NetworkX graph as webrank ranks it: a :class:`webrank.Graph` and the node list.

    Build one with :func:`convert_from_nx`. Undirected graphs become directed with both
    directions of each edge (a self-loop stays one edge), and the weights of parallel
    edges of a multigraph are summed (with ``weight=None`` each edge counts 1), exactly
    as NetworkX's own PageRank reads a graph.

    Attributes
    ----------
    graph : webrank.Graph
        The directed graph, node ``i`` being ``nodes[i]``.
    nodes : list
        The NetworkX nodes in ``list(G)`` order.
    index : dict
        Node -> position in ``nodes``.
    weight : hashable or None
        The edge attribute the weights came from (None: every edge counts 1).
    directed, multigraph : bool
        What kind of NetworkX graph it came from.
    convert_seconds : float
        Wall-clock seconds the conversion took.
    last_result : webrank.PageRankResult or None
        The result of the latest :func:`pagerank` call on this graph (iterations,
        ``elapsed`` solve seconds, ``setup_time``, device), for timing.
    """

    __networkx_backend__ = BACKEND_NAME

    def __init__(self, graph: Any, nodes: list, index: dict, weight: Any, *,
                 directed: bool, multigraph: bool, convert_seconds: float) -> None:
        self.graph = graph
        self.nodes = nodes
        self.index = index
        self.weight = weight
        self.directed = directed
        self.multigraph = multigraph
        self.convert_seconds = convert_seconds
        self.last_result = None

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node: Any) -> bool:
        try:
            return node in self.index
        except TypeError:  # unhashable: not a node, as in networkx
            return False

    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return self.multigraph

    def number_of_nodes(self) -> int:
        return len(self.nodes)

    def number_of_edges(self) -> int:
        """Distinct directed edges (an undirected edge counts twice, parallel edges once)."""
        return self.graph.num_edges

    def __repr__(self) -> str:
        kind = f"{'Multi' if self.multigraph else ''}{'Di' if self.directed else ''}Graph"
        return (f"<webrank ConvertedGraph of a networkx {kind}: {len(self.nodes):,} nodes, "
                f"{self.graph.num_edges:,} directed edges, weight={self.weight!r}, "
                f"converted in {self.convert_seconds:.3f} s>")


def convert_from_nx(G, *, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                    preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                    graph_name=None) -> ConvertedGraph:
    """Convert a NetworkX graph for webrank (called by NetworkX's dispatcher).

    Parameters
    ----------
    G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
        The graph (views too).
    edge_attrs : dict or None
        ``{attribute: default}`` of at most one attribute: the edge weight and the value
        an edge without it gets (NetworkX passes ``{weight: 1}``). None or ``{}``: every
        edge has weight 1.
    node_attrs, preserve_node_attrs, preserve_graph_attrs, name, graph_name
        Accepted for NetworkX's interface; PageRank uses no node or graph attributes.
    preserve_edge_attrs : bool
        Must be False: webrank keeps one numeric attribute, not arbitrary edge data.

    Returns
    -------
    ConvertedGraph
        With the conversion time in ``convert_seconds`` (also logged at INFO).

    Raises
    ------
    NotImplementedError
        Edge data webrank cannot rank as NetworkX would (negative, non-finite or
        non-numeric weights; more than one attribute); NetworkX then falls back to its
        own implementation when dispatching automatically.
    TypeError
        ``G`` is not a NetworkX graph.
    """
    if not isinstance(G, nx.Graph):
        raise TypeError(f"expected a networkx graph, not {type(G).__name__}")
    if preserve_edge_attrs:
        raise NotImplementedError("webrank keeps one numeric edge attribute (the weight), "
                                  "not all edge data (which networkx asks for when weight "
                                  "is a function)")
    if edge_attrs and len(edge_attrs) > 1:
        raise NotImplementedError(f"webrank keeps one edge attribute, not {list(edge_attrs)}")
    weight, default = next(iter(edge_attrs.items())) if edge_attrs else (None, 1)

    t0 = time.perf_counter()
    src, dst, w, nodes, index = _edge_arrays(G, weight, default)
    from webrank.build import first_bad_weight
    from webrank.graph import Graph

    if w is not None and w.size:
        k = first_bad_weight(w)
        if k is not None:
            raise NotImplementedError(
                f"edge attribute {weight!r} holds {float(w[k])!r}; webrank needs "
                "finite non-negative weights")
        if np.all(w == 1.0):
            w = None  # all ones: the unweighted kernels compute the same, faster

    graph = Graph.from_edges(src, dst, w, node_ids="range", num_nodes=len(nodes),
                             name=G.name or None)
    seconds = time.perf_counter() - t0
    _logger.info("converted a networkx %s (%d nodes, %d edges) in %.3f s",
                 type(G).__name__, len(nodes), graph.num_edges, seconds)
    return ConvertedGraph(graph, nodes, index, weight, directed=G.is_directed(),
                          multigraph=G.is_multigraph(), convert_seconds=seconds)


def _edge_arrays(G, weight, default):
    """``(src, dst, weights or None, nodes, index)`` from one pass over ``G._adj``.

    Every per-edge step is a C-level ``map``/``chain`` consumed by ``np.fromiter``: the
    node -> index lookups are ``dict.__getitem__`` and the weight lookups
    ``dict.get(weight, default)``, so no Python bytecode runs per edge (of a plain
    graph; a subgraph view's own filtering runs Python per edge).
    """
    adj = G._adj
    nodes = list(G)
    n = len(nodes)
    index = dict(zip(nodes, range(n), strict=True))
    degree = np.fromiter(map(len, adj.values()), dtype=np.int64, count=n)
    m = int(degree.sum())
    src = np.repeat(np.fromiter(map(index.__getitem__, adj), dtype=np.int64, count=n),
                    degree)
    dst = np.fromiter(map(index.__getitem__, chain.from_iterable(adj.values())),
                      dtype=np.int64, count=m)
    # per neighbour: its edge-data dict (or, in a multigraph, its {key: data} dict)
    edge_data = chain.from_iterable(map(methodcaller("values"), adj.values()))
    if G.is_multigraph():
        # parallel edges: NetworkX sums their weights (each counts 1 when weight=None)
        keydicts = list(edge_data)
        count = np.fromiter(map(len, keydicts), dtype=np.int64, count=m)
        if weight is None:
            return src, dst, count.astype(np.float64), nodes, index
        flat = _weights(chain.from_iterable(map(methodcaller("values"), keydicts)),
                        weight, default, int(count.sum()))
        w = np.bincount(np.repeat(np.arange(m), count), weights=flat, minlength=m)
        return src, dst, w, nodes, index
    if weight is None:
        return src, dst, None, nodes, index
    return src, dst, _weights(edge_data, weight, default, m), nodes, index


def _weights(data_dicts, weight, default, count):
    """float64 array of ``d.get(weight, default)`` over edge-data dicts."""
    try:
        return np.fromiter(map(methodcaller("get", weight, default), data_dicts),
                           dtype=np.float64, count=count)
    except (TypeError, ValueError) as exc:
        raise NotImplementedError(
            f"edge attribute {weight!r} holds a non-numeric value ({exc})") from None


def convert_to_nx(obj, *, name=None):
    """Back to NetworkX: a :class:`ConvertedGraph` becomes the ``nx.DiGraph`` PageRank
    sees (both directions of undirected edges, summed parallel weights under the
    original attribute name); anything else (a result dict) is returned unchanged."""
    if not isinstance(obj, ConvertedGraph):
        return obj
    D = nx.DiGraph()
    D.add_nodes_from(obj.nodes)
    src, dst, w = obj.graph.edges()
    labels = np.empty(len(obj.nodes), dtype=object)
    labels[:] = obj.nodes
    us, vs = labels[src].tolist(), labels[dst].tolist()
    if obj.weight is None and w is None:
        D.add_edges_from(zip(us, vs, strict=True))
    else:
        values = np.ones(src.size) if w is None else w
        D.add_weighted_edges_from(zip(us, vs, values.tolist(), strict=True),
                                  weight="weight" if obj.weight is None else obj.weight)
    return D


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


#: a declined call: the exception type (ValueError for a value, TypeError for a type)
#: and the message, which names the argument
_Reason = tuple[type[Exception], str]
#: the end of the message for what networkx computes and webrank does not reproduce
_NX_RUNS_IT = "; networkx's own pagerank (called without backend='webrank') runs it"


def _mapping_reason(what: str, spec: Any, G: Any, zero_sum_ok: bool) -> _Reason | None:
    """Why a personalization/nstart/dangling argument can't be reproduced, or None."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        return TypeError, f"{what} must be a dict keyed by node, not a {type(spec).__name__}"
    total = 0.0
    for node, value in spec.items():
        if node not in G:  # networkx ignores keys that are not nodes
            continue
        if not (isinstance(value, numbers.Real) and math.isfinite(value) and value >= 0):
            return ValueError, (f"{what}[{node!r}] = {value!r}; the webrank backend needs "
                                f"finite non-negative values{_NX_RUNS_IT}")
        total += value
    if total == 0 and not zero_sum_ok:
        return ValueError, (f"{what} sums to 0 over the graph's nodes (networkx divides by "
                            "zero and iterates on NaN)")
    return None


def _pagerank_reason(G, alpha, personalization, max_iter, tol, nstart, weight,
                     dangling) -> _Reason | None:
    """Why webrank can't reproduce this ``nx.pagerank`` call exactly, or None."""
    if not isinstance(G, nx.Graph | ConvertedGraph):
        return TypeError, f"G must be a networkx graph, not a {type(G).__name__}"
    if not _is_real(alpha):
        return TypeError, f"alpha must be a number in [0, 1), not {alpha!r}"
    if not 0 <= alpha < 1:
        return ValueError, (f"alpha must be in [0, 1) for the webrank backend, not "
                            f"{alpha!r}{_NX_RUNS_IT}")
    if not (isinstance(max_iter, numbers.Integral) and not isinstance(max_iter, bool)):
        return TypeError, f"max_iter must be a non-negative integer, not {max_iter!r}"
    if max_iter < 0:
        return ValueError, f"max_iter must be a non-negative integer, not {max_iter!r}"
    if not _is_real(tol):
        return TypeError, f"tol must be a positive finite number, not {tol!r}"
    if not (tol > 0 and math.isfinite(len(G) * tol)):
        return ValueError, f"tol must be a positive finite number, not {tol!r}"
    if weight is not None:
        try:
            hash(weight)
        except TypeError:
            return TypeError, f"weight must be an edge attribute name or None, not {weight!r}"
        if callable(weight):
            return TypeError, ("weight must be an edge attribute name or None for the "
                               f"webrank backend, not a function{_NX_RUNS_IT}")
    if isinstance(G, ConvertedGraph) and weight != G.weight:
        return ValueError, (f"weight={weight!r}, but the graph was converted with "
                            f"weight={G.weight!r}; convert it again with this weight")
    return (_mapping_reason("personalization", personalization, G, zero_sum_ok=True)
            or _mapping_reason("nstart", nstart, G, zero_sum_ok=False)
            or _mapping_reason("dangling", dangling, G, zero_sum_ok=False))


def _bind(args, kwargs) -> dict[str, Any] | str:
    """``nx.pagerank``'s arguments by name (defaults filled in), or why they don't bind."""
    try:
        bound = _PAGERANK_SIGNATURE.bind(*args, **kwargs)
    except TypeError as exc:
        return f"arguments do not match networkx.pagerank: {exc}"
    bound.apply_defaults()
    return bound.arguments


def can_run(name, args, kwargs):
    """True for a ``pagerank`` call whose arguments fit networkx's signature, else a
    string saying why not.

    Arguments webrank cannot reproduce exactly are not declined here: with
    ``backend="webrank"`` NetworkX consults only ``can_run``, and its message for a
    declined call ("not implemented by 'webrank' backend for the given arguments") drops
    the reason, so :func:`pagerank` raises an error naming the argument instead. When
    NetworkX picks backends itself, :func:`should_run` declines them and NetworkX runs its
    own code."""
    if name != "pagerank":
        return f"webrank implements only pagerank, not {name}"
    bound = _bind(args, kwargs)
    return bound if isinstance(bound, str) else True


def should_run(name, args, kwargs):
    """True if webrank reproduces this call exactly, else a string saying why not: when
    NetworkX dispatches automatically (``backend_priority``), it then runs its own
    implementation. On a graph that is already a :class:`ConvertedGraph`, NetworkX
    consults only :func:`can_run`, and :func:`pagerank` raises the reason instead.

    The results are networkx's, and putting webrank in the backend priority asked for
    it, so every call webrank can reproduce runs on it. On the CPU, graphs below
    :data:`webrank.kernels.cpu.SMALL_GRAPH_EDGES` edges take the compiled step on one
    thread and import no SciPy, so a first call costs about networkx's own (1.0-1.1x on a
    200-node graph, ``benchmarks/first_call/first_call.py``); on a GPU each step is a kernel launch
    and the first call starts CUDA."""
    ok = can_run(name, args, kwargs)
    if ok is not True:
        return ok
    reason = _pagerank_reason(**_bind(args, kwargs))
    return True if reason is None else reason[1]


def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
             weight="weight", dangling=None):
    r"""``networkx.pagerank`` computed by webrank: same signature, results and errors.

    Iterates, from ``x_0 = nstart`` (normalised; default uniform),

    .. math::

        x_{k+1} = \alpha \big(P^\top x_k + (\textstyle\sum_{j\ \mathrm{dangling}}
                  x_{k,j})\, d\big) + (1 - \alpha)\, p,

    with :math:`P_{uv} = w_{uv} / \sum_t w_{ut}`, and stops after the first iteration
    whose L1 change :math:`\sum_i |x_{k+1,i} - x_{k,i}|` is below ``len(G) * tol``: this
    is NetworkX's own rule (an absolute bound that grows with the graph, so the default
    ``tol=1e-6`` on a million-node graph stops once the L1 change is below 1). It is
    passed on as ``webrank.pagerank(..., tol=len(G) * tol, criterion="l1")``, so the
    iteration count is NetworkX's and the scores agree to round-off (float64).

    Parameters
    ----------
    G : networkx graph or ConvertedGraph
        Undirected graphs count each edge in both directions; parallel edges of a
        multigraph add their weights.
    alpha : float, default 0.85
        Damping factor, in [0, 1) (other values run with NetworkX).
    personalization : dict, optional
        ``{node: value}``; nodes left out get 0, keys that are not nodes are ignored.
        Normalised to p. Default uniform. All zero raises ``ZeroDivisionError``.
    max_iter : int, default 100
        Most iterations.
    tol : float, default 1e-6
        Per-node tolerance: the iteration stops when the L1 change is below
        ``len(G) * tol``.
    nstart : dict, optional
        Starting vector ``{node: value}`` (normalised). Default uniform.
    weight : edge attribute name or None, default "weight"
        Edge weight attribute; edges without it weigh 1. None: every edge weighs 1.
    dangling : dict, optional
        Where dangling nodes (no out-edges, or only zero-weight ones) send their rank,
        ``{node: value}`` normalised to d. Default p.

    Returns
    -------
    dict
        ``{node: PageRank}`` over the nodes of ``G`` in ``list(G)`` order (Python
        floats, summing to 1); ``{}`` for a graph without nodes.

    Raises
    ------
    networkx.PowerIterationFailedConvergence
        Not converged within ``max_iter`` iterations (always for ``max_iter=0``).
    ZeroDivisionError
        ``personalization`` is zero on every node of ``G``.
    ValueError, TypeError
        An argument webrank cannot reproduce exactly (a value, a type), named in the
        message (the reason :func:`should_run` gives, through which NetworkX runs its own
        implementation instead when it picks the backend itself).
    NotImplementedError
        Edge data webrank cannot rank (see :func:`convert_from_nx`).
    """
    reason = _pagerank_reason(G, alpha, personalization, max_iter, tol, nstart, weight,
                              dangling)
    if reason is not None:
        error, message = reason
        raise error(message)
    if not isinstance(G, ConvertedGraph):  # called directly rather than by networkx
        G = convert_from_nx(G, edge_attrs=None if weight is None else {weight: 1})
    n = len(G)
    if n == 0:
        return {}
    p = _node_vector(personalization, G)
    if p is not None and not p.sum() > 0:
        raise ZeroDivisionError("personalization is zero on every node of the graph")

    import webrank.ranking

    cfg = _config()
    result = webrank.ranking.pagerank(
        G.graph, alpha=float(alpha), personalization=p, dangling=_node_vector(dangling, G),
        nstart=_node_vector(nstart, G), tol=n * float(tol), max_iter=int(max_iter),
        criterion="l1", dtype=cfg.dtype, device=cfg.device, method="power",
        raise_on_nonconvergence=False)
    G.last_result = result
    _logger.info("pagerank: %d nodes, %d iterations in %.3f s (+%.3f s setup) on %s%s",
                 n, result.iterations, result.elapsed, result.setup_time, result.device,
                 "" if result.converged else ", not converged")
    if not result.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return dict(zip(G.nodes, result.scores.tolist(), strict=True))


_PAGERANK_SIGNATURE = inspect.signature(pagerank)


def _node_vector(spec: Mapping | None, G: ConvertedGraph) -> np.ndarray | None:
    """``{node: value}`` as a float64 vector in node order (non-nodes ignored)."""
    if spec is None:
        return None
    found = [(G.index[k], v) for k, v in spec.items() if k in G]
    vec = np.zeros(len(G))
    if found:
        idx, vals = zip(*found, strict=True)
        vec[list(idx)] = vals
    return vec


# networkx's tests that exercise only functions webrank leaves to networkx. Run with
# NETWORKX_TEST_BACKEND=webrank, every dispatchable call goes to webrank, so these would
# xfail at their first call of nx.stochastic_graph, nx.to_scipy_sparse_array,
# nx.google_matrix or nx.hits; marking them up front says why.
_GOOGLE_MATRIX = "nx.google_matrix (a dense N x N matrix) is left to networkx"
_SCIPY = ("networkx's private _pagerank_scipy calls nx.to_scipy_sparse_array, which "
          "webrank leaves to networkx")
_OUT_OF_SCOPE_ALGS = {  # the function a parametrized test_pagerank.py test runs
    "_pagerank_python": "networkx's pure-Python PageRank calls nx.stochastic_graph, which "
                        "webrank leaves to networkx",
    "_pagerank_numpy": "networkx's dense PageRank calls " + _GOOGLE_MATRIX,
    "google_matrix": _GOOGLE_MATRIX,
}
_OUT_OF_SCOPE_TESTS = {  # test_pagerank.py test functions
    "test_numpy_pagerank": _GOOGLE_MATRIX,
    "test_google_matrix": _GOOGLE_MATRIX,
    "test_dangling_matrix": _GOOGLE_MATRIX,
    "test_empty": "ends with " + _GOOGLE_MATRIX + " (the empty nx.pagerank before it "
                  "runs on webrank)",
    "test_scipy_pagerank": _SCIPY,
    "test_scipy_pagerank_max_iter": _SCIPY,
    "test_dangling_scipy_pagerank": _SCIPY,
}


def on_start_tests(items):
    """Mark networkx's tests that call only functions webrank leaves to networkx as
    expected failures, for ``NETWORKX_TEST_BACKEND=webrank pytest --pyargs
    networkx.algorithms.link_analysis``. Every test of ``nx.pagerank`` stays unmarked:
    it runs on webrank and must pass."""
    import pytest

    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        # the function under test, for tests parametrized over implementations
        alg = next((f.__name__ for f in params.values() if callable(f)), None)
        if item.path.name == "test_hits.py":
            # networkx's pure-Python HITS dispatches nothing, so it passes
            reason = None if alg == "_hits_python" else "HITS is left to networkx"
        elif item.path.name == "test_pagerank.py":
            reason = (_OUT_OF_SCOPE_ALGS.get(alg)
                      or _OUT_OF_SCOPE_TESTS.get(getattr(item, "originalname", None)))
        else:
            reason = None
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))


class _BackendInterface:
    """The object NetworkX loads from the ``networkx.backends`` entry point."""

    pagerank = staticmethod(pagerank)
    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)
    can_run = staticmethod(can_run)
    should_run = staticmethod(should_run)
    on_start_tests = staticmethod(on_start_tests)


backend_interface = _BackendInterface()
