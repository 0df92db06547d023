"""Opening graph files: plain, gzip or bzip2, with read-progress reporting.

gzip is decompressed by ISA-L (``isal.igzip_threaded``) on a helper thread, about three
times faster than zlib and overlapped with parsing; bzip2 uses the standard library.
Every failure to open or decompress becomes a :class:`~webrank.errors.GraphFormatError`
naming the file, so callers deal with one exception type.
"""

from __future__ import annotations

import bz2
import io
import mmap
import os
import stat
import zlib
from collections.abc import Callable
from typing import BinaryIO

from webrank.errors import GraphFormatError
from webrank.files.atomic import register_input

try:  # ISA-L's error type is not an OSError
    from isal.isal_zlib import error as _IsalError
except ImportError:  # pragma: no cover - isal is a dependency
    _IsalError = zlib.error

__all__ = [
    "COMPRESSIONS",
    "MAX_LINE_BYTES",
    "LineCapReader",
    "LineWatch",
    "Progress",
    "TokenLines",
    "check_input",
    "compression_of",
    "field_text",
    "find_long_line",
    "line_at",
    "line_cap",
    "line_text",
    "long_line_error",
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

#: The most bytes a line of a text graph file (edge list, Matrix Market) or of a seeds
#: or personalization file may take, its line end included. A longer line is refused
#: with a GraphFormatError (``no line end in 1 MiB``) before it is held in memory: a few
#: MB of gzip can hold a line of gigabytes. Adjacency, seeds and personalization lines
#: are read a piece at a time (a node may list millions of sources): there it bounds
#: one field. Read when a file is opened, not at import.
MAX_LINE_BYTES = 1 << 20


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

    The file is noted as an input (:func:`webrank.files.atomic.register_input`): no writer
    of this process replaces it.

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
    register_input(name)
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


def line_cap() -> int:
    """:data:`MAX_LINE_BYTES`, read now (a reader takes it once per file)."""
    return MAX_LINE_BYTES


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n:,} bytes"


def long_line_error(
    name: str | None, lineno: int | None, text: str | None, what: str = "a text graph file"
) -> GraphFormatError:
    """The error for a line longer than :data:`MAX_LINE_BYTES` (``text``: its start)."""
    size = _size_text(MAX_LINE_BYTES)
    return GraphFormatError(f"no line end in {size}: too long for a line of {what}",
                            path=name, line=lineno, text=text)


class LineWatch:
    """Finds the first line longer than :data:`MAX_LINE_BYTES` (line end included) in
    bytes seen a chunk at a time, exactly and without looking at every line: from each
    line start it looks for the last line end within the cap (``rfind``, from the far
    end), so a chunk costs a few searches per cap's worth of bytes.

    Parameters
    ----------
    offset : int, default 0
        The stream offset of the first chunk's first byte.
    line_start : int, optional
        The stream offset where a line starts (default ``offset``).
    """

    def __init__(self, offset: int = 0, line_start: int | None = None) -> None:
        self.cap = MAX_LINE_BYTES
        self.offset = offset  # stream offset of the next chunk's first byte
        self.line_start = offset if line_start is None else line_start
        #: the stream offset of the first long line found, else None
        self.long_line: int | None = None

    def feed(self, data: bytes | mmap.mmap) -> bool:
        """Watch the next chunk (bytes or a memory map); False once a long line is found."""
        if self.long_line is not None:
            return False
        cap, off = self.cap, self.offset
        end = off + len(data)
        ls = self.line_start
        while True:
            nl = data.rfind(b"\n", max(ls - off, 0), max(min(ls + cap, end) - off, 0))
            if nl >= 0:
                ls = off + nl + 1
            elif ls + cap <= end:  # cap bytes from a line start without a line end
                self.long_line = ls
                return False
            else:
                break
        self.line_start, self.offset = ls, end
        return True


class LineCapReader(io.RawIOBase):
    """A binary stream's bytes as they come, ending early (an end of file) before a line
    longer than :data:`MAX_LINE_BYTES`, whose error :attr:`error` then holds: for readers
    that take a file object and would hold such a line whole (SciPy's Matrix Market
    reader). Its owner raises :attr:`error`, if any, before whatever the reader made
    of the truncated stream.

    Parameters
    ----------
    stream : binary stream
        From :func:`open_binary`, not read yet (peeked at most).
    path : str
        The file, to find the long line's number.
    name : str
        The file, for messages.
    what : str
        What the file is, for messages (``"a Matrix Market file"``).
    """

    def __init__(self, stream: BinaryIO, path: str, name: str, what: str) -> None:
        self._stream, self._path, self._name, self._what = stream, path, name, what
        self._watch = LineWatch(0)
        self.error: GraphFormatError | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self.error is not None:
            return 0
        data = self._stream.read(len(b))
        if not self._watch.feed(data):
            self.error = long_line_error(
                self._name, *line_at(self._path, self._watch.long_line or 0), self._what)
            return 0
        b[:len(data)] = data
        return len(data)


