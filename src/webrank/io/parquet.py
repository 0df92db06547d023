"""Parquet edge tables: one row per edge, in named columns.

The source, target and (optional) weight columns are named by ``columns`` (default
``("src", "dst", "weight")``). Integer id columns are node ids (>= 0, < 2**63); string
(or dictionary-of-string) columns are node labels, numbered in order of first
appearance — ``labels="string"`` treats integer columns as labels too. Nulls are errors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from webrank.errors import GraphFormatError
from webrank.graph import Graph
from webrank.io._open import Progress, check_input, compression_of

__all__ = ["read_parquet", "write_parquet"]

_INT64_MAX = np.iinfo(np.int64).max


def read_parquet(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str | None] = ("src", "dst", "weight"),
    labels: str = "int",
    weighted: bool | None = None,
    node_ids: str = "appear",
    duplicates: str = "collapse",
    progress: Progress | None = None,
    name: str | None = None,
) -> Graph:
    """Read an edge table from a Parquet file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    columns : sequence of str, default ("src", "dst", "weight")
        Names of the source, target and weight columns; the weight name may be left out
        or None.
    labels : {"int", "string"}, default "int"
        ``"string"`` treats any id column as labels; string columns always are labels.
    weighted : bool, optional
        None (default): use the weight column if present. True: require it. False:
        ignore it.
    node_ids : {"appear", "range"}, default "appear"
        Node set for integer ids, see :meth:`Graph.from_edges`.
    duplicates : {"collapse", "sum"}, default "collapse"
        Parallel edges, see :meth:`Graph.from_edges`.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``; called before and after reading.
    name : str, optional
        The graph's name; default ``str(path)``.

    Returns
    -------
    Graph

    Raises
    ------
    GraphFormatError
        Not a Parquet file, missing columns (the message lists those present), nulls,
        negative/non-integer ids, ids beyond int64, non-numeric/NaN/inf/negative weights
        (naming the row, 0-based).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if labels not in ("int", "string"):
        raise ValueError(f"labels must be 'int' or 'string', not {labels!r}")
    path = check_input(path)
    name = str(path) if name is None else name
    if compression_of(path):
        raise GraphFormatError("a Parquet file cannot be read through .gz/.bz2 (Parquet "
                               "compresses internally); decompress it first", path=name)
    cols = list(columns)
    if len(cols) not in (2, 3):
        raise ValueError("columns must be (src, dst) or (src, dst, weight) names")
    src_col, dst_col = cols[0], cols[1]
    w_col = cols[2] if len(cols) == 3 else None
    total = os.path.getsize(path)
    if progress is not None:
        progress(0, total)
    try:
        pf = pq.ParquetFile(path)
        present = pf.schema_arrow.names
    except (pa.ArrowException, OSError, ValueError) as e:
        raise GraphFormatError(f"not a readable Parquet file: {e}", path=name) from None
    missing = [c for c in (src_col, dst_col) if c not in present]
    if weighted is True and (w_col is None or w_col not in present):
        missing.append(w_col or "<weight>")
    if missing:
        raise GraphFormatError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}"
            f"; the file has {', '.join(map(repr, present))} (pass columns=(src, dst, weight)"
            " to choose)",
            path=name,
        )
    use_w = w_col is not None and w_col in present and weighted is not False
    wanted = [src_col, dst_col] + ([w_col] if use_w else [])
    try:
        table = pf.read(columns=wanted)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise GraphFormatError(f"cannot read the Parquet data: {e}", path=name) from None
    if progress is not None:
        progress(total, total)

    s, d = _plain(table.column(src_col)), _plain(table.column(dst_col))
    for col_name, col in ((src_col, s), (dst_col, d)):
        if col.null_count:
            k = _first_null(col)
            raise GraphFormatError(f"column {col_name!r} is null in row {k}", path=name)
    w = None
    if use_w:
        w = _weights(_plain(table.column(w_col)), w_col, name)

    is_text = [pa.types.is_string(c.type) or pa.types.is_large_string(c.type)
               or pa.types.is_binary(c.type) or pa.types.is_large_binary(c.type)
               for c in (s, d)]
    if labels == "string" or any(is_text):
        from webrank.io.edgelist import factorize

        if any(is_text):
            # mixed text/int columns: labels are text
            s, d = s.cast(pa.string()), d.cast(pa.string())
        cs, cd, node_labels = factorize(s, d)
        return Graph.from_edges(cs, cd, w, labels=node_labels, duplicates=duplicates,
                                name=name)
    src = _ids(s, src_col, name)
    dst = _ids(d, dst_col, name)
    return Graph.from_edges(src, dst, w, node_ids=node_ids, duplicates=duplicates, name=name)


