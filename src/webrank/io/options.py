"""The options every graph reader shares: :class:`ReadOptions`.

:func:`webrank.load`, the readers of :mod:`webrank.io` and
:func:`~webrank.io.frames.graph_from_arrow` take one ``options=ReadOptions(...)`` (a
record to keep and reuse) and the same options as keywords (``labels="string"``, the
short form of one call; a keyword wins over the record's field); each reader builds its
:class:`ReadOptions` once (:func:`reader_options`), ignores the options that do not apply
to its format, and builds its graph through :meth:`ReadOptions.graph`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from webrank.edge_arrays import NodeIds
from webrank.files.sources import Progress
from webrank.graph import Duplicates, Graph

__all__ = ["DELIMITER_WORDS", "ReadOptions", "reader_options"]

Labels = Literal["int", "string"]

#: Names :class:`ReadOptions` takes for a ``delimiter`` (the CLI's ``--delimiter``), and
#: the character each stands for; ``\\t`` is the two characters a shell passes for a tab.
DELIMITER_WORDS = {"tab": "\t", "\\t": "\t", "comma": ",", "space": " ",
                   "semicolon": ";", "pipe": "|"}


@dataclass(frozen=True)
class ReadOptions:
    """How to read a graph file or an edge table, shared by every reader.

    A format ignores the options that do not apply to it (each reader's docstring says
    which apply); an invalid value is refused here, whatever the format.

    Parameters
    ----------
    labels : {"int", "string"}, default "int"
        ``"int"``: node ids are non-negative integers below 2**63. ``"string"``: every
        token (URL, name, ...) is a node label; nodes are numbered in order of first
        appearance (``node_ids`` does not apply) and the labels kept in
        :attr:`Graph.labels`. Edge lists, adjacency files and tables (Parquet,
        DataFrames; their string columns are labels either way).
    delimiter : str, optional
        Edge lists only: the field separator, one character or one of the words
        ``"tab"`` (also the two characters ``\\t``), ``"comma"``, ``"space"``,
        ``"semicolon"``, ``"pipe"`` (kept as the character). Default: detected from the
        first data lines (tab, comma, else whitespace). ``" "`` accepts any run of
        whitespace, ``"\\t"`` too with integer ids (runs of tabs with string labels).
        In a ``.csv`` file fields may be quoted as RFC 4180 says (``"a,b"``, ``""`` for
        a quote inside), with any delimiter but ``" "``.
    header : bool, optional
        Edge lists only: whether the first non-comment line is a header (column names).
        None (default): decided from the file, only where that is unambiguous: with
        integer ids, a first line without a number is a header (it cannot be an edge);
        with string labels, a line of usual column names (:data:`~webrank.io.edgelist.HEADER_WORDS`)
        whose third field, if any, is not a number where the weights are, or whose two
        words are labels of no other line. A line read as a header that could have been
        an edge is reported by an :class:`~webrank.errors.InputWarning`. True: skip the
        first non-comment line, whatever it holds. False: every line is an edge.
    weighted : bool, optional
        None (default): use weights when the file has them (a third edge-list column,
        a Parquet weight column, Matrix Market values). True: require them. False:
        ignore them.
    node_ids : {"appear", "range"}, default "appear"
        The node set for integer ids. ``"appear"``: the nodes are the ids that occur in
        the file, numbered in increasing id order (original ids in :attr:`Graph.labels`
        unless they already are ``0..n-1``). ``"range"``: nodes ``0..max id``; absent
        ids are isolated nodes. Formats that declare their node count (mtx, bvgraph,
        webrank) always use it. See :meth:`Graph.from_edges`.
    duplicates : {"collapse", "sum"}, default "collapse"
        Parallel edges: keep one (the last weight wins), or add their weights.
    columns : sequence of str, default ("src", "dst", "weight")
        Parquet only: the source, target and weight column names; the weight name may
        be left out or None. Kept as a tuple.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, called from time to time while reading
        with the bytes read from disk so far (compressed bytes for ``.gz``/``.bz2``); it
        may be called from a reader thread.
    name : str, optional
        The graph's :attr:`Graph.name`, shown in messages; default ``str(path)`` (for a
        table, None).
    device : {"cpu", "gpu"}, default "cpu"
        Where the graph is built, for a run there: ``"gpu"`` parses the file on the
        host's cores (pyarrow) and builds the CSR on the current CUDA device from the
        parsed columns, the graph keeping CuPy arrays (see :meth:`Graph.from_edges`); a
        ``.npz`` cache is uploaded as it is. Needs CuPy.
    directed : bool, default True
        False: an undirected graph, each edge ``{u, v}`` linking both ways (a self-loop
        once), as networkx ranks an ``nx.Graph``; see :meth:`Graph.from_edges`. Every
        format but webrank's ``.npz`` cache (a graph already built, refused by
        :func:`webrank.load`): build the cache from the edges with it instead. A
        ``symmetric`` Matrix Market file's stored triangle is its edge list.

    Raises
    ------
    ValueError
        An unknown ``labels``, ``node_ids`` or ``duplicates`` value, a ``delimiter``
        that is not one character (or is a line break, ``#`` or ``%``), a ``weighted``
        other than None/True/False, a ``directed`` other than True/False, or ``columns``
        that are not 2 or 3 names.

    Examples
    --------
    >>> opts = ReadOptions(labels="string")
    >>> ReadOptions.of(opts, duplicates="sum").duplicates
    'sum'
    """

    labels: Labels = "int"
    delimiter: str | None = None
    header: bool | None = None
    weighted: bool | None = None
    node_ids: NodeIds = "appear"
    duplicates: Duplicates = "collapse"
    columns: Sequence[str | None] = ("src", "dst", "weight")
    progress: Progress | None = None
    name: str | None = None
    device: Literal["cpu", "gpu"] = "cpu"
    directed: bool = True

    def __post_init__(self) -> None:
        labels, delimiter, weighted = self.labels, self.delimiter, self.weighted
        if isinstance(delimiter, str) and delimiter.lower() in DELIMITER_WORDS:
            delimiter = DELIMITER_WORDS[delimiter.lower()]
            object.__setattr__(self, "delimiter", delimiter)
        if labels not in ("int", "string"):
            raise ValueError(f"labels must be 'int' or 'string', not {labels!r}")
        if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1
                                      or delimiter in "\r\n#%"):
            raise ValueError(
                "delimiter must be one character (not a line break, '#' or '%') or one of "
                f"{', '.join(DELIMITER_WORDS)}, not {delimiter!r}"
            )
        if weighted not in (None, True, False):
            raise ValueError(f"weighted must be None, True or False, not {weighted!r}")
        if self.header not in (None, True, False):
            raise ValueError(f"header must be None, True or False, not {self.header!r}")
        if self.node_ids not in ("appear", "range"):
            raise ValueError(f"node_ids must be 'appear' or 'range', not {self.node_ids!r}")
        if self.duplicates not in ("collapse", "sum"):
            raise ValueError(
                f"duplicates must be 'collapse' or 'sum', not {self.duplicates!r}"
            )
        if self.device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', not {self.device!r}")
        if not isinstance(self.directed, (bool, np.bool_)):
            raise ValueError(f"directed must be True or False, not {self.directed!r}")
        columns = tuple(self.columns)
        if len(columns) not in (2, 3):
            raise ValueError("columns must be (src, dst) or (src, dst, weight) names")
        object.__setattr__(self, "columns", columns)

    @classmethod
    def of(cls, options: ReadOptions | None = None, /, **overrides: Any) -> ReadOptions:
        """``options`` (default ``ReadOptions()``) with the fields in ``overrides`` replaced.

        Raises
        ------
        TypeError
            A keyword that is not a field, or ``options`` that is not a ReadOptions.
        ValueError
            An invalid value (see :class:`ReadOptions`).
        """
        if options is None:
            return cls(**overrides)
        if not isinstance(options, ReadOptions):
            raise TypeError(f"options must be a ReadOptions, not {type(options).__name__}")
        return dataclasses.replace(options, **overrides) if overrides else options

    def named(self, path: str | os.PathLike[str]) -> ReadOptions:
        """These options with ``name`` defaulting to ``str(path)``."""
        if self.name is not None:
            return self
        return dataclasses.replace(self, name=str(os.fspath(path)))

    def graph(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        weight: np.ndarray | None = None,
        *,
        labels: np.ndarray | None = None,
        node_ids: NodeIds | None = None,
        num_nodes: int | None = None,
    ) -> Graph:
        """The graph a reader returns: :meth:`Graph.from_edges` with these options'
        ``node_ids``, ``duplicates``, ``name``, ``device`` and ``directed``.

        ``labels``: ``src``/``dst`` are codes into these node labels (``node_ids`` then
        does not apply). ``node_ids`` and ``num_nodes``: for formats that fix the node
        set themselves (``node_ids="range"``, ``num_nodes`` nodes).
        """
        return Graph.from_edges(src, dst, weight, num_nodes=num_nodes,
                                node_ids=self.node_ids if node_ids is None else node_ids,
                                labels=labels, duplicates=self.duplicates, name=self.name,
                                device=self.device, directed=self.directed)


def reader_options(
    caller: str,
    options: ReadOptions | None,
    overrides: dict[str, Any],
    accepts: Collection[str],
    path: str | os.PathLike[str] | None = None,
) -> ReadOptions:
    """A reader's :class:`ReadOptions`: ``options`` with the keywords it was called with.

    Parameters
    ----------
    caller : str
        The reader's name, for the TypeError.
    options : ReadOptions or None
        Its ``options`` argument.
    overrides : dict
        Its keyword arguments.
    accepts : collection of str
        The keywords it takes (the options that apply to its format).
    path : str or os.PathLike, optional
        The file: ``name`` defaults to ``str(path)``.

    Raises
    ------
    TypeError
        A keyword not in ``accepts``, as Python says it of a function without it.
    """
    for key in overrides:
        if key not in accepts:
            raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}")
    opts = ReadOptions.of(options, **overrides)
    return opts if path is None else opts.named(path)
