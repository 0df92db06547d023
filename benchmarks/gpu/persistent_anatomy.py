"""A warm whole GPU call on a small graph, piece by piece: where the milliseconds go.

For each graph, the median of repeated ``webrank.pagerank(g, device="gpu",
dtype="float32", tol=1e-10)`` calls (the persistent engine, the graph on the device):
the whole call, its setup and solve as the result reports them, and inside the solve
the persistent kernel itself (CUDA events around its launch) and the host's time before
the launch. Then what the pieces around it cost, each timed alone in a loop (host time,
with and without waiting for the device): a stream, a fill, the pull layout, a
cooperative launch of an empty kernel, the normalisation, the copy of the scores, the
result; and a cProfile of one call. SM clocks are sampled through the calls
(``nvidia-smi``).

    python benchmarks/gpu/persistent_anatomy.py [--graphs cnr-2000 web-NotreDame]
        [--data DIR] [--repeats 25] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

KW = {"device": "gpu", "dtype": "float32", "tol": 1e-10}


def forget_kept_operators(g: Any) -> None:
    """Drop the operators calls kept on ``g`` (the next call makes its own)."""
    g.forget(lambda key: isinstance(key, tuple) and key[2:3] == ("operator",))


def whole_calls(g: Any, repeats: int) -> dict[str, Any]:
    """Whole calls with the persistent kernel's launch timed by events."""
    import cupy as cp

    import webrank
    from webrank.backends import gpu as gpu_backend

    launches: list[tuple[float, Any, Any]] = []
    original = gpu_backend.PersistentGPUOperator.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        kernel = self._solve

        def launch(grid: Any, block: Any, kernel_args: Any) -> None:
            stream = cp.cuda.get_current_stream()
            before, after = cp.cuda.Event(), cp.cuda.Event()
            before.record(stream)
            launches.append((time.perf_counter(), before, after))
            kernel(grid, block, kernel_args)
            after.record(stream)

        self._solve = launch

    # the operator a call keeps on the graph for the next is made with the hook
    forget_kept_operators(g)
    gpu_backend.PersistentGPUOperator.__init__ = init
    rows = []
    try:
        webrank.pagerank(g, **KW)
        for _ in range(repeats):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            r = webrank.pagerank(g, **KW)
            t1 = time.perf_counter()
            t_launch, before, after = launches[-1]
            kernel = 1e-3 * cp.cuda.get_elapsed_time(before, after)
            rows.append({"whole": t1 - t0, "setup": r.setup_time, "solve": r.elapsed,
                         "to_launch": t_launch - t0, "kernel": kernel,
                         "after_kernel": t1 - t_launch - kernel})
    finally:
        gpu_backend.PersistentGPUOperator.__init__ = original
        forget_kept_operators(g)
    out = {k: 1e3 * statistics.median(row[k] for row in rows) for k in rows[0]}
    out["iterations"] = r.iterations
    out["engine"] = r.info.get("engine")
    return out


#: (module, attribute) of the functions the timeline stamps; ``cls:`` names a class
#: attribute, wrapped on the class
TIMELINE = (
    ("webrank.ranking", "check_scalar_args"), ("webrank.ranking", "prepare_graph"),
    ("webrank.ranking", "as_distribution"), ("webrank.ranking", "gpus_for_call"),
    ("webrank.ranking", "_solver_device"), ("webrank.ranking", "make_operator"),
    ("webrank.ranking", "_scores"), ("webrank.ranking", "PageRankResult"),
    ("webrank.backends.gpu", "cls:OnGPU.full"), ("webrank.backends.gpu",
                                                  "cls:OnGPU.synchronize"),
    ("webrank.backends.gpu", "cls:OnGPU.scores_to_host"),
    ("webrank.backends.gpu", "cls:OnGPU.normalized"),
    ("webrank.backends.gpu", "cls:PersistentGPUOperator.power_steps"),
    ("webrank.backends.gpu_arrays", "cls:HostLanding.for_vector"),
    ("webrank.backends.gpu_arrays", "copy_vector"),
    ("webrank.backends.gpu_arrays", "write_history_start"),
    ("webrank.kernels.cuda_staging", "cls:PinnedResults.take"),
    ("webrank.backends.gpu", "cls:GPUOperator.__init__"),
    ("webrank.backends.gpu", "cls:PersistentGPUOperator.__init__"),
    ("webrank.backends.gpu", "cls:PullStep.__init__"),
    ("webrank.backends.gpu", "cls:GPUOperator.attach"),
    ("webrank.backends.gpu", "cls:GPUOperator.detach"),
    ("webrank.backends.gpu_engines", "choose_engine"),
)


