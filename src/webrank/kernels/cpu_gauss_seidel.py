r"""CPU kernels: Gauss-Seidel sweeps over the PageRank linear system, in row blocks
(compiled: ``native/sweep.cpp``).

The system is ``(I - alpha M) x = (1 - alpha) v`` with ``M = P^T + d 1_D^T`` (see
:mod:`webrank.solvers.krylov`). Row ``i`` of ``M`` is the in-link row ``i`` of the CSR
(``val(j, i) = w_ji / out_j``) plus ``d_i`` in every dangling column.

**Dangling rows lumped.** A dangling node has no out-link, so no row reads its value:
only its mass ``m_D = sum_{i in D} x_i`` does. The sweeps therefore visit the other
("live") nodes only, and ``m_D`` follows from them exactly: summing the dangling rows,

.. math::

    m_D = \frac{\alpha\, c \cdot u + (1 - \alpha)\, v(D)}{1 - \alpha\, d(D)},

with ``c_j`` node ``j``'s links into dangling rows (valued as the sums read them) and
``v(D)``, ``d(D)`` the distributions' totals there (Lee, Golub & Zenios 2007 lump the
dangling nodes the same way). The sweep returns ``c . u`` of its output; the solver
(:mod:`webrank.solvers.gauss_seidel`) solves the dangling rows once, for the answer and
at each check. On the shared web graphs this drops 24-58% of the rows and 5-19% of the
links from every sweep, and the rows from every mixing. A sweep visits the live nodes in
order and solves row ``i`` for ``x_i``:

.. math::

    x_i \leftarrow \frac{\alpha \bigl(\sum_{j \to i,\ j \ne i} val(j,i)\, x_j
        + d_i\, m_D\bigr) + (1 - \alpha) v_i}{1 - \alpha\, val(i,i)}.

**Blocks.** The rows are cut into ``B`` contiguous blocks of about equal work, swept at
once, one per thread. Inside a block a row reads the values its block has already
written this sweep (Gauss-Seidel); across blocks it reads the values of the sweep's start
(Jacobi). ``m_D`` is the one of the sweep's start: updating it row by row would chain
every row's update to the one before it (the new one is summed apart, for the next
sweep). ``B = 1`` is the classic sequential sweep. Either way it is a splitting of the
nonsingular M-matrix ``I - alpha M`` into a part with a positive diagonal and a
non-negative rest, so sweeps converge for every alpha < 1 (Varga, Matrix Iterative
Analysis, Thm 3.13); more blocks converge a little slower. A block's result depends only
on its rows and the sweep's start, and the partial sums are added in block order, so the
answer is the same bits whatever the thread count.

**Layout.** The sweep updates ``x`` and the gathered vector ``u = x (.) scale``
(``1/out-degree`` unweighted, 1 weighted, whose per-link values carry the scaling) in
place: a link from the row's own block reads ``u`` as the sweep left it, which is
Gauss-Seidel. A link from another block must read that block's value at the sweep's
start: :func:`block_layout` points it past the end of ``u``, into the *halo*, the values
``u[halo]`` of the nodes read across blocks, copied before each sweep (a few percent of
the nodes on web graphs, whose links mostly stay near their rows). ``u`` and its halo
are one buffer, so a row's links are one loop whichever block they come from (two loops,
own block first, made cnr-2000's whole solve's sweeps 3.8-4.4 ms against 3.3 ms on 2
threads: each short loop's exit is a mispredicted branch). A row with an odd number of
links gets one more, to a *zero slot* at the buffer's end, so the two interleaved sums
end without a branch for an odd last link (cnr-2000, median row 2 links: 5-8% per sweep,
measured interleaved). Per row the sweep streams its links and six numbers
(``indptr``, ``row_scale`` in float32, ``scale``, ``mass_weight``, ``x``, ``u``); a row's
diagonal ``alpha M_ii`` is folded into ``row_scale = 1 / (1 - alpha M_ii)``:

.. math::

    x_i \leftarrow s_i \bigl(\alpha \textstyle\sum_{j \to i} val(j,i)\, u_j
        + \alpha d_i m_D + (1 - \alpha) v_i\bigr) - (s_i - 1)\, x_i^{old},
    \qquad s_i = \frac{1}{1 - \alpha M_{ii}},

the sum taken over every in-link, the row's self-loop (read at its old value) included.
One in-place vector and one loop per row (rather than two buffers and two loops) made
the one-thread sweep of cnr-2000 7.6 -> 5.3 ms: the row count, not the link count,
bounds the sweep.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from webrank.kernels.cpu_anderson import NO_RECORD, Record
from webrank.kernels.criteria import CRITERION_CODE
from webrank.kernels.native import lib, num_threads


class BlockLayout(NamedTuple):
    """A graph's in-links for the sweep (:func:`block_layout`): links across blocks point
    into the halo, and each row has an even number of links."""

    bounds: np.ndarray  # int64, blocks + 1 row offsets
    indptr: np.ndarray  # int64: row i's links are indptr[i]:indptr[i + 1], an even count
    indices: np.ndarray  # source ids j < n from i's own block, n + (position in halo)
    #                      from another, the zero slot n + halo.size for a padding link
    vals: np.ndarray  # float64 per-link values (weighted graphs; 0 padding), else empty
    halo: np.ndarray  # int64: the nodes read across blocks (sorted ids)

    @property
    def buffer_size(self) -> int:
        """Length of the sweep's ``u``: the nodes, the halo, the zero slot."""
        return self.indptr.size + self.halo.size


