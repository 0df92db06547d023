"""Comparing two rankings: seed 003's correctness measures, and the usual rank statistics."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["RankComparison", "compare"]


@dataclass(frozen=True)
class RankComparison:
    """How far ``scores_a`` is from the reference ``scores_b`` (see :func:`compare`)."""

    n: int
    l1: float
    l2: float
    linf: float
    wrong_position_pct: float
    displacement_mean: float
    displacement_var: float
    kendall_tau: float
    top_k: int
    top_k_overlap: float

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def _order(scores: np.ndarray) -> np.ndarray:
    """Node indices by decreasing score, ties by increasing index (stable)."""
    return np.lexsort((np.arange(scores.size), -scores))


def compare(scores_a: Any, scores_b: Any, k: int = 100) -> RankComparison:
    """Compare a ranking ``scores_a`` with a reference ``scores_b`` (same node order).

    Parameters
    ----------
    scores_a, scores_b : array_like of float, shape (n,)
        Scores of the same nodes (e.g. ``PageRankResult.scores``); ``scores_b`` is the
        reference (float64, solved tightly).
    k : int, default 100
        Size of the top lists compared by ``top_k_overlap``.

    Returns
    -------
    RankComparison
        * ``l1``, ``l2``, ``linf``: norms of ``a - b``.
        * ``wrong_position_pct``: percentage of rank positions holding a different node
          in the two orderings (seed 003's correctness measure; ties broken by node index).
        * ``displacement_mean``, ``displacement_var``: mean and variance of ``|a_i - b_i|``
          over nodes (seed 003's displacement of PageRank values).
        * ``kendall_tau``: Kendall's tau-b between the two score vectors (1 = same order).
        * ``top_k_overlap``: fraction of the reference's top k found in ``a``'s top k.
    """
    a = np.asarray(scores_a, dtype=np.float64).ravel()
    b = np.asarray(scores_b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"score vectors differ in length ({a.size} vs {b.size})")
    if a.size == 0:
        raise ValueError("nothing to compare: empty score vectors")
    diff = np.abs(a - b)
    order_a, order_b = _order(a), _order(b)
    k = max(1, min(int(k), a.size))
    overlap = np.intersect1d(order_a[:k], order_b[:k], assume_unique=True).size / k
    if a.size > 1:
        from scipy.stats import kendalltau

        tau = float(kendalltau(a, b).statistic)
    else:
        tau = 1.0
    return RankComparison(
        n=int(a.size),
        l1=float(diff.sum()),
        l2=float(np.sqrt((diff * diff).sum())),
        linf=float(diff.max()),
        wrong_position_pct=float(100.0 * np.count_nonzero(order_a != order_b) / a.size),
        displacement_mean=float(diff.mean()),
        displacement_var=float(diff.var()),
        kendall_tau=tau,
        top_k=k,
        top_k_overlap=float(overlap),
    )
