"""Device code shared by the CUDA kernel families: one copy of the end of a power step.

``COMMON`` is prepended to the source of each kernel module that needs it. It holds

* ``wr_skip_step``: the no-op test that lets the host queue (or a CUDA graph replay) more
  steps than needed and still stop at exactly the first converged one;
* ``wr_finish_row``: the end of one row of a power step (Praveen et al., Algorithm 2): the
  dangling and teleport terms, the new value, the gathered value of the next step, and
  the row's share of the residual, dangling mass and mass — for the three step modes;
* ``wr_block_accumulate``: the block reduction of those sums (max for the per-node
  criterion) into one row of the step history (``ACC_WIDTH`` values: residual, dangling
  mass, mass, L1 norm), one atomic per value per block; ``wr_block_reduce2``, the same
  for a residual and one other sum (the adaptive and fixed-point kernels).

Step modes (``WR_PLAIN``, ``WR_DELTA``, ``WR_FIRST_DELTA``): a plain step maps ``x`` to
``x' = G x``; a delta step maps the change ``D = x - x_prev`` to ``D' = alpha (P^T D +
(dangling . D) d) - alpha mass(D) v`` and writes ``x + D'`` (float32 runs iterate on the
change, whose rounding error vanishes as it converges; see ``kernels.cpu.fused_step``);
the first step of a delta run is a plain step whose gathered output, dangling mass and
mass are those of the change ``x' - x``, so that the next step can be a delta step with
no work in between.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from webrank.kernels import cuda_loader

PLAIN, DELTA, FIRST_DELTA = 0, 1, 2
#: values per row of a step history: residual, dangling mass, mass, L1 norm (abs mass) of
#: what the step wrote (the blocked engines scale their fixed-point sums by the last one)
ACC_WIDTH = 4

COMMON = r"""
typedef long long i64;
typedef unsigned long long u64;
#define WR_PLAIN 0
#define WR_DELTA 1
#define WR_FIRST_DELTA 2
#define WR_ACC 4

__device__ __forceinline__ void wr_atomic_max_nonneg(double* addr, double v) {
    // non-negative doubles order like their bit patterns read as unsigned integers
    atomicMax(reinterpret_cast<unsigned long long*>(addr), __double_as_longlong(v));
}

// A load through L2 only (COH) or the read-only path: data that other blocks of the same
// launch wrote (the persistent kernel's vectors and split-row sums) must not come from a
// stale L1 or texture line. (Plain loads, which may hit L1 after the grid barrier's
// fence, were measured no faster: cnr-2000's persistent solve 3.97 against 4.03 ms on an
// H100.)
template <bool COH, typename T>
__device__ __forceinline__ T wr_ld(const T* p) {
    if (COH) return __ldcg(p);
    return __ldg(p);
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

// The end of row `i` of a power step, given `sum` = (P^T xs)_i, xi = x[i] and
// s = inv_out[i] (read ahead by the caller). `dm` and `mass` are the dangling mass and
// mass of the vector the step read (of the change, in delta mode). x_out is indexed by
// i; xs_out by `slot` (a reordered gather order, or the global id where x holds only a
// slice). Adds the row's residual term, dangling mass, mass and absolute mass of what it
// writes to res, dmass, tmass, amass.
template <typename T>
__device__ __forceinline__ void wr_finish_row_scaled(
    const i64 i, const i64 slot, const double sum, const double xi, const double s,
    const double alpha, const double dm, const double mass, const double vi,
    const double di, const int mode, double* __restrict__ x_out, T* __restrict__ xs_out,
    const int crit, double& res, double& dmass, double& tmass, double& amass)
{
    double t = alpha * sum + alpha * dm * di;
    double out, diff;
    if (mode == WR_DELTA) {
        t -= alpha * mass * vi;     // drop the mass rounding put into the change
        x_out[i] = xi + t;
        out = t;
        diff = fabs(t);
    } else {
        t += (1.0 - alpha) * vi;
        const double change = t - xi;
        x_out[i] = t;
        out = (mode == WR_FIRST_DELTA) ? change : t;
        diff = fabs(change);
    }
    xs_out[slot] = (T)(out * s);
    if (s == 0.0) dmass += out;
    tmass += out;
    amass += fabs(out);
    if (crit == 0) res += diff;
    else if (crit == 1) res += diff * diff;
    else res = fmax(res, diff);
}

// wr_finish_row_scaled with s read here: inv_out is indexed by i.
template <typename T>
__device__ __forceinline__ void wr_finish_row(
    const i64 i, const i64 slot, const double sum, const double xi, const double alpha,
    const double dm, const double mass, const double vi, const double di, const int mode,
    double* __restrict__ x_out, T* __restrict__ xs_out, const double* __restrict__ inv_out,
    const int crit, double& res, double& dmass, double& tmass, double& amass)
{
    wr_finish_row_scaled<T>(i, slot, sum, xi, inv_out[i], alpha, dm, mass, vi, di, mode,
                            x_out, xs_out, crit, res, dmass, tmass, amass);
}

// Block reduction of a step's residual (max under crit 2, else sum) and one more sum of
// type T (double, or u64 for fixed-point masses): the totals end in thread 0 of the block,
// which adds them where the caller keeps them. Every thread of the block must call it.
template <typename T>
__device__ __forceinline__ void wr_block_reduce2(double& res, T& other, const int crit)
{
    __shared__ double s_res[32];
    __shared__ T s_other[32];
    for (int off = 16; off > 0; off >>= 1) {
        const double r2 = __shfl_down_sync(0xffffffffu, res, off);
        res = (crit == 2) ? fmax(res, r2) : res + r2;
        other += __shfl_down_sync(0xffffffffu, other, off);
    }
    const int warp = threadIdx.x / 32, wl = threadIdx.x % 32;
    if (wl == 0) { s_res[warp] = res; s_other[warp] = other; }
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x / 32;
        res = wl < nw ? s_res[wl] : 0.0;     // residuals are >= 0: 0 is max's identity too
        other = wl < nw ? s_other[wl] : (T)0;
        for (int off = 16; off > 0; off >>= 1) {
            const double r2 = __shfl_down_sync(0xffffffffu, res, off);
            res = (crit == 2) ? fmax(res, r2) : res + r2;
            other += __shfl_down_sync(0xffffffffu, other, off);
        }
    }
}

