"""A persistent solve whose row pass is split by links, not rows: the trial.

The persistent engine deals rows to lanes; on a graph held in L2 a warp's time is its
longest row's chain of dependent loads, and the split rows' segments need a phase of
their own. Here every warp takes whole 32-link chunks of the in-link array instead
(Merrill & Garland 2016's balance, in its simplest form): coalesced index loads, a
segmented sum across the warp's lanes, one store per row inside a chunk and one atomic
per row piece at a chunk's edge; then a pass over rows finishes each row
(``wr_finish_row``, the package's). Two grid barriers a step, as the persistent engine.

Variants: the row of a link read from a per-link array (``rows``: 4 more bytes a link)
or found among 32 consecutive row ends (``search``: one int per 32 links); chunks in
flight per lane (``unroll``); blocks per multiprocessor. Also: the barriers alone, and
the package's persistent engine on the same graph, same steps. Plain steps from the
uniform vector, checked against a float64 SciPy run of the same steps. Measured on an
H200 and dropped: 35-65 µs a step on cnr-2000 against the engine's 22 µs at the time
(``benchmarks/results/gpu/h200/persistent/staged/link_split_try.txt``); the engine
stages whole rows' in-links instead (``wr_pull_rows_staged``).

    python benchmarks/gpu/link_split_try.py [--graphs cnr-2000 web-NotreDame rmat-17]
        [--steps 116] [--repeats 7] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

SOURCE_TAIL = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void barriers_only(const int steps, const int per_step) {
    cg::grid_group grid = cg::this_grid();
    for (int s = 0; s < steps; ++s)
        for (int k = 0; k < per_step; ++k) grid.sync();
}

// the row of link k (lane's), ROWS: read; else searched among 32 row ends from row0
template <bool ROWS>
__device__ __forceinline__ int row_of(const long long k, const bool ok, const int* rows,
                                      const int* __restrict__ indptr, const int n,
                                      const int row0, const int lane)
{
    if (ROWS) return ok ? __ldg(rows + k) : -1;
    int found = -1;
    int rb = row0;
    while (true) {
        const int idx = rb + lane + 1;
        const int e = idx <= n ? __ldg(indptr + idx) : 0x7fffffff;
        int lo = 0;
        #pragma unroll
        for (int st = 16; st >= 1; st >>= 1) {
            const int ec = __shfl_sync(0xffffffffu, e, lo + st - 1);
            if (ec <= k) lo += st;
        }
        const int e31 = __shfl_sync(0xffffffffu, e, 31);
        if (found < 0 && ok && k < e31) found = rb + lo;
        if (__all_sync(0xffffffffu, found >= 0 || !ok)) break;
        rb += 32;
    }
    return found;
}

template <int UNROLL, bool ROWS>
__global__ void __launch_bounds__(256) link_solve(
    const int n, const long long nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const int* __restrict__ rows,
    const int* __restrict__ chunk_row0, double* x_a, double* x_b, float* xs_a, float* xs_b,
    double* sum, const double* __restrict__ inv_out, const double alpha, double* hist,
    const int steps)
{
    cg::grid_group grid = cg::this_grid();
    const int lane = threadIdx.x % 32;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) / 32;
    const long long nchunks = (nnz + 31) / 32;
    const double inv_n = 1.0 / (double)n;
    for (int s = 1; s <= steps; ++s) {
        const int in = (s - 1) & 1;
        const float* xs = in ? xs_b : xs_a;
        for (long long c0 = warp * UNROLL; c0 < nchunks; c0 += nwarps * UNROLL) {
            double g[UNROLL];
            int r[UNROLL];
            #pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const long long c = c0 + u;
                const long long k = c * 32 + lane;
                const bool ok = c < nchunks && k < nnz;
                const int j = ok ? __ldg(indices + k) : 0;
                r[u] = row_of<ROWS>(k, ok, rows, indptr, n, c < nchunks ? chunk_row0[c] : 0,
                                    lane);
                g[u] = ok ? (double)__ldcg(xs + j) : 0.0;
            }
            #pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int prev = __shfl_up_sync(0xffffffffu, r[u], 1);
                const bool head = lane == 0 || prev != r[u];
                const unsigned heads = __ballot_sync(0xffffffffu, head);
                const unsigned above = heads & ~((2u << lane) - 1u);   // heads after lane
                const int tail = above ? __ffs(above) - 2 : 31;        // segment's last lane
                double v = g[u];
                #pragma unroll
                for (int off = 1; off < 32; off <<= 1) {
                    const double o = __shfl_down_sync(0xffffffffu, v, off);
                    if (lane + off <= tail) v += o;
                }
                if (head && r[u] >= 0) {
                    if (lane == 0 || tail == 31) atomicAdd(sum + r[u], v);
                    else sum[r[u]] = v;
                }
            }
        }
        grid.sync();
        const double* prev = hist + WR_ACC * (s - 1);
        const double dm = __ldcg(prev + 1), mass = __ldcg(prev + 2);
        const double* x = in ? x_b : x_a;
        double* x_out = in ? x_a : x_b;
        float* xs_out = in ? xs_a : xs_b;
        double res = 0.0, dmass = 0.0, tmass = 0.0, amass = 0.0;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (long long)gridDim.x * blockDim.x) {
            const double acc = __ldcg(sum + i);
            sum[i] = 0.0;
            wr_finish_row<float>(i, i, acc, __ldcg(x + i), alpha, dm, mass, inv_n, inv_n,
                                 WR_PLAIN, x_out, xs_out, inv_out, 0, res, dmass, tmass,
                                 amass);
        }
        wr_block_accumulate(res, dmass, tmass, amass, 0, hist + WR_ACC * s);
        grid.sync();
    }
}
"""