#: a row costs the sweep about as much as this many links (its loop's mispredicted exit,
#: six streamed numbers): blocks are cut to equal ``links + ROW_COST * rows`` (16 to 32
#: measured alike; docs/solvers.md, Gauss-Seidel).
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


class SweptSystem(NamedTuple):
    """The rows a sweep solves, in the sweep's layout (:func:`swept_system`)."""

    layout: BlockLayout
    self_weight: np.ndarray  # float64 M_ii of each kept row (its self-loops' values)
    mass_weight: np.ndarray  # float64 c: each kept node's links into the dropped rows


def swept_system(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                 keep: np.ndarray, self_value: np.ndarray, blocks: int) -> SweptSystem:
    """The sweep's system over the rows ``keep`` (ascending node ids) of an in-link CSR,
    renumbered ``0..keep.size``: each kept row's links from kept nodes, in
    :func:`block_layout`'s layout, its self-loops' total value ``M_ii`` and each kept
    node's links into the other rows (their values summed: ``c`` of the module
    docstring). A link from a node not kept (a dangling node, through a zero-weight link)
    carries nothing and is dropped.

    ``vals``: float64 per-link values (empty: unweighted, a link from ``j`` then weighs
    ``self_value``'s entry for a self-loop and 1 into a dropped row). Every pass over the
    links is compiled, in parallel over row blocks but for the links into dropped rows
    (one ordered pass: the sums' bits do not depend on the thread count).
    """
    n = indptr.size - 1
    compact = np.full(n, -1, dtype=np.int64)
    compact[keep] = np.arange(keep.size)
    threads = num_threads()
    kept = np.empty(keep.size, dtype=np.int64)  # each kept row's links from kept nodes
    lib.sweep_kept_counts(indptr, indices, compact, keep, kept, threads)
    live_ptr = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(kept, out=live_ptr[1:])
    bounds = block_bounds(live_ptr, blocks)
    mark = np.zeros(keep.size, dtype=np.uint8)
    if bounds.size > 2:
        lib.sweep_mark_across(indptr, indices, compact, keep, bounds, mark, threads)
    halo = np.flatnonzero(mark).astype(np.int64)
    zero_slot = keep.size + halo.size
    slot = np.cumsum(mark, dtype=np.int64) + (keep.size - 1)  # n + place in the halo
    padded_ptr = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(kept + (kept & 1), out=padded_ptr[1:])
    dtype = np.int32 if zero_slot <= np.iinfo(np.int32).max else np.int64
    padded = np.empty(int(padded_ptr[-1]), dtype=dtype)
    padded_vals = np.zeros(padded.size if vals.size else 0)
    self_weight = np.empty(keep.size)
    lib.sweep_fill_layout(indptr, indices, vals, compact, keep, bounds, slot, padded_ptr,
                          zero_slot, self_value, padded, padded_vals, self_weight, threads)
    mass_weight = np.zeros(keep.size)
    if keep.size < n:
        lib.sweep_links_into(indptr, indices, vals, compact, np.flatnonzero(compact < 0),
                             mass_weight)
    layout = BlockLayout(bounds, padded_ptr, padded, padded_vals, halo)
    return SweptSystem(layout, self_weight, mass_weight)


