"""Fill the compiled-kernel caches once, so that no run waits for a compiler.

webrank's CPU kernels are compiled by Numba and its GPU kernels by NVRTC (through CuPy)
the first time a process uses them after an install or an upgrade; both compilers keep
what they made on disk (Numba: ``__pycache__`` beside the modules or
``NUMBA_CACHE_DIR``; CuPy: ``~/.cupy/kernel_cache`` or ``CUPY_CACHE_DIR``), and every
later process loads it instead. :func:`fill_caches` (CLI: ``webrank warmup``) runs every
path a ranking may take on small generated graphs, one fresh process per group of
kernels and the groups side by side on the machine's cores, with the size thresholds
that pick the parallel kernels lowered so that the small graphs take them too. Run it
once after ``pip install`` (in a container image's build step, say).
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

__all__ = ["CPU_TASKS", "GPU_TASKS", "fill_caches"]

#: groups of CPU kernels, each warmed in its own process
CPU_TASKS = ("read", "power", "power-float32", "gauss-seidel", "krylov", "adaptive-fixed",
             "personalized", "update")
#: groups of GPU kernels
GPU_TASKS = ("gpu-load", "gpu-float64", "gpu-float32", "gpu-methods", "gpu-personalized")


def fill_caches(devices: tuple[str, ...] = ("cpu", "gpu"), jobs: int | None = None,
                report: Callable[[str, float, bool], None] | None = None
                ) -> dict[str, dict[str, Any]]:
    """Compile the kernels of ``devices`` ("cpu", "gpu") into the on-disk caches.

    Parameters
    ----------
    devices : tuple of str, default ("cpu", "gpu")
        The devices to warm; "gpu" is skipped where no GPU is usable.
    jobs : int, optional
        Processes at once (default: the CPUs this process may use).
    report : callable, optional
        ``report(task, seconds, ok)`` as each group finishes.

    Returns
    -------
    dict
        Per task: ``{"seconds": float, "ok": bool, "error": str}`` (the last lines of
        a failed task's output).
    """
    unknown = set(devices) - {"cpu", "gpu"}
    if unknown:
        raise ValueError(f"devices must be 'cpu' and/or 'gpu', not {sorted(unknown)}")
    tasks = list(CPU_TASKS) if "cpu" in devices else []
    if "gpu" in devices:
        from webrank.backends import gpu_available

        if gpu_available():
            tasks += GPU_TASKS
    from webrank.kernels.cpu import available_cpus  # (imports no Numba)

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
    """Let small files, edge lists and graphs take the parallel reader, build and
    kernels (this process only), so that a few thousand links compile them all."""
    from webrank import build
    from webrank.io import edgelist
    from webrank.kernels import cpu

    build.PARALLEL_BUILD_EDGES = 1
    edgelist.PARALLEL_PARSE_BYTES = 1
    cpu.SMALL_GRAPH_EDGES = 0


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
    if name in ("read", "gpu-load"):
        device = "gpu" if name == "gpu-load" else "cpu"
        src, dst, _ = g.edges()
        for header, weighted in ((False, False), (True, True)):
            path = folder / f"{name}-{int(weighted)}.txt"
            lines = [f"{a}\t{b}" + ("\t1.5" if weighted else "")
                     for a, b in zip(src.tolist(), dst.tolist(), strict=True)]
            path.write_text(("src\tdst\n" if header else "") + "\n".join(lines) + "\n")
            host = webrank.load(path)
            graph = host if device == "cpu" else webrank.load(path, device=device)
            webrank.pagerank(graph, device=device, tol=tol)
            cache = path.with_suffix(".npz")  # (read for the GPU: checked there)
            webrank.save_graph(host, cache)
            webrank.pagerank(webrank.load(cache, device=device), device=device, tol=tol)
    elif name in ("power", "power-float32"):
        dtype = "float32" if name == "power-float32" else "float64"
        for graph in (g, gw):
            for engine in ("pull", "blocked"):
                webrank.pagerank(graph, method="power", device="cpu", dtype=dtype, tol=tol,
                                 engine=engine)
    elif name == "gauss-seidel":
        for graph in (g, gw):
            webrank.pagerank(graph, method="gauss-seidel", device="cpu", tol=tol)
    elif name == "krylov":
        for method in ("gmres", "bicgstab", "aitken", "quadratic"):
            webrank.pagerank(g, method=method, device="cpu", tol=tol)
    elif name == "adaptive-fixed":
        webrank.pagerank(g, method="adaptive", device="cpu", tol=tol)
        webrank.pagerank(g, method="fixed", device="cpu", tol=tol)
        webrank.pagerank(g, method="fixed", device="cpu", tol=tol, skip_converged=True)
    elif name == "personalized":
        seeds = [[0], [1, 2], [3]]
        webrank.personalized_pagerank(g, seeds, device="cpu", tol=tol)
    elif name == "update":
        src, dst, _ = g.edges()
        r = webrank.pagerank(g, device="cpu", tol=tol)
        webrank.update(r, g, added_edges=[(int(src[0]), int(dst[-1]))], tol=tol)
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
