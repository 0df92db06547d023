"""The compiled CPU kernels (C++ with OpenMP, ``native/`` in the source tree), loaded once.

They are compiled when the package is built (``pip install .``), so no call of webrank
waits for a compiler. :data:`lib` is the extension module; the ``webrank.kernels.cpu_*``
modules wrap its functions with checks and docstrings, and pass :func:`num_threads`.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType

try:
    from webrank.kernels import _cpu as lib
except ImportError as exc:  # pragma: no cover - a source tree that was never built
    raise ImportError(
        "webrank's compiled kernels (webrank.kernels._cpu) are missing: install the package "
        "with `pip install .` (needs a C++17 compiler), or, in a source checkout run from "
        "src/, build them with `python tools/build_native.py`") from exc

__all__ = ["available_cpus", "lib", "num_threads", "set_num_threads"]

_threads: int | None = None


def available_cpus() -> int:
    """The CPUs this process may use: its affinity mask (what a container, ``taskset``
    or Slurm gives it), not the host's count, shared with the other processes a
    launcher started on this host where their masks are not their own.

    ``mpirun --bind-to none`` and torchrun give each of a host's P processes every core;
    each then takes 1/P of them (a thread per core in each would oversubscribe the
    cores P times: OpenMP's waiting threads spin against the others' work). A process
    bound to its own cores (a mask of at most the host's CPUs / P) keeps its mask."""
    try:
        mask = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        mask = max(1, os.cpu_count() or 1)
    sharing = _processes_on_host()
    if sharing > 1 and mask * sharing > (os.cpu_count() or mask):
        return max(1, mask // sharing)
    return mask


@functools.cache
def _processes_on_host() -> int:
    """How many processes the launcher started on this host (1 without one): read once,
    the kernels ask for their thread count at every call."""
    from webrank.distributed.launch import launch_info

    return launch_info().local_size


def num_threads() -> int:
    """Threads of the parallel CPU kernels.

    Returns
    -------
    int
        What :func:`set_num_threads` set; else ``WEBRANK_NUM_THREADS``, else
        ``OMP_NUM_THREADS`` (its first entry), else :func:`available_cpus`. 1 where the
        kernels were built without OpenMP.
    """
    if not lib.openmp():  # pragma: no cover - a build without OpenMP
        return 1
    if _threads is not None:
        return _threads
    for var in ("WEBRANK_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return available_cpus()


def set_num_threads(threads: int | None) -> None:
    """Set the threads of the parallel CPU kernels for this process (``None``: back to
    the default of :func:`num_threads`).

    Raises
    ------
    ValueError
        ``threads`` is not a positive integer.
    """
    global _threads
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    _threads = threads


def module() -> ModuleType:
    """The extension module (for reports: ``webrank bench``'s environment)."""
    return lib
