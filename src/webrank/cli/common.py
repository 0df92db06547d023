"""What every ``webrank`` command shares: the graph-reading options, the graph load with
its progress bar, the checks of an output path made before any work, the console.

Exit codes: :data:`EXIT_OK` success, :data:`EXIT_BAD_INPUT` bad input or arguments,
:data:`EXIT_NOT_CONVERGED` not converged, :data:`EXIT_INTERRUPTED` Ctrl-C; 128 + the
signal's number when SIGTERM (143) or SIGHUP (129) stopped the run.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from webrank.errors import OverwriteError
from webrank.files.atomic import check_target
from webrank.io import FORMATS
from webrank.io.options import ReadOptions

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_CONVERGED",
    "EXIT_OK",
    "GraphSource",
    "check_output",
    "console",
    "graph_source_options",
    "load_graph",
]

EXIT_OK, EXIT_BAD_INPUT, EXIT_NOT_CONVERGED, EXIT_INTERRUPTED = 0, 2, 3, 130

#: files over this size are loaded with a progress bar
_PROGRESS_BYTES = 20 * 2**20


@dataclass(frozen=True)
class GraphSource:
    """How a command reads its graph: ``--format`` and the :class:`ReadOptions` of
    ``--labels``, ``--node-ids``, ``--header/--no-header``, ``--delimiter``,
    ``--columns``, ``--unweighted`` and ``--undirected``."""

    format: str | None = None
    options: ReadOptions = field(default_factory=ReadOptions)


#: ``--format``'s help, read from the formats ``webrank.load`` knows (a format added
#: there is offered here without another list to keep)
_FORMAT_HELP = ("Input format (default: from the file's suffix, after .gz/.bz2): "
                + ", ".join(f"{name} ({' '.join(suffixes)})"
                            for name, suffixes in FORMATS.items()) + ".")

_SOURCE_OPTIONS = [
    click.option("--format", "fmt", default=None, help=_FORMAT_HELP),
    click.option("--labels", type=click.Choice(["int", "string"]), default="int",
                 show_default=True,
                 help="Node ids: non-negative integers, or any token (URLs, names)."),
    click.option("--node-ids", type=click.Choice(["appear", "range"]), default="appear",
                 show_default=True,
                 help="Nodes: the ids that occur in edges (as networkx), or 0..max id."),
    click.option("--header/--no-header", default=None,
                 help="Edge lists: the first line is (not) a header. Default: a header "
                      "only where it cannot be an edge, or names columns that are no "
                      "node's label (said on stderr)."),
    click.option("--delimiter", default=None, metavar="CHAR",
                 help="Edge lists: the field separator, one character or tab, comma, "
                      "space, semicolon, pipe. Default: detected (tab, comma, else "
                      "whitespace). .csv files may quote fields (RFC 4180)."),
    click.option("--columns", default=None, metavar="SRC,DST[,WEIGHT]",
                 help="Parquet files: the source, target and weight columns' names "
                      "(a weight column named here must exist). Default: src,dst,weight "
                      "(the weight used where present)."),
    click.option("--unweighted", is_flag=True, help="Ignore a weight column."),
    click.option("--undirected", is_flag=True,
                 help="An undirected graph: each edge links both ways (a self-loop once), "
                      "as networkx ranks an nx.Graph."),
]


def graph_source_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the graph-reading options to a command; it receives them as one
    ``source: GraphSource`` keyword."""

    @functools.wraps(f)
    def command(*args: Any, fmt: str | None, labels: str, node_ids: str,
                header: bool | None, delimiter: str | None, columns: str | None,
                unweighted: bool, undirected: bool, **kwargs: Any) -> Any:
        names = ReadOptions.columns if columns is None else tuple(
            c.strip() for c in columns.split(","))
        if any(not c for c in names) or len(names) not in (2, 3):
            raise click.BadParameter(f"{columns!r}: give two or three column names, "
                                     "comma-separated (SRC,DST or SRC,DST,WEIGHT)",
                                     param_hint="--columns")
        try:
            options = ReadOptions(labels=labels, node_ids=node_ids, header=header,  # type: ignore[arg-type]
                                  delimiter=delimiter, columns=names,
                                  # a weight column named on purpose must be there
                                  weighted=False if unweighted else (
                                      True if columns and len(names) == 3 else None),
                                  directed=not undirected)
        except ValueError as e:  # (the one option a click type does not check)
            raise click.BadParameter(str(e), param_hint="--delimiter") from None
        return f(*args, source=GraphSource(fmt, options), **kwargs)

    for opt in reversed(_SOURCE_OPTIONS):
        command = opt(command)
    return command


