"""The layering rule: features speak to the backends' operators; device code (Numba and
CUDA kernels) lives in webrank.kernels and is imported by webrank.backends only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "webrank"
FEATURES = ["ranking.py", "personalized.py", "incremental.py", "nx_backend.py", "metrics.py",
            "result.py", "graph.py", "generate.py"]


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (``from a import b`` gives a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("feature", FEATURES)
def test_features_import_no_kernel_module(feature):
    kernels = {m for m in imported_modules(SRC / feature)
               if m == "webrank.kernels" or m.startswith("webrank.kernels.")}
    assert not kernels, f"{feature} imports {sorted(kernels)}: go through webrank.backends"


def test_kernel_modules_import_no_backend_or_feature():
    """Kernels are leaves: they share helpers among themselves and use the errors and the
    layout planner (webrank.blocking, NumPy only), nothing above."""
    allowed = ("webrank.kernels", "webrank.errors", "webrank.blocking")
    for path in sorted((SRC / "kernels").glob("*.py")):
        above = {m for m in imported_modules(path)
                 if m.startswith("webrank.") and not m.startswith(allowed)}
        assert not above, f"kernels/{path.name} imports {sorted(above)}"
