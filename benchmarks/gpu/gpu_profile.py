"""Where the GPU time goes: operator setup vs steps, graph replay vs plain launches.

    WEBRANK_DATASETS=DIR python benchmarks/gpu/gpu_profile.py [GRAPH ...]

GRAPH: names of the real datasets (default cnr-2000 web-NotreDame). Prints the times
(published: ``benchmarks/results/gpu/h100/gpu_profile.txt``).
"""

import os
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

import webrank
from webrank.backends import make_operator
from webrank.backends.options import EngineOptions

DATA = Path(os.environ.get("WEBRANK_DATASETS", "../shared/datasets"))
names = sys.argv[1:] or ["cnr-2000", "web-NotreDame"]
for name in names:
    g = webrank.load(DATA / f"{name}.txt.gz")
    for dtype in ("float32", "float64"):
        for use_graph, lanes, heavy in ((True, None, 64), (False, None, 64), (True, 1, 16),
                                        (True, 1, 32), (True, 1, 64), (True, 1, 128),
                                        (True, 2, 32), (True, 4, 64)):
            options = EngineOptions.from_call("pull", {
                "use_graph": use_graph, "lanes_per_row": lanes, "heavy_threshold": heavy})
            kw = dict(dtype=dtype, options=options.for_device("gpu", dtype))
            make_operator(g, device="gpu", alpha=0.85, personalization=None, dangling=None,
                          **kw)
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            op = make_operator(g, device="gpu", alpha=0.85, personalization=None,
                               dangling=None, **kw)
            cp.cuda.Device().synchronize()
            setup = time.perf_counter() - t0
            x0 = cp.full(g.n, 1.0 / g.n)
            res = {}
            for steps in (65, 641):
                op.power_steps(x0, tol=1e-300, max_steps=steps, criterion="l1")
                ts = []
                for _ in range(5):
                    cp.cuda.Device().synchronize()
                    t0 = time.perf_counter()
                    op.power_steps(x0, tol=1e-300, max_steps=steps, criterion="l1")
                    cp.cuda.Device().synchronize()
                    ts.append(time.perf_counter() - t0)
                res[steps] = float(np.median(ts))
            per_step = (res[641] - res[65]) / 576
            print(f"{name:14s} {dtype} graph={use_graph!s:5s} setup {setup * 1e3:6.2f} ms, "
                  f"65 steps {res[65] * 1e3:6.2f} ms, 641 steps {res[641] * 1e3:7.2f} ms, "
                  f"marginal {per_step * 1e3:.4f} ms/step, heavy > {heavy}: "
                  f"{op.pull_step().n_heavy}, group {op.pull_step().group}, "
                  f"grid {op.pull_step().grid}")
