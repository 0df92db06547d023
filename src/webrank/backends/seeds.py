"""The seeds of personalized PageRank as a matrix: n×k columns held without SciPy (whose
import is half a second of a process's first call), by column for the batches and by row
for the step kernels. NumPy only: :mod:`webrank.personalized` builds them, the batch
operators (:mod:`webrank.backends.batch`) read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["SeedColumns", "SeedRows"]


class SeedRows(NamedTuple):
    """Personalization columns by row (CSR: ``indptr`` over the n nodes, the columns of
    each row increasing): what a step kernel reads, a row at a time."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


@dataclass(frozen=True)
class SeedColumns:
    """An n×k matrix of personalization columns, compressed by column (float64; each
    column's rows increasing, none repeated): the seeds of
    :func:`webrank.personalized_pagerank`, held without SciPy (whose import is half a
    second of a process's first call)."""

    n: int
    indptr: np.ndarray  # (k + 1,) int64
    indices: np.ndarray  # rows, int64
    data: np.ndarray  # float64

    @classmethod
    def from_entries(cls, n: int, k: int, rows: np.ndarray, cols: np.ndarray,
                     vals: np.ndarray) -> SeedColumns:
        """The n×k matrix of entries ``(rows, cols, vals)``; repeated positions add up."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.asarray(vals, dtype=np.float64)
        key = cols * max(n, 1) + rows
        order = np.argsort(key, kind="stable")
        key, vals = key[order], vals[order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
        data = np.add.reduceat(vals, first) if key.size else vals
        key = key[first]
        cols, rows = np.divmod(key, max(n, 1))
        indptr = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=k), out=indptr[1:])
        return cls(n, indptr, rows, data)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.indptr.size - 1

    def column_entries(self) -> np.ndarray:
        """The column of each stored entry."""
        return np.repeat(np.arange(self.shape[1]), np.diff(self.indptr))

    def sums(self) -> np.ndarray:
        """Each column's sum."""
        return np.bincount(self.column_entries(), weights=self.data,
                           minlength=self.shape[1])

    def scaled(self, factors: np.ndarray) -> SeedColumns:
        """Column c times ``factors[c]``."""
        return SeedColumns(self.n, self.indptr, self.indices,
                           self.data * factors[self.column_entries()])

    def select(self, cols: np.ndarray) -> SeedColumns:
        """Columns ``cols`` (in that order)."""
        cols = np.asarray(cols, dtype=np.int64)
        starts, ends = self.indptr[cols], self.indptr[cols + 1]
        counts = ends - starts
        indptr = np.zeros(cols.size + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        take = np.repeat(starts - indptr[:-1], counts) + np.arange(indptr[-1])
        return SeedColumns(self.n, indptr, self.indices[take], self.data[take])

    def by_row(self) -> SeedRows:
        """The same matrix compressed by row (columns increasing within a row)."""
        order = np.argsort(self.indices, kind="stable")  # stable: columns stay in order
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=self.n), out=indptr[1:])
        return SeedRows(indptr, self.column_entries()[order], self.data[order])

    def dense_column(self, c: int) -> np.ndarray:
        """Column ``c`` as a dense n-vector."""
        out = np.zeros(self.n)
        lo, hi = self.indptr[c], self.indptr[c + 1]
        out[self.indices[lo:hi]] = self.data[lo:hi]
        return out
