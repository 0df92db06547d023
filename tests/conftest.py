"""Shared fixtures: the real datasets (skipped when absent) and GPU skipping."""

from __future__ import annotations

import bz2
import gzip
import os
from pathlib import Path

import numpy as np
import pytest

# the shared datasets beside the checkout, or where WEBRANK_DATASETS points (GPU machine)
DATASETS = Path(os.environ.get("WEBRANK_DATASETS")
                or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
REAL = {
    "web-NotreDame": DATASETS / "web-NotreDame.txt.gz",
    "cnr-2000": DATASETS / "cnr-2000.txt.gz",
    "soc-Epinions1": DATASETS / "soc-Epinions1.txt.gz",
}


def dataset(name: str) -> Path:
    """Path of a shared dataset, skipping the test when it is absent."""
    p = REAL[name]
    if not p.exists():
        pytest.skip(f"dataset {p} not present")
    return p


def write(path: Path, text: str | bytes) -> Path:
    """Write ``text`` to ``path``, gzip- or bzip2-compressed by its suffix."""
    data = text.encode() if isinstance(text, str) else text
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".bz2":
        data = bz2.compress(data)
    path.write_bytes(data)
    return path


def pytest_collection_modifyitems(config, items):
    from webrank.backends import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no usable GPU (CuPy + CUDA device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
