"""``webrank bench e2e``: a user's whole wait, file to ranks on disk, phase by phase.

For each input (R-MAT edge lists generated into the output folder, as text, gzip text,
Parquet, the ``.npz`` cache and, where the datasets folder has it, a LAW BVGraph; the
real graphs of the datasets folder) and each device:

* **whole process**: ``webrank rank FILE --tol 1e-10 -o scores.parquet`` as a user runs
  it, a fresh process each time (interpreter start, imports, first calls included);
* **phases**, measured inside a fresh process that does what the CLI does: the import of
  the CLI's modules, ``webrank.load`` (read, parse, ids, CSR; for the GPU built there,
  with CuPy's start in a background thread as the CLI starts it), the setup of the solve
  (copy to the device, layouts), the solve, the copy back with the result's assembly,
  and writing the scores as Parquet and as CSV;
* **floors** beside them: reading the file's bytes from the page cache, pyarrow's parse
  of the same file on all cores (``pyarrow.csv.read_csv``, ``pyarrow.parquet.read_table``),
  writing the scores' bytes (a ``tobytes`` write of the score array) and pyarrow's
  Parquet writer on the same columns (``pyarrow.parquet.write_table``);
* **host memory**: each whole process's peak resident size (its own, from ``wait4``),
  and what it holds beyond the input file's size, per link (a plain file's mapped pages
  count in the resident size while it is parsed).

Scales are ``WEBRANK_E2E_SCALES`` (default "20 22"; ``--quick``: 14); the GPU phases run
where a GPU is usable. Every number is the median of the repeats of a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from webrank.bench.runner import BenchContext

TITLE = "End to end: a user's whole process, file to ranks on disk, phase by phase"
BACKGROUND = """The papers time the iteration alone: Praveen et al.'s cuSPARSE/cuBLAS loop,
Swaroop's and Ghadge et al.'s dense kernel, Kumar et al.'s hybrid step. A user waits for
the whole process: start, reading and parsing the file, numbering the nodes, building
the matrix, moving it to the GPU, the solve, and writing the scores. This suite measures
each phase beside its floor (the page-cache read, pyarrow's parse on all cores, the bytes
of the output)."""

PHASES = ("import", "load", "setup", "solve", "copy_back", "write_parquet", "write_csv")
FLOORS = ("read_bytes", "parse_floor", "write_bytes", "write_floor")
TOL = 1e-10


def _scales(ctx: BenchContext) -> list[int]:
    if ctx.quick:
        return [14]
    text = os.environ.get("WEBRANK_E2E_SCALES", "20 22")
    return [int(s) for s in text.split()]


def _inputs(ctx: BenchContext, folder: Path) -> list[tuple[str, str, Path]]:
    """``(graph, format, path)`` of every input, written into ``folder``."""
    from webrank.generate import generate
    from webrank.graph import Graph
    from webrank.io import save_graph, write_edgelist, write_parquet

    out: list[tuple[str, str, Path]] = []
    for scale in _scales(ctx):
        src, dst, _ = generate("rmat", scale, seed=1)
        # the ids that occur, as every format reads them back (a text or Parquet file
        # does not hold isolated ids), so that each format's rows rank one graph
        g = Graph.from_edges(src, dst)
        del src, dst
        name = f"rmat{scale}"
        for fmt, suffix, write in (("txt", ".txt", write_edgelist),
                                   ("txt.gz", ".txt.gz", write_edgelist),
                                   ("parquet", ".parquet", write_parquet),
                                   ("npz", ".npz", save_graph)):
            path = folder / f"{name}{suffix}"
            write(g, path)
            out.append((name, fmt, path))
    for real in ([] if ctx.quick else ["cnr-2000", "web-NotreDame", "soc-Epinions1"]):
        path = ctx.dataset(real)
        if path is not None:
            out.append((real, "txt.gz", path))
    if ctx.data_dir is not None and not ctx.quick:
        bv = ctx.data_dir / "law" / "cnr-2000.graph"
        if bv.exists():
            out.append(("cnr-2000", "bvgraph", bv))
    return out


def run(ctx: BenchContext) -> None:
    """Measure every input on every device (see the module docstring)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=ctx.out_dir) as tmp:
        folder = Path(tmp)
        for graph, fmt, path in _inputs(ctx, folder):
            for device in ctx.devices:
                rows.append(_measure(ctx, graph, fmt, path, device, folder))
    _report(ctx, rows)


