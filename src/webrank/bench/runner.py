"""The benchmark runner behind ``webrank bench``: timing, results schema, report.

A suite (see :mod:`webrank.bench.suites`) receives a :class:`BenchContext` and records
through it:

* ``ctx.time(fn, device=...)`` runs ``fn`` once untimed (the warm-up, whose return value
  is handed back, so metrics such as iterations come from it), then times ``repeats``
  more calls with :func:`webrank.bench.env.median_time`, a device synchronise before
  each clock read on the GPU;
* ``ctx.record(name, timing, params=..., metrics=...)`` adds one measurement;
* ``ctx.table``, ``ctx.plot``, ``ctx.finding``, ``ctx.note``, ``ctx.skip`` add report
  content.

:func:`run_suite` then writes ``results.json`` (schema below), ``report.md`` and the
plots into the output folder.

``results.json``::

    {"schema": "webrank-bench/1", "suite": str, "title": str, "command": str,
     "quick": bool, "repeats": int, "devices": [str], "environment": {...},
     "measurements": [{"name": str, "unit": "s", "median": float, "min": float,
                       "max": float, "repeats": int, "device": str,
                       "params": {...}, "metrics": {...}}],
     "tables": [{"title": str, "columns": [str], "rows": [[str]]}],
     "plots": [file names], "findings": [str], "notes": [str],
     "skipped": [{"what": str, "why": str}]}

Times are seconds of wall clock; ``median``/``min``/``max`` are over the timed repeats,
the warm-up excluded.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from webrank.bench.env import environment, median_time, write_json

__all__ = ["SCHEMA", "BenchContext", "run_suite"]

SCHEMA = "webrank-bench/1"

#: A warm-up run longer than this is timed only once more (the rest would cost minutes).
LONG_RUN_S = 5.0
#: A warm-up run longer than this is itself the measurement (one cold run, said so).
VERY_LONG_RUN_S = 30.0


def _jsonable(value: Any) -> Any:
    """NumPy scalars and arrays as plain Python; non-finite floats refused."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"non-finite number {v} in a benchmark result")
        return v
    return value


