"""Host ↔ device copies of large arrays through page-locked staging buffers.

A copy between device memory and pageable host memory runs at 8-11 GB/s on an H100 host
(the driver stages it through its own page-locked buffers, on one core); between device
memory and page-locked memory at about 50 GB/s. :class:`Staging` keeps two page-locked
slices per device for the process; :func:`upload` and :func:`download` move an array a
slice at a time, all host threads copying one slice
(:func:`webrank.kernels.cpu_build.copy_bytes`; the pieces of an upload from many arrays
packed by :func:`~webrank.kernels.cpu_build.copy_pieces`) while the GPU copies the other.
No CuPy kernel runs: memcpys and events only.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

__all__ = ["PINNED_RESULTS", "STAGING_SLICE_BYTES", "PinnedResults", "Staging", "download",
           "pinned_empty", "upload"]


def upload(a: Any, threads: int | None = None) -> Any:
    """A host array copied to the current device, a slice at a time through the
    device's two page-locked staging buffers (:class:`Staging`), ``threads`` host
    threads (default all) filling one while the other goes up.

    ``a`` may also be a list of 1-D host arrays of one dtype (a parallel reader's chunks):
    they land end to end in one device array, never joined on the host.

    ``cupy.asarray`` of an unpinned array first allocates a page-locked buffer of the
    array's size and copies the array into it, on one thread: for the gigabytes of a
    graph's links, seconds of pinning and copying before the transfer starts; a plain
    copy from pageable memory runs at a third of the link's speed. A CuPy array is
    returned as it is."""
    import cupy as cp

    if isinstance(a, list):
        parts = [np.ascontiguousarray(p).reshape(-1) for p in a]
        if not parts:
            raise ValueError("upload of an empty list of parts")
        dtype = parts[0].dtype
        if any(p.dtype != dtype for p in parts):
            raise ValueError("upload: parts of different dtypes")
        shape: tuple[int, ...] = (sum(int(p.size) for p in parts),)
    elif isinstance(a, np.ndarray):
        parts = [np.ascontiguousarray(a)]
        dtype, shape = parts[0].dtype, parts[0].shape
    else:
        return cp.asarray(a)
    out = cp.empty(shape, dtype=dtype)
    if out.nbytes >= 2 * STAGING_SLICE_BYTES:
        with Staging.held(out.device.id) as staging:
            if staging is not None:
                staging.copy_up(parts, out, threads)
                return out
    flat, at = out.reshape(-1), 0
    for part in parts:
        if part.size:
            flat[at:at + part.size].set(part.reshape(-1))
        at += part.size
    return out


def pinned_empty(n: int, dtype: Any) -> np.ndarray:
    """A NumPy array of ``n`` entries in page-locked host memory (``cupyx.empty_pinned``
    without importing ``cupyx``, whose import pulls in SciPy: half a second)."""
    import cupy as cp

    dtype = np.dtype(dtype)
    memory = cp.cuda.alloc_pinned_memory(max(int(n), 1) * dtype.itemsize)
    return np.ndarray((int(n),), dtype=dtype, buffer=memory)


def download(x: Any, out: np.ndarray, threads: int | None = None) -> np.ndarray:
    """The contiguous device array ``x`` copied into ``out`` (a C-contiguous host array of
    as many bytes): through the device's staging buffers (:class:`Staging`, ``threads``
    host threads, default all) where ``x`` fills a slice and they are free, else a plain
    copy. Returns ``out``."""
    if x.nbytes >= STAGING_SLICE_BYTES:
        with Staging.held(x.device.id) as staging:
            if staging is not None:
                staging.copy_down(x, out, threads)
                return out
    x.get(out=out)
    return out


#: bytes of each of the two page-locked buffers a vector goes up or comes down through
STAGING_SLICE_BYTES = 1 << 23


class Staging:
    """Two page-locked host buffers of one device, allocated on first use and kept for
    the process (16 MiB), through which a vector comes down (or an array goes up) a
    slice at a time.

    A copy from device memory into pageable host memory runs at 8-11 GB/s on an H100
    host (the driver stages it through its own page-locked buffers on one core); into
    page-locked memory at about 50 GB/s. While the GPU copies slice k into one buffer,
    all CPU threads move slice k-1 from the other into the caller's array
    (:func:`webrank.kernels.cpu_build.copy_bytes`), so the vector lands at nearly the
    slower of the two rates, not at the pageable copy's; uploads run the other way.
    One thread uses a device's buffers at a time (:meth:`take`); another gets ``None``
    and copies the plain way.
    """

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _by_device: ClassVar[dict[int, Staging]] = {}

    def __init__(self, device_id: int) -> None:
        import cupy as cp

        self.device_id = device_id
        self.busy = False
        self.step = STAGING_SLICE_BYTES
        self.slices = [pinned_empty(self.step, np.uint8) for _ in range(2)]
        with cp.cuda.Device(device_id):
            self.done = [cp.cuda.Event(disable_timing=True) for _ in range(2)]

    @classmethod
    def take(cls, device_id: int) -> Staging | None:
        """The device's buffers, marked busy (made on first use); ``None`` while another
        thread holds them or where page-locked memory cannot be had."""
        with cls._lock:
            staging = cls._by_device.get(device_id)
            if staging is None:
                try:
                    staging = cls._by_device[device_id] = cls(device_id)
                except Exception:  # page-locked memory refused: copy the plain way
                    return None
            if staging.busy:
                return None
            staging.busy = True
            return staging

    def give_back(self) -> None:
        with self._lock:
            self.busy = False

    @classmethod
    @contextlib.contextmanager
    def held(cls, device_id: int) -> Iterator[Staging | None]:
        """:meth:`take` for the ``with`` block (``None`` where the buffers cannot be had),
        given back at its end, an exception's included."""
        staging = cls.take(device_id)
        try:
            yield staging
        finally:
            if staging is not None:
                staging.give_back()

    def copy_down(self, x: Any, host: np.ndarray, threads: int | None = None) -> None:
        """Copy the contiguous device array ``x`` into ``host`` (C-contiguous, as many
        bytes), slice by slice through the two buffers."""
        import cupy as cp

        from webrank.kernels.cpu_build import copy_bytes

        out = host.reshape(-1).view(np.uint8)
        total, step = int(x.nbytes), self.step
        with cp.cuda.Device(self.device_id):
            stream = cp.cuda.get_current_stream()
            pending: tuple[int, int, int] | None = None  # (buffer, offset, bytes)
            try:
                for k, offset in enumerate(range(0, total, step)):
                    size, b = min(step, total - offset), k % 2
                    cp.cuda.runtime.memcpyAsync(
                        self.slices[b].ctypes.data, x.data.ptr + offset, size,
                        cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)
                    self.done[b].record(stream)
                    if pending is not None:
                        self._land(pending, out, copy_bytes, threads)
                    pending = (b, offset, size)
                if pending is not None:
                    self._land(pending, out, copy_bytes, threads)
            except BaseException:
                stream.synchronize()  # no copy into the buffers outlives the call
                raise

    def copy_up(self, host: np.ndarray | list[np.ndarray], x: Any,
                threads: int | None = None) -> None:
        """Copy ``host`` (C-contiguous; or a list of such arrays, laid end to end) into
        the contiguous device array ``x`` of as many bytes, slice by slice through the
        two buffers; returns once the copies are done (the buffers are free again).
        The pieces that fill one slice are packed into it by one call on all threads
        (:func:`webrank.kernels.cpu_build.copy_pieces`)."""
        import cupy as cp

        from webrank.kernels.cpu_build import copy_pieces

        parts = [p.reshape(-1).view(np.uint8)
                 for p in (host if isinstance(host, list) else [host])]
        if sum(int(p.size) for p in parts) != x.nbytes:
            raise ValueError("copy_up: the host data and the device array differ in size")
        step = self.step
        with cp.cuda.Device(self.device_id):
            stream = cp.cuda.get_current_stream()
            sent, k = 0, 0  # bytes gone up, slices sent
            pieces: list[np.ndarray] = []  # what fills slice k
            filled = 0

            def send() -> None:
                nonlocal sent, k, filled
                b = k % 2
                if k >= 2:
                    self.done[b].synchronize()  # its slice k - 2 has gone up
                copy_pieces(self.slices[b][:filled], pieces, threads)
                cp.cuda.runtime.memcpyAsync(
                    x.data.ptr + sent, self.slices[b].ctypes.data, filled,
                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
                self.done[b].record(stream)
                sent, k, filled = sent + filled, k + 1, 0
                pieces.clear()

            try:
                for part in parts:
                    at = 0
                    while at < part.size:
                        size = min(step - filled, int(part.size) - at)
                        pieces.append(part[at:at + size])
                        filled, at = filled + size, at + size
                        if filled == step:
                            send()
                if filled:
                    send()
            finally:
                stream.synchronize()  # the buffers free again (no copy outlives the call)

    def _land(self, pending: tuple[int, int, int], out: np.ndarray, copy_bytes: Any,
              threads: int | None) -> None:
        b, offset, size = pending
        self.done[b].synchronize()
        copy_bytes(out[offset:offset + size], self.slices[b][:size], threads)


#: the environment variable that sets :class:`PinnedResults`' limit in bytes (0: off)
PINNED_RESULTS_ENV = "WEBRANK_PINNED_RESULTS"


def _pinned_result_limit() -> int:
    """Page-locked bytes result arrays may keep: ``$WEBRANK_PINNED_RESULTS`` where set (0
    turns the pool off), else 1 GiB, at most an eighth of the host's memory."""
    text = os.environ.get(PINNED_RESULTS_ENV, "").strip()
    if text:
        try:
            return max(0, int(float(text)))
        except ValueError:
            raise ValueError(f"{PINNED_RESULTS_ENV}={text!r}: a number of bytes is needed "
                             "(0 turns page-locked results off)") from None
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return int(min(1 << 30, physical // 8))


def _lock_host_memory(nbytes: int) -> Any:
    import cupy as cp

    return cp.cuda.PinnedMemory(nbytes)


class _PinnedBlock:
    """One page-locked block seen by NumPy as an array (``__array_interface__``): the
    arrays made from it keep it alive, and it goes back to its pool when the last of
    them goes."""

    def __init__(self, mem: Any, nbytes: int, shape: tuple[int, ...], dtype: np.dtype,
                 pool: PinnedResults) -> None:
        self.mem, self.nbytes, self.pool = mem, nbytes, pool
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str,
                                    "data": (int(mem.ptr), False), "version": 3}

    def __del__(self) -> None:
        self.pool.give_back(self.mem, self.nbytes)


class PinnedResults:
    """Page-locked host arrays for the vectors that repeated GPU calls hand back (the
    scores), kept for reuse.

    A copy from the device into page-locked memory runs at the link's speed (R-MAT 22's
    34 MB of scores: 0.62 ms on an H100 host, against 1.5 ms through the staging buffers
    into pageable memory, 12 ms into a new array), but locking memory takes longer than
    the copy saves (6.9 ms for those 34 MB), and done beside a running solve it holds the
    driver, so the solve's launches wait. So the first vector of a size comes down into
    pageable memory; from the second on, :meth:`take` gives an array from a block kept
    here, or locks a new one on the caller's thread before its solve starts. A block
    comes back when the last array made from it goes. At most ``limit`` bytes stay
    locked, in use or free (default 1 GiB, at most an eighth of the host's memory;
    ``WEBRANK_PINNED_RESULTS`` sets it in bytes, 0 turns the pool off); past that,
    vectors come down the pageable way. :meth:`release` unlocks the free blocks.
    """

    def __init__(self, limit: int | None = None, allocate: Any = None) -> None:
        self._limit = None if limit is None else int(limit)
        #: ``allocate(nbytes)``: a block with a ``ptr`` (default ``cupy.cuda.PinnedMemory``)
        self.allocate = allocate
        self._lock = threading.Lock()
        self._free: dict[int, list[Any]] = {}
        self._seen: set[int] = set()
        #: bytes locked by this pool, in use or free
        self.held = 0

    @property
    def limit(self) -> int:
        """Bytes this pool may keep locked (read from the environment on first use when
        not given)."""
        if self._limit is None:
            self._limit = _pinned_result_limit()
        return self._limit

    def take(self, n: int, dtype: Any = np.float64) -> np.ndarray | None:
        """An array of ``n`` entries in a page-locked block (its contents undefined), or
        ``None``: the first request of this size, or no room under the limit."""
        dtype = np.dtype(dtype)
        nbytes = int(n) * dtype.itemsize
        if nbytes <= 0:
            return None
        unlocked: list[Any] = []  # free blocks of other sizes, unlocked to make room
        with self._lock:
            free = self._free.get(nbytes)
            mem = free.pop() if free else None
            if mem is None:
                if nbytes not in self._seen:
                    self._seen.add(nbytes)
                    return None
                if self.held + nbytes > self.limit:
                    unlocked = self._take_free()
                if self.held + nbytes > self.limit:
                    return None
                self.held += nbytes
        del unlocked  # cudaFreeHost as the last references go, outside the lock
        if mem is None:
            try:
                mem = (self.allocate or _lock_host_memory)(nbytes)
            except Exception:  # memory could not be locked: the pageable way
                with self._lock:
                    self.held -= nbytes
                return None
        return np.asarray(_PinnedBlock(mem, nbytes, (int(n),), dtype, self))

    def give_back(self, mem: Any, nbytes: int) -> None:
        """A block whose arrays are gone, kept for the next :meth:`take` of its size."""
        with self._lock:
            self._free.setdefault(nbytes, []).append(mem)

    def release(self) -> int:
        """Unlock the blocks no array uses; returns the bytes freed."""
        with self._lock:
            blocks = self._take_free()
        freed = sum(size for _, size in blocks)
        del blocks  # cudaFreeHost as the last references go, outside the lock
        return freed

    def _take_free(self) -> list[tuple[Any, int]]:
        """The free blocks, ``(block, bytes)``, taken out of the pool and its count (the
        caller holds the lock, and drops them after letting it go)."""
        blocks = [(mem, size) for size, free in self._free.items() for mem in free]
        self._free.clear()
        self.held -= sum(size for _, size in blocks)
        return blocks


#: the process's pool of page-locked result arrays (see :class:`PinnedResults`)
PINNED_RESULTS = PinnedResults()
