"""Atomic file output, and the one guard every writer goes through.

Every file webrank writes (graph caches, edge lists, results, shards, reports) goes
through :func:`atomic_write`, which

* makes the file appear complete at its final name, or not at all: an interrupted run
  (Ctrl-C, SIGTERM, SIGHUP, a crash, a full disk) never leaves a truncated file that a
  later run would take for a good one, nor its temporary file;
* never replaces a file webrank has read in this process (:func:`register_input`, called
  where graph files are opened; :func:`check_target` says why, by whatever name the
  file is given: relative, absolute, a symbolic or a hard link);
* gives a file it replaces the mode (and, where allowed, the owner) the old one had; a
  new file gets the mode :func:`open` would give it (``0o666`` less the umask).

The CLI checks its outputs with the same :func:`check_target` before any work.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import stat
import threading
from collections.abc import Iterable, Iterator
from typing import IO, Any

from webrank.errors import OverwriteError

__all__ = [
    "TERMINATION_SIGNALS",
    "Terminated",
    "atomic_write",
    "check_target",
    "raising_on_termination",
    "register_input",
]


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
# the temporary file: created, never opened through a symbolic link; mkstemp's flags
_TEMP_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_BINARY", 0))
_TEMP_TRIES = 100


# -- the inputs ---------------------------------------------------------------------------
# the files read in this process: (st_dev, st_ino) -> (name as given, real path), and
# real path -> name as given
_READ_BY_INODE: dict[tuple[int, int], tuple[str, str]] = {}
_READ_BY_NAME: dict[str, str] = {}


def _name(path: str | os.PathLike[str] | bytes) -> str:
    name = os.fspath(path)
    return name if isinstance(name, str) else os.fsdecode(name)


def _stat(name: str) -> os.stat_result | None:
    """``os.stat`` (symbolic links followed), or None where there is no such file."""
    try:
        return os.stat(name)
    except (OSError, ValueError):
        return None


def register_input(path: str | os.PathLike[str]) -> None:
    """Note that webrank reads the file ``path``: no :func:`atomic_write` of this process
    will replace it, under any name (relative, absolute, a symbolic or a hard link).

    Called where graph files are opened for reading (:func:`webrank.files.sources.check_input`,
    the BVGraph and shard readers). A path that is not an existing regular file is
    ignored. To replace an input deliberately, delete it first.
    """
    name = _name(path)
    st = _stat(name)
    if st is None or not stat.S_ISREG(st.st_mode):
        return
    real = os.path.realpath(name)
    _READ_BY_INODE[(st.st_dev, st.st_ino)] = (name, real)
    _READ_BY_NAME[real] = name


def _read_as(real: str, st: os.stat_result) -> str | None:
    """The name under which the existing file ``real`` (``st``) was read, or None."""
    given = _READ_BY_NAME.get(real)
    if given is not None:
        return given
    key = (st.st_dev, st.st_ino)
    entry = _READ_BY_INODE.get(key)
    if entry is None:
        return None
    given, source = entry
    # another name of the file read (a hard link) while that file is still there; an
    # inode freed since (the input deleted) and given to a new file is not the input
    now = _stat(source)
    if now is not None and (now.st_dev, now.st_ino) == key:
        return given
    del _READ_BY_INODE[key]
    return None


def check_target(
    path: str | os.PathLike[str],
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    *,
    directory: bool = False,
) -> None:
    """Refuse ``path`` as an output where writing it would destroy an input.

    Refused: a file webrank has read in this process (:func:`register_input`), and,
    for each of ``inputs`` (what a command is about to read, checked before reading
    it), the input itself, a path inside it where it is a directory, and, with
    ``directory=True``, a directory of parts that holds it. Files are compared by
    ``(st_dev, st_ino)`` once symbolic links are resolved, so that every name of a
    file counts (relative, absolute, symbolic and hard links).

    Parameters
    ----------
    path : str or os.PathLike
        The file about to be written (``directory=True``: the directory of parts).
    inputs : iterable of str, os.PathLike or None
        Files and directories about to be read; None entries are skipped.
    directory : bool, default False
        ``path`` is a directory that will receive several files.

    Raises
    ------
    OverwriteError
        One line: the target, which input it is, and what to do instead.
    """
    name = _name(path)
    real = os.path.realpath(name)
    st = _stat(name)
    for given in inputs:
        if not given:
            continue
        given = _name(given)
        source = os.path.realpath(given)
        source_st = _stat(given)
        if real == source or (st is not None and source_st is not None
                              and os.path.samestat(st, source_st)):
            raise OverwriteError(f"is the input {given!r}; writing it would destroy the "
                                 "input (choose another name)", path=name)
        if os.path.isdir(source) and real.startswith(source.rstrip(os.sep) + os.sep):
            raise OverwriteError(f"lies inside the input directory {given!r} (choose "
                                 "another place)", path=name)
        if directory and source.startswith(real.rstrip(os.sep) + os.sep):
            raise OverwriteError(f"holds the input {given!r}; writing parts there could "
                                 "destroy it (choose another directory)", path=name)
    if st is not None and stat.S_ISREG(st.st_mode):
        read = _read_as(real, st)
        if read is not None:
            raise OverwriteError(f"is the input {read!r} (read earlier); writing it would "
                                 "destroy the input (choose another name)", path=name)


# -- signals ------------------------------------------------------------------------------
#: The signals that ask a process to end (what ``kill``, ``timeout`` and Slurm send, and
#: a closed terminal): handled like Ctrl-C while a file is written.
TERMINATION_SIGNALS: tuple[int, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while :func:`raising_on_termination` was in force:
    raised in the main thread so that ``finally`` blocks and temporary files are cleaned
    up. A ``BaseException``, as ``KeyboardInterrupt``, so ``except Exception`` does not
    swallow it; ``signum`` is the signal."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def _restore(borrowed: list[int]) -> None:
    while borrowed:
        signal.signal(borrowed.pop(), signal.SIG_DFL)


@contextlib.contextmanager
def raising_on_termination(*, end_by_signal: bool = False) -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread
    instead of ending the process at once; on leaving it, they end it again.

    Only signals left to their default action are taken: one ignored (``nohup`` ignores
    SIGHUP) or handled by the program keeps its disposition, and so does one an
    enclosing block already took. Outside the main thread (where Python cannot set
    handlers) nothing changes. Python runs the handler between bytecodes, so a signal
    takes effect once a long native call (a kernel, a file read) returns, as Ctrl-C does.

    Parameters
    ----------
    end_by_signal : bool, default False
        When a :class:`Terminated` raised by this block's own handlers leaves it, end the
        process by that signal (its default action) once the unwinding has cleaned up,
        as it would have ended without the handler. False: let it propagate (the CLI
        turns it into one line and exit status 128 + the signal number).
    """
    borrowed: list[int] = []
    try:
        if threading.current_thread() is threading.main_thread():
            for sig in TERMINATION_SIGNALS:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    borrowed.append(sig)  # first: restored even if the signal comes now
                    signal.signal(sig, _raise_terminated)
        yield
    except Terminated as exc:
        if end_by_signal and exc.signum in borrowed:
            _restore(borrowed)
            signal.raise_signal(exc.signum)
        raise
    finally:
        _restore(borrowed)


