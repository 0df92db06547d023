"""Tables and matrices in, tables out: the adapters behind ``Graph.from_dataframe``,
``Graph.from_scipy`` and the results' ``to_pandas()`` / ``to_arrow()``.

One path for every table library. pandas (>= 2.2), Polars, pyarrow and any other object
with ``__arrow_c_stream__`` (the Arrow PyCapsule interface) become a pyarrow Table through
``pyarrow.table(obj)``; an older pandas goes through ``pyarrow.Table.from_pandas``. From
there :func:`graph_from_arrow` builds the graph; :func:`webrank.io.parquet.read_parquet`
uses the same function, so a DataFrame, an Arrow table and a Parquet file of the same
edges give the same graph, and string ids become the labels that
``webrank.load(..., labels="string")`` gives for the same edges (numbered in order of
first appearance, :func:`webrank.io.edgelist.factorize`).

Row numbers in error messages are 0-based positions in the table (pandas' ``iloc``
positions, not index labels).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from webrank.errors import GraphFormatError
from webrank.graph import Graph, first_bad_weight
from webrank.io._arrow import numpy_of
from webrank.io.options import ReadOptions, reader_options

__all__ = [
    "as_arrow_table",
    "columns_to_arrow",
    "columns_to_pandas",
    "graph_from_arrow",
    "graph_from_dataframe",
    "graph_from_scipy",
    "require_columns",
]

_INT64_MAX = np.iinfo(np.int64).max
# the options graph_from_arrow and graph_from_dataframe take as keywords
_KEYWORDS = ("labels", "node_ids", "duplicates", "name")


# -- tables -> Graph ------------------------------------------------------------------------
def graph_from_dataframe(
    df: Any,
    source: str = "src",
    target: str = "dst",
    weight: str | None = None,
    *,
    options: ReadOptions | None = None,
    **overrides: Any,
) -> Graph:
    """A :class:`Graph` from an edge table; the implementation of :meth:`Graph.from_dataframe`.

    Parameters
    ----------
    df : DataFrame or table
        pandas, Polars, pyarrow, or any object with ``__arrow_c_stream__``.
    source, target : str, default "src", "dst"
        The id columns.
    weight : str, optional
        The weight column; default None (unweighted).
    options : ReadOptions, optional
        As in :func:`graph_from_arrow`.
    **overrides
        The options that apply there, as keywords (as :meth:`Graph.from_dataframe`
        passes them).

    Returns
    -------
    Graph
    """
    opts = reader_options("graph_from_dataframe", options, overrides, _KEYWORDS)
    table = as_arrow_table(df, opts.name)
    wanted = [source, target] + ([weight] if weight is not None else [])
    require_columns(table.column_names, wanted, opts.name, where="the table",
                    hint="source=, target= and weight=")
    return graph_from_arrow(table, source, target, weight, options=opts)


def as_arrow_table(obj: Any, name: str | None = None) -> Any:
    """Any table as a ``pyarrow.Table``, through the Arrow C stream interface.

    Parameters
    ----------
    obj : table
        A pyarrow Table or RecordBatch, a pandas or Polars DataFrame, or any object with
        ``__arrow_c_stream__`` / ``__arrow_c_array__`` (zero-copy where the library
        stores Arrow data: Polars, pyarrow, pandas' Arrow-backed columns).
    name : str, optional
        Shown in error messages.

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    TypeError
        ``obj`` is not a table.
    GraphFormatError
        The library could not export it to Arrow (say, a pandas object column holding
        both numbers and strings).
    """
    import pyarrow as pa

    if isinstance(obj, pa.Table):
        return obj
    try:
        if hasattr(obj, "__arrow_c_stream__") or hasattr(obj, "__arrow_c_array__"):
            return pa.table(obj)
        if _is_old_pandas(obj):
            # pandas < 2.2 has no __arrow_c_stream__; the index is not an edge column
            return pa.Table.from_pandas(obj, preserve_index=False)
    except (pa.ArrowException, ValueError) as e:
        raise GraphFormatError(f"cannot convert the table to Arrow: {e}", path=name) from None
    raise TypeError(
        "expected a table (pandas or Polars DataFrame, pyarrow Table, or any object with "
        f"__arrow_c_stream__), not {type(obj).__name__}"
    )


def _is_old_pandas(obj: Any) -> bool:
    """A pandas DataFrame, checked without importing pandas when it is not loaded."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def require_columns(present: Iterable[str], wanted: Iterable[str | None], name: str | None,
                    *, where: str, hint: str) -> None:
    """Raise one :class:`GraphFormatError` naming every missing column and those present.

    Parameters
    ----------
    present : iterable of str
        The columns the table has.
    wanted : iterable of str
        The columns needed (None stands for an unnamed weight column).
    name : str or None
        The table's or file's name, for the message.
    where : str
        How the message calls the source ("the file", "the table").
    hint : str
        The options that choose the columns, for the message.
    """
    present = list(present)
    missing = [c if c is not None else "<weight>" for c in wanted if c not in present]
    if missing:
        have = ", ".join(map(repr, present)) if present else "no columns"
        raise GraphFormatError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}"
            f"; {where} has {have} (pass {hint} to choose)",
            path=name,
        )


