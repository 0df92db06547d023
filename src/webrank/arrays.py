"""NumPy or CuPy: the array module of an array, and host arrays moved to the GPU.

The bottom layer: NumPy only at import; CuPy is imported when one of its arrays is met
or a device copy is asked for. ``cupy.get_array_module`` is not used: it imports
``cupyx`` and through it SciPy, about 0.6 s of a process's start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["UPLOAD_SLICE_BYTES", "array_module", "distinct", "to_device", "to_host"]

#: bytes of a host array copied to the device per step of :func:`to_device`
UPLOAD_SLICE_BYTES = 1 << 25


def array_module(a: Any) -> Any:
    """NumPy or CuPy, whichever ``a`` belongs to (CuPy imported only for its arrays).

    Examples
    --------
    >>> import numpy as np
    >>> array_module(np.zeros(3)) is np
    True
    """
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def distinct(a: Any, *, is_sorted: bool = False) -> np.ndarray:
    """The distinct values of the array ``a`` (integers, strings), in increasing order: what
    ``np.unique(a)`` returns, without its first call's import of ``numpy.ma`` (NumPy 2
    checks for masked arrays there: 10-30 ms of the first call that needs it).
    ``is_sorted``: ``a`` is already in non-decreasing order (no sort).

    Examples
    --------
    >>> distinct(np.array([3, 1, 3, 2]))
    array([1, 2, 3])
    """
    a = np.asarray(a).ravel()
    if not is_sorted:
        a = np.sort(a)
    if a.size < 2:
        return a.copy()
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def to_device(a: Any, dtype: Any = None) -> Any:
    """A host array (NumPy, a memory map, anything ``np.asarray`` takes) as a CuPy array
    on the current device, of ``dtype`` (default: its own); a CuPy array as it is
    (converted to ``dtype`` there).

    Large arrays go up in slices of :data:`UPLOAD_SLICE_BYTES`: CuPy stages a host copy
    through page-locked memory, and a single copy of a 1 GB array would first allocate
    (and lock) 1 GB of it; slices reuse a few buffers of CuPy's pinned pool, and the host
    copy of one slice overlaps the transfer of the one before.
    """
    import cupy as cp

    if isinstance(a, cp.ndarray):
        return a if dtype is None else a.astype(dtype, copy=False)
    host = np.asarray(a)
    dtype = host.dtype if dtype is None else np.dtype(dtype)
    if host.nbytes <= UPLOAD_SLICE_BYTES or host.ndim != 1:
        return cp.asarray(host, dtype=dtype)
    out = cp.empty(host.shape, dtype=dtype)
    step = max(1, UPLOAD_SLICE_BYTES // host.itemsize)
    for start in range(0, host.size, step):
        out[start:start + step] = cp.asarray(host[start:start + step], dtype=dtype)
    return out


def to_host(a: Any) -> np.ndarray:
    """A CuPy array copied to a NumPy array; anything else as ``np.asarray`` gives it."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)
