"""Where ``webrank.load`` of a large plain edge list spends its time: the parallel parse
(three ways to reach the file's bytes: a plain memory map, a pre-faulted one, a parallel
read into anonymous memory) and each kernel of the parallel CSR build, medians of the
repeats, beside ``pyarrow.csv.read_csv``.

    python benchmarks/io/ingest_profile.py /tmp/webrank-ingest/rmat23.txt --repeat 3

Prints the phases; ``run.sh e2e`` and ``STEPS=ingest run.sh pipeline`` keep them (published:
``benchmarks/results/io/h100/pipeline/ingest_profile_rmat23_run*.txt``).
"""

from __future__ import annotations

import argparse
import functools
import mmap
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import webrank
from webrank import build
from webrank.io import edgelist
from webrank.kernels import cpu_build, cpu_parse
from webrank.kernels.cpu import num_threads


def timed(store: dict, name: str, fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        t = time.perf_counter()
        out = fn(*a, **k)
        store.setdefault(name, []).append(time.perf_counter() - t)
        return out
    return wrapper


def parse(buf: np.ndarray, start: int, size: int) -> float:
    """The parallel parse of ``buf[start:size]`` into int32 columns (ranges as
    ``webrank.io.edge_parse.parallel_read`` cuts them)."""
    body = size - start
    ranges = int(min(64 * num_threads(), max(num_threads(), body >> 20)))
    cuts = [start]
    view = memoryview(buf)
    for k in range(1, ranges):
        p = start + body * k // ranges
        nl = bytes(view[p:p + 4096]).find(b"\n")
        cuts.append(size if nl < 0 else p + nl + 1)
    cuts.append(size)
    cut = np.unique(np.asarray(cuts, np.int64))
    first_slot = (cut[:-1] - start) // 4 + np.arange(cut.size - 1)
    slots = int(first_slot[-1] + (cut[-1] - cut[-2]) // 4 + 1)
    src = np.empty(slots, np.int32)
    dst = np.empty(slots, np.int32)
    parsed = np.zeros(cut.size - 1, np.int64)
    bounds = np.zeros((cut.size - 1, 2), np.int64)
    t = time.perf_counter()
    cpu_parse.parse_id_pairs(buf, cut, ord("\t"), first_slot, src, dst, parsed, bounds)
    assert parsed.min() >= 0
    return time.perf_counter() - t


def parallel_read(path: str, size: int) -> np.ndarray:
    """The file's bytes in anonymous memory, read by all threads (a range each)."""
    buf = np.empty(size, np.uint8)
    pieces = np.linspace(0, size, 4 * num_threads() + 1).astype(np.int64)
    fd = os.open(path, os.O_RDONLY)

    def pread(k: int) -> None:
        a, b = int(pieces[k]), int(pieces[k + 1])
        mv = memoryview(buf)[a:b]
        done = 0
        while done < b - a:
            done += os.preadv(fd, [mv[done:]], a + done)

    with ThreadPoolExecutor(num_threads()) as pool:
        list(pool.map(pread, range(pieces.size - 1)))
    os.close(fd)
    return buf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = args.path
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        start = len(f.readline())  # one comment line
    print(f"{path}: {size / 2**30:.2f} GiB, {num_threads()} threads", flush=True)
    res: dict[str, list[float]] = {}

    for _ in range(args.repeat):
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            buf = np.frombuffer(mm, np.uint8)
            t = time.perf_counter()
            res.setdefault("parse mmap (kernel)", []).append(parse(buf, start, size))
            res.setdefault("parse mmap (all)", []).append(time.perf_counter() - t)
            del buf
            mm.close()
        with open(path, "rb") as f:
            t = time.perf_counter()
            mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE,
                           prot=mmap.PROT_READ)
            res.setdefault("map populate", []).append(time.perf_counter() - t)
            buf = np.frombuffer(mm, np.uint8)
            res.setdefault("parse populated", []).append(parse(buf, start, size))
            del buf
            mm.close()
        t = time.perf_counter()
        buf = parallel_read(path, size)
        res.setdefault("parallel pread", []).append(time.perf_counter() - t)
        res.setdefault("parse read buffer", []).append(parse(buf, start, size))
        del buf

    # the whole load, each build kernel timed
    for name in ("id_bounds", "mark_and_count", "scatter", "sort_buckets", "gather_rows",
                 "sum_rows", "count_sources"):
        setattr(cpu_build, name, timed(res, "kernel " + name, getattr(cpu_build, name)))
    # (the name the reader calls: edgelist imports it from webrank.io.edge_parse)
    edgelist.parallel_read = timed(res, "reader parallel_read", edgelist.parallel_read)
    build.build_csr = timed(res, "build_csr", build.build_csr)
    for _ in range(args.repeat):
        t = time.perf_counter()
        g = webrank.load(path)
        res.setdefault("webrank.load", []).append(time.perf_counter() - t)
        del g
    import pyarrow as pa
    import pyarrow.csv as pacsv

    for _ in range(args.repeat):
        t = time.perf_counter()
        pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=["s", "d"],
                                                            skip_rows=1),
                       parse_options=pacsv.ParseOptions(delimiter="\t"),
                       convert_options=pacsv.ConvertOptions(
                           column_types={"s": pa.int64(), "d": pa.int64()}))
        res.setdefault("pyarrow.csv.read_csv", []).append(time.perf_counter() - t)
    for k, v in res.items():
        print(f"{k:28s} median {np.median(v):.3f} s  (all: {', '.join(f'{x:.3f}' for x in v)})")


if __name__ == "__main__":
    main()
