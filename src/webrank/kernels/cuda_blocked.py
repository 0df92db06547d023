"""CUDA kernels of the propagation-blocking engine (layout: :mod:`webrank.blocking`).

Per step, two phases (each a kernel, or both inside one persistent kernel):

* ``wr_blocked_scatter``: a block takes a scatter tile (a piece of one source chunk's
  entries), copies the chunk's slice of ``xs`` into shared memory and streams
  ``msg[k] = xs[chunk base + src_local[k]] (* vals[k])`` — 8-byte index loads and 16-byte
  message stores (four entries per thread per trip);
* ``wr_blocked_gather``: a block takes a destination partition (largest first), zeroes its
  sums in shared memory (64-bit fixed point, two native 32-bit atomics per add), adds
  ``msg[k]`` at ``dst_local[k]`` for the partition's blocks (their bounds read in one
  coalesced pass; blocks of at least ``WR_LARGE`` entries summed by the whole thread
  block, smaller ones by one warp each, up to four groups of 32 entries in flight per
  lane), then finishes each row with ``wr_finish_row``.

A cooperative version that ran both phases of every step in one launch (work counters,
grid-wide barriers) was measured and dropped: on graphs that fit in L2, where one launch
per solve pays, the pull step is faster than the two phases; on larger ones it was 3-12%
slower than the two kernels (the ``persistent`` engine is the pull step's, in
:mod:`webrank.kernels.cuda`).

``wr_blocked_count`` and ``wr_blocked_fill`` build the layout on the device from the
in-link CSR (one thread block per partition: a shared-memory histogram of the chunks its
in-links come from, then a fill through shared-memory cursors; the entries of a block
come out in no particular order, which only changes the order of float additions).

Types: ``T`` the gathered vector and the messages (float or double), ``IP``/``IX`` the
CSR's pointer and index types; the shared-memory sums are 64-bit fixed point (see
``wr_gather_part``). Messages in bfloat16 were measured (2-14% faster per step, L1 errors
of 2e-4 to 3e-3 at tol 1e-10: far outside the 1e-5 bar) and dropped.
"""

from __future__ import annotations

from webrank.kernels.cuda_common import COMMON, CTYPE, KernelArgs, compiled_kernel

BLOCK = 512  # threads per block of every kernel here (WR_BLK)
COUNT_WINDOW = 16384  # chunk counters per pass of the count kernel (64 KiB of shared memory)
FILL_WINDOW = 8192  # chunk cursors per pass of the fill kernel (64 KiB)