NAMES = [f"link_solve<{u}, {'true' if rows else 'false'}>"
         for u in (1, 2, 4, 8) for rows in (True, False)]


def source() -> str:
    from webrank.kernels.cuda_common import COMMON

    return COMMON + SOURCE_TAIL


def reference(indptr, indices, inv_out, alpha, steps):
    """``steps`` plain power steps from the uniform vector in float64 (SciPy), and
    each step's L1 residual."""
    import scipy.sparse as sp

    n = indptr.size - 1
    a = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    dangling = inv_out == 0
    x = np.full(n, 1.0 / n)
    res = []
    for _ in range(steps):
        y = alpha * (a @ (x * inv_out)) + (alpha * x[dangling].sum() + (1 - alpha)) / n
        res.append(np.abs(y - x).sum())
        x = y
    return x, np.asarray(res)


def median_ms(kernel, grid: int, kernel_args: tuple, repeats: int, setup=None) -> float:
    """Median milliseconds of ``repeats`` launches (after one more), each after
    ``setup()``, timed by CUDA events (the set-up's kernels included)."""
    import cupy as cp

    times = []
    for _ in range(repeats + 1):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        if setup is not None:
            setup()
        if kernel is not None:
            kernel((grid,), (256,), kernel_args)
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(times[1:])


