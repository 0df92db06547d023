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
from typing import Any

from webrank.errors import GraphFormatError
from webrank.files.sources import check_input, compression_of
from webrank.graph import Graph
from webrank.io.frames import graph_from_arrow
from webrank.io.options import ReadOptions, reader_options
from webrank.memory import check_claim
from webrank.tables import arrow_threads, require_columns

__all__ = ["edge_table_file", "read_parquet", "write_parquet"]

_KEYWORDS = ("columns", "labels", "weighted", "node_ids", "duplicates", "progress", "name",
             "device", "directed")


def read_parquet(
    path: str | os.PathLike[str], *, options: ReadOptions | None = None, **overrides: Any
) -> Graph:
    """Read an edge table from a Parquet file.

    One row per edge; the table becomes a graph through
    :func:`~webrank.io.frames.graph_from_arrow`, as a DataFrame does.

    Parameters
    ----------
    path : str or os.PathLike
        The Parquet file (it compresses internally: not through ``.gz``/``.bz2``).
    options : ReadOptions, optional
        How to read it; ``delimiter`` does not apply. ``columns`` names the source,
        target and weight columns. ``labels="string"`` treats any id column as labels;
        string columns always are labels. ``weighted``: None uses the weight column if
        present. ``progress`` is called before and after reading.
    **overrides
        The options that apply, as keywords (``columns=("from", "to")``); they win over
        ``options``.

    Returns
    -------
    Graph
        One edge per row of the table.

    Raises
    ------
    GraphFormatError
        Not a Parquet file, missing columns (the message lists those present), nulls,
        negative/non-integer ids, ids beyond int64, non-numeric/NaN/inf/negative weights
        (naming the row, 0-based).
    """
    import pyarrow as pa

    opts = reader_options("read_parquet", options, overrides, _KEYWORDS)
    path = check_input(path)
    opts = opts.named(path)
    name, progress = opts.name, opts.progress
    if compression_of(path):
        raise GraphFormatError("a Parquet file cannot be read through .gz/.bz2 (Parquet "
                               "compresses internally); decompress it first", path=name)
    total = os.path.getsize(path)
    if progress is not None:
        progress(0, total)
    arrow_threads()  # pyarrow's pool no larger than this process's CPUs
    pf, src_col, dst_col, w_col = edge_table_file(path, opts, name)
    use_w = w_col is not None
    wanted = [src_col, dst_col] + ([w_col] if use_w else [])
    # the rows the metadata claims, checked against the memory before reading them: the
    # columns as read (8 bytes a value), as int64 ids (16) and the CSR build (16). (Not
    # against the file's bytes: run-length encoding holds any number of equal values.)
    check_claim(pf.metadata.num_rows, "rows", "the file's metadata", path=name,
                item_bytes=8 * len(wanted) + 32, hint="is it an edge table?")
    try:
        # integer ids a few row groups at a time (else the table, whose checks name a
        # bad row)
        ids = _int32_columns(pf, src_col, dst_col) if opts.labels == "int" and not use_w \
            else None
        table = pf.read(columns=wanted) if ids is None else None
    except (pa.ArrowException, OSError, ValueError) as e:
        raise GraphFormatError(f"cannot read the Parquet data: {e}", path=name) from None
    if progress is not None:
        progress(total, total)
    if ids is not None:
        return opts.graph(*ids)
    return graph_from_arrow(table, src_col, dst_col, w_col, options=opts)


def edge_table_file(path: Any, options: ReadOptions, name: Any = None
                    ) -> tuple[Any, str, str, str | None]:
    """A Parquet edge table opened (its schema read, not its data) and the columns it is
    read by: ``(file, source, target, weight or None)``. The columns are
    ``options.columns``; the weight column is used where the file has it, unless
    ``options.weighted`` is False (True: it must be there). Shared by
    :func:`read_parquet` and the partitioned readers (webrank.distributed.inputs).

    Raises GraphFormatError (``name``, default ``path``): not a Parquet file, or missing
    columns (the message lists those present and how to choose others)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = path if name is None else name
    source, target, *rest = options.columns
    weight = rest[0] if rest else None
    try:
        pf = pq.ParquetFile(path)
        present = pf.schema_arrow.names
    except (pa.ArrowException, OSError, ValueError) as e:
        raise GraphFormatError(f"not a readable Parquet file: {e}", path=name) from None
    required = [source, target] + ([weight] if options.weighted is True else [])
    require_columns(present, required, name, where="the file", hint="columns=(src, dst, "
                    "weight), or --columns SRC,DST,WEIGHT on the command line,")
    if weight not in present or options.weighted is False:
        weight = None
    return pf, source, target, weight


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
        Output file (Parquet compresses its columns itself).
    columns : sequence of str, default ("src", "dst", "weight")
        Column names.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from webrank.files.atomic import atomic_write

    src, dst, w = graph.edges()
    lab = graph.labels
    data = {columns[0]: src if lab is None else lab[src],
            columns[1]: dst if lab is None else lab[dst]}
    if w is not None:
        data[columns[2]] = w
    table = pa.table({k: pa.array(v) for k, v in data.items()})
    with atomic_write(path, "wb") as f:
        pq.write_table(table, f)


def _int32_columns(pf: Any, source: str, target: str) -> tuple[Any, Any] | None:
    """The two id columns of an unweighted edge table, read a row group at a time into
    int32 arrays: 8 bytes a link, where the whole table in int64 and its NumPy copy held
    32. None where a row group's ids are not integers without nulls in ``0 .. 2**31 - 1``
    (the caller then reads the table, whose checks name the bad row)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from webrank.files.arrow import copy_chunks

    schema = pf.schema_arrow
    if not all(pa.types.is_integer(schema.field(c).type) for c in (source, target)):
        return None
    rows, groups = pf.metadata.num_rows, pf.metadata.num_row_groups
    out = (np.empty(rows, np.int32), np.empty(rows, np.int32))
    at = 0
    step = max(1, arrow_threads())  # row groups decoded side by side, one a thread
    for first in range(0, groups, step):
        part = pf.read_row_groups(range(first, min(first + step, groups)),
                                  columns=[source, target])
        if at + part.num_rows > rows:  # more rows than the metadata says: the table's
            return None                 # own read decides
        for col, dest in zip((part.column(source), part.column(target)), out, strict=True):
            if col.null_count:
                return None
            if len(col):
                bounds = pc.min_max(col)
                if bounds["min"].as_py() < 0 or bounds["max"].as_py() > 2**31 - 1:
                    return None
            copy_chunks(col, dest[at:at + len(col)])
        at += part.num_rows
    return (out[0], out[1]) if at == rows else None

