"""``webrank.pagerank``: the function users call (module ``webrank.ranking``).

It validates every argument before any work is done, turns personalization / dangling /
nstart into normalised vectors, builds the backend operator, runs the chosen solver and
wraps the answer in a :class:`~webrank.result.PageRankResult`.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from webrank.backends import (
    CRITERIA,
    DEVICES,
    DTYPES,
    EngineOptions,
    device_name,
    make_operator,
    resolve_device,
    start_gpu_warmup,
)
from webrank.backends.options import CHECK_EVERY, DEFAULTS, ENGINE_OPTION_NAMES
from webrank.errors import ConvergenceError
from webrank.graph import Graph
from webrank.result import PageRankResult, merged_info
from webrank.solvers import SolverSpec, solver_spec

__all__ = ["pagerank"]

#: the methods that run with ``tol=0`` (until the iterate stops changing)
UNTIL_UNCHANGED_METHODS = ("power", "fixed")


def pagerank(
    graph: Graph | str | os.PathLike,
    *,
    alpha: float = 0.85,
    personalization: Any = None,
    dangling: Any = None,
    nstart: Any = None,
    tol: float = 1e-6,
    max_iter: int = 1000,
    criterion: str = "l1",
    dtype: str = "float64",
    device: str = "auto",
    weight: bool | None = True,
    method: str = "auto",
    engine: str = "auto",
    engine_options: Mapping[str, Any] | None = None,
    gpus: int | None = None,
    force_gpus: bool = False,
    raise_on_nonconvergence: bool = True,
    callback: Any = None,
    **options: Any,
) -> PageRankResult:
    r"""PageRank of every node of ``graph``.

    The PageRank vector x is the stationary distribution of a random surfer who, from
    page j, follows one of j's out-links with probability ``alpha`` (chosen in
    proportion to edge weight) and otherwise jumps to a page drawn from ``v``; from a
    dangling page (no out-links) the surfer follows the link part to a page drawn from
    ``d``. It is the fixed point of (Praveen et al., Algorithm 2; Sgherzi §2)

    .. math::

        x' = \alpha P^\top x + \alpha\,(\textstyle\sum_{j\ \mathrm{dangling}} x_j)\, d
             + (1 - \alpha)\, v,

    with :math:`P_{ji} = w_{ji} / \sum_k w_{jk}`. This is the definition
    ``networkx.pagerank`` uses: run to the same absolute test (``tol=1e-10`` here,
    ``tol=1e-10 / N`` there, networkx stopping at ``N * tol``) both give the same scores
    within 5e-14 (L1) on web-NotreDame.
    The dense Google matrix is never formed.

    Parameters
    ----------
    graph : Graph or path
        The graph; a path is loaded with :func:`webrank.load`.
    alpha : float, default 0.85
        Damping factor, in [0, 1).
    personalization : array_like or mapping, optional
        Teleport distribution v: an array of n non-negative numbers in node order, or
        ``{label: weight}`` (missing nodes get 0). Normalised to sum 1. Default uniform.
    dangling : array_like or mapping, optional
        Where dangling nodes send their rank (d), same forms. Default: v.
    nstart : array_like or mapping, optional
        Starting vector (normalised). Default: uniform.
    tol : float, default 1e-6
        Stop when ``||x_k - x_{k-1}|| < tol`` under ``criterion``. This is an absolute
        bound, unlike networkx's ``N * tol``, which lets a graph of a million nodes stop
        after the first iteration. ``0`` (methods ``"power"`` and ``"fixed"``; ``"auto"``
        becomes ``"power"``) iterates until nothing changes: until a step leaves the
        iterate exactly as it was, or 50 steps in a row bring no smaller residual (the
        rounding floor), which both count as converged.
    max_iter : int, default 1000
        Most iterations (0 returns ``nstart``, unconverged).
    criterion : {"l1", "l2", "linf"}, default "l1"
        Norm of the residual: sum of absolute changes (networkx's), Euclidean, or the
        largest per-node change (Sgherzi's per-node criterion).
    dtype : {"float64", "float32"}, default "float64"
        Storage precision of the vector gathered along edges (the memory traffic);
        the iterate and all sums stay in float64 (see ``webrank.backends.base``).
    device : {"auto", "cpu", "gpu"}, default "auto"
        ``"auto"`` uses the GPU when CuPy sees one, else the CPU; the result says which.
    weight : bool or None, default True
        Use edge weights when the graph has them; False (or None, networkx's spelling)
        ranks the link structure only. The weights are the graph's own, given when it is
        built (``Graph.from_dataframe(df, weight="w")``, ``Graph.from_edges(src, dst,
        w)``, ``webrank.load(path, weighted=True)``): a column or attribute name here is
        a ``ValueError`` saying so.
    method : str, default "auto"
        Solver name (see ``webrank.solvers.SOLVERS``): ``"power"``, ``"aitken"``,
        ``"quadratic"``, ``"adaptive"``, ``"fixed"``, ``"gmres"``, ``"bicgstab"``,
        ``"gauss-seidel"`` (CPU), ``"hybrid"`` (GPU + CPU); ``"auto"`` picks the one
        expected to be fastest for the device and alpha and runs it
        (:mod:`webrank.solvers.auto`); ``result.method`` names the one that ran.
    engine : str, default "auto"
        The power step: on the CPU ``"auto"``, ``"pull"`` or ``"blocked"``
        (:mod:`webrank.backends.cpu`), on the GPU also ``"persistent"`` and ``"stream"``
        (:mod:`webrank.backends.gpu_engines`); ``"auto"`` picks one for the graph and
        the device, and ``info["engine"]`` names the one that ran.
    engine_options : mapping, optional
        Tuning of the engine's step, ``{name: value}``, the one way to pass it (a name
        as a keyword of its own is refused, naming this mapping). On the GPU
        ``check_every``, ``graph_steps``, ``use_graph`` (every engine),
        ``lanes_per_row`` (pull), ``heavy_threshold``, ``reorder`` (pull, persistent),
        ``launch_steps`` (persistent), ``part_rows``, ``chunk_bits`` (blocked),
        ``device_memory_limit``, ``chunk_edges`` (stream); ``gpu_links`` for
        ``method="hybrid"``. Each is documented, with its default, by
        :class:`webrank.backends.EngineOptions`, the record they become: checked once
        here, before any work (an unknown name, a name the engine or the device does not
        take, a value out of range: ValueError). With ``engine="auto"`` the GPU chooses
        among the engines that take every option given. The CPU takes none.
    gpus : int, optional
        Rank on that many GPUs of this host (the graph split into row parts, one per GPU,
        exchanging through NCCL; :mod:`webrank.distributed`); default one. Where one GPU
        holds the graph and is faster (:func:`~webrank.distributed.run.gpus_for`) the
        run stays on one and ``info["gpus_reason"]`` says why. Each part runs the pull or
        the blocked step (``engine``); ``engine_options`` may hold ``check_every`` only.
    force_gpus : bool, default False
        Split the graph across ``gpus`` GPUs even where one would be faster.
    raise_on_nonconvergence : bool, default True
        If False, return the last iterate with ``converged=False`` instead of raising.
    callback : callable, optional
        ``callback(iteration, residual)`` as iterations complete (for progress bars).
    **options
        Options of the solver ``method`` runs, documented by each solver
        (:mod:`webrank.solvers`); a name it does not take is a ValueError listing those
        it does.

    Returns
    -------
    PageRankResult
        ``scores`` (float64, node order, sum 1), ``iterations``, ``residuals``, ...

    Raises
    ------
    ValueError
        An invalid argument (checked before any work).
    ConvergenceError
        Not converged within ``max_iter``; carries the last result in ``.result``.
    DeviceUnavailableError
        ``device="gpu"`` without a usable GPU.

    Examples
    --------
    >>> import webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])  # links 0->1, 1->2, ...
    >>> r = webrank.pagerank(g, tol=1e-10)
    >>> r.top(1)
    [(1, 0.397399660...)]
    >>> [node for node, _ in r.top(3)], round(float(r.scores.sum()), 12)
    ([1, 2, 0], 1.0)
    >>> r.error_bound < 1e-9  # certified distance to the exact PageRank (L1)
    True

    References
    ----------
    .. [1] L. Page, S. Brin, R. Motwani, T. Winograd, "The PageRank citation ranking:
       Bringing order to the Web", Stanford InfoLab, 1999.
    .. [2] A. Langville, C. Meyer, "Deeper Inside PageRank", Internet Mathematics 1(3),
       2004 (dangling nodes and personalization).
    """
    check_scalar_args(alpha, tol, max_iter, criterion, dtype, device)
    method = _method_for_tol(method, tol)
    spec = solver_spec(method)
    check_solver_options(method, spec.solve, options)
    tuning = EngineOptions.from_call(engine, engine_options)
    if not isinstance(graph, Graph) and device != "cpu":
        start_gpu_warmup()  # CUDA's start overlaps with reading the file
    graph = prepare_graph(graph, weight, allow_empty=True)
    if graph.n == 0:  # nothing to rank: an empty ranking, as igraph's
        return empty_result(graph, alpha=alpha, tol=tol, criterion=criterion, dtype=dtype,
                            method=method)
    v = as_distribution(personalization, graph, "personalization")
    d = as_distribution(dangling, graph, "dangling")
    x0 = as_distribution(nstart, graph, "nstart")
    gpus, gpus_info = gpus_for_call(graph, gpus, force=bool(force_gpus), device=device,
                                    method=method, dtype=dtype, tuning=tuning)
    device = _solver_device(spec, device)
    if graph.on_gpu and device == "cpu":
        raise ValueError("the graph's arrays are on the GPU: use device='gpu', or "
                         "graph.to_host() for the CPU")
    t0 = time.perf_counter()
    with _operator(graph, gpus, device, spec, alpha, v, d, dtype, tuning) as op:
        op.require(spec.requires, method)
        # the uniform start is made where it is used (no n-vector copy to the device)
        x0_dev = op.start_vector() if x0 is None else op.asarray(x0)
        op.prepare_steps()
        op.synchronize()
        t1 = time.perf_counter()
        with op.solving():
            out = spec.solve(op, x0_dev, tol=tol, max_iter=max_iter, criterion=criterion,
                             callback=callback, **options)
        op.synchronize()
        t2 = time.perf_counter()
        scores, info = _scores(op, out), merged_info(op.info, out.info, gpus_info)
    result = PageRankResult(
        scores=scores, iterations=out.iterations, converged=out.converged,
        residuals=np.asarray(out.residuals, dtype=np.float64), elapsed=t2 - t1,
        device=device, dtype=dtype_name(dtype), method=out.info.get("method", method),
        criterion=criterion, tol=tol, alpha=alpha, matvecs=out.matvecs, setup_time=t1 - t0,
        device_name=device_name(device), graph=graph, info=info, personalization=v,
        dangling=d)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return result


def _method_for_tol(method: str, tol: float) -> str:
    """The method to run: ``tol=0`` (until nothing changes) takes power's by default and
    refuses the methods that cannot run to an unchanged vector."""
    if tol != 0:
        return method
    if method == "auto":
        method = "power"
    if method not in UNTIL_UNCHANGED_METHODS:
        raise ValueError("tol=0 (iterate until nothing changes) runs with method "
                         f"{' or '.join(map(repr, UNTIL_UNCHANGED_METHODS))}, not "
                         f"{method!r}")
    return method


def gpus_for_call(graph: Graph, gpus: Any, *, force: bool, device: str, method: str,
                  dtype: str, tuning: EngineOptions | None = None
                  ) -> tuple[int, dict[str, Any]]:
    """How many GPUs of this host a call runs on, and the ``info`` entries that say why:
    ``gpus`` (None: one) checked before any work (:func:`check_gpus`), then, where one
    GPU holds the graph and is faster, brought down to as many as pay
    (:func:`webrank.distributed.run.gpus_for`) unless ``force``."""
    gpus = check_gpus(gpus, device, method, tuning or DEFAULTS)
    if gpus == 1:
        return 1, {}
    from webrank.distributed.run import gpus_for

    used, reason = gpus_for(graph, gpus, dtype, force=force)
    return used, {"gpus": used, "gpus_asked": gpus, "gpus_reason": reason}


#: the methods whose GPU operator a call may keep on the graph for the next one (they use
#: its power steps only)
KEPT_OPERATOR_METHODS = ("auto", "power")


@contextlib.contextmanager
def _operator(graph: Graph, gpus: int, device: str, spec: SolverSpec, alpha: float, v: Any,
              d: Any, dtype: str, tuning: EngineOptions) -> Iterator[Any]:
    """The operator of a call: the graph split across ``gpus`` GPUs of this host
    (:mod:`webrank.distributed`), else ``device``'s, with the engine ``tuning`` asks for
    (checked for the device; the hybrid method has an operator of its own). On one GPU,
    for the power method with uniform teleport and dangling distributions, the operator
    an earlier call with the same alpha, precision and options kept on the graph
    (:func:`~webrank.backends.gpu_engines.kept_operator`: the persistent engine's)."""
    if gpus > 1:
        from webrank.distributed.run import multi_gpu_operator

        check_every = CHECK_EVERY if tuning.check_every is None else tuning.check_every
        yield multi_gpu_operator(graph, gpus, alpha, v, d, dtype, check_every=check_every,
                                 engine=tuning.engine)
        return
    options = tuning.for_device(device, dtype, hybrid=spec.operator == "hybrid")

    def build() -> Any:
        return make_operator(graph, device=device, alpha=alpha, personalization=v,
                             dangling=d, dtype=dtype, options=options)

    if (device != "gpu" or v is not None or d is not None
            or spec.name not in KEPT_OPERATOR_METHODS):
        yield build()
        return
    from webrank.backends.gpu_engines import kept_operator

    with kept_operator(graph, (float(alpha), dtype_name(dtype), options), build) as op:
        yield op


def _scores(op: Any, out: Any) -> np.ndarray:
    """The solver's vector as float64 scores on the host, normalised to sum 1 where it
    is not already (on the device before the copy, one pass there)."""
    x = out.x
    if op.on_device and not out.normalized:
        x = op.normalized(x)
    scores = op.scores_to_host(x).astype(np.float64, copy=False)
    if not op.on_device and not out.normalized:
        total = scores.sum()
        if total > 0:
            scores /= total  # a fresh array or the solver's own: no copy of n floats
    return scores


def check_gpus(gpus: Any, device: str, method: str, tuning: EngineOptions) -> int:
    """The ``gpus`` option (default 1), checked before any work: several GPUs need
    ``device`` "gpu" or "auto", a method that runs partitioned, and no engine options
    but ``engine`` (the step of each part: "auto", "pull" or "blocked") and
    ``check_every`` (:meth:`EngineOptions.for_parts`)."""
    if gpus is None:
        return 1
    if isinstance(gpus, bool) or not isinstance(gpus, int | np.integer) or gpus < 1:
        raise ValueError(f"gpus must be a positive integer, not {gpus!r}")
    if gpus == 1:
        return 1
    if device == "cpu":
        raise ValueError("gpus > 1 runs on GPUs: use device='gpu' (or 'auto')")
    from webrank.distributed.run import PARTITIONED_METHODS

    if method not in PARTITIONED_METHODS:
        raise ValueError(f"method {method!r} does not run on several GPUs; use one of "
                         f"{', '.join(PARTITIONED_METHODS)}")
    tuning.for_parts()
    resolve_device("gpu")  # DeviceUnavailableError (one line) where no GPU can be used
    return int(gpus)


def _solver_device(spec: SolverSpec, device: str) -> str:
    """The device the solver of ``spec`` runs on for ``device`` (the spec names the
    devices it supports); ValueError before any work when it cannot run where asked."""
    devices = spec.devices
    if device == "auto" and len(devices) == 1:
        device = devices[0]
    # an explicit device the method cannot use is refused before probing for a GPU
    resolved = device if device in ("cpu", "gpu") else resolve_device(device)
    if resolved not in devices:
        raise ValueError(f"method {spec.name!r} runs on device {' or '.join(devices)} "
                         f"only, not {resolved!r}{spec.device_note}")
    return resolve_device(resolved)


_SOLVER_ARGS = {"op", "x0", "tol", "max_iter", "criterion", "callback"}


def check_solver_options(method: str, solve: Any, options: dict[str, Any]) -> None:
    """The keyword options left for the solver: a ValueError before any work for a name
    the solver does not take (engine tuning given as a keyword of its own: saying that it
    goes in ``engine_options``)."""
    if not options:
        return
    allowed = set(inspect.signature(solve).parameters) - _SOLVER_ARGS
    unknown = sorted(set(options) - allowed)
    tuning = [name for name in unknown if name in ENGINE_OPTION_NAMES]
    if tuning:
        raise ValueError(f"engine tuning goes in engine_options: pass "
                         f"engine_options={{{', '.join(repr(k) + ': ...' for k in tuning)}}}, "
                         f"not {', '.join(tuning)}= as keywords")
    if unknown:
        raise ValueError(f"unknown options {unknown} for method {method!r}; allowed: "
                         f"{', '.join(sorted(allowed)) or 'none'}")


def prepare_graph(graph: Any, weight: bool | None, allow_empty: bool = False) -> Graph:
    """The Graph to rank: loaded when given a path, without weights when ``weight`` is
    False or None; ValueError for a graph without nodes (unless ``allow_empty``), or for
    a ``weight`` that is not True, False or None (checked before the graph is read)."""
    check_weight(weight, graph)
    if not isinstance(graph, Graph):
        from webrank.io import load

        graph = load(graph)
    if not weight:
        graph = graph.unweighted()
    if graph.n == 0 and not allow_empty:
        raise ValueError("the graph has no nodes")
    return graph


def empty_result(graph: Graph, *, alpha: float, tol: float, criterion: str, dtype: Any,
                 method: str) -> PageRankResult:
    """The ranking of a graph without nodes: no scores, converged in 0 iterations (no
    residual), error bound 0; ``top`` and ``save`` give empty lists and files."""
    return PageRankResult(scores=np.zeros(0), iterations=0, converged=True,
                          residuals=np.zeros(0), elapsed=0.0, device="cpu",
                          dtype=dtype_name(dtype), method=method, criterion=criterion,
                          tol=tol, alpha=alpha, device_name=device_name("cpu"), graph=graph)


def check_weight(weight: Any, graph: Any = None) -> None:
    """``weight`` is True, False or None; anything else (networkx's ``weight="weight"``
    above all) is a ValueError saying where webrank's weights come from."""
    if weight is None or isinstance(weight, bool | np.bool_):
        return
    has = ""
    if isinstance(graph, Graph):
        has = (" (this graph has weights)" if graph.is_weighted
               else " (this graph has none)")
    what = "the name " if isinstance(weight, str) else ""
    raise ValueError(
        f"weight must be True, False or None, not {what}{weight!r}: webrank reads the "
        f"weights that the graph was built with{has}, given as Graph.from_dataframe(df, "
        "weight='w'), Graph.from_edges(src, dst, weights) or webrank.load(path, "
        "weighted=True); weight=True (the default) uses them, False or None ranks the "
        "links alone")


def check_scalar_args(alpha, tol, max_iter, criterion, dtype, device) -> None:
    """Every scalar argument, checked before any work (ValueError saying what is allowed)."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating):
        raise ValueError(f"alpha must be a number in [0, 1), not {alpha!r}")
    if not 0.0 <= float(alpha) < 1.0:
        raise ValueError(f"alpha must be in [0, 1), not {alpha!r}")
    if isinstance(tol, bool) or not isinstance(tol, int | float | np.floating):
        raise ValueError(f"tol must be a non-negative number, not {tol!r}")
    if not (float(tol) >= 0.0 and np.isfinite(tol)):
        raise ValueError(f"tol must be a non-negative number, not {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer):
        raise ValueError(f"max_iter must be a non-negative integer, not {max_iter!r}")
    if max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer, not {max_iter!r}")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}; not {criterion!r}")
    if dtype_name(dtype) not in DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64', not {dtype!r}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; not {device!r}")


def dtype_name(dtype: Any) -> str | None:
    """'float32'/'float64' for anything NumPy reads as one of them, else None."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


def not_a_node(graph: Graph, keys: list) -> str:
    """Says which of ``keys`` (the first) is not a node of ``graph``, printed as the
    caller gave it ('nope', not NumPy's ``np.str_('nope')``), and what the nodes are."""
    bad = next((key for key in keys if not is_node(graph, key)), keys[0])
    if graph.labels is None or graph.n == 0:
        nodes = f"the nodes are 0..{graph.n - 1}"
    else:
        first = graph.labels[0]
        first = first.item() if isinstance(first, np.generic) else first
        nodes = f"the nodes are labels such as {first!r}"
    return f"{bad!r} is not a node ({nodes})"


def is_node(graph: Graph, label: Any) -> bool:
    """Whether ``label`` is a node of ``graph`` (a label, or an id of an unlabelled graph)."""
    try:
        graph.index_of(np.asarray([label]))
    except KeyError:
        return False
    return True


def as_distribution(spec: Any, graph: Graph, what: str) -> np.ndarray | None:
    """A normalised float64 vector from an array or a {label: weight} mapping."""
    if spec is None:
        return None
    n = graph.n
    if isinstance(spec, Mapping):
        vec = np.zeros(n)
        if spec:
            keys = list(spec.keys())
            try:
                idx = graph.index_of(np.asarray(keys))
            except KeyError:
                raise ValueError(f"{what}: {not_a_node(graph, keys)}") from None
            vals = np.asarray(list(spec.values()), dtype=np.float64)
            np.add.at(vec, idx, vals)
    else:
        try:
            vec = np.array(spec, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise ValueError(f"{what} must be an array of numbers or a mapping") from None
        if vec.size != n:
            raise ValueError(f"{what} has {vec.size} entries; the graph has {n} nodes")
    if not np.all(np.isfinite(vec)):
        raise ValueError(f"{what} must be finite")
    if (vec < 0).any():
        raise ValueError(f"{what} must be non-negative")
    total = vec.sum()
    if total <= 0:
        raise ValueError(f"{what} must have a positive sum")
    return vec / total


