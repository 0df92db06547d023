"""Quick GPU sanity check and timing on a random graph (used on the device machine)."""

import time

import numpy as np

import webrank
from webrank.backends import gpu_name

print("GPU:", gpu_name())
rng = np.random.default_rng(0)
n, m = 2_000_000, 30_000_000
src = rng.integers(0, n, m)
dst = (rng.pareto(1.2, m) * 1000).astype(np.int64) % n
g = webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
print(g)
ref = webrank.pagerank(g, tol=1e-12, device="cpu")
for dtype in ("float64", "float32"):
    for _ in range(2):
        r = webrank.pagerank(g, tol=1e-10, device="gpu", dtype=dtype)
    err = np.abs(r.scores - ref.scores).sum()
    print(f"{dtype}: {r.iterations} it, {r.elapsed * 1e3:.2f} ms, "
          f"{r.elapsed / r.iterations * 1e3:.4f} ms/it, L1 vs cpu {err:.2e}")
t0 = time.perf_counter()
r = webrank.pagerank(g, tol=1e-10, device="cpu")
print(f"cpu: {r.iterations} it, {(time.perf_counter() - t0) * 1e3:.1f} ms")
