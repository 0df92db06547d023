"""The examples users read run as written: every ```python block of the README, in order,
in one namespace (the names a block takes from the reader's own session — a networkx
graph ``G``, a DataFrame ``df``, a SciPy matrix ``A`` — given here), and every docstring
example of the package (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL

import webrank

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    nx = pytest.importorskip("networkx")
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp

    blocks = readme_blocks()
    assert len(blocks) >= 4
    real = REAL["cnr-2000"]
    if real.exists():
        (tmp_path / "cnr-2000.txt.gz").symlink_to(real)
    else:  # a checkout without the shared datasets: a generated graph under that name,
        # with a ring over its first nodes (the examples use nodes 0..44 and link 0 -> 1)
        import gzip

        from webrank.generate import generate

        src, dst, _ = generate("rmat", 12, seed=1)
        ring = np.arange(1000)
        src = np.concatenate([ring, np.asarray(src)])
        dst = np.concatenate([(ring + 1) % 1000, np.asarray(dst)])
        (tmp_path / "cnr-2000.txt.gz").write_bytes(gzip.compress("".join(
            f"{a}\t{b}\n" for a, b in zip(src.tolist(), dst.tolist(), strict=True)).encode()))
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    namespace = {
        "G": nx.DiGraph([(0, 1), (1, 2), (2, 0), (2, 3)]),
        "df": pd.DataFrame({"src": ["a", "b", "c"], "dst": ["b", "c", "a"],
                            "w": [1.0, 2.0, 0.5]}),
        "A": sp.random_array((50, 50), density=0.1, random_state=rng, format="csr"),
    }
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    assert (tmp_path / "scores.parquet").exists()
    r = namespace["r"]
    assert isinstance(r, webrank.PageRankResult) and r.converged


def _package_modules() -> list[str]:
    names = ["webrank"]
    for info in pkgutil.walk_packages(webrank.__path__, "webrank."):
        if not info.name.endswith("__main__"):  # importing it runs the CLI
            names.append(info.name)
    return names


def test_docstring_examples_run():
    attempted = 0
    failures = []
    for name in _package_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency (CuPy, mpi4py) absent
            continue
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS
                                 | doctest.NORMALIZE_WHITESPACE, report=False)
        attempted += result.attempted
        if result.failed:
            failures.append(f"{name}: {result.failed} failed")
    assert not failures, failures
    assert attempted >= 10  # the examples exist (pagerank's, Graph's, results', ...)


DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_public_name_is_in_the_api_reference():
    """docs/api.rst lists each name of ``webrank.__all__`` (the site's API pages are
    generated from it, with warnings as errors in CI)."""
    text = (DOCS / "api.rst").read_text()
    listed = set(re.findall(r"^   (\w+)$", text, flags=re.M))
    missing = sorted(set(webrank.__all__) - {"__version__"} - listed)
    assert not missing, f"not in docs/api.rst: {missing}"


def test_user_pages_hold_no_lab_notes():
    """No issue numbers, commit hashes, paths of a development checkout, machine kinds,
    "device scripts", "this 2-core machine" or the seed files' numbers in the README and
    the site's user pages (docs/development.md and docs/architecture.md are for
    developers)."""
    pages = [DOCS.parent / "README.md", *sorted(DOCS.rglob("*.md"))]
    pages = [p for p in pages if p.name not in ("development.md", "architecture.md")
             and "_build" not in p.parts]
    banned = re.compile(r"seed 0\d\d|\bissues?\b|/work/|\.\./shared|"
                        r"nvidia-h[12]00(?:-x\d+)?(?![\w-])|"
                        r"slow hour|development machine|git archive|device scripts?|"
                        r"this \d+-core machine|"
                        r"(?:first|second|third) design|\bitem \d|everyday-path|"
                        r"\b(?:commit|at|before|since) [0-9a-f]{7,40}\b", re.I)
    found = [f"{p.name}:{n}: {line.strip()[:80]}" for p in pages
             for n, line in enumerate(p.read_text().splitlines(), 1) if banned.search(line)]
    assert not found, "\n".join(found)


def test_site_maths_render_offline():
    """The site's MathJax is the local copy it ships (a page opened without network shows
    formulas, not raw LaTeX): conf.py points at a file that exists under _static."""
    conf = (DOCS / "conf.py").read_text()
    path = re.search(r'^mathjax_path = "([^"]+)"', conf, flags=re.M)
    assert path is not None and "://" not in path.group(1)
    script = DOCS / "_static" / path.group(1)
    assert script.is_file() and script.stat().st_size > 1_000_000
    assert (script.parent / "LICENSE").is_file()


ROOT = DOCS.parent
_BENCH_PATH = re.compile(r"(?<![\w/])benchmarks/[\w./*{},-]*[\w*}]")


def _expand_braces(path: str) -> list[str]:
    """``a_{x,y}.json`` -> ``a_x.json``, ``a_y.json`` (as a shell expands it)."""
    group = re.search(r"\{([^{}]*)\}", path)
    if group is None:
        return [path]
    return [expanded for choice in group.group(1).split(",")
            for expanded in _expand_braces(path[:group.start()] + choice + path[group.end():])]


def test_every_benchmarks_path_named_in_the_code_and_docs_exists():
    """Each ``benchmarks/...`` path that a docstring or comment of src/, a page of docs/
    or the README names is there (a glob matches a file; a placeholder such as ``TOPIC``
    or ``MACHINE`` stands for any folder: the part before it exists), so that moving a
    script or a result cannot leave a reference behind."""
    texts = [ROOT / "README.md", *sorted(DOCS.rglob("*.md")), *sorted(DOCS.rglob("*.rst")),
             *sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "src").rglob("*.cpp")),
             *sorted((ROOT / "src").rglob("*.hpp"))]
    texts = [p for p in texts if "_build" not in p.parts and "generated" not in p.parts]
    missing, seen = [], 0
    for page in texts:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            for named in _BENCH_PATH.findall(line):
                seen += 1
                for path in _expand_braces(named.rstrip(".")):
                    placeholder = re.search(r"/[A-Z][A-Z_]+(?:/|$)", path)
                    if placeholder is not None:
                        path = path[:placeholder.start()]
                    if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()):
                        missing.append(f"{page.relative_to(ROOT)}:{n}: {path}")
    assert seen >= 20  # the references exist (docs/benchmarks.md names dozens)
    assert not missing, "\n".join(missing)


def test_the_python_version_and_cli_options_users_read_are_true():
    """The Python version the getting-started page names is pyproject's
    ``requires-python``, and every ``--option`` that the getting-started page and the
    user guide name is an option of some ``webrank`` command."""
    import click

    from webrank.cli import cli

    required = re.search(r'^requires-python = ">=(\d+\.\d+)"',
                         (ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)
    start = (DOCS / "getting-started.md").read_text()
    assert re.findall(r"Python (\d+\.\d+)", start) == [required]

    options = {"--help"}
    commands = [cli]
    while commands:
        command = commands.pop()
        options.update(o for p in command.params for o in (*p.opts, *p.secondary_opts))
        if isinstance(command, click.Group):
            commands.extend(command.commands.values())
    outside = {"--install"}  # xcode-select --install: not webrank's
    pages = [DOCS / "getting-started.md", *sorted((DOCS / "guide").glob("*.md"))]
    unknown = [f"{page.name}: {named}" for page in pages
               for named in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", page.read_text())
               if named not in options | outside]
    assert not unknown, unknown
