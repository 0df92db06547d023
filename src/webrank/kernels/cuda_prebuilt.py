"""The CUDA kernels compiled when the package is built, so that no first call waits for
a compiler.

Every kernel family (a ``webrank.kernels.cuda*`` module) lists the instantiations its
backends can ask for (its ``instantiations()``: source, name expression, cooperative);
:func:`build` compiles each source once per architecture with NVRTC (the
``cuda-bindings`` package's ``cuda.bindings.nvrtc``), every name expression of it in that
one program, and writes into a folder

* ``<family>.sm_80.cubin``, ``<family>.sm_90.cubin``: the machine code of every
  instantiation of the family (an ``sm_80`` cubin runs on every 8.x GPU: A100, A10, L4,
  RTX 30xx/40xx; ``sm_90`` on the H100 and H200),
* ``<family>.compute_90.ptx`` where asked for (``--ptx compute_90``; not by default):
  for GPUs of a newer architecture (Blackwell and later), which the driver compiles, the
  whole family at once, when it loads it,
* ``index.json``: the NVRTC version and options, and per source (by the SHA-256 of its
  text) the files and the lowered (mangled) name of each name expression,

which :mod:`webrank.kernels.cuda_loader` reads at run time. The package's build
(CMakeLists.txt) runs ``python -m webrank.kernels.cuda_prebuilt --out DIR --optional``
and installs the folder as ``webrank/kernels/cubin/``; ``python tools/build_native.py``
builds it into ``src/webrank/kernels/cubin/``. NVRTC's options are those of a compile on
first use (:data:`~webrank.kernels.cuda_loader.JIT_OPTIONS` and what CuPy adds,
:data:`~webrank.kernels.cuda_loader.CUPY_OPTIONS`); its headers (``cooperative_groups.h``
and CCCL's ``nv/target``) come from the ``nvidia-cuda-runtime-cu12`` and
``nvidia-cuda-cccl-cu12`` wheels, or a CUDA toolkit of NVRTC's major version.

Command line::

    python -m webrank.kernels.cuda_prebuilt --out DIR [--arch sm_80,sm_90]
        [--ptx none|compute_90] [--family pull,fixed,...] [--jobs N] [--optional]
    python -m webrank.kernels.cuda_prebuilt --check   # can NVRTC build them here?
    python -m webrank.kernels.cuda_prebuilt --list    # the instantiations per family
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from webrank.kernels import cuda_loader

#: the cubins built by default. No PTX by default: a driver compiles a whole PTX module
#: when it loads it (the pull family's 208 kernels: about 20 s on an H100, with or without
#: lazy loading), ten times what NVRTC through CuPy takes for the one kernel a first call
#: needs on a GPU of a newer architecture; ``--ptx compute_90`` builds it
ARCHS = ("sm_80", "sm_90")
PTX = None


class Unavailable(RuntimeError):
    """NVRTC (or the headers the kernels include) cannot be used here."""


#: modules of webrank.kernels that hold no kernel family
_NOT_FAMILIES = ("cuda_common", "cuda_loader", "cuda_prebuilt")


def family_modules() -> dict[str, ModuleType]:
    """Every kernel family module: each ``webrank.kernels.cuda*`` module with an
    ``instantiations()`` function, by the name of its family (``cuda`` is ``pull``)."""
    found = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]),
                       key=lambda i: i.name):
        if not info.name.startswith("cuda") or info.name in _NOT_FAMILIES:
            continue
        module = importlib.import_module(f"webrank.kernels.{info.name}")
        if callable(getattr(module, "instantiations", None)):
            found["pull" if info.name == "cuda" else info.name.removeprefix("cuda_")] = module
    return found


@dataclass
class Family:
    """One kernel source and every instantiation of it the backends can ask for:
    ``(name expression, cooperative)``."""

    module: str
    source: str
    names: list[tuple[str, bool]]


def kernel_families() -> dict[str, Family]:
    """Every kernel source by the name of its family (the name of its files), with its
    instantiations, gathered from each family module's ``instantiations()``: a list of
    ``(source, name expression, cooperative)``, or of name expressions of the module's
    ``SOURCE``. A module's ``SOURCE`` is its family; another source it lists must be a
    ``<NAME>_SOURCE`` of it, the family ``<name>`` (``cuda.ARCHIVE_SOURCE``: ``archive``)."""
    found: dict[str, Family] = {}
    for label, module in family_modules().items():
        by_source: dict[str, dict[str, bool]] = {}
        for item in module.instantiations():
            source, name, cooperative = ((module.SOURCE, item, False) if isinstance(item, str)
                                         else item)
            names = by_source.setdefault(source, {})
            names[name] = names.get(name, False) or bool(cooperative)
        for source, names in by_source.items():
            family = label
            if source != getattr(module, "SOURCE", None):
                attrs = [a for a in dir(module) if a.endswith("_SOURCE")
                         and getattr(module, a) == source]
                if not attrs:
                    raise ValueError(f"{module.__name__}: {next(iter(names))} is of a "
                                     "source that is neither its SOURCE nor a *_SOURCE")
                family = attrs[0].removesuffix("_SOURCE").lower()
            if family in found:
                raise ValueError(f"two kernel families are named {family}")
            found[family] = Family(module.__name__, source, list(names.items()))
    return found


def sources() -> dict[str, str]:
    """Each kernel source by the name of its family."""
    return {label: f.source for label, f in kernel_families().items()}


def instantiations() -> dict[str, list[tuple[str, bool]]]:
    """Every instantiation the backends can ask for, per family: ``(name expression,
    cooperative)``."""
    return {label: f.names for label, f in kernel_families().items()}


def _preload_wheel_nvrtc(major: int) -> None:
    """Load ``libnvrtc.so.<major>`` from an NVIDIA wheel on ``sys.path``, where there is
    one: ``cuda.bindings`` looks for it (through ``cuda.pathfinder``) in
    ``site.getsitepackages()`` only, which misses the build environment pip (before 24)
    adds to ``sys.path``, but it takes a library already loaded."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    for location in (spec.submodule_search_locations or []) if spec else []:
        for lib in sorted(Path(location).glob(f"*/lib/libnvrtc.so.{major}")):
            try:
                ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


