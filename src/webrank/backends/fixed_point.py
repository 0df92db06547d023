"""The fixed-point numbers of the ``fixed`` method (capability "fixed_point"): Q1.63
iterates and Q0.64 constants (:mod:`webrank.solvers.fixed` has the arithmetic), the
constants of an operator's Google matrix, and :class:`FixedPointSteps`, what the solver
drives (:meth:`~webrank.backends.base.PageRankOperator.fixed_point`).

:mod:`webrank.kernels.cpu_fixed` imports Numba, so it is imported in the functions that
use it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FixedPointMatrix", "FixedPointSteps", "fixed_constants", "from_q63",
           "reciprocals", "to_frac", "to_q63"]


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


@dataclass(frozen=True)
class FixedPointMatrix:
    """The Google matrix in fixed point, as
    :meth:`~webrank.backends.PageRankOperator.fixed_steps` takes it (arrays ``uint64``,
    on the operator's device).

    Attributes
    ----------
    alpha_q : int
        alpha in Q0.64.
    node_scale : array, shape (n,)
        The Q0.64 reciprocal out-degree of each node (unweighted) or a non-zero marker
        (weighted); 0 for dangling nodes.
    edge_vals : array, shape (m,) or (0,)
        The Q0.64 transition probability of each in-link; empty when unweighted.
    tele : array, shape (n,) or (1,)
        The Q1.63 teleport term ``(1 - alpha) v``; length 1 when uniform.
    dist : array, shape (n,) or (0,)
        The Q0.64 dangling distribution; empty when uniform.
    product : int
        How a Q0.64 by Q1.63 product rounds: a
        :data:`webrank.kernels.cpu_fixed.PRODUCTS` code.
    """

    alpha_q: int
    node_scale: Any
    edge_vals: Any
    tele: Any
    dist: Any
    product: int


def fixed_constants(op: Any) -> dict[str, Any]:
    """The fixed-point constants of ``op``'s Google matrix (host arrays, ``uint64``):
    ``alpha_q`` (int, Q0.64), ``node_scale``, ``edge_vals``, ``tele``, ``dist``, the
    fields of :class:`FixedPointMatrix` but its rounding."""
    from webrank.kernels.cpu_fixed import FRAC_MAX, PRODUCT_EXACT, mulfrac_array

    g = op.graph
    n = op.n
    alpha_q = min(round(float(np.ldexp(op.alpha, 64))), FRAC_MAX)
    one_minus_alpha_q = (1 << 64) - alpha_q  # alpha + (1 - alpha) == 1 exactly
    dangling = op.to_host(g.out_weight) == 0  # (Graph.dangling_mask, on the host)
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


class FixedPointSteps:
    """An operator's fixed-point steps with ``product`` rounding: :meth:`encode` the start,
    :attr:`steps` (``op.fixed_steps`` with :attr:`matrix` bound; the signature of
    :func:`webrank.solvers.in_epochs`'s ``steps``), :meth:`decode` the end.

    Raises
    ------
    ValueError
        An unknown ``product``.
    """

    def __init__(self, op: Any, product: str) -> None:
        from webrank.kernels.cpu_fixed import PRODUCTS

        if product not in PRODUCTS:
            raise ValueError(f"product must be one of {', '.join(PRODUCTS)}; not "
                             f"{product!r}")
        xp = op.xp
        self.op = op
        consts = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v
                  for k, v in fixed_constants(op).items()}
        self.matrix = FixedPointMatrix(product=PRODUCTS[product], **consts)
        self.steps = functools.partial(op.fixed_steps, matrix=self.matrix)

    def encode(self, x0: Any) -> Any:
        """``x0`` (summing to 1) in Q1.63: every entry at most 1.0 = 2**63."""
        from webrank.kernels.cpu_fixed import ONE_Q63

        # on the host: an O(n) conversion, where CuPy's would compile kernels
        host = np.minimum(to_q63(self.op.to_host(x0)), np.uint64(ONE_Q63))
        return self.op.xp.asarray(host)

    def decode(self, x_q: Any) -> tuple[Any, bool]:
        """``(x, normalized)``: the Q1.63 vector divided by its exact integer total (the
        same roundings on every device, where a float sum's order, and so its last bit,
        would depend on the device); ``normalized`` is False for an all-zero vector."""
        x_q = self.op.to_host(x_q)  # (on the host, as encode)
        total_q = int(x_q.sum(dtype=np.uint64))
        if not total_q:
            return self.op.asarray(from_q63(x_q)), False
        return self.op.asarray(x_q.astype(np.float64) / float(total_q)), True
