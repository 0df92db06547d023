"""Whole ``webrank rank FILE -o scores.parquet`` processes of two source trees, alternated
round by round on the same machine: wall clock, the CLI's own phases (``--json``) and
each process's peak resident memory, beside pyarrow's parse of the same text file.

    python benchmarks/before_after/whole_ab.py OLD_SRC NEW_SRC --files r23.txt r23.npz
                                  [--device gpu] [--rounds 3] [--out FILE.json]

Each tree runs once untimed first (page cache, on-disk kernel caches). Prints one line a
process and the medians; writes JSON (machine, commit, date) to ``--out`` (published:
``benchmarks/results/gpu/h100/whole_call/run*_whole_*``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from webrank.bench.env import environment, write_json
from webrank.bench.suites.e2e import parse_floor, run_process


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="source folders (each put first on PYTHONPATH)")
    ap.add_argument("--files", nargs="+", required=True)
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="whole_ab.json")
    args = ap.parse_args()
    rows = []
    floors = {f: statistics.median(parse_floor(f, "txt") for _ in range(3))
              for f in args.files if f.endswith(".txt")}
    for f, s in floors.items():
        print(f"pyarrow.csv.read_csv {Path(f).name}: {s:.3f} s")
    for rnd in range(args.rounds + 1):
        for tree in args.trees:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(Path(tree).resolve()), *os.environ.get("PYTHONPATH", "").split(os.pathsep)])}
            for f in args.files:
                cmd = [sys.executable, "-m", "webrank", "rank", f, "--device", args.device,
                       "--tol", "1e-10", "--json", "-o", "/tmp/whole_ab.parquet"]
                done = run_process(cmd, env)
                if done.returncode != 0:
                    print(f"{tree} {f}: exit {done.returncode}: {done.stderr[-300:]}")
                    continue
                d = json.loads(done.stdout)
                row = {"round": rnd, "tree": tree, "file": Path(f).name,
                       "seconds": done.seconds, "peak_rss": done.peak_rss,
                       "bytes": os.path.getsize(f), "edges": d.get("edges"),
                       **{k: d.get(k) for k in ("load_s", "setup_s", "elapsed_s", "method",
                                                "engine", "iterations")}}
                row["beyond_file_per_link"] = (row["peak_rss"] - row["bytes"]) / row["edges"]
                print(f"{'warm-up' if rnd == 0 else f'round {rnd}'} {tree} {row['file']}: "
                      f"whole {done.seconds:.3f} s, load {row['load_s']:.3f}, setup "
                      f"{row['setup_s']:.3f}, solve {row['elapsed_s']:.3f}; peak "
                      f"{done.peak_rss / 1e9:.2f} GB, {row['beyond_file_per_link']:.1f} B/link "
                      f"beyond the file", flush=True)
                if rnd:
                    rows.append(row)
    medians = {}
    for tree in args.trees:
        for f in args.files:
            mine = [r for r in rows if r["tree"] == tree and r["file"] == Path(f).name]
            if mine:
                key = f"{tree} {Path(f).name}"
                medians[key] = {k: statistics.median(r[k] for r in mine)
                                for k in ("seconds", "load_s", "peak_rss",
                                          "beyond_file_per_link")}
                print(f"median {key}: " + ", ".join(f"{k} {v:.3f}" if v < 1e6 else
                                                     f"{k} {v / 1e9:.2f} GB"
                                                     for k, v in medians[key].items()))
    write_json({"environment": environment(), "device": args.device,
                "parse_floor_s": {Path(f).name: s for f, s in floors.items()},
                "rows": rows, "medians": medians}, args.out)


if __name__ == "__main__":
    main()
