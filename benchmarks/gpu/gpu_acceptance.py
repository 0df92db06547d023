"""Accuracy and time on a GPU: webrank (CPU float64, GPU float64 and float32, tol 1e-10)
against networkx's float64 PageRank on the three real datasets.

    WEBRANK_DATASETS=DIR python benchmarks/gpu/gpu_acceptance.py

Prints one line per graph and device; ``bash benchmarks/gpu_host/run.sh core`` keeps it as
``gpu_acceptance.txt`` (published: ``benchmarks/results/gpu/h100/gpu_acceptance.txt``).
"""

import os
import sys
from pathlib import Path

import numpy as np

import webrank
from webrank.backends import gpu_name

DATA = Path(os.environ.get("WEBRANK_DATASETS", "../shared/datasets"))
print("GPU:", gpu_name())
for name in ("web-NotreDame", "cnr-2000", "soc-Epinions1"):
    g = webrank.load(DATA / f"{name}.txt.gz")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from test_pagerank import networkx_reference_scipy

    ref = networkx_reference_scipy(g)
    for device, dtype in (("cpu", "float64"), ("gpu", "float64"), ("gpu", "float32")):
        r = webrank.pagerank(g, tol=1e-10, device=device, dtype=dtype)
        r = webrank.pagerank(g, tol=1e-10, device=device, dtype=dtype)  # warm
        print(f"{name:14s} {device} {dtype}: {r.iterations} it, {r.elapsed * 1e3:8.2f} ms, "
              f"L1 vs networkx {np.abs(r.scores - ref).sum():.2e}")
