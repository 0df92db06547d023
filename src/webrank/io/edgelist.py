"""SNAP-style edge lists: one ``source target [weight]`` line per directed edge.

The format
----------
* plain text, gzip (``.gz``) or bzip2 (``.bz2``); UTF-8; ``\\n`` or ``\\r\\n`` line ends;
  a line (comments too) of at most :data:`~webrank.files.sources.MAX_LINE_BYTES` (1 MiB),
  its line end included: a longer one is refused (``no line end in 1 MiB``) by every
  path, without holding it in memory (a few MB of gzip can hold a line of gigabytes);
* lines whose first non-blank character is ``#`` or ``%`` are comments, anywhere in the
  file; blank lines are ignored;
* fields separated by tabs, spaces or commas (detected from the first data lines unless
  ``delimiter`` is given); with tabs or spaces any run of whitespace separates fields,
  and leading/trailing whitespace is ignored; fields are taken literally (no quoting),
  but in a ``.csv`` file (also ``.csv.gz``...), where quoting is RFC 4180's as pandas'
  ``to_csv`` and Python's ``csv`` write it: a field that starts with ``"`` runs to the
  next lone ``"`` and may hold the delimiter and line breaks, ``""`` inside standing for
  ``"`` (``"http://a.example/x,y"`` is the label ``http://a.example/x,y``);
* an optional header line (``source,target``, ``src dst weight``, ...) before the first
  edge, as ``header`` says (:class:`~webrank.io.options.ReadOptions`). Left to the file
  (``header=None``), only a line that cannot be an edge is skipped silently: in
  ``labels="int"`` mode a first non-comment line without a number; in
  ``labels="string"`` mode a line of usual column names (:data:`HEADER_WORDS`) whose
  third field is not a number where the other lines' weights are. A two-word line of
  column names (``u v``) could be an edge between two pages so named: it is a header
  only when neither word is a label of another line, and then an
  :class:`~webrank.errors.InputWarning` says so;
* 2 columns (``source target``) or 3 (``source target weight``), the same on every line.

How it is read
--------------
The fast path peeks at the first lines (comments, header, delimiter, column count) and
hands the rest of the stream to pyarrow's multi-threaded CSV reader with typed columns
(a plain file's lines are first looked at for one over the cap, every cap's worth of
bytes; a compressed stream's as it goes to pyarrow).
pyarrow knows neither comments nor runs of whitespace, so on files it cannot parse, or
whose parsed values fail the checks (nulls, negative ids, bad weights, hex ids, suspicious
labels), the exact line scanner reads the file again: it either parses it (comments
anywhere, ragged whitespace, ...) or raises :class:`~webrank.errors.GraphFormatError`
with the file, the 1-based line number and the offending line. A wrong graph is never
returned silently.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from webrank.files.sources import (
    find_long_line,
    line_at,
    long_line_error,
    open_binary,
    plain_size,
    strip_compression,
)
from webrank.graph import Graph
from webrank.io.edge_layout import HEADER_WORDS, WHAT, drop_unused_header, sniff
from webrank.io.edge_parse import (
    ArrowSource,
    MappedSource,
    WideIds,
    fast_read,
    ids_fit_int32,
    parallel_read,
)
from webrank.io.edge_scan import slow_read
from webrank.io.options import ReadOptions, reader_options
from webrank.tables import factorize

__all__ = ["HEADER_WORDS", "PARALLEL_PARSE_BYTES", "factorize", "read_edgelist",
           "write_edgelist"]

PARALLEL_PARSE_BYTES = 1 << 23  # plain files from 8 MB on: parsed by parallel_read
# the options read_edge_columns takes as keywords; read_edgelist adds the graph's
_COLUMN_KEYWORDS = ("labels", "delimiter", "header", "weighted", "progress", "name",
                    "device")
_KEYWORDS = (*_COLUMN_KEYWORDS, "node_ids", "duplicates", "directed")


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def read_edgelist(
    path: str | os.PathLike[str], *, options: ReadOptions | None = None, **overrides: Any
) -> Graph:
    """Read a SNAP-style edge list (plain, ``.gz`` or ``.bz2``) into a :class:`Graph`.

    Comments, a header line and the field delimiter are recognised as the module
    docstring (:mod:`webrank.io.edgelist`) describes.

    Parameters
    ----------
    path : str or os.PathLike
        The edge list.
    options : ReadOptions, optional
        How to read it; all but ``columns`` apply. ``weighted``: None reads a third
        column as edge weights, True requires one, False ignores it. ``node_ids``
        applies in ``labels="int"`` mode.
    **overrides
        The options that apply, as keywords (``labels="string"``); they win over
        ``options``.

    Returns
    -------
    Graph
        One edge per data line (parallel edges merged as ``duplicates`` says).

    Raises
    ------
    GraphFormatError
        Missing or unreadable file, corrupt compressed data, binary data, no edges, a
        wrong column count, a non-numeric / negative / too large id, a NaN, infinite or
        negative weight (with the line number and text where a line is at fault).
    """
    opts = reader_options("read_edgelist", options, overrides, _KEYWORDS, path)
    src, dst, w, node_labels = read_edge_columns(path, options=opts)
    return opts.graph(src, dst, w, labels=node_labels)


def read_edge_columns(
    path: str | os.PathLike[str], *, options: ReadOptions | None = None, **overrides: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The edge columns of an edge-list file, before any graph is built:
    ``(src, dst, weights or None, labels or None)``; ids as int64 (codes into ``labels``
    in ``labels="string"`` mode). Options (``node_ids`` and ``duplicates`` aside) and
    errors as :func:`read_edgelist`, which is this plus :meth:`ReadOptions.graph` (the
    partitioned readers route the columns to the ranks that own their rows instead)."""
    opts = reader_options("read_edge_columns", options, overrides, _COLUMN_KEYWORDS, path)
    labels, weighted, name = opts.labels, opts.weighted, opts.name
    path = os.fspath(path)
    with open_binary(path, progress=opts.progress) as stream:
        head, layout = sniff(stream, name, labels, opts.delimiter, weighted, opts.header,
                              strip_compression(path).lower().endswith(".csv"))
        use_w = layout.ncols == 3 and weighted is not False
        cols = None
        size = plain_size(stream)
        if size is not None:  # a plain file: its long lines are refused before a parse
            _refuse_long_lines(path, name, layout.data_start)
        # (for either device: a GPU build takes its chunks to the host's parallel build)
        if (labels == "int" and layout.ncols == 2 and size is not None
                and size - layout.data_start >= PARALLEL_PARSE_BYTES):
            cols = parallel_read(path, size, layout, opts.progress)
        pieces = opts.device == "gpu"
        if cols is None:
            narrow = (labels == "int" and not pieces  # (a Python pass over the head)
                      and ids_fit_int32(head[layout.data_start:], layout))
            try:
                cols = fast_read(_arrow_source(path, opts, head, stream, size, layout),
                                 layout, labels, use_w, pieces=pieces, narrow=narrow)
            except WideIds:
                cols = WideIds
    if cols is WideIds:  # an id past int32 after the head: the file parsed again, int64
        with open_binary(path, progress=opts.progress) as stream:
            _skip(stream, len(head))
            cols = fast_read(_arrow_source(path, opts, head, stream, size, layout),
                             layout, labels, use_w, pieces=pieces)
    if cols is None:  # pyarrow could not parse it exactly: scan line by line
        cols = slow_read(path, name, layout, labels, use_w, opts.progress)
    if layout.maybe_header is not None:
        cols = drop_unused_header(cols, name, layout)
    return cols


