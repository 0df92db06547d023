"""The CUDA kernels built with the package (webrank.kernels.cuda_prebuilt) and their
loader (webrank.kernels.cuda_loader), without a GPU: every instantiation a backend can
ask for is listed, a family builds with NVRTC into an index that covers it, and the
loader picks the right file for each architecture or falls back to a compile on first
use. (tests/test_gpu_prebuilt.py loads them on a GPU.)"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

import webrank
from webrank.kernels import (
    cuda,
    cuda_adaptive,
    cuda_blocked,
    cuda_common,
    cuda_dense,
    cuda_fixed,
    cuda_loader,
    cuda_ppr,
    cuda_prebuilt,
)


def _nvrtc_missing() -> str | None:
    try:
        cuda_prebuilt.check()
    except cuda_prebuilt.Unavailable as e:
        return str(e)
    return None


needs_nvrtc = pytest.mark.skipif(_nvrtc_missing() is not None,
                                 reason=f"NVRTC cannot build here: {_nvrtc_missing()}")


def test_every_kernel_template_of_every_source_is_instantiated():
    found = cuda_prebuilt.instantiations()
    sources = cuda_prebuilt.sources()
    assert set(found) == set(sources)
    for family, names in found.items():
        assert len({n for n, _ in names}) == len(names), family
        kernels = set(re.findall(r"__global__[^{;]*?\b(wr_\w+)\s*\(", sources[family]))
        if family == "adaptive":  # its source holds the pull kernels, instantiated there
            kernels -= set(re.findall(r"__global__[^{;]*?\b(wr_\w+)\s*\(", cuda.SOURCE))
        assert kernels and kernels == {re.match(r"\w+", n).group() for n, _ in names}, family
    # the persistent kernel is the one launched cooperatively
    cooperative = {n for names in found.values() for n, c in names if c}
    assert cooperative and all(n.startswith("wr_pull_solve<") for n in cooperative)
    # every family module is found, and none of them twice
    modules = cuda_prebuilt.family_modules()
    for module in (cuda, cuda_adaptive, cuda_blocked, cuda_dense, cuda_fixed, cuda_ppr):
        assert module in modules.values()
    assert modules["pull"] is cuda and len(set(map(id, modules.values()))) == len(modules)


def _requests(monkeypatch) -> set[tuple[str, str, bool]]:
    """Every (source, name, cooperative) the family modules' getters ask for over their
    whole domain of arguments."""
    asked: set[tuple[str, str, bool]] = set()

    def record(source, name, *, cooperative=False):
        asked.add((source, name, cooperative))

    for module in (cuda, cuda_adaptive, cuda_blocked, cuda_dense, cuda_fixed, cuda_ppr):
        monkeypatch.setattr(module, "compiled_kernel", record)
    idx, vals, bools = cuda.INDEX_TYPES, cuda.VALUE_TYPES, (False, True)
    cuda.get_archive_kernel()
    for ip, ix, t, w in itertools.product(idx, idx, vals, bools):
        cuda.get_kernel(ip, ix, t, w, None)
        for g in cuda.GROUPS:
            cuda.get_kernel(ip, ix, t, w, g)
        cuda.get_solve_kernel(ip, ix, t, w)
        for cpl in cuda_ppr.CPLS:
            cuda_ppr.get_kernel(ip, ix, t, w, cpl)
        cuda_blocked.get_kernel(cuda_blocked.scatter_name(t, w))
        cuda_blocked.get_kernel(cuda_blocked.gather_name(t))
        cuda_blocked.get_kernel(cuda_blocked.fill_name(ip, ix, t, w))
        cuda_blocked.get_kernel(cuda_blocked.count_name(ip, ix))
        cuda_dense.get_kernel(t, w)
    for ip, ix, w, p in itertools.product(idx, idx, bools, cuda_fixed.PRODUCTS):
        for g in (None, *cuda.GROUPS):
            cuda_adaptive.get_kernel(ip, ix, w, g)
            cuda_fixed.get_kernel("step", ip, ix, w, p, g)
        cuda_fixed.get_kernel("heavy", ip, ix, w, p)
        cuda_fixed.get_kernel("scale", ip, ix, w, p)
    return asked


def test_the_getters_ask_for_the_listed_instantiations(monkeypatch):
    listed = {(s, n, c) for m in (cuda, cuda_adaptive, cuda_blocked, cuda_dense, cuda_fixed,
                                  cuda_ppr) for s, n, c in m.instantiations()}
    asked = _requests(monkeypatch)
    # the fixed step's group None is not a kernel (the backend always passes a group)
    asked = {a for a in asked if not a[1].endswith(", None>")}
    assert asked == listed


def test_the_fixed_products_are_the_cpu_kernels_codes():
    from webrank.kernels.cpu_fixed import PRODUCTS

    assert sorted(PRODUCTS.values()) == list(cuda_fixed.PRODUCTS)


def test_kernels_are_compiled_only_through_the_family_modules():
    """Every CUDA kernel of the package goes through compiled_kernel, called from a
    kernel family module, so that the families' lists are the whole set: no other module
    makes a CuPy RawKernel, RawModule, ElementwiseKernel or ReductionKernel."""
    src = Path(webrank.__file__).parent
    families = {f"{m.__name__.rsplit('.', 1)[1]}.py"
                for m in cuda_prebuilt.family_modules().values()}
    makers = {"RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "fuse",
              "compiled_kernel"}
    offenders = []
    for path in src.rglob("*.py"):
        if path.name in ("cuda_common.py", "cuda_loader.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in makers and not (name == "compiled_kernel"
                                           and path.name in families):
                    offenders.append(f"{path.relative_to(src)}:{node.lineno} {name}")
    assert not offenders


@pytest.mark.parametrize(("capability", "driver", "expected"), [
    ((8, 0), 12090, "sm_80"), ((8, 6), 12090, "sm_80"), ((8, 9), 12090, "sm_80"),
    ((8, 7), 12020, "sm_80"),  # a cubin needs no newer driver of the same major version
    ((9, 0), 12090, "sm_90"), ((9, 0), 13000, "sm_90"),  # CUDA 13 drivers run 12.x cubins
    ((10, 0), 12090, "compute_90"), ((12, 0), 13000, "compute_90"),
    ((10, 0), 12080, None),  # the driver cannot read PTX of NVRTC 12.9
    ((7, 5), 12090, None), ((9, 0), 11080, None),  # older GPU; driver of CUDA 11
])
def test_pick_takes_the_cubin_of_the_major_version_else_ptx(capability, driver, expected):
    files = {"sm_80": "f.sm_80.cubin", "sm_90": "f.sm_90.cubin",
             "compute_90": "f.compute_90.ptx"}
    assert cuda_loader.pick(files, capability, driver, (12, 9)) == expected
    assert cuda_loader.pick({"sm_86": "x", "sm_80": "y"}, (8, 9), 12090, (12, 9)) == "sm_86"
    assert cuda_loader.pick({"sm_86": "x"}, (8, 0), 12090, (12, 9)) is None


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(cuda_loader.ENV, raising=False)
    assert cuda_loader.folder() == cuda_loader.package_folder()
    monkeypatch.setenv(cuda_loader.ENV, "0")
    assert cuda_loader.folder() is None
    assert cuda_loader.find(cuda_dense.SOURCE, cuda_dense.kernel_name("float32", False),
                            (9, 0), 12090) is None
    monkeypatch.setenv(cuda_loader.ENV, str(tmp_path))
    assert cuda_loader.folder() == tmp_path
    # an empty folder (a build without NVRTC) has no index: every kernel is compiled
    assert cuda_loader.read_index(tmp_path) == {}
    assert cuda_loader.find(cuda_dense.SOURCE, cuda_dense.kernel_name("float32", False),
                            (9, 0), 12090) is None


def test_compiled_kernel_asks_the_loader_with_the_options_of_the_index():
    assert cuda_loader.JIT_OPTIONS == ("-std=c++17",)
    assert "-ftz=true" in cuda_loader.CUPY_OPTIONS
    assert "cuda_loader.load(" in Path(cuda_common.__file__).read_text()


@needs_nvrtc
def test_a_family_builds_into_an_index_the_loader_reads(tmp_path):
    out = tmp_path / "cubin"
    lines = []
    index = cuda_prebuilt.build(out, families=["dense"], ptx="compute_90", jobs=2,
                                report=lines.append)
    assert len(lines) == 3  # two programs (sm_80, sm_90 with its PTX) and the total
    assert index == cuda_loader.read_index(out)  # read back (format and options match)
    major, minor = cuda_prebuilt.nvrtc_version()
    assert index["nvrtc"] == [major, minor]
    assert index["options"] == ["-std=c++17", "-ftz=true",
                                "--device-as-default-execution-space"]
    (digest, entry), = index["sources"].items()
    assert digest == cuda_loader.source_digest(cuda_dense.SOURCE)  # the current source
    assert entry["family"] == "dense"
    listed = [n for s, n, _ in cuda_dense.instantiations()]
    assert sorted(entry["names"]) == sorted(listed)
    for name, lowered in entry["names"].items():
        assert lowered.startswith("_Z13wr_dense_rows"), name
    assert entry["files"] == {"sm_80": "dense.sm_80.cubin", "sm_90": "dense.sm_90.cubin",
                              "compute_90": "dense.compute_90.ptx"}
    for arch, name in entry["files"].items():
        data = (out / name).read_bytes()
        if arch.startswith("sm_"):
            assert data[:4] == b"\x7fELF"
        else:
            assert b".target sm_90" in data and b".entry" in data
    assert sorted(p.name for p in out.iterdir()) == sorted([*entry["files"].values(),
                                                            "index.json"])

    name = listed[0]
    driver = (major + 1) * 1000  # a driver that reads the PTX
    for capability, arch in (((8, 0), "sm_80"), ((8, 6), "sm_80"), ((8, 9), "sm_80"),
                             ((9, 0), "sm_90"), ((10, 0), "compute_90"),
                             ((12, 0), "compute_90"), ((7, 5), None)):
        hit = cuda_loader.find(cuda_dense.SOURCE, name, capability, driver, out)
        if arch is None:
            assert hit is None
            continue
        assert hit.arch == arch and hit.path == out / entry["files"][arch], capability
        assert hit.lowered == entry["names"][name]
    # with no PTX (the default) a GPU after sm_90 compiles its kernels on first use
    cuda_prebuilt.build(out, families=["dense"], report=None)
    assert cuda_loader.find(cuda_dense.SOURCE, name, (10, 0), driver, out) is None
    assert cuda_loader.find(cuda_dense.SOURCE, name, (9, 0), driver, out).arch == "sm_90"
    assert not (out / "dense.compute_90.ptx").exists()
    # the source changed since the build: another digest, nothing prebuilt
    changed = cuda_dense.SOURCE.replace("T acc = 0;", "T acc = 0; // changed")
    assert changed != cuda_dense.SOURCE
    assert cuda_loader.find(changed, name, (9, 0), driver, out) is None
    # a name not built, and another family's source
    assert cuda_loader.find(cuda_dense.SOURCE, "wr_dense_rows<int, false>", (9, 0),
                            driver, out) is None
    assert cuda_loader.find(cuda.SOURCE, cuda.kernel_name("int32", "int32", "float32",
                                                          False, 1), (9, 0), driver,
                            out) is None


@needs_nvrtc
def test_the_command_line_builds_and_a_rebuild_drops_stale_files(tmp_path):
    out = tmp_path / "cubin"
    assert cuda_prebuilt.main(["--out", str(out), "--family", "archive", "--arch", "sm_90",
                               "--ptx", "none"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["archive.sm_90.cubin", "index.json"]
    index = cuda_loader.read_index(out)
    entry = index["sources"][cuda_loader.source_digest(cuda.ARCHIVE_SOURCE)]
    assert entry["names"] == {"wr_archive": "wr_archive"}  # extern "C"
    assert cuda_prebuilt.main(["--out", str(out), "--family", "archive", "--arch", "sm_80",
                               "--ptx", "compute_80"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "archive.compute_80.ptx", "archive.sm_80.cubin", "index.json"]


@needs_nvrtc
def test_a_build_leaves_the_interpreters_shared_bytes_alone(tmp_path):
    """NVRTC fills the buffers it is given: handed ``b" " * size``, an empty log (size 1)
    wrote its NUL into CPython's shared ``b" "``, and every later ``bytes.replace(b",",
    b" ")`` of the process (the CSV header sniff) made NULs."""
    cuda_prebuilt.build(tmp_path / "cubin", families=["dense"], archs=["sm_90"], report=None)
    assert b" " == bytes([32]) and b"a,b".replace(b",", b" ").split() == [b"a", b"b"]


@needs_nvrtc
def test_a_rebuild_compiles_only_the_families_that_changed(tmp_path, monkeypatch):
    out = tmp_path / "cubin"
    cuda_prebuilt.build(out, families=["archive", "dense"], archs=["sm_90"], report=None)
    first = cuda_loader.read_index(out)
    compiled = []
    real = cuda_prebuilt.compile_source

    def counting(family, *args, **kwargs):
        compiled.append(family)
        return real(family, *args, **kwargs)

    monkeypatch.setattr(cuda_prebuilt, "compile_source", counting)
    assert cuda_prebuilt.build(out, families=["archive", "dense"], archs=["sm_90"],
                               report=None) == first
    assert compiled == []
    # an edited source: that family only
    changed = cuda_dense.SOURCE.replace("T acc = 0;", "T acc = 0; // edited")
    monkeypatch.setattr(cuda_dense, "SOURCE", changed)
    index = cuda_prebuilt.build(out, families=["archive", "dense"], archs=["sm_90"],
                                report=None)
    assert compiled == ["dense"]
    assert cuda_loader.source_digest(changed) in index["sources"]
    assert cuda_loader.read_index(out) == index  # (read again: the file changed)
    # other architectures: everything again
    cuda_prebuilt.build(out, families=["archive", "dense"], archs=["sm_80"], report=None)
    assert sorted(compiled) == ["archive", "dense", "dense"]
    assert sorted(p.name for p in out.iterdir()) == [
        "archive.sm_80.cubin", "dense.sm_80.cubin", "index.json"]


def test_without_nvrtc_the_optional_build_says_so_and_succeeds(monkeypatch, tmp_path,
                                                                capsys):
    def missing():
        raise cuda_prebuilt.Unavailable("no NVRTC in this test")

    monkeypatch.setattr(cuda_prebuilt, "nvrtc_version", missing)
    assert cuda_prebuilt.main(["--out", str(tmp_path), "--optional"]) == 0
    assert "no NVRTC in this test" in capsys.readouterr().err
    assert not (tmp_path / "index.json").exists()
    assert cuda_prebuilt.main(["--check"]) == 1
    with pytest.raises(cuda_prebuilt.Unavailable):
        cuda_prebuilt.main(["--out", str(tmp_path)])
