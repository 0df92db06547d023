"""Every CPU method's scores on real graphs with the tree on ``PYTHONPATH``, as JSON
lines (iterations, a SHA-256 of the float64 scores, the top five): run once per tree
and ``diff`` the outputs; identical lines mean bit-identical scores.

    PYTHONPATH=OLD/src python benchmarks/before_after/scores_ab.py cnr-2000 > old.jsonl
    PYTHONPATH=NEW/src python benchmarks/before_after/scores_ab.py cnr-2000 > new.jsonl

Graphs are read from ``$WEBRANK_DATASETS`` (default ``../shared/datasets``) as
``NAME.txt.gz``. Published: ``benchmarks/results/before_after/cpu_2core/house_refactor/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

import webrank

METHODS = ("auto", "power", "gauss-seidel", "gmres", "aitken")


def main() -> None:
    data = Path(os.environ.get("WEBRANK_DATASETS",
                               Path(__file__).resolve().parents[3] / "shared" / "datasets"))
    for name in sys.argv[1:]:
        g = webrank.load(data / f"{name}.txt.gz")
        for method in METHODS:
            r = webrank.pagerank(g, tol=1e-10, method=method)
            digest = hashlib.sha256(np.ascontiguousarray(r.scores).tobytes()).hexdigest()
            print(json.dumps({"graph": name, "method": method, "iterations": r.iterations,
                              "sha": digest[:16], "sum": float(r.scores.sum()),
                              "top": [k for k, _ in r.top(5)]}))


if __name__ == "__main__":
    main()
