"""Compute backends: ``cpu`` (NumPy/SciPy/Numba) and ``gpu`` (CuPy, custom CUDA kernels).

:func:`make_operator` picks one by name; ``"auto"`` takes the GPU when CuPy sees one.
Every operator is an :class:`Operator` (the graph on a device, its array module and
capabilities): :func:`make_operator` gives one for a vector at a time,
:func:`make_batch_operator` one for k vectors at once, :func:`make_frontier_operator` one
for the frontier of an incremental update.
CuPy is imported only here, lazily, so webrank works on machines without it.
"""

from __future__ import annotations

import functools
import os
import platform
import threading
from typing import TYPE_CHECKING

import numpy as np

from webrank.backends.base import (
    CPU_ENGINES,
    CRITERIA,
    DTYPES,
    GPU_ENGINES,
    PART_ENGINES,
    Operator,
    PageRankOperator,
    StepsResult,
)
from webrank.backends.options import DEFAULTS, EngineOptions
from webrank.errors import DeviceUnavailableError
from webrank.graph import Graph

if TYPE_CHECKING:
    from webrank.backends.batch import BatchOperator
    from webrank.backends.frontier import FrontierOperator

__all__ = [
    "CPU_ENGINES",
    "CRITERIA",
    "DEVICES",
    "DTYPES",
    "GPU_ENGINES",
    "PART_ENGINES",
    "EngineOptions",
    "Operator",
    "PageRankOperator",
    "StepsResult",
    "device_name",
    "gpu_available",
    "gpu_importable",
    "gpu_name",
    "make_batch_operator",
    "make_frontier_operator",
    "make_operator",
    "resolve_device",
    "start_gpu_warmup",
]

DEVICES = ("auto", "cpu", "gpu")

_GPU_HELP = (
    'install the GPU extra: pip install "webrank[gpu]" (CUDA 12 drivers) or '
    '"webrank[gpu-cuda13]" (CUDA 13), on a machine with an NVIDIA GPU'
)


@functools.cache
def gpu_importable() -> bool:
    """Whether CuPy is installed, found without importing it (a GPU run may be possible;
    :func:`resolve_device` says whether one is)."""
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


