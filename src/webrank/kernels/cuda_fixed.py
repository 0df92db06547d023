"""CUDA kernels of the ``fixed`` method: the Q1.63 power step of
:mod:`webrank.kernels.cpu_fixed`, bit for bit (integer sums are order-independent, and
both products round the same way on both devices).

* ``wr_mulfrac<PRODUCT>``: "Q1.63 x Q0.64 -> Q1.63", rounded to nearest: the exact
  product from ``__umul64hi`` (PRODUCT 0) or Sgherzi's round trip through float64
  (PRODUCT 1; ``__dmul_rn``/``__dadd_rn`` so that no FMA contraction changes the rounding
  the CPU does).
* ``wr_fixed_scale``: ``xs = x (.) node_scale`` for the first step.
* ``wr_fixed_heavy``: rows with more than the heavy threshold in-links, cut into
  segments of the GPU backend (one warp each), summed with 64-bit integer atomics into
  ``heavy_sum[row]`` (exact, so the order of the atomics does not matter).
* ``wr_fixed_step``: ``GROUP`` lanes per row for the other rows, then the epilogue
  (alpha, dangling and teleport terms, ``xs`` of the next step) and the reductions: the
  residual of the exact integer differences (accumulated in double) into ``res_out`` and
  the dangling mass (uint64, exact) into ``dm_out``.

With ``patience > 0`` both skip the rows whose ``calm`` count reached it (converged:
value kept, nothing gathered) and the step updates the counts, as
:func:`webrank.kernels.cpu_fixed.fixed_step` does.

A step whose predecessor's residual is below ``tol_cmp`` returns at once (its rows in
``res_hist``/``dm_hist`` stay zero), so the host queues several and reads once.
"""

from __future__ import annotations

import itertools

from webrank.kernels import cuda
from webrank.kernels.cuda_common import COMMON, CTYPE, KernelArgs, compiled_kernel

#: the products' codes (``PRODUCT``): :data:`webrank.kernels.cpu_fixed.PRODUCTS`' values
PRODUCTS = (0, 1)

