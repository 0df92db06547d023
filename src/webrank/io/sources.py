"""Opening graph files: plain, gzip or bzip2, with read-progress reporting.

gzip is decompressed by ISA-L (``isal.igzip_threaded``) on a helper thread, about three
times faster than zlib and overlapped with parsing; bzip2 uses the standard library.
Every failure to open or decompress becomes a :class:`~webrank.errors.GraphFormatError`
naming the file, so callers deal with one exception type.
"""

from __future__ import annotations

import bz2
import io
import os
import stat
import zlib
from collections.abc import Callable
from typing import BinaryIO

from webrank.errors import GraphFormatError

try:  # ISA-L's error type is not an OSError
    from isal.isal_zlib import error as _IsalError
except ImportError:  # pragma: no cover - isal is a dependency
    _IsalError = zlib.error

__all__ = [
    "COMPRESSIONS",
    "Progress",
    "check_input",
    "compression_of",
    "line_text",
    "open_binary",
    "strip_compression",
]

#: Compression suffixes understood by :func:`open_binary` and the compression they mean.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2"}

#: ``progress(done_bytes, total_bytes)``: compressed bytes read so far, and file size.
Progress = Callable[[int, int], object]

_GZIP_MAGIC = b"\x1f\x8b"
_BZ2_MAGIC = b"BZh"
# Bytes asked of the decompressor at a time; also the granularity of progress calls.
_CHUNK = 1 << 20


def strip_compression(path: str | os.PathLike[str]) -> str:
    """The file name without a trailing ``.gz``/``.bz2`` (case-insensitive)."""
    name = os.fspath(path)
    root, ext = os.path.splitext(name)
    return root if ext.lower() in COMPRESSIONS else name


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """``"gzip"``, ``"bz2"`` or None, from the file name's suffix."""
    return COMPRESSIONS.get(os.path.splitext(os.fspath(path))[1].lower())


def check_input(path: str | os.PathLike[str]) -> str:
    """Check that ``path`` is an existing, readable regular file; return it as ``str``.

    Raises
    ------
    GraphFormatError
        ``"no such file"``, a directory, or a file that cannot be read.
    """
    name = os.fspath(path)
    if not isinstance(name, str):
        name = os.fsdecode(name)
    if not os.path.exists(name):
        raise GraphFormatError("no such file", path=name)
    if os.path.isdir(name):
        raise GraphFormatError("is a directory, not a graph file", path=name)
    if not os.access(name, os.R_OK):
        raise GraphFormatError("cannot read the file: permission denied", path=name)
    return name


def _open_raw(path: str) -> BinaryIO:
    """``open(path, "rb")`` with OS errors turned into GraphFormatError."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise GraphFormatError("no such file", path=path) from None
    except IsADirectoryError:
        raise GraphFormatError("is a directory, not a graph file", path=path) from None
    except PermissionError:
        raise GraphFormatError("cannot read the file: permission denied", path=path) from None
    except OSError as e:
        raise GraphFormatError(f"cannot open the file: {e.strerror or e}", path=path) from None


class _CountingReader(io.RawIOBase):
    """Pass-through raw reader that counts the bytes read from disk (for progress)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.done = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        n = self.raw.readinto(b)
        if n:
            self.done += n
        return n

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.done += len(data)
        return data

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


class _DecodedReader(io.RawIOBase):
    """The decompressed byte stream, with decompression errors made GraphFormatError.

    It also reports progress: after each block, ``progress(compressed bytes read,
    file size)``. The call happens on the thread that reads the stream — pyarrow's I/O
    thread on the fast CSV path — so the callback must be thread-safe (rich's are).
    """

    def __init__(
        self,
        inner: BinaryIO,
        counter: _CountingReader,
        path: str,
        compression: str | None,
        total: int,
        progress: Progress | None,
    ) -> None:
        self.inner = inner
        self.counter = counter
        self.path = path
        self.compression = compression
        self.total = total
        self.progress = progress
        self._finished = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        try:
            n = self.inner.readinto(b)
        except GraphFormatError:
            raise
        except (OSError, EOFError, zlib.error, _IsalError) as e:
            raise self._error(e) from None
        if self.progress is not None:
            if n:
                self.progress(min(self.counter.done, self.total), self.total)
            elif not self._finished:
                self._finished = True
                self.progress(self.total, self.total)
        return n

    def _error(self, e: BaseException) -> GraphFormatError:
        if self.compression is None:
            return GraphFormatError(f"cannot read the file: {e}", path=self.path)
        return GraphFormatError(
            f"corrupt or truncated {self.compression} data ({type(e).__name__}: {e})",
            path=self.path,
        )

    def close(self) -> None:
        if not self.closed:
            try:
                self.inner.close()
            finally:
                self.counter.close()
        super().close()


