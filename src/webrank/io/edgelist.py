"""SNAP-style edge lists: one ``source target [weight]`` line per directed edge.

The format
----------
* plain text, gzip (``.gz``) or bzip2 (``.bz2``); UTF-8; ``\\n`` or ``\\r\\n`` line ends;
  a line (comments too) of at most :data:`~webrank.io.sources.MAX_LINE_BYTES` (1 MiB),
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

import functools
import io
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from webrank.arrays import distinct
from webrank.build import Chunked, Pieces, as_chunks, id_bounds
from webrank.errors import GraphFormatError, InputWarning
from webrank.graph import Graph, first_bad_weight
from webrank.io._arrow import numpy_of
from webrank.io.options import ReadOptions, reader_options
from webrank.io.sources import (
    LineWatch,
    Progress,
    find_long_line,
    line_at,
    line_cap,
    line_text,
    long_line_error,
    open_binary,
    plain_size,
    strip_compression,
)
from webrank.io.tables import arrow_threads, factorize

__all__ = ["HEADER_WORDS", "factorize", "read_edgelist", "write_edgelist"]

#: Tokens that make a first line a header in ``labels="string"`` mode (lower-cased).
HEADER_WORDS = frozenset(
    """source target src dst dest destination from to weight weights w u v i j
    fromnodeid tonodeid from_id to_id fromid toid source_id target_id sourceid targetid
    node1 node2 node_1 node_2 id1 id2 head tail value
    """.split()
)

_INT64_MAX = np.iinfo(np.int64).max
_BOM = b"\xef\xbb\xbf"
_BIG_HINT = 'to read such ids as labels pass labels="string" (CLI: --labels string)'
_SAMPLE_BYTES = 1 << 16  # bytes of data lines peeked at to choose delimiter/columns
_SAMPLE_LINES = 64
PARALLEL_PARSE_BYTES = 1 << 23  # plain files from 8 MB on: parsed by _parallel_read
_BLOCK = 1 << 22  # pyarrow CSV block size: ~16 blocks for a 60 MB file, parsed in parallel
# the options read_edge_columns takes as keywords; read_edgelist adds the graph's
_COLUMN_KEYWORDS = ("labels", "delimiter", "header", "weighted", "progress", "name",
                    "device")
_KEYWORDS = (*_COLUMN_KEYWORDS, "node_ids", "duplicates", "directed")
_LABELS_HINT = (
    'for non-numeric node labels (URLs, names) pass labels="string" (CLI: --labels string)'
)
_WHAT = "a text edge list"


@dataclass(frozen=True)
class _Layout:
    """What the peek at the head of the file found."""

    data_start: int  # byte offset of the first data line in the decompressed stream
    first_line: int  # its 1-based line number
    delimiter: str  # "\t", " " (any whitespace), "," or a user-given character
    ncols: int  # 2 or 3
    # string labels: the first data line (this text) is made of column names; it is a
    # header if its labels are on no other line (decided after the parse)
    maybe_header: str | None = None
    # a .csv file: RFC 4180 quoting ("a,b" is one field; "" inside stands for ")
    quoted: bool = False


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
        head, layout = _sniff(stream, name, labels, opts.delimiter, weighted, opts.header,
                              strip_compression(path).lower().endswith(".csv"))
        use_w = layout.ncols == 3 and weighted is not False
        cols = None
        size = plain_size(stream)
        if size is not None:  # a plain file: its long lines are refused before a parse
            _refuse_long_lines(path, name, layout.data_start)
        # (for either device: a GPU build takes its chunks to the host's parallel build)
        if labels == "int" and layout.ncols == 2 and size is not None:
            cols = _parallel_read(path, size, layout, opts.progress)
        if cols is None:
            source = (_ArrowSource(head[layout.data_start:], stream, labels == "int",
                                   path, name, layout.data_start)
                      if size is None else
                      _MappedSource(path, size, layout.data_start, labels == "int",
                                    opts.progress))
            cols = _fast_read(source, layout, labels, use_w, pieces=opts.device == "gpu")
    if cols is None:  # pyarrow could not parse it exactly: scan line by line
        cols = _slow_read(path, name, layout, labels, use_w, opts.progress)
    if layout.maybe_header is not None:
        cols = _drop_unused_header(cols, name, layout)
    return cols


def _refuse_long_lines(path: str, name: str, start: int) -> None:
    """A plain file's lines from byte ``start`` on, looked at every cap's worth of
    bytes for one longer than the cap (:func:`~webrank.io.sources.find_long_line`):
    refused before pyarrow or the parallel parse holds it (pyarrow took 4x a long line's
    length)."""
    offset = find_long_line(path, start)
    if offset is not None:
        raise long_line_error(name, *line_at(path, offset), _WHAT)


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
    is written atomically (:func:`~webrank.io.atomic.atomic_write`).

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

    from webrank.io.atomic import atomic_write
    from webrank.io.sources import compression_of

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


# --------------------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------------------
def _splitter(delimiter: str, labels: str, quoted: bool = False
              ) -> Callable[[bytes], list[bytes]]:
    """Split a line into fields the way the exact scanner does (``quoted``: a ``.csv``
    file's line, RFC 4180 quoting where it holds a ``"``)."""
    if quoted and delimiter != " ":
        plain = _splitter(delimiter, labels)

        def split(line: bytes) -> list[bytes]:
            if 34 in line:
                fields = _quoted_fields(line, delimiter)
                if fields is not None:
                    return fields
            return plain(line)

        return split
    if delimiter == " " or (delimiter == "\t" and labels == "int"):
        return bytes.split  # runs of any whitespace; ends stripped
    if delimiter == "\t":  # string labels may hold spaces: split on tab runs only
        return lambda line: [t for t in (x.strip() for x in line.split(b"\t")) if t]
    d = delimiter.encode()
    return lambda line: [x.strip() for x in line.split(d)]


def _is_comment(line: bytes) -> bool:
    """Blank line, or a ``#``/``%`` comment."""
    s = line.strip()
    return not s or s[:1] in (b"#", b"%")


def _is_number(tok: bytes) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _header_words(line: bytes, quoted: bool = False) -> list[bytes] | None:
    """The 2-3 fields of a line that may be a header, or None (``quoted``: a ``.csv``
    file's, ``"source","target"`` too)."""
    toks = [t for t in line.replace(b",", b" ").split() if t]
    if quoted:
        toks = [t.strip(b'"') for t in toks]
    return toks if 2 <= len(toks) <= 3 else None


def _is_column_names(toks: list[bytes]) -> bool:
    return all(t.decode("utf-8", "replace").lower() in HEADER_WORDS for t in toks)


def _drop_unused_header(
    cols: tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None],
    name: str,
    layout: _Layout,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """String labels, a first line of column names read as an edge: drop it when its
    labels are on no other line (they name columns, not pages), saying so."""
    cs, cd, w, node_labels = cols
    assert node_labels is not None
    # labels are numbered in order of first appearance: line 1's are 0 and (0 or) 1
    k = int(max(cs[0], cd[0])) + 1
    if cs.size > 1 and (cs[1:].min() < k or cd[1:].min() < k):
        return cols  # a page of the graph: an edge
    if cs.size == 1:
        raise GraphFormatError(
            "no edges: the file holds only comments or a header (header=False, CLI: "
            "--no-header, reads its one line as an edge)", path=name,
            line=layout.first_line, text=layout.maybe_header)
    import warnings

    warnings.warn(
        f"{name}, line {layout.first_line}: {layout.maybe_header!r} read as a header "
        "(column names that are labels of no other line); header=False (CLI: --no-header) "
        "reads it as an edge",
        InputWarning, stacklevel=3,
    )
    return (cs[1:] - k, cd[1:] - k, None if w is None else w[1:], node_labels[k:])


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\r\n")


def _check_text(buf: bytes, name: str, lines: list[tuple[int, int, bytes]]) -> None:
    """Refuse binary data: NUL bytes in the head, or data/header lines that are not UTF-8.

    ``lines`` holds ``(offset, lineno, line)`` of the non-comment lines peeked at (the
    text of comments does not matter).
    """
    pos = buf.find(b"\x00")
    bad = "binary data"
    if pos < 0:
        for offset, _, line in lines:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as e:
                pos, bad = offset + e.start, "bytes that are not UTF-8 text"
                break
        else:
            return
    lineno = buf.count(b"\n", 0, pos) + 1
    start = buf.rfind(b"\n", 0, pos) + 1
    end = buf.find(b"\n", pos)
    text = buf[start : end if end >= 0 else len(buf)]
    raise GraphFormatError(
        f"{bad}, not a text graph file (compressed or binary data under a text name? "
        "a webrank cache must end in .npz)",
        path=name,
        line=lineno,
        text=repr(text[:60])[2:-1],
    )


def _sniff(
    stream: BinaryIO,
    name: str,
    labels: str,
    delimiter: str | None,
    weighted: bool | None,
    header: bool | None = None,
    quoted: bool = False,
) -> tuple[bytes, _Layout]:
    """Read the head of the file: comments, header, delimiter and column count.
    ``quoted``: a ``.csv`` file, whose fields may be quoted (RFC 4180).

    Returns the bytes read so far (the caller passes the rest on) and the layout.
    """
    buf = bytearray()  # (appended to: amortised, not quadratic, over long comments)
    cap = line_cap()
    eof = False
    first: int | None = None  # offset of the first data line
    first_line = 0
    column_names: list[bytes] | None = None  # string labels: line 1 made of column names
    pos = 0  # offset of the next line to classify
    lineno = 0
    seen: list[tuple[int, int, bytes]] = []  # non-comment lines: (offset, lineno, line)
    sample: list[bytes] = []
    while True:
        if not eof:
            chunk = stream.read(_SAMPLE_BYTES)
            eof = not chunk
            buf += chunk
            if pos == 0 and buf.startswith(_BOM):
                pos = len(_BOM)  # a UTF-8 byte-order mark is not part of the first line
            if b"\x00" in chunk:  # binary data: refused from its first block
                _check_text(bytes(buf), name, seen)
        # classify complete lines (the last one may lack its newline at EOF)
        while True:
            end = buf.find(b"\n", pos)
            # a line longer than the cap (line end included), or one that will be
            if (end - pos + 1 if end >= 0 else len(buf) - pos + (not eof)) > cap:
                raise long_line_error(name, lineno + 1, _decode(bytes(buf[pos:pos + 120])),
                                      _WHAT)
            if end < 0:
                if not eof or pos >= len(buf):
                    break
                end = len(buf)
            line = bytes(buf[pos:end])
            start, pos = pos, end + 1
            lineno += 1
            if _is_comment(line):
                continue
            seen.append((start, lineno, line))
            if first is None:
                if len(seen) == 1 and header is not False:
                    names = _header_words(line, quoted)
                    if header or (names and labels == "int"
                                  and not any(map(_is_number, names))):
                        continue  # a header (said so, or it cannot be an edge)
                    if names and labels == "string" and _is_column_names(names):
                        column_names = names  # decided once the weights are seen
                first, first_line = start, lineno
            sample.append(line)
            if len(sample) >= _SAMPLE_LINES:
                break
        if eof or (first is not None
                   and (len(sample) >= _SAMPLE_LINES or len(buf) - first >= _SAMPLE_BYTES)):
            break
    _check_text(buf, name, seen)
    if first is None:
        if not buf.strip():
            raise GraphFormatError("empty file: no edges", path=name)
        raise GraphFormatError("no edges: the file holds only comments or a header", path=name)

    if quoted:  # records: lines joined where a quoted field holds a line break
        sample = _joined_records(sample)
    delim = delimiter
    if delim is None:  # (from the lines below a line of column names)
        delim = _detect_delimiter(sample[1:] if column_names and len(sample) > 1 else sample,
                                  labels, quoted)
    split = _splitter(delim, labels, quoted)
    maybe_header = None
    if column_names is not None:
        if len(sample) > 1 and _not_an_edge_above(split(sample[0]), split(sample[1]),
                                                  weighted):
            first, first_line = seen[1][0], seen[1][1]  # a header: the data starts below
            sample = sample[1:]
        else:
            maybe_header = _decode(sample[0])
    ncols = len(split(sample[0]))
    text = _decode(sample[0])
    if ncols < 2 or ncols > 3:
        raise GraphFormatError(
            f"found {ncols} column{'s' if ncols != 1 else ''}; an edge list needs 2 "
            "(source target) or 3 (source target weight)"
            + ("" if delimiter else " separated by tabs, spaces or commas"),
            path=name, line=first_line, text=text,
        )
    if weighted is True and ncols == 2:
        raise GraphFormatError(
            "weighted=True but the file has no weight column (2 columns: source target)",
            path=name, line=first_line, text=text,
        )
    return buf, _Layout(first, first_line, delim, ncols, maybe_header,
                        quoted and delim != " ")


def _joined_records(lines: list[bytes]) -> list[bytes]:
    """Lines of a quoted CSV file as records: a line with an open quoted field (an odd
    number of ``"``) joined with the next ones until it closes."""
    out: list[bytes] = []
    odd = False
    for line in lines:
        if odd:
            out[-1] += b"\n" + line
        else:
            out.append(line)
        odd ^= line.count(b'"') % 2 == 1
    return out


def _not_an_edge_above(names: list[bytes], below: list[bytes], weighted: bool | None) -> bool:
    """A line of column names that cannot be an edge of the lines below it: another
    field count, or a third field that is not a number above weights that are."""
    if len(names) != len(below):
        return True
    return (len(names) == 3 and weighted is not False and not _is_number(names[2])
            and _is_number(below[2]))


def _detect_delimiter(sample: list[bytes], labels: str, quoted: bool = False) -> str:
    """Tab, comma or whitespace: the first that splits every sampled line alike in 2-3."""
    for cand in ("\t", ",", " "):
        if cand != " " and cand.encode() not in sample[0]:
            continue
        split = _splitter(cand, labels, quoted)
        counts = {len(split(line)) for line in sample}
        if len(counts) == 1 and counts <= {2, 3}:
            return cand
    if b"\t" in sample[0]:
        return "\t"
    return "," if b"," in sample[0] else " "


# --------------------------------------------------------------------------------------
# fastest path: the canonical form of large plain files, parsed on all cores
# --------------------------------------------------------------------------------------
def _parallel_read(
    path: str, size: int, layout: _Layout, progress: Progress | None
) -> tuple[Chunked, Chunked, None, None] | None:
    """Two columns of integer ids in their canonical form (``id DELIM id`` lines), from
    a memory map of the file, cut at line ends into ranges parsed in parallel
    (:mod:`webrank.kernels.cpu_parse`); None for small files or where a line leaves the
    canonical form (the pyarrow path then reads the file)."""
    import mmap

    from webrank.build import use_parallel_build

    body = size - layout.data_start
    delim = layout.delimiter.encode()
    if body < PARALLEL_PARSE_BYTES or len(delim) != 1 or delim.isdigit():
        return None
    if not use_parallel_build(body // 12):  # (lines of ~12 bytes)
        return None
    from webrank.kernels import cpu_parse
    from webrank.kernels.cpu import num_threads

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if len(mm) != size:
            return None  # the file changed under us: let the stream reader decide
        # ranges of ~1 MB up to 64 per thread, each starting at a line start
        ranges = int(min(64 * num_threads(), max(num_threads(), body >> 20)))
        cuts = [layout.data_start]
        for k in range(1, ranges):
            nl = mm.find(b"\n", layout.data_start + body * k // ranges)
            cuts.append(size if nl < 0 else nl + 1)
        cuts.append(size)
    cut = distinct(np.asarray(cuts, np.int64), is_sorted=True)
    # a line takes at least 4 bytes ("0\t0\n"): slots for every range's lines, most
    # of them never touched (virtual memory only)
    first_slot = (cut[:-1] - layout.data_start) // 4 + np.arange(cut.size - 1)
    slots = int(first_slot[-1] + (cut[-1] - cut[-2]) // 4 + 1)
    parsed = np.zeros(cut.size - 1, np.int64)
    bounds = np.zeros((cut.size - 1, 2), np.int64)
    # int32 columns, half the memory of int64 (the build takes either); an id past
    # int32's range shows in the ranges' bounds, and the file is parsed again into int64
    for width in (np.int32, np.int64):
        src = _sparse_array(slots, width)
        dst = _sparse_array(slots, width)
        # NumPy's own map, unmapped when the last view goes (a first call's compile may
        # hold one a while: a plain mmap would then refuse to close)
        buf = np.memmap(path, dtype=np.uint8, mode="r", shape=(size,))
        try:
            # in rounds of ranges, so that a progress bar moves
            step = max(4 * num_threads(), (cut.size - 1) // 8)
            for a in range(0, cut.size - 1, step):
                b = min(cut.size - 1, a + step)
                cpu_parse.parse_id_pairs(buf, cut[a:b + 1], delim[0], first_slot[a:b],
                                         src, dst, parsed[a:b], bounds[a:b])
                if parsed[a:b].min() < 0:
                    return None
                if progress is not None:
                    progress(int(cut[b]), size)
        finally:
            del buf
        if int(bounds[parsed > 0, 1].max(initial=-1)) <= np.iinfo(width).max:
            break
        src = dst = None  # (freed before the int64 columns are made)
    keep = parsed > 0
    if not keep.any():
        return None
    starts, counts = first_slot[keep], parsed[keep]
    lo_hi = (int(bounds[keep, 0].min()), int(bounds[keep, 1].max()))
    return (Chunked(src, starts, counts, lo_hi), Chunked(dst, starts, counts, lo_hi), None,
            None)


def _sparse_array(size: int, dtype: Any) -> np.ndarray:
    """An array of ``size`` entries whose pages are made only where written: an anonymous
    map kept to 4 KiB pages. NumPy asks the kernel for 2 MiB pages on large arrays, so a
    parse that writes the head of each range's slots would make every slot resident
    (R-MAT 22 parsed in 962 ranges on 16 threads: 3.0 GB peak against 2.1 GB)."""
    import mmap

    nbytes = max(int(size), 1) * np.dtype(dtype).itemsize
    memory = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=dtype, count=int(size))


# --------------------------------------------------------------------------------------
# fast path: pyarrow CSV
# --------------------------------------------------------------------------------------
class _ArrowSource(io.RawIOBase):
    """The rest of a compressed stream after the head, as a file for pyarrow.

    It watches the bytes going through for ``x``/``X``: pyarrow parses ``0x1f`` as a hex
    integer, which the exact scanner rejects; and it keeps a decompression error so it
    can be re-raised as such rather than as a CSV error. It watches them for a line
    longer than the cap too (:class:`~webrank.io.sources.LineWatch`): pyarrow would hold
    the whole line, a few times over (a 2 GiB comment took 4.3 GB), so the data ends
    there and the error is kept.
    """

    def __init__(self, head: bytes, stream: BinaryIO, watch_hex: bool, path: str,
                 name: str, offset: int) -> None:
        self._head = memoryview(head)
        self._stream = stream
        self._watch_hex = watch_hex
        self.saw_hex = False
        self.error: GraphFormatError | None = None
        self._lines = LineWatch(offset)
        self._path, self._name = path, name

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if len(self._head):
            if size is None or size < 0:
                data = bytes(self._head) + self._read(-1)
                self._head = self._head[len(self._head):]
            else:
                data = bytes(self._head[:size])
                self._head = self._head[len(data):]
        else:
            data = self._read(size)
        if not self._lines.feed(data):
            if self.error is None:  # (the offset of its start -> the line's number)
                self.error = long_line_error(
                    self._name, *line_at(self._path, self._lines.long_line), _WHAT)
            return b""
        if self._watch_hex and not self.saw_hex and (b"x" in data or b"X" in data):
            self.saw_hex = True
        return data

    def _read(self, size: int | None) -> bytes:
        # A corrupt compressed stream ends the data here (pyarrow sees an end of file)
        # and the error is raised once pyarrow has returned: an exception raised into
        # pyarrow's reader thread could abort the process at exit (std::terminate).
        if self.error is not None:
            return b""
        try:
            return self._stream.read(size)
        except GraphFormatError as e:
            self.error = e
            return b""

    def close(self) -> None:  # pyarrow closes its source; the stream is closed by its owner
        super().close()

class _MappedSource:
    """The data lines of a plain file as pyarrow's own memory map.

    pyarrow's reader threads then take the bytes without calling into Python: through
    a Python file object each of its reads waits for the GIL, and a thread importing
    CuPy beside the parse (the GPU warm-up) held it long enough to stretch a 2 GB parse
    from 1.2 s to 2.1 s on a 16-core host. Meanwhile a thread looks for ``x``/``X``
    (pyarrow reads ``0x1f`` as a hex integer, which the exact scanner refuses) a slice
    at a time, and another reports the map's position to ``progress``.
    """

    _SLICE = 1 << 26  # bytes searched per GIL hold

    def __init__(self, path: str, size: int, start: int, watch_hex: bool,
                 progress: Progress | None) -> None:
        self._path, self._size, self._start = path, size, start
        self._watch_hex, self._progress = watch_hex, progress
        self.saw_hex = False
        self.error: GraphFormatError | None = None

    def __enter__(self) -> Any:
        import threading

        import pyarrow as pa

        self._map = pa.memory_map(self._path)
        if self._map.size() != self._size:
            self._map.close()
            # the file changed since it was opened: the stream reader decides
            raise _Changed
        self._map.seek(self._start)
        self._done = threading.Event()  # the parse ended: the progress reports stop
        self._cancel = threading.Event()  # the parse failed: the search stops too
        self._threads = [threading.Thread(target=self._find_hex, daemon=True)] \
            if self._watch_hex else []
        if self._progress is not None:
            self._threads.append(threading.Thread(target=self._report, daemon=True))
        for t in self._threads:
            t.start()
        return self._map

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if exc[0] is not None:
            self._cancel.set()
        for t in self._threads:  # (the search runs to the end of the file)
            t.join()
        self._map.close()
        if self._progress is not None and exc[0] is None:
            self._progress(self._size, self._size)

    def _find_hex(self) -> None:
        import mmap

        with open(self._path, "rb") as f, \
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for a in range(self._start, len(mm), self._SLICE):
                b = min(len(mm), a + self._SLICE)
                if mm.find(b"x", a, b) >= 0 or mm.find(b"X", a, b) >= 0:
                    self.saw_hex = True
                    return
                if self._cancel.is_set():
                    return

    def _report(self) -> None:
        while not self._done.wait(0.1):
            try:
                self._progress(self._map.tell(), self._size)
            except (OSError, ValueError):  # (closed under us)
                return


class _Changed(Exception):
    """The file's size differs from the size measured when it was opened."""


def _fast_read(
    source: _ArrowSource | _MappedSource, layout: _Layout, labels: str, use_w: bool,
    pieces: bool = False,
) -> tuple[Any, Any, Any, np.ndarray | None] | None:
    """Parse ``source`` (the data lines) with pyarrow; None when the exact scanner must
    decide. ``pieces``: integer columns as :class:`~webrank.build.Pieces` of pyarrow's
    blocks (for a build on the GPU: no join, no parallel kernels on the host), else
    chunked."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    arrow_threads()  # pyarrow's pool no larger than this process's CPUs
    names = ["src", "dst", "weight"][: layout.ncols]
    id_type = pa.int64() if labels == "int" else pa.string()
    types = {"src": id_type, "dst": id_type, "weight": pa.float64()}
    try:
        with source as data:
            table = pacsv.read_csv(
                data,
                read_options=pacsv.ReadOptions(column_names=names, block_size=_BLOCK),
                parse_options=pacsv.ParseOptions(
                    delimiter=layout.delimiter,
                    quote_char='"' if layout.quoted else False,
                    double_quote=layout.quoted, escape_char=False),
                convert_options=pacsv.ConvertOptions(
                    column_types={k: types[k] for k in names},
                    include_columns=names[: 3 if use_w else 2],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except MemoryError:
        raise
    except _Changed:
        return None
    except pa.ArrowCancelled:  # pyarrow's reading was interrupted (Ctrl-C): stop here
        raise KeyboardInterrupt from None
    except Exception:
        if source.error is not None:
            raise source.error from None
        return None  # unparseable for pyarrow: let the exact scanner find out why
    if source.error is not None:
        raise source.error
    if source.saw_hex or any(c.null_count for c in table.columns):
        return None
    if labels == "int" and pieces:
        cols = [Pieces([numpy_of(c) for c in table.column(k).chunks])
                for k in names[: 3 if use_w else 2]]
        if any(a.size and a.min() < 0 for col in cols[:2] for a in col.arrays) or (
                use_w and any(first_bad_weight(a) is not None for a in cols[2].arrays)):
            return None
        return cols[0], cols[1], cols[2] if use_w else None, None
    w = None
    if use_w:
        w = numpy_of(table.column("weight"))
        if first_bad_weight(w) is not None:
            return None
    if labels == "int":
        src = as_chunks(numpy_of(table.column("src")))
        dst = as_chunks(numpy_of(table.column("dst")), like=src)
        if id_bounds(src, dst)[0] < 0:
            return None
        return src, dst, None if w is None else as_chunks(w, like=src), None
    cs, cd, node_labels = factorize(table.column("src"), table.column("dst"))
    # labels the exact scanner would read differently: empty or whitespace-padded
    # fields, and mid-file comment lines that happened to have the right field count
    # (checked on the distinct labels; a target label starting with #/% costs a rescan).
    # Quoted (.csv): a quote or line break in a label. pyarrow cuts its blocks at line
    # ends, quotes aside (newlines_in_values=True would cost 40% of the parse), so a
    # quoted field holding a line break can be cut in two; each half then holds one of
    # these (the open quote's line break, or the closing quote taken literally).
    bad = r"^[#%]|^$|^\s|\s$" + (r'|["\n\r]' if layout.quoted else "")
    if pc.any(pc.match_substring_regex(pa.array(node_labels, type=pa.string()),
                                       bad)).as_py():
        return None
    return cs, cd, w, node_labels


# --------------------------------------------------------------------------------------
# exact path: a line scanner
# --------------------------------------------------------------------------------------
def _slow_read(
    path: str,
    name: str,
    layout: _Layout,
    labels: str,
    use_w: bool,
    progress: Progress | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Parse line by line; raise GraphFormatError at the first bad line."""
    cap = line_cap()
    with open_binary(path, progress=progress) as stream:
        # lines of at most cap + 1 bytes: a longer one is refused, never held whole
        lines: Iterable[bytes] = iter(functools.partial(stream.readline, cap + 1), b"")
        for _ in range(layout.first_line - 1):  # comments/header already classified
            stream.readline(cap + 1)
        if layout.first_line == 1 and stream.peek(3)[:3] == _BOM:
            stream.read(3)
        if labels == "int":
            src, dst, wts, skips = _scan_int(lines, name, layout, use_w, cap)
        else:
            src, dst, wts, skips = _scan_string(lines, name, layout, use_w, cap)

    def fail(k: int, message: str) -> GraphFormatError:
        lineno = layout.first_line + k + int(np.searchsorted(skips, k, side="right"))
        return GraphFormatError(message, path=name, line=lineno,
                                text=line_text(path, lineno))

    w = None
    if use_w:
        w = np.array(wts, dtype=np.float64)
        k = first_bad_weight(w)
        if k is not None:
            raise fail(k, f"weight {float(w[k])} is not allowed: weights must be finite and >= 0")
    if labels == "string":
        import pyarrow as pa

        s = pa.array(src, type=pa.binary())
        d = pa.array(dst, type=pa.binary())
        text = []
        for col in (s, d):
            try:
                text.append(col.cast(pa.string()))  # checks UTF-8
            except pa.ArrowInvalid:
                k = next(i for i, b in enumerate(col.to_pylist()) if not _utf8(b))
                raise fail(k, "a node label is not UTF-8 text") from None
        cs, cd, node_labels = factorize(*text)
        return cs, cd, w, node_labels
    arrays = []
    for col in (src, dst):
        try:
            a = np.array(col, dtype=np.int64)
        except OverflowError:
            k = next(i for i, v in enumerate(col) if not -_INT64_MAX - 1 <= v <= _INT64_MAX)
            shown = _short(str(col[k]).encode())
            if col[k] < 0:
                raise fail(k, f"negative node id {shown}; node ids must be >= 0") from None
            raise fail(k, f"node id {shown} is beyond the int64 range (ids must be < 2**63); "
                          f"{_BIG_HINT}") from None
        arrays.append(a)
    neg = (arrays[0] < 0) | (arrays[1] < 0)
    if neg.any():
        k = int(np.argmax(neg))
        v = min(arrays[0][k], arrays[1][k])
        raise fail(k, f"negative node id {v}; node ids must be >= 0")
    return arrays[0], arrays[1], w, None


def _short(token: bytes) -> str:
    """A field as text for a message: a long one cut, with its length."""
    if len(token) <= 40:
        return token.decode("utf-8", "replace")
    return f"{token[:24].decode('utf-8', 'replace')}...({len(token):,} characters)"


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _scan_int(
    lines: Iterable[bytes], name: str, layout: _Layout, use_w: bool, cap: int
) -> tuple[list[int], list[int], list[float], list[int]]:
    """The exact scanner for integer ids. ``skips``: records read before each skipped line.
    ``lines``: of at most ``cap + 1`` bytes, a longer one refused.

    The loop is the hot part of the slow path (~0.7 µs a line), so errors are found by
    letting ``int()``/``float()``/unpacking fail and diagnosing only then.
    """
    src: list[int] = []
    dst: list[int] = []
    wts: list[float] = []
    skips: list[int] = []
    sa, da, wa = src.append, dst.append, wts.append
    split = _splitter(layout.delimiter, "int")
    three = layout.ncols == 3
    for lineno, line in enumerate(lines, layout.first_line):
        parts = split(line)
        try:
            if three:
                a, b, c = parts
            else:
                a, b = parts
            if 95 in line or len(line) > cap:  # "_": int()/float() accept 1_000; the
                raise ValueError                   # fast path does not
            ia = int(a)
            ib = int(b)
            if use_w:
                wa(float(c))
            sa(ia)
            da(ib)
        except ValueError:
            if len(line) > cap:
                raise long_line_error(name, lineno, _decode(line[:120]), _WHAT) from None
            if _is_comment(line):
                skips.append(len(src))
                continue
            if layout.quoted and 34 in line and 95 not in line:  # '"': RFC 4180 quoting
                q = _quoted_fields(line, layout.delimiter)
                if q is not None and len(q) == layout.ncols:
                    try:
                        ia, ib = int(q[0]), int(q[1])
                        wq = float(q[2]) if use_w else 0.0
                    except ValueError:
                        pass
                    else:
                        if use_w:
                            wa(wq)
                        sa(ia)
                        da(ib)
                        continue
            raise _diagnose(parts, line, lineno, name, layout, "int", use_w) from None
    return src, dst, wts, skips


def _scan_string(
    lines: Iterable[bytes], name: str, layout: _Layout, use_w: bool, cap: int
) -> tuple[list[bytes], list[bytes], list[float], list[int]]:
    """The exact scanner for string labels (kept as bytes; decoded in bulk later).
    ``lines``: of at most ``cap + 1`` bytes, a longer one refused. In a ``.csv`` file a
    line with a ``"`` is an RFC 4180 record (:func:`_quoted_fields`), continued on the
    next lines while a quoted field is open."""
    src: list[bytes] = []
    dst: list[bytes] = []
    wts: list[float] = []
    skips: list[int] = []
    split = _splitter(layout.delimiter, "string")
    tab = layout.delimiter == "\t"
    ws = layout.delimiter == " "
    three = layout.ncols == 3
    quoted = layout.quoted
    lines = iter(lines)
    joined = 0  # lines joined to a record above (a quoted line break): lineno lags by it
    for lineno, line in enumerate(lines, layout.first_line):
        if quoted and 34 in line and not _is_comment(line):  # '"'
            lineno += joined
            if len(line) > cap:
                raise long_line_error(name, lineno, _decode(line[:120]), _WHAT)
            record, more = _quoted_record(line, lines, cap, name, lineno)
            joined += more
            parts = _quoted_fields(record, layout.delimiter) or []
            c = parts[2] if use_w and len(parts) == 3 else b"0"
            if len(parts) != layout.ncols or not parts[0] or not parts[1] or 95 in c \
                    or not _is_number(c):
                raise _diagnose(parts, record, lineno, name, layout, "string", use_w)
            if use_w:
                wts.append(float(c))
            src.append(parts[0])
            dst.append(parts[1])
            skips.extend([len(src)] * more)
            continue
        # a tab-separated line without spaces splits the same on any whitespace (C speed)
        # (ints: `32 in line` is ~10x faster than `b" " in line`)
        if ws or (tab and 32 not in line and 11 not in line and 12 not in line):
            parts = line.split()
        else:
            parts = split(line)
        try:
            if three:
                a, b, c = parts
            else:
                a, b = parts
            if not a or not b or a[0] in (35, 37) or len(line) > cap:  # "#", "%": a
                raise ValueError                                         # comment
            if use_w:
                if 95 in c:  # "_"
                    raise ValueError
                wts.append(float(c))
            src.append(a)
            dst.append(b)
        except ValueError:
            if len(line) > cap:
                raise long_line_error(name, lineno + joined, _decode(line[:120]),
                                      _WHAT) from None
            if _is_comment(line):
                skips.append(len(src))
                continue
            raise _diagnose(parts, line, lineno + joined, name, layout, "string",
                            use_w) from None
    return src, dst, wts, skips


def _quoted_record(
    line: bytes, lines: Iterable[bytes], cap: int, name: str, lineno: int
) -> tuple[bytes, int]:
    """A record of a quoted CSV file that starts with ``line``: the line, joined with the
    next ones while a quoted field is open (an odd number of ``"`` so far); and how many
    lines were joined. A record longer than ``cap`` is refused as a long line."""
    if not line.count(b'"') % 2:
        return line, 0
    parts, size, odd = [line], len(line), True
    for nxt in lines:
        parts.append(nxt)
        size += len(nxt)
        if size > cap:
            raise long_line_error(name, lineno, _decode(line[:120]), _WHAT)
        odd ^= nxt.count(b'"') % 2 == 1
        if not odd:
            break
    return b"".join(parts), len(parts) - 1


def _quoted_fields(record: bytes, delimiter: str) -> list[bytes] | None:
    """The fields of a record of a ``.csv`` file as RFC 4180 reads it (pandas'
    ``to_csv``, Python's ``csv``): a field that starts with ``"`` (after blanks) runs to
    the next lone ``"``, ``""`` inside it standing for ``"``, and may hold the delimiter
    and line breaks; text after its closing quote is kept (as pyarrow and ``csv`` do),
    trailing blanks aside. Other fields are taken literally, stripped of blanks (as the
    unquoted scanner does). None: a quote left open."""
    rec = record[:-1] if record[-1:] == b"\n" else record
    if rec[-1:] == b"\r":
        rec = rec[:-1]
    d = delimiter.encode()
    fields: list[bytes] = []
    i, n = 0, len(rec)
    while True:
        j = i
        while j < n and rec[j] in b" \t" and rec[j] != d[0]:
            j += 1
        if j < n and rec[j] == 34:
            pieces, k = [], j + 1
            while True:
                q = rec.find(b'"', k)
                if q < 0:
                    return None
                pieces.append(rec[k:q])
                if rec[q + 1:q + 2] != b'"':
                    break
                pieces.append(b'"')
                k = q + 2
            e = rec.find(d, q + 1)
            e = n if e < 0 else e
            fields.append(b"".join(pieces) + rec[q + 1:e].rstrip())
        else:
            e = rec.find(d, i)
            e = n if e < 0 else e
            fields.append(rec[i:e].strip())
        if e >= n:
            return fields
        i = e + 1


def _diagnose(
    parts: list[bytes],
    line: bytes,
    lineno: int,
    name: str,
    layout: _Layout,
    labels: str,
    use_w: bool,
) -> GraphFormatError:
    """The precise error for a line the scanner could not take."""
    text = _decode(line[:240])

    def err(message: str) -> GraphFormatError:
        return GraphFormatError(message, path=name, line=lineno, text=text)

    if layout.quoted and b'"' in line:
        quoted = _quoted_fields(line, layout.delimiter)
        if quoted is None:
            return err('a quoted field without its closing quote (RFC 4180: a field in '
                       'double quotes, a quote inside it doubled: "say ""hi""")')
        parts = quoted
    if len(parts) != layout.ncols:
        return err(f"expected {layout.ncols} columns (as on line {layout.first_line}), "
                   f"got {len(parts)}")
    for tok in parts[:2]:
        t = tok.strip()
        if not t:
            return err("empty field")
        if labels == "int":
            shown = _short(t)
            if not (t.isdigit() or (t[:1] in (b"+", b"-") and t[1:].isdigit())):
                return err(f"node id {shown!r} is not a non-negative integer; {_LABELS_HINT}")
            if t[:1] == b"-" and t[1:].strip(b"0"):
                return err(f"negative node id {shown}; node ids must be >= 0")
            if len(t.lstrip(b"+").lstrip(b"0")) > 19:  # (int() takes at most 4,300 digits)
                return err(f"node id {shown} is beyond the int64 range (ids must be < "
                           f"2**63); {_BIG_HINT}")
    if use_w:
        t = parts[2].strip()
        shown = _short(t)
        try:
            if b"_" in t:
                raise ValueError
            v = float(t)
        except ValueError:
            return err(f"weight {shown!r} is not a number")
        if not math.isfinite(v) or v < 0:
            return err(f"weight {shown} is not allowed: weights must be finite and >= 0")
    return err("cannot parse this line")