@functools.cache
def _gpu_status() -> tuple[bool, str]:
    """(usable, reason) for the GPU backend, probed once per process (where CuPy is
    missing, each ``import cupy`` would search the whole path again: a third of a
    millisecond of every ``device="auto"`` call on a small graph)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CuPy sees no CUDA device ({exc})"
    if count < 1:
        return False, "CuPy sees no CUDA device"
    return True, ""


_warmup: threading.Thread | None = None


def start_gpu_warmup() -> None:
    """Start what a process's first GPU call waits for — importing CuPy, creating the CUDA
    context and its memory pool — in a background
    thread, so that it overlaps with reading the graph (about 1 s on an H100 host; a text
    file's parse needs no GIL, so it runs beside it undisturbed). Idempotent; best
    effort: a failure shows where the GPU is first used.
    ``WEBRANK_GPU_WARMUP=0`` in the environment turns it off (to measure without it).
    """
    global _warmup
    if _warmup is None and os.environ.get("WEBRANK_GPU_WARMUP", "1") != "0":
        _warmup = threading.Thread(target=_warm_gpu, name="webrank-gpu-warmup", daemon=True)
        _warmup.start()


#: set once the warm-up thread has probed the GPU (resolve_device(early=True) waits on it)
_probed = threading.Event()


def _warm_gpu() -> None:
    try:
        usable = _gpu_status()[0]
        _probed.set()
        if not usable:
            return
        import cupy

        # the context and the memory pool (no CuPy operator with a Python scalar runs on
        # a GPU path, so cupyx.scipy.special and SciPy, which CuPy 14 imports for one,
        # are not imported: their import held the interpreter the read needs)
        cupy.zeros(1).sum()
    except Exception:
        pass
    finally:
        _probed.set()


def _await_warmup() -> None:
    if _warmup is not None and _warmup.is_alive():
        _warmup.join()


def gpu_available() -> bool:
    """True when CuPy is installed and sees at least one CUDA GPU.

    ``device="auto"`` runs on the GPU exactly when this is True; the reason it is False
    (no CuPy, a CuPy that does not match the driver, no device) is in the error that
    ``device="gpu"`` raises (:class:`~webrank.DeviceUnavailableError`).

    Examples
    --------
    >>> import webrank
    >>> device = "gpu" if webrank.gpu_available() else "cpu"
    >>> device in ("cpu", "gpu")
    True
    """
    _await_warmup()
    return _gpu_status()[0]


def gpu_name() -> str | None:
    """Name of the current CUDA device, or None without one."""
    if not gpu_available():
        return None
    import cupy

    return _device_name(cupy.cuda.Device().id)


@functools.cache
def _device_name(device_id: int) -> str:
    # cudaGetDeviceProperties reads every attribute: about 2 ms, once per device
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device_id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def device_name(device: str) -> str:
    """What a result names as its device: the GPU's name, or the CPU and its threads."""
    if device == "gpu":
        return gpu_name() or "GPU"
    from webrank.kernels.cpu import num_threads

    # platform.machine(), not processor(): on Linux processor() runs `uname -p` in a
    # subprocess (~15 ms of every first call) and mostly answers "" or the machine anyway
    return f"{platform.machine()} CPU, {num_threads()} threads"


def resolve_device(device: str, *, early: bool = False) -> str:
    """Map ``"auto"``/``"cpu"``/``"gpu"`` to the device that will run.

    ``early``: decide once the GPU is probed, without waiting for the rest of a
    :func:`start_gpu_warmup` (the CUDA context, CuPy's imports): to build a graph where
    it will run while the warm-up goes on.

    Raises
    ------
    DeviceUnavailableError
        ``device="gpu"`` on a machine where the GPU backend cannot run; the message
        says how to install the GPU extra.
    """
    if device == "cpu":
        return "cpu"
    if early and _warmup is not None:
        _probed.wait()
    else:
        _await_warmup()
    ok, reason = _gpu_status()
    if device == "gpu":
        if not ok:
            raise DeviceUnavailableError(f"device='gpu' requested but {reason}; {_GPU_HELP}")
        return "gpu"
    return "gpu" if ok else "cpu"


def make_operator(
    graph: Graph,
    *,
    device: str,
    alpha: float,
    personalization: np.ndarray | None,
    dangling: np.ndarray | None,
    dtype: str,
    options: EngineOptions = DEFAULTS,
) -> PageRankOperator:
    """The Google-matrix operator of ``graph`` on ``device`` ("cpu" or "gpu"), running
    the engine of ``options`` (checked for the device by
    :meth:`EngineOptions.for_device`): the CPU's step (:mod:`webrank.backends.cpu`), a
    GPU engine (:mod:`webrank.backends.gpu_engines`), or, engine ``"hybrid"``, Kumar et
    al.'s CPU+GPU split (:mod:`webrank.backends.hybrid`)."""
    if device == "gpu":
        from webrank.backends.gpu_engines import make_gpu_operator

        return make_gpu_operator(graph, alpha, personalization, dangling, dtype, options)
    from webrank.backends.cpu import CPUOperator

    return CPUOperator(graph, alpha, personalization, dangling, dtype, options)


def make_batch_operator(graph: Graph, *, device: str, alpha: float,
                        dangling: np.ndarray | None, dtype: str) -> BatchOperator:
    """The operator of a batch of k personalized vectors of ``graph`` on ``device``
    ("cpu" or "gpu"): the GPU's fused CUDA step (:mod:`webrank.backends.gpu_batch`), the
    CPU's Numba step, or without Numba SciPy's SpMM and NumPy
    (:mod:`webrank.backends.batch`). ``dangling``: a distribution shared by every
    column, or None (each column's own personalization)."""
    if device == "gpu":
        from webrank.backends.gpu_batch import gpu_batch_operator

        return gpu_batch_operator(graph, dtype, alpha, dangling)
    from webrank.backends.batch import cpu_batch_operator

    return cpu_batch_operator(graph, dtype, alpha, dangling)


def make_frontier_operator(graph: Graph, *, alpha: float,
                           out_links: tuple[np.ndarray, np.ndarray]) -> FrontierOperator:
    """The operator of the frontier phase of an incremental update of ``graph`` (CPU;
    its capabilities hold "frontier" where Numba imports), ``out_links`` its out-link
    CSR ``(indptr, targets)`` (:mod:`webrank.backends.frontier`)."""
    from webrank.backends.frontier import FrontierOperator

    return FrontierOperator(graph, alpha, out_links)