def _nvrtc() -> Any:
    try:
        import cuda.bindings
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise Unavailable(f"cuda.bindings.nvrtc cannot be imported ({e}): pip install "
                          "'cuda-bindings<13' nvidia-cuda-nvrtc-cu12") from None
    major = str(getattr(cuda.bindings, "__version__", "")).split(".")[0]
    if major.isdigit():
        _preload_wheel_nvrtc(int(major))
    try:
        err = nvrtc.nvrtcVersion()[0]
    except Exception as e:  # the library is missing or does not load
        raise Unavailable(f"NVRTC does not load ({e}): pip install "
                          "nvidia-cuda-nvrtc-cu12") from None
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise Unavailable(f"NVRTC does not answer ({err})")
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    """The version of the NVRTC :func:`build` uses (raises :class:`Unavailable`)."""
    _, major, minor = _nvrtc().nvrtcVersion()
    return int(major), int(minor)


def _wheel_include(package: str) -> Path | None:
    """``nvidia/<package>/include`` of an installed NVIDIA wheel (CUDA 12's layout)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / package / "include"
        if path.is_dir():
            return path
    return None


def _toolkit_include(library: str) -> Path | None:
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        return None
    try:
        found = find_nvidia_header_directory(library)
    except Exception:
        return None
    return Path(found) if found else None


def _cudart_version(folder: Path) -> int:
    """``CUDART_VERSION`` of the CUDA runtime headers in ``folder`` (12090: 12.9)."""
    api = folder / "cuda_runtime_api.h"
    m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)",
                  api.read_text(errors="replace") if api.is_file() else "")
    return int(m.group(1)) if m else 0


def include_dirs(nvrtc_major: int) -> tuple[list[Path], int]:
    """The folders of ``cooperative_groups.h`` (of NVRTC's major CUDA version) and
    ``nv/target`` for NVRTC, and the CUDA version of the former (``CUDART_VERSION``):
    the wheels' (``nvidia-cuda-runtime-cu12``, ``nvidia-cuda-cccl-cu12``) first, else
    where ``cuda.pathfinder`` finds them (conda, ``CUDA_HOME``)."""
    dirs: list[Path] = []
    for wheel, library, probe in (("cuda_runtime", "cudart", "cooperative_groups.h"),
                                  ("cuda_cccl", "cccl", "nv/target")):
        found = [d for d in (_wheel_include(wheel), _toolkit_include(library))
                 if d is not None and (d / probe).is_file()]
        if library == "cudart":
            other = [d for d in found if _cudart_version(d) // 1000 != nvrtc_major]
            found = [d for d in found if d not in other]
            if other and not found:
                raise Unavailable(f"the CUDA headers in {other[0]} are of CUDA "
                                  f"{_cudart_version(other[0]) // 1000}, NVRTC of CUDA "
                                  f"{nvrtc_major}")
        if not found:
            raise Unavailable(f"no {probe} for NVRTC: pip install "
                              f"nvidia-{wheel.replace('_', '-')}-cu12")
        if found[0] not in dirs:
            dirs.append(found[0])
    return dirs, _cudart_version(dirs[0])


def check() -> str:
    """What :func:`build` would use, in words (raises :class:`Unavailable`)."""
    major, minor = nvrtc_version()
    dirs, headers = include_dirs(major)
    sources()  # the kernel modules import (NumPy is there)
    return (f"NVRTC {major}.{minor}, CUDA {headers // 1000}.{headers % 1000 // 10} headers "
            f"in {', '.join(map(str, dirs))}")


@dataclass
class Compiled:
    """One NVRTC program: a family's source for one architecture."""

    family: str
    arch: str
    binary: bytes  # the cubin (empty for a PTX-only program)
    ptx: bytes
    lowered: dict[str, str]
    seconds: float
    log: str = field(default="", repr=False)


def _check(result: Any, what: str, prog: Any = None, nvrtc: Any = None) -> Any:
    err = result[0]
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        log = _program_log(nvrtc, prog) if prog is not None else ""
        raise RuntimeError(f"NVRTC {what}: {err.name}\n{log}")
    return result[1] if len(result) > 1 else None


def _program_log(nvrtc: Any, prog: Any) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    buf = _buffer(size)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0 ").decode(errors="replace")


def _buffer(size: int) -> bytearray:
    """A writable buffer for NVRTC to fill. Never ``b" " * size``: NVRTC writes into
    the object it is given, and a one-byte ``bytes`` is CPython's shared singleton
    (``b" "`` itself): an empty log's terminating NUL turned every ``b" "`` of the process
    into ``b"\\0"``."""
    return bytearray(size)


def compile_source(family: str, source: str, names: Iterable[str], arch: str,
                   include: Iterable[Path], ptx: bool = False) -> Compiled:
    """Compile ``source`` for ``arch`` (``sm_90``: a cubin; ``compute_90``: PTX only)
    with every name expression of ``names`` in one NVRTC program; ``ptx`` keeps the PTX
    of an ``sm_`` program too."""
    nvrtc = _nvrtc()
    names = list(names)
    t0 = time.perf_counter()
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), f"{family}.cu".encode(), 0, [],
                                           []), "create", nvrtc=nvrtc)
    try:
        for name in names:
            _check(nvrtc.nvrtcAddNameExpression(prog, name.encode()), "name", nvrtc=nvrtc)
        options = [o.encode() for o in (*cuda_loader.JIT_OPTIONS, *cuda_loader.CUPY_OPTIONS,
                                        f"-arch={arch}", *(f"-I{d}" for d in include))]
        _check(nvrtc.nvrtcCompileProgram(prog, len(options), options),
               f"compile of {family} for {arch}", prog, nvrtc)
        text_log = _program_log(nvrtc, prog)
        lowered = {}
        for name in names:
            lowered[name] = _check(nvrtc.nvrtcGetLoweredName(prog, name.encode()),
                                   "lowered name", nvrtc=nvrtc).decode()
        binary = b""
        if arch.startswith("sm_"):
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size", nvrtc=nvrtc)
            buf = _buffer(size)
            _check(nvrtc.nvrtcGetCUBIN(prog, buf), "cubin", nvrtc=nvrtc)
            binary = bytes(buf)
        text = b""
        if ptx or not binary:
            size = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size", nvrtc=nvrtc)
            buf = _buffer(size)
            _check(nvrtc.nvrtcGetPTX(prog, buf), "PTX", nvrtc=nvrtc)
            text = bytes(buf).rstrip(b"\0")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return Compiled(family, arch, binary, text, lowered, time.perf_counter() - t0, text_log)


