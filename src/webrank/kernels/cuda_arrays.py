"""CUDA kernels for the array work around the GPU steps, in place of CuPy's own kernels.

CuPy compiles each of its elementwise operations, reductions, casts, fancy indexings and
scans with NVRTC the first time a process uses it (about 0.2 s each; a first GPU run of
cnr-2000 compiled 44 of them). These kernels do that work for the GPU operators
(:mod:`webrank.backends.gpu_arrays` launches them) and come prebuilt with the package
like the other families, so that the path from a file to its ranks compiles nothing:

* ``wr_fill``: an n-vector of one value (``cupy.full``);
* ``wr_node_scale``: per node, ``1 / out-degree`` (1 for a weighted graph; 0 for a
  dangling node) and the dangling mask (``out_weight == 0``), from the out-weights;
* ``wr_sums_blocks`` + ``wr_sums_total``: the sum, the absolute sum and the sum over the
  dangling nodes of a float64 vector, in a fixed order of additions (so in the same bits
  on every run and device): one history row ``(inf, dangling mass, mass, L1 norm)``;
* ``wr_gather_vector``: ``xs[slot(i)] = (T)(x[i] * inv_out[i])``, the gathered vector
  of a first step (the multiply, the cast and the scatter of the reordering in one);
* ``wr_divide``: ``x / total`` (the ranks normalised to sum 1); ``wr_normalize`` the
  same with the total read from a history row on the device (no wait for it);
* ``wr_heavy_count`` + ``wr_heavy_collect``: the rows of more than ``threshold``
  in-links (their row, first link and in-degree, in no particular order; the host
  sorts the few there are) and the in-links of the others;
* ``wr_searchsorted``: ``numpy.searchsorted(ptr, targets, side="left")``;
* ``wr_count_sources`` + ``wr_degree_keys`` + ``wr_order_positions`` +
  ``wr_relabel``: the out-degree order of the gathered vector (a 64-bit key per node,
  decreasing out-degree then id, sorted by CuPy's precompiled radix sort in place);
* ``wr_transition_values``: ``w / out_weight[source]`` per in-link of a weighted graph
  whose arrays are on the device, in the storage type;
* the tile scans (``wr_tile_sums`` and its second passes ``wr_exclusive_scan``,
  ``wr_present_codes``, ``wr_compact_keys``, ``wr_sent_slots``): prefix sums, ordered
  compactions and the slots of a partitioned run's exchange, in a fixed order;
* ``wr_rebase``: a slice of row pointers rebased to 0 (and narrowed to int32).

Types: ``T`` the gathered vector (float or double), ``IP``/``IX`` the CSR's pointer and
index types (int or long long). Every loop is grid-strided: any grid covers any size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.kernels.cuda_common import COMMON, CTYPE, KernelArgs, compiled_kernel

#: threads per block of every kernel here (the sums' shared arrays are this long)
BLOCK = 256
#: blocks of ``wr_sums_blocks``: fixed, so that the order of the additions is too
SUM_BLOCKS = 256
#: items per block of the tile scans (WR_TILE: 16 consecutive items a thread)
TILE = BLOCK * 16

SOURCE = COMMON + r"""
#define WR_ARR_BLOCK 256

template <typename T>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_fill(
    const i64 n, const double value, T* __restrict__ out)
{
    const T v = (T)value;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        out[i] = v;
}

// inv_out[i] = 1 / out_weight[i] (WEIGHTED: 1) where out_weight[i] > 0, else 0;
// dangling[i] = out_weight[i] == 0 (webrank.graph.gather_scale, in the same bits)
template <bool WEIGHTED>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_node_scale(
    const i64 n, const double* __restrict__ out_weight, double* __restrict__ inv_out,
    bool* __restrict__ dangling)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double w = out_weight[i];
        inv_out[i] = w > 0.0 ? (WEIGHTED ? 1.0 : 1.0 / w) : 0.0;
        dangling[i] = w == 0.0;
    }
}

