"""Ingestion against its floor: ``webrank.load`` of an edge list (ids compacted, CSR
built) beside ``pyarrow.csv.read_csv`` of the same file on all cores, in one process,
interleaved, medians of the repeats; plus the score writes (CSV, Parquet) of the graph.

    python benchmarks/io/ingest.py --scales 20 23 --repeat 5 --out ingest.json

R-MAT edge lists are written by ``webrank generate rmat S`` into ``--dir`` (kept for
later runs); ``--files`` adds others (``--labels string`` for string ids). Results: JSON to
``--out``; ``bash benchmarks/gpu_host/run.sh e2e`` runs it on the GPU host (published:
``benchmarks/results/io/h100/pipeline/ingest_run2.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from webrank.bench.suites.e2e import parse_floor


def measure(path: str, labels: str, repeat: int) -> dict:
    import webrank

    floor, load = [], []
    g = None
    for _ in range(repeat + 1):  # the first round warms the page cache and the kernels
        floor.append(parse_floor(path, "txt.gz" if path.endswith(".gz") else "txt", labels))
        del g
        t = time.perf_counter()
        g = webrank.load(path, labels=labels)
        load.append(time.perf_counter() - t)
    r = webrank.pagerank(g, tol=1e-3, device="cpu", method="power")  # scores to write
    writes = {}
    for ext in ("csv", "parquet"):
        out = f"{path}.scores.{ext}"
        ts = []
        for _ in range(max(1, repeat // 2)):
            t = time.perf_counter()
            r.save(out)
            ts.append(time.perf_counter() - t)
        os.unlink(out)
        writes[f"write_{ext}_s"] = float(np.median(ts))
    t = time.perf_counter()
    with open(f"{path}.scores.bin", "wb") as f:
        f.write(r.scores.tobytes())
    writes["write_bytes_s"] = time.perf_counter() - t
    os.unlink(f"{path}.scores.bin")
    return {"file": path, "bytes": os.path.getsize(path), "labels": labels,
            "nodes": g.n, "edges": g.num_edges,
            "pyarrow_read_csv_s": float(np.median(floor[1:])),
            "webrank_load_s": float(np.median(load[1:])),
            "ratio": float(np.median(load[1:]) / np.median(floor[1:])),
            "first_load_s": load[0], "all_pyarrow_s": floor, "all_load_s": load,
            "peak_rss_bytes": _peak_rss(), **writes}


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="*", default=[20])
    ap.add_argument("--files", nargs="*", default=[])
    ap.add_argument("--labels", default="int", choices=["int", "string"])
    ap.add_argument("--gz", action="store_true", help="also the .txt.gz of each scale")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/webrank-ingest")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    files = [(f, args.labels) for f in args.files]
    for s in args.scales:
        for suffix in (".txt", ".txt.gz") if args.gz else (".txt",):
            p = Path(args.dir) / f"rmat{s}{suffix}"
            if not p.exists():
                subprocess.run([sys.executable, "-m", "webrank", "generate", "rmat", str(s),
                                "--out", str(p), "--seed", "1"], check=True)
            files.append((str(p), "int"))
    from webrank.bench.env import environment

    rows = []
    for path, labels in files:
        row = measure(path, labels, args.repeat)
        rows.append(row)
        print(f"{Path(path).name}: {row['edges']:,} links; webrank.load "
              f"{row['webrank_load_s']:.3f} s, pyarrow.csv.read_csv "
              f"{row['pyarrow_read_csv_s']:.3f} s: {row['ratio']:.2f}x; write csv "
              f"{row['write_csv_s']:.3f} s, parquet {row['write_parquet_s']:.3f} s, "
              f"bytes {row['write_bytes_s']:.3f} s; peak RSS "
              f"{row['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"environment": environment(), "threads": _threads(), "rows": rows},
                      f, indent=1)


def _threads() -> int:
    from webrank.kernels.cpu import num_threads

    return num_threads()


if __name__ == "__main__":
    main()
