"""Tables in and out: graphs from tables with a :class:`ReadOptions` (the Parquet
reader's path) and the results' ``to_pandas()`` / ``to_arrow()``.

One path for every table library. pandas (>= 2.2), Polars, pyarrow and any other object
with ``__arrow_c_stream__`` (the Arrow PyCapsule interface) become a pyarrow Table
(:func:`webrank.tables.as_arrow_table`), whose checked columns
(:func:`webrank.tables.edge_columns`) :meth:`Graph.from_dataframe` builds the graph
from; :func:`webrank.io.parquet.read_parquet` takes the same path, so a DataFrame, an
Arrow table and a Parquet file of the same edges give the same graph, and string ids
become the labels that ``webrank.load(..., labels="string")`` gives for the same edges
(numbered in order of first appearance, :func:`webrank.tables.factorize`).

Row numbers in error messages are 0-based positions in the table (pandas' ``iloc``
positions, not index labels).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from webrank.graph import Graph
from webrank.io.options import ReadOptions, reader_options

__all__ = [
    "columns_to_arrow",
    "columns_to_pandas",
    "graph_from_arrow",
    "graph_from_dataframe",
    "graph_from_scipy",
]
# the options graph_from_arrow and graph_from_dataframe take as keywords
_KEYWORDS = ("labels", "node_ids", "duplicates", "name", "device", "directed")


# -- tables -> Graph ------------------------------------------------------------------------
def graph_from_dataframe(
    df: Any,
    source: str | None = None,
    target: str | None = None,
    weight: str | None = None,
    *,
    options: ReadOptions | None = None,
    **overrides: Any,
) -> Graph:
    """:meth:`Graph.from_dataframe` with its options as a :class:`ReadOptions` (``labels``,
    ``node_ids``, ``duplicates``, ``name``, ``device`` and ``directed`` apply) and/or
    keywords, which win."""
    opts = reader_options("graph_from_dataframe", options, overrides, _KEYWORDS)
    return Graph.from_dataframe(df, source, target, weight, labels=opts.labels,
                                node_ids=opts.node_ids, duplicates=opts.duplicates,
                                name=opts.name, device=opts.device, directed=opts.directed)


def graph_from_arrow(
    table: Any,
    source: str,
    target: str,
    weight: str | None = None,
    *,
    options: ReadOptions | None = None,
    **overrides: Any,
) -> Graph:
    """A :class:`Graph` from the edge columns of a ``pyarrow.Table``, as
    :func:`graph_from_dataframe` (the Parquet reader's path)."""
    return graph_from_dataframe(table, source, target, weight, options=options,
                                **overrides)


def graph_from_scipy(
    a: Any, *, weight: bool = True, keep_zeros: bool = False, name: str | None = None,
    directed: bool = True,
) -> Graph:
    """:meth:`Graph.from_scipy` (kept as a function beside the table adapters)."""
    return Graph.from_scipy(a, weight=weight, keep_zeros=keep_zeros, name=name,
                            directed=directed)


# -- results -> tables ----------------------------------------------------------------------
def columns_to_arrow(columns: Mapping[str, np.ndarray]) -> Any:
    """A ``pyarrow.Table`` of equal-length NumPy columns, in the mapping's order.

    Parameters
    ----------
    columns : mapping of str to ndarray
        Column name -> values (object arrays of ``str`` become string columns).

    Returns
    -------
    pyarrow.Table
    """
    import pyarrow as pa

    from webrank.files.arrow import arrow_of

    return pa.Table.from_arrays([arrow_of(v) for v in columns.values()],
                                names=list(columns))


def columns_to_pandas(columns: Mapping[str, np.ndarray]) -> Any:
    """A ``pandas.DataFrame`` of equal-length NumPy columns, in the mapping's order.

    Parameters
    ----------
    columns : mapping of str to ndarray
        Column name -> values.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ImportError
        pandas is not installed (the message says how to install it).
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("pandas is required for to_pandas(): pip install "
                          "'webrank[pandas]' (or pandas)") from None
    return pd.DataFrame(dict(columns))
