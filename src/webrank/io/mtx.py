"""Matrix Market (``.mtx``) files, read with :func:`scipy.io.mmread`.

Convention: entry ``(i, j)`` is the edge ``i -> j`` (row = source, column = target),
the adjacency-matrix convention of networkx and SciPy; node ``k`` is row/column ``k + 1``
of the file (Matrix Market indices are 1-based, webrank's 0-based). The matrix must be
square, its size is the number of nodes (``node_ids`` does not apply: the file declares
the node set). ``symmetric`` matrices give both directions of each off-diagonal entry
(read with ``directed=False``, the stored triangle is the undirected edge list: the same
graph, whatever ``duplicates``);
``pattern`` matrices are unweighted; ``integer``/``real`` values are edge weights (finite
and >= 0); ``complex``, ``hermitian`` and ``skew-symmetric`` are refused. Both
``coordinate`` and dense ``array`` layouts are read (a dense matrix's nonzeros are its
edges).
"""

from __future__ import annotations

import io
import os
import re
from typing import Any

import numpy as np

from webrank.build import first_bad_weight
from webrank.errors import GraphFormatError
from webrank.files.sources import LineCapReader, line_text, open_binary
from webrank.graph import Graph
from webrank.io.options import ReadOptions, reader_options

__all__ = ["read_mtx", "write_mtx"]

_KEYWORDS = ("weighted", "duplicates", "progress", "name", "device", "directed")
_LINE_RE = re.compile(r"[Ll]ine (\d+)")


def read_mtx(
    path: str | os.PathLike[str], *, options: ReadOptions | None = None, **overrides: Any
) -> Graph:
    """Read a Matrix Market file; entry ``(i, j)`` is the edge ``i -> j``.

    Node ``k`` is row/column ``k + 1`` of the file; the matrix size is the node count.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.mtx`` file (plain, ``.gz`` or ``.bz2``).
    options : ReadOptions, optional
        How to read it; only ``weighted``, ``duplicates``, ``progress``, ``name``,
        ``device`` and ``directed`` apply (the file declares the node set).
        ``weighted``: None reads ``integer``/``real`` values as weights, a ``pattern``
        matrix as unweighted; True requires values; False ignores them. ``duplicates``:
        repeated entries.
    **overrides
        The options that apply, as keywords (``weighted=False``); they win over
        ``options``.

    Returns
    -------
    Graph
        With ``n`` = the matrix size.

    Raises
    ------
    GraphFormatError
        Not Matrix Market, a malformed or truncated file (with the line SciPy names),
        a non-square matrix, complex/hermitian/skew-symmetric data, negative or
        non-finite values.
    """
    import scipy.io
    import scipy.sparse as sp

    opts = reader_options("read_mtx", options, overrides, _KEYWORDS, path)
    path, name, weighted = os.fspath(path), opts.name, opts.weighted
    with open_binary(path, progress=opts.progress) as f:
        banner = f.peek(1024).split(b"\n", 1)[0].decode("ascii", "replace").strip()
        words = banner.lower().split()
        if len(words) < 5 or words[0] != "%%matrixmarket" or words[1] != "matrix":
            raise GraphFormatError(
                "not a Matrix Market file: the first line must be "
                "'%%MatrixMarket matrix coordinate|array <field> <symmetry>'",
                path=name, line=1, text=banner,
            )
        field, symmetry = words[3], words[4]
        if field == "complex" or symmetry in ("hermitian", "skew-symmetric"):
            raise GraphFormatError(
                f"{field} {symmetry} Matrix Market matrices are not graphs webrank can "
                "rank (weights must be real and >= 0)",
                path=name, line=1, text=banner,
            )
        if weighted is True and field == "pattern":
            raise GraphFormatError("weighted=True but this is a pattern matrix (no values)",
                                   path=name, line=1, text=banner)
        if words[2] == "array":  # dense: rows x cols values would be read
            from webrank.memory import check_fits

            size = _declared_size(f.peek(1 << 16))
            if size is not None:
                check_fits(8 * size[0] * size[1], f"a dense {size[0]:,} x {size[1]:,} matrix",
                           "store a graph as 'coordinate' entries", path=name)
        else:  # the entries the size line claims, checked before SciPy allocates them
            from webrank.files.sources import plain_size
            from webrank.memory import check_mtx_entries

            check_mtx_entries(f.peek(1 << 16), path=name, file_bytes=plain_size(f))
        # a line longer than the cap ends the data SciPy sees (it would hold it whole);
        # buffered: SciPy reads 1 KiB at a time
        capped = LineCapReader(f, path, name, "a Matrix Market file")
        try:
            mat = scipy.io.mmread(io.BufferedReader(capped, buffer_size=1 << 20))
        except GraphFormatError:
            raise
        except (ValueError, TypeError, OverflowError, IndexError, OSError, EOFError) as e:
            if capped.error is not None:
                raise capped.error from None
            msg = str(e)
            m = _LINE_RE.search(msg)
            lineno = int(m.group(1)) if m else None
            text = line_text(path, lineno) if lineno else None
            raise GraphFormatError(f"malformed Matrix Market file: {msg}", path=name,
                                   line=lineno, text=text) from None
        if capped.error is not None:
            raise capped.error
    if not sp.issparse(mat):
        mat = sp.coo_array(np.asarray(mat))
    mat = sp.coo_array(mat)
    rows, cols = mat.shape
    if rows != cols:
        raise GraphFormatError(
            f"the matrix is {rows} x {cols}; a graph needs a square matrix", path=name
        )
    w = None
    if field != "pattern" and weighted is not False:
        w = np.asarray(mat.data, dtype=np.float64)
        k = first_bad_weight(w)
        if k is not None:
            raise GraphFormatError(
                f"entry ({mat.row[k] + 1}, {mat.col[k] + 1}) has value {float(w[k])}; edge "
                "weights must be finite and >= 0",
                path=name,
            )
    row, col = mat.row, mat.col
    if symmetry == "symmetric" and not opts.directed:
        # SciPy gave both triangles; the stored one is the undirected edge list
        lower = row >= col
        row, col, w = row[lower], col[lower], None if w is None else w[lower]
    return opts.graph(row, col, w, node_ids="range", num_nodes=rows)


def write_mtx(graph: Graph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` as a ``coordinate`` Matrix Market file (``pattern`` or ``real``).

    Entry ``(i, j)`` is the edge ``i -> j``, 1-based. Labels are not stored. Written
    atomically.

    Parameters
    ----------
    graph : Graph
        The graph.
    path : str or os.PathLike
        Output file (uncompressed).
    """
    import scipy.io
    import scipy.sparse as sp

    from webrank.files.atomic import atomic_write

    src, dst, w = graph.edges()
    data = np.ones(src.size) if w is None else w
    mat = sp.coo_array((data, (src, dst)), shape=(graph.n, graph.n))
    with atomic_write(path, "wb") as f:
        scipy.io.mmwrite(f, mat, field="pattern" if w is None else "real")


def _declared_size(head: bytes) -> tuple[int, int] | None:
    """``(rows, cols)`` from the size line after the banner and comments, or None."""
    for line in head.split(b"\n")[1:]:
        text = line.strip()
        if not text or text.startswith(b"%"):
            continue
        try:
            rows, cols = (int(t) for t in text.split()[:2])
        except ValueError:
            return None
        return rows, cols
    return None
