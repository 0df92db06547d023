"""A fresh install's first answer: whole processes in new virtual environments.

    python benchmarks/first_call/first_answer.py [--source DIR | --wheel FILE | --built-tree SRC]
                                      [--installs 3] [--device cpu] [--file GRAPH]
                                      [--out FILE]

What a new user waits for: each install is a new virtual environment holding the built
webrank wheel (its dependencies are taken from this interpreter's environment through a
``.pth`` file, so nothing is downloaded), a new ``HOME`` and no ``NUMBA_CACHE_DIR`` or
``CUPY_CACHE_DIR``: no cache of any kind survives from an earlier run. In each, timed as
whole processes, in this order:

* ``webrank rank GRAPH --device D`` twice (the first run, then the second);
* ``webrank demo --device D`` twice;
* one process calling ``personalized_pagerank``, ``update`` and ``nx.pagerank(...,
  backend="webrank")`` twice each on GRAPH's graph (the first and second call of each);
  networkx keeps its conversion of a graph, ``update`` the graph's out-link CSR and
  ``personalized_pagerank`` its operator's device arrays, so ``networkx_new_graph``,
  ``update_new_graph`` and ``personalized_new_graph`` pair the first call with one on
  another graph (of the same size; GRAPH read again), which does that work again.

Prints medians over the installs and the first/second ratios; writes JSON (machine, CPU,
commit, date, every time). ``--source`` builds the wheel of that tree first (``pip wheel
--no-deps``: an older checkout measures the code before a change on the same machine).
``--built-tree SRC`` installs the package folder ``SRC/webrank`` as built in place
(``tools/build_native.py``: compiled kernels beside the sources) with the metadata of
``pyproject.toml`` (console script, networkx entry points), for machines that cannot
build a wheel (no build backend installed, no network).

Results: ``--out`` (published: ``benchmarks/results/first_call/cpu_2core/first_answer/`` and,
by ``bash benchmarks/gpu_host/run.sh first_answer``, ``.../first_call/h100/first_answer/``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_GRAPH = HERE.parents[2] / "shared" / "datasets" / "cnr-2000.txt.gz"

# first and second calls of the Python entry points in one fresh process
CALLS = """
import json, sys, time
import webrank
g = webrank.load(sys.argv[1])
device = sys.argv[2]
out = {}
def twice(name, call):
    for which in ("first", "second"):
        t0 = time.perf_counter()
        call()
        out[f"{name}_{which}_s"] = time.perf_counter() - t0
r = webrank.pagerank(g, tol=1e-8, device=device)
twice("personalized_pagerank",
      lambda: webrank.personalized_pagerank(g, [{0, 1}, {2}], top=5, device=device))
