"""CUDA kernel of the dense power iteration of Swaroop ("Multithreading Google's PageRank
with CUDA", 2021) and Ghadge, Narayane et al. ("Parallelizing Google's PageRank algorithm
in C++ with CUDA", C-DAC Pune): one thread per row of the dense n x n Google matrix,
``y_i = sum_j G[i, j] x_j``.

Kept as those reports wrote it, to be measured beside cuBLAS's ``gemv`` (the
``dense`` suite): a thread walks its whole row alone, with no shared memory and no
reduction across threads. Two layouts:

* ``column_major=False`` (theirs): ``G`` row-major; the threads of a warp read 32
  addresses ``n`` elements apart at every ``j`` (uncoalesced);
* ``column_major=True``: ``G`` stored transposed, so the same loop reads 32 neighbouring
  elements per ``j`` (coalesced): the layout a one-thread-per-row kernel needs.
"""

from __future__ import annotations

from webrank.kernels.cuda_common import COMMON, CTYPE, compiled_kernel

SOURCE = COMMON + r"""

template <typename T, bool COLUMN_MAJOR>
__global__ void wr_dense_rows(const i64 n, const T* __restrict__ g,
                              const T* __restrict__ x, T* __restrict__ y)
{
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T acc = 0;
    if (COLUMN_MAJOR) {
        for (i64 j = 0; j < n; ++j) acc += g[j * n + i] * x[j];
    } else {
        const T* row = g + i * n;
        for (i64 j = 0; j < n; ++j) acc += row[j] * x[j];
    }
    y[i] = acc;
}
"""


def kernel_name(dtype: str, column_major: bool) -> str:
    """The template instantiation for ``dtype`` ("float32" or "float64") and layout."""
    layout = "true" if column_major else "false"
    return f"wr_dense_rows<{CTYPE[dtype]}, {layout}>"


def instantiations() -> list[tuple[str, str, bool]]:
    """Every ``(source, name expression, cooperative)`` the dense suite may compile
    (see :mod:`webrank.kernels.cuda_prebuilt`)."""
    return [(SOURCE, kernel_name(dtype, column_major), False)
            for dtype in ("float32", "float64") for column_major in (False, True)]


def get_kernel(dtype: str, column_major: bool):
    """The one-thread-per-row product for ``dtype`` ("float32" or "float64"), built with
    the package or compiled on first use."""
    return compiled_kernel(SOURCE, kernel_name(dtype, column_major))
