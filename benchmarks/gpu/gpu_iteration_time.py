"""Milliseconds per PageRank iteration on the GPU: webrank (CUDA graph / plain launches)
against Praveen et al.'s design (cuSPARSE SpMV + cuBLAS-style vector ops), on the real
graphs.

    WEBRANK_DATASETS=DIR python benchmarks/gpu/gpu_iteration_time.py

Prints a table; ``bash benchmarks/gpu_host/run.sh core`` keeps it as
``gpu_iteration_time.txt`` (published: ``benchmarks/results/gpu/h100/gpu_iteration_time.txt``).
"""

import os
from pathlib import Path

import cupy as cp
import numpy as np

import webrank
from webrank.backends import gpu_name

DATA = Path(os.environ.get("WEBRANK_DATASETS", "../shared/datasets"))
ITERS = 200


def per_iter(fn, reps=5):
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        ev0.record()
        fn()
        ev1.record()
        ev1.synchronize()
        times.append(cp.cuda.get_elapsed_time(ev0, ev1) / ITERS)
    return float(np.median(times))


def cusparse_iters(g):
    import cupyx.scipy.sparse as csp

    inv = np.where(g.dangling_mask, 0.0, 1.0 / np.where(g.dangling_mask, 1.0, g.out_weight))
    a = csp.csr_matrix((cp.asarray(inv[g.indices]), cp.asarray(g.indices),
                        cp.asarray(g.indptr)), shape=(g.n, g.n))
    x = cp.full(g.n, 1.0 / g.n)

    def run():
        nonlocal x
        for _ in range(ITERS):
            y = 0.85 * (a @ x)
            w = x.sum() - y.sum()
            y += w / g.n
            _err = cp.abs(y - x).sum()
            x = y
    return run


print("GPU:", gpu_name())
print("| graph | cuSPARSE+vector ops ms/it | webrank plain ms/it | webrank CUDA graph ms/it |")
print("|---|---|---|---|")
for name in ("web-NotreDame", "cnr-2000", "soc-Epinions1"):
    g = webrank.load(DATA / f"{name}.txt.gz")
    row = [name, f"{per_iter(cusparse_iters(g)):.4f}"]
    for use_graph in (False, True):
        def run(ug=use_graph, g=g):
            webrank.pagerank(g, tol=1e-300, max_iter=ITERS, device="gpu", dtype="float32",
                             raise_on_nonconvergence=False, engine_options={"use_graph": ug})
        run()
        row.append(f"{per_iter(run):.4f}")
    print("| " + " | ".join(row) + " |")