def graph_from_arrow(
    table: Any,
    source: str,
    target: str,
    weight: str | None = None,
    *,
    options: ReadOptions | None = None,
    **overrides: Any,
) -> Graph:
    """A :class:`Graph` from the edge columns of a ``pyarrow.Table`` (columns present).

    Parameters
    ----------
    table : pyarrow.Table
        One row per edge ``source -> target``.
    source, target : str
        The id columns: integer (or integral float) columns are node ids (>= 0,
        < 2**63); string, binary or dictionary-of-string columns are node labels.
    weight : str, optional
        The weight column (numbers, finite, >= 0); None for an unweighted graph.
    options : ReadOptions, optional
        ``labels``, ``node_ids``, ``duplicates`` and ``name`` apply. ``labels="string"``
        treats integer id columns as labels too (the labels stay integers). Labels are
        numbered in order of first appearance, ``src[0], dst[0], src[1], ...``.
    **overrides
        The options that apply, as keywords (``duplicates="sum"``); they win over
        ``options``.

    Returns
    -------
    Graph
        Text ids (or any ids, with ``labels="string"``) become :attr:`Graph.labels`.

    Raises
    ------
    GraphFormatError
        Nulls (column and first row), negative, non-integer or too large ids, id columns
        of another type, non-numeric, NaN, infinite or negative weights (row and value).
    ValueError
        An unknown ``labels``, ``node_ids`` or ``duplicates`` value.
    """
    opts = reader_options("graph_from_arrow", options, overrides, _KEYWORDS)
    name = opts.name
    s, d = _plain(table.column(source)), _plain(table.column(target))
    for col_name, col in ((source, s), (target, d)):
        if col.null_count:
            raise GraphFormatError(f"column {col_name!r} is null in row {_first_null(col)}",
                                   path=name)
    w = None if weight is None else _weights(_plain(table.column(weight)), weight, name)
    is_text = [_is_text(c.type) for c in (s, d)]
    if opts.labels == "string" or any(is_text):
        from webrank.io.edgelist import factorize

        if any(is_text):
            # text and integer columns mixed: the labels are text. large_string holds any
            # column size and is what string_view (Polars) and binary columns cast to.
            s, d = _as_text(s, source, name), _as_text(d, target, name)
        cs, cd, node_labels = factorize(s, d)
        return opts.graph(cs, cd, w, labels=node_labels)
    return opts.graph(_ids(s, source, name), _ids(d, target, name), w)


