"""CPU kernels of the ``fixed`` method: the PageRank step in unsigned fixed point.

Sgherzi (§2.3.2) stores ranks as unsigned Q1.63: a ``uint64`` ``u`` stands for
``u / 2**63``, so [0, 2) with a resolution of 2**-63 ≈ 1.1e-19. Constants below one
(alpha, 1/out-degree, transition probabilities, the dangling distribution) are Q0.64
fractions ``f / 2**64``. The only product needed is "Q1.63 times Q0.64", rounded to the
nearest Q1.63::

    mulfrac(a, f) = round(a * f / 2**64)

in one of two ways (``product``):

* ``PRODUCT_EXACT`` (0): the exact 128-bit product. Numba has no 128-bit integer, so the
  high word comes from four 32 x 32 -> 64-bit partial products (the ``mulhi`` trick);
  rounding adds bit 63 of the low word. Error <= 1/2 ulp.
* ``PRODUCT_DOUBLE`` (1): Sgherzi's choice, ``to_fixed(to_double(a) * to_double(f))``:
  both operands rounded to 53 bits, multiplied in float64, rounded back. Relative error
  about 2**-52, so below one ulp while ``a < 2**-11`` (every PageRank value of a large
  graph), and up to ~2**10 ulp near 1.

Sums of in-links are plain ``uint64`` additions (exact, order-independent). They cannot
overflow: a source ``j`` adds at most ``x_j / out_j`` (+1/2 ulp rounding) to any one row,
and at most once (duplicate edges are collapsed, or summed into one weight), so every row
sum is at most the total rank, ``2**63 * (1 + tiny)`` — half the range of a ``uint64``,
however many in-links the row has.
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.cpu import HAVE_NUMBA

PRODUCT_EXACT, PRODUCT_DOUBLE = 0, 1
PRODUCTS = {"exact": PRODUCT_EXACT, "double": PRODUCT_DOUBLE}
ONE_Q63 = 1 << 63  # 1.0 in Q1.63
FRAC_MAX = (1 << 64) - 1  # the largest Q0.64 fraction, 1 - 2**-64 (stands in for 1.0)

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S63 = np.uint64(63)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_TWO_M64 = 2.0 ** -64
_TWO_64 = 2.0 ** 64
_U64_MAX = np.uint64(FRAC_MAX)
_NO_MASK = np.zeros(0, dtype=np.uint8)


if HAVE_NUMBA:
    from numba import njit, prange

    @njit(inline="always", cache=True)
    def mulfrac(a, f, product):  # pragma: no cover - compiled
        """``round(a * f / 2**64)`` for uint64 ``a`` (Q1.63) and ``f`` (Q0.64)."""
        if product == PRODUCT_DOUBLE:
            r = np.float64(a) * (np.float64(f) * _TWO_M64) + 0.5
            # a near 2**64 rounds up to 2**64 in float64: saturate (converting an
            # out-of-range float to uint64 is undefined, and LLVM gives 2**63)
            return _U64_MAX if r >= _TWO_64 else np.uint64(r)
        a_lo = a & _M32
        a_hi = a >> _S32
        f_lo = f & _M32
        f_hi = f >> _S32
        ll = a_lo * f_lo
        lh = a_lo * f_hi
        hl = a_hi * f_lo
        mid = (ll >> _S32) + (lh & _M32) + (hl & _M32)  # < 3 * 2**32: no overflow
        low = (mid << _S32) | (ll & _M32)
        high = a_hi * f_hi + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)
        return high + (low >> _S63)  # round half up; high < 2**64 - 1, so no carry out

    @njit(cache=True)
    def _mulfrac_array(a, f, product, out):  # pragma: no cover - compiled
        scalar_f = f.size == 1
        for i in range(a.size):
            out[i] = mulfrac(a[i], f[0] if scalar_f else f[i], product)

    @njit(parallel=True, cache=True, fastmath=False)
    def _fixed_step_numba(
        indptr, indices, vals, xs, x, node_scale, tele, dist, alpha_q, dm, crit, product,
        calm, theta, patience, bounds, x_out, xs_out, partial_res, partial_dm,
    ):  # pragma: no cover - compiled
        n = indptr.size - 1
        nchunks = bounds.size - 1
        weighted = vals.size > 0
        skipping = patience > 0
        uniform_t = tele.size == 1
        uniform_d = dist.size == 0
        cdm = mulfrac(dm, alpha_q, product)  # alpha * dangling mass, Q1.63
        nn = np.uint64(n)
        dterm_uniform = (cdm + nn // np.uint64(2)) // nn  # alpha * dm / n, rounded
        for c in prange(nchunks):
            res = 0.0
            dms = _ZERO
            for i in range(bounds[c], bounds[c + 1]):
                if skipping and calm[i] >= patience:  # converged: keep it, gather nothing
                    x_out[i] = x[i]
                    xs_out[i] = xs[i]
                    if node_scale[i] == _ZERO:
                        dms += x[i]
                    continue
                acc = _ZERO
                if weighted:
                    for k in range(indptr[i], indptr[i + 1]):
                        acc += mulfrac(x[indices[k]], vals[k], product)
                else:
                    for k in range(indptr[i], indptr[i + 1]):
                        acc += xs[indices[k]]
                t = mulfrac(acc, alpha_q, product)
                t += dterm_uniform if uniform_d else mulfrac(cdm, dist[i], product)
                t += tele[0] if uniform_t else tele[i]
                xi = x[i]
                diff = t - xi if t >= xi else xi - t  # exact, in ulps
                x_out[i] = t
                if skipping:
                    if diff > theta:
                        calm[i] = 0
                    elif calm[i] < 255:
                        calm[i] += 1
                s = node_scale[i]
                if s == _ZERO:
                    dms += t
                    xs_out[i] = _ZERO
                elif weighted:
                    xs_out[i] = _ZERO  # weighted rows gather x itself
                else:
                    xs_out[i] = mulfrac(t, s, product)
                fd = np.float64(diff)
                if crit == 0:
                    res += fd
                elif crit == 1:
                    res += fd * fd
                elif fd > res:
                    res = fd
            partial_res[c] = res
            partial_dm[c] = dms


def _need_numba() -> None:
    if not HAVE_NUMBA:  # pragma: no cover - numba is a dependency
        raise RuntimeError("method='fixed' on the CPU needs Numba (pip install numba)")


def mulfrac_array(a: np.ndarray, f: np.ndarray | int, product: int = PRODUCT_EXACT) -> np.ndarray:
    """Element-wise :func:`mulfrac` of uint64 arrays (``f`` may be one scalar fraction)."""
    _need_numba()
    a = np.ascontiguousarray(a, dtype=np.uint64)
    f = np.atleast_1d(np.asarray(f, dtype=np.uint64))
    out = np.empty_like(a)
    _mulfrac_array(a, f, product, out)
    return out


def fixed_step(
    indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray, *, xs: np.ndarray,
    x: np.ndarray, node_scale: np.ndarray, tele: np.ndarray, dist: np.ndarray,
    alpha_q: int, dm: int, crit: int, product: int, bounds: np.ndarray, x_out: np.ndarray,
    xs_out: np.ndarray, partial_res: np.ndarray, partial_dm: np.ndarray,
    calm: np.ndarray | None = None, theta: int = 0, patience: int = 0,
) -> tuple[float, int]:
    """One fixed-point power step over all rows (but the converged ones, with
    ``patience``).

    Computes, in Q1.63 (all arrays uint64)::

        x'[i] = alpha (.) S_i + (alpha (.) dm) (.) d[i] + tele[i],
        S_i = sum_{j -> i} xs[j]             (unweighted; xs = x (.) node_scale)
        S_i = sum_{j -> i} x[j] (.) vals[k]  (weighted; vals in Q0.64)

    where ``(.)`` is :func:`mulfrac`. ``node_scale`` is the Q0.64 reciprocal of the
    out-degree (unweighted) or any non-zero marker (weighted); zero marks a dangling
    node. ``tele`` (Q1.63) holds ``(1 - alpha) v`` (length 1 when uniform), ``dist`` the
    Q0.64 dangling distribution (empty when uniform: ``alpha dm / n`` is one rounded
    division).

    With ``patience > 0``, ``calm`` (uint8, n, updated in place) is a mask of converged
    nodes, as in Sgherzi's bitmask ("PageRank approximation on GPU", Politecnico di
    Milano): a node whose count has reached ``patience`` is skipped (its value kept, no
    in-link gathered); every other node's count goes up by one when it changed by at
    most ``theta`` ulps, else back to 0.

    Returns ``(residual, dangling mass of x')``: the residual in ulps
    (L1 sum, L2 squared sum or max of the exact integer differences, by ``crit``,
    accumulated in float64), the dangling mass exactly, in Q1.63.
    """
    _need_numba()
    _fixed_step_numba(indptr, indices, vals, xs, x, node_scale, tele, dist,
                      np.uint64(alpha_q), np.uint64(dm), crit, product,
                      _NO_MASK if calm is None else calm, np.uint64(theta), int(patience),
                      bounds, x_out, xs_out, partial_res, partial_dm)
    k = bounds.size - 1
    res = partial_res[:k].max(initial=0.0) if crit == 2 else partial_res[:k].sum()
    return float(res), int(partial_dm[:k].sum(dtype=np.uint64))
