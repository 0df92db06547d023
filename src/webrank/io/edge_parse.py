"""The fast paths of reading an edge list (:mod:`webrank.io.edgelist`): a large plain
file of integer ids in its canonical form, cut at line ends and parsed on all cores
(:func:`parallel_read`); any other file through pyarrow's multi-threaded CSV reader with
typed columns (:func:`fast_read`, over :class:`MappedSource` or :class:`ArrowSource`),
whose values are checked before they are trusted. Each returns None where the exact
scanner (:mod:`webrank.io.edge_scan`) must decide.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO

import numpy as np

from webrank.arrays import distinct
from webrank.build import Chunked, Pieces, as_chunks, first_bad_weight
from webrank.errors import GraphFormatError
from webrank.files.arrow import numpy_of
from webrank.files.sources import (
    LineWatch,
    Progress,
    line_at,
    long_line_error,
)
from webrank.io.edge_layout import (
    WHAT,
    Layout,
    is_comment,
    splitter,
)
from webrank.tables import arrow_threads, factorize

__all__ = ["ArrowSource", "MappedSource", "WideIds", "fast_read", "ids_fit_int32",
           "parallel_read", "sparse_array"]

_BLOCK = 1 << 22  # pyarrow CSV block size: ~16 blocks for a 60 MB file, parsed in parallel


def parallel_read(
    path: str, size: int, layout: Layout, progress: Progress | None
) -> tuple[Chunked, Chunked, None, None] | None:
    """Two columns of integer ids in their canonical form (``id DELIM id`` lines), from
    a memory map of the file, cut at line ends into ranges parsed in parallel
    (:mod:`webrank.kernels.cpu_parse`); None for small files or where a line leaves the
    canonical form (the pyarrow path then reads the file)."""
    import mmap

    from webrank.build import use_parallel_build

    body = size - layout.data_start
    delim = layout.delimiter.encode()
    if len(delim) != 1 or delim.isdigit():
        return None
    if not use_parallel_build(body // 12):  # (lines of ~12 bytes)
        return None
    from webrank.kernels import cpu_parse
    from webrank.kernels.cpu import num_threads

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if len(mm) != size:
            return None  # the file changed under us: let the stream reader decide
        # ranges of ~1 MB up to 64 per thread, each starting at a line start
        ranges = int(min(64 * num_threads(), max(num_threads(), body >> 20)))
        cuts = [layout.data_start]
        for k in range(1, ranges):
            nl = mm.find(b"\n", layout.data_start + body * k // ranges)
            cuts.append(size if nl < 0 else nl + 1)
        cuts.append(size)
    cut = distinct(np.asarray(cuts, np.int64), is_sorted=True)
    # a line takes at least 4 bytes ("0\t0\n"): slots for every range's lines, most
    # of them never touched (virtual memory only)
    first_slot = (cut[:-1] - layout.data_start) // 4 + np.arange(cut.size - 1)
    slots = int(first_slot[-1] + (cut[-1] - cut[-2]) // 4 + 1)
    parsed = np.zeros(cut.size - 1, np.int64)
    bounds = np.zeros((cut.size - 1, 2), np.int64)
    # int32 columns, half the memory of int64 (the build takes either); an id past
    # int32's range shows in the ranges' bounds, and the file is parsed again into int64
    for width in (np.int32, np.int64):
        src = sparse_array(slots, width)
        dst = sparse_array(slots, width)
        # NumPy's own map, unmapped when the last view goes (a first call's compile may
        # hold one a while: a plain mmap would then refuse to close)
        buf = np.memmap(path, dtype=np.uint8, mode="r", shape=(size,))
        try:
            # in rounds of ranges, so that a progress bar moves
            step = max(4 * num_threads(), (cut.size - 1) // 8)
            for a in range(0, cut.size - 1, step):
                b = min(cut.size - 1, a + step)
                cpu_parse.parse_id_pairs(buf, cut[a:b + 1], delim[0], first_slot[a:b],
                                         src, dst, parsed[a:b], bounds[a:b])
                if parsed[a:b].min() < 0:
                    return None
                if progress is not None:
                    progress(int(cut[b]), size)
        finally:
            del buf
        if int(bounds[parsed > 0, 1].max(initial=-1)) <= np.iinfo(width).max:
            break
        src = dst = None  # (freed before the int64 columns are made)
    keep = parsed > 0
    if not keep.any():
        return None
    starts, counts = first_slot[keep], parsed[keep]
    lo_hi = (int(bounds[keep, 0].min()), int(bounds[keep, 1].max()))
    return (Chunked(src, starts, counts, lo_hi), Chunked(dst, starts, counts, lo_hi), None,
            None)


def sparse_array(size: int, dtype: Any) -> np.ndarray:
    """An array of ``size`` entries whose pages are made only where written: an anonymous
    map kept to 4 KiB pages. NumPy asks the kernel for 2 MiB pages on large arrays, so a
    parse that writes the head of each range's slots would make every slot resident
    (R-MAT 22 parsed in 962 ranges on 16 threads: 3.0 GB peak against 2.1 GB)."""
    import mmap

    nbytes = max(int(size), 1) * np.dtype(dtype).itemsize
    memory = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=dtype, count=int(size))


# --------------------------------------------------------------------------------------
# fast path: pyarrow CSV
# --------------------------------------------------------------------------------------
class ArrowSource(io.RawIOBase):
    """The rest of a compressed stream after the head, as a file for pyarrow.

    It watches the bytes going through for ``x``/``X``: pyarrow parses ``0x1f`` as a hex
    integer, which the exact scanner rejects; and it keeps a decompression error so it
    can be re-raised as such rather than as a CSV error. It watches them for a line
    longer than the cap too (:class:`~webrank.files.sources.LineWatch`): pyarrow would hold
    the whole line, a few times over (a 2 GiB comment took 4.3 GB), so the data ends
    there and the error is kept.
    """

    def __init__(self, head: bytes, stream: BinaryIO, watch_hex: bool, path: str,
                 name: str, offset: int) -> None:
        self._head = memoryview(head)
        self._stream = stream
        self._watch_hex = watch_hex
        self.saw_hex = False
        self.error: GraphFormatError | None = None
        self._lines = LineWatch(offset)
        self._path, self._name = path, name

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if len(self._head):
            if size is None or size < 0:
                data = bytes(self._head) + self._read(-1)
                self._head = self._head[len(self._head):]
            else:
                data = bytes(self._head[:size])
                self._head = self._head[len(data):]
        else:
            data = self._read(size)
        if not self._lines.feed(data):
            if self.error is None:  # (the offset of its start -> the line's number)
                self.error = long_line_error(
                    self._name, *line_at(self._path, self._lines.long_line), WHAT)
            return b""
        if self._watch_hex and not self.saw_hex and (b"x" in data or b"X" in data):
            self.saw_hex = True
        return data

    def _read(self, size: int | None) -> bytes:
        # A corrupt compressed stream ends the data here (pyarrow sees an end of file)
        # and the error is raised once pyarrow has returned: an exception raised into
        # pyarrow's reader thread could abort the process at exit (std::terminate).
        if self.error is not None:
            return b""
        try:
            return self._stream.read(size)
        except GraphFormatError as e:
            self.error = e
            return b""

    def close(self) -> None:  # pyarrow closes its source; the stream is closed by its owner
        super().close()

class MappedSource:
    """The data lines of a plain file as pyarrow's own memory map.

    pyarrow's reader threads then take the bytes without calling into Python: through
    a Python file object each of its reads waits for the GIL, and a thread importing
    CuPy beside the parse (the GPU warm-up) held it long enough to stretch a 2 GB parse
    from 1.2 s to 2.1 s on a 16-core host. Meanwhile a thread looks for ``x``/``X``
    (pyarrow reads ``0x1f`` as a hex integer, which the exact scanner refuses) a slice
    at a time, and another reports the map's position to ``progress``.
    """

    _SLICE = 1 << 26  # bytes searched per GIL hold

    def __init__(self, path: str, size: int, start: int, watch_hex: bool,
                 progress: Progress | None) -> None:
        self._path, self._size, self._start = path, size, start
        self._watch_hex, self._progress = watch_hex, progress
        self.saw_hex = False
        self.error: GraphFormatError | None = None

    def __enter__(self) -> Any:
        import threading

        import pyarrow as pa

        self._map = pa.memory_map(self._path)
        if self._map.size() != self._size:
            self._map.close()
            # the file changed since it was opened: the stream reader decides
            raise _Changed
        self._map.seek(self._start)
        self._done = threading.Event()  # the parse ended: the progress reports stop
        self._cancel = threading.Event()  # the parse failed: the search stops too
        self._threads = [threading.Thread(target=self._find_hex, daemon=True)] \
            if self._watch_hex else []
        if self._progress is not None:
            self._threads.append(threading.Thread(target=self._report, daemon=True))
        for t in self._threads:
            t.start()
        return self._map

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if exc[0] is not None:
            self._cancel.set()
        for t in self._threads:  # (the search runs to the end of the file)
            t.join()
        self._map.close()
        if self._progress is not None and exc[0] is None:
            self._progress(self._size, self._size)

    def _find_hex(self) -> None:
        import mmap

        with open(self._path, "rb") as f, \
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for a in range(self._start, len(mm), self._SLICE):
                b = min(len(mm), a + self._SLICE)
                if mm.find(b"x", a, b) >= 0 or mm.find(b"X", a, b) >= 0:
                    self.saw_hex = True
                    return
                if self._cancel.is_set():
                    return

    def _report(self) -> None:
        while not self._done.wait(0.1):
            try:
                self._progress(self._map.tell(), self._size)
            except (OSError, ValueError):  # (closed under us)
                return


#: record batches copied between two returns of freed memory to the system
_RELEASE_EVERY = 16


def _int32_columns(held: list[Any]) -> list[np.ndarray]:
    """The two id columns of the pyarrow table in ``held`` (int32, or int64 with every
    id below 2**31; taken out of the list, which the caller passes as the table's only
    holder) as contiguous int32 arrays, copied a record batch at a time while each
    copied batch's buffers go back: the peak is the table plus one batch (8 or 16 bytes
    a link), where copying whole columns beside the table held 16 or 24. The new arrays'
    pages come in as they are written."""
    import pyarrow as pa

    table = held.pop()
    rows = table.num_rows
    out = [np.empty(rows, dtype=np.int32), np.empty(rows, dtype=np.int32)]
    batches = table.to_batches()
    del table
    at = 0
    for i in range(len(batches)):
        batch, batches[i] = batches[i], None
        for k in (0, 1):
            out[k][at:at + batch.num_rows] = numpy_of(batch.column(k))
        at += batch.num_rows
        del batch
        if i % _RELEASE_EVERY == _RELEASE_EVERY - 1:
            pa.default_memory_pool().release_unused()
    return out


class _Changed(Exception):
    """The file's size differs from the size measured when it was opened."""


