"""R-MAT from shards on disk to ranks on disk, one process per part, phase by phase
against the floors of reading the shards.

    python benchmarks/distributed/shards_bench.py SCALE [--parts 4] [--device gpu]
                                      [--dir /tmp/rmatS-shards] [--out shards.json]
                                      [--generate-only]

1. The shards: ``webrank generate rmat SCALE --shards PARTS --device DEVICE`` in a process
   of its own (its drawn / built / written seconds and its peak memory), unless ``--dir``
   already holds a shard set of that scale (kept from an earlier run on the machine;
   ``--generate-only`` stops here, for machines that limit a command's time).
2. The floors: every shard read once, side by side, from the page cache as it stands; the
   disk's own rate by direct reads (``O_DIRECT``) of up to 2 GiB of each shard.
3. The run: ``mpirun -n PARTS --bind-to none webrank rank DIR --distributed --device
   DEVICE --dtype float32 --tol 1e-10 --json -o RANKS`` (rank 0's phases: read,
   placement and its parts, steps, wait, write), its wall clock, each GPU's peak memory
   (``nvidia-smi`` every 0.5 s), the ranks written, and where the wall clock went
   besides (``rank_timeline.py``: the launch, the communicator, the top pages, the
   exit).

Writes JSON (machine, GPU, commit, date) to ``--out`` and prints a summary. On the GPU
host: ``SCALE=30 GPUS=4 bash benchmarks/gpu_host/run.sh shards`` (published:
``benchmarks/results/distributed/h100x4/rmat30_shards/``); on any machine with Open MPI:
``python benchmarks/distributed/shards_bench.py 16 --parts 2 --device cpu``.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rank_timeline import timeline

from webrank.bench.env import environment, write_json

HERE = Path(__file__).resolve().parent

GENERATE = r"""
import json, resource, sys, time
from webrank.distributed.generate import write_rmat_shards
t = time.perf_counter()
info = write_rmat_shards(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), seed=1,
                         device=sys.argv[4])
info["whole_s"] = time.perf_counter() - t
info["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(info))
"""


def generate(scale: int, directory: Path, parts: int, device: str) -> dict:
    """The shard set, written by a process of its own; its timings."""
    out = subprocess.run([sys.executable, "-c", GENERATE, str(scale), str(directory),
                          str(parts), device], capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"generate failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def page_cache_floor(files: list[Path]) -> float:
    """Seconds to read every file once, one thread each, 64 MiB at a time."""
    def read(path: Path) -> None:
        buf = bytearray(1 << 26)
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass

    t = time.perf_counter()
    with ThreadPoolExecutor(len(files)) as pool:
        list(pool.map(read, files))
    return time.perf_counter() - t


def disk_rate(files: list[Path], limit: int = 2 << 30) -> float | None:
    """The disk's read rate, bytes/s: direct reads (past the page cache) of up to
    ``limit`` bytes of each file, side by side; None where the file system refuses
    ``O_DIRECT``."""
    if not hasattr(os, "O_DIRECT"):  # reads would come from the page cache
        return None

    def read(path: Path) -> int:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 1 << 26)  # page-aligned, as O_DIRECT wants
        done = 0
        try:
            while done < limit:
                got = os.readv(fd, [buf])
                if got <= 0:
                    break
                done += got
        finally:
            os.close(fd)
            buf.close()
        return done

    t = time.perf_counter()
    try:
        with ThreadPoolExecutor(len(files)) as pool:
            total = sum(pool.map(read, files))
    except OSError:
        return None
    return total / (time.perf_counter() - t)


class GPUMemory:
    """Each GPU's peak memory in use (MiB) while the run goes, from ``nvidia-smi``."""

    def __init__(self) -> None:
        self.peak: dict[str, int] = {}
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits",
                 "-lms", "500"], stdout=subprocess.PIPE, text=True)
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            index, used = (s.strip() for s in line.split(","))
            if used.isdigit():
                self.peak[index] = max(self.peak.get(index, 0), int(used))

    def stop(self) -> dict[str, int]:
        if self.proc is not None:
            self.proc.terminate()
            self.thread.join(timeout=5)
        return self.peak


