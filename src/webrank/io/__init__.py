"""Reading and writing graph files.

:func:`load` reads any supported format into a :class:`~webrank.graph.Graph`, choosing
the reader from the file name (after a ``.gz``/``.bz2`` suffix) unless ``format`` is
given:

==========  ===========================================  ============================
format      suffixes                                     reader module
==========  ===========================================  ============================
edgelist    .txt .tsv .csv .el .edges .edgelist          :mod:`webrank.io.edgelist`
adjacency   .adj (Kumar et al.'s in-link lists)              :mod:`webrank.io.adjacency`
mtx         .mtx (Matrix Market; row = source)           :mod:`webrank.io.mtx`
parquet     .parquet .pq                                 :mod:`webrank.io.parquet`
webrank     .npz (native cache, see :func:`save_graph`)  :mod:`webrank.io.native`
bvgraph     .graph .properties (LAW WebGraph)            :mod:`webrank.io.bvgraph`
==========  ===========================================  ============================

The options every reader shares (``labels``, ``delimiter``, ``header``, ``weighted``, ``node_ids``,
``duplicates``, ``columns``, ``progress``, ``name``, ``directed``) are one
:class:`ReadOptions`, passed as ``options=`` or, as before, as keywords
(``load(path, labels="string")``); its docstring documents them, each reader's says
which apply to its format.

Every output file is written atomically (:func:`webrank.files.atomic.atomic_write`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from webrank.errors import GraphFormatError
from webrank.files.sources import check_input, strip_compression
from webrank.graph import Graph
from webrank.io.adjacency import read_adjacency, write_adjacency
from webrank.io.edgelist import read_edgelist, write_edgelist
from webrank.io.mtx import read_mtx, write_mtx
from webrank.io.native import read_native, save_graph
from webrank.io.options import ReadOptions, reader_options
from webrank.io.parquet import read_parquet, write_parquet

__all__ = [
    "FORMATS",
    "ReadOptions",
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
# the reader of each format but bvgraph; each takes the ReadOptions load() builds
_READERS: dict[str, Callable[..., Graph]] = {
    "edgelist": read_edgelist,
    "adjacency": read_adjacency,
    "mtx": read_mtx,
    "parquet": read_parquet,
    "webrank": read_native,
}
# the options load() takes as keywords
_KEYWORDS = ("labels", "delimiter", "header", "weighted", "node_ids", "duplicates", "columns",
             "progress", "device", "directed")


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
    options: ReadOptions | None = None,
    **overrides: Any,
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
    options : ReadOptions, optional
        How to read it, passed to the format's reader, which ignores the options that
        do not apply to it (bvgraph: all but ``duplicates``, ``name`` and ``directed``).
    **overrides
        ``labels``, ``delimiter``, ``header``, ``weighted``, ``node_ids``, ``duplicates``,
        ``columns``, ``progress``, ``device``, ``directed``: these fields of ``options``,
        as keywords (``device="gpu"`` builds the graph on the GPU, for a run there;
        ``directed=False`` reads an undirected graph, each edge linking both ways).

    Returns
    -------
    Graph
        With :attr:`Graph.name` = ``str(path)`` unless ``options`` names it.

    Raises
    ------
    GraphFormatError
        The file is missing (``"no such file"``), unreadable, of unknown format, or
        malformed; the message names the file and, where a line is at fault, its
        number and text.
    ValueError
        An unknown ``format``, or an invalid option (see :class:`ReadOptions`);
        ``directed=False`` for a ``.npz`` cache (a graph already built: build the cache
        undirected instead).

    Examples
    --------
    >>> g = load("web-NotreDame.txt.gz")  # doctest: +SKIP
    >>> g = load("links.csv", labels="string")  # doctest: +SKIP
    >>> g = load("links.csv", options=ReadOptions(labels="string"))  # doctest: +SKIP
    >>> g = load("friends.txt", directed=False)  # doctest: +SKIP
    """
    opts = reader_options("load", options, overrides, _KEYWORDS)
    name = os.fspath(path)
    if not isinstance(name, str):
        name = os.fsdecode(name)
    if format is None:
        if not os.path.exists(name):
            raise GraphFormatError("no such file", path=name)
        if os.path.isdir(name):
            raise GraphFormatError(_directory_message(name), path=name)
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
    if fmt == "webrank" and not opts.directed:
        raise ValueError(
            f"{name}: directed=False does not apply to a .npz cache, which holds a graph "
            "already built; build the cache undirected from the edges instead (webrank "
            "convert EDGES OUT.npz --undirected, or save_graph of load(..., directed=False))")
    if fmt == "bvgraph":
        return _load_bvgraph(name, opts.named(name))
    return _READERS[fmt](name, options=opts)


def _directory_message(name: str) -> str:
    """What a directory given as a graph file probably is, and what to do with it."""
    entries = os.listdir(name)
    if "webrank-shards.json" in entries:
        return ("is a directory of shards: rank it with `webrank rank DIR --distributed` "
                "(one process per shard, under mpirun, srun or torchrun)")
    if any(e.endswith((".parquet", ".pq")) for e in entries):
        return ("is a directory of Parquet files: rank it with --distributed, or give one "
                "file")
    return "is a directory, not a graph file"


def _load_bvgraph(name: str, opts: ReadOptions) -> Graph:
    """LAW BVGraph via :mod:`webrank.io.bvgraph` (another module; imported lazily)."""
    from webrank.files.atomic import register_input
    from webrank.io.bvgraph import read_bvgraph

    if os.path.isdir(name):
        check_input(name)  # raises "is a directory"
    base = next((name[: -len(ext)] for ext in (".graph", ".properties")
                 if name.endswith(ext)), name)
    for ext in (".graph", ".properties"):  # the two files read_bvgraph reads
        register_input(base + ext)
    try:
        src, dst, num_nodes = read_bvgraph(name)
    except FileNotFoundError:
        raise GraphFormatError("no such file", path=name) from None
    except (IsADirectoryError, PermissionError) as e:
        raise GraphFormatError(f"cannot read the file: {e.strerror or e}", path=name) from None
    return opts.graph(src, dst, node_ids="range", num_nodes=num_nodes)