SOURCE = COMMON + r"""

template <int PRODUCT>
__device__ __forceinline__ u64 wr_mulfrac(const u64 a, const u64 f) {
    if (PRODUCT == 1) {
        const double p = __dmul_rn((double)a, __dmul_rn((double)f, 0x1p-64));
        return (u64)__dadd_rn(p, 0.5);      // round half up, as the CPU kernel
    }
    return __umul64hi(a, f) + ((a * f) >> 63);
}

template <int PRODUCT>
__global__ void wr_fixed_scale(const i64 n, const u64* __restrict__ x,
                               const u64* __restrict__ node_scale, u64* __restrict__ xs)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        xs[i] = wr_mulfrac<PRODUCT>(x[i], node_scale[i]);
}

// sum over in-links k = first, first + STRIDE, ... < end: xs[j], or x[j] (.) vals[k]
template <typename IP, typename IX, bool WEIGHTED, int PRODUCT, int STRIDE>
__device__ __forceinline__ u64 wr_fixed_gather(
    IP k, const IP end, const IX* __restrict__ indices, const u64* __restrict__ vals,
    const u64* __restrict__ xs, const u64* __restrict__ x)
{
    u64 a0 = 0, a1 = 0;
    for (; k + STRIDE < end; k += 2 * STRIDE) {
        if (WEIGHTED) {
            a0 += wr_mulfrac<PRODUCT>(x[indices[k]], vals[k]);
            a1 += wr_mulfrac<PRODUCT>(x[indices[k + STRIDE]], vals[k + STRIDE]);
        } else {
            a0 += xs[indices[k]];
            a1 += xs[indices[k + STRIDE]];
        }
    }
    for (; k < end; k += STRIDE) {
        if (WEIGHTED) a0 += wr_mulfrac<PRODUCT>(x[indices[k]], vals[k]);
        else a0 += xs[indices[k]];
    }
    return a0 + a1;
}

template <typename IP, typename IX, bool WEIGHTED, int PRODUCT>
__global__ void wr_fixed_heavy(
    const i64 nseg, const i64* __restrict__ seg_row, const IP* __restrict__ seg_begin,
    const IP* __restrict__ seg_end, const IX* __restrict__ indices,
    const u64* __restrict__ vals, const u64* __restrict__ xs, const u64* __restrict__ x,
    u64* __restrict__ heavy_sum, const double* __restrict__ res_prev, const double tol_cmp,
    const unsigned char* __restrict__ calm, const int patience)
{
    if (res_prev[0] < tol_cmp) return;
    const int lane = threadIdx.x % 32;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    for (i64 s = warp; s < nseg; s += nwarps) {
        if (patience > 0 && calm[seg_row[s]] >= patience) continue;   // converged row
        u64 acc = wr_fixed_gather<IP, IX, WEIGHTED, PRODUCT, 32>(
            seg_begin[s] + lane, seg_end[s], indices, vals, xs, x);
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd(&heavy_sum[seg_row[s]], acc);
    }
}

template <typename IP, typename IX, bool WEIGHTED, int PRODUCT, int GROUP>
__global__ void wr_fixed_step(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const u64* __restrict__ vals, const u64* __restrict__ xs, const u64* __restrict__ x,
    const u64* __restrict__ node_scale, const u64* __restrict__ tele, const int uniform_t,
    const u64* __restrict__ dist, const int uniform_d, const u64 alpha_q,
    const double* __restrict__ res_prev, const u64* __restrict__ dm_prev,
    double* __restrict__ res_out, u64* __restrict__ dm_out, const int crit,
    const double tol_cmp, u64* __restrict__ x_out, u64* __restrict__ xs_out,
    const i64 heavy_threshold, u64* __restrict__ heavy_sum,
    unsigned char* __restrict__ calm, const u64 theta, const int patience)
{
    if (res_prev[0] < tol_cmp) return;
    const u64 cdm = wr_mulfrac<PRODUCT>(dm_prev[0], alpha_q);   // alpha * dangling mass
    const u64 dterm_uniform = (cdm + (u64)n / 2) / (u64)n;      // ... / n, rounded
    const int lane = threadIdx.x % GROUP;
    constexpr int RPW = 32 / GROUP;
    const i64 warp_id = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    const int sub = (threadIdx.x % 32) / GROUP;
    double res = 0.0;
    u64 dmass = 0;
    for (i64 r0 = warp_id * RPW; r0 < n; r0 += nwarps * RPW) {
        const i64 row = r0 + sub;
        const bool valid = row < n;
        // a converged row (the mask of the kernel's docstring) keeps its value
        const bool frozen = valid && patience > 0 && calm[row] >= patience;
        u64 acc = 0;
        if (valid && !frozen) {
            const IP beg = indptr[row], end = indptr[row + 1];
            if ((i64)(end - beg) > heavy_threshold) {
                if (lane == 0) {     // summed by wr_fixed_heavy
                    acc = heavy_sum[row];
                    heavy_sum[row] = 0;
                }
            } else {
                acc = wr_fixed_gather<IP, IX, WEIGHTED, PRODUCT, GROUP>(
                    beg + lane, end, indices, vals, xs, x);
            }
        }
        #pragma unroll
        for (int off = GROUP / 2; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off, GROUP);
        if (frozen && lane == 0) {
            x_out[row] = x[row];
            xs_out[row] = xs[row];
            if (node_scale[row] == 0) dmass += x[row];
        } else if (valid && lane == 0) {
            u64 t = wr_mulfrac<PRODUCT>(acc, alpha_q);
            t += uniform_d ? dterm_uniform : wr_mulfrac<PRODUCT>(cdm, dist[row]);
            t += uniform_t ? tele[0] : tele[row];
            const u64 xi = x[row];
            const u64 diff = t >= xi ? t - xi : xi - t;
            x_out[row] = t;
            if (patience > 0) {
                if (diff > theta) calm[row] = 0;
                else if (calm[row] < 255) calm[row] += 1;
            }
            const u64 s = node_scale[row];
            if (s == 0) { dmass += t; xs_out[row] = 0; }
            else xs_out[row] = WEIGHTED ? 0 : wr_mulfrac<PRODUCT>(t, s);
            const double fd = (double)diff;
            if (crit == 0) res += fd;
            else if (crit == 1) res += fd * fd;
            else res = fmax(res, fd);
        }
    }
    wr_block_reduce2<u64>(res, dmass, crit);
    if (threadIdx.x == 0) {
        if (crit == 2) wr_atomic_max_nonneg(res_out, res);
        else atomicAdd(res_out, res);
        atomicAdd(dm_out, dmass);
    }
}
"""



#: the kernels' parameters by name, read from the source above
SCALE = KernelArgs(SOURCE, "wr_fixed_scale")
HEAVY = KernelArgs(SOURCE, "wr_fixed_heavy")
STEP = KernelArgs(SOURCE, "wr_fixed_step")


def kernel_name(kind: str, ip: str, ix: str, weighted: bool, product: int,
                group: int | None = None) -> str:
    """The template instantiation of ``kind`` ("step", "heavy" or "scale")."""
    w = "true" if weighted else "false"
    if kind == "scale":
        return f"wr_fixed_scale<{product}>"
    if kind == "heavy":
        return f"wr_fixed_heavy<{CTYPE[ip]}, {CTYPE[ix]}, {w}, {product}>"
    return f"wr_fixed_step<{CTYPE[ip]}, {CTYPE[ix]}, {w}, {product}, {group}>"


def instantiations() -> list[tuple[str, str, bool]]:
    """Every ``(source, name expression, cooperative)`` the fixed-point steps may compile:
    for each product, the scale kernel, and for each pair of index types and weighting
    the heavy-row kernel and each group's step (see :mod:`webrank.kernels.cuda_prebuilt`)."""
    found = [(SOURCE, kernel_name("scale", "int32", "int32", False, p), False)
             for p in PRODUCTS]
    for ip, ix, weighted, product in itertools.product(
            cuda.INDEX_TYPES, cuda.INDEX_TYPES, (False, True), PRODUCTS):
        found.append((SOURCE, kernel_name("heavy", ip, ix, weighted, product), False))
        found += [(SOURCE, kernel_name("step", ip, ix, weighted, product, group), False)
                  for group in cuda.GROUPS]
    return found


def get_kernel(kind: str, ip: str, ix: str, weighted: bool, product: int,
               group: int | None = None):
    """A fixed-point kernel (see :func:`kernel_name`), built with the package or
    compiled on first use."""
    return compiled_kernel(SOURCE, kernel_name(kind, ip, ix, weighted, product,
                                                        group))