// Block reduction of (res, dmass, tmass, amass) added to acc_out[0..3] (max for the
// residual under crit 2) by one thread per block. Every thread of the block must call
// it; it ends with a barrier, so it may be called again (the persistent kernel calls it
// once per step).
__device__ __forceinline__ void wr_block_accumulate(
    double res, double dmass, double tmass, double amass, const int crit, double* acc_out)
{
    __shared__ double s_part[WR_ACC][32];
    double v[WR_ACC] = {res, dmass, tmass, amass};
    const int warp = threadIdx.x / 32, wl = threadIdx.x % 32;
    #pragma unroll
    for (int j = 0; j < WR_ACC; ++j) {
        for (int off = 16; off > 0; off >>= 1) {
            const double o = __shfl_down_sync(0xffffffffu, v[j], off);
            v[j] = (j == 0 && crit == 2) ? fmax(v[j], o) : v[j] + o;
        }
        if (wl == 0) s_part[j][warp] = v[j];
    }
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x / 32;
        #pragma unroll
        for (int j = 0; j < WR_ACC; ++j) {
            v[j] = wl < nw ? s_part[j][wl] : 0.0;
            for (int off = 16; off > 0; off >>= 1) {
                const double o = __shfl_down_sync(0xffffffffu, v[j], off);
                v[j] = (j == 0 && crit == 2) ? fmax(v[j], o) : v[j] + o;
            }
        }
        if (wl == 0) {
            if (crit == 2) wr_atomic_max_nonneg(&acc_out[0], v[0]);
            else atomicAdd(&acc_out[0], v[0]);
            #pragma unroll
            for (int j = 1; j < WR_ACC; ++j) atomicAdd(&acc_out[j], v[j]);
        }
    }
    __syncthreads();
}
"""

#: C++ spelling of the array types the kernels are instantiated for
CTYPE = {"int32": "int", "int64": "i64", "float32": "float", "float64": "double",
         "bfloat16": "__nv_bfloat16"}


@functools.cache
def _compile(device_id: int, source: str, name: str, cooperative: bool):
    kernel = cuda_loader.load(source, name, cooperative)
    if kernel is not None:
        return kernel
    import cupy

    module = cupy.RawModule(code=source, options=cuda_loader.JIT_OPTIONS,
                            name_expressions=[name], enable_cooperative_groups=cooperative)
    return module.get_function(name)


#: most blocks of a grid-strided launch
MAX_GRID = 1 << 16


def launch_strided(kernel: Any, items: int, block: int, args: tuple) -> None:
    """Launch a grid-strided ``kernel`` (its loops stride by the grid) over ``items``
    items: blocks of ``block`` threads, as many as cover them, at most :data:`MAX_GRID`."""
    grid = int(max(1, min(-(-int(items) // block), MAX_GRID)))
    kernel((grid,), (block,), args)


#: what a search kernel's counters hold until it finds something (u64 ~0)
NOT_FOUND = (1 << 64) - 1


def find_first(kernel: Any, items: int, block: int, pack: Any, slots: int = 1
               ) -> list[int | None]:
    """Run a search kernel over ``items`` items that lowers each of ``slots`` u64
    counters (atomicMin) to the first index where it finds what that counter looks for:
    ``pack(counters)`` gives its arguments. The indices found, None where none was (one
    copy back)."""
    import cupy as cp

    found = cp.asarray(np.full(slots, NOT_FOUND, dtype=np.uint64))
    if items > 0:
        launch_strided(kernel, items, block, pack(found))
    return [None if int(b) == NOT_FOUND else int(b) for b in found.get()]


def compiled_kernel(source: str, name: str, *, cooperative: bool = False):
    """The kernel ``name`` (a template instantiation) of ``source`` for the current
    device, once per process and device: from the binaries built with the package
    (:mod:`webrank.kernels.cuda_loader`) where one fits the device and the source, else
    compiled by NVRTC through CuPy on first use (CuPy keeps that binary in its on-disk
    cache, so later processes load it instead of compiling). ``cooperative``: launched
    cooperatively (grid-wide barriers)."""
    import cupy

    return _compile(cupy.cuda.Device().id, source, name, cooperative)


#: NumPy scalar type of each C scalar type a kernel parameter may have
_SCALARS = {"i64": np.int64, "long long": np.int64, "u64": np.uint64,
            "unsigned long long": np.uint64, "int": np.int32, "unsigned int": np.uint32,
            "double": np.float64, "float": np.float32}
_QUALIFIERS = {"const", "__restrict__", "volatile"}


class KernelArgs:
    """The parameters of a ``__global__`` function, read from its CUDA source, so that a
    launch names its arguments instead of keeping twenty-odd of them in order by hand.

    ``KernelArgs(source, "wr_fused_step").pack(n=..., indptr=..., ...)`` returns the
    tuple the kernel takes, in its order, each scalar cast to its C type (``i64`` to
    ``np.int64``, ``double`` to ``np.float64``, ...; pointers passed as they are). A
    missing or unknown name raises :class:`TypeError` before anything is launched.
    :meth:`bind` fixes the arguments that stay the same from launch to launch (cast
    once), so that a step's launch names only those that change.

    Examples
    --------
    >>> args = KernelArgs("__global__ void k(const i64 n, double* out, const double a) {}",
    ...                   "k")
    >>> args.names
    ('n', 'out', 'a')
    >>> [type(v).__name__ for v in args.pack(a=2, n=3, out=None)]
    ['int64', 'NoneType', 'float64']
    >>> args.bind(n=3, a=0.5).pack(out=None)[2]
    np.float64(0.5)
    """

    def __init__(self, source: str, kernel: str, /, **constants: Any) -> None:
        self.source, self.kernel = source, kernel
        self.params = _parameters(source, kernel)
        self.names = tuple(name for name, _ in self.params)
        #: the arguments bound (:meth:`bind`), as given
        self.constants = constants
        unknown = sorted(set(constants) - set(self.names))
        if unknown:
            raise TypeError(f"{kernel}: unknown {unknown}")
        template: list[Any] = [None] * len(self.params)
        #: name -> (position, cast) of the arguments each pack() takes
        self._slots = {}
        for i, (name, cast) in enumerate(self.params):
            if name not in constants:
                self._slots[name] = (i, cast)
            else:
                value = constants[name]
                template[i] = value if cast is None else cast(value)
        self._template = tuple(template)

    def bind(self, **constants: Any) -> KernelArgs:
        """This kernel's record with ``constants`` in place; its :meth:`pack` takes the
        other parameters only."""
        again = sorted(set(constants) & set(self.constants))
        if again:
            raise TypeError(f"{self.kernel}: {again} bound already")
        return KernelArgs(self.source, self.kernel, **self.constants, **constants)

    def pack(self, **values: Any) -> tuple[Any, ...]:
        """The argument tuple of one launch, from every parameter not bound, by name."""
        args = list(self._template)
        try:
            for name, (i, cast) in self._slots.items():
                value = values[name]
                args[i] = value if cast is None else cast(value)
        except KeyError:
            args = None
        if args is None or len(values) != len(self._slots):
            missing = [n for n in self._slots if n not in values]
            unknown = sorted(set(values) - set(self._slots))
            raise TypeError(f"{self.kernel}: missing {missing}, unknown {unknown}")
        return tuple(args)


@functools.cache
def _parameters(source: str, kernel: str) -> tuple[tuple[str, Any], ...]:
    """``(name, NumPy scalar type or None for a pointer)`` of each parameter of
    ``kernel`` in ``source``."""
    m = re.search(r"__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+"
                  r"(?:__launch_bounds__\([^)]*\)\s+)?" + re.escape(kernel)
                  + r"\s*\(([^)]*)\)", source)
    if m is None:
        raise ValueError(f"no __global__ function {kernel} in the source")
    params = []
    for text in re.sub(r"//[^\n]*", "", m.group(1)).split(","):
        words = re.findall(r"\w+", text)
        if not words:
            continue
        name = words[-1]
        if "*" in text:
            params.append((name, None))
            continue
        ctype = " ".join(w for w in words[:-1] if w not in _QUALIFIERS)
        if ctype not in _SCALARS:
            raise ValueError(f"{kernel}: parameter {name} has a type ({ctype}) that "
                             "KernelArgs does not know")
        params.append((name, _SCALARS[ctype]))
    return tuple(params)
