"""Benchmark suites for ``webrank bench SUITE``: one module each, registered here.

Adding a suite is one module plus one line in :data:`SUITES`. A suite module defines:

``TITLE`` : str
    One line saying what the suite measures (report heading).
``BACKGROUND`` : str
    Markdown quoting what the reproduced paper (or the reference) reported, briefly,
    with its numbers, or why the suite measures what it does: the report prints it
    above the results.
``run(ctx)`` : function
    Does the measuring, given a :class:`webrank.bench.runner.BenchContext`:

    * ``ctx.devices`` / ``ctx.has("gpu")``: where to measure (the GPU only when usable);
      ``ctx.quick``: keep the run CI-sized (well under a minute on 2 cores);
      ``ctx.repeats``: timed calls per measurement (``ctx.time`` applies it);
    * ``result, timing = ctx.time(fn, device=d)``: one untimed warm-up (its return value
      is ``result``), then the timed repeats, synchronised on the GPU;
    * ``ctx.record(name, timing, device=d, params={...}, metrics={...})``: one measurement
      (``params`` say what was run, ``metrics`` what came out: iterations, errors...);
    * ``ctx.table(title, columns, rows)``, ``ctx.plot("file.png", draw)`` (``draw(fig)``,
      see :mod:`webrank.bench.plots`), ``ctx.finding(text)`` (the comparison with
      ``BACKGROUND``), ``ctx.note(text)``;
    * never fail on a missing optional package or solver: ``ctx.optional("igraph")``,
      ``ctx.method_available("fixed", what)``, ``ctx.dataset("cnr-2000")`` return
      None/False and record a skip that the report lists.

The runner writes ``results.json``, ``report.md`` and the PNGs (see
:mod:`webrank.bench.runner` for the schema).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

__all__ = ["SUITES", "load_suite"]

#: suite name -> module defining TITLE, BACKGROUND and run(ctx) (one line per suite)
SUITES: dict[str, str] = {
    "dense": "webrank.bench.suites.dense",
    "approx": "webrank.bench.suites.approx",
    "extrapolation": "webrank.bench.suites.extrapolation",
    "iterations": "webrank.bench.suites.iterations",
    "baselines": "webrank.bench.suites.baselines",
    "hybrid": "webrank.bench.suites.hybrid",
    "gpu": "webrank.bench.suites.gpu",
    "e2e": "webrank.bench.suites.e2e",
}


def load_suite(name: str) -> ModuleType:
    """The module of suite ``name``; ValueError listing the suites otherwise."""
    try:
        module = SUITES[name]
    except KeyError:
        raise ValueError(f"unknown benchmark suite {name!r}; choose one of: "
                         f"{', '.join(SUITES)}") from None
    return import_module(module)
