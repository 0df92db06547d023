"""First calls: what a fresh process pays before its first answer, and the small-graph path.

    python benchmarks/first_call/first_call.py [--repeat N] [--parts rank nx crossover compile]
                                    [--out FILE]

Parts (each runs fresh processes with this interpreter, so it measures the install it
runs in; the machine is shared, so every part repeats and quotes medians):

``rank``
    Whole-process ``webrank rank`` of a 3-node edge list, ``--repeat`` times after one
    untimed run (which writes the ``.pyc`` files if they are missing): median, min and
    max wall seconds; the same without pandas (which ``pip install .`` does not install,
    and which pyarrow imports where it is installed); ``webrank --help``; and processes
    that only import what such a run imports (numpy, scipy.sparse, pyarrow, ...).
``nx``
    ``nx.pagerank`` of a 200-node directed graph in fresh processes, with NetworkX's own
    code and with ``backend="webrank"``, alternating, ``--repeat`` times each: the
    seconds of the first call (import of the backend, conversion and solve included)
    and of the whole process; the ratio of the medians.
``crossover``
    Warm ``webrank.pagerank(method="power", device="cpu", tol=1e-10)`` on R-MAT and
    Erdős–Rényi graphs of growing size, through the serial SciPy step and through the
    parallel Numba step (forced with ``webrank.kernels.cpu.SMALL_GRAPH_EDGES``),
    interleaved: median seconds per solve. The crossover is the edge count from which
    Numba is faster; :data:`webrank.kernels.cpu.SMALL_GRAPH_EDGES` comes from it.
``first-solve``
    The first ``webrank.pagerank`` call of a fresh process (the graph loaded before the
    clock starts) through each step, at tol 1e-6 and 1e-10: the Numba step's includes
    importing Numba and loading its cached kernel.
``compile``
    Whole-process ``webrank rank`` of the bundled web-NotreDame (above the threshold)
    with an empty Numba cache (``NUMBA_CACHE_DIR`` pointing at a new folder: what the
    first run after an install pays) and again with the cache it wrote.

Writes JSON (machine, CPU, commit, date, versions, load averages) to ``--out`` (default
``benchmarks/results/first_call/cpu_2core/first_call.json``) and prints a table.
``--before SRC`` runs ``rank`` and ``nx`` with an older ``src`` tree too, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WEBRANK = str(Path(sys.executable).with_name("webrank"))  # the console script of this env

# the fresh-process NetworkX run: argv[1] is "networkx" or "webrank"
NX_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import networkx as nx
G = nx.gnp_random_graph(200, 0.05, seed=1, directed=True)
kw = {} if sys.argv[1] == "networkx" else {"backend": "webrank"}
t1 = time.perf_counter()
pr = nx.pagerank(G, **kw)
t2 = time.perf_counter()
print(json.dumps({"first_call_s": t2 - t1, "import_and_build_s": t1 - t0,
                  "edges": G.number_of_edges(), "sum": sum(pr.values())}))
"""


def _stats(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times),
            "repeat": len(times)}


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of one process, and its stdout; raises if it fails."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - t0, out.stdout


# `webrank rank` as an install without pandas runs it (pandas is no dependency of webrank,
# only of its test and bench extras; where it is installed, pyarrow imports it, ~0.3 s,
# when the edge-list reader converts its first column)
NO_PANDAS = ("import sys; sys.modules['pandas'] = None; from webrank.cli import main; "
             "sys.argv[0] = 'webrank'; main()")


IMPORTS = {
    "nothing": "pass",
    "numpy": "import numpy",
    "numpy+scipy.sparse": "import numpy, scipy.sparse",
    "numpy+pyarrow.csv": "import numpy, pyarrow.csv, pyarrow.compute",
    "numpy+pandas": "import numpy, pandas",
    "numpy+numba": "import numpy, numba",
    "click+rich": "import click, rich.console, rich.table",
}


def _before_env(before: str | None) -> dict[str, str] | None:
    """The environment that runs an older webrank: its ``src`` folder first on the path."""
    return None if before is None else {**os.environ, "PYTHONPATH": before}


