"""The CPU power step of two source trees, alternated in fresh processes.

    python benchmarks/before_after/cpu_step_ab.py OLD_SRC NEW_SRC [--graphs cnr-2000 ...]
                                     [--engines pull blocked] [--rounds 5] [--out FILE]

Each round runs, for every graph and engine, one process on OLD_SRC and then one on NEW_SRC
(``PYTHONPATH``); each process loads the graph, runs the engine once, then times pairs of
runs of 10 and 60 power steps (``tol=1e-300``): ms per step = (t60 - t10) / 50, the
median of the pairs. On a shared machine the rounds' paired ratios say more than either
median alone; both are printed. ``OLD_SRC`` may be a worktree of an older commit
(``git worktree add /tmp/old COMMIT``).

Results: printed, and JSON to ``--out`` (published:
``benchmarks/results/first_call/cpu_2core/first_answer/steps_recheck.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[2] / "shared" / "datasets"

STEP_TIMES = """
import json, statistics, sys, time
import webrank
g = webrank.load(sys.argv[1]); engine = sys.argv[2]; pairs = int(sys.argv[3])
def steps(k):
    t0 = time.perf_counter()
    webrank.pagerank(g, device="cpu", method="power", engine=engine, tol=1e-300,
                     max_iter=k, raise_on_nonconvergence=False)
    return time.perf_counter() - t0
steps(5)
per = []
for _ in range(pairs):
    a = steps(10); b = steps(60); per.append((b - a) / 50 * 1e3)
print(json.dumps({"median_ms": statistics.median(per), "min_ms": min(per)}))
"""


def step_ms(src: Path, graph: Path, engine: str, pairs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", STEP_TIMES, str(graph), engine, str(pairs)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--graphs", nargs="+", default=["cnr-2000", "web-NotreDame",
                                                    "soc-Epinions1"])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--engines", nargs="+", default=["pull", "blocked"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    times: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for graph in args.graphs:
            for engine in args.engines:
                row = times.setdefault(f"{graph}/{engine}", {"old": [], "new": []})
                for which in ("old", "new"):
                    src = getattr(args, which)
                    row[which].append(step_ms(src, args.data / f"{graph}.txt.gz", engine,
                                              args.pairs))
    print(f"ms per power step, {args.rounds} alternated rounds; old {args.old}, new {args.new}")
    print(f"{'graph/engine':26s} {'old':>8s} {'new':>8s} {'new/old':>8s}  paired ratios")
    for key, row in times.items():
        old, new = statistics.median(row["old"]), statistics.median(row["new"])
        pairs = " ".join(f"{b / a:.2f}" for a, b in zip(row["old"], row["new"], strict=True))
        print(f"{key:26s} {old:8.3f} {new:8.3f} {new / old:8.3f}  {pairs}")
    if args.out:
        from webrank.bench.env import environment, write_json

        write_json({"environment": environment(), "old": str(args.old), "new": str(args.new),
                    "ms_per_step": times}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