def block_layout(indptr: np.ndarray, indices: np.ndarray, vals: np.ndarray,
                 blocks: int) -> BlockLayout:
    """The in-link CSR for :func:`block_sweep`: ``blocks`` row blocks of about equal work
    (:func:`block_bounds`), each link from another block pointing into the halo, each
    row with an odd number of links padded with a link to the zero slot (see the module
    docstring); every row kept (:func:`swept_system` keeps some).

    ``vals``: float64 per-link values of a weighted graph (empty: unweighted)."""
    n = indptr.size - 1
    return swept_system(indptr, indices, vals, np.arange(n), np.zeros(n), blocks).layout


def inner_link_share(layout: BlockLayout) -> float:
    """The share of links read inside their own block (Gauss-Seidel, not Jacobi)."""
    n = layout.indptr.size - 1
    links = np.count_nonzero(layout.indices != layout.buffer_size - 1)  # not padding
    return int(np.count_nonzero(layout.indices < n)) / max(1, int(links))


def block_sweep(layout: BlockLayout, scale: np.ndarray, v: np.ndarray, d: np.ndarray,
                mass_weight: np.ndarray, row_scale: np.ndarray, alpha: float, dm: float,
                criterion: str, x: np.ndarray, u: np.ndarray, partial: np.ndarray,
                record: Record | None = None) -> tuple[float, float]:
    """One sweep over ``x`` and ``u[:n] = x (.) scale`` (float64, both in place); returns
    ``(change, c . u_new)``: the ``criterion`` norm of ``x_new - x_old`` and the new
    values' links into the lumped dangling rows (see the module docstring).

    Parameters
    ----------
    layout : :func:`block_layout` of the live rows' in-link CSR (ids of live nodes).
    scale : float64 ``1 / out_degree`` unweighted; ones, weighted.
    v, d : teleport and dangling distributions on the live nodes; length 1 means uniform
        ``1/n`` (``n`` all nodes).
    mass_weight : float64 ``c``: each live node's links into the dangling rows.
    row_scale : ``1 / (1 - alpha M_ii)`` with ``M_ii = self_loop_weights``, float32: it
        scales a row's correction, not the system (any positive value has the same fixed
        point), so rounding it costs nothing in accuracy.
    dm : the dangling mass ``m_D`` of the sweep's start.
    criterion : "l1", "l2" or "linf".
    u : float64 of ``layout.buffer_size``: ``x (.) scale``, then room for the halo
        (filled here from ``u[:n]``), then the zero slot (0).
    partial : float64 scratch of (blocks, 2).
    record : an Anderson mixer's :class:`~webrank.kernels.cpu_anderson.Record` that
        ``x_new`` is written to as well.
    """
    crit = CRITERION_CODE[criterion]
    n = x.size
    if layout.halo.size:  # the sweep's start, for reads across blocks
        np.take(u[:n], layout.halo, out=u[n:-1])
    rec = NO_RECORD if record is None else record
    lib.block_sweep(layout.bounds, layout.indptr, layout.indices, layout.vals, scale, v, d,
                    mass_weight, row_scale, float(alpha), float(dm), crit, x, u, partial,
                    record is not None, rec.F, rec.G, int(rec.slot), num_threads())
    blocks = layout.bounds.size - 1
    change = partial[:blocks, 0].max() if crit == 2 else partial[:blocks, 0].sum()
    return (float(np.sqrt(change) if criterion == "l2" else change),
            float(partial[:blocks, 1].sum()))