def _write(path: Path, data: bytes) -> None:
    staged = path.with_name(f".{path.name}.tmp")
    staged.write_bytes(data)
    staged.replace(path)


def _check_archs(archs: list[str], ptx: str | None) -> None:
    """ValueError unless every cubin architecture is an ``sm_XY`` and the PTX one a
    ``compute_XY``."""
    for arch in [*archs, *([ptx] if ptx else [])]:
        kind = cuda_loader.parse_arch(arch)[0]
        if (kind == "cubin") != (arch in archs):
            raise ValueError(f"cubins are sm_XY architectures, the PTX compute_XY: {arch}")


def _wanted_families(families: Iterable[str] | None
                     ) -> tuple[dict[str, str], dict[str, list[tuple[str, bool]]]]:
    """``(source, names)`` by family, of the families asked for (None: every one), in
    the order asked; ``names``: each name expression and whether it is cooperative.
    ValueError naming the families that do not exist."""
    found = kernel_families()
    texts = {label: f.source for label, f in found.items()}
    wanted = {label: f.names for label, f in found.items()}
    if families is not None:
        families = list(families)
        unknown = sorted(set(families) - set(wanted))
        if unknown:
            raise ValueError(f"unknown families {unknown}; known: {sorted(wanted)}")
        wanted = {f: wanted[f] for f in families}
    return texts, wanted


