"""``webrank bench``: quick runs of the suites, the results schema, the report and plots.

These check what the runner writes, not how fast anything is.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import webrank
from webrank.bench.runner import BenchContext, run_suite
from webrank.bench.suites import SUITES, load_suite
from webrank.cli import cli

ENV_KEYS = {"date", "commit", "source_digest", "webrank", "python", "platform", "cpu",
            "cpu_count", "numpy", "scipy", "gpu"}
MEASUREMENT_KEYS = {"name", "unit", "median", "min", "max", "repeats", "device", "params",
                    "metrics"}


def _numbers(value):
    """Every int/float inside a JSON value (bools excluded)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


def _bench(tmp_path: Path, suite: str) -> tuple[dict, Path]:
    out = tmp_path / suite
    res = CliRunner().invoke(cli, ["bench", suite, "--device", "cpu", "--quick",
                                   "--repeats", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "wrote" in res.output
    return json.loads((out / "results.json").read_text()), out


def _check_results(doc: dict, out: Path, suite: str) -> None:
    assert doc["schema"] == "webrank-bench/1"
    assert doc["suite"] == suite and doc["quick"] is True and doc["devices"] == ["cpu"]
    assert ENV_KEYS <= set(doc["environment"])
    assert doc["measurements"], "no measurement recorded"
    for m in doc["measurements"]:
        assert MEASUREMENT_KEYS <= set(m), m
        assert m["unit"] == "s" and m["repeats"] >= 1
        for key in ("median", "min", "max"):
            assert math.isfinite(m[key]) and m[key] > 0, (m["name"], key, m[key])
        assert m["min"] <= m["median"] <= m["max"]
        assert all(math.isfinite(x) for x in _numbers(m["metrics"])), m
    for table in doc["tables"]:
        assert all(len(row) == len(table["columns"]) for row in table["rows"])
    report = (out / "report.md").read_text()
    assert f"webrank bench {suite}" in report and "## Background" in report
    pngs = sorted(out.glob("*.png"))
    assert pngs and {p.name for p in pngs} == set(doc["plots"])
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({p.name})" in report


def test_baselines_quick(tmp_path):
    doc, out = _bench(tmp_path, "baselines")
    _check_results(doc, out, "baselines")
    tools = {m["params"]["tool"] for m in doc["measurements"]}
    assert {"webrank cpu float64", "SciPy power"} <= tools
    errors = [m["metrics"]["l1_error"] for m in doc["measurements"]
              if m["params"]["tool"] in ("webrank cpu float64", "SciPy power")
              and m["params"]["kind"] == "solve"]
    assert errors and max(errors) < 1e-8  # both ran to L1 1e-10 on the same reference


@pytest.mark.parametrize("suite", ["dense", "approx"])
def test_seed_suites_quick(tmp_path, suite):
    doc, out = _bench(tmp_path, suite)
    _check_results(doc, out, suite)
    assert doc["findings"]
    if suite == "dense":  # the dense and sparse solvers agree on the top 3 nodes
        by_n: dict[int, set] = {}
        for m in doc["measurements"]:
            if "top3" in m["metrics"]:
                by_n.setdefault(m["params"]["nodes"], set()).add(tuple(m["metrics"]["top3"]))
        assert by_n and all(len(tops) == 1 for tops in by_n.values())


def test_iterations_reads_the_counts_a_run_to_each_tol_takes(tmp_path):
    # the iterations read off one tol=0 run are those of a run stopping at that tol
    from webrank.bench.suites.extrapolation import QUICK_NODES
    from webrank.generate import generate

    doc, _ = _bench(tmp_path, "iterations")
    assert doc["tables"] and doc["measurements"]
    src, dst, n = generate("scale-free", QUICK_NODES, seed=0)
    g = webrank.Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
    checked = 0
    for m in doc["measurements"]:
        p = m["params"]
        for tol, its in m["metrics"]["iterations_to"].items():
            r = webrank.pagerank(g, alpha=p["alpha"], tol=float(tol), method="power",
                                 dtype=p["dtype"], max_iter=5000,
                                 raise_on_nonconvergence=False)
            assert its == (r.iterations if r.converged else None), (p, tol)
            checked += 1
    assert checked >= 8


@pytest.mark.slow
def test_extrapolation_quick(tmp_path):
    doc, out = _bench(tmp_path, "extrapolation")
    _check_results(doc, out, "extrapolation")
    methods = {m["params"]["method"] for m in doc["measurements"]}
    assert {"power", "aitken", "quadratic"} <= methods
    power = [m for m in doc["measurements"] if m["params"]["method"] == "power"]
    assert all(m["metrics"]["converged"] for m in power)


def test_every_suite_module_has_the_interface():
    for name in SUITES:
        mod = load_suite(name)
        assert isinstance(mod.TITLE, str) and mod.BACKGROUND.strip() and callable(mod.run)


def test_unknown_suite_and_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark suite"):
        run_suite("nope", out_dir=tmp_path)
    with pytest.raises(ValueError, match="repeats"):
        run_suite("baselines", out_dir=tmp_path, repeats=0)
    res = CliRunner().invoke(cli, ["bench", "nope"])
    assert res.exit_code == 2 and "nope" in res.output


def test_gpu_requested_without_gpu(tmp_path):
    from webrank.backends import gpu_available
    from webrank.errors import DeviceUnavailableError

    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(DeviceUnavailableError):
        run_suite("baselines", device="gpu", quick=True, out_dir=tmp_path)
    assert not (tmp_path / "results.json").exists()


def test_missing_packages_and_methods_are_skipped_with_a_note(tmp_path):
    ctx = BenchContext(suite="t", devices=("cpu",), quick=True, repeats=1, data_dir=None,
                       out_dir=tmp_path)
    assert ctx.optional("no_such_package_xyz", "thing") is None
    assert not ctx.method_available("no-such-method", "variant x")
    assert ctx.method_available("power", "variant p")
    assert ctx.dataset("no-such-graph") is None
    assert ctx.dataset("web-NotreDame") is not None  # bundled
    whats = {s["what"] for s in ctx.skipped}
    assert {"thing", "variant x", "dataset no-such-graph"} <= whats
    assert ctx.attempt("refused", lambda: (_ for _ in ()).throw(ValueError("no GPU here")))\
        is None
    assert {"what": "refused", "why": "no GPU here"} in ctx.skipped


def test_record_refuses_bad_times(tmp_path):
    ctx = BenchContext(suite="t", devices=("cpu",), quick=True, repeats=1, data_dir=None,
                       out_dir=tmp_path)
    with pytest.raises(ValueError, match="finite and positive"):
        ctx.record("x", {"median": float("nan"), "min": 1.0, "max": 1.0, "repeat": 1})
    _, t = ctx.time(lambda: sum(range(100)))
    m = ctx.record("sum", t, params={"n": 100})
    assert m["repeats"] == 1 and m["median"] > 0


@pytest.mark.gpu
def test_dense_and_baselines_on_gpu(tmp_path):
    for suite in ("dense", "baselines"):
        out = tmp_path / suite
        res = CliRunner().invoke(cli, ["bench", suite, "--device", "both", "--quick",
                                       "--repeats", "1", "--out", str(out)])
        assert res.exit_code == 0, res.output + repr(res.exception)
        doc = json.loads((out / "results.json").read_text())
        assert doc["devices"] == ["cpu", "gpu"]
        assert any(m["device"] == "gpu" for m in doc["measurements"])


def test_e2e_quick(tmp_path):
    # a user's whole process per input format, its phases and their floors
    doc, out = _bench(tmp_path, "e2e")
    _check_results(doc, out, "e2e")
    names = {m["name"] for m in doc["measurements"]}
    for fmt in ("txt", "txt.gz", "parquet", "npz"):
        assert f"whole process rmat14 {fmt}" in names
        assert f"load rmat14 {fmt}" in names and f"solve rmat14 {fmt}" in names
    assert "parse_floor rmat14 txt" in names and "write_csv rmat14 npz" in names
    assert "write_floor rmat14 npz" in names
    whole = [m for m in doc["measurements"] if m["name"].startswith("whole process")]
    for m in whole:  # each process's own peak: more than the interpreter, below the VM's
        assert 20e6 < m["metrics"]["peak_rss_bytes"] < 20e9
        assert m["metrics"]["bytes_per_link_beyond_file"] is not None


def test_run_process_measures_its_own_child():
    """The whole-process probe: exit status, output, and the child's own peak (a child
    holding 200 MB after one holding 400 MB reports about 200, not the largest so far;
    neither reports this process's 600 MB, which a plain fork would carry)."""
    import sys

    import numpy as np

    from webrank.bench.suites.e2e import run_process

    ballast = np.ones(600_000_000 // 8)  # this process's size must not show in the child's
    hold = "import numpy as np; a = np.ones({} // 8); print(a.size); raise SystemExit(3)"
    big = run_process([sys.executable, "-c", hold.format(400_000_000)], dict(os.environ))
    small = run_process([sys.executable, "-c", hold.format(200_000_000)], dict(os.environ))
    del ballast
    assert big.returncode == small.returncode == 3
    assert big.stdout.strip() == "50000000" and small.stdout.strip() == "25000000"
    assert 400e6 < big.peak_rss < 600e6 and 200e6 < small.peak_rss < 350e6
    assert big.seconds > 0 and small.stderr == ""


def test_source_digest_names_the_code_that_ran(tmp_path, monkeypatch):
    """A results file says which code ran even where git cannot (a copied tree with a
    stale .git): a digest of the package's files, changed by any edit of one."""
    import shutil

    import webrank
    from webrank.bench import env

    digest = env.source_digest()
    assert len(digest) == 12 and int(digest, 16) >= 0 and digest == env.source_digest()
    copy = tmp_path / "webrank"
    shutil.copytree(Path(webrank.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__", "data"))
    monkeypatch.setattr(env, "__file__", str(copy / "bench" / "env.py"))
    assert env.source_digest() == digest
    (copy / "graph.py").write_text((copy / "graph.py").read_text() + "\n# edited\n")
    assert env.source_digest() != digest