// Shared-memory tree sum of three values over the block (WR_ARR_BLOCK threads, a fixed
// order); the totals end in s[j][0].
__device__ __forceinline__ void wr_tree_sum3(double (*s)[WR_ARR_BLOCK])
{
    __syncthreads();
    for (int off = WR_ARR_BLOCK / 2; off > 0; off >>= 1) {
        if (threadIdx.x < off) {
            #pragma unroll
            for (int j = 0; j < 3; ++j) s[j][threadIdx.x] += s[j][threadIdx.x + off];
        }
        __syncthreads();
    }
}

// Per block: the sum, the absolute sum and the sum over mask (has_mask) of its share of
// x, in partial[3 * block + 0..2].
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_sums_blocks(
    const i64 n, const double* __restrict__ x, const int has_mask,
    const bool* __restrict__ mask, double* __restrict__ partial)
{
    __shared__ double s[3][WR_ARR_BLOCK];
    double mass = 0.0, amass = 0.0, dmass = 0.0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double v = x[i];
        mass += v;
        amass += fabs(v);
        if (has_mask && mask[i]) dmass += v;
    }
    s[0][threadIdx.x] = mass;
    s[1][threadIdx.x] = amass;
    s[2][threadIdx.x] = dmass;
    wr_tree_sum3(s);
    if (threadIdx.x == 0) {
        partial[3 * blockIdx.x] = s[0][0];
        partial[3 * blockIdx.x + 1] = s[1][0];
        partial[3 * blockIdx.x + 2] = s[2][0];
    }
}

// One block: the blocks' partial sums added up, written as a step-history row
// out[0..3] = (inf, dangling mass, mass, L1 norm).
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_sums_total(
    const i64 nblocks, const double* __restrict__ partial, double* __restrict__ out)
{
    __shared__ double s[3][WR_ARR_BLOCK];
    double mass = 0.0, amass = 0.0, dmass = 0.0;
    for (i64 b = threadIdx.x; b < nblocks; b += blockDim.x) {
        mass += partial[3 * b];
        amass += partial[3 * b + 1];
        dmass += partial[3 * b + 2];
    }
    s[0][threadIdx.x] = mass;
    s[1][threadIdx.x] = amass;
    s[2][threadIdx.x] = dmass;
    wr_tree_sum3(s);
    if (threadIdx.x == 0) {
        out[0] = __longlong_as_double(0x7ff0000000000000LL);   // +inf
        out[1] = s[2][0];
        out[2] = s[0][0];
        out[3] = s[1][0];
    }
}

// xs[slot] = (T)(x[i] * inv_out[i]), slot = xs_pos[i] for a reordered gather, else i
template <typename IX, typename T>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_gather_vector(
    const i64 n, const double* __restrict__ x, const double* __restrict__ inv_out,
    const int permuted, const IX* __restrict__ xs_pos, T* __restrict__ xs)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 slot = permuted ? (i64)xs_pos[i] : i;
        xs[slot] = (T)(x[i] * inv_out[i]);
    }
}

__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_divide(
    const i64 n, const double* __restrict__ x, const double total, double* __restrict__ out)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        out[i] = x[i] / total;
}

// x / row[2] where that sum (a history row's mass, written by wr_sums_total on the
// stream before) is positive, else x: the ranks normalised with no wait for the sum
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_normalize(
    const i64 n, const double* __restrict__ x, const double* __restrict__ row,
    double* __restrict__ out)
{
    const double total = row[2];
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        out[i] = total > 0.0 ? x[i] / total : x[i];
}

// stats[0] += rows of more than `threshold` in-links, stats[1] += in-links of the others
template <typename IP>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_heavy_count(
    const i64 n, const IP* __restrict__ indptr, const i64 threshold,
    unsigned long long* __restrict__ stats)
{
    __shared__ unsigned long long s_heavy, s_light;
    if (threadIdx.x == 0) { s_heavy = 0; s_light = 0; }
    __syncthreads();
    unsigned long long heavy = 0, light = 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 deg = (i64)indptr[i + 1] - (i64)indptr[i];
        if (deg > threshold) ++heavy;
        else light += (unsigned long long)deg;
    }
    if (heavy) atomicAdd(&s_heavy, heavy);
    if (light) atomicAdd(&s_light, light);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (s_heavy) atomicAdd(&stats[0], s_heavy);
        if (s_light) atomicAdd(&stats[1], s_light);
    }
}