def _kept_families(previous: dict[str, Any], out: Path, texts: dict[str, str],
                   wanted: dict[str, list[tuple[str, bool]]]) -> dict[str, dict[str, Any]]:
    """The index entries, by family, of the families a build before into ``out`` (its
    index ``previous``, made by the same NVRTC, headers and architectures) left usable:
    the same source and names, every file still there. They are kept, so that a rebuild
    after an edit compiles only the families it changed."""
    kept = {}
    for family, names in wanted.items():
        entry = previous["sources"].get(cuda_loader.source_digest(texts[family]))
        if (entry is not None and entry["family"] == family
                and set(entry["names"]) == {n for n, _ in names}
                and all((out / f).is_file() for f in entry["files"].values())):
            kept[family] = entry
    return kept


def _write_family(out: Path, family: str, programs: list[Compiled],
                  names: list[tuple[str, bool]], ptx: str | None) -> dict[str, Any]:
    """Write the binaries of one family's ``programs`` (one per architecture) into
    ``out``: a cubin per ``sm_`` program, the PTX for ``ptx`` where asked for. Returns
    the family's index entry (its files, lowered names and cooperative kernels);
    RuntimeError where the architectures lowered a name differently."""
    lowered = programs[0].lowered
    if any(r.lowered != lowered for r in programs):
        raise RuntimeError(f"{family}: the lowered names differ between architectures")
    files = {}
    for r in programs:
        if r.binary:
            files[r.arch] = f"{family}.{r.arch}.cubin"
            _write(out / files[r.arch], r.binary)
        if r.ptx and ptx is not None:
            files[ptx] = f"{family}.{ptx}.ptx"
            _write(out / files[ptx], r.ptx)
    return {"family": family, "files": files, "names": lowered,
            "cooperative": sorted(n for n, c in names if c)}


def build(out_dir: str | os.PathLike[str], archs: Iterable[str] = ARCHS,
          ptx: str | None = PTX, families: Iterable[str] | None = None,
          jobs: int | None = None, report: Callable[[str], None] | None = None
          ) -> dict[str, Any]:
    """Compile the families' instantiations (default: all) into ``out_dir``: a cubin per
    family and architecture of ``archs``, a PTX per family for ``ptx`` (None: none; from
    the ``sm_`` program of the same architecture where there is one), and the index,
    written last. ``jobs`` programs at once (default: this process's CPUs); ``report``
    (optional) gets a line per program and one for the whole. Returns the index."""
    archs = list(dict.fromkeys(archs))
    _check_archs(archs, ptx)
    version = nvrtc_version()
    include, headers = include_dirs(version[0])
    texts, wanted = _wanted_families(families)
    ptx_twin = None if ptx is None else "sm_" + ptx.split("_", 1)[1]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a rebuild into the same folder by the same compiler for the same architectures
    # compiles only the families whose source or names changed
    previous = cuda_loader.read_index(out)
    same_build = (previous.get("nvrtc") == list(version) and previous.get("headers") == headers
                  and previous.get("archs") == archs and previous.get("ptx") == ptx)
    kept = _kept_families(previous, out, texts, wanted) if same_build else {}
    tasks = [(family, arch, arch == ptx_twin) for family in wanted if family not in kept
             for arch in archs]
    if ptx is not None and ptx_twin not in archs:
        tasks += [(family, ptx, True) for family in wanted if family not in kept]
    # the largest programs first, so that the last ones to finish are short
    tasks.sort(key=lambda t: -len(wanted[t[0]]))
    (out / cuda_loader.INDEX).unlink(missing_ok=True)

    def run(task: tuple[str, str, bool]) -> Compiled:
        family, arch, keep_ptx = task
        done = compile_source(family, texts[family], [n for n, _ in wanted[family]], arch,
                              include, keep_ptx)
        if report is not None:
            size = len(done.binary) + len(done.ptx)
            report(f"{family} {arch}: {len(done.lowered)} kernels, {done.seconds:.1f} s, "
                   f"{size / 1e6:.2f} MB")
        return done

    t0 = time.perf_counter()
    workers = max(1, jobs or len(os.sched_getaffinity(0)))
    results = []
    if tasks:
        with ThreadPoolExecutor(min(workers, len(tasks))) as pool:
            results = list(pool.map(run, tasks))
    index: dict[str, Any] = {
        "format": cuda_loader.FORMAT, "nvrtc": list(version), "headers": headers,
        "options": [*cuda_loader.JIT_OPTIONS, *cuda_loader.CUPY_OPTIONS],
        "archs": archs, "ptx": ptx, "sources": {}, "seconds": {},
    }
    files_written = set()
    for family in wanted:
        if family in kept:
            index["sources"][cuda_loader.source_digest(texts[family])] = kept[family]
            index["seconds"][family] = previous.get("seconds", {}).get(family, {})
            files_written.update(kept[family]["files"].values())
            continue
        mine = [r for r in results if r.family == family]
        entry = _write_family(out, family, mine, wanted[family], ptx)
        files_written.update(entry["files"].values())
        index["sources"][cuda_loader.source_digest(texts[family])] = entry
        index["seconds"][family] = {r.arch: round(r.seconds, 2) for r in mine}
    for stale in out.iterdir():  # binaries of an earlier build
        if stale.suffix in (".cubin", ".ptx") and stale.name not in files_written:
            stale.unlink()
    _write(out / cuda_loader.INDEX, json.dumps(index, indent=1).encode())
    if report is not None:
        total = sum((out / f).stat().st_size for f in files_written)
        report(f"{sum(len(v) for v in wanted.values())} kernels of {len(wanted)} families "
               f"for {', '.join(archs + ([ptx] if ptx else []))} in "
               f"{time.perf_counter() - t0:.1f} s ({len(tasks)} NVRTC programs, {workers} "
               f"at once; {len(kept)} families kept from the last build): "
               f"{total / 1e6:.1f} MB in {out}")
    return index


