"""The layering rule: features speak to the backends' operators; device code (Numba and
CUDA kernels) lives in webrank.kernels and is imported by webrank.backends only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "webrank"
FEATURES = ["ranking.py", "personalized.py", "incremental.py", "nx_backend.py", "metrics.py",
            "result.py", "graph.py", "generate.py"]


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (``from a import b`` gives a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("feature", FEATURES)
def test_features_import_no_kernel_module(feature):
    kernels = {m for m in imported_modules(SRC / feature)
               if m == "webrank.kernels" or m.startswith("webrank.kernels.")}
    assert not kernels, f"{feature} imports {sorted(kernels)}: go through webrank.backends"


def test_kernel_modules_import_no_backend_or_feature():
    """Kernels are leaves: they share helpers among themselves and use the errors, the
    array helpers and the layout planner (webrank.arrays, webrank.blocking: NumPy only),
    and how the process was started (webrank.distributed.launch: the environment only),
    nothing above."""
    allowed = ("webrank.kernels", "webrank.errors", "webrank.arrays", "webrank.blocking",
               "webrank.distributed.launch")
    for path in sorted((SRC / "kernels").glob("*.py")):
        above = {m for m in imported_modules(path)
                 if m.startswith("webrank.") and not m.startswith(allowed)}
        assert not above, f"kernels/{path.name} imports {sorted(above)}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}
#: compiled extension modules (native/, built with the package): private modules of their
#: package, imported by the one module that wraps them
EXTENSIONS = {"webrank.kernels._cpu"}


def _private(segment: str) -> bool:
    return segment.startswith("_") and not segment.startswith("__")


def test_no_private_name_is_used_outside_its_module():
    """``from webrank.a import _b`` from another module, or a private module
    (``webrank.x._y``) from outside its package, is a layering leak: what other
    modules need gets a public name and a docstring."""
    leaks = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("webrank")):
                continue
            segments = node.module.split(".")
            for i, seg in enumerate(segments):
                owner = ".".join(segments[:i])
                if _private(seg) and not (package + ".").startswith(owner + "."):
                    leaks.append(f"{name} imports private module {node.module}")
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if (_private(alias.name) and node.module != name
                        and target not in MODULES and target not in EXTENSIONS):
                    leaks.append(f"{name} imports {alias.name} from {node.module}")
    assert not leaks, "\n".join(sorted(set(leaks)))


def test_no_import_cycles_between_modules():
    """Every import, at module level or inside a function, draws an edge; the module
    graph has no cycle (a strongly connected component of more than one module)."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for mod in imported_modules(path):
            if mod in MODULES and mod != name:
                edges[name].add(mod)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cli_choices_come_from_the_registries(monkeypatch):
    """The CLI offers exactly what the backends, solvers and readers register (no copied
    lists): its choices are the registries' tuples, its --method help is read from the
    solver registry when shown, its --format help from ``webrank.io.FORMATS``."""
    import click

    import webrank
    from webrank.backends import CPU_ENGINES, CRITERIA, DEVICES, DTYPES, GPU_ENGINES
    from webrank.cli import cli
    from webrank.solvers import SOLVERS, SPECS, SolverSpec, get_solver

    get_solver("power")  # fills the registry
    for command in (cli.commands["rank"], cli.commands["ppr"]):
        params = {p.name: p for p in command.params}
        for name, registry in (("criterion", CRITERIA), ("device", DEVICES),
                               ("dtype", DTYPES)):
            assert tuple(params[name].type.choices) == tuple(registry), (command.name, name)
    params = {p.name: p for p in cli.commands["rank"].params}
    engine = params["engine"].type
    assert isinstance(engine, click.Choice)
    assert set(engine.choices) == set(GPU_ENGINES) | set(CPU_ENGINES)
    method = params["method"]
    assert all(name in method.help for name in SOLVERS), method.help
    from webrank.io import FORMATS  # --format's help names every format load() reads

    for command in (cli.commands["rank"], cli.commands["convert"]):
        fmt = {p.name: p for p in command.params}["fmt"]
        assert all(f"{name} ({suffixes[0]}" in fmt.help
                   for name, suffixes in FORMATS.items()), (command.name, fmt.help)
    # a solver registered later shows in the help and is documented by pagerank
    monkeypatch.setitem(SPECS, "richardson", SolverSpec("richardson", SOLVERS["power"],
                                                        devices=("gpu",)))
    assert "richardson (GPU)" in method.help
    doc = webrank.pagerank.__doc__
    missing = [name for name in SOLVERS if f'"{name}"' not in doc]
    assert not missing, f"pagerank's docstring does not name the solvers {missing}"


