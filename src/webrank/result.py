"""The result of a PageRank run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from webrank.graph import Graph

if TYPE_CHECKING:
    from webrank.certify import CertifiedPlace

__all__ = ["SCORE_SUFFIXES", "PageRankResult", "load_scores", "merged_info"]

#: the file types :meth:`PageRankResult.save` writes
SCORE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".npy", ".json")


@dataclass(repr=False)
class PageRankResult:
    """PageRank scores and how they were obtained.

    Attributes
    ----------
    scores : ndarray of float64, shape (n,)
        Rank of each node in node order; non-negative, sums to 1.
    iterations : int
        Iterations (solver steps) taken.
    matvecs : int
        Google-matrix products computed (equals ``iterations`` for the power method).
    converged : bool
        Whether the last residual is below ``tol``.
    residuals : ndarray of float64
        Residual ``||x_k - x_{k-1}||`` under ``criterion`` after each iteration.
    elapsed : float
        Compute time in seconds (after the graph is on the device; excludes loading).
    setup_time : float
        Seconds spent preparing the operator (host-to-device copy, preprocessing).
    device, dtype, method, criterion, tol, alpha :
        The parameters of the run; ``device`` is the backend that ran ("cpu"/"gpu").
    device_name : str
        The GPU's name or the CPU's description.
    graph : Graph
        The graph ranked (for labels).
    personalization, dangling : ndarray or None
        The teleport and dangling distributions of the run (normalised; None: uniform,
        and the teleport one), for :attr:`error_bound`.

    Examples
    --------
    >>> import webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
    >>> r = webrank.pagerank(g, tol=1e-10)
    >>> r.error_bound < 1e-9
    True
    >>> [(p.node, p.first, p.last) for p in r.certified_top(3)]
    [(1, 1, 1), (2, 2, 2), (0, 3, 3)]
    """

    scores: np.ndarray
    iterations: int
    converged: bool
    residuals: np.ndarray
    elapsed: float
    device: str
    dtype: str
    method: str
    criterion: str
    tol: float
    alpha: float
    matvecs: int = 0
    setup_time: float = 0.0
    device_name: str = ""
    graph: Graph | None = None
    info: dict[str, Any] = field(default_factory=dict)
    personalization: np.ndarray | None = None
    dangling: np.ndarray | None = None
    _bound: float | None = field(default=None, init=False, compare=False)

    @property
    def error_bound(self) -> float:
        """A rigorous upper bound on the L1 distance of :attr:`scores` to the exact
        PageRank of :attr:`graph` (same alpha, teleport and dangling distributions),
        whatever the method, dtype or device: ``||G(x) - x||_1 / (1 - alpha)`` from one
        float64 product with the Google matrix, plus that product's and that norm's
        worst-case rounding (:mod:`webrank.certify`). Computed on first use (O(n + m),
        where the graph's arrays are), then kept. NaN without a graph."""
        if self._bound is None:
            if self.graph is None:
                return float("nan")
            from webrank.certify import error_bound

            self._bound = error_bound(self.graph, self.scores, self.alpha,
                                      self.personalization, self.dangling)
        return self._bound

    def certified_top(self, k: int = 10) -> list[CertifiedPlace]:
        """The leading nodes of :meth:`top` (at most ``k``) that :attr:`error_bound`
        certifies, as :class:`~webrank.certify.CertifiedPlace` ``(node, score, first,
        last)``: the places (1 = best) each can hold in the exact ranking.

        The list is, as a set, exactly the top ``len(list)`` pages of the exact PageRank.
        ``first == last`` (``.certain_place``) is a place certain; pages whose scores lie
        within the bound of each other (an exact tie, as cnr-2000's top two) form a tie
        group sharing a range of places: their set is certain, their order is not (and
        for an exact tie has none). The list stops before a group that reaches past
        ``k``. How the bound gives places: :mod:`webrank.certify`."""
        from webrank.certify import CertifiedPlace, certified_places

        idx, first, last = certified_places(self.scores, self.error_bound, k)
        labels = self._labels_of(idx)
        return [CertifiedPlace(_py(label), float(self.scores[i]), int(a), int(b))
                for label, i, a, b in zip(labels, idx, first, last, strict=True)]

    @property
    def residual(self) -> float:
        """The last residual (NaN if no iteration ran; 0 for a graph without nodes, whose
        empty ranking is exact)."""
        if len(self.residuals):
            return float(self.residuals[-1])
        return 0.0 if self.scores.size == 0 else float("nan")

    @property
    def labels(self) -> np.ndarray:
        """Node labels (original ids) in node order."""
        if self.graph is None:
            return np.arange(self.scores.size)
        return self.graph.node_labels()

    def _labels_of(self, idx: np.ndarray) -> np.ndarray:
        """The labels of the nodes ``idx`` (without making every node's label: 67 MB of
        ``arange`` for 8.4M nodes, where a top 10 needs ten)."""
        idx = np.asarray(idx, dtype=np.int64)
        own = None if self.graph is None else self.graph.labels
        return idx if own is None else np.asarray(own)[idx]

    def _top_indices(self, k: int) -> np.ndarray:
        """Node indices of the ``k`` best, descending score, ties by node index."""
        from webrank.orders import best_indices

        return best_indices(self.scores, k)

    def top(self, k: int = 10) -> list[tuple[Any, float]]:
        """The ``k`` highest-ranked nodes as ``(label, score)``, ties broken by node index."""
        idx = self._top_indices(k)
        return [(_py(label), float(self.scores[i]))
                for label, i in zip(self._labels_of(idx), idx, strict=True)]

    def top_table(self, k: int = 10, *, kind: str = "pandas") -> Any:
        """The ``k`` highest-ranked nodes as a table, best first: columns ``rank`` (1 =
        best), ``node`` (label) and ``score``, in the order of :meth:`top`.

        Parameters
        ----------
        k : int, default 10
            Rows (all nodes if ``k`` is larger).
        kind : {"pandas", "arrow"}, default "pandas"
            A ``pandas.DataFrame`` (needs pandas) or a ``pyarrow.Table``.

        Examples
        --------
        >>> import webrank
        >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
        >>> webrank.pagerank(g, tol=1e-10).top_table(2, kind="arrow").column("node").to_pylist()
        [1, 2]
        """
        if kind not in ("pandas", "arrow"):
            raise ValueError(f"kind must be 'pandas' or 'arrow', not {kind!r}")
        order = self._top_indices(k)
        columns = {"rank": np.arange(1, order.size + 1, dtype=np.int64),
                   "node": np.asarray(self.labels)[order], "score": self.scores[order]}
        from webrank.io.frames import columns_to_arrow, columns_to_pandas

        return (columns_to_pandas if kind == "pandas" else columns_to_arrow)(columns)

    def to_dict(self) -> dict[Any, float]:
        """``{label: score}`` for every node."""
        return dict(zip((_py(x) for x in self.labels), self.scores.tolist(), strict=True))

    def ranking_columns(self) -> dict[str, np.ndarray]:
        """Columns ``node`` (label), ``score`` and ``rank`` in node order.

        ``rank`` is 1 for the highest score, ties broken by node index (the order of
        :meth:`top`); int64.
        """
        from webrank.metrics import score_order

        rank = np.empty(self.scores.size, dtype=np.int64)
        rank[score_order(self.scores)] = np.arange(1, self.scores.size + 1)
        return {"node": np.asarray(self.labels), "score": self.scores, "rank": rank}

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of :meth:`ranking_columns`, one row per node in node
        order (``df.sort_values("rank")`` for best first); needs pandas.

        Returns
        -------
        pandas.DataFrame
            ``node`` (labels: int64, or strings), ``score`` (float64), ``rank`` (int64,
            1 = best).
        """
        from webrank.io.frames import columns_to_pandas

        return columns_to_pandas(self.ranking_columns())

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` of :meth:`ranking_columns`, one row per node in node order.

        Returns
        -------
        pyarrow.Table
            ``node`` (int64 or string), ``score`` (double), ``rank`` (int64, 1 = best).
        """
        from webrank.io.frames import columns_to_arrow

        return columns_to_arrow(self.ranking_columns())

    def summary(self) -> dict[str, Any]:
        """The run's metadata as a JSON-ready dict (no scores)."""
        return {
            "method": self.method,
            "device": self.device,
            "device_name": self.device_name,
            "dtype": self.dtype,
            "alpha": self.alpha,
            "tol": self.tol,
            "criterion": self.criterion,
            "iterations": self.iterations,
            "matvecs": self.matvecs,
            "converged": self.converged,
            "residual": self.residual,
            "elapsed_s": self.elapsed,
            "setup_s": self.setup_time,
            "n": int(self.scores.size),
            **self.info,
        }

    def save(self, path: str | Path) -> None:
        """Write the scores to ``path``, format by extension.

        ``.csv``/``.tsv``/``.txt``: ``node,score`` lines (header included);
        ``.parquet``: columns ``node``, ``score``; ``.npy``: the scores array in node
        order; ``.json``: the summary plus ``{"node": ..., "score": ...}`` lists.
        The file is written under a temporary name and renamed when complete.
        """
        from webrank.files.atomic import atomic_write
        from webrank.io.columns import write_columns

        path = Path(path)
        ext = path.suffix.lower()
        if ext not in SCORE_SUFFIXES:
            raise ValueError(
                f"cannot save scores as {ext or 'a file without extension'!r}: "
                f"use {', '.join(SCORE_SUFFIXES)}"
            )
        if ext == ".npy":
            with atomic_write(path) as f:
                np.save(f, self.scores)
            return
        write_columns(path, {"node": np.asarray(self.labels), "score": self.scores},
                      summary=self.summary())

    def __repr__(self) -> str:
        state = "converged" if self.converged else "NOT converged"
        return (
            f"<PageRankResult n={self.scores.size:,} method={self.method} "
            f"device={self.device} dtype={self.dtype} {state} in {self.iterations} "
            f"iterations, {self.criterion} residual {self.residual:.2e}, "
            f"{self.elapsed * 1e3:.1f} ms>"
        )


def load_scores(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read scores written by :meth:`PageRankResult.save`: ``(labels, scores)``.

    ``.npy`` holds scores in node order (labels ``0..n-1``); ``.csv``/``.tsv``/``.txt``
    and ``.parquet`` hold ``node``/``score`` columns; ``.json`` the ``node``/``score``
    lists. Raises :class:`~webrank.errors.GraphFormatError` for anything else, and for a
    file whose scores are not finite numbers, whose node appears twice, or whose node and
    score lists differ in length (naming the line or entry).
    """
    from webrank.errors import GraphFormatError

    path = Path(path)
    labels, scores = _read_scores(path)
    labels, scores = np.asarray(labels), np.asarray(scores)
    text = path.suffix.lower() in (".csv", ".tsv", ".txt")

    def place(i: int) -> str:  # a text file's row i is on line i + 2 (after the header)
        return f"line {int(i) + 2}" if text else f"entry {int(i)}"

    def at(i: int) -> dict[str, Any]:  # GraphFormatError's keywords for the place
        return {"line": int(i) + 2} if text else {"text": place(i)}

    if scores.ndim != 1:
        raise GraphFormatError(f"not a webrank score file: scores of shape {scores.shape}, "
                               "not one vector", path=path)
    if labels.ndim != 1 or labels.size != scores.size:
        raise GraphFormatError(f"not a webrank score file: {labels.size} nodes and "
                               f"{scores.size} scores (shapes {labels.shape}, "
                               f"{scores.shape})", path=path)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise GraphFormatError(f"score {scores[bad[0]]} of node {labels[bad[0]]!s}: scores "
                               f"must be finite numbers ({bad.size} are not)", path=path,
                               **at(bad[0]))
    if labels.size > 1:
        order = np.argsort(labels, kind="stable")
        same = np.flatnonzero(labels[order][1:] == labels[order][:-1])
        if same.size:
            first, again = order[same[0]], order[same[0] + 1]
            raise GraphFormatError(f"node {labels[first]!s} appears twice (first on "
                                   f"{place(first)})", path=path, **at(again))
    return labels, scores


def _read_scores(path: Path) -> tuple[Any, Any]:
    """The node and score columns of a score file, as stored (see :func:`load_scores`)."""
    from webrank.errors import GraphFormatError

    ext = path.suffix.lower()
    try:
        if ext == ".npy":
            scores = np.load(path, allow_pickle=False).astype(np.float64)
            return np.arange(scores.shape[0] if scores.ndim else 1), scores
        if ext in (".csv", ".tsv", ".txt"):
            import pyarrow.csv as pcsv

            table = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(
                delimiter="," if ext == ".csv" else "\t"))
        elif ext == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        elif ext == ".json":
            doc = json.loads(path.read_text())
            return doc["node"], np.asarray(doc["score"], dtype=np.float64)
        else:
            raise GraphFormatError(
                "unknown score file type; use .npy, .csv, .tsv, .txt, .parquet or .json",
                path=path)
        return table["node"].to_numpy(), table["score"].to_numpy().astype(np.float64)
    except GraphFormatError:
        raise
    except FileNotFoundError:
        raise GraphFormatError("no such file", path=path) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GraphFormatError(f"not a webrank score file ({exc})", path=path) from None


def _py(x: Any) -> Any:
    """NumPy scalar -> Python scalar (for dicts, JSON and printing)."""
    return x.item() if isinstance(x, np.generic) else x


def merged_info(*parts: dict[str, Any]) -> dict[str, Any]:
    """The result's ``info``: the operator's, the solver's and the call's entries in one
    dict. Each key has one author: a key two of them set differently is a bug, raised
    here rather than one value silently replacing the other."""
    info: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key in info and info[key] is not value and not _same(info[key], value):
                raise RuntimeError(f"info[{key!r}] set twice: {info[key]!r} and {value!r}")
            info[key] = value
    return info


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (ValueError, TypeError):  # arrays: compared by identity above
        return False
