"""Comparing two rankings: Sgherzi's correctness measures, and the usual rank statistics."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from webrank.orders import kendall_tau

__all__ = ["TIE_TOL", "RankComparison", "compare", "score_order"]

#: Default relative tie tolerance of :func:`compare` (see its docstring for the reasons).
TIE_TOL = 1e-12


@dataclass(frozen=True)
class RankComparison:
    """How far ``scores_a`` is from the reference ``scores_b`` (see :func:`compare`).

    Examples
    --------
    >>> import numpy as np, webrank
    >>> c = webrank.compare(np.array([0.5, 0.2, 0.3]), np.array([0.5, 0.3, 0.2]), k=2)
    >>> c.wrong_position_pct, c.top_k_overlap
    (66.66666666666667, 0.5)
    """

    n: int
    l1: float
    l2: float
    linf: float
    wrong_position_pct: float
    wrong_position_strict_pct: float
    displacement_mean: float
    displacement_var: float
    kendall_tau: float
    top_k: int
    top_k_overlap: float
    tie_tol: float = TIE_TOL

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def score_order(scores: np.ndarray) -> np.ndarray:
    """Node indices by decreasing score, ties by increasing index (stable).

    The order of :meth:`webrank.PageRankResult.top` and of the ``rank`` columns of
    ``to_pandas()`` / ``to_arrow()``; O(n log n).
    """
    return np.lexsort((np.arange(scores.size), -scores))


def compare(scores_a: Any, scores_b: Any, k: int = 100,
            tie_tol: float = TIE_TOL) -> RankComparison:
    """Compare a ranking ``scores_a`` with a reference ``scores_b`` (same node order).

    Parameters
    ----------
    scores_a, scores_b : array_like of float, shape (n,)
        Scores of the same nodes (e.g. ``PageRankResult.scores``); ``scores_b`` is the
        reference (float64, solved tightly).
    k : int, default 100
        Size of the top lists compared by ``top_k_overlap``.
    tie_tol : float, default 1e-12 (:data:`TIE_TOL`)
        Relative tie tolerance of the reference: two reference scores ``x >= y`` with
        ``x - y <= tie_tol * x`` are tied, and ties chain (sorted neighbours within the
        tolerance form one tie group). 0 makes only exactly equal scores ties.

    Returns
    -------
    RankComparison
        * ``l1``, ``l2``, ``linf``: norms of ``a - b``.
        * ``wrong_position_pct``: percentage of nodes in a wrong rank position (seed
          003's correctness measure, on ranks): a node counts when its position in
          ``a``'s order (decreasing score) falls outside the range of positions its tie
          group occupies in the reference's order. Tied nodes may come in any order.
        * ``wrong_position_strict_pct``: the measure before ties had a tolerance: the
          percentage of positions holding a different node in the two orders, exact ties
          broken by node index in both. A solver that orders tied pages differently
          (Gauss–Seidel's in-place sweeps do) scores 6–21 % here at Kendall tau 0.9995;
          kept to reproduce older numbers.
        * ``displacement_mean``, ``displacement_var``: mean and variance of ``|a_i - b_i|``
          over nodes (Sgherzi's displacement of PageRank values).
        * ``kendall_tau``: Kendall's tau-b between the two score vectors (1 = same order).
        * ``top_k_overlap``: fraction of the reference's top k found in ``a``'s top k.
        * ``tie_tol``: the tolerance used.

    Raises
    ------
    ValueError
        Vectors of different lengths, empty vectors, a score that is not a finite
        number, or a negative or non-finite ``tie_tol``.

    Notes
    -----
    Why a relative 1e-12 by default: it is tied to the accuracy of a tight float64
    reference and stays below the resolution of the runs it judges.

    * A reference's scores carry rounding, a few units of float64's 2.2e-16 (pages tied
      in exact arithmetic but summed in another order differ there), and the iteration
      error of its stopping rule, about ``tol / (1 - alpha)`` relative per node on
      average (scores average 1/n): 7e-14 for the benches' tol 1e-14 at alpha 0.85.
      Measured on web-NotreDame and cnr-2000 (alpha 0.85): power, GMRES and
      Gauss–Seidel references solved to tol 1e-14 put 0.06–0.6 % of the nodes in other
      positions with ``tie_tol=0`` (ulp-level splits) and none from ``tie_tol=1e-15``
      on. 1e-12 leaves a margin of 10–1000 over both.
    * A run stopped at tol 1e-10 is off by about 7e-10 relative per node on average,
      so its misorderings of pairs 1e-12 to 1e-9 apart are real: Gauss–Seidel at tol
      1e-10 on cnr-2000 has 0.22 % wrong positions at 1e-12 (20.9 % strict), but
      0.001 % at 1e-9, where this measure would stop telling it from the power method
      (0 %).

    Pass a larger ``tie_tol`` for a looser reference (about its ``tol / (1 - alpha)``);
    ``tie_tol=0`` ties exact equals only.

    Tie groups are contiguous runs of the reference's order, so the test costs two
    sorts (O(n log n)) and a few vectorised passes.

    Examples
    --------
    >>> import numpy as np, webrank
    >>> ref = np.array([0.4, 0.35, 0.25])
    >>> webrank.compare(ref + [1e-9, -1e-9, 0.0], ref).wrong_position_pct
    0.0

    References
    ----------
    M. G. Kendall, "A New Measure of Rank Correlation", Biometrika 30, 1938 (``kendall_tau``);
    Sgherzi's wrong positions and displacement (docs/references.md).
    """
    a = np.asarray(scores_a, dtype=np.float64).ravel()
    b = np.asarray(scores_b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"score vectors differ in length ({a.size} vs {b.size})")
    if a.size == 0:
        raise ValueError("nothing to compare: empty score vectors")
    for name, x in (("scores_a", a), ("scores_b", b)):
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            raise ValueError(f"{name}[{bad[0]}] is {x[bad[0]]}: scores must be finite "
                             f"({bad.size} are not)")
    tie_tol = float(tie_tol)
    if not (np.isfinite(tie_tol) and tie_tol >= 0):
        raise ValueError(f"tie_tol must be finite and >= 0, not {tie_tol!r}")
    diff = np.abs(a - b)
    order_a, order_b = score_order(a), score_order(b)
    k = max(1, min(int(k), a.size))
    overlap = np.intersect1d(order_a[:k], order_b[:k], assume_unique=True).size / k
    if a.size > 1:
        tau = kendall_tau(a, b)
    else:
        tau = 1.0
    wrong = _outside_tie_group(order_a, order_b, b[order_b], tie_tol)
    return RankComparison(
        n=int(a.size),
        l1=float(diff.sum()),
        l2=float(np.sqrt((diff * diff).sum())),
        linf=float(diff.max()),
        wrong_position_pct=float(100.0 * wrong / a.size),
        wrong_position_strict_pct=float(100.0 * np.count_nonzero(order_a != order_b) / a.size),
        displacement_mean=float(diff.mean()),
        displacement_var=float(diff.var()),
        kendall_tau=tau,
        top_k=k,
        top_k_overlap=float(overlap),
        tie_tol=tie_tol,
    )


def _outside_tie_group(order_a: np.ndarray, order_b: np.ndarray, sorted_b: np.ndarray,
                       tie_tol: float) -> int:
    """Nodes whose position in ``order_a`` lies outside their reference tie group's positions.

    ``sorted_b`` is the reference scores in ``order_b`` (decreasing). Position p of the
    reference order starts a new tie group unless it is within ``tie_tol`` (relative to
    the larger score) of position p - 1.
    """
    n = order_b.size
    gap = sorted_b[:-1] - sorted_b[1:]  # >= 0: sorted decreasing
    # `<=` so that tie_tol = 0 still ties exact equals; NaN gaps never tie
    tied = gap <= tie_tol * np.maximum(np.abs(sorted_b[:-1]), np.abs(sorted_b[1:]))
    new_group = np.concatenate(([True], ~tied))
    starts = np.flatnonzero(new_group)
    group = np.cumsum(new_group) - 1  # tie group of each reference position
    first = starts[group]
    last = np.append(starts[1:], n)[group] - 1
    pos_a = np.empty(n, dtype=np.int64)
    pos_a[order_a] = np.arange(n)
    where_a = pos_a[order_b]  # a's position of the node at each reference position
    return int(np.count_nonzero((where_a < first) | (where_a > last)))
