"""CPU kernel of the rank statistics (:mod:`webrank.orders`): the inversions of a sequence
(Kendall's discordant pairs), compiled (``native/metrics.cpp``)."""

from __future__ import annotations

import numpy as np

from webrank.kernels.native import lib


def count_inversions(a: np.ndarray) -> int:
    """Pairs ``i < j`` with ``a[i] > a[j]`` of an int32 or int64 array (equal values are
    none), by a merge sort: O(n log n)."""
    return int(lib.count_inversions(np.ascontiguousarray(a)))
