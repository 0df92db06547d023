"""Vectorised, seeded random graph generators.

Every generator returns ``(src, dst, n)``: two integer arrays of equal length
holding the directed edge list and the number of nodes ``n`` (node ids are
``0 .. n-1``).  Arrays are ``numpy.ndarray`` of ``int64`` except for
:func:`rmat`, which honours its ``xp`` (NumPy or CuPy) and ``dtype`` arguments.

No generator loops in Python over edges or nodes; the remaining Python loops
run over a small number of rounds (batches, rejection rounds, pointer-jumping
rounds) or over the ``scale`` levels of R-MAT.

Generators
----------
erdos_renyi
    Directed :math:`G(n, p)`, exact.
watts_strogatz
    Small-world ring lattice with rewiring (both directions of every edge).
scale_free
    Bollobás–Borgs–Chayes–Riordan directed scale-free multigraph, exact in
    distribution (same law as :func:`networkx.scale_free_graph`).
rmat
    R-MAT / Graph500 Kronecker generator, NumPy or CuPy.
web_crawl
    Web-like graph in crawl order: power-law degrees and link locality.
generate
    Dispatch by name (``"er"``, ``"ws"``, ``"scale-free"``, ``"rmat"``, ``"web"``).

Seeding
-------
``seed`` may be ``None``, an ``int`` or a :class:`numpy.random.Generator`;
NumPy generators use :func:`numpy.random.default_rng`.  The same seed gives the
same arrays (for a given NumPy version); the random streams are *not* those of
NetworkX, only the distributions are.

References
----------
Erdős & Rényi 1959; Watts & Strogatz 1998; Bollobás, Borgs, Chayes & Riordan 2003;
Chakrabarti, Zhan & Faloutsos 2004 (R-MAT); Boldi & Vigna 2004 and Broder et al. 2000
(web_crawl) — titles in docs/references.md.

Examples
--------
>>> import webrank
>>> src, dst, n = webrank.generate.generate("er", 100, seed=1, p=0.05)
>>> n, src.size == dst.size
(100, True)
>>> webrank.generate_graph("rmat", 10, seed=1).n <= 1024
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from webrank.web_generators import (
    GRAPH500_A,
    GRAPH500_B,
    GRAPH500_C,
    RMAT_CHUNK,
    rmat,
    rmat_permutation,
    rmat_share,
    web_crawl,
)

__all__ = [
    "GRAPH500_A",
    "GRAPH500_B",
    "GRAPH500_C",
    "KINDS",
    "RMAT_CHUNK",
    "erdos_renyi",
    "generate",
    "generate_graph",
    "rmat",
    "rmat_permutation",
    "rmat_share",
    "scale_free",
    "watts_strogatz",
    "web_crawl",
]


# Largest batch of geometric gaps drawn at once by erdos_renyi.
_ER_BATCH = 1 << 24


def _rng(seed: Any) -> np.random.Generator:
    return np.random.default_rng(seed)


def _empty(n: int) -> tuple[np.ndarray, np.ndarray, int]:
    return np.empty(0, np.int64), np.empty(0, np.int64), int(n)


# ---------------------------------------------------------------------------
# Erdős–Rényi
# ---------------------------------------------------------------------------


def erdos_renyi(
    n: int,
    p: float | None = None,
    *,
    avg_degree: float | None = None,
    seed: Any = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    r"""Directed Erdős–Rényi random graph :math:`G(n, p)`.

    Every ordered pair :math:`(u, v)` with :math:`u \ne v` is an edge
    independently with probability ``p``, as in
    ``networkx.fast_gnp_random_graph(n, p, directed=True)``.  The number of
    edges is therefore :math:`\mathrm{Binomial}(n(n-1), p)` and every
    out-degree is :math:`\mathrm{Binomial}(n-1, p)`.

    The ``n(n-1)`` candidate pairs are numbered ``k = u*(n-1) + r`` (``r`` is
    the rank of ``v`` among the nodes other than ``u``) and the positions of
    the successes are found by *geometric skipping* (Batagelj & Brandes
    2005): the gaps between consecutive successes of a Bernoulli(``p``)
    sequence are i.i.d. Geometric(``p``), so they are drawn in large batches
    and cumulatively summed.  This is exact (no approximation), yields no
    self loops and no duplicate pairs, and costs :math:`O(n + m)` time.

    Parameters
    ----------
    n : int
        Number of nodes.
    p : float, optional
        Edge probability in ``[0, 1]``.  Exactly one of ``p`` and
        ``avg_degree`` must be given.
    avg_degree : float, optional
        Expected out-degree; sets ``p = avg_degree / (n - 1)``.
    seed : None, int or numpy.random.Generator, optional
        Seed for :func:`numpy.random.default_rng`.  Default ``None``.

    Returns
    -------
    src, dst : numpy.ndarray of int64
        Edge list, sorted by ``(src, dst)``.
    n : int
        Number of nodes.

    References
    ----------
    .. [1] P. Erdős and A. Rényi, "On random graphs I", Publicationes
       Mathematicae Debrecen 6, 290–297, 1959.
    .. [2] E. N. Gilbert, "Random graphs", Annals of Mathematical
       Statistics 30(4), 1141–1144, 1959.
    .. [3] V. Batagelj and U. Brandes, "Efficient generation of large random
       networks", Physical Review E 71, 036113, 2005.
    """
    n = int(n)
    if n < 0:
        raise ValueError("n must be >= 0")
    if (p is None) == (avg_degree is None):
        raise ValueError("give exactly one of p and avg_degree")
    if p is None:
        p = float(avg_degree) / (n - 1) if n > 1 else 0.0
        p = min(max(p, 0.0), 1.0)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if n < 2 or p == 0.0:
        return _empty(n)
    rng = _rng(seed)
    total = n * (n - 1)  # number of candidate ordered pairs
    parts = []
    last = -1  # index of the last success so far
    while True:
        remaining = total - 1 - last
        mean = remaining * p
        size = int(mean + 6.0 * math.sqrt(mean + 1.0) + 16)
        size = max(1, min(size, _ER_BATCH))
        pos = np.cumsum(rng.geometric(p, size=size))
        pos += last
        if pos[-1] >= total:
            parts.append(pos[: np.searchsorted(pos, total)])
            break
        parts.append(pos)
        last = int(pos[-1])
    k = np.concatenate(parts) if len(parts) > 1 else parts[0]
    src, r = np.divmod(k, n - 1)
    dst = r + (r >= src)
    return src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False), n


# ---------------------------------------------------------------------------
# Watts–Strogatz
# ---------------------------------------------------------------------------


def watts_strogatz(
    n: int,
    k: int,
    p: float,
    *,
    seed: Any = None,
    max_rounds: int = 256,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Watts–Strogatz small-world graph, as a symmetric directed edge list.

    Follows ``networkx.watts_strogatz_graph(n, k, p)``: start from the
    undirected ring lattice joining each node to its ``k // 2`` nearest
    neighbours on each side, then for every lattice edge ``(u, u + j)``
    independently with probability ``p`` replace it by ``(u, w)``, ``w``
    uniform among the nodes that are neither ``u`` nor already neighbours of
    ``u``.  The result is returned with both directions of every undirected
    edge (what :func:`networkx.pagerank` uses for an undirected graph), so
    ``len(src) == n * (k // 2) * 2``.

    **Vectorisation (an approximation).** NetworkX rewires the edges one at a time.
    Here all edges picked for
    rewiring are removed at once, and new endpoints are proposed for all of
    them in rounds: a proposal is accepted when it is not a self loop, not an
    edge of the current graph (kept lattice edges plus rewirings accepted in
    earlier rounds) and not the same edge as an earlier proposal of the same
    round; rejected ones draw again next round.  The differences from the
    sequential process are of order ``p * k / n`` per edge (an edge waiting to
    be rewired can be chosen as a new edge by another rewiring slightly more
    often; no self loops or duplicate edges are ever produced).  NetworkX
    skips a rewiring when ``u`` is already joined to every other node; here a
    rewiring still pending after ``max_rounds`` rounds (which only happens
    when ``k`` is close to ``n``) restores its original edge if that is still
    absent, and is dropped otherwise.

    Parameters
    ----------
    n : int
        Number of nodes.
    k : int
        Each node is joined to its ``k // 2`` nearest neighbours on each side
        of the ring (``k`` odd behaves like ``k - 1``, as in NetworkX).
        ``k == n`` gives the complete graph; ``k > n`` raises ``ValueError``.
    p : float
        Rewiring probability in ``[0, 1]``.
    seed : None, int or numpy.random.Generator, optional
        Seed for :func:`numpy.random.default_rng`.  Default ``None``.
    max_rounds : int, optional
        Cap on the rejection rounds of the rewiring.  Default 256.

    Returns
    -------
    src, dst : numpy.ndarray of int64
        Directed edge list containing ``(u, v)`` and ``(v, u)`` for every
        undirected edge; the first half holds one direction, the second half
        the reverse, in the same order.
    n : int
        Number of nodes.

    References
    ----------
    .. [1] D. J. Watts and S. H. Strogatz, "Collective dynamics of
       'small-world' networks", Nature 393, 440–442, 1998.
    """
    n, k, p = int(n), int(k), float(p)
    if n < 0:
        raise ValueError("n must be >= 0")
    if k > n:
        raise ValueError("k > n, choose smaller k or larger n")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if k == n:  # complete graph, as NetworkX
        if n < 2:
            return _empty(n)
        kk = np.arange(n * (n - 1), dtype=np.int64)
        src, r = np.divmod(kk, n - 1)
        return src, r + (r >= src), n
    half = k // 2
    if n == 0 or half == 0:
        return _empty(n)
    rng = _rng(seed)
    nodes = np.arange(n, dtype=np.int64)
    # lattice edges in NetworkX's rewiring order: for j in 1..half, for u in nodes
    u = np.tile(nodes, half)
    v = (u + np.repeat(np.arange(1, half + 1, dtype=np.int64), n)) % n
    if p > 0.0:
        rewire = rng.random(u.size) < p
        idx = np.flatnonzero(rewire)
    else:
        idx = np.empty(0, np.int64)
    if idx.size:

        def key(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return np.minimum(a, b) * n + np.maximum(a, b)

        keep = ~rewire
        base = np.sort(key(u[keep], v[keep]))  # kept lattice edges, never change
        added = np.empty(0, np.int64)  # sorted keys of accepted rewirings

        def present(q: np.ndarray) -> np.ndarray:
            out = np.zeros(q.size, bool)
            for ref in (base, added):
                if ref.size:
                    i = np.searchsorted(ref, q)
                    i[i == ref.size] = 0
                    out |= ref[i] == q
            return out

        pend = idx
        for _ in range(max_rounds):
            if pend.size == 0:
                break
            pu = u[pend]
            w = rng.integers(0, n, size=pend.size)
            q = key(pu, w)
            ok = np.flatnonzero((w != pu) & ~present(q))
            # among this round's proposals keep the first of equal edges
            _, first = np.unique(q[ok], return_index=True)
            acc = ok[first]
            v[pend[acc]] = w[acc]
            added = np.sort(np.concatenate([added, q[acc]]))
            mask = np.ones(pend.size, bool)
            mask[acc] = False
            pend = pend[mask]
        if pend.size:  # saturated nodes: restore the original edge if possible
            q = key(u[pend], v[pend])
            ok = np.flatnonzero(~present(q))
            _, first = np.unique(q[ok], return_index=True)
            drop = np.ones(pend.size, bool)
            drop[ok[first]] = False
            if drop.any():
                keep_e = np.ones(u.size, bool)
                keep_e[pend[drop]] = False
                u, v = u[keep_e], v[keep_e]
    src = np.concatenate([u, v])
    dst = np.concatenate([v, u])
    return src, dst, n


# ---------------------------------------------------------------------------
# Bollobás–Borgs–Chayes–Riordan directed scale-free graph
# ---------------------------------------------------------------------------


def _resolve_pointers(val: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Resolve ``val[t] = val[ptr[t]]`` for ``ptr[t] >= 0`` (``ptr[t] < t``).

    Pointer jumping: every round either resolves an entry (its target is
    resolved) or doubles its jump, so the number of rounds is logarithmic in
    the longest chain (chains have expected length ``O(log t)`` here).
    """
    val = val.copy()
    ptr = ptr.copy()
    todo = np.flatnonzero(ptr >= 0)
    while todo.size:
        tgt = ptr[todo]
        nxt = ptr[tgt]
        done = nxt < 0
        val[todo[done]] = val[tgt[done]]
        ptr[todo[done]] = -1
        ptr[todo[~done]] = nxt[~done]
        todo = todo[~done]
    return val


def scale_free(
    n: int,
    *,
    alpha: float = 0.41,
    beta: float = 0.54,
    gamma: float = 0.05,
    delta_in: float = 0.2,
    delta_out: float = 0.0,
    seed: Any = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    r"""Directed scale-free multigraph of Bollobás, Borgs, Chayes and Riordan.

    Same model and parameters as :func:`networkx.scale_free_graph` (which is
    the reference for the conventions below).  Start from the 3-cycle
    ``0 -> 1 -> 2 -> 0``; then, until there are ``n`` nodes, add one edge per
    step:

    * with probability ``alpha``: a new node ``v`` and an edge ``v -> w``;
    * with probability ``beta``: an edge ``v -> w`` between existing nodes;
    * with probability ``gamma``: a new node ``w`` and an edge ``v -> w``;

    where ``w`` (when not new) is chosen with probability proportional to
    ``in_degree(w) + delta_in`` and ``v`` (when not new) proportional to
    ``out_degree(v) + delta_out``.  Like NetworkX, in an alpha step the new
    node ``v`` already counts among the candidates for ``w`` (so self loops
    occur), and parallel edges are kept.

    **Exact vectorised formulation.** Choosing ``w`` proportional to
    ``in_degree + delta_in`` is the mixture
    "uniform node with probability :math:`N\delta/(N\delta + E)`, otherwise
    the head of a uniformly chosen existing edge" (:math:`N` nodes, :math:`E`
    edges so far), exactly NetworkX's ``_choose_node``.  The step types, and
    hence :math:`N` and :math:`E` at every step, do not depend on which nodes
    were chosen, so all types, coins, uniform nodes and uniform *edge
    indices* are drawn up front as arrays.  An endpoint defined as "the head
    (tail) of earlier edge ``e``" is a pointer ``dst[t] = dst[e]``
    (``src[t] = src[e]``) with ``e < t``; the pointer chains are resolved
    with vectorised pointer jumping in :math:`O(\log\log)` rounds.  The result
    has exactly the distribution of the sequential process -- no snapshot
    approximation is made (only the random stream differs from NetworkX's).

    Parameters
    ----------
    n : int
        Number of nodes (at least 3 are always produced, like NetworkX).
    alpha : float, optional
        Probability of adding a new node with an edge to an existing node
        chosen by in-degree.  Default 0.41.
    beta : float, optional
        Probability of adding an edge between two existing nodes.
        Default 0.54.
    gamma : float, optional
        Probability of adding a new node with an edge from an existing node
        chosen by out-degree.  Default 0.05.  ``alpha + beta + gamma`` must
        be 1, and all three must be positive.
    delta_in : float, optional
        Bias added to in-degrees when choosing heads.  Default 0.2.
    delta_out : float, optional
        Bias added to out-degrees when choosing tails.  Default 0.
    seed : None, int or numpy.random.Generator, optional
        Seed for :func:`numpy.random.default_rng`.  Default ``None``.

    Returns
    -------
    src, dst : numpy.ndarray of int64
        Edge list in insertion order (the three cycle edges first); may
        contain self loops and parallel edges.  About
        ``n / (alpha + gamma)`` edges.
    n : int
        Number of nodes, ``max(n, 3)``.

    References
    ----------
    .. [1] B. Bollobás, C. Borgs, J. Chayes and O. Riordan, "Directed
       scale-free graphs", Proceedings of the 14th Annual ACM-SIAM Symposium
       on Discrete Algorithms (SODA), 132–139, 2003.
    """
    n = int(n)
    if alpha <= 0:
        raise ValueError("alpha must be > 0.")
    if beta <= 0:
        raise ValueError("beta must be > 0.")
    if gamma <= 0:
        raise ValueError("gamma must be > 0.")
    if abs(alpha + beta + gamma - 1.0) >= 1e-9:
        raise ValueError("alpha+beta+gamma must equal 1.")
    if delta_in < 0:
        raise ValueError("delta_in must be >= 0.")
    if delta_out < 0:
        raise ValueError("delta_out must be >= 0.")
    rng = _rng(seed)
    init_src = np.array([0, 1, 2], np.int64)
    init_dst = np.array([1, 2, 0], np.int64)
    n0, e0 = 3, 3
    need = n - n0  # node-adding steps still to come
    if need <= 0:
        return init_src, init_dst, n0

    # --- step types: 0 = alpha, 1 = beta, 2 = gamma; stop at the need-th new node
    pnew = alpha + gamma
    chunks = []
    have = 0
    while have < need:
        rest = need - have
        size = int(rest / pnew + 6.0 * math.sqrt(rest / pnew * (1 - pnew)) + 64)
        r = rng.random(size)
        t = np.where(r < alpha, 0, np.where(r < alpha + beta, 1, 2)).astype(np.int8)
        c = np.cumsum(t != 1)
        if have + c[-1] >= need:
            stop = int(np.searchsorted(c, need - have)) + 1
            chunks.append(t[:stop])
            break
        chunks.append(t)
        have += int(c[-1])
    typ = np.concatenate(chunks)
    steps = typ.size
    is_a, is_g = typ == 0, typ == 2
    newnode = is_a | is_g
    # nodes before each step, edges before each step
    nodes_before = n0 + np.cumsum(newnode) - newnode
    edges_before = e0 + np.arange(steps, dtype=np.int64)

    def choose(nodes: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        """Value (uniform node) or pointer (uniform earlier edge) per step."""
        ptr = rng.integers(0, edges_before)
        val = np.full(steps, -1, np.int64)
        if delta > 0:
            bias = nodes * delta
            uni = rng.random(steps) < bias / (bias + edges_before)
            val[uni] = rng.integers(0, nodes[uni])
            ptr[uni] = -1
        return val, ptr

    # tails: new node in alpha steps, else by out-degree among nodes_before
    s_val, s_ptr = choose(nodes_before, delta_out)
    s_val[is_a] = nodes_before[is_a]
    s_ptr[is_a] = -1
    # heads: new node in gamma steps, else by in-degree; in alpha steps the new
    # tail is already a candidate node
    d_val, d_ptr = choose(nodes_before + is_a, delta_in)
    d_val[is_g] = nodes_before[is_g]
    d_ptr[is_g] = -1

    src = _resolve_pointers(
        np.concatenate([init_src, s_val]), np.concatenate([np.full(e0, -1), s_ptr])
    )
    dst = _resolve_pointers(
        np.concatenate([init_dst, d_val]), np.concatenate([np.full(e0, -1), d_ptr])
    )
    return src, dst, n0 + need


# ---------------------------------------------------------------------------
# Dispatcher
# ---------------------------------------------------------------------------

#: Kind names accepted by :func:`generate` and their canonical kind.
KINDS: dict[str, str] = {
    "er": "er",
    "erdos-renyi": "er",
    "gnp": "er",
    "ws": "ws",
    "watts-strogatz": "ws",
    "small-world": "ws",
    "scale-free": "scale-free",
    "sf": "scale-free",
    "bollobas": "scale-free",
    "rmat": "rmat",
    "r-mat": "rmat",
    "kronecker": "rmat",
    "graph500": "rmat",
    "web": "web",
    "web-crawl": "web",
}


def generate(
    kind: str, n_or_scale: int, *, seed: Any = None, **params: Any
) -> tuple[Any, Any, int]:
    """Generate a random graph by kind name.

    Parameters
    ----------
    kind : str
        ``"er"`` (:func:`erdos_renyi`), ``"ws"`` (:func:`watts_strogatz`),
        ``"scale-free"`` (:func:`scale_free`), ``"rmat"`` (:func:`rmat`) or
        ``"web"`` (:func:`web_crawl`: power-law degrees and crawl-order
        locality); the aliases in :data:`KINDS` (case-insensitive, ``_`` =
        ``-``) work too.
    n_or_scale : int
        Number of nodes, or ``scale`` (log2 of the node count) for ``"rmat"``
        and ``"web"``.
    seed : None, int or numpy.random.Generator, optional
        Passed to the generator.  Default ``None``.
    **params
        Keyword arguments of the generator.  Defaults used when absent:
        ``"er"``: ``avg_degree=10`` unless ``p`` is given; ``"ws"``: ``k=10``,
        ``p=0.1``.

    Returns
    -------
    src, dst : array
        Edge list.
    n : int
        Number of nodes.
    """
    name = KINDS.get(kind.strip().lower().replace("_", "-"))
    if name is None:
        raise ValueError(f"unknown graph kind {kind!r}; choose from {sorted(KINDS)}")
    params = {key: val for key, val in params.items() if val is not None}
    if name == "er":
        if "p" not in params and "avg_degree" not in params:
            params["avg_degree"] = 10.0
        return erdos_renyi(n_or_scale, seed=seed, **params)
    if name == "ws":
        params.setdefault("k", 10)
        params.setdefault("p", 0.1)
        return watts_strogatz(n_or_scale, seed=seed, **params)
    if name == "scale-free":
        return scale_free(n_or_scale, seed=seed, **params)
    if name == "web":
        return web_crawl(n_or_scale, seed=seed, **params)
    return rmat(n_or_scale, seed=seed, **params)


def generate_graph(kind: str, n_or_scale: int, *, seed: Any = None, **params: Any) -> Any:
    """A random :class:`~webrank.graph.Graph` by kind name: :func:`generate`'s edges,
    nodes ``0..n-1`` (isolated nodes kept).

    Parameters are those of :func:`generate` (``kind`` "er", "ws", "scale-free" or
    "rmat"; ``n_or_scale`` the node count, or log2 of it for R-MAT; ``seed``; the
    generator's keywords).

    Examples
    --------
    >>> import webrank
    >>> g = webrank.generate_graph("scale-free", 1000, seed=1)
    >>> g.n
    1000
    >>> r = webrank.pagerank(g, tol=1e-10)
    """
    from webrank.graph import Graph

    src, dst, n = generate(kind, n_or_scale, seed=seed, **params)
    if hasattr(src, "get"):  # CuPy columns (xp=cupy): the graph lives on the host
        src, dst = src.get(), dst.get()
    return Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
