"""CUDA kernel of the batched personalized PageRank step (``webrank.personalized``).

``wr_ppr_step`` does one power step of b PageRank columns at once over a row-major n×b
block, fused like the single-vector step of :mod:`webrank.kernels.cuda`:

* one warp per *work item*: a whole in-link row, or a segment of at most ``SEGMENT``
  in-links of a long row (Kumar et al.'s imbalance: a hub must not hold one warp for tens
  of thousands of in-links). Lane ``l`` owns columns ``l, l + 32, ...`` (``CPL`` per
  lane), so the block row ``g[j, :]`` of each in-link j is read with one coalesced load
  per 32 columns — the SpMM, with the index read once for all columns;
* the segments of a long row add their partial sums into a per-row scratch row with
  atomics; the warp that finishes a row last (a counter per row) completes it;
* completing a row adds the dangling and teleport terms (the personalization as sparse
  row entries), writes ``x'`` and ``g' = x' / out``, and accumulates each column's
  residual, dangling mass and mass; a block reduces them in shared memory and adds them
  to ``acc[3][b]`` with one atomic per column.
"""

from __future__ import annotations

import itertools

from webrank.kernels import cuda
from webrank.kernels.cuda_common import COMMON, CTYPE, KernelArgs, compiled_kernel

SEGMENT = 512  # in-links per work item of a long row
CPLS = (1, 2, 4, 8)  # columns per lane: blocks of up to 32, 64, 128, 256 columns

SOURCE = COMMON + r"""

template <typename IP, typename IX, typename T, bool WEIGHTED, int CPL>
__global__ void wr_ppr_step(
    const i64 nitems, const i64* __restrict__ item_row, const IP* __restrict__ item_begin,
    const IP* __restrict__ item_end, const int* __restrict__ item_slot,
    const int* __restrict__ slot_nseg, double* __restrict__ scratch,
    int* __restrict__ slot_count,
    const int b, const IX* __restrict__ indices, const T* __restrict__ vals,
    const T* __restrict__ g, const double* __restrict__ x,
    const IP* __restrict__ vptr, const int* __restrict__ vcol,
    const double* __restrict__ vval, const double* __restrict__ coef_v,
    const double* __restrict__ coef_d, const int shared_d, const double* __restrict__ d,
    const double* __restrict__ inv_out, const double alpha, const int delta,
    const int crit, double* __restrict__ x_out, T* __restrict__ g_out,
    double* __restrict__ acc)
{
    extern __shared__ double s_acc[];  // [3][b]: residual, dangling mass, mass
    for (int i = threadIdx.x; i < 3 * b; i += blockDim.x) s_acc[i] = 0.0;
    __syncthreads();
    const int lane = threadIdx.x % 32;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) / 32;
    double res[CPL], dm[CPL], tm[CPL];
    #pragma unroll
    for (int c = 0; c < CPL; ++c) { res[c] = 0.0; dm[c] = 0.0; tm[c] = 0.0; }

    for (i64 it = warp; it < nitems; it += nwarps) {
        const i64 row = item_row[it];
        double a[CPL];
        #pragma unroll
        for (int c = 0; c < CPL; ++c) a[c] = 0.0;
        for (IP e = item_begin[it]; e < item_end[it]; ++e) {
            const i64 j = (i64)indices[e];
            const double w = WEIGHTED ? (double)vals[e] : 1.0;
            const T* gj = g + j * b;
            #pragma unroll
            for (int c = 0; c < CPL; ++c) {
                const int q = lane + 32 * c;
                if (q < b) a[c] += w * (double)gj[q];
            }
        }
        const int slot = item_slot[it];
        if (slot >= 0) {
            // a segment of a long row: add to the row's scratch; the last one finishes it
            double* sr = scratch + (i64)slot * b;
            #pragma unroll
            for (int c = 0; c < CPL; ++c) {
                const int q = lane + 32 * c;
                if (q < b) atomicAdd(&sr[q], a[c]);
            }
            __threadfence();
            int last = 0;
            if (lane == 0) last = atomicAdd(&slot_count[slot], 1) == slot_nseg[slot] - 1;
            last = __shfl_sync(0xffffffffu, last, 0);
            if (!last) continue;
            __threadfence();
            #pragma unroll
            for (int c = 0; c < CPL; ++c) {
                const int q = lane + 32 * c;
                // read and clear for the next step (no other warp touches it now)
                if (q < b) a[c] = __longlong_as_double((long long)atomicExch(
                    reinterpret_cast<unsigned long long*>(&sr[q]), 0ull));
            }
            if (lane == 0) slot_count[slot] = 0;
        }
        // complete the row: t = alpha P^T g + coef_d d + coef_v v, column by column
        #pragma unroll
        for (int c = 0; c < CPL; ++c) {
            const int q = lane + 32 * c;
            a[c] *= alpha;
            if (shared_d && q < b) a[c] += coef_d[q] * d[row];
        }
        for (IP e = vptr[row]; e < vptr[row + 1]; ++e) {
            const int col = vcol[e];
            if (col % 32 != lane) continue;
            const double vv = vval[e];
            const double add = (shared_d ? 0.0 : coef_d[col] * vv) + coef_v[col] * vv;
            #pragma unroll
            for (int c = 0; c < CPL; ++c) if (col / 32 == c) a[c] += add;
        }
        const double s = inv_out[row];
        #pragma unroll
        for (int c = 0; c < CPL; ++c) {
            const int q = lane + 32 * c;
            if (q >= b) continue;
            const i64 k = row * b + q;
            const double t = a[c];
            double diff;
            if (delta) { x_out[k] = x[k] + t; diff = fabs(t); }
            else { x_out[k] = t; diff = fabs(t - x[k]); }
            g_out[k] = (T)(t * s);
            tm[c] += t;
            if (s == 0.0) dm[c] += t;
            if (crit == 0) res[c] += diff;
            else if (crit == 1) res[c] += diff * diff;
            else res[c] = fmax(res[c], diff);
        }
    }
    #pragma unroll
    for (int c = 0; c < CPL; ++c) {
        const int q = lane + 32 * c;
        if (q >= b) continue;
        if (crit == 2) wr_atomic_max_nonneg(&s_acc[q], res[c]);
        else atomicAdd(&s_acc[q], res[c]);
        atomicAdd(&s_acc[b + q], dm[c]);
        atomicAdd(&s_acc[2 * b + q], tm[c]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 3 * b; i += blockDim.x) {
        if (i < b && crit == 2) wr_atomic_max_nonneg(&acc[i], s_acc[i]);
        else atomicAdd(&acc[i], s_acc[i]);
    }
}
"""