// Each row of more than `threshold` in-links: its id, first link and in-degree at the next
// free slot (cursor; slots in no particular order)
template <typename IP>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_heavy_collect(
    const i64 n, const IP* __restrict__ indptr, const i64 threshold,
    unsigned long long* __restrict__ cursor, i64* __restrict__ rows,
    i64* __restrict__ begin, i64* __restrict__ deg)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 b = (i64)indptr[i], d = (i64)indptr[i + 1] - b;
        if (d > threshold) {
            const unsigned long long slot = atomicAdd(cursor, 1ull);
            rows[slot] = i;
            begin[slot] = b;
            deg[slot] = d;
        }
    }
}

// out[t] = the first k in 0..nptr with k == nptr or ptr[k] >= targets[t] (ptr ascending:
// numpy.searchsorted(ptr, targets, side="left"))
template <typename IP>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_searchsorted(
    const i64 nptr, const IP* __restrict__ ptr, const i64 ntargets,
    const i64* __restrict__ targets, i64* __restrict__ out)
{
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < ntargets;
         t += (i64)gridDim.x * blockDim.x) {
        const i64 want = targets[t];
        i64 lo = 0, hi = nptr;            // ptr[k] < want for k < lo; >= want from hi
        while (lo < hi) {
            const i64 mid = lo + ((hi - lo) >> 1);
            if ((i64)ptr[mid] < want) lo = mid + 1; else hi = mid;
        }
        out[t] = lo;
    }
}

// counts[j] += the in-links whose source is j (counts zeroed by the caller)
template <typename IX>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_count_sources(
    const i64 m, const IX* __restrict__ indices, int* __restrict__ counts)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x)
        atomicAdd(&counts[indices[k]], 1);
}

// keys[j] = (INT_MAX - counts[j]) << 32 | j: ascending keys are the nodes by decreasing
// count, ties by id (a stable argsort of -counts)
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_degree_keys(
    const i64 n, const int* __restrict__ counts, i64* __restrict__ keys)
{
    for (i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += (i64)gridDim.x * blockDim.x)
        keys[j] = ((i64)(0x7fffffff - counts[j]) << 32) | j;
}

// pos[node of sorted key i] = i (the node ids are the low 32 bits of the keys)
template <typename IX>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_order_positions(
    const i64 n, const i64* __restrict__ keys, IX* __restrict__ pos)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        pos[keys[i] & 0xffffffffLL] = (IX)i;
}

// out[k] = pos[indices[k]]
template <typename IX>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_relabel(
    const i64 m, const IX* __restrict__ indices, const IX* __restrict__ pos,
    IX* __restrict__ out)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x)
        out[k] = pos[indices[k]];
}

// vals[k] = (T)(weights[k] / out_weight[indices[k]]) where that out-weight is > 0, else 0
// (webrank.Graph.transition_values, in the same bits)
template <typename IX, typename T>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_transition_values(
    const i64 m, const IX* __restrict__ indices, const double* __restrict__ weights,
    const double* __restrict__ out_weight, T* __restrict__ vals)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x) {
        const double ow = out_weight[indices[k]];
        vals[k] = (T)(ow > 0.0 ? weights[k] / ow : 0.0);
    }
}

// ---- the CSR build of webrank.build_gpu: keys, a tile scan, the compaction -------------

#define WR_TILE_ITEMS 16
#define WR_TILE (WR_ARR_BLOCK * WR_TILE_ITEMS)

// keys[k] = (row << 32) | source, both renumbered through `code` where CODED
template <typename IS, typename IR, bool CODED>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_make_keys(
    const i64 m, const IS* __restrict__ src, const IR* __restrict__ row,
    const int* __restrict__ code, i64* __restrict__ keys)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x) {
        const i64 s = (i64)src[k], r = (i64)row[k];
        keys[k] = CODED ? (((i64)code[r] << 32) | (i64)code[s]) : ((r << 32) | s);
    }
}

