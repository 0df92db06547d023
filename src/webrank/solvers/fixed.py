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

The two cost about the same and agree to 1e-15 (the measurements are in the solvers
page of the documentation). ``"exact"`` stays the default: its rounding is bounded
(1/2 ulp) at every magnitude, where the round trip
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

__all__ = ["fixed"]


@register("fixed", requires="fixed_point")
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
    if op.dtype != np.float64:
        raise ValueError("method='fixed' computes in Q1.63 integers; dtype does not apply "
                         "(leave it at 'float64')")
    xp = op.xp
    info: dict[str, Any] = {"format": "Q1.63", "product": product}
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False, info=info)
    fp = op.fixed_point(product)
    x_q = fp.encode(x0)
    steps = dict(tol=tol, criterion=criterion)
    if skip_converged:
        if not 1 <= int(patience) <= 255:
            raise ValueError(f"patience must be in 1..255, not {patience}")
        from webrank.solvers.adaptive import freeze_threshold

        theta = int(np.ldexp(freeze_threshold(tol, op.n, criterion, freeze_factor), 63))
        calm = xp.zeros(op.n, dtype=np.uint8)
        masked = in_epochs(fp.steps, x_q, max_steps=max_iter, callback=callback,
                           calm=calm, theta=theta, patience=int(patience), **steps)
        info["frozen_at_end"] = int((op.to_host(calm) >= patience).sum())
        k1 = len(masked.residuals)
        out = masked
        if masked.converged and k1 < max_iter:
            def shifted(step: int, residual: float) -> None:
                callback(k1 + step, residual)

            out = in_epochs(fp.steps, masked.x, max_steps=max_iter - k1,
                            callback=None if callback is None else shifted, **steps)
            out.residuals = np.concatenate([masked.residuals, out.residuals])
        else:
            out.converged = False  # not verified by a full step
        info["verify_steps"] = len(out.residuals) - k1
    else:
        out = in_epochs(fp.steps, x_q, max_steps=max_iter, callback=callback,
                        **steps)
    x, normalized = fp.decode(out.x)
    k = len(out.residuals)
    matvecs = k
    if verify:
        residual = op.norm(op.axpy(-1.0, x, op.matvec(x)), "l1")
        matvecs += 1
        info["float64_residual"] = residual
        info["error_bound_l1"] = residual / (1.0 - op.alpha)
    return SolverOutput(x=x, iterations=k, matvecs=matvecs, residuals=out.residuals,
                        converged=out.converged, info=info, normalized=normalized)
