"""CPU kernels of the ``fixed`` method: the PageRank step in unsigned fixed point.

Sgherzi (§2.3.2) stores ranks as unsigned Q1.63: a ``uint64`` ``u`` stands for
``u / 2**63``, so [0, 2) with a resolution of 2**-63 ≈ 1.1e-19. Constants below one
(alpha, 1/out-degree, transition probabilities, the dangling distribution) are Q0.64
fractions ``f / 2**64``. The only product needed is "Q1.63 times Q0.64", rounded to the
nearest Q1.63::

    mulfrac(a, f) = round(a * f / 2**64)

in one of two ways (``product``):

* ``PRODUCT_EXACT`` (0): the exact 128-bit product (``unsigned __int128``; where the
  compiler has none, its high word from four 32 x 32 -> 64-bit partial products);
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

The kernels are compiled with the package (``native/fixed.cpp``, OpenMP): rows in
parallel by chunks, each chunk's float64 residual summed in row order, so the same bits at
any thread count.
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.native import lib, num_threads

PRODUCT_EXACT, PRODUCT_DOUBLE = 0, 1
PRODUCTS = {"exact": PRODUCT_EXACT, "double": PRODUCT_DOUBLE}
ONE_Q63 = 1 << 63  # 1.0 in Q1.63
FRAC_MAX = (1 << 64) - 1  # the largest Q0.64 fraction, 1 - 2**-64 (stands in for 1.0)

_NO_MASK = np.zeros(0, dtype=np.uint8)


def mulfrac_array(a: np.ndarray, f: np.ndarray | int, product: int = PRODUCT_EXACT) -> np.ndarray:
    """Element-wise ``mulfrac`` (module docstring) of uint64 arrays (``f`` may be one scalar
    fraction)."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    f = np.ascontiguousarray(np.atleast_1d(np.asarray(f, dtype=np.uint64)))
    out = np.empty_like(a)
    lib.mulfrac_array(a.reshape(-1), f.reshape(-1), product, out.reshape(-1))
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

    where ``(.)`` is ``mulfrac`` (module docstring). ``node_scale`` is the Q0.64 reciprocal of the
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
    lib.fixed_step(indptr, indices, vals, xs, x, node_scale, tele, dist, int(alpha_q), int(dm),
                   crit, product, _NO_MASK if calm is None else calm, int(theta), int(patience),
                   bounds, x_out, xs_out, partial_res, partial_dm, num_threads())
    k = bounds.size - 1
    res = partial_res[:k].max(initial=0.0) if crit == 2 else partial_res[:k].sum()
    return float(res), int(partial_dm[:k].sum(dtype=np.uint64))
