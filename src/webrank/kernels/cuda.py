"""CUDA kernels of the GPU backend, as source compiled by CuPy at first use.

``wr_fused_step`` does one whole PageRank iteration in one launch (seed 000's
cuSPARSE SpMV + cuBLAS sum/axpy + residual kernel, fused):

* a group of ``GROUP`` lanes (1..32, a power of two chosen from the average in-degree)
  gathers one row of the pattern-only in-link CSR: ``xs`` already holds
  ``x / out_degree``, so no value array is read for unweighted graphs;
* adds the dangling and teleport terms, writes ``x'`` (float64) and ``xs' = x' / out``
  (the storage type ``T``: float or double); with ``delta`` set it iterates on the change
  ``x_k - x_{k-1}`` instead, as the float32 path does (see ``kernels.cpu.fused_step``);
* reduces the residual (L1 sum, L2 squared sum, or max) and the dangling mass of ``x'``
  into ``acc_out`` with one atomic per block.

The dangling mass the step needs is read from ``acc_prev``, which the previous launch
wrote, so iterations queue on the stream with no host round trip. A step whose
predecessor's residual is already below ``tol`` returns at once, leaving its ``acc``
row at zero so that every later queued step returns too: the host may queue many
steps and still stop at exactly the first converged one.
"""

from __future__ import annotations

import functools

PREFIX = "wr_"

