"""A text edge list loaded for the GPU, phase by phase, in one process.

``webrank.load(FILE, device="gpu")`` repeated: the whole load, and inside it the parse
(:func:`webrank.io.edge_parse.parallel_read`), the columns' upload
(``webrank.build_gpu._upload``), the device build (``_kernel_build``) and the host build
with the CSR's upload (``host_csr`` + ``_uploaded``), each timed with the device
synchronised after it; the first load of the process apart from the others (the CUDA
context, the kernels' modules, the staging buffers). A phase a tree does not take shows
as 0.

    python benchmarks/gpu/gpu_load_phases.py FILE [--repeats 5] [--out FILE.json]

Prints one line a load and the medians; writes JSON (machine, commit, date) to ``--out``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

#: (module, function) pairs timed inside the load
PHASES = (("webrank.io.edge_parse", "parallel_read"), ("webrank.build_gpu", "_upload"),
          ("webrank.build_gpu", "_kernel_build"), ("webrank.build_gpu", "host_csr"),
          ("webrank.build_gpu", "_uploaded"))


def _timed(times: dict[str, float], name: str, fn: Any, sync: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            sync()
            times[name] = times.get(name, 0.0) + time.perf_counter() - t
    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="gpu_load_phases.json")
    args = ap.parse_args()
    import importlib

    import cupy as cp

    import webrank
    from webrank.bench.env import environment, write_json

    def sync() -> None:
        cp.cuda.Device().synchronize()

    times: dict[str, float] = {}
    for module, name in PHASES:
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            setattr(mod, name, _timed(times, name, getattr(mod, name), sync))
    import webrank.io.edgelist as edgelist  # (takes parallel_read by name)

    edgelist.parallel_read = sys.modules["webrank.io.edge_parse"].parallel_read
    rows = []
    for k in range(args.repeats + 1):
        times.clear()
        t = time.perf_counter()
        g = webrank.load(args.file, device="gpu")
        sync()
        row = {"load_s": time.perf_counter() - t, **{n: times.get(n, 0.0) for _, n in PHASES},
               "first": k == 0, "edges": int(g.num_edges), "on_gpu": bool(g.on_gpu)}
        del g
        cp.get_default_memory_pool().free_all_blocks()
        rows.append(row)
        print(("first " if k == 0 else f"load {k} ") + " ".join(
            f"{key} {v:.3f}" for key, v in row.items() if isinstance(v, float)), flush=True)
    later = rows[1:] or rows
    med = {key: statistics.median(r[key] for r in later) for key in later[0]
           if isinstance(later[0][key], float)}
    print(f"{Path(args.file).name} medians: " + " ".join(f"{k} {v:.3f}" for k, v in med.items()))
    write_json({"environment": environment(), "file": args.file, "rows": rows,
                "medians": med}, args.out)


if __name__ == "__main__":
    main()
