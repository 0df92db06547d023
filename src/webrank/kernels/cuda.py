"""CUDA kernels of the GPU backend, as source: built with the package
(:mod:`webrank.kernels.cuda_prebuilt`), or compiled by NVRTC through CuPy on first use.

``wr_fused_step`` does one whole PageRank iteration in one launch (Praveen et al.'s
cuSPARSE SpMV + cuBLAS sum/axpy + residual kernel, fused); ``wr_pull_solve`` runs every
step of a solve in one cooperative launch (the ``persistent`` engine), the same row pass
between grid-wide barriers:

* a group of ``GROUP`` lanes (1..32, a power of two chosen from the average in-degree)
  gathers one row of the pattern-only in-link CSR: ``xs`` already holds
  ``x / out_degree``, so no value array is read for unweighted graphs;
* finishes each row with :mod:`webrank.kernels.cuda_common`'s ``wr_finish_row`` (the
  dangling and teleport terms; ``x'`` in float64 and ``xs' = x' / out`` in the storage
  type ``T``, float or double; the step ``mode`` iterates on the change ``x_k - x_{k-1}``
  as the float32 path does) and reduces the residual (L1 sum, L2 squared sum, or max),
  the dangling mass and the mass into ``acc_out`` with one atomic per block.

The dangling mass the step needs is read from ``acc_prev``, which the previous launch
wrote, so iterations queue on the stream with no host round trip. A step whose
predecessor's residual is already below ``tol`` returns at once, leaving its ``acc``
row at zero so that every later queued step returns too: the host may queue many
steps and still stop at exactly the first converged one.
"""

from __future__ import annotations

import itertools

from webrank.kernels.cuda_common import COMMON, CTYPE, KernelArgs, compiled_kernel

PREFIX = "wr_"