SOURCE = r"""
typedef long long i64;

__device__ __forceinline__ void wr_atomic_max_nonneg(double* addr, double v) {
    // non-negative doubles order like their bit patterns read as unsigned integers
    atomicMax(reinterpret_cast<unsigned long long*>(addr), __double_as_longlong(v));
}

__device__ __forceinline__ bool wr_skip_step(
    const double* acc_prev, const double tol_cmp, const unsigned long long* chunk,
    const long long step0, const long long chunk_len, const long long max_steps)
{
    // converged earlier: a queued step is a no-op. Inside a CUDA graph the step number is
    // step0 + (graph replays so far) * chunk_len; steps past max_steps are no-ops too, so a
    // replay never runs past max_iter.
    if (acc_prev[0] < tol_cmp) return true;
    return chunk != nullptr && step0 + (long long)(*chunk) * chunk_len > max_steps;
}

// Gather sum of xs over in-links k = first, first + STRIDE, ... < end, with four
// independent loads in flight per lane (a plain loop waits on each index, then each gather).
template <typename IP, typename IX, typename T, bool WEIGHTED, int STRIDE>
__device__ __forceinline__ double wr_gather(
    IP k, const IP end, const IX* __restrict__ indices, const T* __restrict__ vals,
    const T* __restrict__ xs)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    for (; k + 3 * STRIDE < end; k += 4 * STRIDE) {
        const IX j0 = indices[k], j1 = indices[k + STRIDE];
        const IX j2 = indices[k + 2 * STRIDE], j3 = indices[k + 3 * STRIDE];
        if (WEIGHTED) {
            a0 += (double)vals[k] * (double)xs[j0];
            a1 += (double)vals[k + STRIDE] * (double)xs[j1];
            a2 += (double)vals[k + 2 * STRIDE] * (double)xs[j2];
            a3 += (double)vals[k + 3 * STRIDE] * (double)xs[j3];
        } else {
            a0 += (double)xs[j0]; a1 += (double)xs[j1];
            a2 += (double)xs[j2]; a3 += (double)xs[j3];
        }
    }
    for (; k < end; k += STRIDE) {
        if (WEIGHTED) a0 += (double)vals[k] * (double)xs[indices[k]];
        else a0 += (double)xs[indices[k]];
    }
    return (a0 + a1) + (a2 + a3);
}

// Seed 002's in-degree imbalance: rows with more than `heavy_threshold` in-links are cut
// into segments of a few hundred edges, one warp each, summed with atomics into
// heavy_sum[row]; the fused step then reads (and clears) that sum instead of walking the
// row with a few lanes while the rest of the grid waits for it.
template <typename IP, typename IX, typename T, bool WEIGHTED>
__global__ void wr_heavy_rows(
    const i64 nseg, const i64* __restrict__ seg_row, const IP* __restrict__ seg_begin,
    const IP* __restrict__ seg_end, const IX* __restrict__ indices,
    const T* __restrict__ vals, const T* __restrict__ xs, double* __restrict__ heavy_sum,
    const double* __restrict__ acc_prev, const double tol_cmp,
    const unsigned long long* __restrict__ chunk, const i64 step0, const i64 chunk_len,
    const i64 max_steps)
{
    if (wr_skip_step(acc_prev, tol_cmp, chunk, step0, chunk_len, max_steps)) return;
    const int lane = threadIdx.x % 32;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    for (i64 s = warp; s < nseg; s += nwarps) {
        double acc = wr_gather<IP, IX, T, WEIGHTED, 32>(seg_begin[s] + lane, seg_end[s],
                                                         indices, vals, xs);
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd(&heavy_sum[seg_row[s]], acc);
    }
}

template <typename IP, typename IX, typename T, bool WEIGHTED, int GROUP>
__global__ void wr_fused_step(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const T* __restrict__ vals, const T* __restrict__ xs, const double* __restrict__ x,
    const double* __restrict__ v, const double* __restrict__ d,
    const int uniform_v, const int uniform_d,
    const double* __restrict__ inv_out, const double alpha,
    const double* __restrict__ acc_prev, double* __restrict__ acc_out,
    const int crit, const double tol_cmp, const int delta,
    double* __restrict__ x_out, T* __restrict__ xs_out,
    const unsigned long long* __restrict__ chunk, const i64 step0, const i64 chunk_len,
    const i64 max_steps, const i64 heavy_threshold, double* __restrict__ heavy_sum,
    const int permuted, const IX* __restrict__ xs_pos)
{
    if (wr_skip_step(acc_prev, tol_cmp, chunk, step0, chunk_len, max_steps)) return;
    const double dm = acc_prev[1];
    const double mass = acc_prev[2];
    const double inv_n = 1.0 / (double)n;
    const int lane = threadIdx.x % GROUP;
    // rows are dealt out a warp at a time so that every lane of a warp runs the same
    // number of loop trips (the shuffles below need the whole warp)
    constexpr int RPW = 32 / GROUP;
    const i64 warp_id = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    const int sub = (threadIdx.x % 32) / GROUP;
    double res = 0.0, dmass = 0.0, tmass = 0.0;
    for (i64 r0 = warp_id * RPW; r0 < n; r0 += nwarps * RPW) {
        const i64 row = r0 + sub;
        const bool valid = row < n;
        double acc = 0.0;
        if (valid) {
            const IP beg = indptr[row], end = indptr[row + 1];
            if ((i64)(end - beg) > heavy_threshold) {
                if (lane == 0) {       // summed by wr_heavy_rows
                    acc = heavy_sum[row];
                    heavy_sum[row] = 0.0;   // ready for the next step
                }
            } else {
                acc = wr_gather<IP, IX, T, WEIGHTED, GROUP>(beg + lane, end, indices, vals, xs);
            }
        }
        #pragma unroll
        for (int off = GROUP / 2; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off, GROUP);
        if (valid && lane == 0) {
            const double vi = uniform_v ? inv_n : v[row];
            const double di = uniform_d ? inv_n : d[row];
            double t = alpha * acc + alpha * dm * di;
            double diff;
            if (delta) {            // t is the change x' - x (see kernels.cpu.fused_step)
                t -= alpha * mass * vi;
                diff = fabs(t);
                x_out[row] = x[row] + t;
            } else {
                t += (1.0 - alpha) * vi;
                diff = fabs(t - x[row]);
                x_out[row] = t;
            }
            const double s = inv_out[row];
            // a reordered graph gathers xs in its own order (see backends.gpu, reorder)
            xs_out[permuted ? (i64)xs_pos[row] : row] = (T)(t * s);
            if (s == 0.0) dmass += t;
            tmass += t;
            if (crit == 0) res += diff;
            else if (crit == 1) res += diff * diff;
            else res = fmax(res, diff);
        }
    }
    // block reduction: warp shuffles, then one value per warp through shared memory
    __shared__ double s_res[32], s_dm[32], s_m[32];
    for (int off = 16; off > 0; off >>= 1) {
        const double r2 = __shfl_down_sync(0xffffffffu, res, off);
        res = (crit == 2) ? fmax(res, r2) : res + r2;
        dmass += __shfl_down_sync(0xffffffffu, dmass, off);
        tmass += __shfl_down_sync(0xffffffffu, tmass, off);
    }
    const int warp = threadIdx.x / 32, wl = threadIdx.x % 32;
    if (wl == 0) { s_res[warp] = res; s_dm[warp] = dmass; s_m[warp] = tmass; }
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x / 32;
        res = wl < nw ? s_res[wl] : 0.0;
        dmass = wl < nw ? s_dm[wl] : 0.0;
        tmass = wl < nw ? s_m[wl] : 0.0;
        for (int off = 16; off > 0; off >>= 1) {
            const double r2 = __shfl_down_sync(0xffffffffu, res, off);
            res = (crit == 2) ? fmax(res, r2) : res + r2;
            dmass += __shfl_down_sync(0xffffffffu, dmass, off);
            tmass += __shfl_down_sync(0xffffffffu, tmass, off);
        }
        if (wl == 0) {
            if (crit == 2) wr_atomic_max_nonneg(&acc_out[0], res);
            else atomicAdd(&acc_out[0], res);
            atomicAdd(&acc_out[1], dmass);
            atomicAdd(&acc_out[2], tmass);
        }
    }
}
"""