#: the kernel's parameters by name, read from the source above
PPR_STEP = KernelArgs(SOURCE, "wr_ppr_step")


def kernel_name(ip: str, ix: str, t: str, weighted: bool, cpl: int) -> str:
    """The template instantiation for these index/value types and columns per lane."""
    w = "true" if weighted else "false"
    return f"wr_ppr_step<{CTYPE[ip]}, {CTYPE[ix]}, {CTYPE[t]}, {w}, {cpl}>"


def columns_per_lane(b: int) -> int:
    """The smallest CPL in :data:`CPLS` with ``32 * CPL >= b`` (b <= 256)."""
    for cpl in CPLS:
        if 32 * cpl >= b:
            return cpl
    raise ValueError(f"a block has at most {32 * CPLS[-1]} columns, not {b}")


def instantiations() -> list[tuple[str, str, bool]]:
    """Every ``(source, name expression, cooperative)`` the batched step may compile:
    each pair of index types, value type, weighting and columns per lane (see
    :mod:`webrank.kernels.cuda_prebuilt`)."""
    return [(SOURCE, kernel_name(ip, ix, t, weighted, cpl), False)
            for ip, ix, t, weighted, cpl in itertools.product(
                cuda.INDEX_TYPES, cuda.INDEX_TYPES, cuda.VALUE_TYPES, (False, True), CPLS)]


def get_kernel(ip: str, ix: str, t: str, weighted: bool, cpl: int):
    """The compiled block step (built with the package, or compiled on first use and
    kept in CuPy's on-disk cache)."""
    return compiled_kernel(SOURCE, kernel_name(ip, ix, t, weighted, cpl))