def test_engine_options_are_registered_once():
    """Which engine takes which tuning option is listed once (backends.options), each
    name is a field of the one record (EngineOptions) documented there and in
    pagerank's ``engine_options``, and the record is what the operators take."""
    import dataclasses
    import inspect

    import webrank
    from webrank.backends import base, gpu_engines, options

    assert set(options.GPU_ENGINE_OPTIONS) == set(base.GPU_ENGINES) - {"auto"}
    assert set(gpu_engines.ENGINE_CLASSES) == set(options.GPU_ENGINE_OPTIONS) | {"hybrid"}
    fields = {f.name for f in dataclasses.fields(options.EngineOptions)}
    assert set(options.ENGINE_OPTION_NAMES) <= fields
    for cls in gpu_engines.ENGINE_CLASSES.values():
        assert list(inspect.signature(cls).parameters)[-1] == "options", cls
    record_doc = options.EngineOptions.__doc__
    doc = webrank.pagerank.__doc__
    for name in options.ENGINE_OPTION_NAMES:
        assert f"``{name}``" in doc, f"pagerank's docstring does not document {name}"
        assert name in record_doc, f"EngineOptions does not document {name}"
    g = webrank.generate_graph("er", 30, seed=2)
    with pytest.raises(ValueError, match="unknown engine options"):
        webrank.pagerank(g, engine_options={"lanes_per_rows": 4})


def test_public_api_exports_every_returned_type_and_a_generator_function():
    import webrank

    g = webrank.generate_graph("scale-free", 200, seed=3)
    assert isinstance(g, webrank.Graph) and g.n == 200
    r = webrank.pagerank(g, tol=1e-8)
    assert isinstance(r, webrank.PageRankResult)
    pp = webrank.personalized_pagerank(g, [[0], [1, 2]], tol=1e-8)
    assert isinstance(pp, webrank.PersonalizedPageRankResult)
    assert isinstance(webrank.compare(r.scores, r.scores), webrank.RankComparison)
    assert isinstance(webrank.ReadOptions(), webrank.ReadOptions)
    bundled = webrank.load_dataset()
    assert isinstance(bundled, webrank.Graph) and bundled.num_edges == 1_497_134
    for name in webrank.__all__:
        assert getattr(webrank, name) is not None, name


def test_solvers_import_no_kernel_and_no_backend():
    """Solvers are written against the operator protocol: what a device does beyond the
    power step (sweeps, fixed point, freezing) is a capability of its operator
    (``op.capabilities``, ``op.sweeps``, ``op.fixed_point``), not an import."""
    for path in sorted((SRC / "solvers").glob("*.py")):
        below = {m for m in imported_modules(path)
                 if m.startswith(("webrank.kernels", "webrank.backends"))}
        assert not below, f"solvers/{path.name} imports {sorted(below)}"


def test_a_missing_capability_is_a_clear_error():
    import numpy as np

    import webrank
    from webrank.backends.base import PageRankOperator

    g = webrank.generate_graph("er", 50, seed=1)
    op = webrank.backends.make_operator(g, device="cpu", alpha=0.85, personalization=None,
                                        dangling=None, dtype="float64")
    assert {"sweep", "fixed_point", "adaptive"} <= op.capabilities
    with pytest.raises(ValueError, match="needs 'sweep' steps, which the cpu backend"):
        PageRankOperator.require(type("Bare", (), {"capabilities": frozenset(),
                                                    "name": "cpu"})(), "sweep",
                                 "gauss-seidel")
    r = webrank.pagerank(g, method="gauss-seidel", tol=1e-12)
    assert r.converged and abs(r.scores.sum() - 1) < 1e-12 and np.all(r.scores > 0)


