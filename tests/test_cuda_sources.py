"""Every CUDA kernel family compiles for Hopper (sm_90), without a GPU: with nvcc on PATH
the sources and the template instantiations the backends use are built here, so that a
syntax or type error shows up before any device time is spent. Skipped without nvcc."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from webrank.kernels import (
    cuda,
    cuda_adaptive,
    cuda_blocked,
    cuda_dense,
    cuda_fixed,
    cuda_ppr,
)

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")

IDX = ("int32", "int64")


def _families() -> dict[str, tuple[str, list[str]]]:
    pull = [cuda.kernel_name(ip, ix, t, w, g, solve) for ip in IDX for ix in IDX
            for t in ("float32", "float64") for w in (False, True)
            for g in (None, *cuda.GROUPS[:: 5 if ip != ix else 1])
            for solve in ((False, True) if g is not None and ip == ix else (False,))]
    adaptive = [cuda_adaptive.kernel_name(ip, ix, w, g) for ip in IDX for ix in IDX
                for w in (False, True) for g in (None, 1, 32)]
    fixed = [cuda_fixed.kernel_name(k, "int32", "int32", w, p, 1)
             for k in ("step", "heavy", "scale") for w in (False, True) for p in (0, 1)]
    ppr = [cuda_ppr.kernel_name("int32", "int32", t, w, c) for t in ("float32", "float64")
           for w in (False, True) for c in cuda_ppr.CPLS]
    dense = [f"wr_dense_rows<{t}, {c}>" for t in ("float", "double")
             for c in ("false", "true")]
    return {"pull": (cuda.SOURCE, pull), "adaptive": (cuda_adaptive.SOURCE, adaptive),
            "dense": (cuda_dense.SOURCE, dense),
            "fixed": (cuda_fixed.SOURCE, fixed), "ppr": (cuda_ppr.SOURCE, ppr),
            "blocked": (cuda_blocked.SOURCE, cuda_blocked.all_names())}


def _compile(tmp_path, name: str, source: str, names: list[str]) -> str:
    # taking each instantiation's address in host code makes nvcc compile it
    body = "".join(f"    (void)&{n};\n" for n in sorted(set(names)))
    cu = tmp_path / f"{name}.cu"
    cu.write_text(f"{source}\nvoid wr_instantiate_all() {{\n{body}}}\n")
    out = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-c", "-o", str(cu) + ".o",
                          "-Xptxas", "-v", str(cu)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stderr


@pytest.mark.parametrize("family", ["pull", "adaptive", "dense", "fixed", "ppr", "blocked"])
def test_kernels_compile_for_sm90(tmp_path, family):
    source, names = _families()[family]
    report = _compile(tmp_path, family, source, names)
    if family == "blocked":
        # under two blocks per SM (64 registers a thread) the step kernels keep their
        # state in registers
        for entry in re.split(r"Compiling entry function", report):
            if re.search(r"wr_blocked_(scatter|gather)", entry.split("\n", 1)[0]):
                spills = re.search(r"(\d+) bytes spill stores", entry)
                assert spills and int(spills.group(1)) == 0, entry[:300]
