"""The GPU engines' power-steps loop, written once: steps queued as a CUDA graph and
replayed, the residual history read back once per replay.

An engine's step is an object (:class:`ReplayedStep`): :meth:`ReplayedStep.begin` binds
a run's constants (the stopping test, the replay counter), :meth:`ReplayedStep.launch`
queues one step on the current stream. :meth:`Replay.run` drives it: step 1 on its own
(a plain step, whose outputs are the change ``x_1 - x_0`` when the run goes on with delta
steps), then ``graph_steps`` steps captured in one CUDA graph with the archive kernel
that copies their residual rows into the history, replayed until a residual is below the
tolerance or ``max_steps`` are done. Steps past either return at once on the device
(``wr_skip_step``), so the answer is that of the exact step count. Without graphs, plain
launches, ``check_every`` at a time.

Every engine's residual rows are ``(residual, dangling mass, mass, L1 norm)`` after each
step (:data:`~webrank.kernels.cuda_common.ACC_WIDTH` float64 each; row 0: the start);
:func:`kept_residuals` reads a batch of them back in one copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from webrank.backends.base import StepsResult
from webrank.kernels import cuda as kernels
from webrank.kernels.criteria import StopTest
from webrank.kernels.cuda_common import ACC_WIDTH, DELTA, FIRST_DELTA, PLAIN

__all__ = ["Replay", "ReplayedStep", "kept_residuals"]


class ReplayedStep(Protocol):
    """One engine's power step, as :meth:`Replay.run` drives it."""

    def begin(self, test: StopTest, chunk: Any) -> None:
        """Bind a run's constants before its first launch: the stopping test and the
        replay counter ``chunk`` (a device ``uint64``, advanced by the archive kernel at
        the end of each replay); reset per-run device state."""

    def gather_vector(self, x: Any) -> Any:
        """The vector the first step gathers from ``x``: ``x / out_degree`` in the storage
        precision and the step's gather order."""

    def launch(self, *, xs_in: Any, x_in: Any, acc_prev: Any, acc_out: Any, mode: int,
               x_out: Any, xs_out: Any, step0: int, chunk_len: int, max_steps: int) -> None:
        """Queue one step on the current stream: from ``x_in`` (gathering ``xs_in``) to
        ``x_out`` and ``xs_out``, reading the residual row ``acc_prev`` and accumulating
        into ``acc_out``; ``mode`` a :mod:`webrank.kernels.cuda_common` step mode;
        ``step0``, ``chunk_len`` and ``max_steps`` place the step in a replayed window
        (``wr_skip_step``)."""


def kept_residuals(hist: Any, first: int, last: int) -> np.ndarray:
    """The residuals of steps ``first..last`` as the kernels kept them, from a device
    history of rows (one copy of whole rows, and the one synchronisation of a batch: a
    column would be copied by a kernel)."""
    import cupy as cp

    return np.ascontiguousarray(cp.asnumpy(hist[first:last + 1])[:, 0])


@dataclass(frozen=True)
class Replay:
    """How an operator queues its steps.

    Attributes
    ----------
    stream : cupy.cuda.Stream
        The operator's stream (the thread's work stream,
        :func:`~webrank.backends.gpu_arrays.work_stream`: a CUDA graph cannot be captured
        on the legacy default stream).
    graph_steps : int
        Steps captured in one CUDA graph (even).
    use_graph : bool
        False: plain launches, ``check_every`` between two reads of the residuals.
    check_every : int
        Steps queued between two reads of the residuals without graphs.
    """

    stream: Any
    graph_steps: int
    use_graph: bool
    check_every: int

    def run(self, step: ReplayedStep, x0: Any, *, test: StopTest, max_steps: int,
            delta_steps: bool, start_history: Callable[[Any, Any], None],
            callback: Any = None) -> StepsResult:
        """Up to ``max_steps`` (at least 1) steps of ``step`` from ``x0`` (float64, on the
        device), stopping after the first whose residual passes ``test``; called on
        :attr:`stream`. ``start_history(x0, row)`` writes row 0 of the history;
        ``delta_steps``: the steps after the first gather the change (float32)."""
        import cupy as cp

        xs0 = step.gather_vector(x0)
        xb = [cp.empty_like(x0), cp.empty_like(x0)]
        xsb = [cp.empty_like(xs0), cp.empty_like(xs0)]
        B = self.graph_steps
        # row s: (residual, dangling mass, mass, L1 norm) after step s; row 0: x0
        hist = cp.zeros((max_steps + 2 + B, ACC_WIDTH), dtype=np.float64)
        start_history(x0, hist[0])
        chunk = cp.zeros(1, dtype=np.uint64)
        step.begin(test, chunk)
        # step 1 is a plain step (whose outputs are the change x_1 - x_0 when the run
        # goes on with delta steps); step s >= 1 writes xb[(s - 1) % 2]
        delta = DELTA if delta_steps else PLAIN
        step.launch(xs_in=xs0, x_in=x0, acc_prev=hist[0], acc_out=hist[1],
                    mode=FIRST_DELTA if delta_steps else PLAIN, x_out=xb[0], xs_out=xsb[0],
                    step0=1, chunk_len=0, max_steps=max_steps)
        graph = None
        if self.use_graph and max_steps - 1 >= 2 * B:
            ring = cp.zeros((B + 1, ACC_WIDTH), dtype=np.float64)
            ring[0] = hist[1]
            self.stream.begin_capture()
            for r in range(B):
                step.launch(xs_in=xsb[r % 2], x_in=xb[r % 2], acc_prev=ring[r],
                            acc_out=ring[r + 1], mode=delta, x_out=xb[(r + 1) % 2],
                            xs_out=xsb[(r + 1) % 2], step0=2 + r, chunk_len=B,
                            max_steps=max_steps)
            kernels.get_archive_kernel()((1,), (128,), kernels.ARCHIVE.pack(
                ring=ring, B=B, W=ACC_WIDTH, hist=hist[2:], chunk=chunk))
            graph = self.stream.end_capture()
        done, first, stop = 1, 1, None
        while True:
            stop = test.first_below(kept_residuals(hist, first, done), first, callback)
            if stop is not None or done >= max_steps:
                break
            first = done + 1
            if graph is not None:
                graph.launch(self.stream)
                done = min(done + B, max_steps)
            else:
                for s in range(done + 1, min(done + self.check_every, max_steps) + 1):
                    i = s % 2  # step s reads xb[s % 2] and writes xb[(s - 1) % 2]
                    step.launch(xs_in=xsb[i], x_in=xb[i], acc_prev=hist[s - 1],
                                acc_out=hist[s], mode=delta, x_out=xb[1 - i],
                                xs_out=xsb[1 - i], step0=s, chunk_len=0,
                                max_steps=max_steps)
                    done = s
        steps = stop if stop is not None else done
        residuals = kept_residuals(hist, 1, steps)
        self.stream.synchronize()
        return StepsResult(x=xb[(steps - 1) % 2], residuals=test.residuals(residuals),
                           converged=stop is not None)
