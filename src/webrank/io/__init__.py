"""Reading and writing graph files.

:func:`load` reads any supported format into a :class:`~webrank.graph.Graph`, choosing
the reader from the file name (after a ``.gz``/``.bz2`` suffix) unless ``format`` is
given:

==========  ===========================================  ============================
format      suffixes                                     reader module
==========  ===========================================  ============================
edgelist    .txt .tsv .csv .el .edges .edgelist          :mod:`webrank.io.edgelist`
adjacency   .adj (seed 002's in-link lists)              :mod:`webrank.io.adjacency`
mtx         .mtx (Matrix Market; row = source)           :mod:`webrank.io.mtx`
parquet     .parquet .pq                                 :mod:`webrank.io.parquet`
webrank     .npz (native cache, see :func:`save_graph`)  :mod:`webrank.io.native`
bvgraph     .graph .properties (LAW WebGraph)            :mod:`webrank.io.bvgraph`
==========  ===========================================  ============================

Every output file is written atomically (:func:`webrank.io._atomic.atomic_write`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from webrank.errors import GraphFormatError
from webrank.graph import Graph
from webrank.io._open import Progress, check_input, strip_compression
from webrank.io.adjacency import read_adjacency, write_adjacency
from webrank.io.edgelist import read_edgelist, write_edgelist
from webrank.io.mtx import read_mtx, write_mtx
from webrank.io.native import read_native, save_graph
from webrank.io.parquet import read_parquet, write_parquet

__all__ = [
    "FORMATS",
    "detect_format",
    "load",
    "read_adjacency",
    "read_edgelist",
    "read_mtx",
    "read_native",
    "read_parquet",
    "save_graph",
    "write_adjacency",
    "write_edgelist",
    "write_mtx",
    "write_parquet",
]

#: Known formats and the file suffixes that select them (before any .gz/.bz2).
FORMATS: dict[str, tuple[str, ...]] = {
    "edgelist": (".txt", ".tsv", ".csv", ".el", ".edges", ".edgelist"),
    "adjacency": (".adj",),
    "mtx": (".mtx",),
    "parquet": (".parquet", ".pq"),
    "webrank": (".npz",),
    "bvgraph": (".graph", ".properties"),
}
# other names accepted for ``format=``
_ALIASES = {"native": "webrank", "npz": "webrank", "matrixmarket": "mtx", "adj": "adjacency"}
_BY_SUFFIX = {ext: fmt for fmt, exts in FORMATS.items() for ext in exts}
# formats whose readers take the file whole (no .gz/.bz2 layer)
_UNCOMPRESSED = ("parquet", "webrank", "bvgraph")


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of ``path`` from its suffix (after stripping ``.gz``/``.bz2``).

    Raises
    ------
    GraphFormatError
        Unknown suffix; the message lists the known ones and suggests ``format=``.
    """
    name = os.fspath(path)
    ext = os.path.splitext(strip_compression(name))[1].lower()
    fmt = _BY_SUFFIX.get(ext)
    if fmt is None:
        known = "; ".join(f"{f}: {' '.join(e)}" for f, e in FORMATS.items())
        raise GraphFormatError(
            f"cannot tell the format from the suffix {ext or '(none)'!r}; known suffixes "
            f"(optionally + .gz/.bz2) are {known}. Pass format= (CLI: --format) to say "
            "which it is",
            path=name,
        )
    return fmt