twice("update", lambda: webrank.update(r, added_edges=[(0, 5), (7, 2)]))
# update keeps the out-link CSR with the graph: a second graph's first update builds it too
r2 = webrank.pagerank(webrank.load(sys.argv[1]), tol=1e-8, device=device)
t0 = time.perf_counter()
webrank.update(r2, added_edges=[(0, 5), (7, 2)])
out["update_new_graph_first_s"] = out["update_first_s"]
out["update_new_graph_second_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
webrank.personalized_pagerank(r2.graph, [{0, 1}, {2}], top=5, device=device)
out["personalized_new_graph_first_s"] = out["personalized_pagerank_first_s"]
out["personalized_new_graph_second_s"] = time.perf_counter() - t0
try:
    import networkx as nx
except ImportError:
    nx = None
if nx is not None:
    nx.config.warnings_to_ignore.add("cache")
    G = nx.gnp_random_graph(2000, 0.003, seed=1, directed=True)
    H = nx.gnp_random_graph(2000, 0.003, seed=2, directed=True)
    twice("networkx_backend", lambda: nx.pagerank(G, backend="webrank"))
    # networkx keeps G's conversion: a second call on a graph of its own converts again
    t0 = time.perf_counter()
    nx.pagerank(H, backend="webrank")
    out["networkx_new_graph_first_s"] = out["networkx_backend_first_s"]
    out["networkx_new_graph_second_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def _deps_pth() -> str:
    """This interpreter's site-packages folders and ``PYTHONPATH`` entries: the new
    environments' dependencies (a folder holding a ``webrank`` package left out)."""
    extra = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    paths = [p for p in (*site.getsitepackages(), site.getusersitepackages(), *extra)
             if p and os.path.isdir(p) and not os.path.isdir(os.path.join(p, "webrank"))]
    return "\n".join(dict.fromkeys(os.path.abspath(p) for p in paths)) + "\n"


def install_built_tree(src: Path, site_dir: Path) -> None:
    """``src/webrank`` (built in place) into ``site_dir`` as an install puts it: the
    package without bytecode caches, and a ``.dist-info`` with the entry points of
    ``pyproject.toml`` (networkx finds its backends through them)."""
    project = tomllib.loads((src.parent / "pyproject.toml").read_text())["project"]
    shutil.copytree(src / "webrank", site_dir / "webrank",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    info = site_dir / f"webrank-{project.get('version', '0')}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: webrank\n"
                                   f"Version: {project.get('version', '0')}\n")
    groups = {"console_scripts": project.get("scripts", {}),
              **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
        for group, points in groups.items()))


def build_wheel(source: Path, into: Path) -> Path:
    """``pip wheel --no-deps`` of a source tree; returns the wheel's path."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(into),
                    str(source)], check=True)
    return next(into.glob("webrank-*.whl"))


def fresh_env(wheel: Path, root: Path) -> tuple[Path, dict[str, str]]:
    """A new virtual environment with ``wheel`` installed (a wheel file, or a source
    folder built in place: :func:`install_built_tree`); its bin folder and the
    environment of its processes (new HOME, no kernel cache variables)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pyver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_dir = venv / "lib" / pyver / "site-packages"
    (site_dir / "_deps.pth").write_text(_deps_pth())
    if wheel.is_dir():
        install_built_tree(wheel, site_dir)
    else:  # with this interpreter's pip into the new environment's site-packages
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-index", "--no-compile", "--target", str(site_dir), "--upgrade",
                        str(wheel)], check=True)
    # the console script: pip --target writes none into the venv's bin
    bin_dir = venv / "bin"
    (bin_dir / "webrank").write_text(
        f"#!{bin_dir / 'python'}\nfrom webrank.cli import main\nmain()\n")
    (bin_dir / "webrank").chmod(0o755)
    # .pyc files as pip writes them on a normal install (compileall of the package)
    subprocess.run([str(bin_dir / "python"), "-m", "compileall", "-q", str(site_dir / "webrank")],
                   check=True)
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "CUPY_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    return bin_dir, env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of one whole process, and its stdout."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-2000:]}")
    return elapsed, out.stdout


def one_install(wheel: Path, graph: Path, device: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="webrank-fresh-") as tmp:
        bin_dir, env = fresh_env(wheel, Path(tmp))
        row: dict[str, float] = {}
        for which in ("first", "second"):
            row[f"rank_{which}_s"], _ = timed(
                [str(bin_dir / "webrank"), "rank", str(graph), "--device", device], env)
        for which in ("first", "second"):
            row[f"demo_{which}_s"], _ = timed(
                [str(bin_dir / "webrank"), "demo", "--device", device], env)
        _, out = timed([str(bin_dir / "python"), "-c", CALLS, str(graph), device], env)
        row.update(json.loads(out.strip().splitlines()[-1]))
        return row


def environment() -> dict[str, object]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True,
                                  cwd=HERE).stdout.strip()
        except OSError:
            return ""

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return {"machine": platform.node(), "cpu": platform.processor() or platform.machine(),
            "cpus": cpus, "python": platform.python_version(), "commit": git("rev-parse", "HEAD"),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "loadavg": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--source", type=Path, default=HERE.parents[1],
                     help="source tree to build the wheel of (default: this checkout)")
    src.add_argument("--wheel", type=Path, help="an already built webrank wheel")
    src.add_argument("--built-tree", type=Path, metavar="SRC",
                     help="the src folder of a checkout built in place "
                          "(python tools/build_native.py), installed as it is")
    ap.add_argument("--installs", type=int, default=3, help="fresh installs (default 3)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--file", type=Path, default=DEFAULT_GRAPH, help="graph to rank")
    ap.add_argument("--out", type=Path, help="JSON file to write")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="webrank-wheel-") as wdir:
        wheel = (args.built_tree.resolve() if args.built_tree
                 else args.wheel or build_wheel(args.source, Path(wdir)))
        rows = [one_install(wheel, args.file, args.device) for _ in range(args.installs)]
        wheel_name = wheel.name
    medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"{args.installs} fresh installs of {wheel_name}, {args.file.name}, "
          f"--device {args.device} (median seconds)")
    for name in sorted({k.rsplit("_", 2)[0] for k in medians}):
        first, second = medians[f"{name}_first_s"], medians[f"{name}_second_s"]
        print(f"  {name:24s} first {first:7.3f}  second {second:7.3f}  "
              f"ratio {first / second:5.2f}")
    result = {"environment": environment(), "wheel": wheel_name, "graph": str(args.file),
              "device": args.device, "installs": rows, "medians": medians}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
