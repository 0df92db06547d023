"""Where a GPU rank's time outside the solve goes, in one process: load, then the
pagerank call's setup under cProfile (the copy to the device, layouts, compiles).

    python benchmarks/gpu/gpu_setup_profile.py FILE [--dtype float32]

Prints the profile; ``STEPS=setup bash benchmarks/gpu_host/run.sh pipeline`` keeps it
(published: ``benchmarks/results/io/h100/pipeline/gpu_setup_profile_rmat23_run3.txt``).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import webrank


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--dtype", default="float64")
    args = ap.parse_args()
    t = time.perf_counter()
    g = webrank.load(args.path)
    print(f"load {time.perf_counter() - t:.3f} s: {g}")
    for run in range(2):
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        r = webrank.pagerank(g, tol=1e-10, device="gpu", dtype=args.dtype)
        prof.disable()
        total = time.perf_counter() - t
        print(f"run {run}: total {total:.3f} s, setup {r.setup_time:.3f} s, solve "
              f"{r.elapsed:.3f} s, {r.iterations} iterations, {r.info.get('engine')}")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
