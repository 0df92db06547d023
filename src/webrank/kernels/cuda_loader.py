"""The CUDA kernels built with the package: finding one and loading it.

When the package is built, :mod:`webrank.kernels.cuda_prebuilt` compiles every kernel
instantiation the backends can ask for with NVRTC, into the package folder
``webrank/kernels/cubin/``: per kernel source, one cubin per architecture (``sm_80``,
``sm_90``) holding all its instantiations, optionally one PTX (``compute_90``) for newer
GPUs, and ``index.json``, which names per source (by the SHA-256 of its text) its files
and the lowered (mangled) name of each name expression.

:func:`load` is what :func:`webrank.kernels.cuda_common.compiled_kernel` asks first: the
kernel from the cubin of the device's major architecture with the highest minor not above
the device's (an ``sm_80`` cubin runs on ``sm_86`` and ``sm_89``), else from the PTX of
the highest architecture not above the device's where the driver can compile it, loaded
once per device and file. It answers None, and the kernel is compiled on first use by
NVRTC through CuPy as a build without NVRTC does, where no file fits, the source changed
since the build (another digest), the name was not built, the options differ or a file
does not load.

``WEBRANK_CUDA_PREBUILT=0`` in the environment turns the prebuilt kernels off; a folder
path there reads that folder's index instead of the package's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the environment variable: "0" turns the prebuilt kernels off, a folder replaces the
#: package's
ENV = "WEBRANK_CUDA_PREBUILT"
#: the index of a folder of prebuilt kernels, and the version of its layout
INDEX = "index.json"
FORMAT = 1
#: the options compiled_kernel gives CuPy's NVRTC compile
JIT_OPTIONS = ("-std=c++17",)
#: what CuPy (13 and 14, cupy.cuda.compiler) adds to them, besides -arch and its include
#: folders: flush denormals to zero, device code by default. The prebuilt kernels are
#: compiled with both, so that they compute what a compile on first use computes.
CUPY_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")

log = logging.getLogger("webrank.kernels")


def package_folder() -> Path:
    """Where the package keeps its prebuilt kernels."""
    return Path(__file__).resolve().with_name("cubin")


def folder() -> Path | None:
    """The folder of prebuilt kernels in use (None: turned off by ``WEBRANK_CUDA_PREBUILT=0``)."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("0", "off", "false", "no"):
        return None
    if value and value.lower() not in ("1", "on", "true", "yes"):
        return Path(value)
    return package_folder()


def source_digest(source: str) -> str:
    """The key of a kernel source in an index: the SHA-256 of its text (UTF-8)."""
    return hashlib.sha256(source.encode()).hexdigest()


