"""The GPU engines and ``engine="auto"``: which one runs a graph.

=============  ==========================================  ====================================
engine         a power step                                made for
=============  ==========================================  ====================================
``pull``       one fused CSR kernel (rows gather ``xs``),  any graph; 4 bytes per link of
               replayed as a CUDA graph                    device memory
``persistent`` the pull step inside one cooperative        graphs whose CSR and vectors fit
               kernel running every step of a solve        in L2: no launch gaps, one
                                                           synchronisation per solve
``blocked``    propagation blocking: a scatter and a       graphs past L2: sequential
               gather kernel (:mod:`webrank.blocking`)     streams instead of random gathers
``stream``     the pull step over row chunks copied from   graphs larger than the GPU's
               pinned host memory, two buffers in flight   memory (out of core)
=============  ==========================================  ====================================

:func:`choose_engine` picks from the graph's size and the device's L2 and free memory;
the measurements behind the thresholds are in ``docs/benchmarks.md`` (``webrank bench
gpu`` runs every engine side by side, and the chosen one).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.backends.base import GPU_ENGINES, PageRankOperator
from webrank.backends.gpu import PersistentGPUOperator, PullGPUOperator
from webrank.backends.gpu_blocked import BlockedGPUOperator, blocked_device_bytes
from webrank.backends.gpu_stream import StreamedGPUOperator
from webrank.backends.hybrid import HybridOperator
from webrank.backends.options import EngineOptions

__all__ = ["ENGINES", "ENGINE_CLASSES", "choose_engine", "kept_operator",
           "make_gpu_operator"]

ENGINES = GPU_ENGINES
#: the operator class of each engine (``"hybrid"``: ``method="hybrid"``'s)
ENGINE_CLASSES = {"pull": PullGPUOperator, "persistent": PersistentGPUOperator,
                  "blocked": BlockedGPUOperator, "stream": StreamedGPUOperator,
                  "hybrid": HybridOperator}
#: the persistent engine runs graphs whose pull working set fits in this share of L2
PERSISTENT_L2_SHARE = 1.0


def pull_working_bytes(num_nodes: int, num_edges: int, dtype: str) -> int:
    """Bytes a pull step touches: the 4-byte indices, the row pointers, x twice (float64),
    xs twice and 1/out-degree."""
    item = np.dtype(dtype).itemsize
    return int(4 * num_edges + num_nodes * (8 + 16 + 2 * item + 8))


#: link_locality from which ``engine="auto"`` runs the pull step past L2: graphs in crawl
#: order (near 0.9) ran faster with pull, ids in random order (below 0.1) with the blocked
#: engine (the measurements: docs/guide/choosing.md, "Crawl order")
CRAWL_ORDER_LOCALITY = 0.5


def link_locality(graph: Any, window: int = 1 << 15, samples: int = 1 << 16,
                  seed: int = 0) -> float:
    """Share of the links whose source id lies within ``window`` ids of their target,
    from ``samples`` links drawn at random (seeded): near 1 for a graph numbered in crawl
    order, where most links stay within a site (Boldi & Vigna 2004), about
    ``2 window / n`` for ids in random order (R-MAT). Host or device graphs."""
    m = graph.num_edges
    if m == 0:
        return 0.0
    pos = np.sort(np.random.default_rng(seed).integers(0, m, min(samples, m)))
    if graph.on_gpu:
        import cupy as cp

        from webrank.backends.gpu_arrays import searchsorted, take

        rows = searchsorted(graph.indptr, pos + 1) - 1
        src = take(graph.indices, cp.asarray(pos),
                   cp.empty(pos.size, dtype=graph.indices.dtype)).get()
    else:
        rows = np.searchsorted(graph.indptr, pos + 1, side="left") - 1
        src = np.asarray(graph.indices[pos])
    return float(np.mean(np.abs(src.astype(np.int64) - rows) < window))


def choose_engine(graph: Any, dtype: str, candidates: tuple[str, ...]) -> tuple[str, str]:
    """``(engine, reason)`` for ``engine="auto"``, one of ``candidates`` (the engines
    taking every option given, :meth:`EngineOptions.candidates`: an option that only
    some engines take narrows the choice to them):

    * ``stream`` when the graph and its vectors do not fit in free device memory (or a
      ``device_memory_limit`` is given);
    * ``persistent`` while the pull step's working set fits in L2: a step is then tens of
      microseconds and one launch per solve saves the launch gaps and the graph capture;
    * ``pull`` for a graph in crawl order (:func:`link_locality` at least
      :data:`CRAWL_ORDER_LOCALITY`): most links read a source near their target, so the
      pull engine's gathers hit the cache, and the blocked engine's extra pass loses;
    * ``blocked`` while its layout fits in free device memory: sequential streams beat the
      pull engine's random gathers once they miss L2;
    * ``pull`` otherwise (4 bytes per link against about 8 plus a message).
    """
    import cupy as cp

    def free_bytes() -> int:  # asked only where a rule needs it (tens of microseconds)
        return cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()

    n, m = graph.n, graph.num_edges
    l2 = gpu_arrays.device_attribute("L2CacheSize")
    working = pull_working_bytes(n, m, dtype)
    if candidates == ("stream",) or ("stream" in candidates and not graph.on_gpu
                                    and working > 0.9 * (free := free_bytes())):
        return "stream", ("only the stream engine takes the options given"
                          if candidates == ("stream",) else
                          f"the graph ({working / 2**30:.1f} GiB with its vectors) does "
                          f"not fit in free device memory ({free / 2**30:.1f} GiB): "
                          "streamed from host memory")
    if "persistent" in candidates and working <= PERSISTENT_L2_SHARE * l2:
        return "persistent", (f"the pull step's working set ({working / 2**20:.1f} MiB) fits "
                              f"in L2 ({l2 / 2**20:.0f} MiB): one launch per solve")
    if "pull" in candidates and "blocked" in candidates:
        near = graph.cached("link_locality", lambda: link_locality(graph))
        if near >= CRAWL_ORDER_LOCALITY:
            return "pull", (f"links in crawl order ({100 * near:.0f}% within 2**15 ids of "
                            "their target): the pull step's gathers stay in cache")
    if "blocked" in candidates:
        need = blocked_device_bytes(n, m, dtype, graph.weights is not None)
        free = free_bytes()
        if need <= 0.9 * free:
            return "blocked", ("past L2: propagation blocking streams instead of random "
                               "gathers")
        if "pull" in candidates:
            return "pull", (f"the blocked layout ({need / 2**30:.1f} GiB) does not fit in "
                            f"free device memory ({free / 2**30:.1f} GiB)")
    return candidates[0], "the only engine taking the options given"


def make_gpu_operator(graph: Any, alpha: float, personalization: Any, dangling: Any,
                      dtype: str, options: EngineOptions) -> PageRankOperator:
    """The GPU operator of ``options.engine`` (``"auto"``: :func:`choose_engine`, its
    reason in ``info["engine_reason"]``), the options checked already
    (:meth:`EngineOptions.for_device`)."""
    engine, reason = options.engine, "requested"
    if engine == "auto":
        engine, reason = choose_engine(graph, dtype, options.candidates())
    op = ENGINE_CLASSES[engine](graph, alpha, personalization, dangling, dtype, options)
    if engine != "hybrid":  # (the hybrid method's split is in its own info entries)
        op.info["engine_reason"] = reason
    return op


class KeptOperator:
    """Where a graph keeps an operator between calls (:func:`kept_operator`): the
    operator, detached from the graph, and the lock of the call using it."""

    __slots__ = ("lock", "op")

    def __init__(self) -> None:
        self.op: Any = None
        self.lock = threading.Lock()


@contextlib.contextmanager
def kept_operator(graph: Any, key: tuple, build: Callable[[], Any]) -> Iterator[Any]:
    """The GPU operator of one call: the one kept on ``graph`` by an earlier call with
    the same ``key`` (the call's parameters: alpha, precision, engine options), else
    ``build()``'s. After a call that ends without an error, an operator whose engine
    allows it (``keep_between_calls``: the persistent engine, whose setup is 5-10% of a
    small graph's warm call) is kept for the next one, detached from the graph (no
    reference back). One call at a time uses it: a call that finds it taken (another
    thread's) builds its own. Its device memory is that of its working vectors (the
    graph's own arrays are cached on the graph anyway)."""
    import cupy as cp

    slot = graph.cached(("gpu", cp.cuda.Device().id, "operator", *key), KeptOperator)
    if not slot.lock.acquire(blocking=False):
        yield build()
        return
    try:
        op, slot.op = slot.op, None
        if op is None:
            op = build()
        else:
            op.attach(graph)
        yield op
        if getattr(op, "keep_between_calls", False):
            op.detach()
            slot.op = op
    finally:
        slot.lock.release()
