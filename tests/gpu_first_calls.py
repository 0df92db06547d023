"""First calls of the public GPU entry points in a fresh process: the kernels compiled on
the way (CuPy's own and any of webrank's not found prebuilt) and the seconds of the first
and second call.

    python tests/gpu_first_calls.py GRAPH_FILE ENTRY [ENTRY ...]    (one JSON line each)

Each ENTRY runs in a process of its own whose CuPy kernel cache is a new, empty folder, so
every kernel the call needs and does not load from a file is compiled by NVRTC: a hook on
CuPy's NVRTC compile (where it goes on a cache miss) records the
kernels' names and the webrank lines that asked for them. The graph is loaded onto the
GPU before the clock starts (which also makes the CUDA context); ``first_s`` and
``second_s`` time the entry's call twice. ``tests/test_gpu_first_call.py`` asserts that
nothing is compiled; the device scripts report the seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


# Each entry prepares its call (untimed: a previous result, another graph) and returns it.
def _engine(engine: str, dtype: str) -> Any:
    def prepare(w: Any, g: Any) -> Any:
        graph = g.to_host() if engine == "stream" else g  # it streams from host memory
        return lambda: w.pagerank(graph, device="gpu", engine=engine, dtype=dtype, tol=1e-10)

    return prepare


def _method(method: str) -> Any:
    return lambda w, g: lambda: w.pagerank(g, device="gpu", method=method, tol=1e-10)


def _personalized(w: Any, g: Any) -> Any:
    ids = list(range(6)) if g.labels is None else list(g.labels[:6])
    seeds = [ids[:1], ids[1:3], ids[3:]]
    return lambda: w.personalized_pagerank(g, seeds, device="gpu", tol=1e-10)


def _vectors(w: Any, g: Any) -> Any:
    import numpy as np

    rng = np.random.default_rng(1)
    pers, dang = rng.random(g.n), rng.random(g.n)
    return lambda: w.pagerank(g, device="gpu", tol=1e-10, criterion="l2",
                              personalization=pers, dangling=dang)


def _linf(w: Any, g: Any) -> Any:
    return lambda: w.pagerank(g, device="gpu", tol=1e-10, criterion="linf", dtype="float32")


def _weighted(w: Any, g: Any) -> Any:
    import numpy as np

    src, dst, _ = g.to_host().edges()
    weights = np.random.default_rng(2).random(src.size) + 0.5
    graph = w.Graph.from_edges(src, dst, weights)
    return lambda: w.pagerank(graph, device="gpu", tol=1e-10)


def _update(w: Any, g: Any) -> Any:
    import numpy as np

    previous = w.pagerank(g, device="gpu", tol=1e-10)
    rng = np.random.default_rng(3)
    added = (rng.integers(0, g.n, 50), rng.integers(0, g.n, 50))
    return lambda: w.update(previous, added_edges=added, tol=1e-10, device="gpu")


def _metrics(w: Any, g: Any) -> Any:
    def call() -> Any:
        r = w.pagerank(g, device="gpu", tol=1e-10)
        r.top(10)
        return w.compare(r.scores, r.scores)

    return call


def _certified(w: Any, g: Any) -> Any:
    def call() -> Any:
        r = w.pagerank(g, device="gpu", tol=1e-10)
        return r.error_bound, r.certified_top(10)

    return call


def _networkx(w: Any, g: Any) -> Any:
    import networkx as nx

    if "webrank" not in nx.config.backends:
        raise LookupError("the webrank backend is not installed (an entry point)")
    src, dst, _ = g.to_host().edges()
    keep = slice(0, min(src.size, 20000))
    graph = nx.DiGraph()
    graph.add_edges_from(zip(src[keep].tolist(), dst[keep].tolist(), strict=True))
    nx.config.backends.webrank.device = "gpu"
    nx.config.warnings_to_ignore.add("cache")
    return lambda: nx.pagerank(graph, backend="webrank")


#: entry name -> its preparation (webrank module, graph on the GPU) -> the call
ENTRIES: dict[str, Any] = {
    **{f"engine-{e}-{d}": _engine(e, d)
       for e in ("pull", "blocked", "persistent", "stream") for d in ("float32", "float64")},
    **{f"method-{m}": _method(m)
       for m in ("auto", "aitken", "quadratic", "gmres", "bicgstab", "adaptive", "fixed",
                 "hybrid")},
    "personalized": _personalized,
    "vectors": _vectors,
    "linf-float32": _linf,
    "weighted": _weighted,
    "update": _update,
    "metrics": _metrics,
    "certified": _certified,
    "networkx": _networkx,
}

#: the kind of call a whole CLI process makes: ``webrank rank FILE --device gpu -o ...``
CLI = "cli-rank"
CHILD = "WEBRANK_FIRST_CALL_CHILD"  # set in the process that runs one entry
PROFILE = "WEBRANK_FIRST_CALL_PROFILE"  # set: profile each entry's first call


def _hook() -> list[dict[str, Any]]:
    """Record every NVRTC compile CuPy makes from now on (kernel names, webrank lines)."""
    import re
    import traceback

    from cupy.cuda import compiler

    made: list[dict[str, Any]] = []
    # CuPy 14 compiles through the private function; earlier versions through the public
    name = ("_compile_using_nvrtc_no_warning"
            if hasattr(compiler, "_compile_using_nvrtc_no_warning") else "compile_using_nvrtc")
    real = getattr(compiler, name)

    def recording(source: str, *args: Any, **kwargs: Any) -> Any:
        names = re.findall(r"__global__\s+(?:__launch_bounds__\([^)]*\)\s*)?void\s+(\w+)",
                           source)
        sites = [f"{Path(f.filename).name}:{f.lineno} {f.name}"
                 for f in traceback.extract_stack()[:-1] if "webrank" in f.filename]
        made.append({"kernels": sorted(set(names))[:4], "at": sites[-4:]})
        return real(source, *args, **kwargs)

    setattr(compiler, name, recording)
    return made


def child(path: str, entry: str) -> dict[str, Any]:
    """Run ``entry`` twice in this process (a fresh one) and report."""
    made = _hook()
    import webrank

    t0 = time.perf_counter()
    if entry == CLI:
        from webrank.cli import main

        out = Path(tempfile.mkdtemp()) / "ranks.parquet"
        times = []
        for _ in range(2):
            sys.argv = ["webrank", "rank", path, "--device", "gpu", "-o", str(out),
                        "--tol", "1e-10"]
            t = time.perf_counter()
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    main()
            except SystemExit as e:
                if e.code:
                    raise
            times.append(time.perf_counter() - t)
        return {"entry": entry, "load_s": 0.0, "first_s": times[0], "second_s": times[1],
                "compiled": made, "imported": _heavy_imports()}
    g = webrank.load(path, device="gpu")
    load = time.perf_counter() - t0
    call = ENTRIES[entry](webrank, g)
    before = len(made)
    times, profile = [], None
    for run in range(2):
        profiler = None
        if run == 0 and os.environ.get(PROFILE):
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
        if profiler is not None:
            profiler.disable()
            profile = _top_functions(profiler)
    return {"entry": entry, "load_s": load, "first_s": times[0], "second_s": times[1],
            "compiled_at_load": made[:before], "compiled": made[before:],
            "profile": profile, "imported": _heavy_imports()}


def _heavy_imports() -> list[str]:
    """The large optional modules the process imported (SciPy, CuPy's SciPy layer)."""
    return [m for m in ("scipy", "cupyx.scipy") if m in sys.modules]


def _top_functions(profiler: Any, count: int = 14) -> list[str]:
    """The functions of most cumulative time in a profile, one line each."""
    import pstats

    stats = pstats.Stats(profiler)
    rows = sorted(((k, v) for k, v in stats.stats.items() if k[0] != __file__),
                  key=lambda kv: -kv[1][3])[:count]
    return [f"{v[3]:.3f}s {Path(k[0]).name}:{k[1]} {k[2]}" for k, v in rows]


def run(path: str, entry: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``entry`` in a new process with an empty CuPy kernel cache: its report."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**(env or os.environ), "CUPY_CACHE_DIR": cache, CHILD: "1"}
        out = subprocess.run([sys.executable, str(Path(__file__)), path, entry],
                             capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{entry} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    if os.environ.get(CHILD) == "1":
        print(json.dumps(child(sys.argv[1], sys.argv[2])))
    else:  # the driver: each entry in its own fresh process
        for name in sys.argv[2:] or [CLI, *ENTRIES]:
            try:
                print(json.dumps(run(sys.argv[1], name)), flush=True)
            except RuntimeError as e:
                print(json.dumps({"entry": name, "error": str(e)}), flush=True)
