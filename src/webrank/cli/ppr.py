"""``webrank ppr``: personalized PageRank of many seed sets in one run.

Seeds file: one seed set per line, node labels separated by whitespace and/or commas
(``1 2 3``, ``1,2,3`` or ``1, 2 3``); UTF-8 text, plain, ``.gz`` or ``.bz2``. Blank lines
and lines starting with ``#`` or ``%`` are skipped; seed sets are numbered 0, 1, ... in
file order (the ``seed_set`` column of the output). Each seed set teleports evenly to its
nodes; a node listed twice counts once. Labels are integers unless ``--labels string``.
A line may hold any number of seeds (it is read a piece at a time), a label at most
:data:`~webrank.files.sources.MAX_LINE_BYTES`.
"""

from __future__ import annotations

import json
import sys
import time

import click

from webrank.backends import CRITERIA, DEVICES, DTYPES
from webrank.cli.common import (
    EXIT_NOT_CONVERGED,
    GraphSource,
    check_output,
    console,
    graph_source_options,
    load_graph,
)
from webrank.errors import GraphFormatError
from webrank.files.sources import TokenLines, field_text, line_text, open_binary


def read_seeds(path: str, graph, labels: str = "int") -> list[list]:
    """Seed sets of a seeds file (format in the module docstring), checked against ``graph``.

    Raises
    ------
    GraphFormatError
        A token that is not an integer (``labels="int"``) or not a node of the graph,
        or text that is not UTF-8 (a binary file), naming the file, the line and the
        token; a missing file, or one without seed sets.
    """
    sets: list[list] = []
    with open_binary(path) as f:
        for lineno, tokens in TokenLines(f, path, separators=b",", what="a seeds file"):
            nodes = []
            for raw in tokens:
                tok = field_text(raw, path, lineno)
                if labels == "string":
                    node = tok
                else:
                    try:
                        node = int(tok)
                    except ValueError:
                        raise GraphFormatError(f"node {_shown(tok)!r} is not an integer id "
                                               "(use --labels string for other labels)",
                                               path=path, line=lineno,
                                               text=line_text(path, lineno)) from None
                try:
                    graph.index_of([node])
                except KeyError:
                    raise GraphFormatError(f"node {_shown(tok)!r} is not in the graph",
                                           path=path, line=lineno,
                                           text=line_text(path, lineno)) from None
                nodes.append(node)
            sets.append(nodes)
    if not sets:
        raise GraphFormatError("no seed sets (one set of node labels per line)", path=path)
    return sets


def _shown(tok: str) -> str:
    return tok if len(tok) <= 40 else f"{tok[:24]}...({len(tok):,} characters)"


@click.command("ppr")
@click.argument("graph", type=click.Path())
@click.option("--seeds", "seeds_file", required=True, type=click.Path(dir_okay=False),
              help="Seed sets: one per line, node labels separated by spaces or commas.")
@click.option("--top", "top_k", default=20, show_default=True,
              help="Best nodes kept per seed set.")
@click.option("--alpha", default=0.85, show_default=True, help="Damping factor in [0, 1).")
@click.option("--tol", default=1e-6, show_default=True,
              help="Per seed set: stop when ||x_k - x_{k-1}|| < tol (under --criterion).")
@click.option("--max-iter", default=1000, show_default=True, help="Most iterations.")
@click.option("--criterion", type=click.Choice(CRITERIA), default="l1",
              show_default=True, help="Residual norm.")
@click.option("--device", type=click.Choice(DEVICES), default="auto",
              show_default=True, help="auto = the GPU when CuPy sees one.")
@click.option("--dtype", type=click.Choice(DTYPES), default="float64",
              show_default=True, help="Precision of the block gathered along edges.")
@click.option("--batch-size", type=int, default=None,
              help="Seed sets solved together (default: as many as fit in memory).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary and rows as JSON.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write seed_set, rank, node, score rows (.csv, .tsv, .parquet, .json).")
@graph_source_options
def command(graph, seeds_file, top_k, alpha, tol, max_iter, criterion, device, dtype,
            batch_size, as_json, output, source: GraphSource) -> None:
    """Personalized PageRank of GRAPH for every seed set of the --seeds file at once."""
    from webrank.personalized import ROW_SUFFIXES, personalized_pagerank

    if top_k < 1:
        raise click.BadParameter("must be at least 1", param_hint="--top")
    check_output(output, suffixes=ROW_SUFFIXES, inputs=[graph, seeds_file])
    if device != "cpu":  # CUDA's start and CuPy's imports overlap with the read
        from webrank.backends import start_gpu_warmup

        start_gpu_warmup()
    t0 = time.perf_counter()
    g = load_graph(graph, source, quiet=as_json)
    load_s = time.perf_counter() - t0
    seeds = read_seeds(seeds_file, g, source.options.labels)
    result = personalized_pagerank(
        g, seeds, alpha=alpha, top=top_k, tol=tol, max_iter=max_iter, criterion=criterion,
        device=device, dtype=dtype, batch_size=batch_size, raise_on_nonconvergence=False)
    if output:
        result.save(output)
    if as_json:
        rows = result.rows()
        doc = {**result.summary(), "load_s": load_s, "graph": g.name,
               "rows": [{"seed_set": int(s), "rank": int(r), "node": _py(nd),
                         "score": float(sc)}
                        for s, r, nd, sc in zip(rows["seed_set"], rows["rank"], rows["node"],
                                                rows["score"], strict=True)]}
        click.echo(json.dumps(doc))
    else:
        _print_table(result, seeds, load_s)
    if not result.all_converged:
        bad = int((~result.converged).sum())
        click.echo(f"webrank: {bad} of {result.k} seed sets not converged in {max_iter} "
                   f"iterations (worst residual {result.residuals.max():.3e} > tol {tol:.1e})",
                   err=True)
        sys.exit(EXIT_NOT_CONVERGED)


def _print_table(result, seeds, load_s) -> None:
    from rich.table import Table

    con = console()
    table = Table(title=f"Top {result.top_index.shape[1]} of {result.graph.n:,} pages for "
                        f"{result.k} seed sets")
    for name in ("seed set", "seeds", "rank", "node", "score"):
        table.add_column(name, justify="left" if name == "seeds" else "right")
    for c in range(result.k):
        shown = " ".join(map(str, seeds[c][:5])) + (" ..." if len(seeds[c]) > 5 else "")
        pairs = result.top(c, result.top_index.shape[1])
        for r, (node, score) in enumerate(pairs, 1):
            table.add_row(str(c) if r == 1 else "", shown if r == 1 else "", str(r),
                          str(node), f"{score:.6e}", end_section=r == len(pairs))
    con.print(table)
    con.print(
        f"{result.k} seed sets on {result.device} ({result.device_name}), {result.dtype}: "
        f"{int(result.converged.sum())} converged, iterations "
        f"{int(result.iterations.min())}-{int(result.iterations.max())}, batch "
        f"{result.batch_size}; compute {result.elapsed:.3f} s, setup "
        f"{result.setup_time:.3f} s, load {load_s:.3f} s")


def _py(x):
    return x.item() if hasattr(x, "item") else x
