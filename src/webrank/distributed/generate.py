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

import time
from typing import Any

import numpy as np

from webrank.distributed.partition import Part

__all__ = ["rmat_parts"]


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