// present[id] = 1 for every id of a link (present zeroed by the caller)
template <typename I>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_mark_present(
    const i64 m, const I* __restrict__ src, const I* __restrict__ dst,
    int* __restrict__ present)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < m;
         k += (i64)gridDim.x * blockDim.x) {
        present[src[k]] = 1;
        present[dst[k]] = 1;
    }
}

// Exclusive scan of one value per thread over the block, in a fixed order; *total gets
// the block's sum. Every thread of the block must call it.
__device__ __forceinline__ i64 wr_block_exclusive_scan(const i64 v, i64* total)
{
    __shared__ i64 s[WR_ARR_BLOCK];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int off = 1; off < WR_ARR_BLOCK; off <<= 1) {
        const i64 add = threadIdx.x >= off ? s[threadIdx.x - off] : 0;
        __syncthreads();
        s[threadIdx.x] += add;
        __syncthreads();
    }
    *total = s[WR_ARR_BLOCK - 1];
    const i64 inclusive = s[threadIdx.x];
    __syncthreads();
    return inclusive - v;
}

// The value of item k of a tile scan: MODE 0, vals[k]; MODE 1, whether keys[k] starts a
// run of equal keys (sorted keys: the distinct links); MODE 2, whether weights[k] > 0
// (the nodes some link reads: what a part sends)
template <int MODE>
__device__ __forceinline__ i64 wr_item(const i64 k, const int* __restrict__ vals,
                                       const i64* __restrict__ keys,
                                       const double* __restrict__ weights)
{
    if (MODE == 0) return (i64)vals[k];
    if (MODE == 2) return weights[k] > 0.0 ? 1 : 0;
    return (k == 0 || keys[k] != keys[k - 1]) ? 1 : 0;
}

// Pass 1 of a tile scan (WR_TILE items a block, WR_TILE_ITEMS consecutive ones a thread):
// each tile's sum, which the host turns into the tiles' offsets
template <int MODE>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_tile_sums(
    const i64 len, const int* __restrict__ vals, const i64* __restrict__ keys,
    const double* __restrict__ weights, i64* __restrict__ tile_sums)
{
    const i64 base = (i64)blockIdx.x * WR_TILE + (i64)threadIdx.x * WR_TILE_ITEMS;
    i64 c = 0;
    for (int j = 0; j < WR_TILE_ITEMS; ++j)
        if (base + j < len) c += wr_item<MODE>(base + j, vals, keys, weights);
    i64 total;
    wr_block_exclusive_scan(c, &total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Pass 2, exclusive prefix sums: out[k] = vals[0] + ... + vals[k - 1], out[len] = the total
// (the row pointers of the rows' counts)
template <typename IP>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_exclusive_scan(
    const i64 len, const int* __restrict__ vals, const i64* __restrict__ tile_offsets,
    IP* __restrict__ out)
{
    const i64 base = (i64)blockIdx.x * WR_TILE + (i64)threadIdx.x * WR_TILE_ITEMS;
    i64 c = 0;
    for (int j = 0; j < WR_TILE_ITEMS; ++j)
        if (base + j < len) c += (i64)vals[base + j];
    i64 total;
    i64 pre = wr_block_exclusive_scan(c, &total) + tile_offsets[blockIdx.x];
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        const i64 k = base + j;
        if (k >= len) break;
        out[k] = (IP)pre;
        pre += (i64)vals[k];
        if (k == len - 1) out[len] = (IP)pre;
    }
}

// Pass 2 over a presence map, in place: present[id] = the rank of id among the ids
// present (its new number); with_ids: ids[rank] = id
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_present_codes(
    const i64 len, int* __restrict__ present, const i64* __restrict__ tile_offsets,
    const int with_ids, i64* __restrict__ ids)
{
    const i64 base = (i64)blockIdx.x * WR_TILE + (i64)threadIdx.x * WR_TILE_ITEMS;
    bool here[WR_TILE_ITEMS];
    i64 c = 0;
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        here[j] = base + j < len && present[base + j] != 0;
        c += here[j];
    }
    i64 total;
    i64 pre = wr_block_exclusive_scan(c, &total) + tile_offsets[blockIdx.x];
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        const i64 k = base + j;
        if (k >= len) break;
        present[k] = (int)pre;
        if (here[j]) {
            if (with_ids) ids[pre] = k;
            ++pre;
        }
    }
}