def _measure(ctx: BenchContext, graph: str, fmt: str, path: Path, device: str,
             folder: Path) -> dict[str, Any]:
    params = {"graph": graph, "format": fmt, "bytes": path.stat().st_size, "tol": TOL}
    out = folder / "scores.parquet"
    cmd = [sys.executable, "-m", "webrank", "rank", str(path), "--device", device,
           "--tol", str(TOL), "-o", str(out), "--json"]
    whole: list[float] = []
    peaks: list[int] = []
    summary: dict[str, Any] = {}
    # one untimed process first: the file in the page cache and the kernels compiled
    # into the on-disk caches, as after `webrank warmup` (the first run on a fresh
    # machine is webrank warmup's measurement, not this one)
    for k in range(ctx.repeats + 1):
        done = run_process(cmd, _env())
        if k:
            whole.append(done.seconds)
            peaks.append(done.peak_rss)
        if done.returncode != 0:
            ctx.skip(f"{graph} {fmt} on {device}", done.stderr.strip().splitlines()[-1]
                     if done.stderr.strip() else f"exit {done.returncode}")
            return {"graph": graph, "format": fmt, "device": device}
        summary = json.loads(done.stdout)
    edges = summary.get("edges") or 0
    peak = int(np.median(peaks))
    beyond = (peak - params["bytes"]) / edges if edges else None
    ctx.record(f"whole process {graph} {fmt}", _timing(whole), device=device, params=params,
               metrics={"iterations": summary.get("iterations"), "edges": edges,
                        "method": summary.get("method"), "peak_rss_bytes": peak,
                        "bytes_per_link_beyond_file": beyond})
    phases: dict[str, list[float]] = {}
    for _ in range(ctx.repeats):
        code = (f"from webrank.bench.suites.e2e import phases; "
                f"phases({str(path)!r}, {fmt!r}, {device!r}, {str(folder)!r})")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=_env())
        if done.returncode != 0:
            raise RuntimeError(f"phases of {path} on {device}: {done.stderr[-2000:]}")
        for k, v in json.loads(done.stdout.splitlines()[-1]).items():
            phases.setdefault(k, []).append(v)
    for k, vals in phases.items():
        if k in PHASES or k in FLOORS:
            ctx.record(f"{k} {graph} {fmt}", _timing(vals), device=device,
                       params={**params, "phase": k})
    return {"graph": graph, "format": fmt, "device": device,
            "whole": float(np.median(whole)), "edges": edges, "peak_rss": peak,
            "beyond_file": beyond, **{k: float(np.median(v)) for k, v in phases.items()}}


@dataclass
class Process:
    """One finished child process: exit status, output, wall seconds, peak resident
    bytes (its own ``ru_maxrss``, from ``wait4``)."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss: int


#: started by :func:`run_process`: forks the command from a small interpreter, reaps it by
#: ``wait4`` and writes its wall seconds and peak resident KiB to the file named first
_LAUNCHER = """
import os, sys, time
report, cmd = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - t0
with open(report, "w") as f:
    f.write(f"{seconds} {usage.ru_maxrss}")
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def run_process(cmd: list[str], env: dict[str, str]) -> Process:
    """Run ``cmd`` (its program a full path) to its end and measure it (:class:`Process`).

    Linux keeps the largest resident size a process had *before* it exec'd, and a fork
    of this process (whose arrays may hold gigabytes) would report this process's size:
    the command is forked from a small launcher interpreter instead, which times it and
    reaps it by ``wait4``. The output goes through files (no pipe to fill)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".txt") as report:
        done = subprocess.run([sys.executable, "-c", _LAUNCHER, report.name, *cmd],
                              stdout=out, stderr=err, text=True, env=env)
        seconds, peak_kib = report.read().split()
        out.seek(0)
        err.seek(0)
        return Process(done.returncode, out.read(), err.read(), float(seconds),
                       int(peak_kib) * 1024)


def _env() -> dict[str, str]:
    """The child processes' environment: this checkout's webrank first."""
    src = str(Path(__file__).resolve().parents[3])
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _timing(values: list[float]) -> dict[str, Any]:
    v = [max(x, 1e-9) for x in values]
    return {"median": float(np.median(v)), "min": min(v), "max": max(v), "repeat": len(v)}


def phases(path: str, fmt: str, device: str, folder: str) -> None:
    """In a fresh process: time each phase of ``rank PATH -o`` and its floor; print one
    JSON line of seconds."""
    t0 = time.perf_counter()
    import webrank
    import webrank.cli  # (what a `webrank rank` process imports first)
    from webrank.backends import start_gpu_warmup

    times: dict[str, float] = {"import": time.perf_counter() - t0}
    t = time.perf_counter()
    with open(path, "rb") as f:  # the page-cache floor (the file was read just before)
        while f.read(1 << 24):
            pass
    times["read_bytes"] = time.perf_counter() - t
    floor = parse_floor(path, fmt)
    if floor is not None:
        times["parse_floor"] = floor
    t = time.perf_counter()
    if device == "gpu":
        start_gpu_warmup()
    g = webrank.load(path, device=device)  # (a run on the GPU builds its graph there)
    times["load"] = time.perf_counter() - t
    t = time.perf_counter()
    r = webrank.pagerank(g, tol=TOL, device=device, raise_on_nonconvergence=False)
    total = time.perf_counter() - t
    times["setup"], times["solve"] = r.setup_time, r.elapsed
    times["copy_back"] = max(total - r.setup_time - r.elapsed, 0.0)
    for key, name in (("write_parquet", "s.parquet"), ("write_csv", "s.csv")):
        t = time.perf_counter()
        r.save(os.path.join(folder, name))
        times[key] = time.perf_counter() - t
    t = time.perf_counter()
    with open(os.path.join(folder, "s.bin"), "wb") as f:
        f.write(r.scores.tobytes())
        f.write(np.asarray(r.labels).tobytes())
    times["write_bytes"] = time.perf_counter() - t
    times["write_floor"] = parquet_write_floor(np.asarray(r.labels), r.scores,
                                               os.path.join(folder, "floor.parquet"))
    print(json.dumps(times))


def parquet_write_floor(nodes: np.ndarray, scores: np.ndarray, path: str) -> float:
    """Seconds of ``pyarrow.parquet.write_table`` of the same two columns with pyarrow's
    defaults: what writing the scores is measured against."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = time.perf_counter()
    pq.write_table(pa.table({"node": nodes, "score": scores}), path)
    return time.perf_counter() - t


