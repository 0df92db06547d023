"""One rank of ``webrank rank --distributed`` with its wall clock marked: where a
process's time goes besides the phases it reports itself (the interpreter's start, the
communicator, the top pages, the exit).

    mpirun -n P python benchmarks/distributed/rank_timeline.py MARKS_DIR rank DIR \\
        --distributed --device gpu ... -o RANKS

runs ``webrank`` with the arguments after ``MARKS_DIR`` and writes
``MARKS_DIR/rank-R.json``: the epoch seconds at which the wrapper started (``main``), the
start and end of ``make_comm`` (``comm``), ``read_part`` (``read``),
``distributed_pagerank`` (``run``: the read, the placement, the steps and the top
pages), ``top_of`` (``top``) and ``write_scores`` (``write``), and the last moment
Python ran (``exit``: after MPI's finalize, before the interpreter's and CUDA's
teardown). :func:`timeline` turns the files of every rank and the launcher's own start
and end into phases; ``shards_bench.py`` runs its ranks through this file.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path

#: the marks :func:`timeline` reads, in the order a rank passes them
SPANS = ("comm", "read", "run", "top", "write")


def _rank() -> int:
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def _mark(marks: dict, module: object, name: str, key: str) -> None:
    """Wrap ``module.name`` so that each call's start and end go into ``marks[key]``."""
    fn = getattr(module, name)

    def marked(*args, **kwargs):
        t = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            marks.setdefault(key, []).append((t, time.time()))

    setattr(module, name, marked)


def main() -> None:
    marks: dict = {"main": time.time()}
    where = Path(sys.argv[1])
    rank = _rank()

    def written() -> None:  # registered before MPI's finalize: runs after it
        marks["exit"] = time.time()
        (where / f"rank-{rank}.json").write_text(json.dumps(marks))

    atexit.register(written)
    import webrank.distributed.inputs as inputs
    import webrank.distributed.run as run

    _mark(marks, run, "make_comm", "comm")
    _mark(marks, run, "distributed_pagerank", "run")
    _mark(marks, run, "top_of", "top")
    _mark(marks, inputs, "read_part", "read")
    _mark(marks, inputs, "write_scores", "write")
    from webrank.console import main as webrank_main

    sys.argv = ["webrank", *sys.argv[2:]]
    webrank_main()


def timeline(where: Path, started: float, ended: float) -> dict:
    """Phases of a run from its ranks' marks (``where``) and the launcher's ``started``
    and ``ended`` (epoch seconds): per phase the slowest rank's seconds, and
    ``launch_s`` (the launcher's start to the last rank's wrapper start: the launcher,
    the interpreter and its imports), ``solve_s`` (``distributed_pagerank`` less its
    read and top pages), ``exit_s`` (the last rank's last Python moment to the launcher's
    end: the interpreter's and CUDA's teardown) and ``other_s`` (what none of these
    covers, on the slowest path)."""
    ranks = [json.loads(f.read_text()) for f in sorted(where.glob("rank-*.json"))]
    if not ranks:
        return {}

    def span(r: dict, key: str) -> float:
        return sum(b - a for a, b in r.get(key, []))

    out = {"launch_s": max(r["main"] for r in ranks) - started,
           "exit_s": ended - max(r["exit"] for r in ranks)}
    for key in SPANS:
        out[f"{key}_s"] = max(span(r, key) for r in ranks)
    out["solve_s"] = max(span(r, "run") - span(r, "read") - span(r, "top") for r in ranks)
    covered = (out["launch_s"] + out["exit_s"] + out["comm_s"] + out["run_s"]
               + out["write_s"])
    out["other_s"] = (ended - started) - covered
    out["ranks"] = len(ranks)
    return out


if __name__ == "__main__":
    main()
