"""CUDA kernels of the ``adaptive`` method: a power step over a compacted row list.

The step is that of :mod:`webrank.kernels.cpu_adaptive` (same formula, same ``calm``
counters); rows are read from the active-row list, never tested one by one:

* ``wr_adaptive_rows<..., GROUP>``: ``GROUP`` lanes per row (as the fused step), for rows
  of at most the heavy threshold in-links;
* ``wr_adaptive_block_rows``: one 256-thread block per row, for the heavy rows (Kumar et al.'s
  imbalance: a hub row must not hold up a warp while the grid waits).

Both read ``acc_prev`` = (residual, dangling mass, change of the dangling mass) of the
previous step and add their partial sums into ``acc_out``; the dangling mass of the
iterate is ``acc[1] + acc[2]``. A step whose predecessor's residual is already below
``tol_cmp`` returns at once (its ``acc`` row stays zero, so every later step returns too),
so the host queues several steps and reads the residuals once. The gather loop,
``wr_gather``, is shared with the fused step (:mod:`webrank.kernels.cuda`).
"""

from __future__ import annotations

import itertools

from webrank.kernels import cuda
from webrank.kernels.cuda_common import CTYPE, KernelArgs, compiled_kernel

BLOCK = 256

SOURCE = cuda.SOURCE + r"""
// x' for one active row, its calm counter, and the row's share of the reductions
__device__ __forceinline__ void wr_adaptive_update(
    const i64 row, const double acc, const double* __restrict__ x,
    const double* __restrict__ v, const double* __restrict__ d, const int uniform_v,
    const int uniform_d, const double inv_n, const double* __restrict__ inv_out,
    const double alpha, const double dm, const double theta, unsigned char* __restrict__ calm,
    const int crit, double* __restrict__ x_out, double* __restrict__ xs_out,
    double& res, double& ddm)
{
    const double vi = uniform_v ? inv_n : v[row];
    const double di = uniform_d ? inv_n : d[row];
    const double t = alpha * acc + alpha * dm * di + (1.0 - alpha) * vi;
    const double xi = x[row];
    const double diff = fabs(t - xi);
    const double s = inv_out[row];
    if (s == 0.0) ddm += t - xi;
    x_out[row] = t;
    xs_out[row] = t * s;
    const unsigned char c = calm[row];
    calm[row] = diff < theta ? (unsigned char)(c < 255 ? c + 1 : 255) : (unsigned char)0;
    if (crit == 0) res += diff;
    else if (crit == 1) res += diff * diff;
    else res = fmax(res, diff);
}

// block-wide reduction of (res, ddm) into acc_out: one atomic per block
__device__ __forceinline__ void wr_adaptive_flush(double res, double ddm, const int crit,
                                                  double* __restrict__ acc_out)
{
    wr_block_reduce2<double>(res, ddm, crit);
    if (threadIdx.x == 0) {
        if (crit == 2) wr_atomic_max_nonneg(&acc_out[0], res);
        else atomicAdd(&acc_out[0], res);
        atomicAdd(&acc_out[2], ddm);
    }
}

template <typename IP, typename IX, bool WEIGHTED, int GROUP>
__global__ void wr_adaptive_rows(
    const i64 nrows, const i64* __restrict__ rows, const i64 n,
    const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const double* __restrict__ vals, const double* __restrict__ xs,
    const double* __restrict__ x, const double* __restrict__ v,
    const double* __restrict__ d, const int uniform_v, const int uniform_d,
    const double* __restrict__ inv_out, const double alpha, const double theta,
    unsigned char* __restrict__ calm, const double* __restrict__ acc_prev,
    double* __restrict__ acc_out, const int crit, const double tol_cmp,
    double* __restrict__ x_out, double* __restrict__ xs_out)
{
    if (acc_prev[0] < tol_cmp) return;   // converged at an earlier step
    const double dm = acc_prev[1] + acc_prev[2];
    if (blockIdx.x == 0 && threadIdx.x == 0) acc_out[1] = dm;
    const double inv_n = 1.0 / (double)n;
    const int lane = threadIdx.x % GROUP;
    constexpr int RPW = 32 / GROUP;     // rows per warp: whole warps loop together
    const i64 warp_id = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    const int sub = (threadIdx.x % 32) / GROUP;
    double res = 0.0, ddm = 0.0;
    for (i64 r0 = warp_id * RPW; r0 < nrows; r0 += nwarps * RPW) {
        const i64 r = r0 + sub;
        const bool valid = r < nrows;
        const i64 row = valid ? rows[r] : 0;
        double acc = 0.0;
        if (valid)
            acc = wr_gather<IP, IX, double, WEIGHTED, GROUP>(indptr[row] + lane,
                                                              indptr[row + 1], indices,
                                                              vals, xs);
        #pragma unroll
        for (int off = GROUP / 2; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off, GROUP);
        if (valid && lane == 0)
            wr_adaptive_update(row, acc, x, v, d, uniform_v, uniform_d, inv_n, inv_out,
                               alpha, dm, theta, calm, crit, x_out, xs_out, res, ddm);
    }
    wr_adaptive_flush(res, ddm, crit, acc_out);
}

template <typename IP, typename IX, bool WEIGHTED>
__global__ void wr_adaptive_block_rows(
    const i64 nrows, const i64* __restrict__ rows, const i64 n,
    const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const double* __restrict__ vals, const double* __restrict__ xs,
    const double* __restrict__ x, const double* __restrict__ v,
    const double* __restrict__ d, const int uniform_v, const int uniform_d,
    const double* __restrict__ inv_out, const double alpha, const double theta,
    unsigned char* __restrict__ calm, const double* __restrict__ acc_prev,
    double* __restrict__ acc_out, const int crit, const double tol_cmp,
    double* __restrict__ x_out, double* __restrict__ xs_out)
{
    // launched with blockDim.x == 256
    if (acc_prev[0] < tol_cmp) return;
    const double dm = acc_prev[1] + acc_prev[2];
    if (blockIdx.x == 0 && threadIdx.x == 0) acc_out[1] = dm;
    const double inv_n = 1.0 / (double)n;
    __shared__ double s_sum[32];
    double res = 0.0, ddm = 0.0;    // meaningful in thread 0 only
    for (i64 r = blockIdx.x; r < nrows; r += gridDim.x) {
        const i64 row = rows[r];
        double acc = wr_gather<IP, IX, double, WEIGHTED, 256>(indptr[row] + threadIdx.x,
                                                              indptr[row + 1], indices,
                                                              vals, xs);
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (threadIdx.x % 32 == 0) s_sum[threadIdx.x / 32] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            double total = 0.0;
            for (int w = 0; w < 256 / 32; ++w) total += s_sum[w];
            wr_adaptive_update(row, total, x, v, d, uniform_v, uniform_d, inv_n, inv_out,
                               alpha, dm, theta, calm, crit, x_out, xs_out, res, ddm);
        }
        __syncthreads();            // s_sum is reused by the next row
    }
    if (threadIdx.x != 0) { res = 0.0; ddm = 0.0; }
    wr_adaptive_flush(res, ddm, crit, acc_out);
}
"""