def find_long_line(path: str, start: int = 0) -> int | None:
    """The offset of the first line longer than :data:`MAX_LINE_BYTES` from ``start`` (a
    line start) on, in a plain file, else None. A search every cap's worth of bytes on a
    memory map: a 2 GB file costs ~2,000 page reads."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size - start <= MAX_LINE_BYTES:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            watch = LineWatch(0, line_start=start)
            watch.feed(mm)
            return watch.long_line


def line_at(path: str | os.PathLike[str], offset: int) -> tuple[int | None, str | None]:
    """``(line number, start of its text)`` of the line that starts at byte ``offset`` of
    the (decompressed) file, for messages; ``(None, None)`` if the file cannot be read
    that far. Only used on error paths."""
    try:
        with open_binary(path) as f:
            lines = done = 0
            while done < offset:
                chunk = f.read(min(_CHUNK, offset - done))
                if not chunk:
                    return None, None
                lines += chunk.count(b"\n")
                done += len(chunk)
            text = f.read(120).decode("utf-8", "replace").split("\n", 1)[0].rstrip("\r")
    except GraphFormatError:
        return None, None
    return lines + 1, text


class TokenLines:
    """The fields of each line of a text file that is neither blank nor a comment (its
    first field starts with ``#`` or ``%``): ``(line number, fields as bytes)``.

    Lines are read a piece of :data:`MAX_LINE_BYTES` at a time, so a line may be as long
    as its fields need (a comment is skipped unread) while no field may be longer.
    Fields are separated by runs of whitespace and of the ``separators`` bytes. A UTF-8
    byte-order mark is skipped; a NUL byte is refused as binary data.

    Parameters
    ----------
    stream : binary stream
        From :func:`open_binary`.
    name : str
        The file, for messages.
    separators : bytes, default b""
        Bytes that separate fields besides whitespace (``b","``).
    what : str
        What the file is, for messages (``"a seeds file"``).
    """

    def __init__(self, stream: BinaryIO, name: str, *, separators: bytes = b"",
                 what: str = "a text file") -> None:
        self._stream, self.name, self.what = stream, name, what
        self._table = bytes.maketrans(separators, b" " * len(separators)) \
            if separators else None
        self._separators = b" \t\r\n\x0b\x0c" + separators
        #: comment lines seen so far (blank lines not counted)
        self.comments = 0

    def __iter__(self):  # -> Iterator[tuple[int, list[bytes]]]
        cap = MAX_LINE_BYTES
        readline, table = self._stream.readline, self._table
        lineno = 0
        while True:
            piece = readline(cap)
            if not piece:
                return
            lineno += 1
            if lineno == 1 and piece.startswith(b"\xef\xbb\xbf"):
                piece = piece[3:]
            if 0 in piece:
                raise self._binary(lineno, piece)
            if len(piece) < cap or piece[-1] == 10:  # the whole line
                parts = (piece.translate(table) if table else piece).split()
                if parts and parts[0][:1] not in (b"#", b"%"):
                    yield lineno, parts
                elif parts:
                    self.comments += 1
                continue
            parts = self._long_line(piece, lineno)
            if parts:
                yield lineno, parts

    def _long_line(self, piece: bytes, lineno: int) -> list[bytes]:
        """The fields of a line longer than a piece (none for a comment)."""
        cap, readline, table = MAX_LINE_BYTES, self._stream.readline, self._table
        parts: list[bytes] = []
        carry = b""  # a field cut at the end of the last piece
        while True:
            done = len(piece) < cap or piece[-1] == 10
            text = carry + piece
            split = (text.translate(table) if table else text).split()
            if not parts and split and split[0][:1] in (b"#", b"%"):
                while not done:  # a comment: skipped to its end, unread
                    piece = readline(cap)
                    done = len(piece) < cap or piece[-1] == 10
                self.comments += 1
                return []
            carry = b""
            if not done and split and text[-1] not in self._separators:
                carry = split.pop()
                if len(carry) >= cap:
                    raise GraphFormatError(
                        f"a field of more than {_size_text(cap)}: not {self.what}",
                        path=self.name, line=lineno, text=_shown(carry))
            parts.extend(split)
            if done:
                return parts
            piece = readline(cap)
            if 0 in piece:
                raise self._binary(lineno, piece)

    def _binary(self, lineno: int, piece: bytes) -> GraphFormatError:
        return GraphFormatError(f"binary data, not {self.what}", path=self.name,
                                line=lineno, text=_shown(piece))


def field_text(raw: bytes, name: str, lineno: int) -> str:
    """A field of :class:`TokenLines` as text: refused (GraphFormatError naming the file
    and line) where it is not UTF-8, as in a binary file."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise GraphFormatError("bytes that are not UTF-8 text (a binary file?)", path=name,
                               line=lineno, text=repr(raw[:40])[2:-1]) from None


def _shown(data: bytes) -> str:
    """The start of some bytes as text, for messages."""
    return repr(data[:60])[2:-1] if 0 in data[:60] else \
        data[:120].decode("utf-8", "replace").rstrip("\r\n")


def line_text(path: str | os.PathLike[str], lineno: int) -> str | None:
    """Text of line ``lineno`` (1-based) of a (possibly compressed) file, for messages:
    at most its first :data:`MAX_LINE_BYTES` bytes.

    Returns None if the file cannot be read that far. Only used on error paths.
    """
    cap = MAX_LINE_BYTES
    try:
        with open_binary(path) as f:
            i = 1
            while True:
                piece = f.readline(cap)
                if not piece:
                    return None
                if i == lineno:
                    return piece.decode("utf-8", "replace").rstrip("\r\n")
                if piece[-1] == 10:
                    i += 1
    except GraphFormatError:
        return None
