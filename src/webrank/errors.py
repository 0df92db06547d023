"""Exceptions raised by webrank.

A small hierarchy so that callers can catch everything webrank raises on purpose
(:class:`WebrankError`) or one kind of problem at a time. Each error also derives from
the built-in exception users would expect (``ValueError`` for bad input, ...).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConvergenceError",
    "DeviceMemoryError",
    "DeviceUnavailableError",
    "GraphFormatError",
    "HostMemoryError",
    "InputWarning",
    "OverwriteError",
    "WebrankError",
]


class WebrankError(Exception):
    """Base class of every error webrank raises on purpose."""


class GraphFormatError(WebrankError, ValueError):
    """A graph file (or array input) is malformed.

    Parameters
    ----------
    message : str
        What is wrong and, where possible, how to fix it.
    path : str, optional
        The file concerned.
    line : int, optional
        1-based line number of the offending text.
    text : str, optional
        The offending text (shortened to 80 characters).

    Examples
    --------
    >>> import webrank
    >>> try:
    ...     webrank.Graph.from_edges([0, -1], [1, 0], name="links.txt")
    ... except webrank.GraphFormatError as e:
    ...     print(e.path)
    links.txt
    """

    def __init__(
        self,
        message: str,
        *,
        path: Any = None,
        line: int | None = None,
        text: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        if text is not None and len(text) > 80:
            text = text[:77] + "..."
        self.text = text
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path
            if line is not None:
                where += f", line {line}"
            where += ": "
        shown = f" (got {text!r})" if text is not None else ""
        super().__init__(f"{where}{message}{shown}")


class OverwriteError(WebrankError, ValueError):
    """A writer was pointed at a file it must not replace: one that webrank has read in
    this process (by any name: relative, absolute, a symbolic or hard link), or, for the
    CLI, one of the command's inputs. Raised before anything is written.

    Parameters
    ----------
    reason : str
        What the target is and what to do instead.
    path : str or os.PathLike
        The refused target, as given.

    Examples
    --------
    >>> import os, tempfile
    >>> import webrank
    >>> links = os.path.join(tempfile.mkdtemp(), "links.txt")
    >>> with open(links, "w") as f:
    ...     _ = f.write("0 1\\n1 2\\n2 0\\n")
    >>> r = webrank.pagerank(webrank.load(links), device="cpu")
    >>> try:  # doctest: +NORMALIZE_WHITESPACE
    ...     r.save(links)  # the scores over the edge list they came from
    ... except webrank.OverwriteError as e:
    ...     print(e.reason.replace(links, "links.txt"))  # (a temporary folder's name)
    is the input 'links.txt' (read earlier); writing it would destroy the input (choose
    another name)
    """

    def __init__(self, reason: str, *, path: Any) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class ConvergenceError(WebrankError, RuntimeError):
    """The solver did not reach the requested tolerance within ``max_iter``.

    The last iterate is kept in :attr:`result` (a :class:`webrank.PageRankResult` with
    ``converged=False``), so the work is not lost.

    Examples
    --------
    >>> import webrank
    >>> g = webrank.generate_graph("rmat", 8, seed=1)
    >>> try:
    ...     webrank.pagerank(g, tol=1e-12, max_iter=3, device="cpu")
    ... except webrank.ConvergenceError as e:
    ...     e.result.converged, e.result.iterations
    (False, 3)
    """

    def __init__(self, result: Any) -> None:
        self.result = result
        last = result.residuals[-1] if len(result.residuals) else float("nan")
        super().__init__(
            f"PageRank did not converge in {result.iterations} iterations "
            f"(last {result.criterion} residual {last:.3e} > tol {result.tol:.1e}); "
            "raise max_iter, loosen tol, or pass raise_on_nonconvergence=False "
            "to get the last iterate"
        )


class DeviceUnavailableError(WebrankError, RuntimeError):
    """A GPU was requested but none can be used; the message says why (no CuPy, a CuPy
    that does not match the driver, no device).

    Examples
    --------
    >>> import webrank
    >>> g = webrank.generate_graph("rmat", 8, seed=1)
    >>> try:
    ...     r = webrank.pagerank(g, device="gpu", tol=1e-8)
    ... except webrank.DeviceUnavailableError:  # this machine has no usable GPU
    ...     r = webrank.pagerank(g, device="cpu", tol=1e-8)
    >>> r.converged
    True
    """


class DeviceMemoryError(WebrankError, MemoryError):
    """The graph does not fit in the free memory of the GPU; ``needed`` and ``free`` say
    by how much (bytes). Raised before anything is allocated.

    Examples
    --------
    The streamed engine keeps the links in host memory and sends them through the GPU
    in chunks, so a graph larger than the card still runs there:

    >>> import webrank
    >>> g = webrank.generate_graph("rmat", 8, seed=1)
    >>> if webrank.gpu_available():
    ...     try:
    ...         r = webrank.pagerank(g, device="gpu")
    ...     except webrank.DeviceMemoryError as e:
    ...         print(f"short by {(e.needed - e.free) / 2**30:.1f} GiB: streaming")
    ...         r = webrank.pagerank(g, device="gpu", engine="stream")
    """

    def __init__(self, needed: int, free: int, what: str = "the graph") -> None:
        self.needed = needed
        self.free = free
        super().__init__(
            f"{what} needs {needed / 2**30:.2f} GiB of GPU memory but only "
            f"{free / 2**30:.2f} GiB is free; use device='cpu', float32, or a larger GPU"
        )


class HostMemoryError(WebrankError, MemoryError):
    """An input implies more host memory than is available (a declared or implied node
    count, say); the message says how much and what to do. Raised before allocating."""


class DistributedError(WebrankError, RuntimeError):
    """A partitioned run cannot go on: a rank stopped answering, shards disagree or are
    missing, or the launcher started more ranks on a host than it has GPUs. The message
    says which; the CLI prints it as one line and exits non-zero.

    Examples
    --------
    >>> import tempfile
    >>> import webrank
    >>> from webrank.distributed.inputs import read_labels
    >>> try:
    ...     read_labels(tempfile.mkdtemp())  # a folder without shards
    ... except webrank.DistributedError as e:
    ...     print("holds no webrank-shards.json" in str(e))
    True
    """


class InputWarning(UserWarning):
    """Something about an input was decided on the user's behalf (a first line read as
    a header, say) and could have been meant otherwise; the message says how to ask for
    the other reading. The CLI prints it as one ``webrank: warning:`` line."""
