"""Result tables to disk: named columns as CSV/TSV, Parquet or JSON, written atomically.

:meth:`webrank.PageRankResult.save` (``node, score``) and
:meth:`webrank.PersonalizedPageRankResult.save` (``seed_set, rank, node, score``) write
through :func:`write_columns`. Text is formatted by pyarrow's CSV writer in slices on
all cores (the slices are formatted concurrently, outside the GIL, and written in
order): floats in their shortest form that reads back as the same float64, labels that
hold the delimiter, a quote or a line break quoted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["TEXT_SUFFIXES", "write_columns"]

#: text suffixes and their delimiters
TEXT_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": "\t"}
_SLICE_ROWS = 1 << 18  # rows formatted per task


def write_columns(path: str | os.PathLike[str], columns: Mapping[str, Any],
                  summary: Mapping[str, Any] | None = None) -> None:
    """Write ``columns`` (name -> 1-D array, equal lengths) to ``path`` by its suffix.

    ``.csv`` / ``.tsv`` / ``.txt``: a header line of the names, then one line per row;
    ``.parquet``: the columns; ``.json``: ``summary`` plus each column as a list. The
    file appears complete at its name or not at all
    (:func:`~webrank.files.atomic.atomic_write`).

    Raises
    ------
    ValueError
        Another suffix.
    """
    from webrank.files.atomic import atomic_write
    from webrank.io.frames import columns_to_arrow

    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext == ".json":
        doc = {**(summary or {}), **{k: np.asarray(v).tolist() for k, v in columns.items()}}
        with atomic_write(path, mode="w") as f:
            json.dump(doc, f)
        return
    table = columns_to_arrow({k: np.asarray(v) for k, v in columns.items()})
    if ext == ".parquet":
        import pyarrow.parquet as pq

        with atomic_write(path) as f:
            pq.write_table(table, f, **_parquet_options(table))
        return
    if ext not in TEXT_SUFFIXES:
        raise ValueError(f"cannot write a table as {ext or 'a file without extension'!r}")
    sep = TEXT_SUFFIXES[ext]
    with atomic_write(path) as f:
        f.write((sep.join(columns) + "\n").encode())
        for part in _formatted(table, sep):
            f.write(part)


def _parquet_options(table: Any) -> dict[str, Any]:
    """Encodings that suit the columns, no compression: integers (node ids, ranks) as
    deltas, floats (scores) byte-stream-split; other columns dictionary-encoded.

    Dictionaries of unique values and Snappy on float bits, pyarrow's defaults, cost
    time and save little (docs/benchmarks.md, writing the scores)."""
    import pyarrow.types as pt

    encoding = {}
    for field in table.schema:
        if pt.is_integer(field.type):
            encoding[field.name] = "DELTA_BINARY_PACKED"
        elif pt.is_floating(field.type):
            encoding[field.name] = "BYTE_STREAM_SPLIT"
    others = [f.name for f in table.schema if f.name not in encoding]
    return {"compression": "none", "column_encoding": encoding or None,
            "use_dictionary": others}


def _formatted(table: Any, sep: str) -> Any:
    """The CSV text of ``table``'s rows (no header), slice by slice, in order."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    options = pacsv.WriteOptions(include_header=False, delimiter=sep,
                                 quoting_style="needed")

    def text(start: int) -> Any:
        out = pa.BufferOutputStream()
        pacsv.write_csv(table.slice(start, _SLICE_ROWS), out, options)
        return out.getvalue()

    starts = range(0, table.num_rows, _SLICE_ROWS)
    if len(starts) <= 1:
        yield from map(text, starts)
        return
    from webrank.kernels.native import available_cpus  # (the process's, not the host's)

    workers = min(len(starts), available_cpus())
    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(text, starts)
