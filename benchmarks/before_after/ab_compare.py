"""Before/after table of two source trees' ``webrank bench`` runs on one machine.

    python benchmarks/before_after/ab_compare.py OUT.md RUN_DIR [RUN_DIR ...]

Each RUN_DIR holds a ``results.json`` (or is a script's JSON file,
``benchmarks/cpu/cpu_engines.py --out``) and is named ``..._old<k>`` or ``..._new<k>`` (as
``STEPS=ab bash benchmarks/gpu_host/run.sh pipeline`` and ``run.sh ab_warm`` write them,
alternating the trees). For every measurement both trees made: the median over each tree's
runs of the per-run median, their ratio new/old, and the spread of each tree between its own
runs (max/min of its run medians): a ratio inside the spread is noise. Renamed measurements are
matched through ``RENAMED``.

Results: the Markdown table OUT.md (published beside its runs, e.g.
``benchmarks/results/before_after/h200/architecture/ab_bench_gpu.md``).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

#: measurement names that changed between the trees (old text -> new text)
RENAMED = {"(seed 000 design)": "(Praveen et al. design)"}


def results_file(run: Path) -> Path:
    """A run's JSON: ``RUN/results.json`` (``webrank bench``) or the file ``RUN`` itself
    (a script's JSON, ``benchmarks/cpu/cpu_engines.py --out RUN``)."""
    return run / "results.json" if run.is_dir() else run


def load(run: Path) -> dict[str, float]:
    """Measurement name -> median: ``webrank bench``'s measurements, or every object with
    a ``median`` in a script's JSON, named by its path (``cnr-2000/pull/ms_per_step``)."""
    data = json.loads(results_file(run).read_text())
    out: dict[str, float] = {}
    if "measurements" in data:
        for m in data["measurements"]:
            name = m["name"]
            for old, new in RENAMED.items():
                name = name.replace(old, new)
            if m.get("median") is not None:
                out[name] = float(m["median"])
        return out

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("median"), int | float):
                out[path] = float(node["median"])
                return
            for key, value in node.items():
                if key != "environment":
                    walk(value, f"{path}/{key}" if path else str(key))

    walk(data, "")
    return out


def main(out: Path, runs: list[Path]) -> None:
    by_tree: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    env = {}
    for run in runs:
        tree = re.search(r"(old|new)\d*$", run.stem)
        if tree is None:
            raise SystemExit(f"{run}: the folder name must end in old<k> or new<k>")
        by_tree[tree.group(1)].append(load(run))
        env = json.loads(results_file(run).read_text()).get("environment", {})
    names = [n for n in by_tree["old"][0]
             if all(n in r for t in by_tree.values() for r in t)]
    gpu = env.get("gpu")
    machine = env.get("cpu") or env.get("machine") or env.get("platform")
    # the code of each run (bench/env.source_digest), where the results carry it
    code = [json.loads(results_file(r).read_text()).get("environment", {}).get(
        "source_digest") for r in runs]
    lines = [f"GPU: {gpu.get('name') if isinstance(gpu, dict) else gpu}; CPU: {machine}; runs: "
             + ", ".join(r.name + (f" (source {c})" if c else "")
                         for r, c in zip(runs, code, strict=True)), "",
             "| measurement | old | new | new/old | old spread | new spread |",
             "|---|---|---|---|---|---|"]
    rows = []
    for name in names:
        old = [r[name] for r in by_tree["old"]]
        new = [r[name] for r in by_tree["new"]]
        mo, mn = statistics.median(old), statistics.median(new)
        if mo <= 0:
            continue
        spread = lambda v: max(v) / min(v) if min(v) > 0 else float("nan")  # noqa: E731
        rows.append({"name": name, "old": mo, "new": mn, "ratio": mn / mo,
                     "old_spread": spread(old), "new_spread": spread(new)})
        lines.append(f"| {name} | {mo:.4g} | {mn:.4g} | {mn / mo:.3f} | "
                     f"{spread(old):.3f} | {spread(new):.3f} |")
    ratios = [r["ratio"] for r in rows]
    if ratios:
        mid = statistics.median(ratios)
        lines += ["", f"{len(ratios)} measurements; new/old median {mid:.3f}, "
                  f"range {min(ratios):.3f}-{max(ratios):.3f}"]
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"runs": [r.name for r in runs],
                                                    "rows": rows}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
