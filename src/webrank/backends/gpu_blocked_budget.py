"""The blocked GPU engine's shared-memory budgets, and the plan arguments they allow.

Apart from :mod:`webrank.backends.gpu_blocked` (which imports CUDA sources and the pull
engine) so that :meth:`webrank.backends.options.EngineOptions.for_device` can check
``part_rows`` and ``chunk_bits`` for a precision before any work, on any machine.
"""

from __future__ import annotations

import numpy as np

from webrank.blocking import MAX_LOCAL

__all__ = ["SUMS_BYTES", "SUM_ITEMSIZE", "WINDOW_BYTES", "default_plan_args", "plan_args"]

#: shared memory one gather block may use for its partition's sums (8-byte fixed point, see
#: kernels.cuda_blocked): two blocks per SM must fit in an H100/H200 SM's 228 KiB beside
#: their static arrays (about 9 KiB each)
SUMS_BYTES = 96 * 1024
SUM_ITEMSIZE = 8
#: most bytes of xs a scatter block holds (one source chunk): 2**15 float32 sources, one
#: block an SM. The plan takes chunks that large only where blocks would otherwise be
#: small (larger chunks pay off on the largest graphs: docs/benchmarks.md)
WINDOW_BYTES = 128 * 1024


def default_plan_args(dtype: np.dtype) -> dict[str, int]:
    """Partition rows and chunk bits that fit the shared-memory budgets for ``dtype``."""
    item = np.dtype(dtype).itemsize
    rows = min(MAX_LOCAL, SUMS_BYTES // SUM_ITEMSIZE)
    bits = int(np.log2(WINDOW_BYTES // item))
    return {"part_rows_max": rows, "chunk_bits_max": bits}


def plan_args(dtype: np.dtype, part_rows: int | None, chunk_bits: int | None
              ) -> dict[str, int]:
    """:func:`default_plan_args` with the ``part_rows`` and ``chunk_bits`` asked for (None:
    the default); ValueError for one outside what the budgets allow for ``dtype``."""
    args = default_plan_args(dtype)
    name = np.dtype(dtype).name
    if part_rows is not None:
        if not 1 <= int(part_rows) <= args["part_rows_max"]:
            raise ValueError(f"part_rows must be in 1..{args['part_rows_max']} for "
                             f"{name}, not {part_rows!r}")
        args["part_rows_max"] = int(part_rows)
    if chunk_bits is not None:
        top = args["chunk_bits_max"]
        if not 6 <= int(chunk_bits) <= top:
            raise ValueError(f"chunk_bits must be in 6..{top} for {name}, not "
                             f"{chunk_bits!r}")
        args["chunk_bits_max"] = int(chunk_bits)
    return args