ARCHIVE_SOURCE = r"""
// End of one CUDA-graph replay of B steps: append the B (residual, dangling mass, mass)
// rows to the history, carry the last row to row 0 of the ring, clear rows 1..B (so a
// step after convergence still sees a zero residual and returns) and count the replay.
extern "C" __global__ void wr_archive(double* ring, const long long B, double* hist,
                                      unsigned long long* chunk)
{
    const unsigned long long c = *chunk;
    for (long long i = threadIdx.x; i < 3 * B; i += blockDim.x)
        hist[3 * (c * B) + i] = ring[3 + i];
    __syncthreads();
    if (threadIdx.x < 3) ring[threadIdx.x] = ring[3 * B + threadIdx.x];
    __syncthreads();
    for (long long i = threadIdx.x; i < 3 * B; i += blockDim.x) ring[3 + i] = 0.0;
    if (threadIdx.x == 0) *chunk = c + 1;
}
"""

GROUPS = (1, 2, 4, 8, 16, 32)
_CTYPE = {"int32": "int", "int64": "i64", "float32": "float", "float64": "double"}


def kernel_name(ip: str, ix: str, t: str, weighted: bool, group: int | None) -> str:
    """The template instantiation: the fused step, or the heavy-row kernel (group None)."""
    w = "true" if weighted else "false"
    if group is None:
        return f"wr_heavy_rows<{_CTYPE[ip]}, {_CTYPE[ix]}, {_CTYPE[t]}, {w}>"
    return f"wr_fused_step<{_CTYPE[ip]}, {_CTYPE[ix]}, {_CTYPE[t]}, {w}, {group}>"


def pick_group(avg_degree: float) -> int:
    """Lanes per row: the smallest group of at least ``avg_degree`` lanes. Callers pass a
    sixteenth of the light rows' average in-degree: with four gathers in flight per lane,
    more rows per warp hide latency better (H100, cnr-2000: 0.025 ms/step with one lane per
    row, 0.033 with 4, 0.060 with 16)."""
    for g in GROUPS:
        if g >= avg_degree:
            return g
    return GROUPS[-1]


@functools.cache
def _compiled(device_id: int, name: str):
    """One template instantiation, compiled on first use (CuPy caches it on disk)."""
    import cupy

    module = cupy.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=[name])
    return module.get_function(name)


@functools.cache
def _archive(device_id: int):
    import cupy

    return cupy.RawKernel(ARCHIVE_SOURCE, "wr_archive")


def get_archive_kernel():
    """The kernel that closes one CUDA-graph replay (see ``ARCHIVE_SOURCE``)."""
    import cupy

    return _archive(cupy.cuda.Device().id)


def get_kernel(ip: str, ix: str, t: str, weighted: bool, group: int | None):
    """The fused-step kernel for these types and lanes per row (None: heavy-row kernel)."""
    import cupy

    return _compiled(cupy.cuda.Device().id, kernel_name(ip, ix, t, weighted, group))
