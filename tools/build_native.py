"""Build webrank's compiled kernels into the source tree, for development.

``pip install .`` builds them into the installed package; an editable checkout run from
``src/`` (``PYTHONPATH=src``, the GPU machine) needs them beside the Python modules:

    python tools/build_native.py          # Release build in build/native, copied in place

Needs CMake >= 3.18, a C++17 compiler with OpenMP and ``pip install nanobind``. Where
this Python can import NVRTC (``pip install 'cuda-bindings<13' nvidia-cuda-nvrtc-cu12
nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12``), the CUDA kernels are compiled too, into
``src/webrank/kernels/cubin/`` (git-ignored; rebuilt when a ``kernels/cuda*.py`` changes);
elsewhere the GPU compiles each on its first use.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    build = ROOT / "build" / "native"
    build.mkdir(parents=True, exist_ok=True)
    with open(build / ".lock", "w") as lock:  # one build at a time in this folder
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(build)


def _build(build: Path) -> int:
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *gen,
                    f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release"],
                   check=True)
    subprocess.run(["cmake", "--build", str(build), "--parallel"], check=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = build / f"_cpu{suffix}"
    target = ROOT / "src" / "webrank" / "kernels" / built.name
    staged = target.with_name(f".{target.name}.tmp")
    shutil.copy2(built, staged)
    staged.replace(target)  # a running process keeps the module it loaded
    print(f"built {target.relative_to(ROOT)}")
    _copy_cubins(build / "cubin", ROOT / "src" / "webrank" / "kernels" / "cubin")
    return 0


def _copy_cubins(built: Path, target: Path) -> None:
    """The prebuilt CUDA kernels of the CMake build, in place of those in ``target``."""
    if not (built / "index.json").is_file():
        if target.exists():
            shutil.rmtree(target)
            print(f"removed {target.relative_to(ROOT)} (no CUDA kernels were built)")
        return
    staged = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(built, staged)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.replace(old)
    staged.replace(target)
    shutil.rmtree(old, ignore_errors=True)
    print(f"built {target.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
