r"""Certified results: a rigorous bound on the distance of computed scores to the exact
PageRank of the graph, and the leading positions that bound guarantees.

The PageRank vector x* is the fixed point of the affine map

.. math::

    G(x) = \alpha P^\top x + \alpha\,(\textstyle\sum_{j \in D} x_j)\, d + (1 - \alpha)\, v,

whose linear part :math:`\alpha M` has :math:`\|M z\|_1 \le \|z\|_1` for every z
(M is column-stochastic: P's rows sum to 1, the dangling rows send their mass to d).
For any vector x, :math:`x - x^* = (x - G(x)) + (G(x) - G(x^*))`, so

.. math::

    \|x - x^*\|_1 \le \|G(x) - x\|_1 / (1 - \alpha),

whatever produced x (any method, any precision, stopped anywhere): one product with
the Google matrix in float64 certifies it (and, since :math:`\|G(x) - x\|_1 \le
(1 + \alpha)\|x - x^*\|_1`, the bound is within a factor :math:`(1 + \alpha) / (1 -
\alpha)` of the true error; it is also capped by :math:`\|x\|_1 + 1`). The product
and the norm are themselves
rounded; the bound adds their worst case (Higham 2002, §3.1 and §4.2): a row of
:math:`k` non-negative terms summed in any order is off by at most
:math:`\gamma_{k} = k u / (1 - k u)` times their sum (:math:`u = 2^{-53}`), the
dangling mass and the L1 norm are NumPy's pairwise sums (off by at most
:math:`\gamma_{2\lceil\log_2 n\rceil + 32}`), and every term of a row and every term
of the map are non-negative for a non-negative x, so the sums of their absolute
values are the (computed) entries themselves. A vector with negative entries (a Krylov
method's) is bounded through :math:`G(|x|)`, one more product. The result is a bound on
the L1 distance, rounded up.

:func:`certified_places` turns the bound ε into ranks: with :math:`\|x - x^*\|_1 \le
\varepsilon`, two nodes i, j have :math:`|x_i - x_i^*| + |x_j - x_j^*| \le \varepsilon`,
so their true order is the computed one when their scores differ by more than ε. Sorted
by score, the nodes fall into *tie groups*: runs of neighbours whose scores differ by at
most ε (each node's interval :math:`x_i \pm \varepsilon/2` overlapping the next one's).
A gap larger than ε separates two groups, so every node above it is exactly above every
node below it: a group holding the sorted positions first..last is, as a set, the
nodes at exact places first..last, whatever the order inside it (which ε cannot tell;
pages whose exact scores tie have no order at all). Each node's own range narrows to
the places between the nodes of its group certainly above it and those certainly below.
The top k are certified down to the last group that ends within them; a group of one
node is a place certain. (:func:`certified_prefix`, the leading single places only,
stops at the first group of several, an exact tie at the top included.)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from webrank.arrays import array_module, to_host

__all__ = ["CertifiedPlace", "certain_cuts", "certified_places", "certified_prefix",
           "error_bound"]

_U = 2.0**-53  # unit roundoff of float64


def _gamma(k: float) -> float:
    return k * _U / (1.0 - k * _U)


def error_bound(graph: Any, scores: Any, alpha: float, personalization: Any = None,
                dangling: Any = None) -> float:
    """A rigorous upper bound on ``||scores - x*||_1``, x* the exact PageRank of
    ``graph`` with ``alpha``, teleport ``personalization`` and dangling distribution
    ``dangling`` (normalised vectors; None: uniform, and the teleport vector).

    One float64 product with the Google matrix, where the graph's arrays are (host or
    GPU; two where ``scores`` has negative entries), O(n + m); every sum on the host,
    where NumPy's pairwise order gives the depth the bound counts. See the module
    docstring for the derivation.
    """
    on_device = array_module(graph.indptr) is not np
    x = _host(scores)
    n = x.size
    if n == 0:  # no nodes: the empty vector is the exact (empty) PageRank
        return 0.0
    v = None if personalization is None else _host(personalization)
    d = v if dangling is None else _host(dangling)
    product = _device_google_product if on_device else _google_product
    y, dm = product(graph, x, alpha, v, d)
    r = float(np.abs(y - x).sum())
    negative = bool((x < 0).any())
    ya = product(graph, np.abs(x), alpha, v, d)[0] if negative else y
    dma = float(np.abs(x)[_dangling_mask(graph)].sum()) if negative else dm
    degrees = np.diff(_host(graph.indptr)).astype(np.float64)
    # each entry: its row of deg terms (each scaled: 2 roundings), times alpha, plus the
    # dangling and teleport terms and their products and additions: deg + 10 roundings
    k_max = float(degrees.max()) + 10.0 if n else 10.0
    depth = 2 * math.ceil(math.log2(max(n, 2))) + 32  # NumPy's pairwise sums
    # sum over entries of gamma_(deg + 10) times the entry's exact absolute terms, which
    # are at most the computed entry over (1 - gamma_kmax); the weighted sum itself
    # rounded by at most gamma_depth
    rows = float(((degrees + 10.0) * np.abs(ya)).sum())
    product_error = (_U * rows / (1.0 - k_max * _U) / (1.0 - _gamma(k_max))
                     / (1.0 - _gamma(depth + 2)))
    dangling_error = alpha * _gamma(depth) * dma  # spread over d, which sums to 1
    norm = r / (1.0 - _gamma(depth + 1))  # |y - x| rounded, then summed
    bound = (norm + product_error + dangling_error) / (1.0 - alpha)
    # no vector is farther than its own mass plus x*'s (which sums to 1)
    bound = min(bound, (float(np.abs(x).sum()) + 1.0) / (1.0 - _gamma(depth + 1)))
    return float(np.nextafter(bound * (1.0 + 8 * _U), np.inf))


def certain_cuts(scores: np.ndarray, bound: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best nodes (the order of :meth:`~webrank.PageRankResult.top`) and, for
    each position p, whether ``bound`` guarantees that the first p of them are the
    exact top p (their score exceeds the next one's by more than the bound)."""
    from webrank.metrics import score_order

    k = max(0, min(int(k), scores.size))
    order = score_order(scores)[:k + 1]
    s = scores[order]
    gaps = np.append(s[:-1] - s[1:], np.inf)[:k]  # below each position (none below the last)
    return order[:k], gaps > bound


