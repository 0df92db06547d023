"""GPU backend: CuPy arrays and the fused CUDA step of :mod:`webrank.kernels.cuda`.

The graph goes to the device once (cached on the Graph object for later runs); the
power iterations queue on the stream and the host reads the residual history every
``check_every`` steps, one small copy, instead of synchronising each iteration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.backends.base import PageRankOperator, StepsResult
from webrank.errors import DeviceMemoryError
from webrank.graph import Graph
from webrank.kernels import cuda as kernels

_BLOCK = 256
_CRIT = {"l1": 0, "l2": 1, "linf": 2}


def _device_arrays(graph: Graph, dtype: np.dtype) -> dict[str, Any]:
    """The graph's CSR on the current device, uploaded once and kept on the Graph."""
    import cupy as cp

    key = ("gpu", cp.cuda.Device().id, dtype.name)
    cached = graph._cache.get(key)
    if cached is not None:
        return cached
    vals = graph.transition_values()
    need = graph.indptr.nbytes + graph.indices.nbytes + graph.n * (8 * 6 + 2 * dtype.itemsize)
    if vals is not None:
        need += vals.size * dtype.itemsize
    free, _total = cp.cuda.runtime.memGetInfo()
    pool_free = cp.get_default_memory_pool().free_bytes()
    if need > free + pool_free:
        raise DeviceMemoryError(need, free + pool_free, f"{graph!r}")
    arrays = {
        "indptr": cp.asarray(graph.indptr),
        "indices": cp.asarray(graph.indices),
        "vals": None if vals is None else cp.asarray(vals.astype(dtype)),
        "dangling": cp.asarray(graph.dangling),
    }
    graph._cache[key] = arrays
    return arrays


class GPUOperator(PageRankOperator):
    """The Google matrix on an NVIDIA GPU (see :class:`~webrank.backends.base.PageRankOperator`).

    Options
    -------
    check_every : int, default 16
        Power steps queued between two reads of the residual history.
    """

    name = "gpu"

    def __init__(
        self,
        graph: Graph,
        alpha: float,
        personalization: np.ndarray | None,
        dangling: np.ndarray | None,
        dtype: str,
        *,
        check_every: int = 16,
    ) -> None:
        import cupy as cp

        super().__init__(graph, alpha, personalization, dangling, dtype)
        self.xp = cp
        if int(check_every) < 1:
            raise ValueError("check_every must be a positive integer")
        self.check_every = int(check_every)
        self._g = _device_arrays(graph, self.dtype)
        n = self.n
        self._v = cp.full(n, 1.0 / n) if personalization is None else cp.asarray(personalization)
        self._d = self._v if dangling is None else cp.asarray(dangling)
        weighted = self._g["vals"] is not None
        if weighted:
            self._inv_out = cp.where(self._g["dangling"], 0.0, 1.0)
        else:
            ow = cp.asarray(graph.out_weight)
            self._inv_out = cp.where(ow > 0, 1.0 / cp.where(ow > 0, ow, 1.0), 0.0)
        avg = graph.num_edges / max(n, 1)
        self._group = kernels.pick_group(avg)
        self._kernel = kernels.get_kernel(
            graph.indptr.dtype.name, graph.indices.dtype.name, self.dtype.name, weighted,
            self._group,
        )
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        rows_per_block = _BLOCK // self._group
        self._grid = int(min(max(1, -(-n // rows_per_block)), sms * 16))
        self._empty_vals = cp.zeros(1, dtype=self.dtype)

    # -- operator primitives ----------------------------------------------------------
    def to_host(self, a: Any) -> np.ndarray:
        return self.xp.asnumpy(a)

    def synchronize(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()

    def teleport(self) -> Any:
        return self._v

    def dangling_dist(self) -> Any:
        return self._d

    def dangling_mass(self, x: Any) -> float:
        return float(x[self._g["dangling"]].sum())

    def _pt(self):
        import cupyx.scipy.sparse as csp

        if "pt" not in self._g:
            g = self.graph
            vals = self._g["vals"]
            data = vals.astype(np.float64) if vals is not None else self.xp.ones(
                g.num_edges, dtype=np.float64)
            self._g["pt"] = csp.csr_matrix(
                (data, self._g["indices"].astype(np.int32), self._g["indptr"].astype(np.int32)),
                shape=(g.n, g.n),
            )
        return self._g["pt"]

    def propagate(self, x: Any) -> Any:
        if self._g["vals"] is not None:
            return self._pt() @ x
        return self._pt() @ (x * self._inv_out)

    # -- the fused hot loop -----------------------------------------------------------
    def power_steps(
        self, x: Any, *, tol: float, max_steps: int, criterion: str, callback: Any = None
    ) -> StepsResult:
        cp = self.xp
        n = self.n
        crit = _CRIT[criterion]
        tol_cmp = tol * tol if criterion == "l2" else tol
        xb = [cp.array(x, dtype=np.float64), cp.empty(n, dtype=np.float64)]
        xsb = [(xb[0] * self._inv_out).astype(self.dtype), cp.empty(n, dtype=self.dtype)]
        # row k: (residual, dangling mass, mass) after step k; row 0 describes x itself
        acc = cp.zeros((max_steps + 1, 3), dtype=np.float64)
        acc[0, 0] = np.inf
        acc[0, 1] = self.dangling_mass(xb[0])
        vals = self._g["vals"] if self._g["vals"] is not None else self._empty_vals
        args_fixed = (np.int64(n), self._g["indptr"], self._g["indices"], vals)
        uv, ud = np.int32(self.uniform_v), np.int32(self.uniform_d)
        done = 0
        stop = None
        while done < max_steps and stop is None:
            batch = min(self.check_every, max_steps - done)
            for k in range(done, done + batch):
                src, dst = k % 2, (k + 1) % 2
                delta = self.delta_steps and k > 0
                self._kernel(
                    (self._grid,), (_BLOCK,),
                    (*args_fixed, xsb[src], xb[src], self._v, self._d, uv, ud,
                     self._inv_out, np.float64(self.alpha), acc[k], acc[k + 1],
                     np.int32(crit), np.float64(tol_cmp), np.int32(delta), xb[dst], xsb[dst]),
                )
                if self.delta_steps and k == 0:
                    # switch to delta steps: gather (x_1 - x_0) / out, queued on the stream
                    d1 = xb[1] - xb[0]
                    xsb[1][...] = d1 * self._inv_out
                    acc[1, 1] = d1[self._g["dangling"]].sum()
                    acc[1, 2] = d1.sum()
            done += batch
            res = cp.asnumpy(acc[1 : done + 1, 0])  # the one sync of the batch
            below = np.flatnonzero(res < tol_cmp)
            if below.size:
                stop = int(below[0]) + 1
            if callback is not None:
                last = res[stop - 1] if stop else res[-1]
                callback(stop or done, float(np.sqrt(last) if crit == 1 else last))
        steps = stop if stop is not None else done
        residuals = cp.asnumpy(acc[1 : steps + 1, 0])
        if crit == 1:
            residuals = np.sqrt(residuals)
        self.matvecs += steps
        return StepsResult(x=xb[steps % 2], residuals=residuals, converged=stop is not None)

    def memory_estimate(self) -> int:
        g = self.graph
        return g.indptr.nbytes + g.indices.nbytes + g.n * (8 * 6 + 2 * self.dtype.itemsize)
