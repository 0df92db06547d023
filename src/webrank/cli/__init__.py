"""The ``webrank`` command line (click + rich).

Exit codes: 0 success, 2 bad input or arguments, 3 not converged, 130 Ctrl-C, 143
SIGTERM, 129 SIGHUP. Errors are printed as one line on stderr, never as a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import click

from webrank.backends import CPU_ENGINES, CRITERIA, DEVICES, DTYPES, GPU_ENGINES
from webrank.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NOT_CONVERGED,
    GraphSource,
    check_output,
    console,
    graph_source_options,
    load_graph,
)
from webrank.errors import ConvergenceError, WebrankError
from webrank.files.atomic import Terminated, raising_on_termination
from webrank.result import SCORE_SUFFIXES


class _RunStatus:
    """A status line on stderr while a run works: the iteration and residual once a run
    has lasted ~2 s. ``self`` is the pagerank callback."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.start = time.perf_counter()
        self.status = None

    def _show(self, text: str) -> None:
        if self.status is None:
            self.status = console(stderr=True).status(text)
            self.status.start()
        else:
            self.status.update(text)

    def __call__(self, it: int, residual: float) -> None:
        if not self.enabled:
            return
        if self.status is None and time.perf_counter() - self.start < 2.0:
            return
        self._show(f"iteration {it}, residual {residual:.3e}")

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="webrank", message="webrank %(version)s")
def cli() -> None:
    """PageRank on web-scale graphs: fast on NVIDIA GPUs, correct on any CPU."""


class SolverOption(click.Option):
    """``--method``: free text checked by :func:`webrank.pagerank`, whose help names the
    registered solvers (read from :mod:`webrank.solvers` when the help is shown, so that
    starting the CLI imports no solver)."""

    @property
    def help(self) -> str:
        from webrank.solvers import solver_summary

        return f"Solver: {solver_summary()}."

    @help.setter
    def help(self, value: str | None) -> None:
        del value  # always the registry's


