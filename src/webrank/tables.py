"""Tables and matrices to checked edge columns: the layer under ``Graph.from_dataframe``,
``Graph.from_scipy``, the Parquet reader and the partitioned readers.

Every table library goes through Arrow's C stream interface (``__arrow_c_stream__``) to
a ``pyarrow.Table`` (:func:`as_arrow_table`); its id columns become node ids, or labels
numbered in order of first appearance (:func:`factorize`); its weights are checked.
Nothing here builds a :class:`~webrank.graph.Graph`: the graph container sits above
(the import graph has no circle through it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

from webrank.build import first_bad_weight
from webrank.errors import GraphFormatError
from webrank.files.arrow import numpy_of

__all__ = ["adjacency_edges", "arrow_id_columns", "arrow_threads", "as_arrow_table", "edge_columns",
           "factorize", "require_columns"]

_INT64_MAX = np.iinfo(np.int64).max


def arrow_threads() -> int:
    """pyarrow's CPU pool size, brought down (once) to the CPUs this process may run on.

    pyarrow sizes its pool from the host's core count; a process given fewer cores (a
    container's CPU set, ``taskset``, a Slurm job) would otherwise parse with more
    threads than it has cores."""
    import pyarrow as pa

    from webrank.kernels.native import available_cpus

    cpus = available_cpus()
    if pa.cpu_count() > cpus:
        pa.set_cpu_count(cpus)
    return pa.cpu_count()


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


def edge_columns(table: Any, source: str, target: str, weight: str | None = None, *,
                 labels: str = "int", name: str | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``(src, dst, weights or None, node labels or None)`` of the edge columns of a
    ``pyarrow.Table`` (columns present), checked: what :meth:`Graph.from_dataframe`
    builds its graph from.

    Integer (or integral float) id columns are node ids (>= 0, < 2**63); string, binary
    or dictionary-of-string columns are labels, numbered in order of first appearance
    (``src[0], dst[0], src[1], ...``, :func:`factorize`), and then ``src``/``dst`` are
    codes into the labels returned. ``labels="string"`` treats integer id columns as
    labels too (the labels stay integers).

    Raises
    ------
    GraphFormatError
        Nulls (column and first row), negative, non-integer or too large ids, id columns
        of another type, non-numeric, NaN, infinite or negative weights (row and value).
    """
    s, d = _plain(table.column(source)), _plain(table.column(target))
    for col_name, col in ((source, s), (target, d)):
        if col.null_count:
            raise GraphFormatError(f"column {col_name!r} is null in row {_first_null(col)}",
                                   path=name)
    w = None if weight is None else _weights(_plain(table.column(weight)), weight, name)
    is_text = [_is_text(c.type) for c in (s, d)]
    if labels == "string" or any(is_text):
        if any(is_text):
            # text and integer columns mixed: the labels are text. large_string holds any
            # column size and is what string_view (Polars) and binary columns cast to.
            s, d = _as_text(s, source, name), _as_text(d, target, name)
        cs, cd, node_labels = factorize(s, d)
        return cs, cd, w, node_labels
    return _ids(s, source, name), _ids(d, target, name), w, None