@dataclass
class BenchContext:
    """What a suite measures with and records into (one per ``webrank bench`` run).

    Attributes
    ----------
    suite : str
        Suite name (``"dense"``...).
    devices : tuple of str
        Devices to measure on: ``("cpu",)``, ``("gpu",)`` or ``("cpu", "gpu")``; the GPU
        is listed only when usable (otherwise a skip is recorded).
    quick : bool
        CI-sized run: suites shrink their graphs and grids so the whole run takes well
        under a minute.
    repeats : int
        Timed calls per measurement (after one untimed warm-up).
    data_dir : Path or None
        Folder with the real datasets (``NAME.txt.gz``); the bundled web-NotreDame is
        always found.
    out_dir : Path
        Where results, report and plots are written.
    """

    suite: str
    devices: tuple[str, ...]
    quick: bool
    repeats: int
    data_dir: Path | None
    out_dir: Path
    measurements: list[dict[str, Any]] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    # -- devices ----------------------------------------------------------------------
    def has(self, device: str) -> bool:
        """Whether this run measures on ``device`` ("cpu" or "gpu")."""
        return device in self.devices

    @staticmethod
    def sync(device: str) -> Callable[[], None] | None:
        """A function waiting for queued GPU work (None on the CPU)."""
        if device != "gpu":
            return None
        import cupy

        return cupy.cuda.get_current_stream().synchronize

    # -- timing ---------------------------------------------------------------------------
    def time(self, fn: Callable[[], Any], *, device: str = "cpu",
             repeats: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Run ``fn`` once untimed, then time it; return (warm-up result, timing).

        The timing dict has ``median``, ``min``, ``max`` (seconds) and ``repeats``.
        A warm-up longer than :data:`LONG_RUN_S` is followed by one timed call only, and
        one longer than :data:`VERY_LONG_RUN_S` is the measurement itself (``"cold":
        True``): minutes per measurement would make the full suites unrunnable.
        ``repeats=0``: the first call is the measurement (for runs whose result is the
        point and whose time is only reported).
        """
        reps = self.repeats if repeats is None else int(repeats)
        sync = self.sync(device)
        if sync:
            sync()
        t0 = time.perf_counter()
        result = fn()
        if sync:
            sync()
        first = time.perf_counter() - t0
        if first > VERY_LONG_RUN_S or reps == 0:
            return result, {"median": first, "min": first, "max": first, "repeat": 1,
                            "cold": True}
        if first > LONG_RUN_S:
            reps = 1
        return result, median_time(fn, repeat=max(reps, 1), warmup=0, sync=sync)

    def attempt(self, what: str, fn: Callable[[], Any], *, device: str = "cpu",
                repeats: int | None = None) -> tuple[Any, dict[str, Any]] | None:
        """:meth:`time`, or None with a skip note when ``fn`` refuses the job.

        For solvers that may reject a device or an option (a ValueError, a
        :class:`~webrank.errors.WebrankError` or NotImplementedError saying why): the
        suite goes on and the report lists the refusal.
        """
        from webrank.errors import ConvergenceError, WebrankError

        try:
            return self.time(fn, device=device, repeats=repeats)
        except ConvergenceError:
            raise  # suites pass raise_on_nonconvergence=False; this is a bug
        except (ValueError, WebrankError, NotImplementedError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.skip(what, msg)
            return None

    def record(self, name: str, timing: dict[str, Any], *, device: str = "cpu",
               unit: str = "s", params: dict[str, Any] | None = None,
               metrics: dict[str, Any] | None = None) -> dict[str, Any]:
        """Add one measurement (``timing`` from :meth:`time`) and return it."""
        stats = {k: float(timing[k]) for k in ("median", "min", "max")}
        if not all(math.isfinite(v) and v > 0 for v in stats.values()):
            raise ValueError(f"measurement {name!r}: times must be finite and positive, "
                             f"got {stats}")
        entry = {"name": name, "unit": unit, **stats, "repeats": int(timing["repeat"]),
                 "device": device, "params": _jsonable(params or {}),
                 "metrics": _jsonable(metrics or {})}
        if timing.get("cold"):
            entry["cold"] = True
        self.measurements.append(entry)
        return entry

    # -- report content -------------------------------------------------------------------
    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
              caption: str | None = None) -> None:
        """A table for the report and the printed summary (cells are formatted as str)."""
        self.tables.append({"title": title, "columns": [str(c) for c in columns],
                            "rows": [[str(c) for c in row] for row in rows],
                            "caption": caption or ""})

    def plot(self, filename: str, draw: Callable[[Any], None], *, size=(6.4, 4.0)) -> None:
        """Draw a figure with ``draw(fig)`` and save it as ``out_dir/filename`` (PNG).

        Skipped with a note when matplotlib is not installed.
        """
        from webrank.bench import plots

        if not plots.available():
            self.skip(f"plot {filename}", "matplotlib is not installed (pip install "
                      "'webrank[bench]')")
            return
        plots.save(self.out_dir / filename, draw, size=size)
        self.plots.append(filename)

    def finding(self, text: str) -> None:
        """A sentence of the comparison with the paper (markdown)."""
        self.findings.append(text)

    def note(self, text: str) -> None:
        """A remark on how the run was done (markdown); repeats are dropped."""
        if text not in self.notes:
            self.notes.append(text)

    def skip(self, what: str, why: str) -> None:
        """Something not measured, and why (shown in the report)."""
        if not any(s["what"] == what and s["why"] == why for s in self.skipped):
            self.skipped.append({"what": what, "why": why})

    # -- helpers for suites ---------------------------------------------------------------
    def optional(self, module: str, what: str | None = None) -> Any:
        """Import an optional package, or record a skip and return None."""
        from importlib import import_module

        try:
            return import_module(module)
        except ImportError:
            self.skip(what or module, f"{module.split('.')[0]} is not installed")
            return None

    def methods(self) -> list[str]:
        """Every registered solver name (the registry is filled on first use)."""
        from webrank.solvers import SOLVERS, get_solver

        get_solver("power")
        return sorted(SOLVERS)

    def method_available(self, name: str, what: str) -> bool:
        """Whether solver ``name`` is registered; a skip note for ``what`` otherwise."""
        if name in self.methods():
            return True
        self.skip(what, f"method {name!r} is not registered in this webrank "
                        "(the suite measures it once it is)")
        return False

    def reference(self, g: Any, alpha: float) -> np.ndarray:
        """Float64 reference scores of ``g`` (uniform teleport), for error measures.

        webrank's power method in float64 to an L1 change of 1e-14. Its fused step
        computes nodes of equal true score identically, so exact ties stay ties (a dense
        LU solve would split them by rounding, and Sgherzi's wrong-position count would
        charge every solver for that). If rounding keeps the change above 1e-14 (it
        floors near there on some graphs), the last iterate is used once the change is
        below 1e-12, with a note.
        """
        import webrank

        r = webrank.pagerank(g, alpha=alpha, tol=1e-14, max_iter=5000, device="cpu",
                             raise_on_nonconvergence=False)
        self.note("Errors are measured against webrank's float64 power method run to an "
                  "L1 change of 1e-14. Sgherzi's wrong-position count orders exact ties "
                  "by node index: web graphs have many nodes of equal true score (e.g. no "
                  "in-links), so a solver whose rounding splits such ties is charged for "
                  "every one of them (Kendall tau, which treats ties apart, and the top-100 "
                  "overlap say more there).")
        if not r.converged:
            if r.residual > 1e-12:
                raise RuntimeError(f"reference for {g.name} at alpha {alpha} stalled at an "
                                   f"L1 change of {r.residual:.1e}")
            self.note(f"Reference for {g.name or 'a graph'} at alpha {alpha}: the L1 change "
                      f"floors at {r.residual:.1e} (rounding), above 1e-14; its last "
                      "iterate is used.")
        return r.scores

    def dataset(self, name: str) -> Path | None:
        """Path of real dataset ``name`` (``NAME.txt.gz``), or None with a skip note.

        Looks in ``data_dir`` (``--data`` / ``WEBRANK_DATASETS``), then the bundled
        graphs (web-NotreDame).
        """
        if self.data_dir is not None:
            p = self.data_dir / f"{name}.txt.gz"
            if p.exists():
                return p
        from webrank.datasets import BUNDLED, path

        if name in BUNDLED:
            return path(name)
        self.skip(f"dataset {name}", f"{name}.txt.gz not found (give --data DIR or set "
                                     "WEBRANK_DATASETS)")
        return None


def _devices(device: str, ctx_skips: list[dict[str, str]]) -> tuple[str, ...]:
    from webrank.backends import gpu_available

    if device not in ("cpu", "gpu", "both"):
        raise ValueError(f"device must be cpu, gpu or both, not {device!r}")
    if device == "cpu":
        return ("cpu",)
    if gpu_available():
        return ("gpu",) if device == "gpu" else ("cpu", "gpu")
    if device == "gpu":
        from webrank.errors import DeviceUnavailableError

        raise DeviceUnavailableError("--device gpu: no usable GPU (CuPy + CUDA device)")
    ctx_skips.append({"what": "GPU measurements", "why": "no usable GPU (CuPy + CUDA "
                                                          "device) on this machine"})
    return ("cpu",)


def run_suite(name: str, *, device: str = "both", out_dir: str | Path | None = None,
              quick: bool = False, repeats: int | None = None,
              data_dir: str | Path | None = None, console: Any = None) -> dict[str, Any]:
    """Run benchmark suite ``name`` and write its results, report and plots.

    Parameters
    ----------
    name : str
        A key of :data:`webrank.bench.suites.SUITES`.
    device : {"cpu", "gpu", "both"}, default "both"
        Where to measure; "both" without a usable GPU measures the CPU and says so,
        "gpu" without one raises :class:`~webrank.errors.DeviceUnavailableError`.
    out_dir : path, default ``bench-results/NAME``
    quick : bool, default False
        CI-sized run (well under a minute per suite).
    repeats : int, optional
        Timed calls per measurement after the warm-up; default 5 (2 with ``quick``).
    data_dir : path, optional
        Folder of real datasets; default ``$WEBRANK_DATASETS``.
    console : rich.console.Console, optional
        Where the summary tables are printed (None: not printed).

    Returns
    -------
    dict
        The document written to ``results.json``.
    """
    from webrank.bench.suites import load_suite

    suite = load_suite(name)  # ValueError naming the suites, before any work
    if repeats is None:
        repeats = 2 if quick else 5
    if isinstance(repeats, bool) or int(repeats) < 1:
        raise ValueError(f"repeats must be a positive integer, not {repeats!r}")
    if data_dir is None and os.environ.get("WEBRANK_DATASETS"):
        data_dir = os.environ["WEBRANK_DATASETS"]
    if data_dir is not None and not Path(data_dir).is_dir():
        raise ValueError(f"--data {data_dir}: not a folder")
    out = Path(out_dir) if out_dir is not None else Path("bench-results") / name
    skips: list[dict[str, str]] = []
    devices = _devices(device, skips)
    out.mkdir(parents=True, exist_ok=True)
    ctx = BenchContext(suite=name, devices=devices, quick=bool(quick), repeats=int(repeats),
                       data_dir=Path(data_dir) if data_dir is not None else None,
                       out_dir=out, skipped=skips)
    env = environment()
    t0 = time.perf_counter()
    suite.run(ctx)
    doc = {
        "schema": SCHEMA, "suite": name, "title": suite.TITLE,
        "command": _command_line(name, device, out, quick, repeats, data_dir),
        "quick": ctx.quick, "repeats": ctx.repeats, "devices": list(devices),
        "wall_s": time.perf_counter() - t0, "environment": env,
        "measurements": ctx.measurements, "tables": ctx.tables, "plots": ctx.plots,
        "findings": ctx.findings, "notes": ctx.notes, "skipped": ctx.skipped,
    }
    doc = _jsonable(doc)
    write_json(doc, out / "results.json")
    (out / "report.md").write_text(render_report(doc, suite.BACKGROUND), encoding="utf-8")
    if console is not None:
        print_summary(doc, console)
    return doc


def _command_line(name, device, out, quick, repeats, data_dir) -> str:
    parts = ["webrank", "bench", name, "--device", device, "--out", str(out)]
    if quick:
        parts.append("--quick")
    parts += ["--repeats", str(repeats)]
    if data_dir is not None:
        parts += ["--data", str(data_dir)]
    return shlex.join(parts)


def _md_table(table: dict[str, Any]) -> str:
    head = "| " + " | ".join(table["columns"]) + " |"
    rule = "|" + "---|" * len(table["columns"])
    rows = ["| " + " | ".join(r) + " |" for r in table["rows"]]
    return "\n".join([head, rule, *rows])


def render_report(doc: dict[str, Any], background: str) -> str:
    """``report.md``: machine, command, the paper's finding, tables, plots, comparison."""
    env = doc["environment"]
    lines = [f"# webrank bench: {doc['suite']} — {doc['title']}", ""]
    lines += [f"Regenerate: `{doc['command']}`", ""]
    gpu = env.get("gpu") or "none"
    lines += [f"Machine: {env.get('cpu')} ({env.get('cpu_count')} logical CPUs), GPU: {gpu}; "
              f"{env.get('platform')}. webrank {env.get('webrank')} at commit "
              f"{env.get('commit')}, Python {env.get('python')}, NumPy {env.get('numpy')}, "
              f"SciPy {env.get('scipy')}" + (f", CuPy {env['cupy']}" if env.get("cupy")
                                             else "") + f"; {env.get('date')}.", ""]
    mode = "quick (CI-sized)" if doc["quick"] else "full"
    lines += [f"Run: {mode}, devices {', '.join(doc['devices'])}; times are the median "
              f"(min–max) of {doc['repeats']} timed calls after one untimed warm-up, "
              "wall clock, GPU work synchronised before each clock read. "
              f"Whole run: {doc['wall_s']:.0f} s.", ""]
    load, cpus = env.get("load_average_1min") or 0.0, env.get("cpu_count") or 1
    if load > 0.5 * cpus:
        lines += [f"**Busy machine**: the load average was {load:.1f} on {cpus} logical "
                  "CPUs when this run started. Multi-threaded code (webrank's compiled "
                  "kernels start a parallel region every step) then waits for cores and is "
                  "slowed most, often by milliseconds per step; single-threaded code less. "
                  "Compare the minimum times in results.json, or rerun on an idle machine.",
                  ""]
    lines += ["## Background", "", background.strip(), ""]
    lines += ["## Results", ""]
    for t in doc["tables"]:
        lines += [f"### {t['title']}", "", _md_table(t), ""]
        if t.get("caption"):
            lines += [t["caption"], ""]
    for p in doc["plots"]:
        lines += [f"![{p}]({p})", ""]
    if doc["findings"]:
        lines += ["## Comparison with the paper", ""]
        lines += [f"- {f}" for f in doc["findings"]] + [""]
    if doc["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    if doc["skipped"]:
        lines += ["## Not measured", ""]
        lines += [f"- {s['what']}: {s['why']}" for s in doc["skipped"]] + [""]
    return "\n".join(lines)


def print_summary(doc: dict[str, Any], console: Any) -> None:
    """Print the suite's tables (rich) and where the files went."""
    from rich.table import Table

    for t in doc["tables"]:
        table = Table(title=t["title"])
        for c in t["columns"]:
            table.add_column(c, justify="right")
        for row in t["rows"]:
            table.add_row(*row)
        console.print(table)
    for s in doc["skipped"]:
        console.print(f"[dim]not measured: {s['what']}: {s['why']}[/dim]")


def fmt_time(seconds: float) -> str:
    """A time in the unit that keeps 3 significant digits readable (µs, ms, s)."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def fmt_timing(m: dict[str, Any]) -> str:
    """``median (min–max)`` of a measurement."""
    if m["repeats"] <= 1:
        return fmt_time(m["median"]) + (" (1 cold run)" if m.get("cold") else " (1 run)")
    return f"{fmt_time(m['median'])} ({fmt_time(m['min'])}–{fmt_time(m['max'])})"


def stderr_progress(text: str) -> None:
    """One progress line on stderr (long suites say what they are doing)."""
    print(f"[bench] {text}", file=sys.stderr, flush=True)
