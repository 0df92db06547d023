"""The in-link adjacency format of Kumar et al. (Fig. 1): one line per destination node.

Each line is ``dest_id in_degree src_1 ... src_k`` (whitespace separated) and gives the
edges ``src_i -> dest_id``; ``in_degree`` must equal ``k``. Lines starting with ``#`` or
``%`` are comments; blank lines are ignored; ``\n`` or ``\r\n`` line ends; plain,
``.gz`` or ``.bz2``. A destination listed with in-degree 0 is still a node. Example (the
paper's figure)::

    # dest in_degree sources...
    1 2 3 7
    2 4 4 5 7 9
    3 3 2 7 9
    4 1 1

Lines are read a piece at a time (:class:`~webrank.files.sources.TokenLines`): a line may
list any number of sources, but no field may be longer than
:data:`~webrank.files.sources.MAX_LINE_BYTES`, and a comment is skipped unread. Tokens are
split per line, then converted and checked in bulk (NumPy), so there is no per-edge
Python work.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from webrank.errors import GraphFormatError
from webrank.files.sources import Progress, TokenLines, line_text, open_binary
from webrank.graph import Graph
from webrank.io.options import ReadOptions, reader_options

__all__ = ["read_adjacency", "write_adjacency"]

_KEYWORDS = ("labels", "weighted", "node_ids", "duplicates", "progress", "name", "device",
             "directed")
_INT64_MAX = np.iinfo(np.int64).max
_LABELS_HINT = 'for non-numeric node labels pass labels="string" (CLI: --labels string)'


def read_adjacency(
    path: str | os.PathLike[str], *, options: ReadOptions | None = None, **overrides: Any
) -> Graph:
    """Read an adjacency file (``dest_id in_degree src_1 ... src_k`` per line).

    Each line gives the edges ``src_i -> dest_id``; ``in_degree`` must equal the number
    of sources (:mod:`webrank.io.adjacency`).

    Parameters
    ----------
    path : str or os.PathLike
        The file (plain, ``.gz`` or ``.bz2``).
    options : ReadOptions, optional
        How to read it; ``delimiter`` and ``columns`` do not apply. ``in_degree`` is an
        integer whatever ``labels`` says. The format has no weights: ``weighted`` None
        or False; True raises GraphFormatError. With ``node_ids="appear"`` the nodes are
        the ids that occur as destination or source.
    **overrides
        The options that apply, as keywords (``node_ids="range"``); they win over
        ``options``.

    Returns
    -------
    Graph
        Every listed destination is a node, even one with in-degree 0.

    Raises
    ------
    GraphFormatError
        Missing/unreadable/binary file, no lines, a line with fewer than 2 tokens, an
        ``in_degree`` that differs from the number of sources, a bad node id (with line
        number and text).
    """
    opts = reader_options("read_adjacency", options, overrides, _KEYWORDS, path)
    path, name = os.fspath(path), opts.name
    if opts.weighted:
        raise GraphFormatError("weighted=True, but the adjacency format has no weights",
                               path=name)
    toks, cnt, lno = _read_tokens(path, name, progress=opts.progress)

    def fail(row: int, message: str) -> GraphFormatError:
        ln = int(lno[row])
        return GraphFormatError(message, path=name, line=ln, text=line_text(path, ln))

    if (cnt < 2).any():
        raise fail(int(np.argmax(cnt < 2)),
                   "a line needs at least 'dest_id in_degree' (then the in_degree sources)")
    starts = np.cumsum(cnt) - cnt
    tok = _token_array(toks, starts, opts.labels, fail)
    del toks
    nsrc = _checked_sources(tok, starts, cnt, fail)

    keep = np.ones(tok.size, dtype=bool)
    keep[starts + 1] = False
    id_tok = tok[keep]  # per line: dest, then its sources
    per_line = cnt - 1
    first_of_line = np.cumsum(per_line) - per_line
    is_dest = np.zeros(id_tok.size, dtype=bool)
    is_dest[first_of_line] = True

    def fail_at(k: int, message: str) -> GraphFormatError:  # k: index into id_tok
        return fail(int(np.searchsorted(first_of_line, k, side="right") - 1), message)

    if opts.labels == "string":
        return _graph_of_labels(opts, id_tok, is_dest, nsrc, fail_at)
    return _graph_of_ids(opts, id_tok, is_dest, nsrc, fail_at)


def _read_tokens(path: str, name: str, *,
                 progress: Progress | None) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """``(tokens, count, line_number)``: every line's tokens in one list, and per line
    (comments and blank lines skipped) how many it has and its 1-based number in the
    file. GraphFormatError for a file with no such line."""
    linenos: list[int] = []
    counts: list[int] = []
    toks: list[bytes] = []
    extend = toks.extend
    with open_binary(path, progress=progress) as f:
        lines = TokenLines(f, name, what="a text adjacency file")
        for i, parts in lines:
            linenos.append(i)
            counts.append(len(parts))
            extend(parts)
    if not counts:
        if lines.comments:
            raise GraphFormatError("no nodes: the file holds only comments", path=name)
        raise GraphFormatError("empty file: no nodes", path=name)
    return toks, np.array(counts, dtype=np.int64), np.array(linenos, dtype=np.int64)


def _token_array(toks: list[bytes], starts: np.ndarray, labels: str, fail) -> np.ndarray:
    """The tokens as one array: fixed-width bytes for integer ids, objects for labels
    (a fixed-width array takes the longest token's width for every token, so integer
    tokens too long for an id are refused first, by :func:`_shorten_ids`)."""
    if labels == "int":
        _shorten_ids(toks, starts, fail)
        return np.array(toks, dtype=np.bytes_)
    tok = np.empty(len(toks), dtype=object)
    tok[:] = toks
    return tok


def _checked_sources(tok: np.ndarray, starts: np.ndarray, cnt: np.ndarray,
                     fail) -> np.ndarray:
    """The number of sources each line lists, after checking that its ``in_degree``
    token (the line's second) is a non-negative integer equal to that number."""
    if tok.dtype == object:  # labels: a token longer than an int64 is no in_degree
        deg_tok = np.array([t if len(t) <= 18 else b"-" for t in tok[starts + 1]],
                           dtype=np.bytes_)
    else:
        deg_tok = tok[starts + 1]
    ok = np.char.isdigit(deg_tok) & (np.char.str_len(deg_tok) <= 18)
    if not ok.all():
        row = int(np.argmin(ok))
        raise fail(row, f"in_degree {_short(tok[starts[row] + 1])!r} is not a non-negative "
                        "integer")
    deg = deg_tok.astype(np.int64)
    nsrc = cnt - 2
    if (deg != nsrc).any():
        row = int(np.argmax(deg != nsrc))
        raise fail(row, f"in_degree is {deg[row]} but the line lists {nsrc[row]} source "
                        f"node{'s' if nsrc[row] != 1 else ''}")
    return nsrc


def _graph_of_labels(opts: ReadOptions, id_tok: np.ndarray, is_dest: np.ndarray,
                     nsrc: np.ndarray, fail_at) -> Graph:
    """The graph of string labels: nodes in order of first appearance; ``fail_at(k,
    message)`` the error for token ``k`` of ``id_tok``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(id_tok.tolist(), type=pa.binary())
    try:
        arr = arr.cast(pa.string())
    except pa.ArrowInvalid:
        k = next(i for i, b in enumerate(id_tok.tolist()) if not _is_utf8(b))
        raise fail_at(k, "a node label is not UTF-8 text") from None
    uniq = pc.unique(arr)  # first-appearance order
    codes = np.asarray(pc.index_in(arr, value_set=uniq).to_numpy(), dtype=np.int64)
    src = codes[~is_dest]
    dst = np.repeat(codes[is_dest], nsrc)
    return opts.graph(src, dst, labels=uniq.to_numpy(zero_copy_only=False))


def _graph_of_ids(opts: ReadOptions, id_tok: np.ndarray, is_dest: np.ndarray,
                  nsrc: np.ndarray, fail_at) -> Graph:
    """The graph of integer ids: ``node_ids="range"`` takes 0..max id; otherwise every
    listed id is a node (a destination with in-degree 0 included), numbered in id order,
    and ids that are exactly 0..n-1 stay as they are."""
    ids = _parse_ids(id_tok, fail_at)
    src = ids[~is_dest]
    dst = np.repeat(ids[is_dest], nsrc)
    if opts.node_ids == "range":
        return opts.graph(src, dst, num_nodes=int(ids.max()) + 1)
    nodes = np.unique(ids)
    if nodes[-1] == nodes.size - 1:  # ids are exactly 0..n-1
        return opts.graph(src, dst, node_ids="range", num_nodes=int(nodes.size))
    return opts.graph(np.searchsorted(nodes, src), np.searchsorted(nodes, dst), labels=nodes)


def _shorten_ids(toks: list[bytes], starts: np.ndarray, fail) -> None:
    """Refuse the tokens of integer-id lines too long for an id or an in_degree (more
    than 19 characters), or drop the zeros in front of them, in place; ``starts``: the
    index of each line's first token, ``fail(row, message)`` the error for a line."""
    if not toks or max(map(len, toks)) <= 19:
        return
    for k in [k for k, t in enumerate(toks) if len(t) > 19]:  # rare
        t = toks[k].lstrip(b"0") or b"0"
        if len(t) <= 19 and t.isdigit():
            toks[k] = t
            continue
        row = int(np.searchsorted(starts, k, side="right") - 1)
        shown = _short(toks[k])
        if k == starts[row] + 1:
            raise fail(row, f"in_degree {shown!r} is not a non-negative integer")
        if toks[k][:1] == b"-" and toks[k][1:].isdigit():
            raise fail(row, f"negative node id {shown}; node ids must be >= 0")
        if toks[k].isdigit():
            raise fail(row, f"node id {shown} is beyond the int64 range (ids must be < "
                            '2**63); to read such ids as labels pass labels="string" '
                            "(CLI: --labels string)")
        raise fail(row, f"node id {shown!r} is not a non-negative integer; {_LABELS_HINT}")


def _parse_ids(tok: np.ndarray, fail) -> np.ndarray:
    """Byte-string tokens -> int64 ids, checked (digits only, < 2**63)."""
    digits = np.char.isdigit(tok)
    if not digits.all():
        k = int(np.argmin(digits))
        t = _text(tok[k])
        if t[:1] == "-" and t[1:].isdigit():
            raise fail(k, f"negative node id {t}; node ids must be >= 0")
        raise fail(k, f"node id {t!r} is not a non-negative integer; {_LABELS_HINT}")
    lens = np.char.str_len(tok)
    for k in np.flatnonzero(lens >= 19):  # rare: only these can exceed int64 (at most
        if int(tok[k]) > _INT64_MAX:      # 19 digits here: int() takes them)
            raise fail(int(k), f"node id {_text(tok[k])} is beyond the int64 range "
                               '(ids must be < 2**63); to read such ids as labels pass '
                               'labels="string" (CLI: --labels string)')
    return tok.astype(np.int64)


def write_adjacency(graph: Graph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` in the adjacency format (one line per node with in-links).

    Nodes are written as their labels (:meth:`Graph.node_labels`); nodes with no
    in-link and no out-link are written as ``dest 0`` lines so they survive a round
    trip. Weights are not written (the format has none). Written atomically.

    Parameters
    ----------
    graph : Graph
        The graph.
    path : str or os.PathLike
        Output file, plain text whatever its suffix.
    """
    from webrank.files.atomic import atomic_write

    lab = graph.node_labels()
    deg = graph.in_degree
    isolated = (deg == 0) & (graph.out_degree == 0)
    with atomic_write(path, "w") as f:
        f.write("# dest_id in_degree src_1 ... src_k\n")
        ip, ind = graph.indptr, graph.indices
        for i in np.flatnonzero((deg > 0) | isolated):
            srcs = " ".join(str(x) for x in lab[ind[ip[i]:ip[i + 1]]])
            f.write(f"{lab[i]} {deg[i]} {srcs}".rstrip() + "\n")


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _text(b: bytes) -> str:
    return bytes(b).decode("utf-8", "replace")


def _short(b: bytes) -> str:
    """A token as text for a message: a long one cut, with its length."""
    b = bytes(b)
    if len(b) <= 40:
        return _text(b)
    return f"{_text(b[:24])}...({len(b):,} characters)"