def test_every_webrank_import_resolves():
    """Every ``from webrank.x import y`` in the package, at module level or inside a
    function (GPU, MPI and Numba paths included, which the CPU tests may never run),
    names a module that exists and a name it defines: a renamed helper cannot leave a
    broken import on a path only the GPU machine takes."""
    import importlib

    broken = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.split(".")[0] == "webrank"):
                continue
            try:
                mod = importlib.import_module(node.module)
            except ImportError as exc:  # a module missing is the defect; a missing
                if "webrank" in str(exc):  # optional dependency is not
                    broken.append(f"{name}: {node.module} ({exc})")
                continue
            for alias in node.names:
                if alias.name == "*" or hasattr(mod, alias.name):
                    continue
                if f"{node.module}.{alias.name}" in MODULES:
                    continue
                broken.append(f"{name}: {alias.name} is not in {node.module}")
    assert not broken, "\n".join(broken)


def test_every_attribute_of_an_imported_webrank_module_exists():
    """``kb.get_kernel(...)`` where ``kb`` is an imported webrank module (``from
    webrank.kernels import cuda_blocked as kb``): the attribute exists, on every path."""
    import importlib

    broken = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] == "webrank":
                for a in node.names:
                    if f"{node.module}.{a.name}" in MODULES:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in MODULES:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and isinstance(node.ctx, ast.Load)):
                target = aliases[node.value.id]
                try:
                    mod = importlib.import_module(target)
                except ImportError:
                    continue
                if not hasattr(mod, node.attr) and f"{target}.{node.attr}" not in MODULES:
                    broken.append(f"{name}:{node.lineno}: {target}.{node.attr}")
    assert not broken, "\n".join(sorted(set(broken)))


def test_no_private_attribute_of_another_object():
    """``obj._x`` only on ``self``/``cls``/``super()`` (a class's own state): what other
    modules need of an object is public (``Graph.cached`` rather than ``graph._cache``).
    The exceptions are other libraries' names, listed."""
    allowed = {"os._exit", "self.MPI._typedict", "G._adj"}  # stdlib, mpi4py, networkx
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            owner = ast.unparse(node.value)
            if owner in ("self", "cls", "super()") or f"{owner}.{node.attr}" in allowed:
                continue
            found.append(f"{name}:{node.lineno}: {owner}.{node.attr}")
    assert not found, "\n".join(found)


# -- the layer table of docs/architecture.md -----------------------------------------------

ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"


def layer_table() -> dict[str, int]:
    """``docs/architecture.md``'s table: module pattern (``webrank.cli.*`` for a package
    and everything in it) -> layer number."""
    import re

    table: dict[str, int] = {}
    for line in ARCHITECTURE.read_text().splitlines():
        m = re.match(r"\|\s*(\d+) [a-z]+\s*\|(.*)\|\s*$", line)
        if m:
            for pattern in re.findall(r"`([\w.*]+)`", m.group(2)):
                assert pattern not in table, f"{pattern} is in two rows"
                table[pattern] = int(m.group(1))
    assert table, f"no layer table in {ARCHITECTURE}"
    return table


def layer_of(module: str, table: dict[str, int]) -> int | None:
    """The layer of the most specific pattern naming ``module``."""
    best, layer = -1, None
    for pattern, number in table.items():
        if pattern.endswith(".*"):
            base = pattern[:-2]
            hit = module == base or module.startswith(base + ".")
        else:
            hit = module == pattern
        if hit and len(pattern) > best:
            best, layer = len(pattern), number
    return layer


