r"""CPU kernels: Gauss-Seidel sweeps over the PageRank linear system, in row blocks, with
Numba.

The system is ``(I - alpha M) x = (1 - alpha) v`` with ``M = P^T + d 1_D^T`` (see
:mod:`webrank.solvers.krylov`). Row ``i`` of ``M`` is the in-link row ``i`` of the CSR
(``val(j, i) = w_ji / out_j``) plus ``d_i`` in every dangling column. A sweep visits the
nodes in order and solves row ``i`` for ``x_i``:

.. math::

    x_i \leftarrow \frac{\alpha \bigl(\sum_{j \to i,\ j \ne i} val(j,i)\, x_j
        + d_i\, (m_D - [i \in D]\, x_i)\bigr) + (1 - \alpha) v_i}
        {1 - \alpha\, (val(i,i) + [i \in D]\, d_i)}.

**Blocks.** The rows are cut into ``B`` contiguous blocks of about equal work, swept at
once, one per thread. Inside a block a row reads the values its block has already
written this sweep (Gauss-Seidel); across blocks it reads the values of the sweep's start
(Jacobi). The dangling mass ``m_D`` is the one of the sweep's start (each dangling row's
own term taken implicitly, in the diagonal): updating it row by row would chain every
row's update to the one before it, and the add latency, not memory, would bound the
sweep (the new mass is summed apart, for the next sweep). ``B = 1`` is the
classic sequential sweep. Either way it is a splitting of the nonsingular M-matrix
``I - alpha M`` into a part with a positive diagonal and a non-negative rest, so sweeps
converge for every alpha < 1 (Varga, Matrix Iterative Analysis, Thm 3.13); more blocks
converge a little slower. A block's result depends only on its rows and the sweep's
start, and the partial sums are added in block order, so the answer is the same bits
whatever the thread count.

**Layout.** The sweep updates ``x`` and the gathered vector ``u = x (.) scale``
(``1/out-degree`` unweighted, 1 weighted, whose per-link values carry the scaling) in
place: a link from the row's own block reads ``u`` as the sweep left it, which is
Gauss-Seidel. A link from another block must read that block's value at the sweep's
start, so :func:`block_layout` orders each row's links as those from its own block
first, then the rest, ``inner[i]`` apart, and points the rest into the *halo*: the
values ``u[halo]`` of the nodes read across blocks, copied before each sweep (a few
percent of the nodes on web graphs, whose links mostly stay near their rows). One
block (the classic sweep) is the graph's own CSR. Per row the sweep streams its links
and six numbers (``indptr``, ``inner``, ``row_scale`` in float32, ``scale``, ``x``,
``u``); a row's diagonal ``alpha M_ii`` is folded into ``row_scale = 1 / (1 - alpha
M_ii)``:

.. math::

    x_i \leftarrow s_i \bigl(\alpha \textstyle\sum_{j \to i} val(j,i)\, u_j
        + \alpha d_i m_D + (1 - \alpha) v_i\bigr) - (s_i - 1)\, x_i^{old},
    \qquad s_i = \frac{1}{1 - \alpha M_{ii}},

the sum taken over every in-link, the row's self-loop (read at its old value) included.
One in-place vector and one loop per row (rather than two buffers and two loops) made
the one-thread sweep of cnr-2000 7.6 -> 5.3 ms: the exit of each short row loop is a
mispredicted branch, and the row count, not the link count, then bounds the sweep.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from webrank.kernels.cpu import CRITERION_CODE, HAVE_NUMBA

if HAVE_NUMBA:
    from numba import njit, prange

    from webrank.kernels.cpu_numba import add_residual, range_sum
else:  # pragma: no cover - exercised only without numba

    def njit(*_args, **_kwargs):
        return lambda f: f

    prange = range


class BlockLayout(NamedTuple):
    """A graph's in-links, each row's from its own block first (:func:`block_layout`)."""

    bounds: np.ndarray  # int64, blocks + 1 row offsets
    indptr: np.ndarray  # the graph's: row i's links are indptr[i]:indptr[i + 1]
    inner: np.ndarray  # int32, n: the first inner[i] come from i's own block (ids)
    indices: np.ndarray  # ... the rest from other blocks: positions in halo
    vals: np.ndarray  # float64 per link (weighted graphs), else empty
    halo: np.ndarray  # the nodes read across blocks (sorted ids)


@njit(parallel=True, cache=True)
def _split(indptr, indices, vals, bounds):  # pragma: no cover - compiled
    """``(inner, indices, vals)`` of :class:`BlockLayout` with node ids in both parts,
    blocks in parallel (a row's links keep their order in each part)."""
    n = indptr.size - 1
    weighted = vals.size > 0
    inner_count = np.empty(n, dtype=np.int32)
    out_idx = np.empty_like(indices)
    out_vals = np.empty_like(vals)
    for b in prange(bounds.size - 1):
        lo, hi = bounds[b], bounds[b + 1]
        for i in range(lo, hi):
            a = indptr[i]
            for own in (True, False):
                for k in range(indptr[i], indptr[i + 1]):
                    j = indices[k]
                    if (lo <= j < hi) == own:
                        out_idx[a] = j
                        if weighted:
                            out_vals[a] = vals[k]
                        a += 1
                if own:
                    inner_count[i] = a - indptr[i]
    return inner_count, out_idx, out_vals


@njit(parallel=True, cache=True, fastmath=False)
def _block_sweep(bounds, indptr, inner, indices, vals, scale, v, d, dangling, row_scale,
                 alpha, dm, crit, x, u, u_halo, partial):  # pragma: no cover - compiled
    # a uniform v or d is one number, read at index 0 (stride 0): no branch per row
    v_stride = 0 if v.size == 1 else 1
    d_stride = 0 if d.size == 1 else 1
    tele_scale = 1.0 - alpha
    dist_scale = alpha * dm
    for b in prange(bounds.size - 1):
        change = 0.0
        mass = 0.0  # of the block's new dangling values (for the next sweep, not this one)
        for i in range(bounds[b], bounds[b + 1]):
            old = x[i]
            k = indptr[i]
            split = k + inner[i]
            acc = (range_sum(indices, vals, u, k, split)
                   + range_sum(indices, vals, u_halo, split, indptr[i + 1]))
            s = np.float64(row_scale[i])
            new = ((alpha * acc + dist_scale * d[i * d_stride] + tele_scale * v[i * v_stride])
                   * s - (s - 1.0) * old)
            x[i] = new
            u[i] = new * scale[i]
            mass += new if dangling[i] else 0.0
            change = add_residual(change, abs(new - old), crit)
        partial[b, 0] = change
        partial[b, 1] = mass


def self_loop_weights(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                      inv_out: np.ndarray) -> np.ndarray:
    """``M_ii`` from links only: ``val(i, i)`` of each node's self-loop, 0 without one."""
    n = indptr.size - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    loop = indices == rows
    out = np.zeros(n)
    w = vals[loop] if vals.size else inv_out[rows[loop]]
    np.add.at(out, rows[loop], w)
    return out


#: a row costs the sweep about as much as this many links (its loop's mispredicted exit,
#: six streamed numbers): blocks are cut to equal ``links + ROW_COST * rows``. Measured
#: on 2 threads: cnr-2000's 2-block sweep 3.8 ms cut by links alone, 3.2 ms with 16;
#: web-NotreDame 2.5 (8) -> 2.4; 16-32 were within noise of each other.
ROW_COST = 16


def block_bounds(indptr: np.ndarray, blocks: int) -> np.ndarray:
    """Row offsets (int64, ``blocks + 1``) cutting the rows into ``blocks`` contiguous
    blocks of about equal work, ``links + ROW_COST * rows`` (at most ``n`` blocks)."""
    n = indptr.size - 1
    blocks = max(1, min(int(blocks), n))
    work = indptr + ROW_COST * np.arange(n + 1)
    # (ascending and within 0..n: the work is, and ends at the last row)
    cuts = np.searchsorted(work, np.linspace(0, work[-1], blocks + 1)).astype(np.int64)
    cuts[0], cuts[-1] = 0, n
    return cuts


def block_layout(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                 blocks: int) -> BlockLayout:
    """The in-link CSR ordered for :func:`block_sweep`: ``blocks`` row blocks of about
    equal links (:func:`block_bounds`), each row's links from its own block first, the
    rest pointing into the halo (see the module docstring).

    ``vals``: float64 per-link values of a weighted graph (empty: unweighted)."""
    bounds = block_bounds(indptr, blocks)
    if bounds.size == 2:  # one block: every link is its own block's
        return BlockLayout(bounds, indptr, np.diff(indptr).astype(np.int32), indices, vals,
                           np.zeros(0, dtype=np.int64))
    inner, ordered, ordered_vals = _split(indptr, indices, vals, bounds)
    row_len = np.diff(indptr)
    across = np.arange(ordered.size) >= np.repeat(indptr[:-1] + inner, row_len)
    sources = ordered[across]
    halo = np.unique(sources).astype(np.int64)
    ordered[across] = np.searchsorted(halo, sources).astype(ordered.dtype)
    return BlockLayout(bounds, indptr, inner, ordered, ordered_vals, halo)


def inner_link_share(layout: BlockLayout) -> float:
    """The share of links read inside their own block (Gauss-Seidel, not Jacobi)."""
    return int(layout.inner.sum(dtype=np.int64)) / max(1, int(layout.indptr[-1]))


def block_sweep(layout: BlockLayout, scale: np.ndarray, v: np.ndarray, d: np.ndarray,
                dangling: np.ndarray, row_scale: np.ndarray, alpha: float, dm: float,
                criterion: str, x: np.ndarray, u: np.ndarray, u_halo: np.ndarray,
                partial: np.ndarray) -> tuple[float, float]:
    """One sweep over ``x`` and ``u = x (.) scale`` (float64, both in place); returns
    ``(change, dangling mass)``: the ``criterion`` norm of ``x_new - x_old`` and the
    mass of ``x_new`` on the dangling nodes.

    Parameters
    ----------
    layout : :func:`block_layout` of the in-link CSR.
    scale : float64 ``1 / out_degree`` (0 for dangling nodes), unweighted; ones, weighted.
    v, d : teleport and dangling distributions; length 1 means uniform ``1/n``.
    dangling : bool mask of dangling nodes.
    row_scale : ``1 / (1 - alpha M_ii)`` with ``M_ii = self_loop_weights + [dangling] d_i``,
        float32: it scales a row's correction, not the system (any positive value
        has the same fixed point), so rounding it costs nothing in accuracy.
    dm : dangling mass of ``x`` on entry.
    criterion : "l1", "l2" or "linf".
    u_halo : float64 scratch of ``layout.halo.size`` (filled here from ``u``).
    partial : float64 scratch of (blocks, 2).
    """
    crit = CRITERION_CODE[criterion]
    if layout.halo.size:
        np.take(u, layout.halo, out=u_halo)  # the sweep's start, for reads across blocks
    _block_sweep(layout.bounds, layout.indptr, layout.inner, layout.indices, layout.vals,
                 scale, v, d, dangling, row_scale, float(alpha), float(dm), crit, x, u,
                 u_halo, partial)
    blocks = layout.bounds.size - 1
    change = partial[:blocks, 0].max() if crit == 2 else partial[:blocks, 0].sum()
    return (float(np.sqrt(change) if criterion == "l2" else change),
            float(partial[:blocks, 1].sum()))
