"""What a benchmark result must say about where it came from."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from webrank.memory import meminfo

__all__ = ["available_memory", "environment", "median_time", "source_digest", "write_json"]


def _git_commit() -> str:
    """The checkout's commit; ``WEBRANK_COMMIT`` overrides it (copies of a working tree
    on a benchmark machine may carry a stale ``.git``)."""
    if os.environ.get("WEBRANK_COMMIT"):
        return os.environ["WEBRANK_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, cwd=Path(__file__).parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def source_digest() -> str:
    """The first 12 hex digits of a SHA-256 over the package's Python files (relative
    path and bytes, in path order): which code ran, even where the commit cannot say
    (a copied working tree, uncommitted edits)."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def available_memory() -> int | None:
    """Bytes of host memory available now, or None when unknown."""
    from webrank.memory import available_bytes

    return available_bytes()


def environment() -> dict[str, Any]:
    """Machine, CPU, GPU, library versions, commit and date of this run."""
    import scipy

    import webrank
    from webrank.backends import gpu_name

    env: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        "source_digest": source_digest(),
        "webrank": webrank.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "gpu": gpu_name(),
        "memory_bytes": meminfo("MemTotal"),
        # other work on the machine skews timings; say how busy it was when this ran
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    from webrank.kernels.native import num_threads

    env["cpu_threads"] = num_threads()  # of the compiled CPU kernels
    if env["gpu"]:
        import cupy

        env["cupy"] = cupy.__version__
        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        env["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
    return env


def median_time(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1,
                sync: Callable[[], None] | None = None) -> dict[str, float]:
    """Median/min/max wall time of ``fn()`` in seconds, after ``warmup`` untimed calls.

    ``sync`` (e.g. a CUDA stream synchronize) runs before each clock read.
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        if sync:
            sync()
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return {"median": float(np.median(times)), "min": float(np.min(times)),
            "max": float(np.max(times)), "repeat": repeat}


def write_json(doc: dict[str, Any], path: str | Path) -> None:
    """Write ``doc`` as indented JSON, atomically."""
    from webrank.files.atomic import atomic_write

    with atomic_write(Path(path), mode="w") as f:
        json.dump(doc, f, indent=2, default=str)
        f.write("\n")
