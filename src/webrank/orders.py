"""Orders of score vectors: the ``k`` best entries in O(n), and Kendall's rank
correlation of two score vectors, without SciPy (``scipy.stats``
takes one to two seconds to import, more than a comparison of millions of scores).

Knight's algorithm (W. R. Knight, "A Computer Method for Calculating Kendall's Tau with
Ungrouped Data", JASA 61, 1966): sort the pairs by the first score, then the second;
the discordant pairs are the inversions of the second scores in that order (a merge
sort counts them, :mod:`webrank.kernels.cpu_metrics`), and the tied pairs come from the
runs of equal values. Tau-b (M. G. Kendall 1945) corrects for ties as
``scipy.stats.kendalltau`` does.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["best_indices", "kendall_tau"]


#: arrays at least this long narrow their candidates first (:func:`_candidates`)
CANDIDATES_MIN = 1 << 16


def best_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest entries of a 1-D array, best first, ties broken by
    increasing index (int64; all entries if ``k`` is larger).

    O(n) and no sort of all n: the candidates are narrowed by the chunks' maxima
    (:func:`_candidates`), then a selection (``np.partition``) among them. Not a
    selection over the whole array: NumPy's introselect slows down several times on
    arrays of many equal values (a partitioned run's rows of nodes nobody links to),
    and the k-th value itself may be shared by millions of entries, of which only the
    first by index are kept."""
    n = scores.shape[0]
    k = max(0, min(int(k), n))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    pool = np.arange(n) if k == n else _candidates(scores, k)
    if pool.size > k:
        values = scores[pool]
        cut = np.partition(values, pool.size - k)[pool.size - k]
        above = pool[values > cut]
        pool = np.concatenate([above, pool[values == cut][:k - above.size]])
    # lexsort: primary key last -> descending score, then ascending index
    return pool[np.lexsort((pool, -scores[pool]))][:k].astype(np.int64, copy=False)


def _candidates(scores: np.ndarray, k: int) -> np.ndarray:
    """Ascending indices that hold the ``k`` best entries of ``scores`` (``k < n``),
    ties at the k-th value by lowest index: every entry above the k-th largest of the
    maxima of ``max(64, 4k)`` chunks (each of those k chunks holds an entry at least that
    large, so the k-th largest entry is too), and the first ``k`` entries equal to it."""
    n = scores.shape[0]
    chunks = max(64, 4 * k)
    if n < max(CANDIDATES_MIN, 4 * chunks):
        return np.arange(n)
    starts = np.arange(chunks, dtype=np.int64) * n // chunks
    maxima = np.maximum.reduceat(scores, starts)
    floor = np.partition(maxima, chunks - k)[chunks - k]
    above = np.flatnonzero(scores > floor)
    tied: list[np.ndarray] = []
    found = 0
    for a, b in zip(starts, np.r_[starts[1:], n], strict=True):  # by index, until k
        hits = np.flatnonzero(scores[a:b] == floor)[:k - found] + a
        tied.append(hits)
        found += hits.size
        if found >= k:
            break
    return np.union1d(above, np.concatenate(tied))


def _tied_pairs(sorted_keys: np.ndarray) -> int:
    """Pairs of equal entries of a sorted array (the sum of c (c - 1) / 2 over runs)."""
    if sorted_keys.size < 2:
        return 0
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1], True])
    runs = np.diff(starts).astype(np.int64)
    return int((runs * (runs - 1) // 2).sum())


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two equally long float vectors (NaN where either is constant
    or holds a NaN or an infinity).

    Examples
    --------
    >>> kendall_tau(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))
    0.333...
    """
    from webrank.kernels.cpu_metrics import count_inversions

    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    n = a.size
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("nan")  # (as SciPy's, which propagates NaN)
    # ranks of b (equal values equal ranks), the pairs ordered by (a, b): by a alone
    # where a has no ties (scores rarely do), the slower two-key sort otherwise
    _, rb, b_counts = np.unique(b, return_inverse=True, return_counts=True)
    rb = rb.astype(np.int64, copy=False)
    order = np.argsort(a)  # (ties in a are sorted again below, by b)
    a_sorted = a[order]
    a_ties = _tied_pairs(a_sorted)
    if a_ties:
        order = np.lexsort((rb, a))
        a_sorted = a[order]
    rb_sorted = rb[order]
    total = n * (n - 1) // 2
    b_counts = b_counts.astype(np.int64)
    b_ties = int((b_counts * (b_counts - 1) // 2).sum())
    both_ties = 0
    if a_ties and b_ties:  # pairs tied in both: runs of equal (a, b) in this order
        joint = np.r_[True, (a_sorted[1:] != a_sorted[:-1])
                      | (rb_sorted[1:] != rb_sorted[:-1]), True]
        runs = np.diff(np.flatnonzero(joint)).astype(np.int64)
        both_ties = int((runs * (runs - 1) // 2).sum())
    discordant = count_inversions(rb_sorted)
    concordant_minus_discordant = total - a_ties - b_ties + both_ties - 2 * discordant
    denominator = math.sqrt(total - a_ties) * math.sqrt(total - b_ties)
    if denominator == 0:
        return float("nan")
    return concordant_minus_discordant / denominator
