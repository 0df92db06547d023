"""Compile webrank's CUDA kernels ahead, on a GPU for which none is prebuilt.

webrank's CPU kernels and its CUDA kernels are compiled when the package is built
(``native/``, :mod:`webrank.kernels.cuda_prebuilt`, for ``sm_80`` and ``sm_90``: A100,
A10, L4, RTX 30xx/40xx, H100, H200), and no GPU path runs one of CuPy's own kernels
(which CuPy compiles on a process's first use): on those GPUs a first call compiles
nothing, and :func:`fill_caches` has nothing to do. On a GPU of another architecture
(T4, V100, Blackwell), or with a build made without NVRTC, each kernel is compiled on
its first use, once per machine (CuPy keeps it in ``~/.cupy/kernel_cache`` or
``CUPY_CACHE_DIR``); :func:`fill_caches` (CLI: ``webrank warmup``) does that ahead, by
running the GPU paths on small generated graphs, one fresh process per group, side by
side on the machine's cores: useful in a container image's build step on such a GPU.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["GPU_TASKS", "fill_caches"]

#: groups of GPU paths, each warmed in its own process
GPU_TASKS = ("gpu-load", "gpu-float64", "gpu-float32", "gpu-methods", "gpu-personalized")


def fill_caches(jobs: int | None = None,
                report: Callable[[str, float, bool], None] | None = None,
                force: bool = False) -> dict[str, dict[str, Any]]:
    """Compile the GPU paths' on-first-use kernels into CuPy's on-disk cache.

    Nothing (an empty dict) where this GPU runs the prebuilt kernels, unless ``force``.

    Parameters
    ----------
    jobs : int, optional
        Processes at once (default: the CPUs this process may use).
    report : callable, optional
        ``report(task, seconds, ok)`` as each group finishes.
    force : bool, default False
        Run the paths even where every kernel is prebuilt (a check that none compiles).

    Returns
    -------
    dict
        Per task: ``{"seconds": float, "ok": bool, "error": str}`` (the last lines of
        a failed task's output).
    """
    from webrank.kernels import cuda_loader
    from webrank.kernels.native import available_cpus

    if not force and cuda_loader.device_coverage() is not None:
        return {}  # every kernel is prebuilt for this GPU: nothing compiles on first use
    tasks = list(GPU_TASKS)
    jobs = jobs or available_cpus()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="webrank-warmup-") as tmp:
        def run(task: str) -> None:
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "webrank.warmup", task, tmp],
                               capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            ok = p.returncode == 0
            results[task] = {"seconds": seconds, "ok": ok,
                             "error": "" if ok else (p.stderr or p.stdout)[-2000:]}
            if report is not None:
                report(task, seconds, ok)

        with ThreadPoolExecutor(min(jobs, len(tasks) or 1)) as pool:
            list(pool.map(run, tasks))
    return results


def _lower_thresholds() -> None:
    """Let small files and graphs take the paths of large ones (this process only), so
    that a few thousand links compile what they run: a small file loaded for the GPU
    takes the device build of large ones rather than the host's."""
    from webrank import build_gpu

    build_gpu.HOST_BUILD_EDGES = 0


def _graphs() -> tuple[Any, Any]:
    """An unweighted and a weighted graph of a few thousand links."""
    import numpy as np

    import webrank

    g = webrank.generate_graph("rmat", 11, seed=1)
    src, dst, _ = g.edges()
    w = np.random.default_rng(1).random(src.size) + 0.5
    return g, webrank.Graph.from_edges(src, dst, w)


def _task(name: str, folder: Path) -> None:
    """Run one group's paths (in a process of its own)."""
    _lower_thresholds()
    import webrank

    g, gw = _graphs()
    tol = 1e-8
    if name == "gpu-load":
        device = "gpu"
        src, dst, _ = g.edges()
        for header, weighted in ((False, False), (True, True)):
            path = folder / f"{name}-{int(weighted)}.txt"
            lines = [f"{a}\t{b}" + ("\t1.5" if weighted else "")
                     for a, b in zip(src.tolist(), dst.tolist(), strict=True)]
            path.write_text(("src\tdst\n" if header else "") + "\n".join(lines) + "\n")
            host = webrank.load(path)
            webrank.pagerank(webrank.load(path, device=device), device=device, tol=tol)
            cache = path.with_suffix(".npz")  # (read for the GPU: checked there)
            webrank.save_graph(host, cache)
            webrank.pagerank(webrank.load(cache, device=device), device=device, tol=tol)
    elif name in ("gpu-float64", "gpu-float32"):
        from webrank.backends.base import GPU_ENGINES

        dtype = name.split("-")[1]
        for graph in (g, gw):
            for engine in GPU_ENGINES:
                webrank.pagerank(graph, method="power", device="gpu", dtype=dtype,
                                 tol=1e-6, engine=engine)
    elif name == "gpu-methods":
        for method in ("gmres", "adaptive", "fixed", "aitken"):
            webrank.pagerank(g, method=method, device="gpu", tol=tol)
    elif name == "gpu-personalized":
        webrank.personalized_pagerank(g, [[0], [1, 2]], device="gpu", tol=tol)
    else:
        raise SystemExit(f"unknown warm-up task {name!r}")


if __name__ == "__main__":
    _task(sys.argv[1], Path(sys.argv[2]))
