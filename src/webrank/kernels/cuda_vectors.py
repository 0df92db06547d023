"""CUDA kernels for the solvers' vector work and the checks of a graph loaded onto the GPU.

Prebuilt with the package like every family here, so that no method compiles a kernel on
its first call (CuPy's elementwise operations would, about 0.2 s each). With cuBLAS (dot
products, norms, ``axpy``, scaling: :mod:`webrank.backends.gpu_arrays`), they give the GPU
operators the vector algebra of :class:`webrank.backends.base.Operator`:

* ``wr_google_product``: ``y = alpha P^T (x / out) + cd d + cv v``, the Google-matrix
  product of any vector (Krylov methods, confirming checks), one warp per row;
* ``wr_clip_negative``: ``max(x, 0)``;
* ``wr_aitken``: the guarded Aitken Δ² extrapolation per node
  (:meth:`webrank.backends.base.Operator.aitken`);
* ``wr_scatter_add``: ``out[rows] += values`` (distinct rows: the hybrid's CPU tails);
* ``wr_scale_rows`` and ``wr_take_columns``: a row-major n×b block times a per-row
  factor, cast to the storage type; chosen columns of a block (personalized batches);
* ``wr_take`` and ``wr_remap``: ``out[k] = src[idx[k]]``, and ``idx[k] = slot[idx[k]]``
  in place (the packed exchange of a partitioned run, :mod:`webrank.distributed.placement`);
* ``wr_csr_bad``, ``wr_weight_bad``, ``wr_source_sums`` and ``wr_out_weight_bad``: the
  consistency checks of a stored CSR (:mod:`webrank.io.native`): the first decreasing
  row pointer, out-of-range index and bad weight, each node's out-links and their
  weights, the first node whose stored out-weight disagrees.

Types: ``IP``/``IX`` the CSR's pointer and index types, ``V`` the stored link values,
``T`` a block's storage type.
"""

from __future__ import annotations

from webrank.kernels.cuda_common import COMMON, CTYPE, KernelArgs, compiled_kernel

#: threads per block of every kernel here
BLOCK = 256

SOURCE = COMMON + r"""
#define WR_VEC_BLOCK 256

// y[i] = alpha * sum_k w_k x[j_k] + cd * d[i] + cv * v[i] over the in-links k of row i,
// w_k = vals[k] (WEIGHTED) or inv_out[j_k]; one warp per row
template <typename IP, typename IX, typename V, bool WEIGHTED>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_google_product(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const V* __restrict__ vals, const double* __restrict__ x,
    const double* __restrict__ inv_out, const double alpha, const double cd,
    const double* __restrict__ d, const double cv, const double* __restrict__ v,
    double* __restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 i = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        double s = 0.0;
        for (i64 k = (i64)indptr[i] + lane; k < (i64)indptr[i + 1]; k += 32) {
            const i64 j = (i64)indices[k];
            s += WEIGHTED ? (double)vals[k] * x[j] : x[j] * inv_out[j];
        }
        for (int off = 16; off; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
        if (lane == 0) y[i] = alpha * s + cd * d[i] + cv * v[i];
    }
}

__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_clip_negative(
    const i64 n, const double* __restrict__ x, double* __restrict__ out)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        out[i] = x[i] > 0.0 ? x[i] : 0.0;
}

// Aitken's extrapolation of x0 = x^(k) from x1 = x^(k-1), x2 = x^(k-2), per node, where the
// last two changes shrink with one sign (0 < r < 0.999) and the result is not negative;
// elsewhere x0 (webrank.backends.base.Operator.aitken)
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_aitken(
    const i64 n, const double* __restrict__ x2, const double* __restrict__ x1,
    const double* __restrict__ x0, double* __restrict__ out)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double d1 = x0[i] - x1[i], d0 = x1[i] - x2[i];
        const double r = d0 != 0.0 ? d1 / d0 : 0.0;
        double x = x0[i];
        if (d0 != 0.0 && r > 0.0 && r < 0.999) {
            const double e = x0[i] + d1 * r / (1.0 - r);
            if (e >= 0.0) x = e;
        }
        out[i] = x;
    }
}

// out[rows[i]] += values[i] (rows distinct)
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_scatter_add(
    const i64 n, const i64* __restrict__ rows, const double* __restrict__ values,
    double* __restrict__ out)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        out[rows[i]] += values[i];
}

// out[i * b + c] = (T)(x[i * b + c] * scale[i]) for a row-major n x b block
template <typename T>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_scale_rows(
    const i64 n, const i64 b, const double* __restrict__ x,
    const double* __restrict__ scale, T* __restrict__ out)
{
    for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n * b;
         e += (i64)gridDim.x * blockDim.x)
        out[e] = (T)(x[e] * scale[e / b]);
}

// dst[i * nk + c] = src[i * b + keep[c]]: columns keep[0..nk) of a row-major n x b block
template <typename T>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_take_columns(
    const i64 n, const i64 b, const i64 nk, const i64* __restrict__ keep,
    const T* __restrict__ src, T* __restrict__ dst)
{
    for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n * nk;
         e += (i64)gridDim.x * blockDim.x)
        dst[e] = src[(e / nk) * b + keep[e % nk]];
}

// out[k] = src[idx[k]], k < n: the values a part sends, packed
template <typename T, typename IX>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_take(
    const i64 n, const T* __restrict__ src, const IX* __restrict__ idx, T* __restrict__ out)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (i64)gridDim.x * blockDim.x)
        out[k] = src[idx[k]];
}

// idx[k] = slot[idx[k]] in place (each entry read, then written, by one thread)
template <typename IX>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_remap(
    const i64 m, IX* idx, const IX* __restrict__ slot)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x)
        idx[k] = slot[idx[k]];
}

// bad[0] = the first row i whose pointer decreases (indptr[i + 1] < indptr[i]),
// bad[1] = the first link whose index is outside 0..n-1 (both set to ~0 by the caller)
template <typename IP, typename IX>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_csr_bad(
    const i64 n, const i64 m, const IP* __restrict__ indptr,
    const IX* __restrict__ indices, u64* __restrict__ bad)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        if (indptr[i + 1] < indptr[i]) atomicMin(&bad[0], (u64)i);
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += stride) {
        const i64 j = (i64)indices[k];
        if (j < 0 || j >= n) atomicMin(&bad[1], (u64)k);
    }
}

// bad[0] = the first link whose weight is NaN, infinite or negative (~0 by the caller)
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_weight_bad(
    const i64 m, const double* __restrict__ weights, u64* __restrict__ bad)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x)
        if (!(isfinite(weights[k]) && weights[k] >= 0.0)) atomicMin(&bad[0], (u64)k);
}

// sums[j] += weights[k] (has_w) or 1, links[j] += 1 (has_w) for each link k from j
template <typename IX>
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_source_sums(
    const i64 m, const IX* __restrict__ indices, const int has_w,
    const double* __restrict__ weights, double* __restrict__ sums,
    double* __restrict__ links)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x) {
        const i64 j = (i64)indices[k];
        atomicAdd(&sums[j], has_w ? weights[k] : 1.0);
        if (has_w) atomicAdd(&links[j], 1.0);
    }
}

// bad[0] = the first node whose weights add up beyond the float64 range (has_w);
// bad[1] = the first node whose stored out-weight is not its links' sum: exactly for
// counts, within (links + 1) 2^-52 of it for weights (another order of the additions)
__global__ void __launch_bounds__(WR_VEC_BLOCK) wr_out_weight_bad(
    const i64 n, const double* __restrict__ stored, const double* __restrict__ sums,
    const double* __restrict__ links, const int has_w, u64* __restrict__ bad)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double s = sums[i];
        if (has_w) {
            if (!isfinite(s)) atomicMin(&bad[0], (u64)i);
            const double slack = (links[i] + 1.0) * 2.220446049250313e-16 * s;
            if (!(fabs(stored[i] - s) <= slack)) atomicMin(&bad[1], (u64)i);
        } else if (stored[i] != s) {
            atomicMin(&bad[1], (u64)i);
        }
    }
}
"""