def read_index(where: Path) -> dict[str, Any]:
    """The index of the folder ``where`` ({} where it has none, or one this version of
    webrank does not read), read once per version of the file."""
    try:
        stat = (Path(where) / INDEX).stat()
    except OSError:
        return {}
    return _read_index(Path(where), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _read_index(where: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    try:
        index = json.loads((where / INDEX).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        return {}
    if tuple(index.get("options", ())) != JIT_OPTIONS + CUPY_OPTIONS:
        log.debug("prebuilt CUDA kernels in %s: other options %s", where,
                  index.get("options"))
        return {}
    return index


_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)$")


def parse_arch(arch: str) -> tuple[str, int, int]:
    """``"sm_86"`` -> ``("cubin", 8, 6)``, ``"compute_90"`` -> ``("ptx", 9, 0)``,
    ``"sm_100"`` -> ``("cubin", 10, 0)``."""
    m = _ARCH.match(arch)
    if m is None:
        raise ValueError(f"not an architecture such as sm_90 or compute_90: {arch!r}")
    return ("cubin" if m.group(1) == "sm" else "ptx"), int(m.group(2)), int(m.group(3))


def pick(files: dict[str, str], capability: tuple[int, int], driver: int,
         nvrtc: tuple[int, int]) -> str | None:
    """The architecture in ``files`` (``{"sm_80": file, "compute_90": file, ...}``) for a
    device of compute ``capability`` (major, minor) under a CUDA driver of version
    ``driver`` (12090 for 12.9), the files written by NVRTC ``nvrtc`` (major, minor).

    A cubin of the device's major architecture with the highest minor not above the
    device's; else the PTX of the highest architecture not above the device's, if the
    driver is at least the NVRTC version that wrote it (the PTX version it can read);
    else None. No file where the driver is of an older major version than NVRTC.

    >>> files = {"sm_80": "a", "sm_90": "b", "compute_90": "c"}
    >>> [pick(files, cc, 12090, (12, 9)) for cc in ((8, 6), (9, 0), (10, 0), (7, 5))]
    ['sm_80', 'sm_90', 'compute_90', None]
    >>> pick(files, (10, 0), 12040, (12, 9)) is None  # the driver cannot read the PTX
    True
    """
    if driver // 1000 < nvrtc[0]:
        return None
    major, minor = capability
    cubins, ptxs = [], []
    for arch in files:
        try:
            kind, a_major, a_minor = parse_arch(arch)
        except ValueError:
            continue
        if kind == "cubin" and a_major == major and a_minor <= minor:
            cubins.append((a_minor, arch))
        elif kind == "ptx" and (a_major, a_minor) <= (major, minor):
            ptxs.append(((a_major, a_minor), arch))
    if cubins:
        return max(cubins)[1]
    if ptxs and driver >= nvrtc[0] * 1000 + nvrtc[1] * 10:
        return max(ptxs)[1]
    return None


@dataclass(frozen=True)
class Prebuilt:
    """Where a kernel instantiation was built: the file, its architecture (``sm_90``,
    ``compute_90``) and the kernel's lowered name in it."""

    path: Path
    arch: str
    lowered: str


def find(source: str, name: str, capability: tuple[int, int], driver: int,
         where: Path | None = None) -> Prebuilt | None:
    """The prebuilt file of ``name`` (a name expression of ``source``) for a device of
    compute ``capability`` under a driver of version ``driver``, in the folder ``where``
    (default: :func:`folder`); None where there is none (see :func:`pick`)."""
    where = folder() if where is None else where
    if where is None:
        return None
    index = read_index(where)
    entry = index.get("sources", {}).get(source_digest(source))
    if entry is None or name not in entry["names"]:
        return None
    arch = pick(entry["files"], capability, driver, tuple(index["nvrtc"]))
    if arch is None:
        return None
    return Prebuilt(where / entry["files"][arch], arch, entry["names"][name])


def device_coverage(device_id: int = 0) -> str | None:
    """The architecture of the prebuilt files that device ``device_id`` runs (``"sm_90"``),
    or None where some kernel of webrank's would be compiled on its first use there (no
    prebuilt set, or none for this device and driver), or where there is no such device."""
    where = folder()
    if where is None:
        return None
    index = read_index(where)
    sources = index.get("sources", {})
    if not sources:
        return None
    try:
        capability, driver = _device(device_id)
    except Exception:  # no CuPy, or no such device: nothing runs there at all
        return None
    arches = {pick(entry["files"], capability, driver, tuple(index["nvrtc"]))
              for entry in sources.values()}
    return None if None in arches else max(arches)


_lock = threading.Lock()
#: (device, file) that failed to load: not tried again
_failed: set[tuple[int, Path]] = set()


@functools.cache
def _module(device_id: int, path: Path, cooperative: bool) -> Any:
    # CuPy loads the file once per device (RawModule's module cache) on the first
    # get_function; a cooperative kernel is launched with cuLaunchCooperativeKernel, which
    # a module built without -rdc serves (grid-wide barriers need no separate compilation
    # since CUDA 11)
    import cupy

    return cupy.RawModule(path=str(path), enable_cooperative_groups=cooperative)


@functools.cache
def _device(device_id: int) -> tuple[tuple[int, int], int]:
    import cupy

    cc = cupy.cuda.Device(device_id).compute_capability  # "90", "100"
    return (int(cc[:-1]), int(cc[-1])), cupy.cuda.runtime.driverGetVersion()


def load(source: str, name: str, cooperative: bool) -> Any:
    """The kernel ``name`` of ``source`` from the prebuilt files, for the current device
    (a ``cupy.RawKernel``, launched cooperatively if ``cooperative``), or None where it
    must be compiled (see the module's docstring)."""
    import cupy

    if getattr(cupy.cuda.runtime, "is_hip", False):
        return None
    device_id = cupy.cuda.Device().id
    capability, driver = _device(device_id)
    hit = find(source, name, capability, driver)
    if hit is None:
        return None
    with _lock:
        if (device_id, hit.path) in _failed:
            return None
    try:
        kernel = _module(device_id, hit.path, cooperative).get_function(hit.lowered)
    except (cupy.cuda.driver.CUDADriverError, OSError) as e:
        log.warning("prebuilt CUDA kernels %s did not load (%s): compiling on first use",
                    hit.path.name, e)
        with _lock:
            _failed.add((device_id, hit.path))
        return None
    log.debug("%s from %s", name, hit.path.name)
    return kernel
