"""Where the time of a whole GPU PageRank call goes, and of a whole ``webrank rank``
process on the GPU against the CPU (the second GPU design's time-to-solution targets).

For each real graph: the median of repeated ``webrank.pagerank(g, device="gpu",
dtype="float32", tol=1e-10)`` calls (the graph already on the device, the scores copied
back), split into the operator's setup, the solve and the rest (copy back, result);
then whole ``webrank rank FILE --device gpu|cpu`` processes (import, CUDA start, kernel
load from CuPy's disk cache, parse, solve, print), median of several runs after one that
fills the caches.

    python benchmarks/gpu/gpu_call_profile.py --data DIR [--out FILE.json]

Results: ``--out`` (published: ``benchmarks/results/gpu/h100/gpu_call_profile.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

GRAPHS = ("web-NotreDame", "cnr-2000")


def call_profile(path: Path, repeats: int = 20) -> dict:
    import cupy as cp

    import webrank

    g = webrank.load(path)
    kw = {"device": "gpu", "dtype": "float32", "tol": 1e-10}
    webrank.pagerank(g, **kw)  # compile / load kernels, upload the CSR
    rows = []
    for _ in range(repeats):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        r = webrank.pagerank(g, **kw)
        total = time.perf_counter() - t0
        rows.append((total, r.setup_time, r.elapsed))
    total, setup, solve = (statistics.median(c) for c in zip(*rows, strict=True))
    return {"graph": path.stem.split(".")[0], "engine": r.info.get("engine"),
            "iterations": r.iterations, "call_ms": 1e3 * total, "setup_ms": 1e3 * setup,
            "solve_ms": 1e3 * solve, "rest_ms": 1e3 * (total - setup - solve)}


def persistent_grid_sweep(path: Path, per_sm: tuple[int, ...] = (1, 2, 4, 8)) -> list[dict]:
    """ms per step of the persistent engine (steps 65 to 449, float32) by blocks per SM."""
    import cupy as cp

    import webrank
    from webrank.backends import gpu

    g = webrank.load(path)
    out = []
    default = gpu.PERSISTENT_BLOCKS_PER_SM
    for blocks in per_sm:
        gpu.PERSISTENT_BLOCKS_PER_SM = blocks
        times = {}
        for k in (65, 449):
            runs = []
            for _ in range(7):
                cp.cuda.Device().synchronize()
                t0 = time.perf_counter()
                webrank.pagerank(g, device="gpu", engine="persistent", dtype="float32",
                                 tol=1e-300, max_iter=k, raise_on_nonconvergence=False)
                runs.append(time.perf_counter() - t0)
            times[k] = statistics.median(runs[1:])
        out.append({"blocks_per_sm": blocks,
                    "ms_per_step": 1e3 * (times[449] - times[65]) / 384})
    gpu.PERSISTENT_BLOCKS_PER_SM = default
    return out


def process_times(path: Path, device: str, runs: int = 5) -> dict:
    cmd = [sys.executable, "-m", "webrank", "rank", str(path), "--device", device,
           "--tol", "1e-10", "--top", "3"]
    env = dict(os.environ)
    subprocess.run(cmd, check=True, capture_output=True, env=env)  # fill the caches
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    last = subprocess.run(cmd, check=True, capture_output=True, env=env, text=True)
    imports = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]], check=True,
                             capture_output=True, env=env, text=True).stderr
    return {"graph": path.stem.split(".")[0], "device": device,
            "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "cli_summary": last.stdout.strip().splitlines()[-2:],
            "slowest_imports": _slowest_imports(imports)}


def _slowest_imports(report: str, count: int = 15) -> list[str]:
    """The ``-X importtime`` lines with the largest cumulative times."""
    rows = []
    for line in report.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return [f"{us / 1e3:8.1f} ms {name}" for us, name in sorted(rows, reverse=True)[:count]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("WEBRANK_DATASETS", "."))
    ap.add_argument("--out", default="gpu_call_profile.json")
    args = ap.parse_args()
    from webrank.bench.env import environment

    data = Path(args.data)
    calls = [call_profile(data / f"{name}.txt.gz") for name in GRAPHS]
    sweep = persistent_grid_sweep(data / f"{GRAPHS[1]}.txt.gz")
    procs = [process_times(data / f"{GRAPHS[1]}.txt.gz", dev) for dev in ("gpu", "cpu")]
    Path(args.out).write_text(json.dumps({"environment": environment(), "calls": calls,
                                          "persistent_grid": sweep, "processes": procs},
                                         indent=1))
    for row in sweep:
        print(f"persistent, {row['blocks_per_sm']} blocks/SM: {row['ms_per_step']:.4f} ms/step")
    for c in calls:
        print(f"{c['graph']:14s} {c['engine']:10s} call {c['call_ms']:6.2f} ms = setup "
              f"{c['setup_ms']:.2f} + solve {c['solve_ms']:.2f} ({c['iterations']} it) + "
              f"rest {c['rest_ms']:.2f}")
    for p in procs:
        print(f"webrank rank {p['graph']} --device {p['device']}: {p['median_s']:.2f} s "
              f"({p['min_s']:.2f}-{p['max_s']:.2f})")
        print("   ", *p["cli_summary"], *p["slowest_imports"][:8], sep="\n    ")


if __name__ == "__main__":
    main()