def arrow_id_columns(table: Any, source: str, target: str, weight: str | None = None,
                     name: str | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(src, dst, weights or None)`` of an edge table with integer id columns, checked
    as :func:`graph_from_arrow` checks them (nulls, negative or non-integer ids, bad
    weights), without building a graph: what the partitioned readers route to the ranks
    that own the rows. String ids raise :class:`GraphFormatError` (the partitioned
    readers take them with ``labels="string"``, through :func:`edge_columns`)."""
    wanted = [source, target] + ([weight] if weight is not None else [])
    require_columns(table.column_names, wanted, name, where="the table",
                    hint="source=, target= and weight=")
    s, d = _plain(table.column(source)), _plain(table.column(target))
    for col_name, col in ((source, s), (target, d)):
        if col.null_count:
            raise GraphFormatError(f"column {col_name!r} is null in row {_first_null(col)}",
                                   path=name)
        if _is_text(col.type):
            raise GraphFormatError(f"column {col_name!r} holds text: read it with string "
                                   "labels (labels='string', --labels string)", path=name)
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
        # checked before the cast, which would turn ids beyond int64 into garbage
        bad = ~np.isfinite(f) | (f != np.floor(f))
        if bad.any():
            k = int(np.argmax(bad))
            raise GraphFormatError(
                f"column {col_name!r}, row {k}: node id {float(f[k])} is not an integer",
                path=name,
            )
        out = (f < 0) | (f >= 2.0**63)
        if out.any():
            k = int(np.argmax(out))
            what = "negative node id" if f[k] < 0 else "node id beyond the int64 range:"
            raise GraphFormatError(f"column {col_name!r}, row {k}: {what} {float(f[k])}",
                                   path=name)
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


def adjacency_edges(
    a: Any, *, keep_zeros: bool = False, name: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(row, col, values, n)``: the links ``row[k] -> col[k]`` of an adjacency matrix
    ``A[i, j]`` = weight of link ``i -> j`` and their weights (checked), n nodes: what
    :meth:`Graph.from_scipy` builds its graph from (its docstring says more).

    Parameters
    ----------
    a : scipy sparse array or matrix, or array_like, shape (n, n)
        The matrix; nodes are ``0..n-1``.
    keep_zeros : bool, default False
        Explicit zeros of a sparse matrix are links.
    name : str, optional
        Shown in messages.

    Returns
    -------
    row, col : ndarray
    values : ndarray of float64
    n : int
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
    return row, col, values, int(coo.shape[0])


def factorize(src: Any, dst: Any, threads: int | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Number the labels of ``src``/``dst`` ``0..k-1`` in order of first appearance.

    First appearance is in file order, ``src[0], dst[0], src[1], dst[1], ...``.

    Parameters
    ----------
    src, dst : pyarrow Array or ChunkedArray
        Labels of the edge endpoints (strings, or any hashable arrow type).

    threads : int, optional
        Threads hashing slices of the labels at once (default: Arrow's CPU count; from
        :data:`PARALLEL_ENCODE_MIN` labels on), their dictionaries merged after.

    Returns
    -------
    codes_src, codes_dst : ndarray of int64
        Node index of each endpoint.
    labels : ndarray
        Label of each node (an object array of ``str`` for strings).
    """
    import pyarrow as pa

    def chunks(a: Any) -> list[Any]:
        return list(a.chunks) if isinstance(a, pa.ChunkedArray) else [a]

    m = len(src)
    # (the type given: an empty column may have no chunks at all)
    both = pa.chunked_array(chunks(src) + chunks(dst), type=src.type)
    uniq, codes = _dictionary_codes(both, threads)
    cs, cd = codes[:m], codes[m:]
    k = len(uniq)
    # reorder to first appearance in interleaved (file) order: the first position of
    # each label among src (even) and dst (odd) slots
    pos = np.int32 if 2 * m < 2**31 else np.int64
    first = np.full(k, 2 * m, dtype=pos)
    np.minimum.at(first, cs, np.arange(0, 2 * m, 2, dtype=pos))
    np.minimum.at(first, cd, np.arange(1, 2 * m, 2, dtype=pos))
    order = np.argsort(first, kind="stable")
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k, dtype=np.int64)
    node_labels = uniq.take(pa.array(order)).to_numpy(zero_copy_only=False)
    return rank[cs], rank[cd], node_labels


#: labels from which :func:`factorize` hashes slices in parallel
PARALLEL_ENCODE_MIN = 1 << 20


def _dictionary_codes(both: Any, threads: int | None) -> tuple[Any, np.ndarray]:
    """``(dictionary, codes)`` of a ChunkedArray: each value's index into the dictionary
    of its distinct values. Slices are hashed in threads (pyarrow's hashing runs on one
    core and releases the interpreter), then their dictionaries are hashed once more
    into one and the codes mapped through it; the dictionary's order does not matter
    (:func:`factorize` reorders by first appearance)."""
    import pyarrow as pa

    n = len(both)
    t = arrow_threads() if threads is None else int(threads)
    # slices of at least a quarter of PARALLEL_ENCODE_MIN values; none below it
    t = 1 if n < PARALLEL_ENCODE_MIN else max(1, min(t, n // (PARALLEL_ENCODE_MIN // 4)))
    if t == 1:
        parts = [_encoded(both)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        pieces = [both.slice(i * n // t, (i + 1) * n // t - i * n // t) for i in range(t)]
        with ThreadPoolExecutor(t) as pool:
            parts = list(pool.map(_encoded, pieces))
    merged = (_encoded(pa.chunked_array([p[0] for p in parts], type=both.type))
              if len(parts) > 1 and None not in parts else None)
    if None in parts or (len(parts) > 1 and merged is None):  # pragma: no cover
        import pyarrow.compute as pc  # an older pyarrow: one pass of unique + index_in

        uniq = pc.unique(both)
        return uniq, np.asarray(pc.index_in(both, value_set=uniq).to_numpy())
    if merged is None:
        return parts[0]
    uniq, global_of = merged
    starts = np.cumsum([0] + [len(d) for d, _ in parts])
    return uniq, np.concatenate([global_of[starts[i]:starts[i + 1]][codes]
                                 for i, (_, codes) in enumerate(parts)])


def _encoded(values: Any) -> tuple[Any, np.ndarray] | None:
    """``(dictionary, codes)`` of ``pyarrow.compute.dictionary_encode(values)``, whose
    chunks share one dictionary (the last chunk's holds them all); None where they do
    not (an older pyarrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(values)
    dicts = [c.dictionary for c in enc.chunks]
    if not dicts:
        return pa.array([], type=values.type), np.zeros(0, dtype=np.int32)
    if not all(len(d) == len(dicts[-1]) for d in dicts):
        return None
    return dicts[-1], np.concatenate([numpy_of(c.indices) for c in enc.chunks])
