"""Atomic file output: a file appears complete at its final name, or not at all.

Every file webrank writes (graph caches, edge lists, results, reports) goes through
:func:`atomic_write`, so an interrupted run (Ctrl-C, a crash, a full disk) never leaves a
truncated file behind that a later run would take for a good one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["atomic_write"]


def _umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # os.umask can only be read by setting it; done once, at import
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    mode: str = "wb",
    *,
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; move it onto ``path`` only on success.

    The temporary file is created in the same directory as ``path`` (so the final
    :func:`os.replace` is an atomic rename on the same file system), flushed and
    ``fsync``-ed before the rename. If the ``with`` block raises anything —
    ``KeyboardInterrupt`` included — the temporary file is removed and ``path`` is left
    untouched (an existing file keeps its old content).

    Parameters
    ----------
    path : str or os.PathLike
        Final file name. Its directory must exist.
    mode : {"wb", "w", "wt"}, default "wb"
        Binary or text writing.
    encoding : str, optional
        Text mode only; default ``"utf-8"``.
    newline : str, optional
        Text mode only; passed to :func:`open`.

    Yields
    ------
    file object
        The open temporary file; write to it inside the ``with`` block.

    Raises
    ------
    ValueError
        ``mode`` is not a write mode, or ``encoding``/``newline`` given in binary mode.
    OSError
        The directory does not exist or is not writable, ``path`` is a directory, ...

    Examples
    --------
    >>> with atomic_write("ranks.tsv", "w") as f:  # doctest: +SKIP
    ...     f.write("node\\tscore\\n")
    """
    if mode not in ("wb", "w", "wt"):
        raise ValueError(f"atomic_write mode must be 'wb', 'w' or 'wt', not {mode!r}")
    binary = "b" in mode
    if binary and (encoding is not None or newline is not None):
        raise ValueError("encoding and newline apply to text mode only")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    f = None
    try:
        # mkstemp makes the file 0600; give it the permissions open() would have
        os.chmod(tmp, _FILE_MODE)
        if binary:
            f = os.fdopen(fd, "wb")
        else:
            f = os.fdopen(fd, "w", encoding=encoding or "utf-8", newline=newline)
        try:
            with f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # a full disk, a file size limit...: say which file
            if e.filename is None and e.errno is not None:
                raise OSError(e.errno, f"cannot write {path}: {e.strerror}") from None
            raise
        os.replace(tmp, path)
    except BaseException:
        # also on KeyboardInterrupt/SystemExit: never leave a half-written file behind
        if f is None:  # fdopen never took ownership of the descriptor
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories can't be opened."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