def console(stderr: bool = False) -> Any:
    """A rich console (stdout, or stderr for progress and status lines)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def load_graph(path: str, source: GraphSource | None = None, quiet: bool = False) -> Any:
    """Load a graph, with a progress bar on stderr for files over ~20 MB."""
    from webrank.io import detect_format, load

    source = source or GraphSource()
    p = Path(path)
    if p.exists() and tuple(source.options.columns) != tuple(ReadOptions.columns):
        fmt = source.format or detect_format(path)
        if fmt != "parquet":  # (a text edge list's fields are its columns, in order)
            raise click.BadParameter(f"names the columns of Parquet edge tables; {p.name} "
                                     f"is read as {fmt} (source, target [, weight] are its "
                                     "first fields)", param_hint="--columns")
    size = p.stat().st_size if p.is_file() else 0
    if quiet or size < _PROGRESS_BYTES:
        return load(path, source.format, options=source.options)
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TimeRemainingColumn(), console=console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task(f"loading {p.name}", total=size)
        options = ReadOptions.of(
            source.options,
            progress=lambda done, total: bar.update(task, completed=done, total=total))
        return load(path, source.format, options=options)


def check_output(
    output: str | None,
    *,
    suffixes: Iterable[str] | None = None,
    directory: bool = False,
    inputs: Iterable[str | None] = (),
    param_hint: str = "'--output' / '-o'",
) -> None:
    """Refuse an output path before any work is done, so that a run never ends in an
    error after the solve, and never overwrites what it reads.

    Parameters
    ----------
    output : str or None
        The path (None: nothing to check).
    suffixes : iterable of str, optional
        The file suffixes the writer knows (lower case, with the dot).
    directory : bool, default False
        The output is a directory of parts (created if absent) rather than a file.
    inputs : iterable of str or None
        The files and directories the command reads: the output may be none of them
        (hard and symbolic links included), nor lie inside an input directory, nor
        (``directory``) hold one (:func:`webrank.files.atomic.check_target`, the guard
        every writer goes through).

    Raises
    ------
    click.BadParameter
        One line saying what is wrong and that nothing was written.
    """
    if not output:
        return

    def refuse(message: str) -> click.BadParameter:
        return click.BadParameter(f"{output!r}: {message}", param_hint=param_hint)

    try:
        check_target(output, inputs, directory=directory)
    except OverwriteError as exc:
        raise refuse(exc.reason) from None
    out = os.path.realpath(output)
    if directory:
        if os.path.exists(output) and not os.path.isdir(output):
            raise refuse("exists and is not a directory (a directory of parts is written)")
    else:
        if os.path.isdir(output):
            raise refuse("is a directory (a file is written; directories of parts are "
                         "for --distributed)")
        ext = os.path.splitext(output)[1].lower()
        if suffixes is not None and ext not in suffixes:
            known = ", ".join(sorted(suffixes))
            raise refuse(f"unknown output type {ext or '(no suffix)'!r}; use {known}")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise refuse(f"its folder {os.path.dirname(output) or '.'!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise refuse(f"cannot write in its folder {os.path.dirname(output) or '.'!r} "
                     "(permission denied)")
