"""PyArrow columns to and from NumPy arrays without importing pandas.

pyarrow's ``Array.to_numpy`` and ``ChunkedArray.to_numpy`` import pandas (0.2-0.3 s, most
of a first call that reads a small file). Numeric columns without nulls are read here
from their data buffers instead: zero-copy for one chunk, one concatenation for several.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["arrow_of", "copy_chunks", "numpy_of"]

# arrow type names whose data buffer is a plain NumPy array of this dtype
_NUMERIC = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
            "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
            "uint64": np.uint64, "halffloat": np.float16, "float": np.float32,
            "double": np.float64}


def numpy_of(col: Any) -> np.ndarray:
    """A pyarrow ``Array`` or ``ChunkedArray`` as a NumPy array (a view where it can be).

    Numeric columns without nulls come from their buffers; any other column (strings,
    booleans, dictionaries, nulls) through pyarrow's own ``to_numpy``.
    """
    chunks = col.chunks if hasattr(col, "chunks") else [col]
    dtype = _NUMERIC.get(str(col.type))
    if dtype is None or any(c.null_count for c in chunks):
        return col.to_numpy(zero_copy_only=False)
    item = np.dtype(dtype).itemsize
    parts = [np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset * item)
             if len(c) else np.zeros(0, dtype) for c in chunks]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def copy_chunks(col: Any, out: np.ndarray) -> np.ndarray:
    """A chunked numeric column (no nulls) copied into ``out`` (as many entries, any
    dtype it casts to) a chunk at a time: no intermediate array of the column's own type.
    Returns ``out``."""
    at = 0
    for chunk in (col.chunks if hasattr(col, "chunks") else [col]):
        out[at:at + len(chunk)] = numpy_of(chunk)
        at += len(chunk)
    return out


def arrow_of(a: np.ndarray) -> Any:
    """A NumPy array as a pyarrow ``Array``: numeric arrays wrap their buffer (no copy
    of a contiguous array); others (strings, objects) through ``pyarrow.array``, which
    imports pandas where it is installed."""
    import pyarrow as pa

    a = np.asarray(a)
    if a.ndim == 1 and a.dtype.kind in "iuf" and a.dtype.byteorder in "=|":
        a = np.ascontiguousarray(a)
        return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), a.size,
                                     [None, pa.py_buffer(a)])
    return pa.array(a)