def part_rank(repeat: int, tmp: Path, before: str | None = None) -> dict[str, Any]:
    """Whole-process ``webrank rank`` of a 3-node file (as installed, and as without
    pandas; with ``before``, also with that older ``src`` tree) and ``webrank --help``."""
    tiny = tmp / "tiny.txt"
    tiny.write_text("0 1\n1 2\n2 0\n")
    ranks = {"rank": [WEBRANK, "rank", str(tiny)],
             "rank_without_pandas": [sys.executable, "-c", NO_PANDAS, "rank", str(tiny)]}
    cmds = {name: (cmd, None) for name, cmd in ranks.items()}
    if before is not None:
        cmds.update({f"before: {name}": (cmd, _before_env(before))
                     for name, cmd in ranks.items()})
    cmds["help"] = ([WEBRANK, "--help"], None)
    # where the time goes: fresh processes importing what a run imports, step by step
    for name, code in IMPORTS.items():
        cmds[f"import {name}"] = ([sys.executable, "-c", code], None)
    doc: dict[str, Any] = {"file": "tiny.txt (3 nodes, 3 edges)", "before_src": before}
    first = {name: _timed(cmd, env)[0] for name, (cmd, env) in cmds.items()}
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, (cmd, env) in cmds.items():  # interleaved, so load hits all alike
            times[name].append(_timed(cmd, env)[0])
    for name in cmds:
        doc[name] = {"first_run_s": first[name], "seconds": _stats(times[name]),
                     "all_s": times[name]}
    return doc


def part_nx(repeat: int, before: str | None = None) -> dict[str, Any]:
    """Fresh-process ``nx.pagerank`` on 200 nodes, NetworkX's own code vs webrank's (and
    with ``before``, an older webrank's)."""
    runs: dict[str, list[dict[str, float]]] = {"networkx": [], "webrank": []}
    if before is not None:
        runs["before: webrank"] = []
    for _ in range(repeat):
        for which in runs:  # alternate, so a burst of load hits all alike
            env = _before_env(before) if which.startswith("before") else None
            wall, out = _timed([sys.executable, "-c", NX_CHILD, which.split()[-1]], env)
            runs[which].append({**json.loads(out), "process_s": wall})
    doc: dict[str, Any] = {"graph": "nx.gnp_random_graph(200, 0.05, seed=1, directed=True)",
                           "edges": runs["webrank"][0]["edges"], "before_src": before}
    for which, rows in runs.items():
        doc[which] = {"first_call_s": _stats([r["first_call_s"] for r in rows]),
                      "process_s": _stats([r["process_s"] for r in rows])}
        doc[f"ratio_first_call: {which}"] = (doc[which]["first_call_s"]["median"]
                                             / doc["networkx"]["first_call_s"]["median"])
    doc["ratio_first_call"] = doc.pop("ratio_first_call: webrank")
    doc.pop("ratio_first_call: networkx")
    doc["ratio_process"] = (doc["webrank"]["process_s"]["median"]
                            / doc["networkx"]["process_s"]["median"])
    return doc


def _graphs(max_edges: int = 2_000_000) -> list[tuple[str, Any]]:
    """Graphs from ~500 to ~1.5M edges: the bundled web-NotreDame's induced subgraphs on
    its first 2**7 .. 2**18 node ids and the whole graph (real web structure, ~110 steps
    to tol 1e-10), and Erdős–Rényi graphs of average degree 8 (no structure, ~20 steps)."""
    import numpy as np

    import webrank
    from webrank.datasets import path
    from webrank.generate import generate
    from webrank.graph import Graph

    out = []
    web = webrank.load(path())
    src, dst, _ = web.edges()
    for k in [2**i for i in range(7, 19)] + [web.n]:
        keep = (src < k) & (dst < k)
        out.append((f"nd{k}", Graph.from_edges(src[keep], dst[keep], node_ids="range",
                                               num_nodes=k)))
    for n in (64, 256, 1024, 4096, 16384, 65536, 262144):
        s, d, n = generate("er", n, seed=1, avg_degree=8)
        out.append((f"er{n}", Graph.from_edges(s, d, node_ids="range", num_nodes=n)))
    return [(name, g) for name, g in out if g.num_edges <= max_edges and np.any(g.indptr)]


PATHS = {"scipy": 2**62, "numba": 0}  # SMALL_GRAPH_EDGES that forces each step


