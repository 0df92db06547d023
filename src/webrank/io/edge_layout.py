"""The head of an edge list (:mod:`webrank.io.edgelist`): comments, an optional header,
the delimiter and the column count, found by peeking at the first lines
(:func:`sniff`, giving a :class:`Layout`); the tokenising rules every parse path shares
(:func:`splitter`, RFC 4180 quoting of ``.csv`` files: :func:`quoted_record`,
:func:`quoted_fields`); and the file's format rules as constants.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from webrank.errors import GraphFormatError, InputWarning
from webrank.files.sources import (
    line_cap,
    long_line_error,
)

__all__ = ["BIG_HINT", "BOM", "HEADER_WORDS", "INT64_MAX", "LABELS_HINT", "WHAT", "Layout",
           "decode", "drop_unused_header", "is_comment", "is_number", "quoted_fields",
           "quoted_record", "sniff", "splitter"]

#: Tokens that make a first line a header in ``labels="string"`` mode (lower-cased).
HEADER_WORDS = frozenset(
    """source target src dst dest destination from to weight weights w u v i j
    fromnodeid tonodeid from_id to_id fromid toid source_id target_id sourceid targetid
    node1 node2 node_1 node_2 id1 id2 head tail value
    """.split()
)

INT64_MAX = np.iinfo(np.int64).max
BOM = b"\xef\xbb\xbf"
BIG_HINT = 'to read such ids as labels pass labels="string" (CLI: --labels string)'
LABELS_HINT = (
    'for non-numeric node labels (URLs, names) pass labels="string" (CLI: --labels string)'
)
WHAT = "a text edge list"
_SAMPLE_BYTES = 1 << 16  # bytes of data lines peeked at to choose delimiter/columns
_SAMPLE_LINES = 64


@dataclass(frozen=True)
class Layout:
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


def splitter(delimiter: str, labels: str, quoted: bool = False
              ) -> Callable[[bytes], list[bytes]]:
    """Split a line into fields the way the exact scanner does (``quoted``: a ``.csv``
    file's line, RFC 4180 quoting where it holds a ``"``)."""
    if quoted and delimiter != " ":
        plain = splitter(delimiter, labels)

        def split(line: bytes) -> list[bytes]:
            if 34 in line:
                fields = quoted_fields(line, delimiter)
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


def is_comment(line: bytes) -> bool:
    """Blank line, or a ``#``/``%`` comment."""
    s = line.strip()
    return not s or s[:1] in (b"#", b"%")


def is_number(tok: bytes) -> bool:
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


def drop_unused_header(
    cols: tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None],
    name: str,
    layout: Layout,
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


def decode(line: bytes) -> str:
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


def sniff(
    stream: BinaryIO,
    name: str,
    labels: str,
    delimiter: str | None,
    weighted: bool | None,
    header: bool | None = None,
    quoted: bool = False,
) -> tuple[bytes, Layout]:
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
            if pos == 0 and buf.startswith(BOM):
                pos = len(BOM)  # a UTF-8 byte-order mark is not part of the first line
            if b"\x00" in chunk:  # binary data: refused from its first block
                _check_text(bytes(buf), name, seen)
        # classify complete lines (the last one may lack its newline at EOF)
        while True:
            end = buf.find(b"\n", pos)
            # a line longer than the cap (line end included), or one that will be
            if (end - pos + 1 if end >= 0 else len(buf) - pos + (not eof)) > cap:
                raise long_line_error(name, lineno + 1, decode(bytes(buf[pos:pos + 120])),
                                      WHAT)
            if end < 0:
                if not eof or pos >= len(buf):
                    break
                end = len(buf)
            line = bytes(buf[pos:end])
            start, pos = pos, end + 1
            lineno += 1
            if is_comment(line):
                continue
            seen.append((start, lineno, line))
            if first is None:
                if len(seen) == 1 and header is not False:
                    names = _header_words(line, quoted)
                    if header or (names and labels == "int"
                                  and not any(map(is_number, names))):
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

    return buf, _layout(sample, seen, column_names, first, first_line, name=name,
                        labels=labels, delimiter=delimiter, weighted=weighted, quoted=quoted)


def _layout(sample: list[bytes], seen: list[tuple[int, int, bytes]],
            column_names: list[bytes] | None, first: int, first_line: int, *, name: str,
            labels: str, delimiter: str | None, weighted: bool | None,
            quoted: bool) -> Layout:
    """The layout the sampled data lines show (:func:`sniff` found them): the delimiter
    (given, or detected below a line of column names), whether that line is a header
    (where the line below cannot be an edge above it), and the column count, checked."""
    if quoted:  # records: lines joined where a quoted field holds a line break
        sample = _joined_records(sample)
    delim = delimiter
    if delim is None:  # (from the lines below a line of column names)
        delim = _detect_delimiter(sample[1:] if column_names and len(sample) > 1 else sample,
                                  labels, quoted)
    split = splitter(delim, labels, quoted)
    maybe_header = None
    if column_names is not None:
        if len(sample) > 1 and _not_an_edge_above(split(sample[0]), split(sample[1]),
                                                  weighted):
            first, first_line = seen[1][0], seen[1][1]  # a header: the data starts below
            sample = sample[1:]
        else:
            maybe_header = decode(sample[0])
    ncols = len(split(sample[0]))
    text = decode(sample[0])
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
    return Layout(first, first_line, delim, ncols, maybe_header, quoted and delim != " ")


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
    return (len(names) == 3 and weighted is not False and not is_number(names[2])
            and is_number(below[2]))


def _detect_delimiter(sample: list[bytes], labels: str, quoted: bool = False) -> str:
    """Tab, comma or whitespace: the first that splits every sampled line alike in 2-3."""
    for cand in ("\t", ",", " "):
        if cand != " " and cand.encode() not in sample[0]:
            continue
        split = splitter(cand, labels, quoted)
        counts = {len(split(line)) for line in sample}
        if len(counts) == 1 and counts <= {2, 3}:
            return cand
    if b"\t" in sample[0]:
        return "\t"
    return "," if b"," in sample[0] else " "


def quoted_record(
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
            raise long_line_error(name, lineno, decode(line[:120]), WHAT)
        odd ^= nxt.count(b'"') % 2 == 1
        if not odd:
            break
    return b"".join(parts), len(parts) - 1


def quoted_fields(record: bytes, delimiter: str) -> list[bytes] | None:
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
