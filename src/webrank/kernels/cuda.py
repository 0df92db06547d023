"""CUDA kernels of the GPU backend, as source: built with the package
(:mod:`webrank.kernels.cuda_prebuilt`), or compiled by NVRTC through CuPy on first use.

``wr_fused_step`` does one whole PageRank iteration in one launch (Praveen et al.'s
cuSPARSE SpMV + cuBLAS sum/axpy + residual kernel, fused); ``wr_pull_solve`` runs every
step of a solve in one cooperative launch (the ``persistent`` engine), its row pass
between grid-wide barriers. The fused step's row pass:

* a group of ``GROUP`` lanes (1..32, a power of two chosen from the average in-degree)
  gathers one row of the pattern-only in-link CSR: ``xs`` already holds
  ``x / out_degree``, so no value array is read for unweighted graphs (the persistent
  kernel's warps stage the in-links of 32 rows at a time instead:
  ``wr_pull_rows_staged``);
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

#: threads in a block of the persistent kernel (``wr_pull_solve``): two blocks of 512 a
#: multiprocessor hold the warps of four of 256 with half the arrivals at each grid-wide
#: barrier and half the block sums (H200: 0.6-0.9 us of a 16-21 us step less on
#: web-NotreDame and cnr-2000; blocks of 1024 no better; benchmarks/gpu/persistent_phases.py)
SOLVE_BLOCK = 512


def solve_source(block: int) -> str:
    """The kernels' source, the persistent kernel's blocks of ``block`` threads (a
    multiple of 32, at most 1024; :data:`SOLVE_BLOCK` in :data:`SOURCE`)."""
    return (COMMON + f"#define WR_SOLVE_BLOCK {block}\n"
            f"#define WR_SOLVE_MIN_BLOCKS {max(1, 1024 // block)}\n" + _BODY)


_BODY = r"""
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
        // a segment's (at most HEAVY_SEGMENT = 256) links, eight a lane with every index
        // and then every gather in flight at once: one trip of two loads, not two
        const IP end = seg_end[s];
        double acc = 0.0;
        for (IP c = seg_begin[s]; c < end; c += 256) {
            IX j[8];
            #pragma unroll
            for (int u = 0; u < 8; ++u) {
                const IP k = c + lane + 32 * u;
                j[u] = k < end ? indices[k] : (IX)0;
            }
            double g[8];
            #pragma unroll
            for (int u = 0; u < 8; ++u) {
                const IP k = c + lane + 32 * u;
                g[u] = k < end ? (double)wr_ld<COH>(xs + j[u]) : 0.0;
                if (WEIGHTED && k < end) g[u] *= (double)vals[k];
            }
            acc += ((g[0] + g[1]) + (g[2] + g[3])) + ((g[4] + g[5]) + (g[6] + g[7]));
        }
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

// What a staged row pass keeps of an in-link in shared memory: the gathered value as
// stored (T), or for a weighted graph its product with the link's value (double).
template <typename T, bool WEIGHTED> struct wr_staged { typedef T type; };
template <typename T> struct wr_staged<T, true> { typedef double type; };

#define WR_STAGE 256        // in-links a warp stages at a time (8 a lane)
#define WR_STAGE_WARPS (WR_SOLVE_BLOCK / 32)   // warps of a block

// The shared-memory slot of the q-th staged value: one slot of padding every 32 (16 for
// 8-byte values), so that lanes summing rows of equal length do not all read one bank.
template <typename S>
__device__ __forceinline__ int wr_stage_slot(const int q) {
    return q + (q >> (sizeof(S) == 8 ? 4 : 5));
}

