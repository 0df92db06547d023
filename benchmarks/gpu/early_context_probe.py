"""Does a CUDA context in the process slow the host-side load, and what do the driver's
context, CuPy's import and CuPy's first operation cost, each alone? (The question behind
the console script's early context, :mod:`webrank.kernels.cuda_context`.)

    python benchmarks/gpu/early_context_probe.py r23.txt r23.npz [--rounds 5]

Fresh processes, alternated: ``webrank.load(FILE)`` on the host with and without the
primary context created first through the driver; then the driver's context, ``import
cupy`` and ``cupy.zeros(1).sum()`` timed one after the other, with and without the early
context. Prints each measurement's median and its runs (published:
``benchmarks/results/gpu/h100/whole_call/early_context_probe.txt``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

LOAD = r"""
import sys, time, json
t0 = time.perf_counter()
if sys.argv[2] == "early":
    from webrank.kernels import cuda_context
    cuda_context.start_primary_context(); cuda_context._started.join()
t1 = time.perf_counter()
import webrank
g = webrank.load(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"ctx": t1 - t0, "load": t2 - t1}))
"""
PARTS = r"""
import sys, time, json
t0 = time.perf_counter()
if sys.argv[1] == "early":
    from webrank.kernels import cuda_context
    cuda_context.start_primary_context(); cuda_context._started.join()
t1 = time.perf_counter()
import cupy
t2 = time.perf_counter()
cupy.zeros(1).sum(); cupy.cuda.Device().synchronize()
t3 = time.perf_counter()
print(json.dumps({"driver_ctx": t1 - t0, "import_cupy": t2 - t1, "first_op": t3 - t2}))
"""


def child(code: str, *args: str) -> dict[str, float]:
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if p.returncode:
        print(p.stderr[-800:])
        return {}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    runs: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for f in args.files:
            for mode in ("none", "early"):
                got = child(LOAD, f, mode)
                runs.setdefault((f, mode), []).append(got.get("load", float("nan")))
        for mode in ("none", "early"):
            for key, value in child(PARTS, mode).items():
                runs.setdefault((mode, key), []).append(value)
    for key, values in runs.items():
        print(key, f"median {statistics.median(values):.3f}",
              " ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
