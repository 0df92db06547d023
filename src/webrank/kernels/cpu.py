"""CPU kernels: the fused PageRank step, JIT-compiled with Numba, parallel over edge ranges.

One pass over the in-link CSR per iteration computes, for every node i,

    x'[i]  = alpha * sum_{j -> i} val(j,i) * xs[j] + alpha * dm * d[i] + (1 - alpha) * v[i]
    xs'[i] = x'[i] * inv_out[i]          (the vector the next pass gathers)

and the reductions the next pass and the stopping test need: the residual under the
chosen norm and the dangling mass of x'. Rows are split into chunks of equal *edge*
count (a row-count split would leave one thread with every hub of a web graph).

When Numba is missing, :func:`fused_step` falls back to SciPy + NumPy (several passes).
"""

from __future__ import annotations

import os

import numpy as np

try:  # Numba is a dependency, but keep the CPU path alive where it cannot install
    import numba
    from numba import njit, prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only without numba
    HAVE_NUMBA = False

CRITERION_CODE = {"l1": 0, "l2": 1, "linf": 2}


def num_threads() -> int:
    """Threads the fused step uses (Numba's thread count)."""
    return numba.get_num_threads() if HAVE_NUMBA else 1


def chunk_bounds(indptr: np.ndarray, chunks: int) -> np.ndarray:
    """Row boundaries splitting the CSR into ``chunks`` pieces of about equal edge count."""
    n = indptr.size - 1
    m = int(indptr[-1])
    targets = np.linspace(0, m, chunks + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.unique(np.clip(bounds, 0, n))


if HAVE_NUMBA:

    @njit(parallel=True, cache=True, fastmath=False)
    def _fused_step_numba(
        indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, mass, crit, delta, bounds,
        x_out, xs_out, partial,
    ):  # pragma: no cover - compiled
        nchunks = bounds.size - 1
        uniform_v = v.size == 1
        uniform_d = d.size == 1
        weighted = vals.size > 0
        for c in prange(nchunks):
            res = 0.0
            dmass = 0.0
            tmass = 0.0
            for i in range(bounds[c], bounds[c + 1]):
                acc = 0.0
                if weighted:
                    for k in range(indptr[i], indptr[i + 1]):
                        acc += vals[k] * xs[indices[k]]
                else:
                    for k in range(indptr[i], indptr[i + 1]):
                        acc += xs[indices[k]]
                vi = v[0] if uniform_v else v[i]
                di = d[0] if uniform_d else d[i]
                t = alpha * acc + alpha * dm * di
                if delta:
                    t -= alpha * mass * vi  # drop the mass rounding put into D (see below)
                    diff = abs(t)
                    x_out[i] = x[i] + t
                else:
                    t += (1.0 - alpha) * vi
                    diff = abs(t - x[i])
                    x_out[i] = t
                s = inv_out[i]
                xs_out[i] = t * s
                if s == 0.0:
                    dmass += t
                tmass += t
                if crit == 0:
                    res += diff
                elif crit == 1:
                    res += diff * diff
                elif diff > res:
                    res = diff
            partial[c, 0] = res
            partial[c, 1] = dmass
            partial[c, 2] = tmass


def fused_step(
    indptr: np.ndarray,
    indices: np.ndarray,
    vals: np.ndarray,
    xs: np.ndarray,
    x: np.ndarray,
    v: np.ndarray,
    d: np.ndarray,
    inv_out: np.ndarray,
    alpha: float,
    dm: float,
    mass: float,
    crit: int,
    delta: bool,
    bounds: np.ndarray,
    x_out: np.ndarray,
    xs_out: np.ndarray,
    partial: np.ndarray,
) -> tuple[float, float, float]:
    """One fused power step; returns ``(residual, dangling mass, mass)`` of the new vector.

    ``vals`` is empty for unweighted graphs; ``v``/``d`` have length 1 when uniform.
    The residual is the L1 sum, the L2 *squared* sum, or the max, by ``crit``.

    Plain step (``delta=False``): ``xs`` holds ``x / out``; writes ``x' = G x`` and
    ``x' / out``. Delta step (``delta=True``): ``xs`` holds ``(x_k - x_{k-1}) / out``;
    the change obeys ``D' = alpha (P^T D + (dangling . D) d)`` (the teleport term cancels),
    so the step writes ``x' = x + D'`` and ``D' / out``. Rounding ``D`` to float32 errs
    relative to ``D``, which vanishes, where rounding ``x`` errs relative to ``x``: with a
    float32 gather the plain step stalls at an L1 residual near 1e-8, the delta step
    does not. The true ``D`` sums to zero; rounding gives it a little mass, which the
    iteration would only damp by ``alpha`` a step, so each delta step subtracts
    ``alpha * mass(D) * v`` (``mass`` is the previous step's third return value).
    """
    if HAVE_NUMBA:
        _fused_step_numba(indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, mass,
                          crit, delta, bounds, x_out, xs_out, partial)
        p = partial[: bounds.size - 1]
        res = p[:, 0].max() if crit == 2 else p[:, 0].sum()
        return float(res), float(p[:, 1].sum()), float(p[:, 2].sum())
    return _fused_step_scipy(indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, mass,
                             crit, delta, x_out, xs_out)


def _fused_step_scipy(indptr, indices, vals, xs, x, v, d, inv_out, alpha, dm, mass, crit,
                      delta, x_out, xs_out):  # pragma: no cover - only without numba
    import scipy.sparse as sp

    n = indptr.size - 1
    data = vals if vals.size else np.ones(indices.size, dtype=xs.dtype)
    a = sp.csr_array((data, indices, indptr), shape=(n, n))
    t = alpha * (a @ xs) + alpha * dm * d
    if delta:
        t -= alpha * mass * v
        diff = np.abs(t)
        np.add(x, t, out=x_out)
    else:
        t += (1.0 - alpha) * v
        diff = np.abs(t - x)
        x_out[:] = t
    np.multiply(t, inv_out, out=xs_out, casting="unsafe")
    res = diff.sum() if crit == 0 else (diff * diff).sum() if crit == 1 else diff.max()
    return float(res), float(t[inv_out == 0].sum()), float(t.sum())


if HAVE_NUMBA:

    @njit(parallel=True, cache=True, nogil=True)
    def _row_range_sums_numba(begin, end, indices, vals, xs, out):  # pragma: no cover
        weighted = vals.size > 0
        for r in prange(begin.size):
            acc = 0.0
            for k in range(begin[r], end[r]):
                if weighted:
                    acc += np.float64(vals[k]) * np.float64(xs[indices[k]])
                else:
                    acc += np.float64(xs[indices[k]])
            out[r] = acc


def row_range_sums(begin: np.ndarray, end: np.ndarray, indices: np.ndarray,
                   vals: np.ndarray, xs: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[r] = sum of (vals[k] *) xs[indices[k]] for k in [begin[r], end[r])``.

    Parts of CSR rows summed in parallel, without the GIL (the hybrid method runs this
    while the GPU works). ``vals`` is empty for unweighted graphs. Returns ``out``.
    """
    if HAVE_NUMBA:
        _row_range_sums_numba(begin, end, indices, vals, xs, out)
        return out
    for r in range(begin.size):  # pragma: no cover - only without numba
        sl = slice(begin[r], end[r])
        g = xs[indices[sl]].astype(np.float64)
        out[r] = (vals[sl] * g).sum() if vals.size else g.sum()
    return out


def default_chunks() -> int:
    """Chunks per step: several per thread so uneven rows balance out
    (``WEBRANK_CPU_CHUNKS`` overrides, for experiments)."""
    override = os.environ.get("WEBRANK_CPU_CHUNKS")
    return int(override) if override else max(1, num_threads() * 8)
