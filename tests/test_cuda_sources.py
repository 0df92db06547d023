"""Every CUDA kernel family compiles for Hopper (sm_90), without a GPU: with nvcc on PATH
the sources and every template instantiation the backends can ask for (each family's
``instantiations()``) are built here, so that a syntax or type error shows up before any
device time is spent. Skipped without nvcc."""

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
    cuda_prebuilt,
)

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")


def _families() -> dict[str, tuple[str, list[str]]]:
    """Every family's source and the instantiations its backends can ask for (the set
    built with the package, webrank.kernels.cuda_prebuilt)."""
    return {family: (f.source, [name for name, _ in f.names])
            for family, f in cuda_prebuilt.kernel_families().items()}


def _compile(tmp_path, name: str, source: str, names: list[str]) -> str:
    # taking each instantiation's address in host code makes nvcc compile it
    body = "".join(f"    (void)&{n};\n" for n in sorted(set(names)))
    cu = tmp_path / f"{name}.cu"
    cu.write_text(f"{source}\nvoid wr_instantiate_all() {{\n{body}}}\n")
    out = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-c", "-o", str(cu) + ".o",
                          "-Xptxas", "-v", str(cu)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stderr


@needs_nvcc
@pytest.mark.parametrize("family", sorted(_families()))
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


def test_every_kernel_signature_is_read_for_launches_by_name():
    # (no nvcc needed) each __global__ function's parameters parse into names and C
    # scalar types, so that a launch naming them cannot pass them out of order
    from webrank.kernels.cuda_common import KernelArgs

    seen = 0
    for module in (cuda, cuda_adaptive, cuda_fixed, cuda_blocked, cuda_ppr, cuda_dense):
        sources = [module.SOURCE] + ([module.ARCHIVE_SOURCE]
                                     if hasattr(module, "ARCHIVE_SOURCE") else [])
        for source in sources:
            for kernel in set(re.findall(r"__global__[^{;]*?\b(wr_\w+)\s*\(", source)):
                args = KernelArgs(source, kernel)
                assert len(set(args.names)) == len(args.names) > 2, kernel
                seen += 1
    assert seen >= 13
    step = cuda.FUSED_STEP
    with pytest.raises(TypeError, match=r"missing .*'xs_pos'"):
        step.pack(**{n: 0 for n in step.names[:-1]})
    with pytest.raises(TypeError, match=r"unknown \['bogus'\]"):
        step.pack(bogus=1, **{n: 0 for n in step.names})


def test_every_launch_names_every_parameter_of_its_kernel():
    # (static, for CI without a GPU) each KernelArgs.pack(...) call in the backends gives
    # exactly its kernel's parameters; `**skip` stands for the replay window's four
    import ast
    from pathlib import Path

    import webrank

    records = {name: getattr(module, name) for module in (cuda, cuda_adaptive, cuda_fixed,
                                                          cuda_blocked, cuda_ppr)
               for name in dir(module) if name.isupper()
               and type(getattr(module, name)).__name__ == "KernelArgs"}
    expansions = {"skip": {"chunk", "step0", "chunk_len", "max_steps"}}
    calls = 0
    for path in Path(webrank.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        common = {}  # dict(...) and {...} named in the file (a run's or a step's arguments)
        bound = {}  # x = RECORD.bind(...) or self._x = ...: name -> (record, names bound)

        def names_of(keywords, common=common):
            given = set()
            for k in keywords:
                given |= ({k.arg} if k.arg else
                          expansions.get(ast.unparse(k.value))
                          or common[ast.unparse(k.value)])
            return given

        def name_of(node):
            return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)

        assigns = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)
                          and isinstance(n.value, ast.Call | ast.Dict)),
                         key=lambda n: n.lineno)
        for node in assigns:
            call, target = node.value, node.targets[0]
            if isinstance(call, ast.Dict):  # {"step0": ..., ...}
                if all(isinstance(k, ast.Constant) for k in call.keys):
                    common[name_of(target)] = {k.value for k in call.keys}
            elif getattr(call.func, "id", None) == "dict":
                common[target.id] = names_of(call.keywords)
            elif (getattr(call.func, "attr", None) == "bind"
                  and name_of(call.func.value) in records):
                bound[name_of(target)] = (name_of(call.func.value), names_of(call.keywords))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "pack"):
                continue
            record, given = name_of(node.func.value), set()
            if record in bound:
                record, given = bound[record][0], set(bound[record][1])
            if record not in records:
                continue
            given |= names_of(node.keywords)
            assert given == set(records[record].names), (path.name, node.lineno)
            calls += 1
    assert calls >= 18
