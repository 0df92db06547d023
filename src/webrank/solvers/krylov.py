r"""Krylov solvers for the PageRank linear system: restarted GMRES and BiCGSTAB.

PageRank is the solution of a nonsingular linear system (Langville & Meyer 2004, §5;
Gleich, Zhukov & Berkhin 2004). With ``M = P^T + d 1_D^T`` (dangling columns replaced
by ``d``; column-stochastic) the Google matrix the operator applies is
``G x = alpha M x + (1 - alpha) (1 . x) v``, and the fixed point ``x = G x`` with
``1 . x = 1`` is the solution of

.. math::

    A x = b, \qquad A = I - \alpha M, \qquad b = (1 - \alpha) v.

``1^T A = (1 - alpha) 1^T``, so every solution sums to 1 and ``A`` is an M-matrix with
``||A^{-1}||_1 = 1 / (1 - alpha)``. Both solvers get ``A w`` from one Google-matrix
product (:meth:`~webrank.backends.PageRankOperator.matvec`), for any vector ``w``:

.. math::

    A w = w - \bigl(G w - (1 - \alpha)(1 \cdot w)\, v\bigr).

Stopping rule: the power method's. The power method stops when one step changes its
iterate by less than ``tol``; from any ``x`` that change is

.. math::

    \alpha M x + (1 - \alpha) v - x = b - A x,

the linear residual. So a solver stops when the ``criterion`` norm of ``b - A x`` is below
``tol`` for its iterate ``x`` (negative entries clipped to 0), confirmed by one explicit
product on the vector it returns; that product is counted in ``matvecs`` and its
residual is the last entry of ``residuals``. ``converged`` is True only when that
confirmed residual is below ``tol``, so ``||x - x*||_1 <= ||b - A x||_1 / (1 - alpha)``,
as for the power method. Like the power method's iterate, ``x`` is not rescaled inside
the solver: its sum is ``1 - (1.r) / (1 - alpha)``, and :func:`webrank.pagerank` scales it
to sum 1. (With ``dtype="float32"`` on a weighted graph the rounded edge values make
``M`` stochastic only to ~1e-7, so the fixed point of the step sums to 1 only to ~1e-7
and rescaling it would leave a residual near 1e-9: the step residual of the iterate
itself is the one both the power method and these solvers drive below ``tol``.)

Both are written once against ``op.xp`` and the operator, so NumPy and CuPy run the same
code. The Hessenberg least-squares problem of GMRES (a few dozen numbers) lives on the
host in NumPy.

Precision: the products come from ``op.propagate``, float64 on both backends (SciPy /
cuSPARSE with float64 values). ``dtype="float32"`` therefore only rounds the edge values
of weighted graphs to float32 (as the power method does); the Krylov vectors and the
gathered vector stay float64, and the solvers reach ``tol=1e-10`` and below in either
dtype (measured on web-NotreDame: see ``benchmarks/methods/krylov_matvecs.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.solvers import SolverOutput, register

# GMRES basis size and deflated vectors. Ours, from web-NotreDame at alpha 0.99, tol 1e-10
# (L1) on the CPU (power: 1598 products; benchmarks/results/methods/cpu_2core/krylov.json):
#   plain GMRES(m), m = 10 / 20 / 30 / 50 / 100 / 200:  1169 / 820 / 581 / 431 / 370 / 321
#   GMRES-DR(m, k), (20, 8) / (30, 10) / (50, 10) / (50, 20) / (80, 30):
#                                                      476 / 433 / 392 / 344 / 320
# Full GMRES needs about 318, so (50, 20) is near the floor with a quarter of its memory:
# (m + 1) n float64, 408 bytes per node.
DEFAULT_RESTART = 50

# Reorthogonalise an Arnoldi vector when Gram-Schmidt removed more than this share of
# its norm (Daniel, Gragg, Kaufman & Stewart 1976: "twice is enough").
_REORTH = 0.7


def step_residual(op: Any, x: Any) -> Any:
    """``alpha M x + (1 - alpha) v - x = b - A x``: what one power step from ``x`` would
    change (one counted product; ``G x`` adds ``(1 - alpha)(1.x) v``, not ``(1 - alpha) v``)."""
    r = op.axpy(-1.0, x, op.matvec(x))
    return op.axpy(-(1.0 - op.alpha) * (op.total(x) - 1.0), op.teleport(), r)


def _link_product(op: Any, w: Any) -> Any:
    """``K w = alpha M w = G w - (1 - alpha)(1.w) v``, so that ``A = I - K``."""
    return op.axpy(-(1.0 - op.alpha) * op.total(w), op.teleport(), op.matvec(w))


def _system_product(op: Any, w: Any) -> Any:
    """``A w = w - alpha M w`` for any vector ``w`` (one Google-matrix product)."""
    return op.axpy(1.0, w, op.scale(-1.0, _link_product(op, w)))


class RunRecord:
    """Bookkeeping shared by the solvers: per-iteration residuals, the product count,
    the confirmed checks, and the calibration of a cheap residual estimate."""

    def __init__(self, op: Any, tol: float, max_iter: int, criterion: str,
                 callback: Any) -> None:
        self.op = op
        self.tol = tol
        self.max_iter = max_iter
        self.criterion = criterion
        self.callback = callback
        self.matvecs_at_start = op.matvecs
        self.residuals: list[float] = []
        self.checks = 0
        self.failed_checks = 0

    @property
    def iterations(self) -> int:
        return len(self.residuals)

    def record(self, residual: float) -> None:
        self.residuals.append(residual)
        if self.callback is not None:
            self.callback(self.iterations, residual)

    def check(self, x: Any) -> tuple[Any, Any, float]:
        """Clip ``x``, compute its step residual (one product): ``(x, r, ||r||)``.

        The exact PageRank vector is positive; an approximate one may carry rounding-level
        negatives, which a probability vector must not. Clipping happens *before* the
        confirming product, so the returned vector is the one whose residual is reported.
        """
        x = self.op.clipped(x)
        r = step_residual(self.op, x)
        self.checks += 1
        return x, r, self.op.norm(r, self.criterion)

    def finish(self, x: Any, confirmed: float, info: dict[str, Any]) -> SolverOutput:
        residuals = np.asarray(self.residuals, dtype=np.float64)
        if residuals.size:
            residuals[-1] = confirmed  # the last entry is the confirmed (true) residual
        info = {"confirmed_residual": confirmed, "checks": self.checks,
                "failed_checks": self.failed_checks, **info}
        return SolverOutput(x=x, iterations=self.iterations,
                            matvecs=self.op.matvecs - self.matvecs_at_start,
                            residuals=residuals,
                            converged=bool(confirmed < self.tol), info=info)


def _check_restart(restart: Any) -> int:
    if isinstance(restart, bool) or not isinstance(restart, int | np.integer) or restart < 1:
        raise ValueError(f"restart must be a positive integer, not {restart!r}")
    return int(restart)


def _givens(a: float, b: float) -> tuple[float, float]:
    """``(c, s)`` with ``[c s; -s c] [a; b] = [r; 0]``."""
    if b == 0.0:
        return 1.0, 0.0
    h = float(np.hypot(a, b))
    return a / h, b / h


class _LeastSquares:
    r"""``min_y ||c - H y||_2`` for a GMRES cycle's ``(j+1) x j`` matrix ``H``, column by column.

    The first ``k`` columns may be a full ``(k+1) x k`` block (the deflated start of a
    GMRES-DR cycle), factored once with a dense QR; every later column is Hessenberg and
    is reduced by Givens rotations, so each new column costs O(j) on the host and gives
    the least-squares residual norm ``|g_{j+1}|`` without solving.
    """

    def __init__(self, block: np.ndarray, c: np.ndarray, m: int) -> None:
        k = block.shape[1]
        self.k0 = k
        self.q0 = None
        self.r = np.zeros((m + 1, m))
        self.g = np.zeros(m + 1)
        self.g[: k + 1] = c
        if k:
            self.q0, self.r[: k + 1, :k] = np.linalg.qr(block, mode="complete")
            self.g[: k + 1] = self.q0.T @ c
        self.cs = np.zeros(m)
        self.sn = np.zeros(m)
        self.cols = k

    def residual_norm(self) -> float:
        return abs(float(self.g[self.cols]))

    def add(self, col: np.ndarray) -> float:
        """Append column ``j = self.cols`` (entries 0..j+1); the new residual norm."""
        j = self.cols
        col = np.array(col, dtype=np.float64)
        if self.q0 is not None:
            col[: self.k0 + 1] = self.q0.T @ col[: self.k0 + 1]
        for i in range(self.k0, j):  # earlier rotations
            a, b = col[i], col[i + 1]
            col[i], col[i + 1] = self.cs[i] * a + self.sn[i] * b, -self.sn[i] * a + self.cs[i] * b
        c, s = _givens(col[j], col[j + 1])
        self.cs[j], self.sn[j] = c, s
        col[j] = c * col[j] + s * col[j + 1]
        col[j + 1] = 0.0
        self.r[: j + 2, j] = col
        self.g[j], self.g[j + 1] = c * self.g[j], -s * self.g[j]
        self.cols = j + 1
        return abs(float(self.g[j + 1]))

    def solve(self) -> np.ndarray:
        j = self.cols
        return np.linalg.solve(np.triu(self.r[:j, :j]), self.g[:j]) if j else np.zeros(0)


def _harmonic_ritz_basis(hbar: np.ndarray, rho: np.ndarray, k: int) -> np.ndarray | None:
    """Morgan's GMRES-DR restart: orthonormal ``Q`` ((m+1) x (k'+1)) whose first k'
    columns span the k (k' = k or k + 1 to keep a complex pair whole) harmonic Ritz
    vectors of smallest harmonic Ritz value of a full cycle's ``(m+1) x m`` matrix
    ``hbar``, and whose last column is the least-squares residual ``rho``. None when
    the small eigenproblem is singular (then the cycle restarts plainly)."""
    m = hbar.shape[1]
    try:
        h_m = hbar[:m, :m]
        f = np.linalg.solve(h_m.T, np.eye(m)[:, m - 1])
        theta, vecs = np.linalg.eig(h_m + hbar[m, m - 1] ** 2 * np.outer(f, np.eye(m)[m - 1]))
    except np.linalg.LinAlgError:
        return None
    cols: list[np.ndarray] = []
    for i in np.argsort(np.abs(theta)):
        if len(cols) >= k:
            break
        if theta[i].imag == 0.0:
            cols.append(vecs[:, i].real)
        elif theta[i].imag > 0.0:  # a complex pair: its real and imaginary parts
            cols += [vecs[:, i].real, vecs[:, i].imag]
    p = np.zeros((m + 1, len(cols) + 1))
    p[:m, :-1] = np.array(cols).T
    p[:, -1] = rho
    q, tri = np.linalg.qr(p)
    if np.abs(np.diag(tri)).min() <= 1e-12 * np.abs(np.diag(tri)).max():
        return None
    return q


def _arnoldi_column(op: Any, basis: Any, j: int) -> tuple[Any, np.ndarray, float, bool]:
    """One Arnoldi step on ``K = alpha M`` from basis vector ``j``: ``(w, col, w_norm,
    twice)``, ``w`` the new direction orthogonalised against ``basis[: j + 1]``
    (classical Gram-Schmidt, repeated where more than ``_REORTH`` of the norm cancels),
    ``col`` column ``j`` of the Hessenberg matrix of ``A = I - K`` (``j + 2`` entries, the
    last ``-||w||``), ``w_norm`` the norm before orthogonalising, ``twice`` whether it ran
    twice."""
    w = _link_product(op, basis[j])
    w_norm = op.norm(w, "l2")
    v_j = basis[: j + 1]
    h = op.project(v_j, w)
    op.add_combination(v_j, h, w, -1.0)
    h_next = op.norm(w, "l2")
    twice = h_next < _REORTH * w_norm
    if twice:  # cancellation: orthogonalise once more
        h2 = op.project(v_j, w)
        op.add_combination(v_j, h2, w, -1.0)
        h += h2
        h_next = op.norm(w, "l2")
    # column j of the matrix of A = I - K from that of K
    col = np.zeros(j + 2)
    col[: j + 1] = -h
    col[j] += 1.0
    col[j + 1] = -h_next
    return w, col, w_norm, bool(twice)


@register("gmres")
def gmres(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
          callback: Any = None, restart: int = DEFAULT_RESTART,
          deflate: int | None = None) -> SolverOutput:
    r"""Restarted GMRES(m) on ``(I - alpha M) x = (1 - alpha) v`` (Saad & Schultz 1986),
    optionally with deflated restarting, GMRES-DR(m, k) (Morgan 2002).

    Each cycle builds an orthonormal basis ``V`` of a Krylov space of the residual by
    Arnoldi on ``K = alpha M`` (the same Krylov space as ``A = I - K``; the Hessenberg
    matrix of ``A`` is ``I - H_K``, and the cancellation test of Gram-Schmidt measures
    ``K``'s new direction, not the identity's): classical Gram-Schmidt, repeated where
    more than 30% of the norm cancels ("twice is enough"), as accurate as modified
    Gram-Schmidt with two matrix-vector passes over ``V`` instead of one dot product
    per basis vector (each a host round trip on a GPU). Givens rotations keep the small
    least-squares problem triangular on the host, so the residual norm after each
    iteration is known without forming ``x``.

    Plain restarts throw the space away; with many eigenvalues of ``M`` near the unit
    circle (alpha near 1, a web graph's closed components) that loses what the cycle
    learnt. GMRES-DR keeps the ``deflate`` harmonic Ritz vectors of smallest harmonic
    Ritz value (the slowest modes) and the residual as the start of the next cycle,
    which then adds ``restart - deflate`` new vectors.

    Parameters
    ----------
    restart : int, default DEFAULT_RESTART
        Basis size m. Memory: ``(m + 1) n`` float64 on the device.
    deflate : int, optional
        Harmonic Ritz vectors kept across restarts (k, 0 <= k <= m - 2); 0 = plain
        GMRES(m), whose every restart recomputes the residual with one product.
        Default ``2 m // 5`` (20 for m = 50).

    Returns
    -------
    SolverOutput
        ``iterations``: Krylov (Arnoldi) iterations, at most ``max_iter``. ``matvecs``:
        one per iteration, plus the initial residual, plus one per confirming check
        (plain GMRES: one per cycle, which also starts the next cycle; GMRES-DR carries
        the residual in the basis and checks only when the estimate is below ``tol``).
        ``residuals[k]``: the *estimated* power residual after iteration k+1: the
        least-squares residual (a 2-norm) times the ratio of the criterion norm to the
        2-norm of the residual at the cycle's start; the last entry is the confirmed
        residual. A cycle ends early when the estimate drops below ``tol``; the
        confirming product decides.
    """
    m = _check_restart(restart)
    if deflate is None:
        deflate = 2 * m // 5
    if isinstance(deflate, bool) or not isinstance(deflate, int | np.integer) \
            or not 0 <= deflate <= max(m - 2, 0):
        raise ValueError(f"deflate must be an integer in [0, restart - 2], not {deflate!r}")
    run = RunRecord(op, tol, max_iter, criterion, callback)
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    xp = op.xp
    x, r, res = run.check(x0)
    cycles = deflations = breakdowns = reorthogonalisations = 0
    basis = xp.empty((m + 1, op.n), dtype=np.float64)
    hbar = np.zeros((m + 1, m))  # the cycle's (unrotated) matrix: A V_j = V_{j+1} hbar
    c = np.zeros(m + 1)  # the cycle's start residual in the basis V
    kept = 0  # deflated vectors at the start of the cycle (basis holds kept + 1)
    fresh = True  # the cycle starts from the true residual r
    while res >= tol and run.iterations < max_iter:
        cycles += 1
        if fresh:
            beta = op.norm(r, "l2")
            xp.copyto(basis[0], r)
            op.scale(1.0 / beta, basis[0])
            hbar[:] = 0.0
            c[:] = 0.0
            c[0] = beta
            kept = 0
            ratio = res / beta  # criterion norm per unit 2-norm of the residual
        lsq = _LeastSquares(hbar[: kept + 1, :kept], c[: kept + 1], m)
        estimate = lsq.residual_norm() * ratio
        breakdown = False
        for j in range(kept, min(m, kept + max_iter - run.iterations)):
            w, col, w_norm, twice = _arnoldi_column(op, basis, j)
            h_next = -col[j + 1]
            reorthogonalisations += twice
            hbar[: j + 2, j] = col
            estimate = lsq.add(col) * ratio
            run.record(estimate)
            # happy breakdown: the Krylov space is invariant, the solution lies in it
            breakdown = h_next <= 1e-14 * w_norm
            if breakdown:
                breakdowns += 1
                break
            xp.copyto(basis[j + 1], w)
            op.scale(1.0 / h_next, basis[j + 1])
            if estimate < tol:
                break
        k = lsq.cols
        y = lsq.solve()
        x = op.add_combination(basis[:k], y, op.copy(x))
        full = k == m and not breakdown
        if estimate < tol or breakdown or not full or not deflate \
                or run.iterations >= max_iter:
            x_new, r, res = run.check(x)
            if res >= tol and estimate < tol:
                run.failed_checks += 1
            x, fresh = x_new, True
            continue
        # GMRES-DR: the next cycle starts from the harmonic Ritz vectors and the residual
        rho = c - hbar @ y
        q = _harmonic_ritz_basis(hbar, rho, deflate)
        if q is None:
            x, r, res = run.check(x)
            fresh = True
            continue
        deflations += 1
        kept = q.shape[1] - 1
        hbar_new = q.T @ hbar @ q[:m, :kept]
        xp.copyto(basis[: kept + 1], op.combine_rows(q.T, basis))
        c[:] = 0.0
        c[: kept + 1] = q.T @ rho
        hbar[:] = 0.0
        hbar[: kept + 1, :kept] = hbar_new
        # recalibrate the estimate on the residual the basis carries (no product)
        r_now = op.add_combination(basis[: kept + 1], c[: kept + 1], xp.zeros(op.n))
        ratio = op.norm(r_now, criterion) / float(np.linalg.norm(c))
        fresh = False
    return run.finish(x, res, {"restart": m, "deflate": int(deflate), "cycles": cycles,
                               "deflations": deflations, "breakdowns": breakdowns,
                               "reorthogonalisations": reorthogonalisations})


@register("bicgstab")
def bicgstab(op: Any, x0: Any, *, tol: float, max_iter: int, criterion: str,
             callback: Any = None) -> SolverOutput:
    r"""BiCGSTAB on ``(I - alpha M) x = (1 - alpha) v`` (van der Vorst 1992).

    Two products per iteration. The recurrence carries the residual vector
    ``r = b - A x``, the power method's step residual of the iterate, so its criterion
    norm is known every iteration without another product. When it drops below ``tol``
    one explicit product confirms it; if the drifted recurrence was too optimistic, or
    the method breaks down (a zero inner product), it restarts from the iterate with
    that true residual.

    Returns
    -------
    SolverOutput
        ``iterations``: BiCGSTAB iterations (two products each), at most ``max_iter``.
        ``matvecs``: ``2 * iterations`` plus the initial residual and the confirming
        products. ``residuals[k]``: the criterion norm of the recurrence residual after
        iteration k+1; the last entry is the confirmed one.
    """
    run = RunRecord(op, tol, max_iter, criterion, callback)
    if max_iter == 0:
        return SolverOutput(x=x0, iterations=0, matvecs=0, residuals=np.zeros(0),
                            converged=False)
    xp = op.xp
    x, r, res = run.check(x0)
    restarts = 0
    progress = True
    while res >= tol and run.iterations < max_iter and progress:
        restarts += 1
        started_at = run.iterations
        shadow = op.copy(r)  # r̂_0, fixed for this run
        rho = a = omega = 1.0
        p = xp.zeros_like(r)
        v = xp.zeros_like(r)
        estimate = res
        while run.iterations < max_iter:
            rho_next = op.dot(shadow, r)
            if rho_next == 0.0 or omega == 0.0:
                break  # breakdown: restart from the true residual
            beta = (rho_next / rho) * (a / omega)
            rho = rho_next
            op.axpy(1.0, r, op.scale(beta, op.axpy(-omega, v, p)))
            v = _system_product(op, p)
            sv = op.dot(shadow, v)
            if sv == 0.0:
                break
            a = rho / sv
            s = op.axpy(-a, v, op.copy(r))
            t = _system_product(op, s)
            tt = op.dot(t, t)
            omega = op.dot(t, s) / tt if tt > 0.0 else 0.0
            op.axpy(omega, s, op.axpy(a, p, x))
            r = op.axpy(-omega, t, op.copy(s))
            estimate = op.norm(r, criterion)
            run.record(estimate)
            if estimate < tol or not np.isfinite(estimate):
                break
        x, r, res = run.check(x)
        if res >= tol and estimate < tol:
            run.failed_checks += 1
        # a breakdown on the very first iteration from a true residual would repeat
        progress = run.iterations > started_at
    return run.finish(x, res, {"restarts": restarts})
