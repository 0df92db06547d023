"""Edge columns → in-link CSR on the GPU: the build of :mod:`webrank.build`, on the card.

A run on the GPU needs the graph there; building the CSR on the host first costs a
parallel CPU sort, Numba's start in a fresh process (seconds on some hosts) and then the
upload of the CSR anyway. Here the parsed columns go up as they are and the card does
the rest:

* **node ids** (``node_ids="appear"``): a presence map over the id range marks the ids
  that occur, its prefix sum renumbers them in increasing order (ids spread far beyond
  the link count, such as hashes, are sorted instead: ``unique`` + ``searchsorted``);
* **CSR**: each link becomes a 64-bit key ``(target << 32) | source``, one radix sort
  (CuPy's ``sort``, CUB underneath) orders them by row and by source within a row,
  neighbouring equal keys are the duplicates (:func:`csr_on_device`);
* **weights** follow their keys through a stable ``argsort``: the last weight of a
  repeated link wins (file order), or they are added (``duplicates="sum"``; in an order
  of the card's choosing, so a sum may differ from the host build's in its last bit).

The result is the graph :meth:`webrank.Graph.from_edges` defines, with CuPy arrays.
The code is array-agnostic (``xp``): with NumPy it runs on the host, which is how the
tests check it against the host build on machines without a GPU.
Peak device memory: about 36 bytes per link unweighted (the int64 columns, the keys and
the sort's scratch; 28 with a parse's int32 columns), 60 weighted
(:func:`device_build_bytes`).

Nothing on the way of a first run is compiled then (CuPy compiles each of its own
elementwise operations, masks, scans and ``bincount`` with NVRTC the first time a process
uses it: some 25 of them here, about 5 s of a fresh install's first run):

* **unweighted links** with dense or fixed ids (web graphs, R-MAT) are built by the
  kernels of :mod:`webrank.kernels.cuda_arrays`, prebuilt with the package: the presence
  map, the keys, a tile scan (the tiles' sums added up on the host) that renumbers the
  ids, merges the neighbouring equal keys and turns the rows' counts into row pointers,
  and the out-degrees, around CuPy's precompiled radix sort;
* **a plain file's int32 chunks** from the parallel parse (:mod:`webrank.io.edgelist`)
  go up as they are, packed a page-locked slice at a time on all host threads
  (:func:`webrank.kernels.cuda_staging.upload`: 29 GB/s, 1 GB of R-MAT 23's ids in 36 ms
  on an H200 host), and the kernels above build the CSR in int32 (30 ms): the host's
  parallel build and the CSR's upload took 0.40 s on 16 cores. Where the card lacks the
  memory (:func:`device_build_bytes`), or the ids spread far beyond the links, the host's
  parallel build makes the CSR and it is copied up;
* **weighted links** and ids spread far beyond the link count, up to
  :data:`HOST_BUILD_EDGES` links, are built on the host by the parallel build of
  :mod:`webrank.build` (:func:`host_csr`) and their CSR copied up as it is (a
  second at most, where CuPy's compilations cost five);
* larger ones of those take the steps above with CuPy's operations: their first run
  compiles them once, a small part of reading a file that size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank import build
from webrank.arrays import array_module, to_device
from webrank.build import Chunked, Pieces, fixed_node_set
from webrank.kernels import cuda_arrays as ka
from webrank.kernels import cuda_vectors as kv
from webrank.kernels.cuda_common import find_first, launch_strided

__all__ = ["HOST_BUILD_EDGES", "check_csr", "csr_on_device", "device_build_bytes",
           "edge_csr_on_device", "host_csr",
           "out_weight_mismatch", "out_weight_of", "out_weight_sums"]

_MAX_NODES = 2**31 - 1  # sources must fit the low 32 bits of a key, and int32 indices
_COMPACT_SLICE = 1 << 30  # keys merged per step (below CuPy's 2**31 mask limit)
#: ids up to this many times the link count are renumbered through a presence map
_DENSE_RANGE = 4
#: links up to which :func:`edge_csr_on_device` builds weighted graphs, and graphs of ids
#: spread far beyond the link count, on the host and copies the CSR up (see the module
#: docstring)
HOST_BUILD_EDGES = 1 << 24
#: id dtypes the key kernel takes
_KEY_IDS = ("int32", "int64")


def device_build_bytes(num_edges: int, id_range: int, weighted: bool,
                       id_bytes: int = 8) -> int:
    """Device bytes :func:`edge_csr_on_device` holds at its peak, about: the id columns
    (2 x ``id_bytes`` a link: int64 from pyarrow, int32 from the parallel parse), the keys
    and the sort's scratch (16), the int32 indices (4), weights, their order and their
    sorted copy (24), and the presence map."""
    per_link = 2 * id_bytes + 20 + (24 if weighted else 0)
    return int(per_link * num_edges + 5 * min(id_range, _DENSE_RANGE * num_edges + 1))


def edge_csr_on_device(src: Any, dst: Any, weight: Any, *,
                       num_nodes: int | None, node_ids: str, labels: Any,
                       duplicates: str, name: str | None,
                       xp: Any = None) -> dict[str, Any] | None:
    """The arrays of :meth:`webrank.Graph.from_edges` (``indptr``, ``indices``,
    ``out_weight``, ``weights``, ``labels``), built on the current CUDA device from
    host columns already checked there (int64 ids >= 0, float64 weights >= 0; arrays,
    :class:`~webrank.build.Chunked` or :class:`~webrank.build.Pieces`).
    ``xp``: the array module, CuPy by default (NumPy runs the same steps on the host).

    Returns None where the device cannot take it (2**31 nodes or more, or not enough
    free memory): the caller builds on the host.

    Raises
    ------
    GraphFormatError
        An id beyond ``num_nodes`` (``node_ids="range"``) or beyond the labels.
    """
    if xp is None:
        import cupy as xp
    cp = xp
    m = int(src.size)
    if m == 0 or (weight is not None and m > _MAX_NODES):
        return None  # (weighted links are merged on the device below 2**31 links)
    on_host = {"num_nodes": num_nodes, "node_ids": node_ids, "labels": labels,
               "duplicates": duplicates, "name": name}
    if cp is not np and isinstance(src, Chunked) and weight is None:
        # the parallel parse's int32 chunks (a plain file): they go up as they are and the
        # card builds; else (too little device memory, ids spread far beyond the links)
        # built where they were parsed, by the host's parallel build, the CSR copied up
        arrays = _chunks_on_device(src, dst, on_host, cp)
        if arrays is None:
            arrays = host_csr(src, dst, weight, **on_host)
            arrays = None if arrays is None else (_uploaded(arrays, cp) or arrays)
        return arrays
    if cp is not np and weight is not None and m <= HOST_BUILD_EDGES:
        return _uploaded(host_csr(src, dst, weight, **on_host), cp)
    # the links' part of the peak, checked before the columns go up (a presence map
    # spans at most DENSE_RANGE * m ids); the nodes' part once the ids are known
    if cp is not np and device_build_bytes(m, _DENSE_RANGE * m + 1, weight is not None) \
            > _free_bytes(cp):
        return None
    d_src, d_dst = _upload(src, cp.int64, cp), _upload(dst, cp.int64, cp)
    hi = max(int(d_src.max()), int(d_dst.max()))  # (CuPy's precompiled reductions)
    fixed, node_labels = fixed_node_set(hi, m, labels=labels, node_ids=node_ids,
                                        num_nodes=num_nodes, name=name)
    compact = fixed is None
    n = fixed or 0  # "appear": known once the ids are renumbered
    if n > _MAX_NODES or (cp is not np and 24 * n > _free_bytes(cp)):
        return None  # (the row pointers, the degrees and their count for n nodes)
    dense = hi < _DENSE_RANGE * m
    if cp is not np and compact and not dense and m <= HOST_BUILD_EDGES:
        del d_src, d_dst  # ids spread far beyond the links (hashes): sorted on the host
        return _uploaded(host_csr(src, dst, weight, **on_host), cp)
    if cp is not np and weight is None and (dense or not compact):
        return _kernel_build(d_src, d_dst, hi, n, compact, duplicates, node_labels, cp)
    if compact:  # node_ids="appear": renumber the ids that occur
        d_src, d_dst, ids = _compact(d_src, d_dst, hi, m, cp)
        n = int(ids.size)
        if n > _MAX_NODES:
            return None
        if n != hi + 1:  # else the ids already are 0..n-1
            node_labels = ids if cp is np else ids.get()
        del ids
    d_w = None if weight is None else _upload(weight, cp.float64, cp)
    indptr, indices, weights = csr_on_device(d_src, d_dst, n, duplicates, d_w)
    del d_src, d_dst, d_w
    out_weight = (cp.bincount(indices, minlength=n) if weights is None else
                  cp.bincount(indices, weights=weights, minlength=n)).astype(cp.float64)
    return {"indptr": indptr, "indices": indices, "out_weight": out_weight,
            "weights": weights, "labels": node_labels}


def _chunks_on_device(src: Chunked, dst: Chunked, on_host: dict[str, Any], cp: Any
                      ) -> dict[str, Any] | None:
    """:func:`edge_csr_on_device` of a parallel parse's unweighted chunked columns: the
    chunks go up through the staging buffers into one device column each, in their own
    integer type (int32 for most files: half the bytes of int64), and
    :func:`_kernel_build` makes the CSR. None where the card should not: ids spread far
    beyond the link count under ``node_ids="appear"`` (renumbered on the host), 2**31
    nodes or more, bounds not known, or too little free device memory.

    Raises
    ------
    GraphFormatError
        An id beyond ``num_nodes`` or the labels (:func:`~webrank.build.fixed_node_set`).
    """
    m = int(src.size)
    if src.bounds is None or src.data.dtype.name not in _KEY_IDS:
        return None
    hi = int(src.bounds[1])
    fixed, node_labels = fixed_node_set(hi, m, labels=on_host["labels"],
                                        node_ids=on_host["node_ids"],
                                        num_nodes=on_host["num_nodes"], name=on_host["name"])
    compact = fixed is None
    n = fixed or 0
    if n > _MAX_NODES or (compact and hi >= _DENSE_RANGE * m):
        return None
    id_bytes = src.data.dtype.itemsize
    if device_build_bytes(m, hi + 1, False, id_bytes) + 24 * n > _free_bytes(cp):
        return None
    d_src, d_dst = _upload(src, src.data.dtype, cp), _upload(dst, dst.data.dtype, cp)
    return _kernel_build(d_src, d_dst, hi, n, compact, on_host["duplicates"], node_labels, cp)


def _kernel_build(d_src: Any, d_dst: Any, hi: int, n: int, compact: bool,
                  duplicates: str, node_labels: Any, cp: Any) -> dict[str, Any] | None:
    """:func:`edge_csr_on_device` of unweighted links whose ids are dense or fixed, by the
    kernels of :mod:`webrank.kernels.cuda_arrays` (prebuilt) and CuPy's radix sort: the
    same steps as :func:`csr_on_device` and :func:`_compact`, none of CuPy's own kernels
    (which NVRTC compiles on a process's first use)."""
    code = None
    if compact:
        code, n, ids = _present_codes(d_src, d_dst, hi, cp)
        if n > _MAX_NODES:
            return None
        if ids is not None:
            node_labels = ids
    keys = _make_keys(d_src, d_dst, code, cp)
    del d_src, d_dst, code  # (the caller's columns stay until it returns)
    keys.sort()
    indptr, indices, weights = _csr_of_sorted_keys(keys, n, duplicates, cp)
    del keys
    return {"indptr": indptr, "indices": indices,
            "out_weight": out_weight_of(indices, weights, n), "weights": weights,
            "labels": node_labels}


def _launch(name: str, size: int, args: tuple, family: Any = ka) -> None:
    """A grid-strided kernel of :mod:`webrank.kernels.cuda_arrays` (or another
    ``family``) over ``size`` items."""
    launch_strided(family.get_kernel(name), size, family.BLOCK, args)


def _present_codes(src: Any, dst: Any, hi: int, cp: Any) -> tuple[Any, int, Any]:
    """``(code, n, ids)``: the ids that occur numbered in increasing order (``code[id]``,
    int32 over ``0..hi``), their count, and their ids on the host where they are not
    ``0..n-1`` already (else None)."""
    code = cp.zeros(hi + 1, dtype=cp.int32)
    m = int(src.size)
    _launch(ka.mark_present_name(src.dtype.name), m,
            ka.MARK_PRESENT.pack(m=m, src=src, dst=dst, present=code))
    offsets, n = ka.tile_offsets(hi + 1, ka.TILE_VALUES, vals=code)
    with_ids = n != hi + 1
    ids = cp.empty(n if with_ids else 1, dtype=cp.int64)
    tiles = int(offsets.size)
    ka.get_kernel("wr_present_codes")((tiles,), (ka.BLOCK,), ka.PRESENT_CODES.pack(
        len=hi + 1, present=code, tile_offsets=offsets, with_ids=with_ids, ids=ids))
    return code, n, ids.get() if with_ids else None


def _make_keys(src: Any, row: Any, code: Any, cp: Any) -> Any:
    """``(row << 32) | src`` per link (int64), both renumbered through ``code`` if given."""
    m = int(src.size)
    keys = cp.empty(m, dtype=cp.int64)
    _launch(ka.make_keys_name(src.dtype.name, row.dtype.name, code is not None), m,
            ka.MAKE_KEYS.pack(m=m, src=src, row=row,
                              code=code if code is not None else cp.zeros(1, cp.int32),
                              keys=keys))
    return keys


def _csr_of_sorted_keys(keys: Any, rows: int, duplicates: str, cp: Any
                        ) -> tuple[Any, Any, Any]:
    """``(indptr, indices, weights)`` of sorted keys: equal neighbours merged (their count
    the weight under ``"sum"``, where some link repeats), the row pointers a scan of the
    rows' counts."""
    m = int(keys.size)
    offsets, nnz = ka.tile_offsets(m, ka.TILE_RUN_STARTS, keys=keys)
    indices = cp.empty(nnz, dtype=cp.int32)
    row_counts = cp.zeros(max(rows, 1), dtype=cp.int32)
    with_starts = duplicates == "sum" and nnz < m
    starts = cp.empty(nnz + 1 if with_starts else 1, dtype=cp.int64)
    ka.get_kernel("wr_compact_keys")((int(offsets.size),), (ka.BLOCK,), ka.COMPACT_KEYS.pack(
        m=m, keys=keys, tile_offsets=offsets, nnz=nnz, indices=indices,
        row_counts=row_counts, with_starts=with_starts, starts=starts))
    weights = None
    if with_starts:
        weights = cp.empty(nnz, dtype=cp.float64)
        _launch("wr_run_lengths", nnz, ka.RUN_LENGTHS.pack(nnz=nnz, starts=starts,
                                                            weights=weights))
    del starts
    indptr = cp.empty(rows + 1, dtype=cp.int32 if nnz <= _MAX_NODES else cp.int64)
    offsets, _ = ka.tile_offsets(rows, ka.TILE_VALUES, vals=row_counts)
    ka.get_kernel(ka.exclusive_scan_name(indptr.dtype.name))(
        (int(offsets.size),), (ka.BLOCK,), ka.EXCLUSIVE_SCAN.pack(
            len=rows, vals=row_counts, tile_offsets=offsets, out=indptr))
    return indptr, indices, weights


def out_weight_of(indices: Any, weights: Any, n: int) -> Any:
    """Each node's out-links counted, or their weights added where these are whole numbers
    (link counts: exact in any order), as float64, on the device (a kernel of
    :mod:`webrank.kernels.cuda_arrays`)."""
    cp = array_module(indices)
    out = cp.zeros(n, dtype=cp.float64)
    nnz = int(indices.size)
    if nnz:
        _launch("wr_out_weight", nnz, ka.OUT_WEIGHT.pack(
            nnz=nnz, indices=indices, has_w=weights is not None,
            weights=weights if weights is not None else cp.zeros(1, cp.float64), out=out))
    return out


def host_csr(src: Any, dst: Any, weight: Any, *, num_nodes: int | None, node_ids: str,
             labels: Any, duplicates: str, name: str | None) -> dict[str, Any] | None:
    """The arrays of :meth:`webrank.Graph.from_edges` (NumPy), built on the host by the
    parallel build (:func:`webrank.build.csr_from_chunks`), from the columns
    :func:`edge_csr_on_device` takes. Ids spread far beyond the link count (hashes) are
    renumbered first, as the serial build does. None for 2**31 nodes or more.

    Raises
    ------
    GraphFormatError
        As :func:`edge_csr_on_device`.
    """
    joined = [None if c is None or isinstance(c, Chunked) else build.joined(c)
              for c in (src, dst, weight)]
    if joined[0] is None:  # chunked columns (a parallel reader's): as they are
        s, d, w = src, dst, weight
    else:
        s = build.as_chunks(joined[0])
        d = build.as_chunks(joined[1], like=s)
        w = None if weight is None else build.as_chunks(joined[2], like=s)
        # (found here: webrank.build would look for Numba to find them in parallel)
        s.bounds = d.bounds = (int(min(joined[0].min(), joined[1].min())),
                               int(max(joined[0].max(), joined[1].max())))
    arrays = build.csr_from_chunks(s, d, w, num_nodes=num_nodes, node_ids=node_ids,
                                   labels=labels, duplicates=duplicates, name=name)
    if arrays is not None or node_ids != "appear" or labels is not None:
        return arrays  # (None: 2**31 nodes or more)
    # the ids that occur, spread far beyond the link count: renumbered in increasing order
    ends = np.concatenate([build.joined(src), build.joined(dst)])
    ids, codes = np.unique(ends, return_inverse=True)
    if ids.size > _MAX_NODES:
        return None
    m = int(src.size)
    codes = codes.reshape(-1).astype(np.int64, copy=False)
    s = build.as_chunks(codes[:m])
    d = build.as_chunks(codes[m:], like=s)
    s.bounds = d.bounds = (0, int(ids.size) - 1)
    w = None if weight is None else build.as_chunks(build.joined(weight), like=s)
    arrays = build.csr_from_chunks(s, d, w, num_nodes=int(ids.size), node_ids="range",
                                   labels=None, duplicates=duplicates, name=name)
    if arrays is not None:
        arrays["labels"] = ids
    return arrays


def _uploaded(arrays: dict[str, Any] | None, cp: Any) -> dict[str, Any] | None:
    """A host CSR's arrays copied to the device as they are (plain copies, no kernel);
    the labels stay on the host. None where it is None or the device lacks the memory."""
    if arrays is None:
        return None
    from webrank.kernels.cuda_staging import upload  # (page-locked slices, all threads)

    up = ("indptr", "indices", "out_weight", "weights")
    if sum(arrays[k].nbytes for k in up if arrays[k] is not None) > _free_bytes(cp):
        return None
    return {k: upload(v) if k in up and v is not None else v for k, v in arrays.items()}


def _upload(col: Any, dtype: Any, cp: Any) -> Any:
    """A host column (an array, or a reader's :class:`~webrank.build.Chunked` or
    :class:`~webrank.build.Pieces`, copied part by part, never joined on the host) as a
    device array of ``dtype``."""
    if isinstance(col, Chunked):
        parts = [col.data[a:a + c] for a, c in zip(col.starts.tolist(),
                                                   col.counts.tolist(), strict=True)]
    elif isinstance(col, Pieces):
        parts = col.arrays
    else:
        parts = [col]
    if cp is np:
        return np.asarray(parts[0] if len(parts) == 1 else np.concatenate(parts), dtype=dtype)
    if len(parts) == 1:
        return to_device(parts[0], dtype)
    if all(p.dtype == dtype for p in parts):
        from webrank.kernels.cuda_staging import upload  # (page-locked slices, all threads)

        return upload(list(parts))
    out = cp.empty(col.size, dtype=dtype)
    at = 0
    for part in parts:
        out[at:at + part.size] = to_device(part, dtype)
        at += part.size
    return out


def _free_bytes(cp: Any) -> int:
    """Free device memory, the memory pool's cached blocks included."""
    return int(cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes())


def _compact(src: Any, dst: Any, hi: int, m: int, cp: Any) -> tuple[Any, Any, Any]:
    """``(src, dst, ids)``: the ids that occur, ascending, and the links renumbered into
    them (int32)."""
    if hi < _DENSE_RANGE * m:
        present = cp.zeros(hi + 1, dtype=cp.int32)
        present[src] = 1
        present[dst] = 1
        ids = cp.flatnonzero(present)
        code = cp.cumsum(present, dtype=cp.int32)
        del present
        code -= 1
        return code[src], code[dst], ids
    ids = cp.unique(cp.concatenate([src, dst]))
    return (cp.searchsorted(ids, src).astype(cp.int32),
            cp.searchsorted(ids, dst).astype(cp.int32), ids)


def csr_on_device(src: Any, row: Any, rows: int, duplicates: str = "collapse",
                  weight: Any = None) -> tuple[Any, Any, Any]:
    """The CSR of the links ``src[k] -> row[k]`` (CuPy arrays, rows ``0..rows-1``: the
    whole graph, or one part of it in webrank.distributed): keys ``(row << 32) | src``,
    one radix sort, neighbouring equal keys merged. Unweighted (``weight`` None),
    ``"sum"`` keeps a merged link's count as its weight; with ``weight`` (float64, one
    per link) the last of a repeated link's weights wins, or with ``"sum"`` they add up.
    Returns ``(indptr, indices, weights or None)``, int32 indices, int32 or int64 row
    pointers. The keys are the only O(m) temporary unweighted (about 16 bytes per link
    at the sort's peak). Unweighted CuPy links of int32 or int64 ids are merged by the
    kernels of :mod:`webrank.kernels.cuda_arrays` (:func:`_csr_of_sorted_keys`), the
    rest by CuPy's operations."""
    cp = array_module(src)
    if (cp is not np and weight is None and src.dtype.name in _KEY_IDS
            and row.dtype.name in _KEY_IDS):
        keys = _make_keys(src, row, None, cp)
        keys.sort()
        return _csr_of_sorted_keys(keys, rows, duplicates, cp)
    keys = (row.astype(cp.int64) << 32) | src.astype(cp.int64)
    if weight is not None:
        return _weighted_csr(keys, weight, rows, duplicates)
    keys.sort()
    m = int(keys.size)
    row_counts = cp.zeros(rows, dtype=cp.int64)
    starts = []
    nnz = 0
    last_key = keys[:0]
    # Merged in place a slice at a time: CuPy's boolean-mask indexing stops at 2**31
    # elements, and a slice's survivors never land past the slice's own start.
    for lo in range(0, m, _COMPACT_SLICE):
        hi = min(m, lo + _COMPACT_SLICE)
        first = cp.empty(hi - lo, dtype=cp.bool_)
        cp.not_equal(keys[lo + 1:hi], keys[lo:hi - 1], out=first[1:])
        # the slice before ends with last_key (read before that slice was rewritten)
        first[:1] = keys[lo:lo + 1] != last_key if lo else True
        last_key = keys[hi - 1:hi].copy()
        if duplicates == "sum":
            starts.append(cp.flatnonzero(first) + lo)
        kept = keys[lo:hi][first]
        del first
        keys[nnz:nnz + kept.size] = kept
        row_counts += cp.bincount((kept >> 32).astype(cp.int32), minlength=rows)
        nnz += int(kept.size)
        del kept
    weights = None
    if starts:
        counts = cp.diff(cp.append(cp.concatenate(starts), m))
        if int(counts.max()) > 1:
            weights = counts.astype(cp.float64)
        del counts
    del starts
    return _csr_of_keys(keys[:nnz], row_counts, weights)


def _weighted_csr(keys: Any, weight: Any, rows: int, duplicates: str
                  ) -> tuple[Any, Any, Any]:
    """:func:`csr_on_device` with per-link weights (fewer than 2**31 links)."""
    cp = array_module(keys)
    m = int(keys.size)
    if m > _MAX_NODES:
        raise ValueError("weighted links are merged on the device below 2**31 links")
    order = cp.argsort(keys, kind="stable")  # file order within a key
    keys = keys[order]
    w = weight[order]
    del order
    first = cp.empty(m, dtype=cp.bool_)
    first[0] = True
    cp.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = cp.flatnonzero(first)
    if duplicates == "sum":
        weights = cp.bincount(cp.cumsum(first) - 1, weights=w)
    else:  # the last link of each run of equal keys
        weights = w[cp.append(starts[1:] - 1, m - 1)]
    del first, w
    kept = keys[starts]
    del keys, starts
    row_counts = cp.bincount((kept >> 32).astype(cp.int32), minlength=rows)
    return _csr_of_keys(kept, row_counts, weights)


def _csr_of_keys(keys: Any, row_counts: Any, weights: Any) -> tuple[Any, Any, Any]:
    """``(indptr, indices, weights)`` of sorted, merged keys and their rows' counts."""
    cp = array_module(keys)
    nnz = int(keys.size)
    # the low 32 bits of each key are its source (ids < 2**31, so the cast keeps them)
    indices = keys.astype(cp.int32)
    indptr = cp.zeros(row_counts.size + 1, dtype=cp.int32 if nnz <= _MAX_NODES
                      else cp.int64)
    indptr[1:] = cp.cumsum(row_counts)
    return indptr, indices, weights


# -- the checks of a CSR read onto the device (a graph cache: webrank.io.native) ----------
def check_csr(indptr: Any, indices: Any) -> tuple[int | None, int | None]:
    """``(first row whose pointer decreases, first link out of 0..n-1)`` of a device CSR,
    None where there is none."""
    n, m = int(indptr.size) - 1, int(indices.size)
    row, link = find_first(
        kv.get_kernel(kv.csr_bad_name(indptr.dtype.name, indices.dtype.name)), max(n, m),
        kv.BLOCK, lambda bad: kv.CSR_BAD.pack(n=n, m=m, indptr=indptr, indices=indices,
                                              bad=bad), slots=2)
    return row, link


def out_weight_sums(indices: Any, weights: Any, n: int) -> tuple[Any, Any]:
    """Each node's out-links' count or weight sum (float64) and, with weights, its count
    of links (else None), on the device (atomic additions: counts exactly, sums in any
    order)."""
    import cupy as cp

    sums = cp.zeros(n, dtype=np.float64)
    links = cp.zeros(n if weights is not None else 1, dtype=np.float64)
    m = int(indices.size)
    if m:
        _launch(kv.source_sums_name(indices.dtype.name), m, kv.SOURCE_SUMS.pack(
            m=m, indices=indices, has_w=weights is not None,
            weights=sums if weights is None else weights, sums=sums, links=links), kv)
    return sums, (links if weights is not None else None)


def out_weight_mismatch(stored: Any, sums: Any, links: Any) -> tuple[int | None, int | None]:
    """``(first node whose weight sum is not finite, first node whose stored out-weight
    is not its links' sum)`` (:func:`out_weight_sums`; None where there is none)."""
    n = int(stored.size)
    inf, off = find_first(
        kv.get_kernel("wr_out_weight_bad"), n, kv.BLOCK,
        lambda bad: kv.OUT_WEIGHT_BAD.pack(n=n, stored=stored, sums=sums,
                                           links=sums if links is None else links,
                                           has_w=links is not None, bad=bad), slots=2)
    return inf, off