// Pass 2 over the out-weights (a part's rows): the rows some link reads (weight > 0)
// numbered in row order from `first`, sources[p] = the row numbered first + p and
// slot[row] = first + p; every other row's slot is `zero`
template <typename IX>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_sent_slots(
    const i64 len, const double* __restrict__ weights, const i64* __restrict__ tile_offsets,
    const i64 first, const i64 zero, IX* __restrict__ sources, IX* __restrict__ slot)
{
    const i64 base = (i64)blockIdx.x * WR_TILE + (i64)threadIdx.x * WR_TILE_ITEMS;
    bool here[WR_TILE_ITEMS];
    i64 c = 0;
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        here[j] = base + j < len && wr_item<2>(base + j, nullptr, nullptr, weights);
        c += here[j];
    }
    i64 total;
    i64 pre = wr_block_exclusive_scan(c, &total) + tile_offsets[blockIdx.x];
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        const i64 k = base + j;
        if (k >= len) break;
        if (here[j]) {
            sources[pre] = (IX)k;
            slot[k] = (IX)(first + pre);
            ++pre;
        } else {
            slot[k] = (IX)zero;
        }
    }
}

// out[i] = ptr[i] - base: row pointers of a slice of a CSR, rebased to 0 (and narrowed)
template <typename IN, typename OUT>
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_rebase(
    const i64 n, const IN* __restrict__ ptr, const i64 base, OUT* __restrict__ out)
{
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x)
        out[i] = (OUT)((i64)ptr[i] - base);
}

// Pass 2 over sorted keys: the first key of each run of equal keys is link number `pre`
// (the runs before it): indices[pre] = its source, its row's count + 1 (one atomic per
// run of a row within a thread), with_starts: starts[pre] = its position (and
// starts[nnz] = m, for the runs' lengths)
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_compact_keys(
    const i64 m, const i64* __restrict__ keys, const i64* __restrict__ tile_offsets,
    const i64 nnz, int* __restrict__ indices, int* __restrict__ row_counts,
    const int with_starts, i64* __restrict__ starts)
{
    const i64 base = (i64)blockIdx.x * WR_TILE + (i64)threadIdx.x * WR_TILE_ITEMS;
    bool first[WR_TILE_ITEMS];
    i64 c = 0;
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        first[j] = base + j < m && wr_item<1>(base + j, nullptr, keys, nullptr);
        c += first[j];
    }
    i64 total;
    i64 pre = wr_block_exclusive_scan(c, &total) + tile_offsets[blockIdx.x];
    i64 row = -1;
    int count = 0;
    for (int j = 0; j < WR_TILE_ITEMS; ++j) {
        const i64 k = base + j;
        if (k >= m) break;
        if (!first[j]) continue;
        const i64 key = keys[k];
        indices[pre] = (int)(key & 0xffffffffLL);
        if (with_starts) starts[pre] = k;
        ++pre;
        const i64 r = key >> 32;
        if (r != row) {
            if (count) atomicAdd(&row_counts[row], count);
            row = r;
            count = 0;
        }
        ++count;
    }
    if (count) atomicAdd(&row_counts[row], count);
    if (with_starts && base <= m - 1 && m - 1 < base + WR_TILE_ITEMS) starts[nnz] = m;
}

// weights[j] = starts[j + 1] - starts[j]: how many times link j was given
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_run_lengths(
    const i64 nnz, const i64* __restrict__ starts, double* __restrict__ weights)
{
    for (i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x; j < nnz;
         j += (i64)gridDim.x * blockDim.x)
        weights[j] = (double)(starts[j + 1] - starts[j]);
}