def load(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    labels: str = "int",
    delimiter: str | None = None,
    weighted: bool | None = None,
    node_ids: str = "appear",
    duplicates: str = "collapse",
    columns: Sequence[str | None] = ("src", "dst", "weight"),
    progress: Progress | None = None,
) -> Graph:
    """Read a graph file into a :class:`~webrank.graph.Graph`.

    Parameters
    ----------
    path : str or os.PathLike
        The file. ``.gz``/``.bz2`` compression is undone for the text formats.
    format : str, optional
        One of :data:`FORMATS` (``"edgelist"``, ``"adjacency"``, ``"mtx"``,
        ``"parquet"``, ``"webrank"``, ``"bvgraph"``; ``"native"`` is an alias of
        ``"webrank"``). Default: from the suffix, see :func:`detect_format`.
    labels : {"int", "string"}, default "int"
        ``"int"``: node ids are integers in ``[0, 2**63)``. ``"string"``: any token
        (URL, name) is a node label; nodes are numbered in order of first appearance
        (``node_ids`` does not apply) and the labels kept in :attr:`Graph.labels`.
        Edge list, adjacency, Parquet (whose string columns are always labels).
    delimiter : str, optional
        Edge lists only: the field separator; default detected (tab, comma, whitespace).
    weighted : bool, optional
        None (default): use weights when the file has them (a third edge-list column,
        a Parquet weight column, Matrix Market values). True: require them. False:
        ignore them.
    node_ids : {"appear", "range"}, default "appear"
        ``"appear"``: the nodes are the ids that occur in the file, numbered in
        increasing id order (original ids in :attr:`Graph.labels`). ``"range"``: nodes
        ``0..max id``. Formats that declare their node count (mtx, bvgraph, webrank)
        always use it.
    duplicates : {"collapse", "sum"}, default "collapse"
        Parallel edges: keep one (the last weight wins), or add their weights.
    columns : sequence of str, default ("src", "dst", "weight")
        Parquet only: source, target and optional weight column names.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, called from time to time while reading
        with the bytes read from disk so far (compressed bytes for ``.gz``/``.bz2``);
        it may be called from a reader thread.

    Returns
    -------
    Graph
        With :attr:`Graph.name` = ``str(path)``.

    Raises
    ------
    GraphFormatError
        The file is missing (``"no such file"``), unreadable, of unknown format, or
        malformed; the message names the file and, where a line is at fault, its
        number and text.
    ValueError
        An unknown ``format``, ``labels``, ``node_ids`` or ``duplicates`` value.

    Examples
    --------
    >>> g = load("web-NotreDame.txt.gz")  # doctest: +SKIP
    >>> g = load("links.csv", labels="string")  # doctest: +SKIP
    """
    if labels not in ("int", "string"):
        raise ValueError(f"labels must be 'int' or 'string', not {labels!r}")
    if node_ids not in ("appear", "range"):
        raise ValueError(f"node_ids must be 'appear' or 'range', not {node_ids!r}")
    if duplicates not in ("collapse", "sum"):
        raise ValueError(f"duplicates must be 'collapse' or 'sum', not {duplicates!r}")
    name = os.fspath(path)
    if not isinstance(name, str):
        name = os.fsdecode(name)
    if format is None:
        if not os.path.exists(name):
            raise GraphFormatError("no such file", path=name)
        fmt = detect_format(name)
    else:
        fmt = _ALIASES.get(str(format).lower(), str(format).lower())
        if fmt not in FORMATS:
            raise ValueError(
                f"unknown format {format!r}; known formats: {', '.join(FORMATS)}"
            )
    if fmt in _UNCOMPRESSED and strip_compression(name) != name:
        raise GraphFormatError(
            f"{fmt} files cannot be read compressed; decompress it first", path=name
        )

    if fmt == "edgelist":
        return read_edgelist(name, labels=labels, delimiter=delimiter, weighted=weighted,
                             node_ids=node_ids, duplicates=duplicates, progress=progress)
    if fmt == "adjacency":
        return read_adjacency(name, labels=labels, weighted=weighted, node_ids=node_ids,
                              duplicates=duplicates, progress=progress)
    if fmt == "mtx":
        return read_mtx(name, weighted=weighted, duplicates=duplicates, progress=progress)
    if fmt == "parquet":
        return read_parquet(name, columns=columns, labels=labels, weighted=weighted,
                            node_ids=node_ids, duplicates=duplicates, progress=progress)
    if fmt == "webrank":
        return read_native(name, progress=progress)
    return _load_bvgraph(name, duplicates)


def _load_bvgraph(name: str, duplicates: str) -> Graph:
    """LAW BVGraph via :mod:`webrank.io.bvgraph` (another module; imported lazily)."""
    from webrank.io.bvgraph import read_bvgraph

    if os.path.isdir(name):
        check_input(name)  # raises "is a directory"
    try:
        src, dst, num_nodes = read_bvgraph(name)
    except FileNotFoundError:
        raise GraphFormatError("no such file", path=name) from None
    except (IsADirectoryError, PermissionError) as e:
        raise GraphFormatError(f"cannot read the file: {e.strerror or e}", path=name) from None
    return Graph.from_edges(src, dst, node_ids="range", num_nodes=num_nodes,
                            duplicates=duplicates, name=name)