SOURCE = COMMON + r"""
#include <cooperative_groups.h>

// Gather sum of xs over in-links k = first, first + STRIDE, ... < end, with four
// independent loads in flight per lane (a plain loop waits on each index, then each gather).
// COH: xs was written by other blocks of the same launch (the persistent kernel).
template <typename IP, typename IX, typename T, bool WEIGHTED, int STRIDE, bool COH = false>
__device__ __forceinline__ double wr_gather(
    IP k, const IP end, const IX* __restrict__ indices, const T* __restrict__ vals,
    const T* xs)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    for (; k + 3 * STRIDE < end; k += 4 * STRIDE) {
        const IX j0 = indices[k], j1 = indices[k + STRIDE];
        const IX j2 = indices[k + 2 * STRIDE], j3 = indices[k + 3 * STRIDE];
        const double g0 = (double)wr_ld<COH>(xs + j0), g1 = (double)wr_ld<COH>(xs + j1);
        const double g2 = (double)wr_ld<COH>(xs + j2), g3 = (double)wr_ld<COH>(xs + j3);
        if (WEIGHTED) {
            a0 += (double)vals[k] * g0;
            a1 += (double)vals[k + STRIDE] * g1;
            a2 += (double)vals[k + 2 * STRIDE] * g2;
            a3 += (double)vals[k + 3 * STRIDE] * g3;
        } else {
            a0 += g0; a1 += g1; a2 += g2; a3 += g3;
        }
    }
    for (; k < end; k += STRIDE) {
        const double g = (double)wr_ld<COH>(xs + indices[k]);
        a0 += WEIGHTED ? (double)vals[k] * g : g;
    }
    return (a0 + a1) + (a2 + a3);
}

// Kumar et al.'s in-degree imbalance: rows with more than `heavy_threshold` in-links are cut
// into segments of a few hundred edges, one warp each, summed with atomics into
// heavy_sum[row]; the row pass then reads (and clears) that sum instead of walking the
// row with a few lanes while the rest of the grid waits for it.
template <typename IP, typename IX, typename T, bool WEIGHTED, bool COH>
__device__ __forceinline__ void wr_heavy_segments(
    const i64 nseg, const i64* __restrict__ seg_row, const IP* __restrict__ seg_begin,
    const IP* __restrict__ seg_end, const IX* __restrict__ indices,
    const T* __restrict__ vals, const T* xs, double* heavy_sum)
{
    const int lane = threadIdx.x % 32;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    for (i64 s = warp; s < nseg; s += nwarps) {
        double acc = wr_gather<IP, IX, T, WEIGHTED, 32, COH>(seg_begin[s] + lane, seg_end[s],
                                                              indices, vals, xs);
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd(&heavy_sum[seg_row[s]], acc);
    }
}

// One power step over every row: a group of GROUP lanes gathers a row (split rows read
// their sum from heavy_sum and clear it), then wr_finish_row; the block's partial
// reductions are added to acc_out. `n` rows; inv_n is 1 / (nodes of the graph): the
// uniform teleport value, also when the rows are one part of a partitioned graph.
template <typename IP, typename IX, typename T, bool WEIGHTED, int GROUP, bool COH>
__device__ __forceinline__ void wr_pull_rows(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const T* __restrict__ vals, const T* xs, const double* x,
    const double* __restrict__ v, const double* __restrict__ d, const int uniform_v,
    const int uniform_d, const double* __restrict__ inv_out, const double alpha,
    const double inv_n, const double dm, const double mass, double* acc_out, const int crit,
    const int mode, double* __restrict__ x_out, T* __restrict__ xs_out,
    const i64 heavy_threshold, double* heavy_sum, const int permuted,
    const IX* __restrict__ xs_pos)
{
    const int lane = threadIdx.x % GROUP;
    // rows are dealt out a warp at a time so that every lane of a warp runs the same
    // number of loop trips (the shuffles below need the whole warp)
    constexpr int RPW = 32 / GROUP;
    const i64 warp_id = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    const int sub = (threadIdx.x % 32) / GROUP;
    double res = 0.0, dmass = 0.0, tmass = 0.0, amass = 0.0;
    for (i64 r0 = warp_id * RPW; r0 < n; r0 += nwarps * RPW) {
        const i64 row = r0 + sub;
        const bool valid = row < n;
        double acc = 0.0;
        if (valid) {
            const IP beg = indptr[row], end = indptr[row + 1];
            if ((i64)(end - beg) > heavy_threshold) {
                if (lane == 0) {       // summed by wr_heavy_segments
                    acc = wr_ld<COH>(heavy_sum + row);
                    heavy_sum[row] = 0.0;   // ready for the next step
                }
            } else {
                acc = wr_gather<IP, IX, T, WEIGHTED, GROUP, COH>(beg + lane, end, indices,
                                                                  vals, xs);
            }
        }
        #pragma unroll
        for (int off = GROUP / 2; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off, GROUP);
        if (valid && lane == 0) {
            const double vi = uniform_v ? inv_n : v[row];
            const double di = uniform_d ? inv_n : d[row];
            // a reordered graph gathers xs in its own order (see backends.gpu, reorder)
            wr_finish_row<T>(row, permuted ? (i64)xs_pos[row] : row, acc,
                             wr_ld<COH>(x + row), alpha, dm, mass, vi, di, mode, x_out,
                             xs_out, inv_out, crit, res, dmass, tmass, amass);
        }
    }
    wr_block_accumulate(res, dmass, tmass, amass, crit, acc_out);
}

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
    wr_heavy_segments<IP, IX, T, WEIGHTED, false>(nseg, seg_row, seg_begin, seg_end,
                                                  indices, vals, xs, heavy_sum);
}

template <typename IP, typename IX, typename T, bool WEIGHTED, int GROUP>
__global__ void wr_fused_step(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const T* __restrict__ vals, const T* __restrict__ xs, const double* __restrict__ x,
    const double* __restrict__ v, const double* __restrict__ d,
    const int uniform_v, const int uniform_d,
    const double* __restrict__ inv_out, const double alpha, const double inv_n,
    const double* __restrict__ acc_prev, double* __restrict__ acc_out,
    const int crit, const double tol_cmp, const int mode,
    double* __restrict__ x_out, T* __restrict__ xs_out,
    const unsigned long long* __restrict__ chunk, const i64 step0, const i64 chunk_len,
    const i64 max_steps, const i64 heavy_threshold, double* __restrict__ heavy_sum,
    const int permuted, const IX* __restrict__ xs_pos)
{
    if (wr_skip_step(acc_prev, tol_cmp, chunk, step0, chunk_len, max_steps)) return;
    wr_pull_rows<IP, IX, T, WEIGHTED, GROUP, false>(
        n, indptr, indices, vals, xs, x, v, d, uniform_v, uniform_d, inv_out, alpha, inv_n,
        acc_prev[1], acc_prev[2], acc_out, crit, mode, x_out, xs_out, heavy_threshold,
        heavy_sum, permuted, xs_pos);
}

// Whole solves in one cooperative launch: steps s_first..s_last (or until a step's
// residual is below tol_cmp), the split rows' segments, then the rows, with a grid-wide
// barrier after each phase; the residual test reads the step's reduced row of `hist`
// after the barrier, so every block stops at the same step. Step s reads
// (x, xs)[(s - 1) % 2] and writes (x, xs)[s % 2]; step 1 is plain (FIRST_DELTA when
// delta), later steps delta or plain.
template <typename IP, typename IX, typename T, bool WEIGHTED, int GROUP>
__global__ void __launch_bounds__(256) wr_pull_solve(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const T* __restrict__ vals, double* x_a, double* x_b, T* xs_a, T* xs_b,
    const double* __restrict__ v, const double* __restrict__ d, const int uniform_v,
    const int uniform_d, const double* __restrict__ inv_out, const double alpha,
    const i64 nseg, const i64* __restrict__ seg_row, const IP* __restrict__ seg_begin,
    const IP* __restrict__ seg_end, const i64 heavy_threshold, double* heavy_sum,
    const int permuted, const IX* __restrict__ xs_pos, double* hist, const i64 s_first,
    const i64 s_last, const int delta, const int crit, const double tol_cmp)
{
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (i64 s = s_first; s <= s_last; ++s) {
        const double* prev = hist + WR_ACC * (s - 1);
        if (__ldcg(prev) < tol_cmp) break;   // the same value in every block
        const int in = (int)((s - 1) & 1);
        const T* xs_in = in ? xs_b : xs_a;
        if (nseg) {
            wr_heavy_segments<IP, IX, T, WEIGHTED, true>(nseg, seg_row, seg_begin, seg_end,
                                                         indices, vals, xs_in, heavy_sum);
            grid.sync();
        }
        const int mode = delta ? (s == 1 ? WR_FIRST_DELTA : WR_DELTA) : WR_PLAIN;
        wr_pull_rows<IP, IX, T, WEIGHTED, GROUP, true>(
            n, indptr, indices, vals, xs_in, in ? x_b : x_a, v, d, uniform_v, uniform_d,
            inv_out, alpha, 1.0 / (double)n, __ldcg(prev + 1), __ldcg(prev + 2),
            hist + WR_ACC * s, crit,
            mode, in ? x_a : x_b, in ? xs_a : xs_b, heavy_threshold, heavy_sum, permuted,
            xs_pos);
        grid.sync();
    }
}
"""