#: the kernels' parameters by name, read from the source above (the same list for both)
ROWS = KernelArgs(SOURCE, "wr_adaptive_rows")
BLOCK_ROWS = KernelArgs(SOURCE, "wr_adaptive_block_rows")


def kernel_name(ip: str, ix: str, weighted: bool, group: int | None) -> str:
    """The template instantiation: ``group`` lanes per row, or block per row (None)."""
    w = "true" if weighted else "false"
    if group is None:
        return f"wr_adaptive_block_rows<{CTYPE[ip]}, {CTYPE[ix]}, {w}>"
    return f"wr_adaptive_rows<{CTYPE[ip]}, {CTYPE[ix]}, {w}, {group}>"


def instantiations() -> list[tuple[str, str, bool]]:
    """Every ``(source, name expression, cooperative)`` the adaptive steps may compile:
    the block-per-row kernel and each group's, for each pair of index types and
    weighting (see :mod:`webrank.kernels.cuda_prebuilt`)."""
    return [(SOURCE, kernel_name(ip, ix, weighted, group), False)
            for ip, ix, weighted in itertools.product(cuda.INDEX_TYPES, cuda.INDEX_TYPES,
                                                      (False, True))
            for group in (None, *cuda.GROUPS)]


def get_kernel(ip: str, ix: str, weighted: bool, group: int | None):
    """The adaptive-step kernel for these index types (``group`` None: block per row)."""
    return compiled_kernel(SOURCE, kernel_name(ip, ix, weighted, group))
