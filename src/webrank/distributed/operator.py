"""The Google matrix of a row-partitioned graph: this process's parts and a communicator.

:class:`PartitionedOperator` implements :class:`~webrank.backends.base.PageRankOperator`,
so the solvers run on it unchanged. Its vectors are full-length and replicated on every
process (host NumPy arrays, float64); the parts live where their home is (host memory, or
one GPU each).

* :meth:`~PartitionedOperator.power_steps` is the partitioned power step: each part runs
  the fused step of its backend on its rows (the Numba kernel on the CPU, the pull kernel
  on a GPU), reading the full gathered vector ``xs`` and writing its own slice of the next
  one; then one all-gather of the slices and one all-reduce of the step's (residual,
  dangling mass, mass, L1 norm). On GPUs the steps are queued with their collectives on
  each device's stream and the host reads the residuals every ``check_every`` steps.
* :meth:`~PartitionedOperator.matvec` (GMRES, BiCGSTAB) computes each part's rows of
  ``P^T x`` and all-gathers them: Krylov vectors are replicated, so their memory is
  O(restart x n) per process, fine for clusters of CPUs, not for a web crawl on GPUs
  (there the power method runs).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import webrank.backends.gpu_arrays as gpu_arrays
from webrank.backends.base import PART_ENGINES, PageRankOperator, StepsResult
from webrank.distributed.comm import Comm
from webrank.distributed.partition import Part
from webrank.distributed.placement import DevicePart, Placement, each_device
from webrank.graph import gather_scale
from webrank.kernels.criteria import LINF, StopTest

__all__ = ["PartitionedOperator"]


class _HostPart:
    """A part on the CPU: its CSR for the compiled step and generic products."""

    def __init__(self, part: Part, dtype: np.dtype) -> None:
        from webrank.kernels import cpu

        self.part = part
        self.r0, self.r1 = part.row_begin, part.row_end
        self.indptr = np.asarray(part.indptr, dtype=np.int64)
        self.indices = np.asarray(part.indices)
        self.vals = (np.zeros(0, dtype=dtype) if part.weights is None
                     else np.asarray(part.weights, dtype=dtype))
        ow = np.asarray(part.out_weight, dtype=np.float64)
        # (a part's values are the raw weights: 1 / out-weight scales either kind)
        self.inv_out = gather_scale(ow, weighted=False)
        self.dangling = ow == 0
        self.bounds = cpu.chunk_bounds(self.indptr, cpu.default_chunks())
        self.partial = np.zeros((max(self.bounds.size, 2), 3))
        self._matrix = None

    def matrix(self, n: int) -> Any:
        from webrank.kernels.cpu import in_link_matrix

        if self._matrix is None:
            self._matrix = in_link_matrix(self.indptr, self.indices, self.vals, n)
        return self._matrix


class PartVectors:
    """A float64 n-vector kept where a partitioned run's parts are: each home's rows on
    its GPU. NumPy reads it as the whole vector on the host (``np.asarray``, through the
    operator's :meth:`~PartitionedOperator.to_host`), so that solvers written for host
    vectors take it; the power method and the result's normalisation keep it on the
    GPUs."""

    def __init__(self, op: PartitionedOperator, arrays: list[Any]) -> None:
        self.op, self.arrays = op, arrays

    @property
    def shape(self) -> tuple[int]:
        return (self.op.n,)

    @property
    def size(self) -> int:
        return self.op.n

    dtype = np.dtype(np.float64)

    def __len__(self) -> int:
        return self.op.n

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.op.to_host(self)
        return out if dtype is None else out.astype(dtype, copy=False)


class PartitionedOperator(PageRankOperator):
    """The Google matrix of a graph split into row parts across homes and processes.

    Parameters
    ----------
    parts : list of Part
        This process's parts, one list per home of ``comm`` (``comm.homes`` gives their
        indices), in that order.
    bounds : ndarray of int64, shape (P + 1,)
        Row bounds of all P parts of the run.
    comm : Comm
        The transport (:mod:`webrank.distributed.comm`).
    alpha : float
        Damping factor.
    personalization, dangling : ndarray of float64 (n,) or None
        Teleport and dangling distributions, full length (None: uniform).
    dtype : {"float32", "float64"}
        Storage of the gathered vector.
    devices : list of int, optional
        The GPU of each home; None runs every part on the CPU.
    check_every : int, default 16
        GPU steps queued between two reads of the residuals.
    engine : {"auto", "pull", "blocked"}, default "auto"
        The step of a GPU part (:func:`part_engine`).
    placement : Placement, optional
        GPU parts placed by an earlier operator (``parts``, ``bounds``, ``comm`` and
        ``devices`` are then taken from it and may be None).
    """

    name = "partitioned"

    def __init__(self, parts: list[Part] | None, bounds: np.ndarray | None,
                 comm: Comm | None, alpha: float, personalization: np.ndarray | None,
                 dangling: np.ndarray | None, dtype: str, devices: list[int] | None = None,
                 check_every: int = 16, engine: str = "auto",
                 placement: Placement | None = None) -> None:
        if placement is not None:  # the GPUs' parts placed by an earlier call
            bounds, comm, devices = placement.bounds, placement.comm, placement.devices
            if np.dtype(dtype) != placement.dtype:
                raise ValueError(f"the placement stores {placement.dtype.name} gathers, "
                                 f"not {np.dtype(dtype).name}")
        self.comm = comm
        self.bounds = np.asarray(bounds, dtype=np.int64)
        super().__init__(None, alpha, personalization, dangling, dtype,
                         n=int(self.bounds[-1]))
        self.check_every = int(check_every)
        # full-length teleport and dangling vectors only where given (1 GB each at
        # R-MAT 27): uniform ones are a constant in the step
        self._v = None if personalization is None else np.asarray(personalization,
                                                                   dtype=np.float64)
        self._d = self._v if dangling is None else np.asarray(dangling, dtype=np.float64)
        self.devices = None if devices is None else [int(d) for d in devices]
        self.kernel = "native" if self.devices is None else "cuda"
        if engine not in PART_ENGINES:
            raise ValueError(f"engine must be one of {', '.join(PART_ENGINES)} for the parts "
                             f"of a partitioned run, not {engine!r}")
        if self.devices is None:
            if engine != "auto":
                raise ValueError(f"engine={engine!r} is a GPU option; CPU parts run the "
                                 "Numba step")
            self.placement = None
            self._homes = [_HostPart(p, self.dtype) for p in parts]
        else:
            self.placement = placement if placement is not None else Placement.build(
                parts, self.bounds, comm, self.devices, self.dtype, engine)
            self._homes = self.placement.homes
        self.parts = [h.part for h in self._homes]
        self.info = {"engine": "partitioned", "parts": int(self.bounds.size - 1),
                     "part_engines": [getattr(h, "engine", "cpu") for h in self._homes],
                     "processes": comm.size,
                     "part_edges": [p.num_edges for p in self.parts],
                     "comm": type(comm).__name__}
        if self.placement is not None:
            ex = self.placement.exchange
            self.info.update(exchange="all-gather" if ex.padded else "broadcasts",
                             exchanged_values=int(ex.base[-1]),
                             placement_s=self.placement.seconds,
                             placement_phases=self.placement.timings)
        self.timings: dict[str, float] = {}
        self._out_full: np.ndarray | None = None

    @property
    def on_device(self) -> bool:
        return self.devices is not None

    # -- device-resident vectors (PartVectors) ----------------------------------------------
    def _on_homes(self, fn: Any) -> list[Any]:
        """``fn(index, home)`` on each home's GPU and stream (every device op of a run is
        queued on the stream its steps use)."""
        import cupy as cp

        out = []
        for i, h in enumerate(self._homes):
            with cp.cuda.Device(h.device), h.stream:
                out.append(fn(i, h))
        return out

    def full(self, value: float) -> Any:
        if self.devices is None:
            return super().full(value)
        return PartVectors(self, self._on_homes(
            lambda i, h: gpu_arrays.full(h.r1 - h.r0, value)))

    def normalized(self, x: Any) -> Any:
        if not isinstance(x, PartVectors):
            return super().normalized(np.asarray(x))
        local = sum(self._on_homes(lambda i, h: gpu_arrays.vector_sums(x.arrays[i])[0]))
        total = self.comm.sum_host(local)
        if not total > 0:
            return x
        return PartVectors(self, self._on_homes(
            lambda i, h: gpu_arrays.divide(x.arrays[i], total)))

    def to_host(self, a: Any) -> np.ndarray:
        """The whole vector on the host; a :class:`PartVectors` is copied down by one
        thread per GPU, each into its rows of one array (the copies and the page faults
        of a fresh array overlap), then all-gathered across processes."""
        if not isinstance(a, PartVectors):
            return np.asarray(a)
        local = sum(h.r1 - h.r0 for h in self._homes)
        out = np.empty(self.n) if local == self.n else np.zeros(self.n)
        self._download(a, out, 0)
        self._host_gather(out)
        return out

    def local_span(self) -> tuple[int, int]:
        """The rows of this process's parts, ``(first, end)`` (its homes hold
        consecutive parts)."""
        mine = [i for home in self.comm.homes for i in home]
        return int(self.bounds[min(mine)]), int(self.bounds[max(mine) + 1])

    def local_rows(self, a: Any) -> np.ndarray:
        """This process's rows (:meth:`local_span`) of a vector, on the host: a
        :class:`PartVectors` copied down from its GPUs without the all-gather of
        :meth:`to_host` (once the run is over, the rest of a billion-node vector is
        the other processes' to write)."""
        r0, r1 = self.local_span()
        if not isinstance(a, PartVectors):
            return np.asarray(a, dtype=np.float64)[r0:r1]
        out = np.empty(r1 - r0)
        self._download(a, out, r0)
        return out

    def _download(self, a: PartVectors, out: np.ndarray, first: int) -> None:
        """Each home's rows of ``a`` into ``out`` (row ``r`` at ``out[r - first]``), one
        host thread per GPU, the host's cores shared among them."""
        import cupy as cp

        from webrank.kernels.native import available_cpus

        threads = max(1, available_cpus() // len(self._homes))

        def down(i: int) -> None:
            h = self._homes[i]
            with cp.cuda.Device(h.device):
                h.stream.synchronize()
                gpu_arrays.download(a.arrays[i], out[h.r0 - first:h.r1 - first], threads)

        each_device(down, list(range(len(self._homes))))

    def synchronize(self) -> None:
        for h in self._homes:
            if self.devices is not None:
                h.stream.synchronize()

    # -- vectors of the solvers (full length, replicated) ------------------------------
    def teleport(self) -> np.ndarray:
        if self._v is None:  # uniform: made on the first call that needs it, then kept
            self._v = np.full(self.n, 1.0 / self.n)
        return self._v

    def dangling_dist(self) -> np.ndarray:
        return self.teleport() if self._d is None else self._d

    def _host_gather(self, buf: np.ndarray) -> None:
        """All-gather a host vector's part slices across processes (the homes of this
        process have filled theirs)."""
        host = getattr(self.comm, "host", None)
        if host is not None:
            host.allgatherv([buf], self.bounds)
        elif self.devices is None:
            self.comm.allgatherv([buf], self.bounds)
        # several GPUs of one process: every slice is already in this process

    def _out_weight_full(self) -> np.ndarray:
        if self._out_full is None:
            out = np.zeros(self.n)
            for p in self.parts:
                ow = p.out_weight
                out[p.row_begin:p.row_end] = ow.get() if hasattr(ow, "get") else ow
            self._host_gather(out)
            self._out_full = out
        return self._out_full

    def dangling_mass(self, x: Any) -> float:
        return float(np.asarray(x)[self._out_weight_full() == 0].sum())

    def propagate(self, x: Any) -> np.ndarray:
        """``P^T x`` (full length): each part's rows, then all-gathered."""
        ow = self._out_weight_full()
        with np.errstate(divide="ignore", invalid="ignore"):
            xs = np.where(ow > 0, np.asarray(x, dtype=np.float64) / ow, 0.0)
        y = np.zeros(self.n)
        # the GPU parts read the exchange's slots: packed once for all of them
        src = xs if self.devices is None else self._packed_host(xs)
        for home in self._homes:
            if self.devices is None:
                y[home.r0:home.r1] = home.matrix(self.n) @ src
            else:
                y[home.r0:home.r1] = self._device_product(home, src)
        self._host_gather(y)
        return y

    def _packed_host(self, xs: np.ndarray) -> np.ndarray:
        """A node-ordered host vector in the slots of the GPUs' exchange (what the
        renamed sources of the device parts read)."""
        ex = self.placement.exchange
        packed = np.zeros(ex.width)
        for h in self._homes:
            b, rows = int(ex.base[h.part.index]), h.sources
            packed[b:b + rows.size] = xs[h.r0 + rows]
        host = getattr(self.comm, "host", None)
        if host is not None:
            host.allgatherv([packed], ex.base)
        return packed

    def _device_product(self, home: DevicePart, xs: np.ndarray) -> np.ndarray:
        import cupy as cp
        import cupyx.scipy.sparse as csp

        with cp.cuda.Device(home.device):
            if not hasattr(home, "matrix"):
                data = home.vals.astype(np.float64) if home.weighted else cp.ones(
                    home.indices.size, dtype=np.float64)
                home.matrix = csp.csr_matrix(
                    (data, home.indices.astype(np.int32), home.indptr.astype(np.int32)),
                    shape=(home.r1 - home.r0, self.placement.exchange.width))
            return cp.asnumpy(home.matrix @ cp.asarray(xs))

    # -- the partitioned power step -------------------------------------------------------
    def power_steps(self, x: Any, *, tol: float, max_steps: int, criterion: str,
                    callback: Any = None) -> StepsResult:
        if max_steps < 1:
            return self.no_steps(x)
        test = StopTest.of(criterion, tol)
        t0 = time.perf_counter()
        if self.devices is None:
            out = self._host_steps(np.asarray(x, dtype=np.float64), test, max_steps,
                                   callback)
        else:
            out = self._device_steps(x, test, max_steps, callback)
        self.timings["steps_s"] = time.perf_counter() - t0
        self.matvecs += out.residuals.size
        return out

    def _local_v(self, home: Any) -> tuple[np.ndarray, np.ndarray]:
        v = np.array([1.0 / self.n]) if self.uniform_v else self._v[home.r0:home.r1]
        d = (np.array([1.0 / self.n]) if self.uniform_d
             else self.dangling_dist()[home.r0:home.r1])
        return v, d

    def _reduce(self, res: float, rest: np.ndarray, code: int) -> tuple[float, np.ndarray]:
        """All-reduce a step's residual (max for the per-node criterion, kernel code
        ``code``) and its sums."""
        if code == LINF:
            buf = np.array([res])
            self.comm.allreduce([buf], "max")
            self.comm.allreduce([rest], "sum")
            return float(buf[0]), rest
        buf = np.concatenate([[res], rest])
        self.comm.allreduce([buf], "sum")
        return float(buf[0]), buf[1:]

    def _host_steps(self, x: np.ndarray, test: StopTest, max_steps: int,
                    callback: Any) -> StepsResult:
        from webrank.kernels import cpu

        n, homes = self.n, self._homes
        xs, xs_next = np.empty(n, dtype=self.dtype), np.empty(n, dtype=self.dtype)
        xl = [x[h.r0:h.r1].copy() for h in homes]
        xl_next = [np.empty_like(a) for a in xl]
        for h, a in zip(homes, xl, strict=True):
            xs[h.r0:h.r1] = a * h.inv_out
        self.comm.allgatherv([xs], self.bounds)
        _, sums = self._reduce(0.0, np.array([sum(float(a[h.dangling].sum())
                                                  for h, a in zip(homes, xl, strict=True)),
                                              0.0]), 0)
        dm, mass = float(sums[0]), 0.0
        delta = False
        residuals, converged = [], False
        terms = [cpu.StepTerms(*self._local_v(h), inv_out=h.inv_out, alpha=self.alpha,
                               crit=test.code) for h in homes]
        for step in range(1, max_steps + 1):
            res, local = 0.0, np.zeros(2)
            for h, a, b, t in zip(homes, xl, xl_next, terms, strict=True):
                r, ddm, dmass = cpu.fused_step(
                    h.indptr, h.indices, h.vals, t, xs=xs, x=a, dm=dm, mass=mass,
                    delta=delta, bounds=h.bounds, x_out=b, xs_out=xs_next[h.r0:h.r1],
                    partial=h.partial)
                res = max(res, r) if test.code == LINF else res + r
                local += (ddm, dmass)
            if self.delta_steps and not delta:
                # from now on gather the change (see kernels.cpu.fused_step)
                local[:] = 0.0
                for h, a, b in zip(homes, xl, xl_next, strict=True):
                    change = b - a
                    xs_next[h.r0:h.r1] = change * h.inv_out
                    local += (change[h.dangling].sum(), change.sum())
                delta = True
            res, sums = self._reduce(res, local, test.code)
            dm, mass = float(sums[0]), float(sums[1])
            self.comm.allgatherv([xs_next], self.bounds)
            xs, xs_next = xs_next, xs
            xl, xl_next = xl_next, xl
            residuals.append(float(test.residuals(res)))
            if callback is not None:
                callback(step, residuals[-1])
            if res < test.tol_cmp:
                converged = True
                break
        full = np.zeros(n)
        for h, a in zip(homes, xl, strict=True):
            full[h.r0:h.r1] = a
        self._host_gather(full)
        return StepsResult(x=full, residuals=np.asarray(residuals), converged=converged)

    def _device_steps(self, x: Any, test: StopTest, max_steps: int,
                      callback: Any) -> StepsResult:
        import cupy as cp

        from webrank.kernels.cuda_common import ACC_WIDTH, DELTA, FIRST_DELTA, PLAIN

        n, homes, comm = self.n, self._homes, self.comm
        exchange = self.placement.exchange

        def start(i: int, h: DevicePart) -> dict[str, Any]:
            if isinstance(x, PartVectors):  # the run's own copy: steps write both buffers
                xa = gpu_arrays.copy_vector(x.arrays[i])
            else:
                xa = cp.asarray(np.ascontiguousarray(x[h.r0:h.r1], dtype=np.float64))
            xs = [cp.zeros(exchange.width, dtype=self.dtype) for _ in range(2)]
            cp.copyto(h.scratch, gpu_arrays.gather_vector(xa, h.inv_out, self.dtype))
            h.pack(xs[0])
            # row 0: (inf, dangling mass, mass, L1 norm) of this part's rows
            hist = cp.zeros((max_steps + 1, ACC_WIDTH))
            gpu_arrays.write_history_start(xa, h.dangling, hist[0])
            v = cp.zeros(1) if self.uniform_v else cp.asarray(self._v[h.r0:h.r1])
            d = cp.zeros(1) if self.uniform_d else cp.asarray(self._d[h.r0:h.r1])
            h.bind(n=n, v=v, d=d, uniform_v=self.uniform_v, uniform_d=self.uniform_d,
                   alpha=self.alpha, crit=test.code, tol_cmp=test.tol_cmp)
            return {"x": [xa, cp.empty_like(xa)], "xs": xs, "hist": hist}

        state = self._on_homes(start)
        comm.allreduce([s["hist"][0, 1:] for s in state], "sum")
        exchange.move(comm, [s["xs"][0] for s in state])
        first, stop, done = 1, None, 0
        gather_s = 0.0
        while stop is None and done < max_steps:
            last = min(done + self.check_every, max_steps)
            for step in range(done + 1, last + 1):
                i, o = (step - 1) % 2, step % 2
                mode = ((FIRST_DELTA if step == 1 else DELTA) if self.delta_steps
                        else PLAIN)
                for h, s in zip(homes, state, strict=True):
                    with cp.cuda.Device(h.device), h.stream:
                        hist = s["hist"]
                        h.launch(xs_in=s["xs"][i], x_in=s["x"][i], acc_prev=hist[step - 1],
                                 acc_out=hist[step], mode=mode, x_out=s["x"][o],
                                 xs_out=s["xs"][o])
                if test.code == LINF:
                    comm.allreduce([s["hist"][step, 0:1] for s in state], "max")
                    comm.allreduce([s["hist"][step, 1:] for s in state], "sum")
                else:
                    comm.allreduce([s["hist"][step] for s in state], "sum")
                exchange.move(comm, [s["xs"][o] for s in state])
            t = time.perf_counter()
            comm.wait("the partitioned steps")  # raises naming silent ranks on a timeout
            gather_s += time.perf_counter() - t
            with cp.cuda.Device(homes[0].device):
                # rows, then the column on the host (a strided column needs a kernel)
                res = state[0]["hist"][first:last + 1].get()[:, 0]
            stop = test.first_below(res, first, callback)
            done, first = last, last + 1
        steps = stop if stop is not None else done
        with cp.cuda.Device(homes[0].device):
            residuals = test.residuals(state[0]["hist"][1:steps + 1].get()[:, 0])
        self.timings["wait_s"] = gather_s
        # the iterate stays on the GPUs (to_host() or NumPy bring it down)
        return StepsResult(x=PartVectors(self, [s["x"][steps % 2] for s in state]),
                           residuals=residuals, converged=stop is not None)


def _on_host(method: Any) -> Any:
    """``method`` of the operator base class with its :class:`PartVectors` arguments
    brought to the host first (the solvers' vector algebra beyond the power method works
    on replicated host vectors)."""
    def run(self: PartitionedOperator, *args: Any, **kwargs: Any) -> Any:
        return method(self, *(self.to_host(a) if isinstance(a, PartVectors) else a
                              for a in args), **kwargs)

    run.__name__, run.__doc__ = method.__name__, method.__doc__
    return run


for _name in ("copy", "axpy", "scale", "dot", "total", "norm", "clipped", "aitken",
              "project", "add_combination", "combine_rows", "no_steps"):
    setattr(PartitionedOperator, _name, _on_host(getattr(PageRankOperator, _name)))