def _arrow_source(path: str, opts: ReadOptions, head: bytes, stream: Any, size: int | None,
                  layout: Any) -> Any:
    """What pyarrow reads: the data lines of a plain file mapped, or of a compressed
    one (or a pipe) the rest of ``stream`` after ``head``, watched for hex ids."""
    if size is None:
        return ArrowSource(head[layout.data_start:], stream, opts.labels == "int", path,
                           opts.name, layout.data_start)
    return MappedSource(path, size, layout.data_start, opts.labels == "int", opts.progress)


def _skip(stream: Any, count: int) -> None:
    """Read ``count`` bytes of ``stream`` and drop them."""
    while count > 0:
        chunk = stream.read(min(count, 1 << 24))
        if not chunk:
            break
        count -= len(chunk)


def _refuse_long_lines(path: str, name: str, start: int) -> None:
    """A plain file's lines from byte ``start`` on, looked at every cap's worth of
    bytes for one longer than the cap (:func:`~webrank.files.sources.find_long_line`):
    refused before pyarrow or the parallel parse holds it (pyarrow took 4x a long line's
    length)."""
    offset = find_long_line(path, start)
    if offset is not None:
        raise long_line_error(name, *line_at(path, offset), WHAT)


def write_edgelist(
    graph: Graph,
    path: str | os.PathLike[str],
    *,
    delimiter: str = "\t",
    header: bool = True,
) -> None:
    """Write ``graph`` as an edge list, one ``source target [weight]`` line per edge.

    Nodes are written as their original ids/labels (:meth:`Graph.node_labels`); edges
    sorted by source, then target; weights (if any) with the shortest text that reads
    back as the same float64. A ``.gz``/``.bz2`` suffix compresses the file. The file
    is written atomically (:func:`~webrank.files.atomic.atomic_write`).

    Isolated nodes (no edge) cannot be represented in an edge list and are not written.

    Parameters
    ----------
    graph : Graph
        The graph.
    path : str or os.PathLike
        Output file; a ``.gz``/``.bz2`` suffix compresses it.
    delimiter : str, default "\\t"
        Field separator.
    header : bool, default True
        Start with a ``#`` comment giving the node and edge counts.

    Raises
    ------
    ValueError
        A label that could not be read back: it contains the delimiter, a quote or a
        line break, is empty or padded with whitespace, or starts with ``#``/``%``.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from webrank.files.atomic import atomic_write
    from webrank.files.sources import compression_of

    src, dst, w = graph.edges()
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    node_labels = graph.labels
    if node_labels is not None and node_labels.dtype.kind in "OUS":
        _check_writable_labels(node_labels)
    cols: dict[str, Any] = {}
    if node_labels is None:
        cols["src"], cols["dst"] = src, dst
    else:
        cols["src"], cols["dst"] = node_labels[src], node_labels[dst]
    if w is not None:
        cols["weight"] = w[order]
    try:
        table = pa.table({k: pa.array(v) for k, v in cols.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValueError(f"cannot write these node labels as text: {e}") from None
    options = pacsv.WriteOptions(include_header=False, delimiter=delimiter,
                                 quoting_style="none")
    compression = compression_of(path)
    with atomic_write(path, "wb") as f:
        out: Any = f
        if compression == "gzip":
            from isal import igzip_threaded

            out = igzip_threaded.open(f, "wb", threads=-1)  # compressed on all cores
        elif compression == "bz2":
            import bz2

            out = bz2.BZ2File(f, "wb")
        try:
            if header:
                kind = "source target weight" if w is not None else "source target"
                out.write(f"# webrank edge list: {graph.n} nodes, {graph.num_edges} edges "
                          f"({kind})\n".encode())
            try:
                pacsv.write_csv(table, out, options)
            except pa.ArrowInvalid as e:
                raise ValueError(f"cannot write these node labels as text: {e}") from None
        finally:
            if out is not f:
                out.close()


def _check_writable_labels(node_labels: np.ndarray) -> None:
    """Refuse labels that would read back differently (or as comments)."""
    for lab in node_labels.tolist():
        t = lab.decode("utf-8", "replace") if isinstance(lab, bytes) else str(lab)
        if not t or t != t.strip() or t[0] in "#%" or "\n" in t or "\r" in t:
            raise ValueError(
                f"node label {t!r} cannot be written to an edge list and read back "
                "(empty, padded with whitespace, starting with '#'/'%', or holding a "
                "line break); use save_graph or write_parquet instead"
            )