SOURCE = COMMON + r"""

#define WR_BLK 512
#define WR_LARGE 2048

// four messages k..k+3 (k a multiple of 4) in 16-byte stores
__device__ __forceinline__ void wr_store4(float* m, const i64 k, const float a, const float b,
                                          const float c, const float d) {
    *reinterpret_cast<float4*>(m + k) = make_float4(a, b, c, d);
}
__device__ __forceinline__ void wr_store4(double* m, const i64 k, const double a,
                                          const double b, const double c, const double d) {
    reinterpret_cast<double2*>(m + k)[0] = make_double2(a, b);
    reinterpret_cast<double2*>(m + k)[1] = make_double2(c, d);
}

// ---- scatter: one tile of one source chunk ------------------------------------------
template <typename T, bool WEIGHTED>
__device__ __forceinline__ void wr_scatter_tile(
    const i64 tile, const i64* __restrict__ tile_ptr, const i64* __restrict__ tile_chunk,
    const int chunk_bits, const i64 n_src, const unsigned short* __restrict__ src_local,
    const T* __restrict__ vals, const T* __restrict__ xs, T* __restrict__ msg,
    T* __restrict__ window)
{
    const i64 base = tile_chunk[tile] << chunk_bits;
    const i64 width = min((i64)1 << chunk_bits, n_src - base);
    for (i64 i = threadIdx.x; i < width; i += WR_BLK) window[i] = xs[base + i];
    __syncthreads();
    const i64 b = tile_ptr[tile], e = tile_ptr[tile + 1];
    const i64 b4 = min((b + 3) & ~(i64)3, e);
    const i64 e4 = b4 + ((e - b4) & ~(i64)3);
    // unaligned head and tail one entry at a time
    for (i64 k = b + threadIdx.x; k < b4; k += WR_BLK) {
        T val = window[src_local[k]];
        if (WEIGHTED) val *= vals[k];
        msg[k] = val;
    }
    for (i64 k = e4 + threadIdx.x; k < e; k += WR_BLK) {
        T val = window[src_local[k]];
        if (WEIGHTED) val *= vals[k];
        msg[k] = val;
    }
    const ushort4* __restrict__ src4 = reinterpret_cast<const ushort4*>(src_local);
    #pragma unroll 2
    for (i64 q = (b4 >> 2) + threadIdx.x; q < (e4 >> 2); q += WR_BLK) {
        const ushort4 s = src4[q];
        const i64 k = q << 2;
        T v0 = window[s.x], v1 = window[s.y], v2 = window[s.z], v3 = window[s.w];
        if (WEIGHTED) { v0 *= vals[k]; v1 *= vals[k + 1]; v2 *= vals[k + 2]; v3 *= vals[k + 3]; }
        wr_store4(msg, k, v0, v1, v2, v3);
    }
    __syncthreads();  // the window is refilled by this block's next tile
}

// ---- gather: the sums of one destination partition ----------------------------------
// Sums are 64-bit fixed point in shared memory. On sm_90 a float atomicAdd there, and a
// 64-bit integer one too, is a compare-and-swap loop (ATOMS.CAST.SPIN), slow and worse
// under contention on a hub row; 32-bit integer adds are single instructions
// (benchmarks/gpu/gpu_smem_atomics.py: 302 G adds/s against 202-221, 126 against 49-64 on one
// row). So a 64-bit sum is two 32-bit words: the low word's add returns the old value,
// whose carry goes into the high word's add. Every row sum is at most the L1 norm B of
// the gathered vector (a source adds at most |x_j| to any row), so messages are scaled by
// 2**62 / B: no overflow, and a rounding of B * 2**-63 per message (relative 1e-11 for a
// row of average weight on a graph of 67M nodes, far below float32's 6e-8).
#define WR_NONE 0xffffffffu

__device__ __forceinline__ long long wr_quantize(const double v, const double scale) {
    return __double2ll_rn(v * scale);
}

__device__ __forceinline__ void wr_add64(u64* sum, const long long q) {
    unsigned* w = reinterpret_cast<unsigned*>(sum);   // little endian: w[0] is the low word
    const unsigned lo = (unsigned)(u64)q, hi = (unsigned)((u64)q >> 32);
    const unsigned old = atomicAdd(&w[0], lo);
    atomicAdd(&w[1], hi + (old + lo < old ? 1u : 0u));
}

// One entry per lane (d == WR_NONE: no entry). A warp whose entries all go to one row (a
// hub's in-links) adds their sum with one atomic instead of 32 serialised ones.
__device__ __forceinline__ void wr_warp_add(const unsigned d, const long long q, u64* sums) {
    const unsigned first = __shfl_sync(0xffffffffu, d, 0);
    if (__all_sync(0xffffffffu, d == first || d == WR_NONE)) {
        long long t = q;
        #pragma unroll
        for (int off = 16; off > 0; off >>= 1) t += __shfl_xor_sync(0xffffffffu, t, off);
        if ((threadIdx.x & 31) == 0 && first != WR_NONE) wr_add64(&sums[first], t);
    } else if (d != WR_NONE) {
        wr_add64(&sums[d], q);
    }
}

// Entries begin + (warp offset) + lane, stepping by `stride` (32 for a warp's own block,
// WR_BLK for a block the whole thread block shares): up to four groups of 32 in flight per
// lane, also on blocks shorter than four groups. The trip count and the groups taken are
// the same for every lane of a warp (the shuffles need the whole warp).
template <typename T>
__device__ __forceinline__ void wr_sum_span(
    const i64 begin, const i64 end, const i64 stride,
    const unsigned short* __restrict__ dst_local, const T* __restrict__ msg,
    const double scale, u64* sums)
{
    const int lane = threadIdx.x & 31;
    for (i64 base = begin; base < end; base += 4 * stride) {
        unsigned d[4];
        long long q[4];
        #pragma unroll
        for (int u = 0; u < 4; ++u) {
            const i64 k = base + u * stride + lane;
            const bool ok = k < end;
            d[u] = ok ? (unsigned)dst_local[k] : WR_NONE;
            q[u] = ok ? wr_quantize((double)msg[k], scale) : 0;
        }
        #pragma unroll
        for (int u = 0; u < 4; ++u)
            if (base + u * stride < end) wr_warp_add(d[u], q[u], sums);
    }
}

// part_blocks is the block table partition-major: block (c, p) holds entries
// part_blocks[p * C + c] : part_blocks[(p + 1) * C + c] (row P closes the last partition).
// The bounds of WR_BLK blocks are read at a time (one per thread, coalesced); blocks of
// at least WR_LARGE entries are summed by the whole thread block, the others by one warp
// each. (Flattening every window of blocks into groups of 32 entries, found by a binary
// search of a prefix sum, was measured 1.2-2x slower on R-MAT graphs.)
template <typename T>
__device__ __forceinline__ void wr_gather_part(
    const i64 p, const i64 C, const i64* __restrict__ part_blocks, const int rows,
    const unsigned short* __restrict__ dst_local, const T* __restrict__ msg,
    const double scale, u64* sums)
{
    __shared__ i64 s_begin[WR_BLK], s_end[WR_BLK];
    __shared__ int s_nlarge, s_nsmall;
    for (int i = threadIdx.x; i < rows; i += WR_BLK) sums[i] = 0;
    const int warp = threadIdx.x >> 5;
    for (i64 c0 = 0; c0 < C; c0 += WR_BLK) {
        if (threadIdx.x == 0) { s_nlarge = 0; s_nsmall = 0; }
        __syncthreads();
        const i64 c = c0 + threadIdx.x;
        if (c < C) {
            const i64 b = part_blocks[p * C + c], e = part_blocks[(p + 1) * C + c];
            if (e - b >= WR_LARGE) {            // large blocks fill the lists from the back
                const int j = WR_BLK - 1 - atomicAdd(&s_nlarge, 1);
                s_begin[j] = b; s_end[j] = e;
            } else if (e > b) {
                const int j = atomicAdd(&s_nsmall, 1);
                s_begin[j] = b; s_end[j] = e;
            }
        }
        __syncthreads();
        const int nlarge = s_nlarge, nsmall = s_nsmall;
        for (int j = WR_BLK - 1; j >= WR_BLK - nlarge; --j)    // the whole block on each
            wr_sum_span<T>(s_begin[j] + 32 * warp, s_end[j], WR_BLK, dst_local, msg, scale,
                           sums);
        for (int j = warp; j < nsmall; j += WR_BLK / 32)       // one warp on each
            wr_sum_span<T>(s_begin[j], s_end[j], 32, dst_local, msg, scale, sums);
        __syncthreads();
    }
}

// the fixed-point scale of a step that gathers a vector of L1 norm `l1`
__device__ __forceinline__ double wr_sum_scale(const double l1) {
    return l1 > 0.0 ? 0x1p62 / l1 : 1.0;
}

template <typename T>
__device__ __forceinline__ void wr_finish_part(
    const i64 r0, const int rows, const u64* sums, const double scale,
    const double* __restrict__ x,
    const double* __restrict__ v, const double* __restrict__ d, const int uniform_v,
    const int uniform_d, const double* __restrict__ inv_out, const double alpha,
    const double inv_n, const i64 x_offset, const double dm, const double mass,
    const int mode, const int crit, double* __restrict__ x_out, T* __restrict__ xs_out,
    double& res, double& dmass, double& tmass, double& amass)
{
    const double unscale = 1.0 / scale;
    for (int i = threadIdx.x; i < rows; i += WR_BLK) {
        const i64 row = r0 + i, li = row - x_offset;
        const double vi = uniform_v ? inv_n : v[li];
        const double di = uniform_d ? inv_n : d[li];
        const double sum = (double)(long long)sums[i] * unscale;
        wr_finish_row<T>(li, row, sum, x[li], alpha, dm, mass, vi, di, mode,
                         x_out, xs_out, inv_out, crit, res, dmass, tmass, amass);
    }
    __syncthreads();  // the sums are reused by this block's next partition
}

// ---- the two phases as kernels (queued, or replayed in a CUDA graph) ----------------
template <typename T, bool WEIGHTED>
__global__ void __launch_bounds__(WR_BLK, 2) wr_blocked_scatter(
    const i64 ntiles, const i64* __restrict__ tile_ptr, const i64* __restrict__ tile_chunk,
    const int chunk_bits, const i64 n_src, const unsigned short* __restrict__ src_local,
    const T* __restrict__ vals, const T* __restrict__ xs, T* __restrict__ msg,
    const double* __restrict__ acc_prev, const double tol_cmp,
    const unsigned long long* __restrict__ chunk, const i64 step0, const i64 chunk_len,
    const i64 max_steps)
{
    if (wr_skip_step(acc_prev, tol_cmp, chunk, step0, chunk_len, max_steps)) return;
    extern __shared__ __align__(16) unsigned char wr_dyn[];
    T* window = reinterpret_cast<T*>(wr_dyn);
    for (i64 t = blockIdx.x; t < ntiles; t += gridDim.x)
        wr_scatter_tile<T, WEIGHTED>(t, tile_ptr, tile_chunk, chunk_bits, n_src,
                                                 src_local, vals, xs, msg, window);
}

template <typename T>
__global__ void __launch_bounds__(WR_BLK, 2) wr_blocked_gather(
    const i64 P, const i64 C, const int* __restrict__ part_order,
    const i64* __restrict__ part_ptr, const i64* __restrict__ part_blocks,
    const unsigned short* __restrict__ dst_local, const T* __restrict__ msg,
    const double* __restrict__ x, const double* __restrict__ v, const double* __restrict__ d,
    const int uniform_v, const int uniform_d, const double* __restrict__ inv_out,
    const double alpha, const double inv_n, const i64 x_offset,
    const double* __restrict__ acc_prev, double* __restrict__ acc_out, const int crit,
    const double tol_cmp, const int mode, double* __restrict__ x_out, T* __restrict__ xs_out,
    const unsigned long long* __restrict__ chunk, const i64 step0, const i64 chunk_len,
    const i64 max_steps)
{
    if (wr_skip_step(acc_prev, tol_cmp, chunk, step0, chunk_len, max_steps)) return;
    extern __shared__ __align__(16) unsigned char wr_dyn[];
    u64* sums = reinterpret_cast<u64*>(wr_dyn);
    const double dm = acc_prev[1], mass = acc_prev[2];
    const double scale = wr_sum_scale(acc_prev[3]);
    double res = 0.0, dmass = 0.0, tmass = 0.0, amass = 0.0;
    for (i64 q = blockIdx.x; q < P; q += gridDim.x) {
        const i64 p = part_order[q];
        const i64 r0 = part_ptr[p];
        const int rows = (int)(part_ptr[p + 1] - r0);
        wr_gather_part<T>(p, C, part_blocks, rows, dst_local, msg, scale, sums);
        wr_finish_part<T>(r0, rows, sums, scale, x, v, d, uniform_v, uniform_d,
                                 inv_out, alpha, inv_n, x_offset, dm, mass, mode, crit,
                                 x_out, xs_out, res, dmass, tmass, amass);
    }
    wr_block_accumulate(res, dmass, tmass, amass, crit, acc_out);
}

// ---- building the layout on the device ----------------------------------------------
// counts[c * P + p] = in-links of partition p from chunk c (window of `cw` chunks a pass)
template <typename IP, typename IX>
__global__ void __launch_bounds__(WR_BLK, 1) wr_blocked_count(
    const i64 P, const i64* __restrict__ part_ptr, const IP* __restrict__ indptr,
    const IX* __restrict__ indices, const int chunk_bits, const i64 C, const int cw,
    i64* __restrict__ counts)
{
    extern __shared__ __align__(16) unsigned char wr_dyn[];
    int* hist = reinterpret_cast<int*>(wr_dyn);
    for (i64 p = blockIdx.x; p < P; p += gridDim.x) {
        const i64 e0 = indptr[part_ptr[p]], e1 = indptr[part_ptr[p + 1]];
        for (i64 c0 = 0; c0 < C; c0 += cw) {
            const int w = (int)min((i64)cw, C - c0);
            for (int i = threadIdx.x; i < w; i += WR_BLK) hist[i] = 0;
            __syncthreads();
            for (i64 k = e0 + threadIdx.x; k < e1; k += WR_BLK) {
                const i64 c = ((i64)indices[k] >> chunk_bits) - c0;
                if (c >= 0 && c < w) atomicAdd(&hist[c], 1);
            }
            __syncthreads();
            for (int i = threadIdx.x; i < w; i += WR_BLK) counts[(c0 + i) * P + p] = hist[i];
            __syncthreads();
        }
    }
}

// Entries of partition p go to their blocks through shared-memory cursors; the row of an
// in-link is found by a binary search of the partition's row offsets (shared memory).
template <typename IP, typename IX, typename T, bool WEIGHTED>
__global__ void __launch_bounds__(WR_BLK, 1) wr_blocked_fill(
    const i64 P, const i64* __restrict__ part_ptr, const IP* __restrict__ indptr,
    const IX* __restrict__ indices, const T* __restrict__ vals_in, const int chunk_bits,
    const i64 C, const int cw, const i64* __restrict__ blk_ptr,
    unsigned short* __restrict__ src_local, unsigned short* __restrict__ dst_local,
    T* __restrict__ vals_out)
{
    extern __shared__ __align__(16) unsigned char wr_dyn[];
    unsigned long long* cursor = reinterpret_cast<unsigned long long*>(wr_dyn);
    int* rowoff = reinterpret_cast<int*>(cursor + cw);
    for (i64 p = blockIdx.x; p < P; p += gridDim.x) {
        const i64 r0 = part_ptr[p];
        const int rows = (int)(part_ptr[p + 1] - r0);
        const i64 e0 = indptr[r0];
        for (int i = threadIdx.x; i <= rows; i += WR_BLK) rowoff[i] = (int)(indptr[r0 + i] - e0);
        __syncthreads();
        const int mp = rowoff[rows];
        for (i64 c0 = 0; c0 < C; c0 += cw) {
            const int w = (int)min((i64)cw, C - c0);
            for (int i = threadIdx.x; i < w; i += WR_BLK)
                cursor[i] = (unsigned long long)blk_ptr[(c0 + i) * P + p];
            __syncthreads();
            for (int f = threadIdx.x; f < mp; f += WR_BLK) {
                const i64 k = e0 + f;
                const i64 u = (i64)indices[k];
                const i64 c = (u >> chunk_bits) - c0;
                if (c < 0 || c >= w) continue;
                int lo = 0, hi = rows;          // rowoff[lo] <= f < rowoff[hi]
                while (hi - lo > 1) {
                    const int mid = (lo + hi) >> 1;
                    if (rowoff[mid] <= f) lo = mid; else hi = mid;
                }
                const unsigned long long pos = atomicAdd(&cursor[c], 1ull);
                src_local[pos] = (unsigned short)(u - ((c + c0) << chunk_bits));
                dst_local[pos] = (unsigned short)lo;
                if (WEIGHTED) vals_out[pos] = vals_in[k];
            }
            __syncthreads();
        }
    }
}
"""