# -- writing ------------------------------------------------------------------------------
@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    mode: str = "wb",
    *,
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; move it onto ``path`` only on success.

    ``path`` is first checked by :func:`check_target`: a file read in this process is
    never replaced. The temporary file (``.NAME.XXXXXXXXXXXX.tmp``) is created in the
    directory of ``path`` (so that the final :func:`os.replace` is an atomic rename on
    one file system), flushed and ``fsync``-ed before the rename. If the ``with`` block
    raises anything — ``KeyboardInterrupt`` included, and SIGTERM or SIGHUP, which are
    made to raise while the file is written (:func:`raising_on_termination`; the process
    then ends by the signal as it would have) — the temporary file is removed and
    ``path`` is left untouched (an existing file keeps its old content).

    A file replaced keeps its permission bits, and its owner and group where the
    process may set them; a new file gets ``0o666`` less the umask, as :func:`open`
    gives.

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
    OverwriteError
        ``path`` is a file read in this process (a ``ValueError``).
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
    path = _name(path)
    check_target(path)
    with raising_on_termination(end_by_signal=True), \
            _temporary(path, binary, encoding, newline) as f:
        yield f


@contextlib.contextmanager
def _temporary(path: str, binary: bool, encoding: str | None,
               newline: str | None) -> Iterator[IO[Any]]:
    """The body of :func:`atomic_write`: write a temporary file, rename it onto ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    old = _stat(path)
    tmp = fd = f = None
    try:
        for _ in range(_TEMP_TRIES):
            # the name is set before the file exists: a signal whose handler raises as
            # soon as the file is made still finds it to remove (mkstemp hands the name
            # back only with the file)
            tmp = os.path.join(directory,
                               f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
            try:
                fd = os.open(tmp, _TEMP_FLAGS, 0o600)
                break
            except FileExistsError:
                tmp = None  # someone else's file: never ours to remove
        else:
            raise FileExistsError(f"cannot create a temporary file beside {path}")
        _give_mode(fd, tmp, old if old is not None and stat.S_ISREG(old.st_mode) else None)
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
        # also on KeyboardInterrupt/Terminated/SystemExit: never leave a file behind
        if f is None and fd is not None:  # fdopen never took ownership of the descriptor
            with contextlib.suppress(OSError):
                os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    # what is at this name now is webrank's own output, no longer the input read there
    _READ_BY_NAME.pop(os.path.realpath(path), None)
    _fsync_dir(directory)


def _give_mode(fd: int, tmp: str, old: os.stat_result | None) -> None:
    """Give the temporary file the mode (and owner) of the file it replaces, or the mode
    :func:`open` would give a new file (mkstemp's is 0600)."""
    if old is None:
        _chmod(fd, tmp, _FILE_MODE)
        return
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid) and hasattr(os, "chown"):
        try:
            _chown(fd, tmp, old.st_uid, old.st_gid)
        except OSError:  # another user's file: keep at least its group where we may
            with contextlib.suppress(OSError):
                _chown(fd, tmp, -1, old.st_gid)
    _chmod(fd, tmp, stat.S_IMODE(old.st_mode))  # after chown, which may clear set-id bits


def _chmod(fd: int, tmp: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # pragma: no cover - Windows before 3.13
        os.chmod(tmp, mode)


def _chown(fd: int, tmp: str, uid: int, gid: int) -> None:
    if hasattr(os, "fchown"):
        os.fchown(fd, uid, gid)
    else:  # pragma: no cover
        os.chown(tmp, uid, gid)


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