def graph_rows(mod, g, name: str, steps: int, repeats: int, blocks: list[int]) -> list:
    """The package's persistent engine and every link-split variant on graph ``g``."""
    import cupy as cp

    import webrank
    from webrank.kernels.cuda_common import ACC_WIDTH

    alpha = 0.85
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    found = []
    n, nnz = g.n, g.num_edges
    indptr = cp.asarray(g.indptr, dtype=np.int32)
    indices = cp.asarray(g.indices, dtype=np.int32)
    out_deg = cp.bincount(indices, minlength=n)
    inv_out = cp.where(out_deg > 0, 1.0 / cp.maximum(out_deg, 1), 0.0)
    rows = cp.repeat(cp.arange(n, dtype=np.int32), cp.diff(indptr).astype(np.int64))
    chunk_row0 = (cp.searchsorted(indptr, cp.arange(0, nnz, 32), side="right") - 1
                  ).astype(np.int32)
    x_ref, res_ref = reference(indptr.get(), indices.get(), inv_out.get(), alpha, steps)
    deg = np.diff(indptr.get())
    print(f"{name}: n {n} links {nnz} max in-degree {deg.max()} "
          f"rows over 32 links {(deg > 32).sum()}", flush=True)

    # the package's engine, the same number of steps
    for dtype in ("float32", "float64"):
        elapsed = []
        for _ in range(repeats + 1):
            r = webrank.pagerank(g, device="gpu", engine="persistent", tol=1e-300,
                                 max_iter=steps, dtype=dtype, raise_on_nonconvergence=False)
            elapsed.append(r.elapsed)
        ms = 1e3 * statistics.median(elapsed[1:])
        err = float(np.abs(r.scores - x_ref / x_ref.sum()).sum())
        info = {k: r.info.get(k) for k in ("heavy_threshold", "persistent_grid")}
        print(f"{name}: package persistent {dtype}: {1e3 * ms / steps:.2f} us a step "
              f"(solve {ms:.3f} ms; L1 from SciPy {err:.1e}; {info})", flush=True)
        found.append({"graph": name, "variant": f"package-{dtype}",
                      "us_per_step": 1e3 * ms / steps, "l1_error": err})

    x_a, x_b = cp.empty(n), cp.empty(n)
    xs_a, xs_b = cp.empty(n, dtype=np.float32), cp.empty(n, dtype=np.float32)
    sums = cp.zeros(n)
    hist = cp.zeros((steps + 1, ACC_WIDTH))
    hist0 = cp.zeros_like(hist)
    # row 0: residual inf, dangling mass and mass of the uniform start
    hist0[0, :3] = cp.asarray([np.inf, int((out_deg == 0).sum()) / n, 1.0])

    def setup():
        x_a.fill(1.0 / n)
        xs_a[...] = x_a * inv_out
        hist[...] = hist0

    setup_ms = median_ms(None, 0, (), repeats, setup)
    for unroll in (1, 2, 4, 8):
        for use_rows in (True, False):
            kern = mod.get_function(f"link_solve<{unroll}, {'true' if use_rows else 'false'}>")
            fit = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                kern.kernel.ptr, 256, 0)
            kargs = (np.int32(n), np.int64(nnz), indptr, indices,
                     rows if use_rows else indptr, chunk_row0, x_a, x_b, xs_a, xs_b, sums,
                     inv_out, np.float64(alpha), hist, np.int32(steps))
            for per_sm in blocks:
                if per_sm > fit:
                    continue
                setup()
                kern((per_sm * sms,), (256,), kargs)
                x = (x_a if steps % 2 == 0 else x_b).get()
                err = float(np.abs(x / x.sum() - x_ref / x_ref.sum()).sum())
                # residuals above float32 plain steps' rounding floor (about 1e-8)
                res = hist[1:, 0].get()
                big = res_ref > 1e-6
                res_err = float(np.max(np.abs(res[big] - res_ref[big]) / res_ref[big]))
                ms = median_ms(kern, per_sm * sms, kargs, repeats, setup)
                step_us = 1e3 * (ms - setup_ms) / steps
                print(f"{name}: links unroll {unroll} {'rows  ' if use_rows else 'search'} "
                      f"{per_sm} blocks/SM (fit {fit}): {step_us:.2f} us a step; "
                      f"L1 from SciPy {err:.1e}, residuals within {res_err:.1e}", flush=True)
                found.append({"graph": name, "variant": "links", "unroll": unroll,
                              "rows_array": use_rows, "blocks_per_sm": per_sm,
                              "us_per_step": step_us, "l1_error": err,
                              "residual_rel_error": res_err})
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "web-NotreDame"])
    ap.add_argument("--data", default=os.environ.get("WEBRANK_DATASETS", "."))
    ap.add_argument("--steps", type=int, default=116)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--blocks", nargs="+", type=int, default=[2, 4, 8])
    ap.add_argument("--out", default="link_split_try.json")
    args = ap.parse_args()
    import cupy as cp
    from gpu_graphs import graph_by_name

    from webrank.bench.env import environment, write_json

    t = time.perf_counter()
    mod = cp.RawModule(code=source(), options=("-std=c++17",), name_expressions=NAMES,
                       enable_cooperative_groups=True)
    print(f"compiled in {time.perf_counter() - t:.1f} s", flush=True)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    steps = args.steps
    rows_out = []

    barrier = mod.get_function("barriers_only")
    for per_sm in args.blocks:
        for per_step in (1, 2):
            ms = median_ms(barrier, per_sm * sms, (np.int32(steps), np.int32(per_step)),
                           args.repeats)
            print(f"barriers only: {per_sm} blocks/SM, {per_step} a step: "
                  f"{1e3 * ms / steps:.2f} us a step", flush=True)
            rows_out.append({"variant": "barriers", "blocks_per_sm": per_sm,
                             "barriers_per_step": per_step, "us_per_step": 1e3 * ms / steps})
    for name in args.graphs:
        g = graph_by_name(name, args.data)
        rows_out += graph_rows(mod, g, name, steps, args.repeats, args.blocks)
        del g
    write_json({"environment": environment(), "steps": steps, "rows": rows_out}, args.out)


if __name__ == "__main__":
    main()