class WideIds(Exception):
    """A parse of int32 ids met an id past 2**31 - 1: parse the file again as int64."""


def ids_fit_int32(data: bytes, layout: Layout) -> bool:
    """Whether the ids of ``data`` (a file's first data lines) all have at most nine
    characters, so that pyarrow may parse them as int32: half the table of int64 ids,
    and no copy into int32 afterwards. An id past int32 further on raises
    :class:`WideIds` from :func:`fast_read`."""
    split = splitter(layout.delimiter, "int")
    return all(len(field) <= 9 for line in bytes(data).splitlines() if not is_comment(line)
               for field in split(line)[:2])


def _arrow_table(data: Any, layout: Layout, types: dict[str, Any], use_w: bool) -> Any:
    """pyarrow's parse of the data lines: the columns of ``types`` in ``layout``'s
    order (the weight only with ``use_w``), no nulls, quotes as the layout says."""
    import pyarrow.csv as pacsv

    names = list(types)
    return pacsv.read_csv(
        data,
        read_options=pacsv.ReadOptions(column_names=names, block_size=_BLOCK),
        parse_options=pacsv.ParseOptions(
            delimiter=layout.delimiter, quote_char='"' if layout.quoted else False,
            double_quote=layout.quoted, escape_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types=types, include_columns=names[: 3 if use_w else 2],
            strings_can_be_null=False, quoted_strings_can_be_null=False))