def part_crossover(repeat: int) -> dict[str, Any]:
    """Warm solve time of the SciPy step and of the Numba step over graph sizes (the two
    interleaved, run by run, so load from other work hits both alike)."""
    import numpy as np

    import webrank
    from webrank.kernels import cpu as kernels

    saved = kernels.SMALL_GRAPH_EDGES
    rows = []
    try:
        for name, g in _graphs():
            for dtype in ("float64", "float32"):
                def run(g=g, dtype=dtype):
                    return webrank.pagerank(g, tol=1e-10, device="cpu", method="power",
                                            dtype=dtype)

                times: dict[str, list[float]] = {path: [] for path in PATHS}
                steps = {}
                for path, threshold in PATHS.items():  # warm-up: JIT, caches
                    kernels.SMALL_GRAPH_EDGES = threshold
                    steps[path] = run().iterations
                for _ in range(repeat):
                    for path, threshold in PATHS.items():
                        kernels.SMALL_GRAPH_EDGES = threshold
                        t0 = time.perf_counter()
                        run()
                        times[path].append(time.perf_counter() - t0)
                row: dict[str, Any] = {"graph": name, "nodes": g.n, "edges": g.num_edges,
                                       "dtype": dtype}
                for path in PATHS:
                    row[path] = {**_stats(times[path]), "steps": steps[path],
                                 "per_step_median_s": _stats(times[path])["median"]
                                 / max(steps[path], 1)}
                # median: under the load of the moment; min: the runs nothing disturbed
                row["scipy_over_numba"] = row["scipy"]["median"] / row["numba"]["median"]
                row["scipy_over_numba_min"] = row["scipy"]["min"] / row["numba"]["min"]
                # the two are within noise of each other when they win runs about equally
                row["scipy_wins_runs"] = float(np.mean(np.array(times["scipy"])
                                                       < np.array(times["numba"])))
                rows.append(row)
                print(f"  {name:9} {g.num_edges:9,} edges {dtype}: {steps['numba']:3} steps;"
                      f" per step (median) scipy {row['scipy']['per_step_median_s'] * 1e6:7.1f}"
                      f" us, numba {row['numba']['per_step_median_s'] * 1e6:7.1f} us; "
                      f"scipy/numba median {row['scipy_over_numba']:5.2f}, min "
                      f"{row['scipy_over_numba_min']:5.2f}; scipy faster in "
                      f"{row['scipy_wins_runs']:.0%} of runs", flush=True)
    finally:
        kernels.SMALL_GRAPH_EDGES = saved
    return {"tol": 1e-10, "rows": rows, "crossover_edges": _crossover(rows),
            "threshold_in_code": saved}


