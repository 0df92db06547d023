"""Host memory checks made before large allocations: a size declared by a file or
implied by an id is compared with the memory at hand, and refused with one line saying
how much is needed and what to do, instead of an allocation failing (or the machine
swapping) halfway through."""

from __future__ import annotations

import os

from webrank.errors import GraphFormatError, HostMemoryError

__all__ = ["NODE_BYTES", "available_bytes", "check_claim", "check_fits", "check_mtx_entries",
           "check_node_memory", "format_bytes", "meminfo"]


def meminfo(field: str) -> int | None:
    """A field of Linux's /proc/meminfo (``MemTotal``, ``MemAvailable``...) in bytes, or
    None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_bytes() -> int | None:
    """Bytes of host memory available now (``MemAvailable`` on Linux; the physical
    pages free elsewhere), or None when unknown."""
    free = meminfo("MemAvailable")
    if free is not None:
        return free
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: float) -> str:
    """``n`` bytes in GiB, MiB or KiB, whichever reads best."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def check_fits(nbytes: int, what: str, hint: str = "", *, path: str | None = None) -> None:
    """Raise :class:`~webrank.errors.HostMemoryError` when ``nbytes`` exceed the memory
    available now.

    Parameters
    ----------
    nbytes : int
        What the allocation needs.
    what : str
        What needs it ("3,000,000,000 nodes declared by the header"), for the message.
    hint : str, optional
        What to do instead.
    path : str, optional
        The input file it comes from.
    """
    free = available_bytes()
    if free is None or nbytes <= free:
        return
    where = f"{path}: " if path else ""
    raise HostMemoryError(
        f"{where}{what}: {format_bytes(nbytes)} of memory needed, {format_bytes(free)} "
        "available" + (f"; {hint}" if hint else ""))


#: bytes a node takes in a graph (row pointer, out-weight) and in a solve (the iterate,
#: its successor, the gathered vector, teleport, dangling, 1/out-weight)
NODE_BYTES = 16 + 48


def check_node_memory(n: int, m: int, from_ids: bool, name: str | None) -> None:
    """Refuse a node count whose arrays cannot fit in memory, before allocating them."""
    if n <= 4 * m + (1 << 20):
        return  # no larger than the edges' own arrays: nothing an input could blow up
    cause = (f"the largest id ({n - 1:,}) makes {n:,} nodes (node_ids='range')" if from_ids
             else f"{n:,} declared nodes")
    hint = ("node_ids='appear' (CLI: --node-ids appear) keeps only the ids that occur"
            if from_ids else f"is the declared size right? the file has {m:,} links")
    check_fits(NODE_BYTES * n, f"{cause} for {m:,} links", hint, path=name)


def check_claim(count: int, unit: str, source: str, *, path: str | None,
                item_bytes: float, min_bits: float = 0, file_bytes: int | None = None,
                room: str | None = None, hint: str = "") -> None:
    """A count a file claims (nodes, arcs, entries, rows), checked before anything is
    allocated for it.

    Parameters
    ----------
    count : int
        The claim.
    unit, source : str
        What is counted ("nodes") and what claims it ("the 'nodes' property"), for the
        message: "SOURCE claims COUNT UNIT".
    path : str or None
        The file, for the message.
    item_bytes : float
        Host bytes each of them takes once read.
    min_bits, file_bytes : optional
        Each takes at least ``min_bits`` bits of the ``file_bytes`` the file has (None:
        the bytes bound nothing, a compressed stream say).
    room : str, optional
        What holds the ``file_bytes`` (default "the file's N bytes").

    Raises
    ------
    GraphFormatError
        The file's bytes cannot hold that many.
    HostMemoryError
        ``count * item_bytes`` exceed the memory available now.
    """
    claim = f"{source} claims {count:,} {unit}"
    if file_bytes is not None and min_bits > 0 and count * min_bits > 8 * file_bytes:
        most = int(8 * file_bytes // min_bits)
        where = room or f"the file's {file_bytes:,} bytes"
        raise GraphFormatError(f"{claim}, but {where} hold at most {most:,}", path=path)
    check_fits(int(count * item_bytes), claim, hint, path=path)


#: host bytes an entry of a Matrix Market file takes in scipy.io.mmread and the build
#: (row and column indices, the value, the edge columns)
_MTX_ENTRY_BYTES = 48


def check_mtx_entries(head: bytes, *, path: str | None, file_bytes: int | None) -> None:
    """The entry count on the size line of a ``coordinate`` Matrix Market file (``head``:
    its first bytes, banner and comments included), checked by :func:`check_claim`
    before SciPy allocates that many: each entry takes a line of at least 4 bytes
    (``"1 1\\n"``) of the ``file_bytes`` (None for a compressed file: then only the
    memory bounds it). A size line not in ``head`` is left to the reader."""
    for line in head.split(b"\n")[1:]:
        text = line.strip()
        if not text or text.startswith(b"%"):
            continue
        fields = text.split()
        if len(fields) != 3 or not fields[2].isdigit():
            return  # malformed: the reader says where
        check_claim(int(fields[2]), "entries", "the size line", path=path,
                    item_bytes=_MTX_ENTRY_BYTES, min_bits=32, file_bytes=file_bytes,
                    hint="is the size line right?")
        return