def fast_read(
    source: ArrowSource | MappedSource, layout: Layout, labels: str, use_w: bool,
    pieces: bool = False, narrow: bool = False,
) -> tuple[Any, Any, Any, np.ndarray | None] | None:
    """Parse ``source`` (the data lines) with pyarrow; None when the exact scanner must
    decide. ``pieces``: integer columns as :class:`~webrank.build.Pieces` of pyarrow's
    blocks (for a build on the GPU: no join, no parallel kernels on the host), else
    chunked. ``narrow`` (integer ids, not ``pieces``): parse the ids as int32
    (:func:`ids_fit_int32`); :class:`WideIds` where one does not fit."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrow_threads()  # pyarrow's pool no larger than this process's CPUs
    names = ["src", "dst", "weight"][: layout.ncols]
    narrow = narrow and labels == "int" and not pieces
    id_type = (pa.int32() if narrow else pa.int64()) if labels == "int" else pa.string()
    types = {"src": id_type, "dst": id_type, "weight": pa.float64()}
    try:
        with source as data:
            table = _arrow_table(data, layout, {k: types[k] for k in names}, use_w)
    except MemoryError:
        raise
    except _Changed:
        return None
    except pa.ArrowCancelled:  # pyarrow's reading was interrupted (Ctrl-C): stop here
        raise KeyboardInterrupt from None
    except Exception as exc:
        if source.error is not None:
            raise source.error from None
        if narrow and "to int32" in str(exc):
            raise WideIds from None
        return None  # unparseable for pyarrow: let the exact scanner find out why
    if source.error is not None:
        raise source.error
    if source.saw_hex or any(c.null_count for c in table.columns):
        return None
    if labels == "int" and pieces:
        cols = [Pieces([numpy_of(c) for c in table.column(k).chunks])
                for k in names[: 3 if use_w else 2]]
        if any(a.size and a.min() < 0 for col in cols[:2] for a in col.arrays) or (
                use_w and any(first_bad_weight(a) is not None for a in cols[2].arrays)):
            return None
        return cols[0], cols[1], cols[2] if use_w else None, None
    w = None
    if use_w:
        w = numpy_of(table.column("weight"))
        if first_bad_weight(w) is not None:
            return None
    if labels == "int":
        ids = [table.column("src"), table.column("dst")]
        bounds = [pc.min_max(c) for c in ids]
        if any(b["min"].as_py() is not None and b["min"].as_py() < 0 for b in bounds):
            return None
        small = narrow or all(b["max"].as_py() is None or b["max"].as_py() <= 2**31 - 1
                              for b in bounds)
        del ids
        if small:  # int32, the table's blocks given back as they are copied
            held = [table]
            del table
            cols = _int32_columns(held)
        else:
            cols = [numpy_of(table.column(k)) for k in ("src", "dst")]
            del table
        pa.default_memory_pool().release_unused()
        src = as_chunks(cols[0])
        dst = as_chunks(cols[1], like=src)
        return src, dst, None if w is None else as_chunks(w, like=src), None
    cs, cd, node_labels = factorize(table.column("src"), table.column("dst"))
    # labels the exact scanner would read differently: empty or whitespace-padded
    # fields, and mid-file comment lines that happened to have the right field count
    # (checked on the distinct labels; a target label starting with #/% costs a rescan).
    # Quoted (.csv): a quote or line break in a label. pyarrow cuts its blocks at line
    # ends, quotes aside (newlines_in_values=True would cost 40% of the parse), so a
    # quoted field holding a line break can be cut in two; each half then holds one of
    # these (the open quote's line break, or the closing quote taken literally).
    bad = r"^[#%]|^$|^\s|\s$" + (r'|["\n\r]' if layout.quoted else "")
    if pc.any(pc.match_substring_regex(pa.array(node_labels, type=pa.string()),
                                       bad)).as_py():
        return None
    return cs, cd, w, node_labels
