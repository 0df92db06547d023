"""The examples users read run as written: every ```python block of the README, in order,
in one namespace (the names a block takes from the reader's own session — a networkx
graph ``G``, a DataFrame ``df``, a SciPy matrix ``A`` — given here), and every docstring
example of the package (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL

import webrank

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    nx = pytest.importorskip("networkx")
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp

    blocks = readme_blocks()
    assert len(blocks) >= 4
    real = REAL["cnr-2000"]
    if real.exists():
        (tmp_path / "cnr-2000.txt.gz").symlink_to(real)
    else:  # a checkout without the shared datasets: a generated graph under that name,
        # with a ring over its first nodes (the examples use nodes 0..44 and link 0 -> 1)
        import gzip

        from webrank.generate import generate

        src, dst, _ = generate("rmat", 12, seed=1)
        ring = np.arange(1000)
        src = np.concatenate([ring, np.asarray(src)])
        dst = np.concatenate([(ring + 1) % 1000, np.asarray(dst)])
        (tmp_path / "cnr-2000.txt.gz").write_bytes(gzip.compress("".join(
            f"{a}\t{b}\n" for a, b in zip(src.tolist(), dst.tolist(), strict=True)).encode()))
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    namespace = {
        "G": nx.DiGraph([(0, 1), (1, 2), (2, 0), (2, 3)]),
        "df": pd.DataFrame({"src": ["a", "b", "c"], "dst": ["b", "c", "a"],
                            "w": [1.0, 2.0, 0.5]}),
        "A": sp.random_array((50, 50), density=0.1, random_state=rng, format="csr"),
    }
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    assert (tmp_path / "scores.parquet").exists()
    r = namespace["r"]
    assert isinstance(r, webrank.PageRankResult) and r.converged


def _package_modules() -> list[str]:
    names = ["webrank"]
    for info in pkgutil.walk_packages(webrank.__path__, "webrank."):
        if not info.name.endswith("__main__"):  # importing it runs the CLI
            names.append(info.name)
    return names


def test_docstring_examples_run():
    attempted = 0
    failures = []
    for name in _package_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency (CuPy, mpi4py) absent
            continue
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS
                                 | doctest.NORMALIZE_WHITESPACE, report=False)
        attempted += result.attempted
        if result.failed:
            failures.append(f"{name}: {result.failed} failed")
    assert not failures, failures
    assert attempted >= 10  # the examples exist (pagerank's, Graph's, results', ...)