def rank(directory: Path, parts: int, device: str, ranks: Path) -> dict:
    """One ``mpirun`` of ``webrank rank DIR --distributed``: its wall clock and rank 0's
    JSON line."""
    mpirun = shutil.which("mpirun") or sys.exit("mpirun is not on PATH")
    marks = Path(tempfile.mkdtemp(prefix="rank-marks-"))
    cmd = [mpirun, "-n", str(parts), "--bind-to", "none", "--oversubscribe",
           sys.executable, str(HERE / "rank_timeline.py"), str(marks),
           "rank", str(directory), "--distributed",
           "--device", device, "--dtype", "float32", "--tol", "1e-10", "--json",
           "-o", str(ranks)]
    memory = GPUMemory() if device == "gpu" else None
    started = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    ended = time.time()
    peaks = memory.stop() if memory else {}
    if out.returncode:
        sys.exit(f"rank failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    phases = timeline(marks, started, ended)
    shutil.rmtree(marks, ignore_errors=True)
    return {"whole_s": ended - started, "gpu_peak_mib": peaks, "rank0": doc,
            "timeline": phases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scale", type=int)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--dir", default=None, help="the shard set (default /tmp/rmatS-shards)")
    ap.add_argument("--out", default="shards.json")
    ap.add_argument("--generate-only", action="store_true",
                    help="write the shards and stop (a later run ranks them)")
    args = ap.parse_args()
    directory = Path(args.dir or f"/tmp/rmat{args.scale}-shards")
    manifest = directory / "webrank-shards.json"
    record: dict = {"scale": args.scale, "parts": args.parts, "device": args.device}
    held = json.loads(manifest.read_text()) if manifest.exists() else {}
    kept = (held.get("name"), held.get("parts")) == (f"rmat-{args.scale}", args.parts)
    if kept:
        record["generate"] = "kept from an earlier run"
    else:
        record["generate"] = generate(args.scale, directory, args.parts, args.device)
    if args.generate_only:
        write_json({**record, "environment": environment()}, args.out)
        print(f"shards written: {json.dumps(record['generate'])}; wrote {args.out}")
        return
    files = sorted(directory.glob("part-*.npz"))
    shard_bytes = sum(f.stat().st_size for f in files)
    record["shard_bytes"] = shard_bytes
    record["page_cache_read_s"] = page_cache_floor(files)
    rate = disk_rate(files)
    record["disk_read_bytes_per_s"] = rate
    record["disk_floor_s"] = None if rate is None else shard_bytes / rate
    ranks = directory.parent / f"{directory.name}-ranks"
    record["run"] = rank(directory, args.parts, args.device, ranks)
    record["ranks_bytes"] = sum(f.stat().st_size for f in ranks.glob("*.parquet"))
    record["environment"] = environment()
    write_json(record, args.out)
    gen = record["generate"]
    run, head = record["run"], record["run"]["rank0"]
    if isinstance(gen, dict):
        print(f"shards: {gen['edges']:,} links, {shard_bytes / 1e9:.1f} GB, written in "
              f"{gen['whole_s']:.1f} s (drawn {gen['generate_s']:.1f}, built "
              f"{gen['build_s']:.1f}, written {gen['write_s']:.1f})")
    floor = record["disk_floor_s"]
    print(f"floors: page cache {record['page_cache_read_s']:.2f} s, disk "
          + ("not measured (no O_DIRECT)" if floor is None else
             f"{floor:.1f} s ({rate / 1e9:.2f} GB/s)"))
    phases = ", ".join(f"{k} {head[k]:.2f} s" for k in
                       ("setup_s", "placement_s", "steps_s", "wait_s", "elapsed_s", "write_s")
                       if isinstance(head.get(k), int | float))
    print(f"rank: whole {run['whole_s']:.2f} s; {phases}; {head['iterations']} steps; GPU "
          f"peaks (MiB) {run['gpu_peak_mib'] or 'n/a'}; ranks {record['ranks_bytes'] / 1e9:.2f}"
          f" GB")
    line = run.get("timeline") or {}
    print("timeline (slowest rank): " + ", ".join(
        f"{k} {v:.2f} s" for k, v in line.items() if k.endswith("_s")))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
