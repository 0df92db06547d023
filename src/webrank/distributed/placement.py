"""GPU parts placed once per graph: each part's CSR copied up to its GPU and renamed to
the slots of the exchanged vector, its step built, and the communicator that moves the
slices between the GPUs.

:class:`Placement` is what a graph keeps between calls (``pagerank(graph, gpus=N)``,
personalized runs, other alphas, ``update``), as one GPU keeps its layouts;
:class:`~webrank.distributed.operator.PartitionedOperator` runs its steps on one.
:class:`Exchange` lays out what the GPUs send each step: only the pages some link reads,
each part's slice padded to one width where that costs little.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.distributed.comm import Comm
from webrank.distributed.partition import Part
from webrank.kernels import cuda

__all__ = ["BLOCKED_MIN_BLOCK", "PAD_LIMIT", "DevicePart", "Exchange", "Placement",
           "each_device", "part_engine"]


#: the blocked step runs a part when its blocks average at least this many links
BLOCKED_MIN_BLOCK = 32


def part_engine(part: Part, dtype: np.dtype, engine: str, n_src: int | None = None) -> str:
    """The step a GPU part runs: ``"blocked"`` (propagation blocking) or ``"pull"``.

    ``"auto"``: blocked while the (chunk, partition) blocks of its layout average at
    least :data:`BLOCKED_MIN_BLOCK` links. A part's sources span the whole graph (``n_src``
    slots of the exchanged vector; default the graph's nodes), so its blocks shrink as
    the graph grows past the GPUs (R-MAT 27 on two GPUs: about 48 links a block; R-MAT
    29: 12) and the gather's reads fragment.
    """
    if engine != "auto":
        return engine
    from webrank.backends.gpu_blocked import default_plan_args

    plan = default_plan_args(dtype)
    parts = -(-max(part.rows, 1) // plan["part_rows_max"])
    chunks = -(-(part.n if n_src is None else n_src) // (1 << plan["chunk_bits_max"]))
    return "blocked" if part.num_edges / (parts * chunks) >= BLOCKED_MIN_BLOCK else "pull"


class DevicePart:
    """A part on one GPU: its CSR (sources as slots of the packed exchange, see
    :class:`Exchange`), and the pull kernels (webrank.kernels.cuda) or the blocked
    engine's step (webrank.backends.gpu_blocked).

    Built in two phases: ``__init__`` copies the part up and does its host-side work (one
    thread per GPU: the copies of several GPUs overlap); :meth:`finish`, once the
    exchange's layout is known, renames the sources and builds the step.
    """

    def __init__(self, part: Part, device: int, dtype: np.dtype, stream: Any,
                 threads: int | None = None) -> None:
        import cupy as cp

        from webrank.backends.gpu import HEAVY_THRESHOLD, heavy_segments

        if part.renamed:
            raise ValueError(f"part {part.index} was placed by an earlier run (its sources "
                             "renamed on its GPU): place each part once")
        self.part, self.device, self.stream = part, int(device), stream
        self.r0, self.r1 = part.row_begin, part.row_end
        self.dtype = np.dtype(dtype)
        rows = max(self.r1 - self.r0, 1)
        t0 = time.perf_counter()
        with cp.cuda.Device(self.device):
            # a part built on its GPU (webrank.distributed.generate) is used in place (its
            # indices renamed in place by finish()); a part read on the host is copied up
            # as it is and its row pointers rebased there (CuPy's casts and comparisons
            # would compile kernels on a fresh node's first run)
            def upload(a: Any) -> Any:  # the host threads shared by the GPUs' uploads
                return gpu_arrays.upload(a, threads)

            indptr = upload(part.indptr)
            self.indices = upload(part.indices)
            t1 = time.perf_counter()
            narrow = indptr.dtype != np.int32 and part.num_edges < 2**31
            if part.indptr_base or narrow:
                indptr = gpu_arrays.rebase(indptr, part.indptr_base,
                                           np.int32 if narrow else indptr.dtype)
            self.indptr = indptr
            if not isinstance(part.indptr, np.ndarray):  # its own copy: keep one
                part.indptr, part.indptr_base = indptr, 0
            heavy = heavy_segments(indptr, HEAVY_THRESHOLD)  # two kernels, rows back
            self.weighted = part.weights is not None
            self.vals = (upload(part.weights.astype(dtype, copy=False))
                         if self.weighted else cp.zeros(1, dtype=dtype))
            ow = part.out_weight
            ow = (upload(np.asarray(ow, dtype=np.float64)) if isinstance(ow, np.ndarray)
                  else ow.astype(np.float64, copy=False))
            #: this part's out-weights (float64, device), until number_sent() numbers
            #: the rows that have some (what it sends)
            self.out_weight = ow
            # 1 / out-weight and the dangling mask by a kernel (raw weights: the values
            # of a weighted part are scaled at its sources too)
            self.inv_out, self.dangling = gpu_arrays.node_scale(ow, False)
            self._sent_offsets, count = gpu_arrays.sent_count(ow)
            #: how many of this part's rows some link reads: its slots in the exchange
            self.sent = count
            self.nseg = int(heavy["seg_row"].size)
            self.heavy = {k: cp.asarray(heavy[k]) for k in ("seg_row", "begin", "end")}
            self.threshold = HEAVY_THRESHOLD if heavy["n_heavy"] else np.iinfo(np.int64).max
            self.group = cuda.pick_group(heavy["light_mean"] / 16)
            self.heavy_sum = cp.zeros(rows, dtype=np.float64)
            self.no_chunk = cp.zeros(1, dtype=np.uint64)  # step counting is the host's
            self.xs_pos = cp.zeros(1, dtype=self.indices.dtype)
            #: the step's gathered values of this part's rows, before packing
            self.scratch = cp.zeros(self.r1 - self.r0, dtype=self.dtype)
        #: seconds of this part's placement: the CSR copied up, the rest
        self.timings = {"csr_copy_s": t1 - t0, "part_rest_s": time.perf_counter() - t1}

    def number_sent(self, exchange: Exchange, slot: Any) -> None:
        """Write this part's rows' slots in the exchange into ``slot`` (every node's, on
        this device; queued on this part's stream) and keep the rows it sends."""
        import cupy as cp

        with cp.cuda.Device(self.device), self.stream:
            self.base = int(exchange.base[self.part.index])
            #: the rows this part sends, in row order: row send_rows[j] goes to slot
            #: base + j
            self.send_rows = gpu_arrays.sent_slots(
                self.out_weight, (self._sent_offsets, self.sent), self.base,
                exchange.zero, slot[self.r0:self.r1])
            del self.out_weight, self._sent_offsets

    @property
    def sources(self) -> np.ndarray:
        """:attr:`send_rows` on the host (rows of this part, not global ids)."""
        return self.send_rows.get()

    def finish(self, exchange: Exchange, slot: Any, engine: str) -> None:
        """Rename the sources to their slots in the exchange (``slot``: every node's,
        on this device) and build the step."""
        import cupy as cp

        from webrank.backends.gpu import BLOCK

        t0 = time.perf_counter()
        with cp.cuda.Device(self.device):
            gpu_arrays.remap(self.indices, slot)
            self.part.renamed = self.indices is self.part.indices
            ip, ix, t = self.indptr.dtype.name, self.indices.dtype.name, self.dtype.name
            self.fused = cuda.get_kernel(ip, ix, t, self.weighted, self.group)
            self.heavy_kernel = cuda.get_kernel(ip, ix, t, self.weighted, None)
            sms = gpu_arrays.device_attribute("MultiProcessorCount")
            rows = max(self.r1 - self.r0, 1)
            self.grid = int(min(max(1, -(-rows // (BLOCK // self.group))), sms * 16))
            self.heavy_grid = int(min(max(1, -(-self.nseg // (BLOCK // 32))), sms * 16))
            self.block = BLOCK
            self.engine = part_engine(self.part, self.dtype, engine, exchange.width)
            self.blocked = None
            if self.engine == "blocked":
                from webrank.backends.gpu_blocked import blocked_step_of

                self.blocked = blocked_step_of(
                    {"indptr": self.indptr, "indices": self.indices},
                    self.vals if self.weighted else None, exchange.width, self.dtype, sms)
            cp.cuda.Device().synchronize()
        self.timings["step_build_s"] = time.perf_counter() - t0

    def bind(self, *, n: int, v: Any, d: Any, uniform_v: bool, uniform_d: bool,
             alpha: float, crit: int, tol_cmp: float) -> None:
        """Fix a run's constants for the :meth:`launch` calls that follow (``v`` and
        ``d``: this part's rows; ``n``: the whole graph's nodes)."""
        # (no replay counter: every queued step runs)
        self.heavy_sum.fill(0)
        if self.blocked is not None:
            self.blocked.bind(v=v, d=d, uniform_v=uniform_v, uniform_d=uniform_d,
                              inv_out=self.inv_out, alpha=alpha, inv_n=1.0 / n, crit=crit,
                              tol_cmp=tol_cmp, chunk=self.no_chunk)
            return
        self.heavy_args = cuda.HEAVY_ROWS.bind(
            nseg=self.nseg, seg_row=self.heavy["seg_row"], seg_begin=self.heavy["begin"],
            seg_end=self.heavy["end"], indices=self.indices, vals=self.vals,
            heavy_sum=self.heavy_sum, tol_cmp=tol_cmp, chunk=self.no_chunk, step0=0,
            chunk_len=0, max_steps=1)
        self.fused_args = cuda.FUSED_STEP.bind(
            n=self.r1 - self.r0, indptr=self.indptr, indices=self.indices, vals=self.vals,
            v=v, d=d, uniform_v=uniform_v, uniform_d=uniform_d, inv_out=self.inv_out,
            alpha=alpha, inv_n=1.0 / n, crit=crit, tol_cmp=tol_cmp, chunk=self.no_chunk,
            step0=0, chunk_len=0, max_steps=1, heavy_threshold=self.threshold,
            heavy_sum=self.heavy_sum, permuted=0, xs_pos=self.xs_pos)

    def send_slice(self, xs: Any) -> Any:
        """This part's slots of the exchanged vector ``xs``."""
        return xs[self.base:self.base + self.send_rows.size]

    def pack(self, xs: Any) -> None:
        """Copy the gathered values of this part's sources from :attr:`scratch` into its
        slots of ``xs`` (on the current stream)."""
        gpu_arrays.take(self.scratch, self.send_rows, self.send_slice(xs))

    def launch(self, *, xs_in: Any, x_in: Any, acc_prev: Any, acc_out: Any, mode: int,
               x_out: Any, xs_out: Any) -> None:
        """Queue one step of this part on its device's stream (constants of the last
        :meth:`bind`): read the exchanged ``xs_in``, write this part's slots of
        ``xs_out``."""
        if self.blocked is not None:
            self.blocked.launch(xs_in=xs_in, x_in=x_in, acc_prev=acc_prev, acc_out=acc_out,
                                mode=mode, x_out=x_out, xs_out=self.scratch, step0=0,
                                chunk_len=0, max_steps=1)
        else:
            if self.nseg:
                self.heavy_kernel((self.heavy_grid,), (self.block,), self.heavy_args.pack(
                    xs=xs_in, acc_prev=acc_prev))
            self.fused((self.grid,), (self.block,), self.fused_args.pack(
                xs=xs_in, x=x_in, acc_prev=acc_prev, acc_out=acc_out, mode=mode,
                x_out=x_out, xs_out=self.scratch))
        self.pack(xs_out)


#: the padded exchange (NCCL's all-gather) is used while padding adds at most this share
#: to the packed slices; past it, per-part broadcasts of the unpadded slices
PAD_LIMIT = 1.5


@dataclass
class Exchange:
    """Where each part's gathered values travel between the GPUs: only the nodes some
    link reads (out-weight > 0; a dangling node's gathered value is 0 and nobody reads
    it — half of R-MAT's nodes), packed part after part.

    Part i's sources take the slots ``base[i]:base[i] + counts[i]`` of the exchanged
    vector, in node order; every other node reads slot ``zero`` (never written: 0). With
    ``padded``, the parts' slices are ``slice`` slots apart, so that NCCL's all-gather of
    equal slices moves them; otherwise ``base`` is the running sum of ``counts`` and
    per-part broadcasts move them (:meth:`~webrank.distributed.comm.Comm.allgatherv`).
    """

    counts: np.ndarray
    base: np.ndarray
    padded: bool
    slice: int

    @classmethod
    def of_counts(cls, counts: Any) -> Exchange:
        counts = np.asarray(counts, dtype=np.int64)
        slice_ = max(int(counts.max(initial=0)), 1)
        padded = counts.size * slice_ <= PAD_LIMIT * max(int(counts.sum()), 1)
        if padded:
            base = np.arange(counts.size + 1, dtype=np.int64) * slice_
        else:
            base = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return cls(counts=counts, base=base, padded=padded, slice=slice_)

    @property
    def zero(self) -> int:
        """The slot that stays 0 (read by the nodes nobody links from)."""
        return int(self.base[-1])

    @property
    def width(self) -> int:
        """Slots of the exchanged vector."""
        return self.zero + 1

    def move(self, comm: Comm, bufs: list[Any]) -> None:
        """Exchange the slices (each home wrote its parts')."""
        if self.padded:
            comm.allgather_equal(bufs, self.slice)
        else:
            comm.allgatherv(bufs, self.base)


def each_device(fn: Any, items: list[Any]) -> list[Any]:
    """``fn(item)`` for each item, one thread per item (one GPU each): their host copies
    and host work overlap."""
    if len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(fn, items))


@dataclass
class Placement:
    """A row-partitioned graph placed on the GPUs of its run: each home's
    :class:`DevicePart`, the exchange between them and the communicator. Built once per
    graph (``webrank.pagerank(graph, gpus=N)`` keeps it on the graph) and shared by the
    operators of later calls: other alphas, personalization vectors, tolerances."""

    homes: list[DevicePart]
    bounds: np.ndarray
    comm: Comm
    exchange: Exchange
    dtype: np.dtype
    seconds: float
    #: seconds of each phase (the slowest GPU's where they run side by side)
    timings: dict[str, float]

    @classmethod
    def build(cls, parts: list[Part], bounds: np.ndarray, comm: Comm, devices: list[int],
              dtype: Any, engine: str = "auto") -> Placement:
        import cupy as cp

        t0 = time.perf_counter()
        dtype = np.dtype(dtype)
        bounds = np.asarray(bounds, dtype=np.int64)
        streams = getattr(comm, "streams", None)
        if streams is None or len(streams) != len(parts):
            raise ValueError("GPU parts need a GPU communicator with one stream per part")
        from webrank.kernels.native import available_cpus

        threads = max(1, available_cpus() // len(parts))
        homes = each_device(lambda a: DevicePart(a[0], a[1], dtype, a[2], threads),
                             list(zip(parts, devices, streams, strict=True)))
        t1 = time.perf_counter()
        mine = {h.part.index: h.sent for h in homes}
        counts = {}
        for got in comm.allgather_obj(mine):
            counts.update(got)
        exchange = Exchange.of_counts([counts[i] for i in range(bounds.size - 1)])
        n = int(bounds[-1])

        def own_slots(h: DevicePart) -> Any:
            with cp.cuda.Device(h.device):
                slot = cp.empty(n, dtype=h.indices.dtype)
            h.number_sent(exchange, slot)
            return slot

        # every node's slot on every GPU: each writes its own rows', then all-gathered
        slots = [own_slots(h) for h in homes]
        comm.allgatherv(slots, bounds)
        for h in homes:
            h.stream.synchronize()
        t2 = time.perf_counter()
        each_device(lambda a: a[0].finish(exchange, a[1], engine),
                     list(zip(homes, slots, strict=True)))
        del slots
        for h in homes:
            with cp.cuda.Device(h.device):
                cp.cuda.Device().synchronize()
                cp.get_default_memory_pool().free_all_blocks()
        t3 = time.perf_counter()
        timings = {"parts_up_s": t1 - t0, "slots_s": t2 - t1, "steps_s": t3 - t2,
                   **{k: max(h.timings[k] for h in homes) for k in homes[0].timings}}
        return cls(homes=homes, bounds=bounds, comm=comm, exchange=exchange, dtype=dtype,
                   seconds=t3 - t0, timings=timings)

    @property
    def devices(self) -> list[int]:
        return [h.device for h in self.homes]

    def close(self) -> None:
        """Release the communicator (the parts' device memory goes with the object)."""
        self.comm.close()