def _w(weighted: bool) -> str:
    return "true" if weighted else "false"


def scatter_name(t: str, weighted: bool) -> str:
    return f"wr_blocked_scatter<{CTYPE[t]}, {_w(weighted)}>"


def gather_name(t: str) -> str:
    return f"wr_blocked_gather<{CTYPE[t]}>"


def count_name(ip: str, ix: str) -> str:
    return f"wr_blocked_count<{CTYPE[ip]}, {CTYPE[ix]}>"


def fill_name(ip: str, ix: str, t: str, weighted: bool) -> str:
    return f"wr_blocked_fill<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {_w(weighted)}>"


def all_names() -> list[str]:
    """Every instantiation the engine uses: the step's two phases for each value type
    and weighting, the layout build's two kernels for each pair of index types."""
    names = []
    for t in ("float32", "float64"):
        names.append(gather_name(t))
        for w in (False, True):
            names.append(scatter_name(t, w))
        for ip in ("int32", "int64"):
            for ix in ("int32", "int64"):
                for w in (False, True):
                    names.append(fill_name(ip, ix, t, w))
    for ip in ("int32", "int64"):
        for ix in ("int32", "int64"):
            names.append(count_name(ip, ix))
    return sorted(set(names))


def instantiations() -> list[tuple[str, str, bool]]:
    """Every ``(source, name expression, cooperative)`` the blocked engine may compile
    (see :mod:`webrank.kernels.cuda_prebuilt`)."""
    return [(SOURCE, name, False) for name in all_names()]


#: the kernels' parameters by name, read from the source above
SCATTER = KernelArgs(SOURCE, "wr_blocked_scatter")
GATHER = KernelArgs(SOURCE, "wr_blocked_gather")
COUNT = KernelArgs(SOURCE, "wr_blocked_count")
FILL = KernelArgs(SOURCE, "wr_blocked_fill")


def get_kernel(name: str):
    """The compiled kernel ``name`` (an instantiation from the ``*_name`` helpers)."""
    return compiled_kernel(SOURCE, name)
