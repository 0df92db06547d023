"""Lanes per row x gather order on R-MAT graphs built on the GPU: marginal ms per step.

    python3 benchmarks/gpu/gpu_layout_sweep.py [SCALE ...]

Picks the defaults of the GPU engine for graphs whose gathered vector outgrows L2
(see ``webrank.backends.gpu``); prints one line per setting (published:
``benchmarks/results/gpu/h100/gpu_layout_sweep.txt``).
"""

from __future__ import annotations

import sys
import time

import cupy as cp
import numpy as np

import webrank
from webrank.backends import gpu_name
from webrank.backends.gpu_build import graph_on_device
from webrank.generate import rmat


def steps_time(g, k, **opts) -> float:
    best = np.inf
    for _ in range(2):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        webrank.pagerank(g, tol=1e-300, max_iter=k, device="gpu", dtype="float32",
                         raise_on_nonconvergence=False, **opts)
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


print("GPU:", gpu_name())
for scale in [int(s) for s in sys.argv[1:]] or [22, 24, 26]:
    src, dst, n = rmat(scale, 16, seed=scale, xp=cp, dtype=np.int32)
    g = graph_on_device(src, dst, n, name=f"rmat-{scale}")
    del src, dst
    cp.get_default_memory_pool().free_all_blocks()
    k1, k2 = (20, 60) if scale >= 25 else (40, 160)
    for reorder in (None, "out-degree"):
        for lanes in (1, 2, 4, 8, 16):
            for thr in (64, 256):
                opts = {"reorder": reorder, "lanes_per_row": lanes, "heavy_threshold": thr}
                steps_time(g, 3, **opts)  # compile, cache the layout
                t1, t2 = steps_time(g, k1, **opts), steps_time(g, k2, **opts)
                ms = 1e3 * (t2 - t1) / (k2 - k1)
                print(f"rmat-{scale} reorder={reorder!s:10} lanes={lanes:2d} heavy>{thr:3d}: "
                      f"{ms:8.3f} ms/step", flush=True)
    del g
    cp.get_default_memory_pool().free_all_blocks()