def parse_floor(path: str, fmt: str, labels: str = "int") -> float | None:
    """Seconds of pyarrow's parse of the file on all cores (``pyarrow.csv.read_csv`` of a
    text edge list, its leading comments skipped by row count; ``read_table`` of
    Parquet), the floor a load is measured against; None for other formats."""
    import pyarrow as pa

    t = time.perf_counter()
    if fmt in ("txt", "txt.gz"):
        import pyarrow.csv as pacsv

        from webrank.files.sources import open_binary

        skip = 0
        with open_binary(path) as f:
            for line in f:
                if not line.startswith((b"#", b"%")):
                    break
                skip += 1
        typ = pa.int64() if labels == "int" else pa.string()
        pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=["s", "d"],
                                                            skip_rows=skip),
                       parse_options=pacsv.ParseOptions(delimiter="\t"),
                       convert_options=pacsv.ConvertOptions(
                           column_types={"s": typ, "d": typ}))
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        pq.read_table(path)
    else:
        return None
    return time.perf_counter() - t


def _report(ctx: BenchContext, rows: list[dict[str, Any]]) -> None:
    rows = [r for r in rows if "whole" in r]
    if not rows:
        return
    columns = ["graph", "format", "device", "edges", "whole", *PHASES, *FLOORS]
    ctx.table("Whole process and its phases (s, median of fresh processes)", columns,
              [[r["graph"], r["format"], r["device"], f"{r['edges']:,}" if r["edges"] else "",
                *(f"{r[k]:.3f}" if k in r else "-" for k in columns[4:])] for r in rows])
    ctx.table("Outside the solve, load and write against their floors, host memory", [
        "graph", "format", "device", "whole / solve", "outside solve (s)",
        "load / parse floor", "Parquet write / pyarrow's", "peak resident (GB)",
        "beyond the file, a link (bytes)"],
        [[r["graph"], r["format"], r["device"], f"{r['whole'] / r['solve']:.1f}",
          f"{r['whole'] - r['solve']:.3f}",
          f"{r['load'] / r['parse_floor']:.2f}" if "parse_floor" in r else "-",
          f"{r['write_parquet'] / r['write_floor']:.2f}" if "write_floor" in r else "-",
          f"{r['peak_rss'] / 1e9:.2f}",
          f"{r['beyond_file']:.1f}" if r["beyond_file"] is not None else "-"]
         for r in rows])

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        labels = [f"{r['graph']} {r['format']} {r['device']}" for r in rows]
        left = np.zeros(len(rows))
        for phase in PHASES:
            widths = np.array([r.get(phase, 0.0) for r in rows])
            ax.barh(labels, widths, left=left, label=phase)
            left += widths
        ax.set_xlabel("seconds (fresh process, median)")
        ax.legend(fontsize=7)
        ax.invert_yaxis()

    ctx.plot("e2e_phases.png", draw, size=(8.0, 0.35 * len(rows) + 2.0))
