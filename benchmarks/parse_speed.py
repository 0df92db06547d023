"""How fast is ``webrank.load`` on a real edge list, next to the usual alternatives?

Times, in one process (median of 5 runs unless noted), on a SNAP-style ``.txt.gz`` file
(default: the shared cnr-2000, 3.2M edges):

* decompression alone: stdlib ``gzip`` and ISA-L (``isal.igzip_threaded``);
* ``pandas.read_csv(path, sep="\\t", comment="#", header=None)`` (if pandas is installed);
* ``numpy.loadtxt`` (1 run: it is slow);
* ``webrank.load``: parse + build the CSR, on the fast (pyarrow) path;
* ``webrank.load`` forced onto the exact line scanner (1 run; what a file with comments
  in the middle or ragged whitespace costs);
* ``webrank.load(labels="string")``;
* loading the native ``.npz`` cache written by ``webrank.save_graph``.

Usage::

    PYTHONPATH=src python benchmarks/parse_speed.py [path/to/edges.txt.gz]
"""

from __future__ import annotations

import gzip
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "cnr-2000.txt.gz"


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float, object]:
    """Median and minimum wall time of ``runs`` calls (seconds), and the last result."""
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), out


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT
    if not path.exists():
        print(f"{path}: not found (pass an edge-list file)", file=sys.stderr)
        return 1

    import isal.igzip_threaded
    import numpy as np

    import webrank
    from webrank.io import edgelist, save_graph

    rows: list[tuple[str, int, float, float, str]] = []

    def add(label: str, fn: Callable[[], object], runs: int = 5, note: str = "") -> object:
        med, best, out = timed(fn, runs)
        rows.append((label, runs, med, best, note))
        return out

    def isal_read() -> bytes:
        with isal.igzip_threaded.open(path, "rb", threads=1) as f:
            return f.read()

    webrank.load(path)  # warm-up: imports (pyarrow, scipy) and the page cache

    raw = add("gzip.decompress (stdlib zlib)", lambda: gzip.decompress(path.read_bytes()))
    add("isal.igzip_threaded read", isal_read)
    try:
        import pandas as pd
    except ImportError:
        rows.append(("pandas.read_csv", 0, float("nan"), float("nan"), "pandas not installed"))
    else:
        df = add("pandas.read_csv (parse only)",
                 lambda: pd.read_csv(path, sep="\t", comment="#", header=None))
        rows[-1] = (*rows[-1][:4], f"{len(df):,} rows")
    arr = add("numpy.loadtxt (parse only)",
              lambda: np.loadtxt(path, dtype=np.int64, comments="#"), runs=1)
    rows[-1] = (*rows[-1][:4], f"{len(arr):,} rows")
    g = add("webrank.load (parse + CSR)", lambda: webrank.load(path))
    rows[-1] = (*rows[-1][:4], f"n={g.n:,} m={g.num_edges:,}")

    fast = edgelist._fast_read
    edgelist._fast_read = lambda *a, **k: None  # force the exact line scanner
    try:
        add("webrank.load, exact scanner forced", lambda: webrank.load(path), runs=1)
    finally:
        edgelist._fast_read = fast
    add('webrank.load(labels="string")', lambda: webrank.load(path, labels="string"),
        runs=3)

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "graph.npz"
        save_graph(g, cache)
        back = add("native cache load (.npz)", lambda: webrank.load(cache))
        assert np.array_equal(back.indices, g.indices)
        rows[-1] = (*rows[-1][:4], f"{cache.stat().st_size / 2**20:.1f} MiB file")

    size = path.stat().st_size / 2**20
    print(f"{path.name}: {size:.1f} MiB compressed, {len(raw) / 2**20:.1f} MiB text")
    print(f"{'what':<38} {'runs':>4} {'median s':>9} {'min s':>7}  note")
    print("-" * 78)
    for label, runs, med, best, note in rows:
        print(f"{label:<38} {runs:>4} {med:>9.3f} {best:>7.3f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