_INDEX = ("int32", "int64")
_STORAGE = ("float32", "float64")


def google_product_name(ip: str, ix: str, vals: str | None) -> str:
    """``vals`` the link values' dtype of a weighted graph, None for link counts."""
    v = CTYPE[vals or "float64"]
    return f"wr_google_product<{CTYPE[ip]}, {CTYPE[ix]}, {v}, {str(vals is not None).lower()}>"


def scale_rows_name(t: str) -> str:
    return f"wr_scale_rows<{CTYPE[t]}>"


def take_columns_name(t: str) -> str:
    return f"wr_take_columns<{CTYPE[t]}>"


def take_name(t: str, ix: str) -> str:
    return f"wr_take<{CTYPE[t]}, {CTYPE[ix]}>"


def remap_name(ix: str) -> str:
    return f"wr_remap<{CTYPE[ix]}>"


def csr_bad_name(ip: str, ix: str) -> str:
    return f"wr_csr_bad<{CTYPE[ip]}, {CTYPE[ix]}>"


def source_sums_name(ix: str) -> str:
    return f"wr_source_sums<{CTYPE[ix]}>"


PLAIN = ("wr_clip_negative", "wr_aitken", "wr_scatter_add", "wr_weight_bad",
         "wr_out_weight_bad")


def instantiations() -> list[str]:
    """Every name expression of this family the backends launch."""
    names = list(PLAIN)
    for ip in _INDEX:
        for ix in _INDEX:
            names += [google_product_name(ip, ix, v) for v in (None, *_STORAGE)]
            names.append(csr_bad_name(ip, ix))
    names += [source_sums_name(ix) for ix in _INDEX]
    names += [remap_name(ix) for ix in _INDEX]
    names += [take_name(t, ix) for t in (*_STORAGE, *_INDEX) for ix in _INDEX]
    names += [scale_rows_name(t) for t in _STORAGE]
    names += [take_columns_name(t) for t in _STORAGE]
    return sorted(set(names))


GOOGLE_PRODUCT = KernelArgs(SOURCE, "wr_google_product")
CLIP_NEGATIVE = KernelArgs(SOURCE, "wr_clip_negative")
AITKEN = KernelArgs(SOURCE, "wr_aitken")
SCATTER_ADD = KernelArgs(SOURCE, "wr_scatter_add")
SCALE_ROWS = KernelArgs(SOURCE, "wr_scale_rows")
TAKE_COLUMNS = KernelArgs(SOURCE, "wr_take_columns")
TAKE = KernelArgs(SOURCE, "wr_take")
REMAP = KernelArgs(SOURCE, "wr_remap")
CSR_BAD = KernelArgs(SOURCE, "wr_csr_bad")
WEIGHT_BAD = KernelArgs(SOURCE, "wr_weight_bad")
SOURCE_SUMS = KernelArgs(SOURCE, "wr_source_sums")
OUT_WEIGHT_BAD = KernelArgs(SOURCE, "wr_out_weight_bad")


def get_kernel(name: str):
    """The compiled kernel ``name`` (one of :func:`instantiations`)."""
    return compiled_kernel(SOURCE, name)
