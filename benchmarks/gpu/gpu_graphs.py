"""What the GPU benchmark scripts share: timing with every GPU synchronised, and the
generated graphs built on a device (R-MAT, or web-like in crawl order).

Imported by ``gpu_engine_choice.py`` and ``gpu_call_phases.py`` (run as scripts from this
folder, which puts it on ``sys.path``) and by ``benchmarks/distributed/distributed_bench.py``
(which adds this folder to ``sys.path``). Not run on its own; it writes nothing.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np


def sync_all() -> None:
    """Wait for the work queued on every GPU of the process."""
    import cupy as cp

    for d in range(cp.cuda.runtime.getDeviceCount()):
        cp.cuda.Device(d).synchronize()


def timed(fn: Any, repeats: int = 3) -> tuple[Any, float]:
    """``(last result, median seconds)`` of ``repeats`` calls of ``fn``, every GPU
    synchronised before and after each."""
    out, times = None, []
    for _ in range(repeats):
        sync_all()
        t0 = time.perf_counter()
        out = fn()
        sync_all()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def device_graph(family: str, scale: int, device: int | None = None) -> Any:
    """A generated graph built on a GPU (the current one, or ``device``): ``"rmat"``
    (R-MAT, edge factor 16, ids as generated) or ``"web"`` (``webrank.generate.web_crawl``,
    crawl order), seeded by the scale; named ``f"{family}-{scale}"``."""
    import contextlib

    import cupy as cp

    from webrank.backends.gpu_build import graph_on_device
    from webrank.generate import rmat, web_crawl

    if family not in ("rmat", "web"):
        raise ValueError(f"no generated family {family!r} (rmat, web)")
    where = contextlib.nullcontext() if device is None else cp.cuda.Device(device)
    with where:
        if family == "rmat":
            src, dst, n = rmat(scale, 16, seed=scale, xp=cp, dtype=np.int32)
        else:
            src, dst, n = web_crawl(scale, 16, seed=scale, xp=cp)
            src, dst = src.astype(np.int32), dst.astype(np.int32)
        g = graph_on_device(src, dst, n, name=f"{family}-{scale}")
        del src, dst
        cp.get_default_memory_pool().free_all_blocks()
    return g


def graph_by_name(name: str, data: Any) -> Any:
    """``rmat-S`` or ``web-S`` generated and built on the GPU (:func:`device_graph`), or
    the real graph ``NAME.txt.gz`` of the folder ``data`` read for the GPU."""
    from pathlib import Path

    import webrank

    family, _, scale = name.rpartition("-")
    if family in ("rmat", "web") and scale.isdigit():
        return device_graph(family, int(scale))
    return webrank.load(Path(data) / f"{name}.txt.gz", device="gpu")