def _crossover(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per dtype and measure (median: under the load of the moment; min: undisturbed):
    the largest edge count at which the SciPy step took at most the Numba step's time,
    and the smallest from which Numba was faster at every larger size (the threshold
    belongs between the two)."""
    out: dict[str, Any] = {}
    for dtype in ("float64", "float32"):
        sel = sorted((r for r in rows if r["dtype"] == dtype), key=lambda r: r["edges"])
        for measure, key in (("median", "scipy_over_numba"), ("min", "scipy_over_numba_min")):
            scipy_ok = [r["edges"] for r in sel if r[key] <= 1.0]
            numba_from = None
            for r in reversed(sel):
                if r[key] <= 1.0:
                    break
                numba_from = r["edges"]
            out[f"{dtype}_{measure}"] = {"largest_scipy_at_most_numba": max(scipy_ok,
                                                                            default=None),
                                         "numba_faster_from": numba_from}
    return out


FIRST_CALL_CHILD = """
import json, sys, time
import webrank
from webrank.kernels import cpu as kernels
g = webrank.load(sys.argv[1])
kernels.SMALL_GRAPH_EDGES = int(sys.argv[2])
t0 = time.perf_counter()
r = webrank.pagerank(g, tol=float(sys.argv[3]), device="cpu", method="power")
print(json.dumps({"first_call_s": time.perf_counter() - t0, "steps": r.iterations}))
"""


def part_first_solve(repeat: int, tmp: Path) -> dict[str, Any]:
    """The first ``pagerank`` call of a fresh process (graph already loaded), through each
    step: what the serial step saves where Numba must still be imported and its cached
    kernel loaded."""
    from webrank.io import save_graph

    rows = []
    keep = {"nd256", "nd1024", "nd4096", "nd16384", "nd65536", "nd262144", "nd325729"}
    for name, g in _graphs():
        if name not in keep:  # web-NotreDame's subgraphs on 4**k nodes and all of it
            continue
        path = tmp / f"{name}.npz"
        save_graph(g, str(path))
        for tol in ("1e-6", "1e-10"):
            times: dict[str, list[float]] = {p: [] for p in PATHS}
            for i in range(repeat + 1):
                for p, threshold in PATHS.items():
                    _, out = _timed([sys.executable, "-c", FIRST_CALL_CHILD, str(path),
                                     str(threshold), tol])
                    if i:  # the first run of each may write .pyc files or Numba's cache
                        times[p].append(json.loads(out)["first_call_s"])
            row = {"graph": name, "edges": g.num_edges, "tol": float(tol),
                   **{p: _stats(times[p]) for p in PATHS}}
            rows.append(row)
            print(f"  {name:9} {g.num_edges:9,} edges tol {tol}: first call scipy "
                  f"{row['scipy']['median']:.3f} s, numba {row['numba']['median']:.3f} s",
                  flush=True)
    return {"rows": rows}


def part_compile(tmp: Path) -> dict[str, Any]:
    """``webrank rank`` of the bundled web-NotreDame (1.5M edges, the Numba step) with an
    empty Numba cache (as after an install) and with the cache that run wrote."""
    from webrank.datasets import path
    from webrank.kernels.cpu import SMALL_GRAPH_EDGES

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "numba-cache")}
    cmd = [WEBRANK, "rank", str(path())]
    cold, _ = _timed(cmd, env)
    warm = [_timed(cmd, env)[0] for _ in range(3)]
    return {"graph": "web-NotreDame (bundled), 1,497,134 edges",
            "numba_step": 1_497_134 >= SMALL_GRAPH_EDGES, "empty_cache_s": cold,
            "cached_s": _stats(warm)}


def _environment() -> dict[str, Any]:
    from webrank.bench.env import environment

    env = environment()
    try:
        env["commit_full"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE,
                                            capture_output=True, text=True,
                                            timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=HERE,
                               capture_output=True, text=True, timeout=5).stdout
        env["uncommitted_changes"] = bool(dirty.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    import networkx

    env["networkx"] = networkx.__version__
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per measurement")
    parts = ["rank", "nx", "crossover", "first-solve", "compile"]
    ap.add_argument("--parts", nargs="+", default=parts, choices=parts)
    ap.add_argument("--out", default=str(HERE.parent / "results" / "first_call" / "cpu_2core"
                                         / "first_call.json"))
    ap.add_argument("--before", metavar="SRC", default=None,
                    help="the src folder of an older webrank (e.g. from `git archive REV src "
                         "| tar -x -C DIR`): rank and nx run it too, interleaved")
    args = ap.parse_args()
    doc: dict[str, Any] = {"environment": _environment(), "load_average": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for part in args.parts:
            doc["load_average"][f"before_{part}"] = os.getloadavg()
            print(f"{part} ...", flush=True)
            if part == "rank":
                doc[part] = part_rank(args.repeat, Path(tmp), args.before)
            elif part == "nx":
                doc[part] = part_nx(args.repeat, args.before)
            elif part == "crossover":
                doc[part] = part_crossover(args.repeat)
            elif part == "first-solve":
                doc[part] = part_first_solve(max(3, args.repeat // 3), Path(tmp))
            else:
                doc[part] = part_compile(Path(tmp))
        doc["load_average"]["end"] = os.getloadavg()
    _print_table(doc)
    from webrank.bench.env import write_json

    write_json(doc, args.out)
    print(f"wrote {args.out}")


def _print_table(doc: dict[str, Any]) -> None:
    print()
    if "rank" in doc:
        names = [n for n in doc["rank"] if isinstance(doc["rank"][n], dict)]
        for name in names:
            d = doc["rank"][name]
            s = d["seconds"]
            print(f"{name:30} whole process: median {s['median']:.3f} s (min "
                  f"{s['min']:.3f}, max {s['max']:.3f}, {s['repeat']} runs; first run "
                  f"{d['first_run_s']:.3f} s)")
    if "nx" in doc:
        d = doc["nx"]
        for which in [w for w in d if isinstance(d[w], dict)]:
            f, p = d[which]["first_call_s"], d[which]["process_s"]
            print(f"nx.pagerank 200 nodes, {which:15}: first call median {f['median']:.3f} s "
                  f"(min {f['min']:.3f}, max {f['max']:.3f}); process {p['median']:.3f} s")
        print(f"  ratio webrank/networkx: first call {d['ratio_first_call']:.2f}x, "
              f"process {d['ratio_process']:.2f}x")
    if "crossover" in doc:
        c = doc["crossover"]
        print(f"crossover (edges): {json.dumps(c['crossover_edges'])}; in code: "
              f"SMALL_GRAPH_EDGES = {c['threshold_in_code']:,}")
    if "first-solve" in doc:
        for r in doc["first-solve"]["rows"]:
            print(f"first pagerank call of a process, {r['graph']:9} {r['edges']:9,} edges "
                  f"tol {r['tol']:.0e}: scipy {r['scipy']['median']:.3f} s, numba "
                  f"{r['numba']['median']:.3f} s")
    if "compile" in doc:
        c = doc["compile"]
        print(f"webrank rank {c['graph']}: empty Numba cache "
              f"{c['empty_cache_s']:.2f} s, cached median {c['cached_s']['median']:.2f} s")
    print(f"load average: {json.dumps(doc['load_average'])}")


if __name__ == "__main__":
    main()
