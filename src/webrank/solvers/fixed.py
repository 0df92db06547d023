"""The power method in unsigned fixed point (Sgherzi, §2.3.2).

Ranks are unsigned Q1.63 numbers (a ``uint64`` ``u`` stands for ``u / 2**63``, so
[0, 2) in steps of 2**-63 ≈ 1.1e-19); the constants below one — alpha, 1 - alpha, the
reciprocal out-degrees, the transition probabilities of weighted graphs, the dangling
distribution — are Q0.64 fractions. One step, all in integers::

    xs_j  = x_j (.) recip_j                             (x_j / out_j, rounded)
    x'_i  = alpha (.) sum_{j -> i} xs_j  +  (alpha (.) dm) / n  +  tele_i

with ``(.)`` the rounded product "Q1.63 x Q0.64 -> Q1.63" (``product``, below),
``dm`` the exact integer sum of x over dangling nodes, and ``tele_i = (1 - alpha) v_i``
computed once. A non-uniform dangling distribution uses ``(alpha (.) dm) (.) d_i``; a
weighted graph gathers ``x_j (.) p_ji`` per in-link. The residual is the L1 / L2 / max
norm of the exact integer differences ``x'_i - x_i``. Why the sums cannot overflow:
see :mod:`webrank.kernels.cpu_fixed`.

``product`` (default ``"exact"``; Sgherzi's choice was ``"double"``):

* ``"exact"``: the exact 128-bit product, rounded once (``__umul64hi`` on the GPU, four
  32-bit partial products on the CPU, where Numba has no 128-bit integer).
* ``"double"``: both operands to float64, multiplied, rounded back (Sgherzi).

Measured on the CPU (2 threads, cnr-2000, 10 steps): exact 16.3 ms/step, double 15.3;
with random edge weights (a product per in-link) 20.1 vs 18.1. The answers agree to
1e-15 (L1 error vs float64 at tol 1e-13: 2.25e-13 vs 2.26e-13). ``"exact"`` stays the
default: its rounding is bounded (1/2 ulp) at every magnitude, where the round trip
through float64 errs by up to ~2**10 ulp on values near 1 (a hub holding most of the
rank), and integer products make the GPU and CPU answers bit-identical by construction.

Each step rounds every node by at most a few ulps (half an ulp per gathered in-link), so
the fixed point reached lies within about ``(m / 2 + 2 n) * 2**-63 / (1 - alpha)`` (L1)
of the float64 one — 1e-12 on the 3.2M-edge cnr-2000 — and residuals stall near
``n * 2**-63``: ``tol`` must stay above ~1e-13 on graphs of a million nodes.

The scores are the Q1.63 vector divided by its exact integer total: each node's value
and the total rounded to float64 once, then divided (a float sum would add in a
device-dependent order and move the last bit: the CPU and GPU answers are the same bits).

``dtype`` does not apply: the iterate is Q1.63, the constants Q0.64 (float32 is refused).
With ``verify=True`` (default) one float64 Google-matrix product of the answer is made
afterwards and ``info["float64_residual"] = ||G x - x||_1`` reported, with the bound
``info["error_bound_l1"] = float64_residual / (1 - alpha)`` on the L1 distance to the
float64 PageRank vector (G contracts by alpha in L1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.solvers import SolverOutput, in_epochs, register

# webrank.kernels.cpu_fixed imports Numba, so it is imported in the functions that use
# it, not when the solver registry loads this module (webrank.solvers)

__all__ = ["fixed", "fixed_constants", "from_q63", "to_frac", "to_q63"]


def to_q63(a: Any, xp: Any = np) -> Any:
    """Float64 values in [0, 1] to Q1.63 (``uint64``), rounded to nearest (exact: a
    float64 scaled by 2**63 is rounded once)."""
    return xp.rint(xp.ldexp(xp.asarray(a, dtype=np.float64), 63)).astype(np.uint64)


def from_q63(u: Any, xp: Any = np) -> Any:
    """Q1.63 ``uint64`` values to float64 (rounded to 53 bits)."""
    return xp.ldexp(u.astype(np.float64), -63)


def to_frac(p: np.ndarray) -> np.ndarray:
    """Probabilities in [0, 1] to Q0.64 fractions (``uint64``), rounded to nearest.

    A Q0.64 number cannot hold 1.0: a probability of 1 (a single out-link, a teleport
    vector on one node) becomes ``1 - 2**-64``, an error of 5e-20 relative."""
    from webrank.kernels.cpu_fixed import FRAC_MAX

    p = np.asarray(p, dtype=np.float64)
    scaled = np.ldexp(p, 64)
    out = np.full(p.shape, FRAC_MAX, dtype=np.uint64)
    below = p < 1.0  # scaled <= 2**64 - 2048: converts exactly
    out[below] = np.rint(scaled[below]).astype(np.uint64)
    return out


def reciprocals(out_degree: np.ndarray) -> np.ndarray:
    """``round(2**64 / k)`` in Q0.64 for integer out-degrees ``k`` (0 for ``k = 0``;
    ``1 - 2**-64`` for ``k = 1``), exactly: from ``2**64 - 1 = q k + r``."""
    from webrank.kernels.cpu_fixed import FRAC_MAX

    k = np.asarray(out_degree, dtype=np.uint64)
    out = np.zeros(k.shape, dtype=np.uint64)
    pos = k > 0
    kp = k[pos]
    q = np.uint64(FRAC_MAX) // kp
    r = np.uint64(FRAC_MAX) - q * kp  # 2**64 = q k + r + 1
    # round half up; k = 1 would need 2**64: q = 2**64 - 1 already saturates
    up = (kp > 1) & (np.uint64(2) * (r + np.uint64(1)) >= kp)
    out[pos] = q + up.astype(np.uint64)
    return out


def fixed_constants(op: Any) -> dict[str, Any]:
    """The fixed-point constants of ``op``'s Google matrix (host arrays, ``uint64``):
    ``alpha_q`` (int, Q0.64), ``node_scale``, ``edge_vals``, ``tele``, ``dist`` as
    :meth:`~webrank.backends.PageRankOperator.fixed_steps` takes them."""
    from webrank.kernels.cpu_fixed import FRAC_MAX, PRODUCT_EXACT, mulfrac_array

    g = op.graph
    n = op.n
    alpha_q = min(round(float(np.ldexp(op.alpha, 64))), FRAC_MAX)
    one_minus_alpha_q = (1 << 64) - alpha_q  # alpha + (1 - alpha) == 1 exactly
    dangling = op.to_host(g.dangling)
    tv = g.transition_values()
    if tv is None:
        out_degree = np.rint(op.to_host(g.out_weight)).astype(np.uint64)
        node_scale = reciprocals(out_degree)
        edge_vals = np.zeros(0, dtype=np.uint64)
    else:
        node_scale = np.where(dangling, np.uint64(0), np.uint64(FRAC_MAX))
        edge_vals = to_frac(op.to_host(tv))
    if op.uniform_v:
        # (1 - alpha) / n in Q1.63: round(one_minus_alpha_q * 2**63 / 2**64 / n)
        tele = np.array([(one_minus_alpha_q + n) // (2 * n)], dtype=np.uint64)
    else:
        v_q = to_q63(op.to_host(op.teleport()))
        tele = (v_q if one_minus_alpha_q == 1 << 64
                else mulfrac_array(v_q, one_minus_alpha_q, PRODUCT_EXACT))
    dist = (np.zeros(0, dtype=np.uint64) if op.uniform_d
            else to_frac(op.to_host(op.dangling_dist())))
    return {"alpha_q": alpha_q, "node_scale": node_scale, "edge_vals": edge_vals,
            "tele": tele, "dist": dist}


@register("fixed")
def fixed(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
          callback: Any = None, product: str = "exact", verify: bool = True,
          skip_converged: bool = False, patience: int = 2,
          freeze_factor: float = 1.0) -> SolverOutput:
    """Power iteration in Q1.63 fixed point until ``||x_{k+1} - x_k|| < tol``.

    Parameters
    ----------
    product : {"exact", "double"}, default "exact"
        How "Q1.63 times Q0.64" is rounded: the exact 128-bit product, or Sgherzi's
        round trip through float64 (see the module docstring).
    verify : bool, default True
        Measure ``||G x - x||_1`` of the answer in float64 (one extra product) and report
        it, and the L1 error bound it gives, in ``info``.
    skip_converged : bool, default False
        Skip the nodes that have converged, with a mask of them (Sgherzi's bitmask,
        combined with fixed point as there): a node that changed by at most ``theta``
        for ``patience`` steps in a row keeps its value and gathers no in-link, where
        ``theta`` is ``freeze_factor`` times its share of ``tol`` (as
        :func:`~webrank.solvers.adaptive.freeze_threshold`; at ``tol=0``: unchanged).
        When the steps with the mask converge, full steps follow until *they* converge,
        so the residual reported is that of a full step and the answer as accurate as
        without the mask. ``info`` gains ``frozen_at_end`` (nodes skipped at the end of the
        masked phase) and ``verify_steps`` (the full steps after it).
    patience : int, default 2
        Steps in a row a node must stay within ``theta`` to be skipped (1 to 255).
    freeze_factor : float, default 1.0
        Scale of ``theta`` relative to a node's share of ``tol``.
    """
    from webrank.kernels.cpu_fixed import ONE_Q63, PRODUCTS

    if product not in PRODUCTS:
        raise ValueError(f"product must be one of {', '.join(PRODUCTS)}; not {product!r}")
    if op.dtype != np.float64:
        raise ValueError("method='fixed' computes in Q1.63 integers; dtype does not apply "
                         "(leave it at 'float64')")
    xp = op.xp
    info: dict[str, Any] = {"format": "Q1.63", "product": product}
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False, info=info)
    consts = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v
              for k, v in fixed_constants(op).items()}
    # x0 sums to 1, so every entry is at most 1.0 = 2**63: it fits
    x_q = xp.minimum(to_q63(x0, xp), xp.uint64(ONE_Q63))
    steps = dict(product=PRODUCTS[product], tol=tol, criterion=criterion, **consts)
    if skip_converged:
        if not 1 <= int(patience) <= 255:
            raise ValueError(f"patience must be in 1..255, not {patience}")
        from webrank.solvers.adaptive import freeze_threshold

        theta = int(np.ldexp(freeze_threshold(tol, op.n, criterion, freeze_factor), 63))
        calm = xp.zeros(op.n, dtype=np.uint8)
        masked = in_epochs(op.fixed_steps, x_q, max_steps=max_iter, callback=callback,
                           calm=calm, theta=theta, patience=int(patience), **steps)
        info["frozen_at_end"] = int((calm >= patience).sum())
        k1 = len(masked.residuals)
        out = masked
        if masked.converged and k1 < max_iter:
            def shifted(step: int, residual: float) -> None:
                callback(k1 + step, residual)

            out = in_epochs(op.fixed_steps, masked.x, max_steps=max_iter - k1,
                            callback=None if callback is None else shifted, **steps)
            out.residuals = np.concatenate([masked.residuals, out.residuals])
        else:
            out.converged = False  # not verified by a full step
        info["verify_steps"] = len(out.residuals) - k1
    else:
        out = in_epochs(op.fixed_steps, x_q, max_steps=max_iter, callback=callback,
                        **steps)
    # divided by the exact integer total (the same roundings on every device), not
    # by a float sum whose order, and so whose last bit, depends on the device
    total_q = int(out.x.sum(dtype=np.uint64))
    x = out.x.astype(np.float64) / float(total_q) if total_q else from_q63(out.x, xp)
    k = len(out.residuals)
    matvecs = k
    if verify:
        y = op.matvec(x)
        residual = float(xp.abs(y - x).sum())
        matvecs += 1
        info["float64_residual"] = residual
        info["error_bound_l1"] = residual / (1.0 - op.alpha)
    return SolverOutput(x=x, iterations=k, matvecs=matvecs, residuals=out.residuals,
                        converged=out.converged, info=info, normalized=bool(total_q))
