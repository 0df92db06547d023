"""R-MAT graphs generated and built across several GPUs: no GPU holds the whole edge list.

:func:`rmat_parts` draws share i of the edges on GPU i (:func:`webrank.generate.rmat_share`,
one vertex permutation for all shares), a chunk at a time, sends each edge to the GPU that
owns its target row (peer copies between the GPUs of this process), and builds every GPU's
row part on that GPU (:func:`webrank.build_gpu.csr_on_device`); the out-degrees
are summed over the GPUs' partial counts. Rows are split into equal ranges of ids: the
shuffled ids of an R-MAT graph carry no degree information, so equal ranges hold about
equal numbers of links.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from webrank.arrays import to_host
from webrank.distributed.partition import Part
from webrank.kernels.native import available_cpus

__all__ = ["BUCKET_LINKS", "rmat_parts", "write_rmat_shards"]


def rmat_parts(scale: int, edge_factor: int = 16, *, devices: list[int], seed: int = 0,
               chunk: int = 2**27) -> tuple[list[Part], np.ndarray, dict[str, float]]:
    """R-MAT ``scale`` as one row part per GPU of ``devices`` (built on those GPUs).

    Returns ``(parts, bounds, timings)``: parts with CuPy arrays on their GPU, the row
    bounds, and the seconds spent generating, routing and building.
    """
    import cupy as cp

    from webrank.build_gpu import csr_on_device
    from webrank.generate import rmat_permutation, rmat_share

    shares = len(devices)
    n = 1 << int(scale)
    bounds = (np.arange(shares + 1, dtype=np.int64) * n) // shares
    inbox: list[list[tuple[Any, Any]]] = [[] for _ in devices]  # per owner: (src, row)
    t0 = time.perf_counter()
    m = int(edge_factor) * n
    per_share = -(-m // shares)
    steps = max(1, -(-per_share // int(chunk)))
    perms = []
    for dev in devices:  # one copy of the permutation per GPU, drawn once
        with cp.cuda.Device(dev):
            perms.append(rmat_permutation(scale, seed=seed, xp=cp, dtype=np.int32))
    for step in range(steps):
        for i, dev in enumerate(devices):
            with cp.cuda.Device(dev):
                # a sub-share of share i: its own stream of random numbers, the same
                # permutation (rmat_share seeds it by `seed` alone)
                src, dst, _ = rmat_share(scale, edge_factor, share=i * steps + step,
                                         shares=shares * steps, seed=seed, xp=cp,
                                         dtype=np.int32, perm=perms[i])
                owner = cp.searchsorted(cp.asarray(bounds[1:-1]), dst, side="right")
                for j, other in enumerate(devices):
                    mine = owner == j
                    s, r = src[mine], dst[mine] - np.int32(bounds[j])
                    if other != dev:  # a peer copy to the owner's GPU
                        with cp.cuda.Device(other):
                            s, r = cp.asarray(s), cp.asarray(r)
                    inbox[j].append((s, r))
                del src, dst, owner
    del perms
    for dev in devices:
        cp.cuda.Device(dev).synchronize()
    t1 = time.perf_counter()
    parts, counts = [], []
    for j, dev in enumerate(devices):
        with cp.cuda.Device(dev):
            src = cp.concatenate([s for s, _ in inbox[j]])
            row = cp.concatenate([r for _, r in inbox[j]])
            inbox[j] = []
            rows = int(bounds[j + 1] - bounds[j])
            indptr, indices, _ = csr_on_device(src, row, rows)
            del src, row
            counts.append(cp.bincount(indices, minlength=n))
            parts.append(Part(index=j, row_begin=int(bounds[j]), row_end=int(bounds[j + 1]),
                              n=n, indptr=indptr, indices=indices, weights=None,
                              out_weight=None))
    # out-degrees: every GPU counted the sources of its rows' in-links
    for j, dev in enumerate(devices):
        with cp.cuda.Device(dev):
            total = cp.zeros(int(bounds[j + 1] - bounds[j]), dtype=cp.float64)
            for c in counts:
                total += cp.asarray(c[int(bounds[j]):int(bounds[j + 1])])
            parts[j].out_weight = total
    del counts
    for dev in devices:
        cp.cuda.Device(dev).synchronize()
    t2 = time.perf_counter()
    return parts, bounds, {"generate_and_route_s": t1 - t0, "build_s": t2 - t1}


#: links in one row bucket of :func:`write_rmat_shards` (the pieces its CSR is built in)
BUCKET_LINKS = 1 << 28


def write_rmat_shards(scale: int, directory: str | os.PathLike[str], parts: int, *,
                      edge_factor: int = 16, seed: int = 0, device: str = "cpu",
                      chunk: int = 2**26, bucket_links: int = BUCKET_LINKS,
                      progress: Any = None) -> dict[str, Any]:
    """R-MAT ``scale`` written as a shard directory of ``parts`` row shards (the format
    of :func:`~webrank.distributed.inputs.write_shards`, read by ``webrank rank DIR
    --distributed`` or :func:`~webrank.distributed.run.distributed_pagerank`), for graphs
    no single array of a machine holds: R-MAT 30's 17 billion links.

    The edges are :func:`webrank.generate.rmat_share`'s (one permutation for all
    shares, as :func:`rmat_parts`), drawn ``chunk`` at a time on ``device`` ("cpu" or
    "gpu": CuPy on the current GPU), and routed to row buckets of about
    ``bucket_links`` links (equal ranges of ids: shuffled R-MAT ids carry no degree
    information). Each bucket's CSR is built on ``device`` (one key sort, parallel links
    merged), its sources counted into the out-degrees; a shard's pieces are then written
    one after the other without being joined. Host memory: the routed edges, 8 bytes a
    link, falling to the CSR's 4 as buckets are built; the manifest is written last.

    Returns timings and sizes: ``{"generate_s", "build_s", "write_s", "n", "edges"}``.
    """

    from webrank.build_gpu import csr_on_device
    from webrank.distributed.inputs import shard_directory, write_manifest, write_shard
    from webrank.generate import rmat_permutation, rmat_share

    if isinstance(parts, bool) or int(parts) < 1:
        raise ValueError(f"parts must be a positive integer, not {parts!r}")
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', not {device!r}")
    if device == "gpu":
        import cupy as xp
    else:
        xp = np
    parts, n = int(parts), 1 << int(scale)
    if n > 2**31 - 1:
        raise ValueError(f"scale {scale}: node ids past int32 are not written as shards")
    m = int(edge_factor) * n
    bounds = (np.arange(parts + 1, dtype=np.int64) * n) // parts
    per_part = max(1, -(-max(m, 1) // parts))
    sub = max(1, -(-per_part // int(bucket_links)))  # buckets of each part
    cuts = np.unique(np.concatenate([
        bounds[j] + (np.arange(sub + 1) * (bounds[j + 1] - bounds[j])) // sub
        for j in range(parts)]))
    t0 = time.perf_counter()
    inbox = _route_rmat(scale, edge_factor, seed, xp, cuts, int(chunk), progress,
                        rmat_share, rmat_permutation)
    t1 = time.perf_counter()
    degree = xp.zeros(n, dtype=np.int64)  # out-degrees, counted where the CSR is built
    pieces: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(parts)]
    for b in range(cuts.size - 1):
        src, row = _joined(inbox[b])
        inbox[b] = []
        indptr, indices, _ = csr_on_device(xp.asarray(src), xp.asarray(row),
                                           int(cuts[b + 1] - cuts[b]))
        del src, row
        degree += xp.bincount(indices, minlength=n)
        indptr, indices = to_host(indptr), to_host(indices)
        owner = int(np.searchsorted(bounds, cuts[b], side="right")) - 1
        pieces[owner].append((indptr, indices))
        if progress is not None:
            progress("built", b + 1, cuts.size - 1)
    degree = to_host(degree)
    t2 = time.perf_counter()
    directory = shard_directory(directory)

    def write(j: int) -> tuple[str, int]:
        ptrs, offset = [np.zeros(1, dtype=np.int64)], 0
        for indptr, _ in pieces[j]:
            ptrs.append(np.asarray(indptr[1:], dtype=np.int64) + offset)
            offset += int(indptr[-1])
        r0, r1 = int(bounds[j]), int(bounds[j + 1])
        name = write_shard(directory, j, parts, r0, r1, n, {
            "indptr": ptrs, "indices": [ix for _, ix in pieces[j]],
            "out_weight": degree[r0:r1].astype(np.float64)})
        pieces[j] = []
        return name, offset

    # the shards side by side: a shard's write is one thread's checksum and copy into
    # the page cache (both outside the GIL), far below what the host's memory moves
    written = []
    with ThreadPoolExecutor(max_workers=max(1, min(parts, available_cpus()))) as pool:
        for done, (name, count) in enumerate(pool.map(write, range(parts)), 1):
            written.append((name, count))
            if progress is not None:
                progress("written", done, parts)
    files, edges = [name for name, _ in written], sum(count for _, count in written)
    write_manifest(directory, n=n, edges=edges, bounds=bounds, files=files,
                   weighted=False, name=f"rmat-{scale}")
    return {"generate_s": t1 - t0, "build_s": t2 - t1, "write_s": time.perf_counter() - t2,
            "n": n, "edges": edges}


def _route_rmat(scale: int, edge_factor: int, seed: int, xp: Any, cuts: np.ndarray,
                chunk: int, progress: Any, rmat_share: Any, rmat_permutation: Any
                ) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """The R-MAT shares drawn ``chunk`` edges at a time on ``xp``'s device, each edge
    sent to the bucket of ``cuts`` holding its target: per bucket, host pieces of
    ``(source, target - bucket start)``, int32."""
    m = int(edge_factor) << int(scale)
    shares = max(1, -(-m // chunk))
    perm = rmat_permutation(scale, seed=seed, xp=xp, dtype=np.int32)
    inner = xp.asarray(cuts[1:-1])
    inbox: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(cuts.size - 1)]
    for share in range(shares):
        src, dst, _ = rmat_share(scale, edge_factor, share=share, shares=shares, seed=seed,
                                 xp=xp, dtype=np.int32, perm=perm)
        bucket = xp.searchsorted(inner, dst, side="right")
        order = xp.argsort(bucket, kind="stable")
        counts = to_host(xp.bincount(bucket, minlength=cuts.size - 1))
        src, dst = to_host(src[order]), to_host(dst[order])
        del bucket, order
        ends = np.cumsum(counts)
        for b, (lo, hi) in enumerate(zip(ends - counts, ends, strict=True)):
            if hi > lo:
                inbox[b].append((src[lo:hi], dst[lo:hi] - np.int32(cuts[b])))
        if progress is not None:
            progress("generated", share + 1, shares)
    return inbox


def _joined(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not pieces:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    return (np.concatenate([s for s, _ in pieces]), np.concatenate([r for _, r in pieces]))
