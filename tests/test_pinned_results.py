"""The pool of page-locked result arrays (``webrank.kernels.cuda_staging.PinnedResults``),
run on host memory standing in for page-locked blocks: a size's first request is
refused, later ones get a block kept for reuse, a block comes back only when the last
array made from it goes, and the pool stays under its limit."""

from __future__ import annotations

import gc
from typing import ClassVar

import numpy as np
import pytest

from webrank.kernels.cuda_staging import PinnedResults


class FakeBlock:
    """Host memory with the ``ptr`` of a page-locked block."""

    made: ClassVar[list[FakeBlock]] = []

    def __init__(self, nbytes: int) -> None:
        self.buffer = np.zeros(nbytes, dtype=np.uint8)
        self.ptr = self.buffer.ctypes.data
        FakeBlock.made.append(self)


def pool(limit: int = 1 << 20) -> PinnedResults:
    FakeBlock.made = []
    return PinnedResults(limit, allocate=FakeBlock)


def test_a_size_is_locked_from_its_second_request_and_reused():
    p = pool()
    assert p.take(1000) is None and p.held == 0  # the first of its size: pageable
    a = p.take(1000)
    assert a.shape == (1000,) and a.dtype == np.float64 and p.held == 8000
    assert a.ctypes.data == FakeBlock.made[0].ptr
    a[:] = np.arange(1000)  # the array writes its block
    assert FakeBlock.made[0].buffer.view(np.float64)[999] == 999
    b = p.take(1000)  # a is alive: a second block
    assert b.ctypes.data == FakeBlock.made[1].ptr and p.held == 16000
    view = a[10:20]
    del a
    gc.collect()
    c = p.take(1000)  # a's block is still used by its view
    assert c.ctypes.data == FakeBlock.made[2].ptr and len(FakeBlock.made) == 3
    del view, b
    gc.collect()
    again = {p.take(1000).ctypes.data for _ in range(1)}
    assert again <= {FakeBlock.made[0].ptr, FakeBlock.made[1].ptr}
    assert len(FakeBlock.made) == 3 and p.held == 24000


def test_the_limit_and_release():
    p = pool(limit=9_000)
    p.take(1000)
    a = p.take(1000)  # 8000 bytes locked
    assert p.take(1000) is None  # a second would pass the limit
    p.take(500, np.float32)
    assert p.take(500, np.float32) is None  # 2000 more would pass it too (a is in use)
    del a
    gc.collect()
    assert p.held == 8000
    b = p.take(500, np.float32)  # the free 8000-byte block is unlocked to make room
    assert b is not None and b.dtype == np.float32 and p.held == 2000
    del b
    gc.collect()
    assert p.release() == 2000 and p.held == 0
    assert p.take(0) is None and p.take(-3) is None


def test_a_block_that_cannot_be_locked_leaves_the_pageable_way():
    def refuse(nbytes):
        raise MemoryError("cudaHostAlloc failed")

    p = PinnedResults(1 << 20, allocate=refuse)
    assert p.take(100) is None and p.take(100) is None and p.held == 0


def test_only_a_device_vector_lands():
    """A landing takes the solve's answer, a device vector; a host array that a solver
    brings back on its way (the fixed-point method's out-weights) is not for it."""
    from webrank.backends.gpu_arrays import HostLanding

    landing = HostLanding(8, pinned=np.empty(8))
    assert not landing.fits(np.zeros(8))
    landing.discard()
    assert not landing.fits(np.zeros(8))


def test_the_limit_from_the_environment(monkeypatch):
    from webrank.kernels import cuda_staging

    monkeypatch.setenv("WEBRANK_PINNED_RESULTS", "0")
    off = PinnedResults(allocate=FakeBlock)
    assert off.limit == 0 and off.take(1000) is None and off.take(1000) is None
    monkeypatch.setenv("WEBRANK_PINNED_RESULTS", "4e6")
    assert PinnedResults().limit == 4_000_000
    monkeypatch.delenv("WEBRANK_PINNED_RESULTS")
    assert 0 < PinnedResults().limit <= 1 << 30
    monkeypatch.setenv("WEBRANK_PINNED_RESULTS", "lots")
    with pytest.raises(ValueError, match="WEBRANK_PINNED_RESULTS='lots'"):
        PinnedResults().limit  # noqa: B018
    assert cuda_staging.PINNED_RESULTS_ENV == "WEBRANK_PINNED_RESULTS"