// One power step over every row, the light rows' in-links staged (the persistent engine).
// Warp w takes rows warp_rows[w] .. warp_rows[w + 1] - 1 (ranges of about equal in-links
// and rows: a warp's share of the step is its work, not its rows' count), 32 at a time.
// In the light-row CSR (light_indptr, light_indices, light_vals: the rows of at most
// heavy_threshold in-links; the others' ranges are empty) 32 consecutive rows' in-links
// are one contiguous range, which the warp loads coalesced and gathers WR_STAGE at a time
// into shared memory, eight independent loads in flight a lane; each lane then sums its
// own row's part from there (Greathouse & Daga 2014's CSR-stream). So a warp waits for
// two loads per WR_STAGE links, not for its longest row's chain of dependent loads.
// Split rows read their sum from heavy_sum (and clear it); then wr_finish_row, and the
// block's sums into acc_out, as wr_pull_rows.
template <typename IP, typename IX, typename T, bool WEIGHTED, bool COH>
__device__ __forceinline__ void wr_pull_rows_staged(
    const i64 n, const IP* __restrict__ indptr, const IP* __restrict__ light_indptr,
    const IX* __restrict__ light_indices, const T* __restrict__ light_vals, const T* xs,
    const double* x, const double* __restrict__ v, const double* __restrict__ d,
    const int uniform_v, const int uniform_d, const double* __restrict__ inv_out,
    const double alpha, const double inv_n, const double dm, const double mass,
    double* acc_out, const int crit, const int mode, double* __restrict__ x_out,
    T* __restrict__ xs_out, const i64 heavy_threshold, double* heavy_sum,
    const int permuted, const IX* __restrict__ xs_pos, const i64* __restrict__ warp_rows,
    const i64 nwarps)
{
    typedef typename wr_staged<T, WEIGHTED>::type S;
    constexpr int PER_LANE = WR_STAGE / 32;
    __shared__ S staged[WR_STAGE_WARPS][WR_STAGE + WR_STAGE / 16];
    const int lane = threadIdx.x % 32;
    S* mine = staged[threadIdx.x / 32];
    const i64 warp_id = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 r_end = warp_id < nwarps ? warp_rows[warp_id + 1] : 0;
    double res = 0.0, dmass = 0.0, tmass = 0.0, amass = 0.0;
    for (i64 r0 = warp_id < nwarps ? warp_rows[warp_id] : 0; r0 < r_end; r0 += 32) {
        const i64 row = r0 + lane;
        const bool valid = row < r_end;
        const IP lb = valid ? light_indptr[row] : (IP)0;
        const IP le = valid ? light_indptr[row + 1] : (IP)0;
        const int last = (int)((r_end - 1 - r0) < 31 ? (r_end - 1 - r0) : 31);
        const IP first = __shfl_sync(0xffffffffu, lb, 0);
        const IP end = __shfl_sync(0xffffffffu, le, last);
        // what the row's end needs, loaded now, beside the staging's loads: the finish
        // then waits for none of them
        bool split = false;
        double xi = 0.0, si = 0.0, vi = inv_n, di = inv_n;
        i64 slot = row;
        if (valid) {
            split = (i64)(indptr[row + 1] - indptr[row]) > heavy_threshold;
            xi = wr_ld<COH>(x + row);
            si = inv_out[row];
            if (!uniform_v) vi = v[row];
            if (!uniform_d) di = d[row];
            if (permuted) slot = (i64)xs_pos[row];
        }
        double acc = 0.0;
        for (IP c = first; c < end; c += WR_STAGE) {   // the same trips in every lane
            const IP cend = (end - c < (IP)WR_STAGE) ? end : c + (IP)WR_STAGE;
            IX j[PER_LANE];
            #pragma unroll
            for (int u = 0; u < PER_LANE; ++u) {
                const IP k = c + lane + 32 * u;
                j[u] = k < cend ? light_indices[k] : (IX)0;
            }
            #pragma unroll
            for (int u = 0; u < PER_LANE; ++u) {
                const IP k = c + lane + 32 * u;
                if (k < cend) {
                    const int q = lane + 32 * u;
                    if (WEIGHTED)
                        mine[wr_stage_slot<S>(q)] =
                            (double)light_vals[k] * (double)wr_ld<COH>(xs + j[u]);
                    else
                        mine[wr_stage_slot<S>(q)] = wr_ld<COH>(xs + j[u]);
                }
            }
            __syncwarp();
            const IP a = lb > c ? lb : c, b = le < cend ? le : cend;
            double s0 = 0.0, s1 = 0.0;
            int q = (int)(a - c);
            const int qend = (int)(b - c);
            for (; q + 1 < qend; q += 2) {
                s0 += (double)mine[wr_stage_slot<S>(q)];
                s1 += (double)mine[wr_stage_slot<S>(q + 1)];
            }
            if (q < qend) s0 += (double)mine[wr_stage_slot<S>(q)];
            acc += s0 + s1;
            __syncwarp();   // the slots are staged again on the next trip
        }
        if (valid) {
            if (split) {
                acc = wr_ld<COH>(heavy_sum + row);   // summed by wr_heavy_segments
                heavy_sum[row] = 0.0;                // ready for the next step
            }
            wr_finish_row_scaled<T>(row, slot, acc, xi, si, alpha, dm, mass, vi, di, mode,
                                    x_out, xs_out, crit, res, dmass, tmass, amass);
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

// Rows of partial sums a persistent step's blocks add their sums into (block b into row
// b % WR_SLOTS): one row taking every block's four atomics made them wait on each other.
#define WR_SLOTS 16

// The step history row at `row` (WR_SLOTS slots of WR_ACC values) reduced: its residual
// (max under crit 2, else sum), dangling mass and mass, in every thread of the block (the
// slots added by a fixed tree: every block gets the same values). Every thread of the
// block must call it; a barrier must separate two calls.
__device__ __forceinline__ void wr_slots_read(const double* row, const int crit,
                                              double& res, double& dm, double& mass)
{
    __shared__ double s_row[3];
    if (threadIdx.x < 32) {
        const int k = threadIdx.x;
        double r = 0.0, a = 0.0, b = 0.0;
        if (k < WR_SLOTS) {
            r = __ldcg(row + WR_ACC * k);
            a = __ldcg(row + WR_ACC * k + 1);
            b = __ldcg(row + WR_ACC * k + 2);
        }
        #pragma unroll
        for (int off = WR_SLOTS / 2; off > 0; off >>= 1) {
            const double r2 = __shfl_down_sync(0xffffffffu, r, off);
            r = (crit == 2) ? fmax(r, r2) : r + r2;
            a += __shfl_down_sync(0xffffffffu, a, off);
            b += __shfl_down_sync(0xffffffffu, b, off);
        }
        if (k == 0) { s_row[0] = r; s_row[1] = a; s_row[2] = b; }
    }
    __syncthreads();
    res = s_row[0];
    dm = s_row[1];
    mass = s_row[2];
}

// Whole solves in one cooperative launch: steps s_first..s_last (or until a step's
// residual is below tol_cmp), the split rows' segments, then the rows (staged:
// wr_pull_rows_staged, warp w those from warp_rows[w]; nwarps warps, the launch's),
// with a grid-wide barrier after each phase. Row s of `hist` holds WR_SLOTS slots of
// step s's sums; the residual test reads the step's reduced row after the barrier, so
// every block stops at the same step, and block 0 writes that residual to residuals[s]
// (the host's copy: what the kernel tested). Step s reads (x, xs)[(s - 1) % 2] and writes
// (x, xs)[s % 2]; step 1 is plain (FIRST_DELTA when delta), later steps delta or plain.
// `start` (the first launch of a solve): x0 is copied into x_a, its gathered values
// written to xs_a and its sums (residual infinite) to row 0 first; at the end of the
// solve (converged, or at s_last of the `last_launch`) x is normalised in place
// (partials: one double a block). The host's launches that did both cost more than the
// passes.
template <typename IP, typename IX, typename T, bool WEIGHTED>
__global__ void __launch_bounds__(WR_SOLVE_BLOCK, WR_SOLVE_MIN_BLOCKS) wr_pull_solve(
    const i64 n, const IP* __restrict__ indptr, const IX* __restrict__ indices,
    const T* __restrict__ vals, const IP* __restrict__ light_indptr,
    const IX* __restrict__ light_indices, const T* __restrict__ light_vals, double* x_a,
    double* x_b, T* xs_a, T* xs_b, const double* __restrict__ v,
    const double* __restrict__ d, const int uniform_v, const int uniform_d,
    const double* __restrict__ inv_out, const double alpha, const i64 nseg,
    const i64* __restrict__ seg_row, const IP* __restrict__ seg_begin,
    const IP* __restrict__ seg_end, const i64 heavy_threshold, double* heavy_sum,
    const int permuted, const IX* __restrict__ xs_pos, const i64* __restrict__ warp_rows,
    const i64 nwarps, double* hist, double* residuals, const i64 s_first,
    const i64 s_last, const int delta, const int crit, const double tol_cmp,
    const int start, const double* __restrict__ x0, const int last_launch,
    double* partials)
{
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    constexpr i64 ROW = WR_ACC * WR_SLOTS;
    if (start) {
        // row 0's residual: none yet (infinite), added once
        double res = (blockIdx.x == 0 && threadIdx.x == 0)
                         ? __longlong_as_double(0x7ff0000000000000LL) : 0.0;
        double dmass = 0.0, tmass = 0.0, amass = 0.0;
        for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (i64)gridDim.x * blockDim.x) {
            const double xi = x0[i], si = inv_out[i];
            x_a[i] = xi;
            xs_a[permuted ? (i64)xs_pos[i] : i] = (T)(xi * si);
            if (si == 0.0) dmass += xi;
            tmass += xi;
            amass += fabs(xi);
        }
        wr_block_accumulate(res, dmass, tmass, amass, crit,
                            hist + WR_ACC * (blockIdx.x % WR_SLOTS));
        grid.sync();
    }
    i64 s = s_first;
    for (; ; ++s) {   // reads the rows of steps s_first - 1 .. s_last
        double res, dm, mass;
        wr_slots_read(hist + ROW * (s - 1), crit, res, dm, mass);
        if (blockIdx.x == 0 && threadIdx.x == 0) residuals[s - 1] = res;
        if (res < tol_cmp) break;   // the same values in every block
        if (s > s_last) {
            if (!last_launch) return;
            break;
        }
        const int in = (int)((s - 1) & 1);
        const T* xs_in = in ? xs_b : xs_a;
        if (nseg) {
            wr_heavy_segments<IP, IX, T, WEIGHTED, true>(nseg, seg_row, seg_begin, seg_end,
                                                         indices, vals, xs_in, heavy_sum);
            grid.sync();
        }
        const int mode = delta ? (s == 1 ? WR_FIRST_DELTA : WR_DELTA) : WR_PLAIN;
        wr_pull_rows_staged<IP, IX, T, WEIGHTED, true>(
            n, indptr, light_indptr, light_indices, light_vals, xs_in, in ? x_b : x_a, v,
            d, uniform_v, uniform_d, inv_out, alpha, 1.0 / (double)n, dm, mass,
            hist + ROW * s + WR_ACC * (blockIdx.x % WR_SLOTS), crit, mode, in ? x_a : x_b,
            in ? xs_a : xs_b, heavy_threshold, heavy_sum, permuted, xs_pos, warp_rows,
            nwarps);
        grid.sync();
    }
    // the solve's end (converged, or its last step): the answer x_{s-1} scaled to sum 1
    // where its sum is positive, the sum in a fixed order (each block's part by a fixed
    // tree into partials[block], then the parts in block order in every block)
    double* x_end = ((s - 1) & 1) ? x_b : x_a;
    __shared__ double s_sum[32];
    double part = 0.0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        part += __ldcg(x_end + i);
    for (int off = 16; off > 0; off >>= 1) part += __shfl_down_sync(0xffffffffu, part, off);
    if (threadIdx.x % 32 == 0) s_sum[threadIdx.x / 32] = part;
    __syncthreads();
    if (threadIdx.x == 0) {
        double block = 0.0;
        for (int w = 0; w < (int)(blockDim.x / 32); ++w) block += s_sum[w];
        partials[blockIdx.x] = block;
    }
    grid.sync();
    if (threadIdx.x < 32) {
        double total = 0.0;
        for (int b = threadIdx.x; b < (int)gridDim.x; b += 32) total += __ldcg(partials + b);
        for (int off = 16; off > 0; off >>= 1)
            total += __shfl_down_sync(0xffffffffu, total, off);
        if (threadIdx.x == 0) s_sum[0] = total;
    }
    __syncthreads();
    const double total = s_sum[0];
    if (total > 0.0)
        for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (i64)gridDim.x * blockDim.x)
            x_end[i] = __ldcg(x_end + i) / total;
}
"""

SOURCE = solve_source(SOLVE_BLOCK)

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
#: slots of a persistent step's history row (WR_SLOTS above)
SLOTS = 16
#: the CSR's index types (indptr and indices each) and the gathered vector's storage types
#: the backends instantiate the kernels for
INDEX_TYPES = ("int32", "int64")
VALUE_TYPES = ("float32", "float64")

#: the kernels' parameters by name, read from the sources above
HEAVY_ROWS = KernelArgs(SOURCE, "wr_heavy_rows")
FUSED_STEP = KernelArgs(SOURCE, "wr_fused_step")
PULL_SOLVE = KernelArgs(SOURCE, "wr_pull_solve")
ARCHIVE = KernelArgs(ARCHIVE_SOURCE, "wr_archive")


def kernel_name(ip: str, ix: str, t: str, weighted: bool, group: int | None) -> str:
    """The template instantiation: the fused step of ``group`` lanes per row, or the
    heavy-row kernel (group None)."""
    w = "true" if weighted else "false"
    if group is None:
        return f"wr_heavy_rows<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {w}>"
    return f"wr_fused_step<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {w}, {group}>"


def solve_kernel_name(ip: str, ix: str, t: str, weighted: bool) -> str:
    """The persistent whole-solve kernel's template instantiation."""
    w = "true" if weighted else "false"
    return f"wr_pull_solve<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {w}>"


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
        found.extend((SOURCE, kernel_name(ip, ix, t, weighted, group), False)
                     for group in GROUPS)
        found.append((SOURCE, solve_kernel_name(ip, ix, t, weighted), True))
    return found


def get_archive_kernel():
    """The kernel that closes one CUDA-graph replay (see ``ARCHIVE_SOURCE``)."""
    return compiled_kernel(ARCHIVE_SOURCE, "wr_archive")


def get_kernel(ip: str, ix: str, t: str, weighted: bool, group: int | None):
    """The fused-step kernel for these types and lanes per row (None: heavy-row kernel)."""
    return compiled_kernel(SOURCE, kernel_name(ip, ix, t, weighted, group))


def get_solve_kernel(ip: str, ix: str, t: str, weighted: bool):
    """The persistent whole-solve kernel for these types, compiled for a cooperative
    launch."""
    return compiled_kernel(SOURCE, solve_kernel_name(ip, ix, t, weighted), cooperative=True)
