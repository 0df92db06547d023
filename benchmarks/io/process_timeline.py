"""Where the wall time and the memory of one whole ``webrank rank`` process go: marks at
the end of the imports, around reading the graph, the solve, writing the scores and at
exit, each with the process's peak resident size so far; the interpreter's start and
the teardown after the last mark are what the parent's clock adds around them. The
process runs as the console script does (the CUDA context started before the command
line's imports, the exit by ``os._exit`` after a success, marked just before it).

    python benchmarks/io/process_timeline.py FILE [--device gpu] [--repeats 3] [-- ARGS...]

ARGS go to ``webrank rank FILE --device DEV --tol 1e-10 -o /tmp/timeline.parquet``.
Prints one line a process and the medians of each phase, and what the process started
(subprocesses, through an audit hook) or imported of SciPy and ``cupyx``.
``TIMELINE_NO_CUPYX_WARMUP=1``: the GPU warm-up without its ``cupyx.scipy.special``
import (to see whether the run imports it anyway). Writes no file (published output:
``benchmarks/results/gpu/h100/whole_call/timeline_*.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import atexit, json, os, resource, sys, time
T0 = time.perf_counter()
marks, spawned = [], []
def mark(what):
    marks.append((what, time.perf_counter() - T0,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
def audit(event, args):
    if event in ("subprocess.Popen", "os.system", "os.fork", "os.posix_spawn", "os.exec"):
        spawned.append(f"{event} {str(args)[:120]}")
sys.addaudithook(audit)
def report():
    if marks and marks[-1][0] == "atexit":
        return
    mark("atexit")
    sys.stderr.write("TIMELINE " + json.dumps({
        "marks": marks, "spawned": spawned,
        "imported": [m for m in ("scipy", "cupyx.scipy.special", "cupyx") if m in sys.modules],
        "children_peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}) + "\n")
    sys.stderr.flush()
atexit.register(report)
_os_exit = os._exit
def leave(code):  # the console script leaves by os._exit after a success
    report()
    _os_exit(code)
os._exit = leave
import webrank.console as console  # what the console script does first
if console.may_use_gpu(sys.argv[1:]):
    from webrank.kernels.cuda_context import start_primary_context
    start_primary_context()
import webrank, webrank.cli
from webrank.result import PageRankResult
if os.environ.get("TIMELINE_NO_CUPYX_WARMUP"):  # the warm-up without its cupyx import
    import webrank.backends as wb
    def warm():
        try:
            usable = wb._gpu_status()[0]
            wb._probed.set()
            if usable:
                import cupy
                cupy.zeros(1).sum()
        finally:
            wb._probed.set()
    wb._warm_gpu = warm
mark("imports")
def wrapped(owner, name, label):
    fn = getattr(owner, name)
    def run(*a, **k):
        mark(label + " start")
        try:
            return fn(*a, **k)
        finally:
            mark(label + " end")
    setattr(owner, name, run)
wrapped(webrank.cli, "load_graph", "load")
wrapped(webrank, "pagerank", "pagerank")
wrapped(PageRankResult, "save", "write")
sys.argv = ["webrank"] + sys.argv[1:]
webrank.cli.run()
"""


def one(argv: list[str]) -> dict[str, float]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    line = [s for s in done.stderr.splitlines() if s.startswith("TIMELINE ")]
    if done.returncode != 0 or not line:
        raise SystemExit(f"exit {done.returncode}: {done.stderr[-500:]}")
    doc = json.loads(line[0][len("TIMELINE "):])
    marks = doc["marks"]
    if doc["spawned"] or doc["imported"]:
        print(f"  spawned {doc['spawned']}; imported {doc['imported']}; children's peak "
              f"{doc['children_peak'] / 1e9:.2f} GB")
    at = {k: t for k, t, _ in marks}
    peak = {k: r for k, _, r in marks}
    # the interpreter's start before the child's first line: a bare interpreter's
    out = {"start+imports": at["imports"], "read graph": at["load end"] - at["load start"],
           "pagerank": at["pagerank end"] - at["pagerank start"],
           "write": at.get("write end", 0.0) - at.get("write start", 0.0),
           "to exit": at["atexit"] - at.get("write end", at["pagerank end"]),
           "teardown+interpreter": wall - at["atexit"], "whole": wall,
           "peak after read (GB)": peak["load end"] / 1e9,
           "peak after pagerank (GB)": peak["pagerank end"] / 1e9,
           "peak at exit (GB)": peak["atexit"] / 1e9}
    out["between"] = wall - out["teardown+interpreter"] - sum(
        out[k] for k in ("start+imports", "read graph", "pagerank", "write", "to exit"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--repeats", type=int, default=3)
    args, rest = ap.parse_known_args()
    argv = ["rank", args.file, "--device", args.device, "--tol", "1e-10", "--json", "-o",
            "/tmp/timeline.parquet", *[a for a in rest if a != "--"]]
    bare = statistics.median(_bare() for _ in range(3))
    print(f"bare interpreter start and exit: {bare:.3f} s")
    rows = [one(argv) for _ in range(args.repeats + 1)][1:]  # the first warms the caches
    for r in rows:
        print(" ".join(f"{k} {v:.3f}" for k, v in r.items()), flush=True)
    print(os.path.basename(args.file), args.device, "medians: " + ", ".join(
        f"{k} {statistics.median(r[k] for r in rows):.3f}" for k in rows[0]))


def _bare() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