def module_imports(path: Path) -> set[str]:
    """The webrank modules a file imports; ``from webrank import build`` is the module
    ``webrank.build``, not the package."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = [f"{node.module}.{a.name}" for a in node.names
                    if f"{node.module}.{a.name}" in MODULES]
            names.update(subs)
            if len(subs) < len(node.names):  # a name defined in the module itself
                names.add(node.module)
    return {m for m in names if m in MODULES}


def test_every_module_is_in_the_layer_table():
    table = layer_table()
    missing = sorted(m for m in MODULES if layer_of(m, table) is None)
    assert not missing, f"not in the layer table of docs/architecture.md: {missing}"
    stale = sorted(p for p in table
                   if not any(layer_of(m, {p: 0}) is not None for m in MODULES))
    assert not stale, f"the layer table names modules that do not exist: {stale}"


def test_no_import_climbs_to_a_higher_layer():
    """The rule of docs/architecture.md: imports go to the same layer or below."""
    table = layer_table()
    climbs = []
    for name, path in MODULES.items():
        own = layer_of(name, table)
        for target in module_imports(path) - {name}:
            if layer_of(target, table) > own:
                climbs.append(f"{name} (layer {own}) imports {target} "
                              f"(layer {layer_of(target, table)})")
    assert not climbs, "\n".join(sorted(climbs))


def test_the_rule_catches_a_climb(tmp_path):
    """The checker itself: an import from graph (layer 2) of ranking (layer 6) climbs."""
    table = layer_table()
    fake = tmp_path / "graph.py"
    fake.write_text("def f():\n    from webrank.ranking import pagerank\n")
    up = [t for t in module_imports(fake) if layer_of(t, table) > layer_of("webrank.graph",
                                                                          table)]
    assert up == ["webrank.ranking"]


def _trace_calls(run) -> tuple[set[tuple[str, str, str]], list[list[str]]]:
    """Run ``run()`` under a profiler: the call edges between webrank modules (caller
    module, callee module, callee function) and the module stacks at each kernel call."""
    import sys

    edges: set[tuple[str, str, str]] = set()
    stacks: list[list[str]] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("webrank"):
            return
        caller = frame.f_back
        while caller is not None and not caller.f_globals.get("__name__", "").startswith(
                "webrank"):
            caller = caller.f_back  # through NumPy, SciPy, functools
        if caller is not None:
            # a function the caller holds in a variable (a parameter: a callback passed
            # down to it) may be of any layer
            passed = any(getattr(v, "__code__", None) is frame.f_code
                         for v in caller.f_locals.values())
            edges.add((caller.f_globals["__name__"], callee,
                       "callback" if passed else frame.f_code.co_name))
        if callee.startswith("webrank.kernels."):
            stack, f = [], frame
            while f is not None:
                mod = f.f_globals.get("__name__", "")
                if mod.startswith("webrank") and (not stack or stack[-1] != mod):
                    stack.append(mod)
                f = f.f_back
            stacks.append(stack[::-1])

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return edges, stacks


def _feature_calls():
    import numpy as np

    import webrank
    from webrank.solvers import SOLVERS, get_solver, solver_spec

    get_solver("power")  # fills the registry
    g = webrank.generate_graph("scale-free", 400, seed=5)
    calls = [(f"pagerank {m}", lambda m=m: webrank.pagerank(g, method=m, tol=1e-8,
                                                             max_iter=500))
             for m in sorted(SOLVERS) if "cpu" in solver_spec(m).devices]
    calls.append(("personalized", lambda: webrank.personalized_pagerank(
        g, [[0], [1, 2]], tol=1e-8)))
    r = webrank.pagerank(g, tol=1e-10)
    calls.append(("update", lambda: webrank.update(
        r, g, added_edges=np.array([[3, 7], [9, 11]]), frontier=True, tol=1e-10)))
    return calls


def test_calls_from_a_feature_to_its_kernels_go_down(monkeypatch):
    """Follow each feature down to the kernels it runs (CPU, the Numba steps of large
    graphs): no call climbs to a higher layer except into a callback its caller passed
    down, and no stack holds more than ten modules (the issue that set this rule
    counted 17)."""
    from webrank.kernels import cpu

    monkeypatch.setattr(cpu, "SMALL_GRAPH_EDGES", 0)
    table = layer_table()
    climbs, deep = set(), []
    for label, run in _feature_calls():
        run()  # the first call compiles and fills caches
        edges, stacks = _trace_calls(run)
        assert stacks, f"{label}: no kernel call traced"
        for caller, callee, function in edges:
            up = layer_of(callee, table) > layer_of(caller, table)
            if up and function != "callback":
                climbs.add(f"{label}: {caller} -> {callee}.{function}")
        deep += [f"{label}: {' -> '.join(s)}" for s in stacks if len(s) > 10]
    assert not climbs, "\n".join(sorted(climbs))
    assert not deep, "\n".join(deep[:5])

