"""The exact path of reading an edge list (:mod:`webrank.io.edgelist`): a line scanner
that parses what pyarrow cannot (comments anywhere, ragged whitespace, quoted labels)
or names the file, the 1-based line and the offending text (:func:`slow_read`,
:func:`diagnose`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import numpy as np

from webrank.build import first_bad_weight
from webrank.errors import GraphFormatError
from webrank.files.sources import (
    Progress,
    line_cap,
    line_text,
    long_line_error,
    open_binary,
)
from webrank.io.edge_layout import (
    BIG_HINT,
    BOM,
    INT64_MAX,
    LABELS_HINT,
    WHAT,
    Layout,
    decode,
    is_comment,
    is_number,
    quoted_fields,
    quoted_record,
    splitter,
)
from webrank.tables import factorize

__all__ = ["slow_read"]


def slow_read(
    path: str,
    name: str,
    layout: Layout,
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
        if layout.first_line == 1 and stream.peek(3)[:3] == BOM:
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
            k = next(i for i, v in enumerate(col) if not -INT64_MAX - 1 <= v <= INT64_MAX)
            shown = _short(str(col[k]).encode())
            if col[k] < 0:
                raise fail(k, f"negative node id {shown}; node ids must be >= 0") from None
            raise fail(k, f"node id {shown} is beyond the int64 range (ids must be < 2**63); "
                          f"{BIG_HINT}") from None
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
    lines: Iterable[bytes], name: str, layout: Layout, use_w: bool, cap: int
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
    split = splitter(layout.delimiter, "int")
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
                raise long_line_error(name, lineno, decode(line[:120]), WHAT) from None
            if is_comment(line):
                skips.append(len(src))
                continue
            if layout.quoted and 34 in line and 95 not in line:  # '"': RFC 4180 quoting
                q = quoted_fields(line, layout.delimiter)
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
    lines: Iterable[bytes], name: str, layout: Layout, use_w: bool, cap: int
) -> tuple[list[bytes], list[bytes], list[float], list[int]]:
    """The exact scanner for string labels (kept as bytes; decoded in bulk later).
    ``lines``: of at most ``cap + 1`` bytes, a longer one refused. In a ``.csv`` file a
    line with a ``"`` is an RFC 4180 record (:func:`quoted_fields`), continued on the
    next lines while a quoted field is open."""
    src: list[bytes] = []
    dst: list[bytes] = []
    wts: list[float] = []
    skips: list[int] = []
    split = splitter(layout.delimiter, "string")
    tab = layout.delimiter == "\t"
    ws = layout.delimiter == " "
    three = layout.ncols == 3
    quoted = layout.quoted
    lines = iter(lines)
    joined = 0  # lines joined to a record above (a quoted line break): lineno lags by it
    for lineno, line in enumerate(lines, layout.first_line):
        if quoted and 34 in line and not is_comment(line):  # '"'
            lineno += joined
            if len(line) > cap:
                raise long_line_error(name, lineno, decode(line[:120]), WHAT)
            record, more = quoted_record(line, lines, cap, name, lineno)
            joined += more
            parts = quoted_fields(record, layout.delimiter) or []
            c = parts[2] if use_w and len(parts) == 3 else b"0"
            if len(parts) != layout.ncols or not parts[0] or not parts[1] or 95 in c \
                    or not is_number(c):
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
                raise long_line_error(name, lineno + joined, decode(line[:120]),
                                      WHAT) from None
            if is_comment(line):
                skips.append(len(src))
                continue
            raise _diagnose(parts, line, lineno + joined, name, layout, "string",
                            use_w) from None
    return src, dst, wts, skips


def _diagnose(
    parts: list[bytes],
    line: bytes,
    lineno: int,
    name: str,
    layout: Layout,
    labels: str,
    use_w: bool,
) -> GraphFormatError:
    """The precise error for a line the scanner could not take."""
    text = decode(line[:240])

    def err(message: str) -> GraphFormatError:
        return GraphFormatError(message, path=name, line=lineno, text=text)

    if layout.quoted and b'"' in line:
        quoted = quoted_fields(line, layout.delimiter)
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
                return err(f"node id {shown!r} is not a non-negative integer; {LABELS_HINT}")
            if t[:1] == b"-" and t[1:].strip(b"0"):
                return err(f"negative node id {shown}; node ids must be >= 0")
            if len(t.lstrip(b"+").lstrip(b"0")) > 19:  # (int() takes at most 4,300 digits)
                return err(f"node id {shown} is beyond the int64 range (ids must be < "
                           f"2**63); {BIG_HINT}")
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
