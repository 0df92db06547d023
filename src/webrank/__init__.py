"""webrank: PageRank on web-scale graphs, fast on NVIDIA GPUs and correct on any CPU.

Quick start::

    import webrank
    g = webrank.load("web-NotreDame.txt.gz")
    r = webrank.pagerank(g, tol=1e-10)
    print(r.top(10))

Heavy modules (CuPy, the CLI, benchmarks) are imported lazily, so ``import webrank``
works on any machine with NumPy and SciPy.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from webrank.errors import (
    ConvergenceError,
    DeviceMemoryError,
    DeviceUnavailableError,
    DistributedError,
    GraphFormatError,
    OverwriteError,
    WebrankError,
)

__version__ = "0.1.0"

# name -> module that defines it; imported on first use (PEP 562)
_LAZY = {
    "Graph": "webrank.graph",
    "load": "webrank.io",
    "save_graph": "webrank.io",
    "pagerank": "webrank.ranking",
    "personalized_pagerank": "webrank.personalized",
    "PageRankResult": "webrank.result",
    "CertifiedPlace": "webrank.certify",
    "PersonalizedPageRankResult": "webrank.personalized",
    "RankComparison": "webrank.metrics",
    "ReadOptions": "webrank.io.options",
    "compare": "webrank.metrics",
    "generate_graph": "webrank.generate",
    "load_dataset": "webrank.datasets",
    "gpu_available": "webrank.backends",
    "datasets": "webrank.datasets",
    "generate": "webrank.generate",
    "update": "webrank.incremental",
}

__all__ = [
    "ConvergenceError",
    "DeviceMemoryError",
    "DeviceUnavailableError",
    "DistributedError",
    "GraphFormatError",
    "OverwriteError",
    "WebrankError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'webrank' has no attribute {name!r}")
    mod = import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