def arrow_id_columns(table: Any, source: str, target: str, weight: str | None = None,
                     name: str | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(src, dst, weights or None)`` of an edge table with integer id columns, checked
    as :func:`graph_from_arrow` checks them (nulls, negative or non-integer ids, bad
    weights), without building a graph: what the partitioned readers route to the ranks
    that own the rows. String ids raise :class:`GraphFormatError` (a partitioned run
    needs global integer ids)."""
    wanted = [source, target] + ([weight] if weight is not None else [])
    require_columns(table.column_names, wanted, name, where="the table",
                    hint="source=, target= and weight=")
    s, d = _plain(table.column(source)), _plain(table.column(target))
    for col_name, col in ((source, s), (target, d)):
        if col.null_count:
            raise GraphFormatError(f"column {col_name!r} is null in row {_first_null(col)}",
                                   path=name)
        if _is_text(col.type):
            raise GraphFormatError(f"column {col_name!r} holds text: a partitioned run needs "
                                   "integer node ids", path=name)
    w = None if weight is None else _weights(_plain(table.column(weight)), weight, name)
    return _ids(s, source, name), _ids(d, target, name), w


def _is_text(t: Any) -> bool:
    """String or binary Arrow type, the view types (Polars' strings) included."""
    import pyarrow as pa

    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or _is_view(t))


def _is_view(t: Any) -> bool:
    """string_view / binary_view (pyarrow >= 16 knows them)."""
    import pyarrow as pa

    return any(getattr(pa.types, f, lambda _: False)(t)
               for f in ("is_string_view", "is_binary_view"))


def _as_text(col: Any, col_name: str, name: str | None) -> Any:
    """A label column as large_string (binary columns must be UTF-8)."""
    import pyarrow as pa

    try:
        return col.cast(pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise GraphFormatError(f"column {col_name!r} cannot be read as text labels: {e}",
                               path=name) from None


def _plain(col: Any) -> Any:
    """Dictionary-encoded (categorical) columns decoded to their value type."""
    import pyarrow as pa

    if not pa.types.is_dictionary(col.type):
        return col
    values = col.type.value_type
    if not _is_view(values):
        return col.cast(values)
    # pyarrow has no take kernel over view types (Polars' categoricals): decode through
    # the large type of the same kind
    large = pa.large_string() if pa.types.is_string_view(values) else pa.large_binary()
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    return pa.chunked_array(
        [pa.DictionaryArray.from_arrays(c.indices, c.dictionary.cast(large)).dictionary_decode()
         for c in chunks], type=large)


def _first_null(col: Any) -> int:
    """Row of the first null of a column that has one."""
    import pyarrow.compute as pc

    return int(np.argmax(pc.is_null(col).to_numpy(zero_copy_only=False)))


def _ids(col: Any, col_name: str, name: str | None) -> np.ndarray:
    """An integer (or integral float) id column -> checked int64 array."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_integer(t):
        a = numpy_of(col)
        if pa.types.is_unsigned_integer(t) and a.size and a.max() > _INT64_MAX:
            k = int(np.argmax(a > _INT64_MAX))
            raise GraphFormatError(
                f"column {col_name!r}, row {k}: node id {a[k]} is beyond the int64 range; "
                'pass labels="string" to use the ids as labels',
                path=name,
            )
        a = a.astype(np.int64, copy=False)
    elif pa.types.is_floating(t):
        f = numpy_of(col)
        bad = ~np.isfinite(f) | (f != np.floor(f))
        if bad.any():
            k = int(np.argmax(bad))
            raise GraphFormatError(
                f"column {col_name!r}, row {k}: node id {float(f[k])} is not an integer",
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


def _weights(col: Any, col_name: str, name: str | None) -> np.ndarray:
    """A numeric weight column -> checked float64 array (finite, >= 0, no nulls)."""
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
    w = np.asarray(numpy_of(col.cast(pa.float64())), dtype=np.float64)
    _check_weights(w, lambda k: f"column {col_name!r}, row {k}", name)
    return w


def _check_weights(w: np.ndarray, where: Any, name: str | None) -> None:
    """Raise naming the first NaN, infinite or negative weight; ``where(k)`` names entry k."""
    k = first_bad_weight(w)
    if k is not None:
        raise GraphFormatError(
            f"{where(k)}: weight {float(w[k])} is not allowed; weights must be finite "
            "and >= 0",
            path=name,
        )


# -- matrices -> Graph ----------------------------------------------------------------------
def graph_from_scipy(
    a: Any, *, weight: bool = True, keep_zeros: bool = False, name: str | None = None
) -> Graph:
    """A :class:`Graph` from an adjacency matrix ``A[i, j]`` = weight of link ``i -> j``.

    The implementation of :meth:`Graph.from_scipy`, whose docstring says more.

    Parameters
    ----------
    a : scipy sparse array or matrix, or array_like, shape (n, n)
        The matrix; nodes are ``0..n-1``.
    weight : bool, default True
        Entries are link weights; False: every link weighs 1.
    keep_zeros : bool, default False
        Explicit zeros of a sparse matrix are links.
    name : str, optional
        Shown in messages.

    Returns
    -------
    Graph
    """
    import scipy.sparse as sp

    m = a if sp.issparse(a) else np.asarray(a)
    if len(m.shape) != 2:
        raise GraphFormatError(
            f"an adjacency matrix must be 2-D; got an array of shape {m.shape}", path=name)
    if m.shape[0] != m.shape[1]:
        raise GraphFormatError(
            f"an adjacency matrix must be square (A[i, j] = weight of link i -> j); got "
            f"shape {m.shape}",
            path=name,
        )
    if m.dtype.kind not in "biuf":
        raise GraphFormatError(f"matrix entries must be real numbers, not {m.dtype}",
                               path=name)
    # a copy: sum_duplicates works in place; a dense array keeps its non-zeros only
    coo = sp.coo_array(m, copy=sp.issparse(m))
    # repeated (i, j) entries mean their sum, as in every SciPy format
    coo.sum_duplicates()
    row, col = coo.row, coo.col
    values = np.asarray(coo.data, dtype=np.float64)
    _check_weights(values, lambda k: f"entry ({row[k]}, {col[k]})", name)
    if not keep_zeros:
        links = values != 0
        if not links.all():
            row, col, values = row[links], col[links], values[links]
    return Graph.from_edges(row, col, values if weight else None, node_ids="range",
                            num_nodes=coo.shape[0], name=name)


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

    return pa.table({k: pa.array(v) for k, v in columns.items()})


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
