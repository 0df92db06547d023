"""Device 0's CUDA context, created through the driver API on a thread of its own.

A process's first CUDA call initialises the driver and creates the device's *primary
context* (``cuInit``, ``cuDevicePrimaryCtxRetain``): a few tenths of a second on a
large GPU, spent mostly outside Python. CuPy makes these calls the first time it touches
the device, after its own imports, so a command that reads a graph for the GPU waited
for imports and context one after the other. Called through :mod:`ctypes`, which lets go
of the interpreter lock during a foreign call, the driver's two calls run while the
interpreter imports the command's modules. The CUDA runtime (and so CuPy) always works
in a device's primary context: finding it created, it uses it (NVIDIA, *CUDA C++
Programming Guide*, "Interoperability between Runtime and Driver APIs").

Best effort: no driver library, no device, or any failure leaves the work to CuPy's own
first call, which then reports what is wrong. This module imports nothing of webrank's
or NumPy's, so that the console script can start it before importing them.
"""

from __future__ import annotations

import ctypes
import threading

__all__ = ["start_primary_context"]

_started: threading.Thread | None = None


def _retain_primary_context(device: int) -> None:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        if driver.cuInit(0) != 0:
            return
        handle = ctypes.c_int()
        if driver.cuDeviceGet(ctypes.byref(handle), ctypes.c_int(device)) != 0:
            return
        # retained for the life of the process, as the runtime's own retain would be
        driver.cuDevicePrimaryCtxRetain(ctypes.byref(ctypes.c_void_p()), handle)
    except (OSError, AttributeError):  # no driver library, or one without these calls
        pass


def start_primary_context(device: int = 0) -> None:
    """Start creating CUDA device ``device``'s primary context on a background thread
    (idempotent; best effort). ``device`` is an ordinal among the visible devices
    (``CUDA_VISIBLE_DEVICES``), as CuPy's."""
    global _started
    if _started is None:
        _started = threading.Thread(target=_retain_primary_context, args=(device,),
                                    name="webrank-cuda-context", daemon=True)
        _started.start()