def timeline(g: Any, repeats: int) -> list[tuple[str, float, float]]:
    """Host stamps (no synchronisation) of the functions of TIMELINE through warm calls:
    ``(name, median ms from the call's start to entry, median ms inside)``."""
    import importlib

    import cupy as cp

    import webrank

    stamps: dict[str, list[tuple[float, float]]] = {}
    start = [0.0]
    saved = []

    def wrap(name: str, fn: Any) -> Any:
        def stamped(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stamps.setdefault(name, []).append((t0 - start[0],
                                                    time.perf_counter() - t0))
        return stamped

    for module_name, attr in TIMELINE:
        module = importlib.import_module(module_name)
        owner, name = module, attr
        if attr.startswith("cls:"):
            cls_name, name = attr[4:].split(".")
            owner = getattr(module, cls_name)
        raw = vars(owner).get(name)
        if raw is None:  # not in this tree
            continue
        if isinstance(raw, classmethod):
            setattr(owner, name, classmethod(wrap(attr, raw.__func__)))
        else:
            setattr(owner, name, wrap(attr, raw))
        saved.append((owner, name, raw))
    try:
        webrank.pagerank(g, **KW)
        stamps.clear()
        whole = []
        for _ in range(repeats):
            cp.cuda.Device().synchronize()
            start[0] = time.perf_counter()
            webrank.pagerank(g, **KW)
            whole.append(time.perf_counter() - start[0])
    finally:
        for owner, name, raw in saved:
            setattr(owner, name, raw)
    rows = [(name, 1e3 * statistics.median(s[0] for s in v),
             1e3 * statistics.median(s[1] for s in v) * len(v) / repeats)
            for name, v in stamps.items()]
    rows.sort(key=lambda row: row[1])
    print(f"  timeline (whole {1e3 * statistics.median(whole):.3f} ms): entry at, time in "
          "(ms, per call)")
    for name, at, inside in rows:
        print(f"    {at:7.3f} {inside:7.3f}  {name}")
    return rows


def pieces(g: Any, loops: int = 200) -> dict[str, dict[str, float]]:
    """Microseconds of each piece around the solve, alone: host time (``host``) and
    host time with the device waited for (``synced``)."""
    import cupy as cp
    import numpy as np

    import webrank
    from webrank.backends import EngineOptions, gpu_arrays, make_operator
    from webrank.backends import gpu as gpu_backend
    from webrank.kernels import cuda as kernels

    r = webrank.pagerank(g, **KW)
    op = make_operator(g, device="gpu", alpha=0.85, personalization=None, dangling=None,
                       dtype="float32", options=EngineOptions(engine="persistent"))
    n = g.n
    x = cp.asarray(r.scores)
    empty = cp.RawKernel(r"""
#include <cooperative_groups.h>
extern "C" __global__ void nothing(int k) {
    if (k < 0) cooperative_groups::this_grid().sync(); }""", "nothing",
                         enable_cooperative_groups=True)
    plain = cp.RawKernel(r'extern "C" __global__ void nothing2(int k) {}', "nothing2")
    # the persistent kernel's own grid and blocks
    grid, block = (op._solve_grid,), (kernels.SOLVE_BLOCK,)
    empty(grid, block, (np.int32(1),))
    plain(grid, block, (np.int32(1),))
    sync = cp.cuda.Device().synchronize
    cases = {
        "stream": lambda: cp.cuda.Stream(non_blocking=True),
        "full_n": lambda: gpu_arrays.full(n, 1.0 / n),
        "zeros_1": lambda: cp.zeros(1, dtype=np.int32),
        "pull_layout": lambda: gpu_backend.PullStep(op.matrix, EngineOptions(), 32),
        "get_kernel": lambda: kernels.get_kernel("int32", "int32", "float32", False, 1),
        "occupancy": lambda: cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            op._solve.kernel.ptr, kernels.SOLVE_BLOCK, 0),
        "make_operator": lambda: make_operator(
            g, device="gpu", alpha=0.85, personalization=None, dangling=None,
            dtype="float32", options=EngineOptions(engine="persistent")),
        "launch_plain": lambda: plain(grid, block, (np.int32(1),)),
        "launch_cooperative": lambda: empty(grid, block, (np.int32(1),)),
        "copy_vector": lambda: gpu_arrays.copy_vector(x),
        "history_start": lambda: gpu_arrays.write_history_start(
            x, op._g["dangling"], cp.empty(4)),
        "normalized": lambda: gpu_arrays.normalized(x),
        "scores_to_host": lambda: op.scores_to_host(x),
        "hist_rows_to_host": lambda: cp.asnumpy(cp.empty((120, 4))[1:117]),
        "pagerank_check_args": lambda: webrank.ranking.check_scalar_args(
            0.85, 1e-10, 1000, "l1", "float32", "gpu"),
    }
    out = {}
    for name, fn in cases.items():
        fn()
        sync()
        host, synced = [], []
        for _ in range(loops):
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            host.append(t1 - t0)
            synced.append(t2 - t0)
        out[name] = {"host_us": 1e6 * statistics.median(host),
                     "synced_us": 1e6 * statistics.median(synced)}
        print(f"  {name:20s} host {out[name]['host_us']:8.1f} us, "
              f"with the device {out[name]['synced_us']:8.1f} us", flush=True)
    return out


def profile(g: Any) -> list[str]:
    import webrank

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20):
        webrank.pagerank(g, **KW)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(40)
    return text.getvalue().splitlines()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "web-NotreDame"])
    ap.add_argument("--data", default=os.environ.get("WEBRANK_DATASETS", "."))
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--out", default="persistent_anatomy.json")
    args = ap.parse_args()
    import webrank
    from webrank.bench.env import environment, write_json

    clocks = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader",
                               "-lms", "20"], stdout=subprocess.PIPE, text=True)
    rows = []
    try:
        for name in args.graphs:
            g = webrank.load(Path(args.data) / f"{name}.txt.gz", device="gpu")
            calls = whole_calls(g, args.repeats)
            print(f"{name}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else
                                          f"{k} {v}" for k, v in calls.items()), flush=True)
            rows.append({"graph": name, "n": g.n, "edges": g.num_edges, "calls_ms": calls,
                         "timeline": timeline(g, args.repeats), "pieces": pieces(g),
                         "profile": profile(g)})
    finally:
        clocks.terminate()
    samples = [int(s.split()[0]) for s in clocks.communicate()[0].split("\n") if s.strip()]
    print(f"SM clock samples (MHz): min {min(samples)}, median "
          f"{statistics.median(samples)}, max {max(samples)} of {len(samples)}")
    for row in rows:
        print("\n".join(row["profile"][:50]))
    write_json({"environment": environment(), "sm_clock_mhz": samples, "rows": rows},
               args.out)


if __name__ == "__main__":
    main()