// out[indices[k]] += (has_w ? weights[k] : 1) (out zeroed by the caller; whole numbers,
// so the sums are exact in any order)
__global__ void __launch_bounds__(WR_ARR_BLOCK) wr_out_weight(
    const i64 nnz, const int* __restrict__ indices, const int has_w,
    const double* __restrict__ weights, double* __restrict__ out)
{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < nnz;
         k += (i64)gridDim.x * blockDim.x)
        atomicAdd(&out[indices[k]], has_w ? weights[k] : 1.0);
}
"""

_INDEX = ("int32", "int64")
_STORAGE = ("float32", "float64")


def _w(weighted: bool) -> str:
    return "true" if weighted else "false"


def fill_name(t: str) -> str:
    return f"wr_fill<{CTYPE[t]}>"


def node_scale_name(weighted: bool) -> str:
    return f"wr_node_scale<{_w(weighted)}>"


def gather_vector_name(ix: str, t: str) -> str:
    return f"wr_gather_vector<{CTYPE[ix]}, {CTYPE[t]}>"


def heavy_count_name(ip: str) -> str:
    return f"wr_heavy_count<{CTYPE[ip]}>"


def heavy_collect_name(ip: str) -> str:
    return f"wr_heavy_collect<{CTYPE[ip]}>"


def searchsorted_name(ip: str) -> str:
    return f"wr_searchsorted<{CTYPE[ip]}>"


def count_sources_name(ix: str) -> str:
    return f"wr_count_sources<{CTYPE[ix]}>"


def order_positions_name(ix: str) -> str:
    return f"wr_order_positions<{CTYPE[ix]}>"


def relabel_name(ix: str) -> str:
    return f"wr_relabel<{CTYPE[ix]}>"


def transition_values_name(ix: str, t: str) -> str:
    return f"wr_transition_values<{CTYPE[ix]}, {CTYPE[t]}>"


def make_keys_name(src: str, row: str, coded: bool) -> str:
    return f"wr_make_keys<{CTYPE[src]}, {CTYPE[row]}, {_w(coded)}>"


def mark_present_name(ids: str) -> str:
    return f"wr_mark_present<{CTYPE[ids]}>"


#: the items a tile scan counts (wr_item's MODE)
TILE_VALUES, TILE_RUN_STARTS, TILE_POSITIVE = 0, 1, 2


def tile_sums_name(mode: int) -> str:
    """``mode``: :data:`TILE_VALUES`, :data:`TILE_RUN_STARTS` or :data:`TILE_POSITIVE`."""
    return f"wr_tile_sums<{int(mode)}>"


def sent_slots_name(ix: str) -> str:
    return f"wr_sent_slots<{CTYPE[ix]}>"


def rebase_name(ip_in: str, ip_out: str) -> str:
    return f"wr_rebase<{CTYPE[ip_in]}, {CTYPE[ip_out]}>"


def exclusive_scan_name(ip: str) -> str:
    return f"wr_exclusive_scan<{CTYPE[ip]}>"


#: the kernels that are no templates: their names are their name expressions
PLAIN = ("wr_sums_blocks", "wr_sums_total", "wr_divide", "wr_normalize", "wr_degree_keys",
         "wr_present_codes", "wr_compact_keys", "wr_run_lengths", "wr_out_weight")


def instantiations() -> list[str]:
    """Every name expression of this family the backends launch (for the prebuilt set and
    the compile checks)."""
    names = list(PLAIN)
    names += [fill_name(t) for t in _STORAGE]
    names += [node_scale_name(w) for w in (False, True)]
    for i in _INDEX:
        names += [heavy_count_name(i), heavy_collect_name(i), searchsorted_name(i),
                  count_sources_name(i), order_positions_name(i), relabel_name(i)]
        names += [gather_vector_name(i, t) for t in _STORAGE]
        names += [transition_values_name(i, t) for t in _STORAGE]
        names += [mark_present_name(i), exclusive_scan_name(i), sent_slots_name(i)]
        names += [rebase_name(i, o) for o in _INDEX]
        names += [make_keys_name(i, r, c) for r in _INDEX for c in (False, True)]
    names += [tile_sums_name(m) for m in (TILE_VALUES, TILE_RUN_STARTS, TILE_POSITIVE)]
    return sorted(set(names))


#: the kernels' parameters by name, read from the source above
FILL_VALUE = KernelArgs(SOURCE, "wr_fill")
NODE_SCALE = KernelArgs(SOURCE, "wr_node_scale")
SUMS_BLOCKS = KernelArgs(SOURCE, "wr_sums_blocks")
SUMS_TOTAL = KernelArgs(SOURCE, "wr_sums_total")
GATHER_VECTOR = KernelArgs(SOURCE, "wr_gather_vector")
DIVIDE = KernelArgs(SOURCE, "wr_divide")
NORMALIZE = KernelArgs(SOURCE, "wr_normalize")
HEAVY_COUNT = KernelArgs(SOURCE, "wr_heavy_count")
HEAVY_COLLECT = KernelArgs(SOURCE, "wr_heavy_collect")
SEARCHSORTED = KernelArgs(SOURCE, "wr_searchsorted")
COUNT_SOURCES = KernelArgs(SOURCE, "wr_count_sources")
DEGREE_KEYS = KernelArgs(SOURCE, "wr_degree_keys")
ORDER_POSITIONS = KernelArgs(SOURCE, "wr_order_positions")
RELABEL = KernelArgs(SOURCE, "wr_relabel")
TRANSITION_VALUES = KernelArgs(SOURCE, "wr_transition_values")
MAKE_KEYS = KernelArgs(SOURCE, "wr_make_keys")
MARK_PRESENT = KernelArgs(SOURCE, "wr_mark_present")
TILE_SUMS = KernelArgs(SOURCE, "wr_tile_sums")
EXCLUSIVE_SCAN = KernelArgs(SOURCE, "wr_exclusive_scan")
SENT_SLOTS = KernelArgs(SOURCE, "wr_sent_slots")
REBASE = KernelArgs(SOURCE, "wr_rebase")
PRESENT_CODES = KernelArgs(SOURCE, "wr_present_codes")
COMPACT_KEYS = KernelArgs(SOURCE, "wr_compact_keys")
RUN_LENGTHS = KernelArgs(SOURCE, "wr_run_lengths")
OUT_WEIGHT = KernelArgs(SOURCE, "wr_out_weight")


def get_kernel(name: str):
    """The compiled kernel ``name`` (one of :func:`instantiations`)."""
    return compiled_kernel(SOURCE, name)


def tile_offsets(length: int, mode: int, *, vals: Any = None, keys: Any = None,
                 weights: Any = None) -> tuple[Any, int]:
    """Pass 1 of a tile scan over ``length`` items (``mode``: :data:`TILE_VALUES` of
    ``vals``, :data:`TILE_RUN_STARTS` of sorted ``keys``, :data:`TILE_POSITIVE` of
    ``weights``) on the current device: each tile's first prefix (a device array, what a
    second pass takes) and the total. The tiles' sums (one per :data:`TILE` items) are
    added up on the host, in order."""
    import cupy as cp

    tiles = max(1, -(-int(length) // TILE))
    sums = cp.empty(tiles, dtype=np.int64)
    get_kernel(tile_sums_name(mode))((tiles,), (BLOCK,), TILE_SUMS.pack(
        len=length, vals=vals if vals is not None else cp.zeros(1, dtype=np.int32),
        keys=keys if keys is not None else cp.zeros(1, dtype=np.int64),
        weights=weights if weights is not None else cp.zeros(1, dtype=np.float64),
        tile_sums=sums))
    host = sums.get()
    offsets = np.zeros(tiles, dtype=np.int64)
    np.cumsum(host[:-1], out=offsets[1:])
    return cp.asarray(offsets), int(host.sum())