def _sniff_compression(path: str, raw: BinaryIO) -> str | None:
    """Compression from the suffix, checked against (or, for plain names, from) magic bytes."""
    head = raw.read(3)
    raw.seek(0)
    by_name = compression_of(path)
    if by_name == "gzip" and head and not head.startswith(_GZIP_MAGIC):
        raise GraphFormatError(
            f"not a gzip file (it starts with {head!r}); rename it without .gz if it is "
            "plain text",
            path=path,
        )
    if by_name == "bz2" and head and head != _BZ2_MAGIC:
        raise GraphFormatError(
            f"not a bzip2 file (it starts with {head!r}); rename it without .bz2 if it is "
            "plain text",
            path=path,
        )
    if by_name is None and head.startswith(_GZIP_MAGIC):
        return "gzip"  # gzip data under a plain name: decompress it anyway
    return by_name


def open_binary(
    path: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    buffer_size: int = _CHUNK,
) -> io.BufferedReader:
    """Open a plain, gzip or bzip2 file for reading its (decompressed) bytes.

    The compression is taken from the suffix (``.gz``, ``.bz2``) and checked against the
    file's magic bytes; a file with a plain name that starts with the gzip magic is
    decompressed too.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, called after each block read with the
        number of bytes read from disk so far (compressed bytes for compressed files)
        and the file size; called a last time with ``(total, total)`` at end of file.
        It may be called from a reader thread.
    buffer_size : int, default 1 MiB
        Size of the read buffer, in bytes.

    Returns
    -------
    io.BufferedReader
        A readable binary stream (``read``, ``readline``, line iteration, ``peek``);
        use it as a context manager. Reading it raises GraphFormatError on corrupt
        compressed data.

    Raises
    ------
    GraphFormatError
        Missing file (``"no such file"``), directory, unreadable file, or a ``.gz``/
        ``.bz2`` name on data that is not compressed that way.
    """
    name = check_input(path)
    raw = _open_raw(name)
    try:
        total = os.fstat(raw.fileno()).st_size
        compression = _sniff_compression(name, raw)
        counter = _CountingReader(raw)
        inner: BinaryIO
        if compression == "gzip":
            from isal import igzip_threaded

            inner = igzip_threaded.open(counter, "rb", threads=1)
        elif compression == "bz2":
            inner = bz2.BZ2File(counter, "rb")
        else:
            inner = counter  # type: ignore[assignment]
    except BaseException:
        raw.close()
        raise
    decoded = _DecodedReader(inner, counter, name, compression, total, progress)
    return io.BufferedReader(decoded, buffer_size=buffer_size)


def plain_size(stream: io.BufferedReader) -> int | None:
    """The size of the file a stream of :func:`open_binary` reads, where it reads an
    uncompressed regular file (whose bytes are then the stream's, at the same
    offsets); else None."""
    decoded = getattr(stream, "raw", None)
    if not isinstance(decoded, _DecodedReader) or decoded.compression is not None:
        return None
    raw = decoded.counter.raw
    try:
        st = os.fstat(raw.fileno())
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def line_text(path: str | os.PathLike[str], lineno: int) -> str | None:
    """Text of line ``lineno`` (1-based) of a (possibly compressed) file, for messages.

    Returns None if the file cannot be read that far. Only used on error paths.
    """
    try:
        with open_binary(path) as f:
            for i, line in enumerate(f, 1):
                if i == lineno:
                    return line.decode("utf-8", "replace").rstrip("\r\n")
    except GraphFormatError:
        return None
    return None