def _plain(col: Any) -> Any:
    """Dictionary-encoded columns decoded to their value type."""
    import pyarrow as pa

    if pa.types.is_dictionary(col.type):
        return col.cast(col.type.value_type)
    return col


def _first_null(col: Any) -> int:
    import pyarrow.compute as pc

    return int(np.argmax(pc.is_null(col).to_numpy(zero_copy_only=False)))


def _ids(col: Any, col_name: str, name: str) -> np.ndarray:
    """An integer (or integral float) id column -> checked int64 array."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_integer(t):
        a = col.to_numpy()
        if pa.types.is_unsigned_integer(t) and a.size and a.max() > _INT64_MAX:
            k = int(np.argmax(a > _INT64_MAX))
            raise GraphFormatError(
                f"column {col_name!r}, row {k}: node id {a[k]} is beyond the int64 range; "
                'pass labels="string" to use the ids as labels',
                path=name,
            )
        a = a.astype(np.int64, copy=False)
    elif pa.types.is_floating(t):
        f = col.to_numpy()
        bad = ~np.isfinite(f) | (f != np.floor(f))
        if bad.any():
            k = int(np.argmax(bad))
            raise GraphFormatError(
                f"column {col_name!r}, row {k}: node id {f[k]!r} is not an integer",
                path=name,
            )
        a = f.astype(np.int64)
    else:
        raise GraphFormatError(
            f"column {col_name!r} has type {t}; node ids must be integers or strings",
            path=name,
        )
    if a.size and a.min() < 0:
        k = int(np.argmin(a))
        raise GraphFormatError(
            f"column {col_name!r}, row {k}: negative node id {a[k]}", path=name
        )
    return a


def _weights(col: Any, col_name: str, name: str) -> np.ndarray:
    import pyarrow as pa

    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
            or pa.types.is_decimal(col.type)):
        raise GraphFormatError(
            f"weight column {col_name!r} has type {col.type}; weights must be numbers",
            path=name,
        )
    if col.null_count:
        raise GraphFormatError(
            f"weight column {col_name!r} is null in row {_first_null(col)}", path=name
        )
    w = np.asarray(col.cast(pa.float64()).to_numpy(), dtype=np.float64)
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise GraphFormatError(
            f"column {col_name!r}, row {k}: weight {float(w[k])} is not allowed; weights must "
            "be finite and >= 0",
            path=name,
        )
    return w


def write_parquet(
    graph: Graph,
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str] = ("src", "dst", "weight"),
) -> None:
    """Write ``graph``'s edges as a Parquet table (original labels; written atomically).

    Parameters
    ----------
    graph : Graph
        The graph.
    path : str or os.PathLike
        Output file.
    columns : sequence of str, default ("src", "dst", "weight")
        Column names.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from webrank.io._atomic import atomic_write

    src, dst, w = graph.edges()
    lab = graph.labels
    data = {columns[0]: src if lab is None else lab[src],
            columns[1]: dst if lab is None else lab[dst]}
    if w is not None:
        data[columns[2]] = w
    table = pa.table({k: pa.array(v) for k, v in data.items()})
    with atomic_write(path, "wb") as f:
        pq.write_table(table, f)
