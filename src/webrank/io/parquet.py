"""Parquet edge tables: one row per edge, in named columns.

The source, target and (optional) weight columns are named by ``columns`` (default
``("src", "dst", "weight")``). Integer id columns are node ids (>= 0, < 2**63); string
(or dictionary-of-string) columns are node labels, numbered in order of first
appearance — ``labels="string"`` treats integer columns as labels too. Nulls are errors.
The table read becomes a graph through :func:`webrank.io.frames.graph_from_arrow`, the
function behind :meth:`Graph.from_dataframe` too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from webrank.errors import GraphFormatError
from webrank.graph import Graph
from webrank.io._open import Progress, check_input, compression_of
from webrank.io.frames import graph_from_arrow, require_columns

__all__ = ["read_parquet", "write_parquet"]


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
    required = [src_col, dst_col] + ([w_col] if weighted is True else [])
    require_columns(present, required, name, where="the file",
                    hint="columns=(src, dst, weight)")
    use_w = w_col is not None and w_col in present and weighted is not False
    wanted = [src_col, dst_col] + ([w_col] if use_w else [])
    try:
        table = pf.read(columns=wanted)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise GraphFormatError(f"cannot read the Parquet data: {e}", path=name) from None
    if progress is not None:
        progress(total, total)
    return graph_from_arrow(table, src_col, dst_col, w_col if use_w else None,
                            labels=labels, node_ids=node_ids, duplicates=duplicates,
                            name=name)


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