class CertifiedPlace(NamedTuple):
    """An entry of :meth:`PageRankResult.certified_top`: a node and the places of the
    exact ranking it is certified to hold.

    Attributes
    ----------
    node
        The node's label (id as in the input file).
    score : float
        Its computed score.
    first, last : int
        The best and the worst place (1 = best) it can hold in the exact ranking, given
        the result's error bound: ``first == last`` is a place certain; a range is shared
        by pages whose scores lie within the bound of each other (an exact tie among
        them), whose order the bound leaves open while their set is certain.
    """

    node: Any
    score: float
    first: int
    last: int

    @property
    def certain_place(self) -> bool:
        """True when the node's place is certain (``first == last``)."""
        return self.first == self.last


def certified_places(scores: np.ndarray, bound: float, k: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(index, first, last)``: the leading nodes of the order of
    :meth:`~webrank.PageRankResult.top` (at most ``k``) that ``bound`` (on the L1 error of
    ``scores``) certifies as a set, and the places (1 = best) each can hold.

    The nodes are the tie groups (module docstring) that end within the first ``k``
    positions: together they are exactly the nodes at the exact places 1..len(index),
    each within its ``first..last``. A group that reaches past ``k`` ends the list.
    """
    order, cuts = certain_cuts(scores, bound, k)
    closed = np.flatnonzero(cuts)
    if closed.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    m = int(closed[-1]) + 1
    order, cuts = order[:m], cuts[:m]
    s = np.asarray(scores, dtype=np.float64)[order]
    # a cut below position p (a gap larger than the bound) starts a group at p + 1
    new_group = np.concatenate(([True], cuts[:-1]))
    starts = np.flatnonzero(new_group)  # first position of each group
    ends = np.append(starts[1:], m) - 1  # and its last
    group = np.cumsum(new_group) - 1  # the group of each position
    # within a group: the nodes certainly above (score above s + bound) and those not
    # certainly below (score at least s - bound); fl(s +- bound) only narrows the counts
    # to what the exact comparisons certify, and the group's range bounds both
    neg = -s  # ascending
    above = np.searchsorted(neg, -(s + bound), side="left")
    not_below = np.searchsorted(neg, -(s - bound), side="right")
    first = np.maximum(above, starts[group]) + 1
    last = np.minimum(not_below, ends[group] + 1)
    return order, first.astype(np.int64), last.astype(np.int64)


def certified_prefix(scores: np.ndarray, bound: float, k: int) -> np.ndarray:
    """The node indices of the leading positions (at most ``k``) whose place and
    membership ``bound`` (on the L1 error of ``scores``) guarantees: those above every
    gap larger than ``bound`` from the top down (see the module docstring)."""
    order, cuts = certain_cuts(scores, bound, k)
    fails = np.flatnonzero(~cuts)
    return order if fails.size == 0 else order[:int(fails[0])]


def _host(a: Any) -> np.ndarray:
    """A float64 NumPy copy of a host or device array (a device one copied down)."""
    return np.asarray(to_host(a), dtype=np.float64)


def _dangling_mask(graph: Any) -> np.ndarray:
    return _host(graph.out_weight) == 0


def _google_product(graph: Any, x: np.ndarray, alpha: float, v: Any, d: Any
                    ) -> tuple[np.ndarray, float]:
    """``(G(x), dangling mass of x)`` in float64 for a graph on the host."""
    import scipy.sparse as sp

    n = x.size
    out = np.asarray(graph.out_weight, dtype=np.float64)
    dangling = out == 0
    with np.errstate(divide="ignore"):
        inv_out = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    if graph.weights is None:
        data = np.ones(graph.num_edges, dtype=np.float64)
        xs = x * inv_out
    else:  # the transition values w / out_weight(source), each rounded once
        data = np.asarray(graph.weights, dtype=np.float64) * inv_out[graph.indices]
        xs = x
    a = sp.csr_matrix((data, graph.indices, graph.indptr), shape=(n, n))
    dm = float(x[dangling].sum())
    tele = np.full(n, 1.0 / n) if v is None else v
    dist = tele if d is None else d
    y = alpha * (a @ xs) + (alpha * dm) * dist + (1.0 - alpha) * tele
    return y, dm


def _device_google_product(graph: Any, x: np.ndarray, alpha: float, v: Any, d: Any
                           ) -> tuple[np.ndarray, float]:
    """:func:`_google_product` for a graph on the GPU: the product by one prebuilt kernel
    (each entry's roundings as on the host: a row's terms, then the two rank-one
    terms), the dangling mass on the host; ``G(x)`` copied down."""
    import cupy as cp

    import webrank.backends.gpu_arrays as gpu_arrays

    n = x.size
    out = cp.asarray(graph.out_weight, dtype=np.float64)
    inv_out, _ = gpu_arrays.node_scale(out, False)  # 1 / out-weight, 0 if dangling
    vals = (None if graph.weights is None else gpu_arrays.transition_values(
        graph.indices, cp.asarray(graph.weights, dtype=np.float64), out, np.float64))
    dm = float(x[_dangling_mask(graph)].sum())
    tele = gpu_arrays.full(n, 1.0 / n) if v is None else cp.asarray(v)
    dist = tele if d is None else cp.asarray(d)
    y = gpu_arrays.google_product(graph.indptr, graph.indices, vals, cp.asarray(x), inv_out,
                                  alpha, alpha * dm, dist, 1.0 - alpha, tele)
    return y.get(), dm