def _rank_options(f):
    opts = [
        click.option("--alpha", default=0.85, show_default=True, help="Damping factor in [0, 1)."),
        click.option("--tol", default=1e-6, show_default=True,
                     help="Stop when ||x_k - x_{k-1}|| < tol (absolute, under --criterion)."),
        click.option("--max-iter", default=1000, show_default=True, help="Most iterations."),
        click.option("--criterion", type=click.Choice(CRITERIA), default="l1",
                     show_default=True, help="Residual norm."),
        click.option("--device", type=click.Choice(DEVICES), default="auto",
                     show_default=True, help="auto = the GPU when CuPy sees one."),
        click.option("--dtype", type=click.Choice(DTYPES), default="float64",
                     show_default=True, help="Precision of the vector gathered along edges."),
        click.option("--engine", type=click.Choice(list(dict.fromkeys(
                         (*GPU_ENGINES, *CPU_ENGINES)))),
                     default="auto", show_default=True,
                     help="The power step. GPU: auto picks persistent (graphs in L2), "
                          "blocked (propagation blocking) or pull (the fused CSR kernel); "
                          "stream copies row chunks from host memory (graphs larger than "
                          "the GPU's memory). CPU: pull, or blocked "
                          "(cache-sized partitions; auto for long solves)."),
        click.option("--method", default="auto", show_default=True, cls=SolverOption),
        click.option("--top", "top_k", type=click.IntRange(min=0), default=10,
                     show_default=True, help="How many top pages to print."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the summary and top pages as JSON."),
        click.option("--certified", is_flag=True,
                     help="Also give a rigorous bound on the scores' L1 error and the "
                          "places of the top pages it guarantees (a tie group's pages "
                          "share a range of places; one more product with the matrix)."),
        click.option("--output", "-o", type=click.Path(), default=None,
                     help="Write all scores (.csv, .tsv, .parquet, .npy, .json); with "
                          "--distributed, a directory of per-rank Parquet parts."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@cli.command()
@click.argument("graph", type=click.Path())
@_rank_options
@click.option("--personalize", type=click.Path(dir_okay=False), default=None,
              help="File of teleport weights: one 'node [weight]' per line.")
@click.option("--gpus", type=click.IntRange(min=1), default=None,
              help="Rank on this many GPUs of this host (one row part each, NCCL); a graph "
                   "that one GPU holds and ranks faster stays on one (the line says why).")
@click.option("--force-gpus", is_flag=True,
              help="With --gpus N: split over N GPUs even where one would be faster.")
@click.option("--distributed", is_flag=True,
              help="One part per process started by mpirun, srun or torchrun: GRAPH is a "
                   "shard directory (convert --shards), a Parquet directory or an edge file; "
                   "-o is a directory of per-rank Parquet parts.")
@graph_source_options
def rank(graph, alpha, tol, max_iter, criterion, device, dtype, engine, method, top_k,
         as_json, certified, output, personalize, gpus, force_gpus, distributed,
         source: GraphSource) -> None:
    """Rank the pages of GRAPH and print the top ones."""
    if distributed:
        if personalize or gpus or certified:
            raise click.BadParameter("--distributed takes no --personalize, --gpus or "
                                     "--certified (one part per process)")
        if not source.options.directed:
            raise click.BadParameter("--distributed reads directed edges only; write the "
                                     "undirected graph's shards first (convert --undirected "
                                     "--shards P)", param_hint="--undirected")
        if source.format is not None:
            raise click.BadParameter("--distributed reads shard directories and edge files "
                                     "by their names (.txt, .csv, .parquet...)",
                                     param_hint="--format")
        check_output(output, directory=True, inputs=[graph])
        _run_distributed(graph, alpha=alpha, tol=tol, max_iter=max_iter,
                         criterion=criterion, device=device, dtype=dtype, method=method,
                         engine=engine, top_k=top_k, as_json=as_json, output=output,
                         options=source.options)
        return
    check_output(output, suffixes=SCORE_SUFFIXES, inputs=[graph, personalize])
    gpu_read = False
    if device != "cpu":  # CUDA's start and CuPy's imports overlap with the read
        from webrank.backends import gpu_importable, resolve_device, start_gpu_warmup

        start_gpu_warmup()
        # the graph built where it will run (parsed on the host, its CSR on the card);
        # asked for by name, the read starts at once, without waiting for the GPU's probe
        gpu_read = (device in ("gpu", "auto") and not personalize and not gpus
                    and ((device == "gpu" and gpu_importable())
                         or resolve_device(device, early=True) == "gpu"))
        if gpu_read:
            from webrank.io.options import ReadOptions

            source = GraphSource(source.format, ReadOptions.of(source.options, device="gpu"))
    t0 = time.perf_counter()
    try:
        g = load_graph(graph, source, quiet=as_json)
    except Exception:
        if gpu_read:  # where the GPU is what failed, its probe's one-line reason
            resolve_device(device)
        raise
    load_s = time.perf_counter() - t0
    pers = _read_personalization(personalize, source.options.labels, g) if personalize \
        else None
    extra = {"gpus": gpus, "force_gpus": force_gpus} if gpus and gpus > 1 else {}
    _run_and_report(g, load_s, alpha=alpha, tol=tol, max_iter=max_iter, criterion=criterion,
                    device=device, dtype=dtype, engine=engine, method=method, top_k=top_k,
                    as_json=as_json, certified=certified, output=output,
                    personalization=pers, **extra)


def _run_distributed(source: str, *, top_k: int, as_json: bool, output: str | None,
                     device: str, **params: Any) -> None:
    """``rank --distributed``: this process's part of a partitioned run (mpirun, srun or
    torchrun start one per part); rank 0 prints the top pages."""
    from webrank.backends import resolve_device
    from webrank.distributed.inputs import write_scores
    from webrank.distributed.run import distributed_pagerank, make_comm

    device = resolve_device(device)
    t_comm = time.perf_counter()
    comm, devices = make_comm(device)
    t_comm = time.perf_counter() - t_comm
    try:
        r = distributed_pagerank(source, device=device, comm=comm, devices=devices,
                                 top=top_k, **params)
        t_write = time.perf_counter()
        if output:
            write_scores(output, comm, r.row_begin, r.scores, r.info.get("labels"))
        t_write = time.perf_counter() - t_write
    except (WebrankError, ValueError, OSError, KeyError, MemoryError) as exc:
        # one line, then stop every rank: the others may be waiting in a collective, and
        # MPI's finalize at exit would wait for them
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        click.echo(f"webrank: {msg}", err=True)
        comm.abort(EXIT_BAD_INPUT)  # returns only in a run of one process
        raise SystemExit(EXIT_BAD_INPUT) from None
    if comm.rank != 0:
        return
    if as_json:
        click.echo(json.dumps({**r.summary(), "comm_s": t_comm, "write_s": t_write,
                               "top": [{"node": k, "score": s} for k, s in r.top]},
                              default=str))
        return
    for i, (node, score) in enumerate(r.top, 1):
        click.echo(f"{i:>4}  {node}  {score:.6e}")
    state = "converged" if r.converged else "NOT converged"
    click.echo(f"{r.method} on {r.size} {device} rank(s), {r.n:,} nodes: {state} in "
               f"{r.iterations} iterations, residual {r.residual:.3e}; compute "
               f"{r.elapsed:.3f} s, read {r.setup_time:.3f} s"
               + (f"; wrote {output}/part-*.parquet" if output else ""))
    if not r.converged:
        sys.exit(EXIT_NOT_CONVERGED)


@cli.command()
@_rank_options
def demo(alpha, tol, max_iter, criterion, device, dtype, engine, method, top_k, as_json,
         certified, output) -> None:
    """Rank the bundled web graph (SNAP web-NotreDame, 325,729 pages, 1.5M links)."""
    from webrank.datasets import path

    check_output(output, suffixes=SCORE_SUFFIXES)
    t0 = time.perf_counter()
    g = load_graph(str(path()), quiet=True)
    load_s = time.perf_counter() - t0
    _run_and_report(g, load_s, alpha=alpha, tol=tol, max_iter=max_iter, criterion=criterion,
                    device=device, dtype=dtype, engine=engine, method=method, top_k=top_k,
                    as_json=as_json, certified=certified, output=output,
                    personalization=None)


def _run_and_report(g, load_s, *, top_k, as_json, output, engine="auto", certified=False,
                    **params) -> None:
    from webrank import pagerank

    if engine != "auto":  # a device refuses the engines it lacks with a one-line error
        params["engine"] = engine

    status = _RunStatus(enabled=not as_json and sys.stderr.isatty())
    try:
        result = pagerank(g, raise_on_nonconvergence=False, callback=status, **params)
    finally:
        status.close()
    if output:
        result.save(output)
    top = result.top(top_k)
    certain = None
    if certified:
        t = time.perf_counter()
        certain = result.certified_top(top_k)
        certify_s = time.perf_counter() - t
    if g.n == 0 and not as_json:  # nothing ranked: one line, no table
        click.echo(f"{Path(g.name or 'the graph').name}: no nodes, nothing to rank"
                   + (f"; wrote {output} (no rows)" if output else ""))
        return
    if as_json:
        doc = {**result.summary(), "load_s": load_s, "graph": g.name,
               "edges": g.num_edges, "top": [{"node": k, "score": s} for k, s in top]}
        if certain is not None:
            doc.update(error_bound=result.error_bound, certify_s=certify_s,
                       certified_top=[{"node": p.node, "score": p.score, "first": p.first,
                                       "last": p.last} for p in certain])
        click.echo(json.dumps(doc))
    else:
        _print_ranking(result, top, g, load_s, certain)
    if not result.converged:
        click.echo(
            f"webrank: not converged in {result.iterations} iterations "
            f"(residual {result.residual:.3e} > tol {result.tol:.1e})", err=True)
        sys.exit(EXIT_NOT_CONVERGED)


def _print_ranking(result, top, g, load_s, certain=None) -> None:
    from rich.table import Table

    con = console()
    table = Table(title=f"Top {len(top)} of {g.n:,} pages — {Path(g.name or '').name}")
    table.add_column("rank", justify="right")
    table.add_column("node", justify="right")
    table.add_column("score", justify="right")
    if certain is not None:
        table.add_column("certified place", justify="center")
    for i, (node, score) in enumerate(top, 1):
        mark = []
        if certain is not None:
            p = certain[i - 1] if i <= len(certain) else None
            mark = ["" if p is None else str(p.first) if p.certain_place
                    else f"{p.first}-{p.last}"]
        table.add_row(str(i), str(node), f"{score:.6e}", *mark)
    con.print(table)
    if certain is not None:
        bound = (f"error bound (L1 distance to the exact PageRank): "
                 f"{result.error_bound:.3e}; ")
        tied = sum(not p.certain_place for p in certain)
        if not certain:
            con.print(bound + "no top places certified (scores within the bound of each "
                      "other reach past the list; a tighter --tol narrows the bound)")
        else:
            con.print(bound + f"the pages ranked 1-{len(certain)} are the exact top "
                      f"{len(certain)}" + (f"; pages sharing a range of places ({tied} "
                                           "here) are certain as a set, their order "
                                           "unknown" if tied else ", each in its place"))
    state = "converged" if result.converged else "NOT converged"
    engine = f" {result.info['engine']} engine" if "engine" in result.info else ""
    con.print(
        f"{result.method} on {result.device} ({result.device_name}{engine}), {result.dtype}: "
        f"{state} in {result.iterations} iterations, {result.criterion} residual "
        f"{result.residual:.3e}; compute {result.elapsed:.3f} s, "
        f"setup {result.setup_time:.3f} s, load {load_s:.3f} s"
    )
    if "gpus_reason" in result.info:
        con.print(f"asked for {result.info['gpus_asked']} GPUs: ran on "
                  f"{result.info['gpus_reason']}")


def _read_personalization(path: str, labels: str, graph: Any) -> dict:
    """``node [weight]`` per line (weight 1 if absent); ``#`` comments; UTF-8 text, plain,
    ``.gz`` or ``.bz2``; binary data, lines over the cap, a weight that is not a finite
    number >= 0 and a node that is not one of ``graph``'s refused (GraphFormatError
    naming the file and line)."""
    import math

    import numpy as np

    from webrank.errors import GraphFormatError
    from webrank.files.sources import TokenLines, field_text, line_text, open_binary

    out: dict[Any, float] = {}
    first_line: dict[Any, int] = {}
    with open_binary(path) as f:
        for lineno, tok in TokenLines(f, path, what="a personalization file"):
            text = [field_text(t, path, lineno) for t in tok[:3]]
            if len(tok) > 2:
                raise GraphFormatError("expected 'node [weight]'", path=path, line=lineno,
                                       text=line_text(path, lineno))
            try:
                node = text[0] if labels == "string" else int(text[0])
                w = float(text[1]) if len(tok) == 2 else 1.0
            except ValueError:
                raise GraphFormatError("expected 'node [weight]' with numbers", path=path,
                                       line=lineno, text=line_text(path, lineno)) from None
            if not (math.isfinite(w) and w >= 0):
                raise GraphFormatError("a weight must be a finite number >= 0", path=path,
                                       line=lineno, text=line_text(path, lineno))
            out[node] = out.get(node, 0.0) + w
            first_line.setdefault(node, lineno)
    if not out:
        raise GraphFormatError("no personalization entries", path=path)
    nodes = list(out)
    if graph.labels is None:
        ids = np.asarray(nodes) if labels != "string" else np.full(len(nodes), -1)
        missing = (ids < 0) | (ids >= graph.n)
    else:
        missing = graph.lookup(np.asarray(nodes, dtype=object if labels == "string"
                                          else None))[1] < 0
    if np.any(missing):  # the dict keeps the order the nodes first came in: the file's
        node = nodes[int(np.argmax(missing))]
        raise GraphFormatError(f"{node!r} is not a node of {graph.name or 'the graph'}",
                               path=path, line=first_line[node],
                               text=line_text(path, first_line[node]))
    return out


@cli.command()
@click.argument("graph", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@graph_source_options
def info(graph, as_json, source: GraphSource) -> None:
    """Print nodes, edges, dangling nodes, self-loops and degree statistics of GRAPH."""
    import numpy as np

    t0 = time.perf_counter()
    g = load_graph(graph, source)
    load_s = time.perf_counter() - t0
    indeg, outdeg = g.in_degree, g.out_degree
    stats = {
        "graph": g.name, "nodes": g.n, "edges": g.num_edges, "weighted": g.is_weighted,
        "dangling": int(np.count_nonzero(g.dangling_mask)), "self_loops": g.num_self_loops,
        "isolated": int(np.count_nonzero((indeg == 0) & (outdeg == 0))),
        "in_degree_max": int(indeg.max(initial=0)), "out_degree_max": int(outdeg.max(initial=0)),
        "degree_mean": g.num_edges / max(g.n, 1),
        "in_degree_median": float(np.median(indeg)) if g.n else 0.0,
        "out_degree_median": float(np.median(outdeg)) if g.n else 0.0,
        "load_s": load_s,
    }
    if as_json:
        click.echo(json.dumps(stats))
        return
    from rich.table import Table

    table = Table(title=str(g.name), show_header=False)
    for k, v in stats.items():
        table.add_row(k.replace("_", " "), f"{v:,.3f}" if isinstance(v, float) else f"{v:,}"
                      if isinstance(v, int) and not isinstance(v, bool) else str(v))
    console().print(table)


@cli.command()
@click.argument("graph", type=click.Path())
@click.argument("out", type=click.Path())
@click.option("--shards", type=click.IntRange(min=1), default=None,
              help="Write OUT as a directory of this many row shards balanced by links, "
                   "one per rank of a partitioned run (rank --distributed).")
@graph_source_options
def convert(graph, out, shards, source: GraphSource) -> None:
    """Write GRAPH as webrank's binary cache OUT (.npz), fast to load again, or as a
    directory of shards (--shards P)."""
    from webrank.io import save_graph

    check_output(out, suffixes=None if shards else (".npz",), directory=shards is not None,
                 inputs=[graph], param_hint="OUT")
    t0 = time.perf_counter()
    g = load_graph(graph, source)
    t1 = time.perf_counter()
    if shards is not None:
        from webrank.distributed.inputs import write_shards

        write_shards(g, out, shards)
        click.echo(f"wrote {out}/: {shards} shards of {g.n:,} nodes, {g.num_edges:,} edges "
                   f"(parsed in {t1 - t0:.2f} s, written in {time.perf_counter() - t1:.2f} s)")
        return
    save_graph(g, out)
    click.echo(f"wrote {out}: {g.n:,} nodes, {g.num_edges:,} edges "
               f"(parsed in {t1 - t0:.2f} s, written in {time.perf_counter() - t1:.2f} s)")


@cli.command()
@click.argument("scores_a", type=click.Path())
@click.argument("reference", type=click.Path())
@click.option("--top", "k", default=100, show_default=True, help="Size of the top lists.")
@click.option("--tie-tol", type=click.FloatRange(min=0), default=None,
              help="Relative tolerance within which reference scores are tied "
                   "[default: 1e-12; 0: exact ties only].")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def compare(scores_a, reference, k, tie_tol, as_json) -> None:
    """Compare the score file SCORES_A with REFERENCE (files written by `rank -o`).

    Prints the rank-correctness measures (% of nodes in a wrong rank position: outside the
    positions their group of tied reference scores occupies; the strict count, with
    ties ordered by node index, beside it; mean and variance of the value
    displacement), Kendall tau, the top-k overlap and the L1/L2/Linf distances.
    """
    import numpy as np

    from webrank.metrics import TIE_TOL
    from webrank.metrics import compare as compare_scores
    from webrank.result import load_scores

    la, a = load_scores(scores_a)
    lb, b = load_scores(reference)
    if la.shape != lb.shape or not np.array_equal(np.sort(la), np.sort(lb)):
        raise click.BadParameter("the two files rank different node sets")
    # align both on the reference's node order
    a = a[np.argsort(la, kind="stable")][np.argsort(np.argsort(lb, kind="stable"))]
    result = compare_scores(a, b, k=k,
                            tie_tol=TIE_TOL if tie_tol is None else tie_tol).to_dict()
    if as_json:
        click.echo(json.dumps(result))
        return
    from rich.table import Table

    table = Table(title=f"{scores_a} vs {reference}", show_header=False)
    for key, value in result.items():
        table.add_row(key.replace("_", " "), f"{value:.6g}" if isinstance(value, float)
                      else str(value))
    console().print(table)


@cli.command()
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Compiling processes at once (default: one per CPU).")
@click.option("--force", is_flag=True,
              help="Run the GPU paths even where every kernel is prebuilt for this GPU.")
def warmup(jobs, force) -> None:
    """Compile webrank's CUDA kernels ahead, on a GPU for which none is prebuilt.

    The CPU kernels and webrank's CUDA kernels for sm_80 and sm_90 GPUs (A100, A10, L4,
    RTX 30xx/40xx, H100, H200) are compiled with the package: there, nothing compiles on
    a first call and this has nothing to do. On other GPUs each kernel is compiled on its
    first use, once per machine; this does it ahead (a container image's build step).
    """
    from webrank.backends import resolve_device
    from webrank.kernels import cuda_loader
    from webrank.warmup import fill_caches

    resolve_device("gpu")  # a one-line error where the GPU cannot run
    arch = cuda_loader.device_coverage()
    if arch is not None and not force:
        click.echo(f"nothing to compile: this GPU runs webrank's prebuilt kernels ({arch})")
        return

    def report(task: str, seconds: float, ok: bool) -> None:
        click.echo(f"  {task:18} {seconds:6.1f} s{'' if ok else '  FAILED'}", err=True)

    t0 = time.perf_counter()
    results = fill_caches(jobs=jobs, report=report, force=True)
    failed = [t for t, r in results.items() if not r["ok"]]
    for task in failed:
        last = results[task]["error"].strip().splitlines()[-1:] or ["(no output)"]
        click.echo(f"webrank: warm-up of {task} failed: {last[0]}", err=True)
    click.echo(f"compiled {len(results) - len(failed)} of {len(results)} kernel groups in "
               f"{time.perf_counter() - t0:.1f} s")
    if failed:
        sys.exit(1)


@cli.command()
@click.argument("kind")
@click.argument("size", type=int)
@click.option("--out", "-o", required=True, type=click.Path(),
              help="Output edge list (.txt, .tsv, .csv, optionally .gz) or .npz cache; "
                   "with --shards, a directory.")
@click.option("--seed", type=int, default=None, help="Random seed.")
@click.option("--param", "-p", multiple=True, metavar="NAME=VALUE",
              help="Generator parameter, e.g. -p avg_degree=5 (repeatable).")
@click.option("--shards", type=click.IntRange(min=1), default=None,
              help="rmat only: write P row shards (as convert --shards) without ever "
                   "holding the whole graph, for `rank --distributed`.")
@click.option("--device", type=click.Choice(["cpu", "gpu"]), default="cpu",
              show_default=True, help="With --shards: where the edges are drawn and "
                                      "each piece's CSR built.")
def generate(kind, size, out, seed, param, shards, device) -> None:
    """Write a random graph: KIND er|ws|scale-free|rmat|web, SIZE nodes (rmat, web: the
    scale, log2 of the node count).

    Erdős–Rényi, Watts–Strogatz small world, Bollobás scale free (as networkx's
    scale_free_graph), R-MAT with Graph500 parameters, and a web-like graph in crawl
    order (power-law degrees, 90% of the links to nearby ids, 20% of the pages without
    out-links; -p local=..., -p mean_offset=..., -p dangling=...).
    """
    from webrank.generate import generate as make
    from webrank.graph import Graph
    from webrank.io import save_graph, write_edgelist

    if shards is not None:
        _generate_shards(kind, size, out, seed, param, shards, device)
        return
    if os.path.isdir(out):
        raise click.BadParameter(f"{out!r} is a directory: name a file (a directory of "
                                 "shards takes --shards)", param_hint="'--out' / '-o'")
    params: dict[str, Any] = {}
    for item in param:
        name, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--param")
        try:
            params[name] = int(value)
        except ValueError:
            try:
                params[name] = float(value)
            except ValueError:
                params[name] = value
    t0 = time.perf_counter()
    src, dst, n = make(kind, size, seed=seed, **params)
    g = Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
    t1 = time.perf_counter()
    if out.endswith(".npz"):
        save_graph(g, out)
    else:
        write_edgelist(g, out)
    click.echo(f"wrote {out}: {g.n:,} nodes, {g.num_edges:,} distinct edges "
               f"(generated in {t1 - t0:.2f} s, written in {time.perf_counter() - t1:.2f} s)")


def _generate_shards(kind: str, scale: int, out: str, seed: int | None,
                     param: tuple[str, ...], shards: int, device: str) -> None:
    """``generate rmat SCALE --shards P -o DIR``: R-MAT as row shards, with a progress
    bar (webrank.distributed.generate.write_rmat_shards)."""
    from rich.progress import Progress

    from webrank.distributed.generate import write_rmat_shards

    if kind != "rmat":
        raise click.BadParameter(f"--shards writes R-MAT graphs only, not {kind!r}",
                                 param_hint="KIND")
    if param:
        raise click.BadParameter("--shards takes no generator parameters",
                                 param_hint="--param")
    check_output(out, directory=True, param_hint="'--out' / '-o'")
    if device == "gpu":
        from webrank.backends import resolve_device

        resolve_device("gpu")  # one line where no GPU is usable
    with Progress(console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("generating", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        info = write_rmat_shards(scale, out, shards, seed=seed or 0, device=device,
                                 progress=progress)
    click.echo(f"wrote {out}: {shards} shards, {info['n']:,} nodes, {info['edges']:,} "
               f"distinct edges (generated in {info['generate_s']:.2f} s, built in "
               f"{info['build_s']:.2f} s, written in {info['write_s']:.2f} s)")


# commands kept in modules of their own: each defines a click command named ``command``
_COMMAND_MODULES = (
    "webrank.cli.bench",
    "webrank.cli.ppr",
)


def _add_commands() -> None:
    from importlib import import_module

    for module in _COMMAND_MODULES:
        cli.add_command(import_module(module).command)


_add_commands()


def _interrupted(message: str, code: int = EXIT_INTERRUPTED) -> None:
    """Ctrl-C (exit 130), SIGTERM or SIGHUP (128 + its number): one line, exit now.
    Every file being written has been removed while the interrupt unwound (atomic
    writes); leaving at once keeps a second interrupt, or one that a worker thread
    (a compiled kernel's, pyarrow's) still holds, from ending the process by the signal itself
    instead of with the exit code."""
    click.echo(message, err=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one ``webrank: warning:`` line on stderr (no source location)."""
    click.echo(f"webrank: warning: {message}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, mapping errors to one line on stderr and an exit code."""
    warnings.showwarning = _show_warning
    try:
        # SIGTERM and SIGHUP unwind like Ctrl-C (temporary files removed), for the whole
        # run: caught below as one line and exit status 128 + the signal's number
        with raising_on_termination():
            cli.main(args=argv, prog_name="webrank", standalone_mode=False)
    except Terminated as exc:
        _interrupted(f"webrank: {exc}", 128 + exc.signum)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _interrupted("webrank: aborted")
    except click.ClickException as exc:
        click.echo(f"webrank: {exc.format_message()}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except ConvergenceError as exc:
        click.echo(f"webrank: {exc}", err=True)
        sys.exit(EXIT_NOT_CONVERGED)
    except (WebrankError, ValueError, OSError, KeyError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        click.echo(f"webrank: {msg}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except MemoryError as exc:  # an allocation failed (host, or a GPU's through CuPy)
        msg = str(exc).splitlines()[0] if str(exc) else "an allocation failed"
        click.echo(f"webrank: out of memory: {msg}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        _interrupted("webrank: interrupted")


#: modules whose presence means the process must end through the interpreter's exit
#: (MPI's finalize, torch.distributed's shutdown run at exit)
_EXIT_HOOKED = ("mpi4py.MPI", "torch.distributed")


def run() -> None:
    """The console script (``webrank``, ``python -m webrank``): :func:`main`, then, after
    a command that succeeded, an immediate exit. The outputs are written and closed by
    then (each through a temporary file and a rename), so what the interpreter's own
    exit would add is teardown: freeing the graph, the GPU's memory pool and the CUDA
    context, 0.3-0.4 s of a GPU run of a 131M-link graph. Processes of a partitioned
    run exit the usual way (MPI and torch.distributed finalize at exit)."""
    main()
    if any(name in sys.modules for name in _EXIT_HOOKED):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)