def _split(values: list[str]) -> list[str]:
    return [v for value in values for v in value.split(",") if v]


def driver_present() -> None:
    """Raise where no NVIDIA driver library loads here: a build on a machine without a
    GPU (a CPU laptop, CI) leaves the kernels out by default, rather than spending
    minutes of NVRTC on binaries it cannot run; ``WEBRANK_CUDA_PREBUILT=ON`` builds them
    anyway (for a wheel or an image built on a CPU machine)."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return
    raise RuntimeError("no NVIDIA driver on this machine (libcuda does not load); "
                       "WEBRANK_CUDA_PREBUILT=ON builds the kernels anyway")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webrank.kernels.cuda_prebuilt",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="the folder to write the binaries and index to")
    parser.add_argument("--arch", action="append", default=[],
                        help=f"cubin architectures (default {','.join(ARCHS)})")
    parser.add_argument("--ptx", default=PTX or "none",
                        help=f"PTX architecture, or none (default {PTX or 'none'})")
    parser.add_argument("--family", action="append", default=[],
                        help="families to build (default all)")
    parser.add_argument("--jobs", type=int, default=None, help="NVRTC programs at once")
    parser.add_argument("--optional", action="store_true",
                        help="where NVRTC is missing or fails, say so and exit 0")
    parser.add_argument("--check", action="store_true",
                        help="only say whether NVRTC can build the kernels here")
    parser.add_argument("--need-driver", action="store_true",
                        help="with --check: also require an NVIDIA driver on this machine "
                             "(a build for a machine without a GPU skips the kernels)")
    parser.add_argument("--list", action="store_true",
                        help="only list the instantiations per family")
    args = parser.parse_args(argv)
    if args.list:
        for family, names in instantiations().items():
            print(f"{family}: {len(names)}")
            for name, cooperative in names:
                print(f"  {name}{'  (cooperative)' if cooperative else ''}")
        return 0
    try:
        if args.check:
            if args.need_driver:
                driver_present()
            print(check())
            return 0
        if not args.out:
            parser.error("--out is needed")
        build(args.out, archs=_split(args.arch) or ARCHS,
              ptx=None if args.ptx.lower() in ("", "none") else args.ptx,
              families=_split(args.family) or None, jobs=args.jobs,
              report=lambda line: print(line, flush=True))
    except Exception as e:
        if not (args.optional or args.check):
            raise
        what = "cannot build" if args.check else "not built"
        print(f"webrank: prebuilt CUDA kernels {what}: {type(e).__name__}: {e}"
              .rstrip(), file=sys.stderr)
        print("webrank: each CUDA kernel is compiled on its first use instead (NVRTC "
              "through CuPy)", file=sys.stderr)
        return 1 if args.check else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
