"""Propagation blocking: the in-link CSR re-laid out as destination partitions × source chunks.

The pull step of PageRank (``y[i] = sum over j -> i of xs[j]``) reads the gathered
vector ``xs`` at random: once ``xs`` outgrows the cache, every 4-byte read costs a 32-byte
sector of DRAM traffic, and even while it fits in L2 every read is an L2 transaction.
Propagation blocking (Beamer, Asanović, Patterson, "Reducing PageRank Communication via
Propagation Blocking", IPDPS 2017) and its partition-centric form (Lakhotia, Kannan,
Prasanna, "Accelerating PageRank using Partition-Centric Processing", USENIX ATC 2018)
turn those random reads into streams:

* the rows (destinations) are cut into **partitions** of at most ``part_rows_max`` rows,
  so that one partition's sums fit in fast memory (a GPU block's shared memory, a CPU
  core's L2), balanced by in-link count;
* the sources are cut into **chunks** of ``2**chunk_bits`` consecutive ids, so that one
  chunk's slice of ``xs`` fits in fast memory too;
* every in-link ``j -> i`` becomes one **entry** of block ``(c, p)`` = (chunk of j,
  partition of i). Entries are stored chunk-major: block ``(c, p)`` holds entries
  ``blk_ptr[c * P + p] : blk_ptr[c * P + p + 1]``, with the source and the destination as
  16-bit offsets inside their chunk and partition (``src_local``, ``dst_local``: 4 bytes
  per link instead of the CSR's 4-byte index, and no row pointers to read).

One PageRank step is then two streaming phases:

1. **scatter** — for each chunk c: load ``xs`` of the chunk into fast memory, and write
   ``msg[k] = xs[c * 2**chunk_bits + src_local[k]]`` for all of the chunk's entries (one
   contiguous range): 2 bytes read and 4 written per link, in order;
2. **gather** — for each partition p: zero its sums in fast memory, add ``msg[k]`` at
   ``dst_local[k]`` for the entries of blocks ``(0, p), (1, p), ...`` (ranges of about
   ``blk_ptr``'s average block size), then finish the partition's rows: 4 + 2 bytes read
   per link.

So a step moves about 12 bytes per link in float32 (20 in float64), every byte in a
sequential stream, instead of a 4-byte index plus a 32-byte random sector. The layout of
a static graph is built once. It is also the unit of work beyond one GPU: a layout covers
the rows ``row_begin:row_end`` of the graph with sources from all ``n_src`` nodes, so a
GPU (or a pass of an out-of-core run) holds the layout of its own row range.

:func:`plan_blocks` works on NumPy or CuPy row pointers (only the partition bounds come
back to the host); :func:`build_blocked` is the NumPy reference construction (the GPU backend
builds the same layout with CUDA kernels, :mod:`webrank.kernels.cuda_blocked`);
:func:`blocked_propagate` is the reference step the fast kernels are tested against.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.arrays import array_module, distinct

__all__ = [
    "BlockPlan",
    "BlockedLayout",
    "blocked_propagate",
    "build_blocked",
    "plan_blocks",
]

#: local ids are 16-bit: at most this many rows per partition and sources per chunk
MAX_LOCAL = 1 << 16
#: chunk sizes stay between 2**6 and 2**16 sources
MIN_CHUNK_BITS, MAX_CHUNK_BITS = 6, 16
#: target average entries per (chunk, partition) block: with fewer, the gather's reads of
#: each block waste part of their first and last 32-byte sectors
BLOCK_ENTRIES = 128


def _host(a: Any) -> np.ndarray:
    return a.get() if array_module(a) is not np else np.asarray(a)


@dataclass(frozen=True)
class BlockPlan:
    """The shape of a blocked layout, decided before any entry is moved.

    Attributes
    ----------
    row_begin, row_end : int
        Rows (destination node ids) of the graph covered: ``row_begin <= i < row_end``.
    n_src : int
        Number of source nodes (ids ``0..n_src-1``: the whole graph's nodes).
    part_ptr : ndarray of int64, shape (P + 1,)
        Partition p holds rows ``part_ptr[p] <= i < part_ptr[p + 1]`` (global ids, at most
        :data:`MAX_LOCAL` rows each), on the host.
    chunk_bits : int
        Chunk c holds sources ``c << chunk_bits <= j < (c + 1) << chunk_bits``.
    tile_entries : int
        Scatter work is cut into tiles of at most this many entries (never across chunks).
    """

    row_begin: int
    row_end: int
    n_src: int
    part_ptr: np.ndarray
    chunk_bits: int
    tile_entries: int

    @property
    def num_parts(self) -> int:
        """Number of destination partitions P."""
        return int(self.part_ptr.size - 1)

    @property
    def num_chunks(self) -> int:
        """Number of source chunks C."""
        return max(1, -(-self.n_src // (1 << self.chunk_bits)))

    @property
    def part_rows_max(self) -> int:
        """Rows of the largest partition."""
        return int(np.diff(self.part_ptr).max(initial=0))


def plan_blocks(indptr: Any, *, n_src: int, row_begin: int = 0, row_end: int | None = None,
                part_rows_max: int, chunk_bits_max: int = 14, workers: int = 1,
                block_entries: int = BLOCK_ENTRIES,
                searchsorted: Callable[[Any, np.ndarray], np.ndarray] | None = None
                ) -> BlockPlan:
    """Partitions and chunk size for the rows ``row_begin:row_end`` of an in-link CSR.

    Parameters
    ----------
    indptr : ndarray (NumPy or CuPy) of int, shape (n_rows + 1,)
        Row pointers of the whole in-link CSR.
    n_src : int
        Number of source nodes (the graph's n).
    row_begin, row_end : int
        Row range to lay out (default: all rows).
    part_rows_max : int
        Most rows in one partition (what fits in fast memory; at most 65,536).
    chunk_bits_max : int, default 14
        Largest chunk: ``2**chunk_bits_max`` sources (its slice of ``xs`` must fit in fast
        memory; 14 is 64 KiB of float32).
    workers : int, default 1
        Parallel workers (GPU multiprocessors, CPU threads): at least two partitions and
        four scatter tiles per worker, so that none idles.
    block_entries : int, default 128
        Wanted average entries per (chunk, partition) block; sets the chunk size.
    searchsorted : callable, optional
        ``searchsorted(ptr, targets)``: the first position in the row pointers ``ptr``
        (a slice of ``indptr``, on its device) of each host int64 target (side "left"),
        as a host array. Default: the array module's ``searchsorted`` (a GPU backend
        passes a kernel of its own, prebuilt, where CuPy's is compiled on first use).

    Returns
    -------
    BlockPlan
        Partitions balanced by in-links (each at most ``part_rows_max`` rows), the chunk
        size, and the scatter tile size.
    """
    row_end = int(indptr.size - 1) if row_end is None else int(row_end)
    row_begin = int(row_begin)
    rows = row_end - row_begin
    if not 0 <= row_begin <= row_end <= indptr.size - 1:
        raise ValueError(f"row range {row_begin}:{row_end} outside the CSR's "
                         f"{indptr.size - 1} rows")
    if not 1 <= part_rows_max <= MAX_LOCAL:
        raise ValueError(f"part_rows_max must be in 1..{MAX_LOCAL}, not {part_rows_max}")
    xp = array_module(indptr)
    ptr = indptr[row_begin:row_end + 1]  # stays on its device: only P + 1 cuts come back
    first = int(ptr[0])
    m = int(ptr[-1]) - first
    workers = max(1, int(workers))
    if rows == 0:
        part_ptr = np.array([row_begin], dtype=np.int64)
    else:
        parts = max(-(-rows // part_rows_max), min(2 * workers, rows), 1)
        # boundaries at equal in-link counts, then any partition of too many rows split
        targets = first + np.arange(parts + 1, dtype=np.float64) * (m / parts)
        if searchsorted is None:
            cut = _host(xp.searchsorted(ptr, xp.asarray(targets.astype(np.int64)),
                                        side="left"))
        else:
            cut = searchsorted(ptr, targets.astype(np.int64))
        cut = np.asarray(cut).astype(np.int64)
        cut[0], cut[-1] = 0, rows
        cut = distinct(np.clip(cut, 0, rows))
        sizes = np.diff(cut)
        pieces = -(-sizes // part_rows_max)
        if (pieces > 1).any():
            starts = np.repeat(cut[:-1], pieces)
            within = np.arange(starts.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
            step = np.repeat(-(-sizes // pieces), pieces)
            cut = np.append(np.minimum(starts + within * step, rows), rows)
            cut = distinct(cut)
        part_ptr = (cut + row_begin).astype(np.int64)
    num_parts = max(1, part_ptr.size - 1)
    # chunk size: about `block_entries` entries per (chunk, partition) block
    chunks_wanted = max(1.0, m / (num_parts * block_entries))
    bits = math.ceil(math.log2(max(n_src, 1) / chunks_wanted)) if n_src > 1 else 0
    bits = int(min(max(bits, MIN_CHUNK_BITS), chunk_bits_max, MAX_CHUNK_BITS))
    # tiles: at least four per worker, and each at least four chunk slices of entries so
    # that loading the slice is a small part of a tile's work
    tile = max(4 << bits, -(-m // (4 * workers)), 1)
    return BlockPlan(row_begin=row_begin, row_end=row_end, n_src=int(n_src),
                     part_ptr=part_ptr, chunk_bits=bits, tile_entries=int(tile))


@dataclass
class BlockedLayout:
    """The in-links of rows ``row_begin:row_end`` laid out for propagation blocking.

    See the module docstring for the scheme. Arrays are NumPy or CuPy (one kind per
    layout).

    Attributes
    ----------
    plan : BlockPlan
        Partitions, chunk size, tile size.
    blk_ptr : ndarray of int64, shape (C * P + 1,)
        Block ``(c, p)`` holds entries ``blk_ptr[c * P + p] : blk_ptr[c * P + p + 1]``.
    src_local : ndarray of uint16, shape (m,)
        Source of each entry minus its chunk's first id.
    dst_local : ndarray of uint16, shape (m,)
        Destination of each entry minus its partition's first row.
    vals : ndarray of float64, shape (m,), or None
        Transition probability of each entry (weighted graphs); None when unweighted.
    tile_ptr : ndarray of int64, shape (T + 1,)
        Scatter tile t covers entries ``tile_ptr[t] : tile_ptr[t + 1]``, all of chunk
        ``tile_chunk[t]``.
    tile_chunk : ndarray of int64, shape (T,)
    part_order : ndarray of int32, shape (P,)
        Partitions by decreasing entry count: the gather starts with the largest, so
        that the last ones to finish are small.
    """

    plan: BlockPlan
    blk_ptr: Any
    src_local: Any
    dst_local: Any
    vals: Any
    tile_ptr: Any
    tile_chunk: Any
    part_order: Any

    @property
    def num_parts(self) -> int:
        return self.plan.num_parts

    @property
    def num_chunks(self) -> int:
        return self.plan.num_chunks

    @property
    def num_entries(self) -> int:
        return int(self.src_local.size)

    @property
    def num_tiles(self) -> int:
        return int(self.tile_chunk.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the layout's arrays."""
        parts = (self.blk_ptr, self.src_local, self.dst_local, self.vals, self.tile_ptr,
                 self.tile_chunk, self.part_order)
        return int(sum(a.nbytes for a in parts if a is not None))


def tiles_of(blk_ptr: Any, num_parts: int, num_chunks: int, tile_entries: int
             ) -> tuple[Any, Any]:
    """Scatter tiles: each chunk's entry range cut into pieces of at most
    ``tile_entries`` entries. Returns ``(tile_ptr, tile_chunk)`` on ``blk_ptr``'s device."""
    xp = array_module(blk_ptr)
    if num_parts == 0:  # an empty row range
        return xp.zeros(1, dtype=xp.int64), xp.zeros(0, dtype=xp.int64)
    # C + 1 chunk starts: small, so the tiles are cut on the host
    starts = _host(blk_ptr[:: num_parts][: num_chunks + 1]).astype(np.int64)
    count = np.diff(starts)
    pieces = np.maximum(-(-count // tile_entries), 1)
    chunk = np.repeat(np.arange(num_chunks, dtype=np.int64), pieces)
    first = np.cumsum(pieces) - pieces
    within = np.arange(chunk.size, dtype=np.int64) - np.repeat(first, pieces)
    size = np.repeat(-(-count // pieces), pieces)
    begin = starts[chunk] + within * size
    end = np.minimum(begin + size, starts[chunk + 1])
    keep = end > begin
    chunk, begin = chunk[keep], begin[keep]
    tile_ptr = np.append(begin, starts[-1])
    return xp.asarray(tile_ptr), xp.asarray(chunk)


def part_order_of(blk_ptr: Any, num_parts: int, num_chunks: int) -> Any:
    """Partitions by decreasing number of entries (int32, on ``blk_ptr``'s device)."""
    xp = array_module(blk_ptr)
    counts = xp.diff(blk_ptr).reshape(num_chunks, num_parts).sum(axis=0)
    return xp.argsort(-counts, kind="stable").astype(xp.int32)


def build_blocked(indptr: np.ndarray, indices: np.ndarray, plan: BlockPlan,
                  vals: np.ndarray | None = None) -> BlockedLayout:
    """The reference (NumPy) construction of the layout of ``plan``.

    Entries of a block keep the CSR's order (destination, then source). The GPU
    backend builds the same blocks with CUDA kernels, in any order within a block.

    Parameters
    ----------
    indptr, indices : ndarray
        The in-link CSR of the whole graph (host arrays).
    plan : BlockPlan
        From :func:`plan_blocks` on the same ``indptr``.
    vals : ndarray of float64, optional
        Per-in-link transition probabilities aligned with ``indices`` (weighted graphs).
    """
    rb, re_ = plan.row_begin, plan.row_end
    lo, hi = int(indptr[rb]), int(indptr[re_])
    src = np.asarray(indices[lo:hi], dtype=np.int64)
    part_ptr = plan.part_ptr
    num_parts, num_chunks, bits = plan.num_parts, plan.num_chunks, plan.chunk_bits
    # entries of partition p are the CSR range of its rows (rows are contiguous)
    part_edges = (np.asarray(indptr, dtype=np.int64)[part_ptr[1:]]
                  - np.asarray(indptr, dtype=np.int64)[part_ptr[:-1]])
    part = np.repeat(np.arange(num_parts, dtype=np.int64), part_edges)
    row_len = np.diff(np.asarray(indptr[rb:re_ + 1], dtype=np.int64))
    dst = np.repeat(np.arange(rb, re_, dtype=np.int64), row_len)
    chunk = src >> bits
    key = chunk * num_parts + part
    order = np.argsort(key, kind="stable")
    counts = np.bincount(key, minlength=num_chunks * num_parts)
    blk_ptr = np.zeros(num_chunks * num_parts + 1, dtype=np.int64)
    np.cumsum(counts, out=blk_ptr[1:])
    src_local = (src - (chunk << bits))[order].astype(np.uint16)
    dst_local = (dst - part_ptr[part])[order].astype(np.uint16)
    vv = None if vals is None else np.asarray(vals[lo:hi], dtype=np.float64)[order]
    tile_ptr, tile_chunk = tiles_of(blk_ptr, num_parts, num_chunks, plan.tile_entries)
    return BlockedLayout(plan=plan, blk_ptr=blk_ptr, src_local=src_local,
                         dst_local=dst_local, vals=vv, tile_ptr=tile_ptr,
                         tile_chunk=tile_chunk,
                         part_order=part_order_of(blk_ptr, num_parts, num_chunks))


def entry_chunks(layout: BlockedLayout) -> np.ndarray:
    """Chunk of every entry (int64), from the block pointers (host layouts)."""
    if layout.num_parts == 0:
        return np.zeros(0, dtype=np.int64)
    per_chunk = np.diff(layout.blk_ptr[:: layout.num_parts][: layout.num_chunks + 1])
    return np.repeat(np.arange(layout.num_chunks, dtype=np.int64), per_chunk)


def entry_parts(layout: BlockedLayout) -> np.ndarray:
    """Partition of every entry (int64), from the block pointers (host layouts)."""
    counts = np.diff(layout.blk_ptr)
    blocks = np.tile(np.arange(layout.num_parts, dtype=np.int64), layout.num_chunks)
    return blocks.repeat(counts)


def blocked_propagate(layout: BlockedLayout, xs: np.ndarray) -> np.ndarray:
    """``y[i - row_begin] = sum over entries j -> i of (val *) xs[j]`` through the layout:
    the scatter and gather phases done with array operations (the reference that the
    fused kernels are tested against), on a host layout; float64 sums."""
    plan = layout.plan
    src = (entry_chunks(layout) << plan.chunk_bits) + layout.src_local.astype(np.int64)
    msg = np.asarray(xs)[src].astype(np.float64)
    if layout.vals is not None:
        msg = msg * layout.vals
    rows = (plan.part_ptr[entry_parts(layout)] + layout.dst_local.astype(np.int64)
            - plan.row_begin)
    return np.bincount(rows, weights=msg, minlength=plan.row_end - plan.row_begin)