ARCHIVE_SOURCE = r"""
// End of one CUDA-graph replay of B steps: append the B history rows of W values
// (residual, dangling mass, mass, ...) to the history, carry the last row to row 0 of the
// ring, clear rows 1..B (so a step after convergence still sees a zero residual and
// returns) and count the replay.
extern "C" __global__ void wr_archive(double* ring, const long long B, const int W,
                                      double* hist, unsigned long long* chunk)
{
    const unsigned long long c = *chunk;
    for (long long i = threadIdx.x; i < W * B; i += blockDim.x)
        hist[W * (c * B) + i] = ring[W + i];
    __syncthreads();
    if (threadIdx.x < W) ring[threadIdx.x] = ring[W * B + threadIdx.x];
    __syncthreads();
    for (long long i = threadIdx.x; i < W * B; i += blockDim.x) ring[W + i] = 0.0;
    if (threadIdx.x == 0) *chunk = c + 1;
}
"""

GROUPS = (1, 2, 4, 8, 16, 32)
#: the CSR's index types (indptr and indices each) and the gathered vector's storage types
#: the backends instantiate the kernels for
INDEX_TYPES = ("int32", "int64")
VALUE_TYPES = ("float32", "float64")

#: the kernels' parameters by name, read from the sources above
HEAVY_ROWS = KernelArgs(SOURCE, "wr_heavy_rows")
FUSED_STEP = KernelArgs(SOURCE, "wr_fused_step")
PULL_SOLVE = KernelArgs(SOURCE, "wr_pull_solve")
ARCHIVE = KernelArgs(ARCHIVE_SOURCE, "wr_archive")


def kernel_name(ip: str, ix: str, t: str, weighted: bool, group: int | None,
                solve: bool = False) -> str:
    """The template instantiation: the fused step, the heavy-row kernel (group None), or
    the persistent whole-solve kernel (``solve``)."""
    w = "true" if weighted else "false"
    if group is None:
        return f"wr_heavy_rows<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {w}>"
    kernel = "wr_pull_solve" if solve else "wr_fused_step"
    return f"{kernel}<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {w}, {group}>"


def pick_group(avg_degree: float) -> int:
    """Lanes per row: the smallest group of at least ``avg_degree`` lanes. Callers pass a
    sixteenth of the light rows' average in-degree: with four gathers in flight per lane,
    more rows per warp hide latency better (H100, cnr-2000: 0.025 ms/step with one lane per
    row, 0.033 with 4, 0.060 with 16)."""
    for g in GROUPS:
        if g >= avg_degree:
            return g
    return GROUPS[-1]


def instantiations() -> list[tuple[str, str, bool]]:
    """Every ``(source, name expression, cooperative)`` a backend may compile: for each
    pair of index types, value type and weighting, the heavy-row kernel, the fused step of
    each group and the persistent kernel (cooperative); and the archive kernel. The set
    :mod:`webrank.kernels.cuda_prebuilt` builds when the package is built."""
    found = [(ARCHIVE_SOURCE, "wr_archive", False)]
    for ip, ix, t, weighted in itertools.product(INDEX_TYPES, INDEX_TYPES, VALUE_TYPES,
                                                 (False, True)):
        found.append((SOURCE, kernel_name(ip, ix, t, weighted, None), False))
        for group in GROUPS:
            found.append((SOURCE, kernel_name(ip, ix, t, weighted, group), False))
            found.append((SOURCE, kernel_name(ip, ix, t, weighted, group, True), True))
    return found


def get_archive_kernel():
    """The kernel that closes one CUDA-graph replay (see ``ARCHIVE_SOURCE``)."""
    return compiled_kernel(ARCHIVE_SOURCE, "wr_archive")


def get_kernel(ip: str, ix: str, t: str, weighted: bool, group: int | None,
               solve: bool = False):
    """The fused-step kernel for these types and lanes per row (None: heavy-row kernel;
    ``solve``: the persistent kernel, compiled for a cooperative launch)."""
    return compiled_kernel(SOURCE, kernel_name(ip, ix, t, weighted, group, solve),
                           cooperative=solve)
