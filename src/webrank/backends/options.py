"""The power step a call runs and its tuning, as one record checked once at the entry.

``webrank.pagerank(engine=..., engine_options={...})`` becomes one frozen
:class:`EngineOptions` (:meth:`EngineOptions.from_call`: unknown names, the values);
once the device is known, :meth:`EngineOptions.for_device` checks what depends on it (the
engine's name, the options each engine takes, the ranges that depend on the precision)
and the record goes down to the operator as it is. The backends read its fields and
check nothing again.

Which engine takes which option is listed here once (:data:`GPU_ENGINE_OPTIONS`,
:data:`HYBRID_OPTIONS`); ``engine="auto"`` on the GPU chooses among the engines that take
every option given (:meth:`EngineOptions.candidates`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from webrank.backends.base import CPU_ENGINES, GPU_ENGINES
from webrank.backends.gpu_blocked_budget import plan_args

__all__ = [
    "CHECK_EVERY",
    "DEFAULTS",
    "DEFAULT_GPU_LINKS",
    "ENGINE_OPTION_NAMES",
    "GPU_COMMON_OPTIONS",
    "GPU_ENGINE_OPTIONS",
    "HYBRID_OPTIONS",
    "REORDERINGS",
    "EngineOptions",
]

#: power steps between two reads of the residual history, where not given (GPU engines
#: without CUDA graphs, the parts of a run on several GPUs)
CHECK_EVERY = 16
#: in-links per row left to the GPU by the hybrid method when ``gpu_links`` is not given
DEFAULT_GPU_LINKS = 1024
#: the gather orders of the pull step's ``xs`` (``reorder=``)
REORDERINGS = (None, "auto", "out-degree")

#: the tuning options every GPU engine takes (the persistent engine ignores the CUDA-graph
#: ones, the stream engine both: a streamed step is not a CUDA graph)
GPU_COMMON_OPTIONS = ("check_every", "graph_steps", "use_graph")
#: the tuning options each GPU engine takes besides the common ones
GPU_ENGINE_OPTIONS = {
    "pull": ("lanes_per_row", "heavy_threshold", "reorder"),
    "persistent": ("heavy_threshold", "reorder", "launch_steps"),
    "blocked": ("part_rows", "chunk_bits"),
    "stream": ("device_memory_limit", "chunk_edges"),
}
#: the options of the CPU+GPU hybrid operator (``method="hybrid"``): its split of each
#: row's in-links and the pull step's row tuning (it runs no CUDA graph)
HYBRID_OPTIONS = ("gpu_links", "lanes_per_row", "heavy_threshold")
#: every name ``engine_options=`` may hold, on any device
ENGINE_OPTION_NAMES = tuple(dict.fromkeys(
    [*GPU_COMMON_OPTIONS, *(o for opts in GPU_ENGINE_OPTIONS.values() for o in opts),
     *HYBRID_OPTIONS]))


@dataclass(frozen=True)
class EngineOptions:
    """The power step of a call (``engine``) and its tuning, checked.

    Made by :meth:`from_call` from ``pagerank``'s ``engine`` and ``engine_options``;
    ``given`` holds the option names the caller set (``engine="auto"`` chooses among the
    engines taking all of them; an engine refuses the ones it does not take). A field
    not given keeps its default.

    Attributes
    ----------
    engine : str, default "auto"
        The power step: on the CPU ``"auto"``, ``"pull"`` or ``"blocked"``
        (:mod:`webrank.backends.cpu`); on the GPU also ``"persistent"`` and ``"stream"``
        (:mod:`webrank.backends.gpu_engines`); ``"hybrid"`` for ``method="hybrid"``.
    check_every : int or None, default None
        Power steps between two reads of the residual history on the GPU (without CUDA
        graphs). None: CHECK_EVERY (16); the stream engine 1.
    graph_steps : int, default 32
        Power steps captured in one CUDA graph (even, at least 2).
    use_graph : bool, default True
        False queues plain kernel launches instead of CUDA-graph replays.
    lanes_per_row : {1, 2, 4, 8, 16, 32} or None, default None
        Threads of the pull step sharing one row of at most ``heavy_threshold`` in-links;
        None: from the mean in-degree of those rows. (The persistent engine's warps stage
        32 rows' in-links at a time instead, and do not take it.)
    heavy_threshold : int or None, default None
        In-links above which a row is summed by warps of its own; None:
        :data:`webrank.backends.gpu.HEAVY_THRESHOLD` (64), and for the persistent engine
        :data:`webrank.backends.gpu.PERSISTENT_HEAVY_THRESHOLD` (64).
    reorder : {"auto", None, "out-degree"}, default "auto"
        Node order of the pull step's gathered vector (:class:`~webrank.backends.gpu.GPUOperator`).
    launch_steps : int or None, default None
        Steps per launch of the persistent engine (None: the whole solve; 64 with a
        callback).
    part_rows, chunk_bits : int or None, default None
        The blocked engine's largest destination partition (rows) and source chunk
        (``2**chunk_bits`` ids); None: what fits its shared-memory budget.
    device_memory_limit, chunk_edges : int or None, default None
        The stream engine's cap on device bytes (None: 90% of the free memory) and
        links per streamed chunk (None: half of what the cap leaves for the buffers).
    gpu_links : int or None, default None
        In-links of each row summed on the GPU by the hybrid method, the rest on the CPU
        (None: DEFAULT_GPU_LINKS, 1024).
    given : frozenset of str
        The option names the caller set.
    """

    engine: str = "auto"
    check_every: int | None = None
    graph_steps: int = 32
    use_graph: bool = True
    lanes_per_row: int | None = None
    heavy_threshold: int | None = None
    reorder: str | None = "auto"
    launch_steps: int | None = None
    part_rows: int | None = None
    chunk_bits: int | None = None
    device_memory_limit: int | None = None
    chunk_edges: int | None = None
    gpu_links: int | None = None
    given: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """The values, each on its own (what depends on the device or the precision is
        :meth:`for_device`'s)."""
        if self.check_every is not None and not _integer(self.check_every):
            raise ValueError("check_every must be a positive integer")
        if not _integer(self.graph_steps) or self.graph_steps < 2 or self.graph_steps % 2:
            raise ValueError("graph_steps must be an even integer >= 2")
        if self.launch_steps is not None and not _integer(self.launch_steps):
            raise ValueError("launch_steps must be a positive integer")
        if self.heavy_threshold is not None and not _integer(self.heavy_threshold, 0):
            raise ValueError("heavy_threshold must be a non-negative integer")
        if self.gpu_links is not None and not _integer(self.gpu_links):
            raise ValueError(f"gpu_links must be a positive integer, not {self.gpu_links!r}")
        if self.reorder not in REORDERINGS:
            raise ValueError(f"reorder must be one of {REORDERINGS}, not {self.reorder!r}")
        if self.lanes_per_row is not None:
            from webrank.kernels.cuda import GROUPS

            if self.lanes_per_row not in GROUPS:
                raise ValueError(f"lanes_per_row must be one of {GROUPS}")

    @classmethod
    def from_call(cls, engine: str = "auto",
                  engine_options: Mapping[str, Any] | None = None) -> EngineOptions:
        """The record of ``pagerank(engine=, engine_options=)``: ValueError for a name no
        engine takes or a value out of range."""
        tuning = dict(engine_options or {})
        unknown = sorted(set(tuning) - set(ENGINE_OPTION_NAMES))
        if unknown:
            raise ValueError(f"unknown engine options {unknown}; the engines take "
                             f"{', '.join(sorted(ENGINE_OPTION_NAMES))}")
        return cls(engine=engine, **tuning, given=frozenset(tuning))

    def candidates(self) -> tuple[str, ...]:
        """The GPU engines taking every option given (``engine="auto"`` picks one)."""
        given = self.given - set(GPU_COMMON_OPTIONS)
        return tuple(e for e, own in GPU_ENGINE_OPTIONS.items() if given <= set(own))

    def for_device(self, device: str, dtype: Any, *, hybrid: bool = False) -> EngineOptions:
        """This record checked for ``device`` ("cpu" or "gpu") and storage ``dtype``:
        the engine is one of the device's and takes every option given. ``hybrid``
        (``method="hybrid"``): the CPU+GPU operator, engine ``"hybrid"``."""
        given = sorted(self.given)
        if hybrid:
            if self.engine != "auto":
                raise ValueError("option 'engine' does not apply to the hybrid method")
            wrong = sorted(self.given - set(HYBRID_OPTIONS))
            if wrong:
                raise ValueError(f"options {wrong} do not apply to the hybrid method (it "
                                 f"takes {', '.join(HYBRID_OPTIONS)})")
            return dataclasses.replace(self, engine="hybrid")
        if "gpu_links" in self.given:
            raise ValueError("options ['gpu_links'] apply to method='hybrid' only")
        if device == "cpu":
            if self.engine not in CPU_ENGINES:
                raise ValueError(f"engine {self.engine!r} is not a CPU engine; the CPU runs "
                                 f"{', '.join(repr(e) for e in CPU_ENGINES)}")
            if given:
                raise ValueError(f"options {given} apply to device='gpu' only")
            return self
        if self.engine not in GPU_ENGINES:
            raise ValueError(f"engine must be one of {', '.join(GPU_ENGINES)}; not "
                             f"{self.engine!r}")
        engines = self.candidates() if self.engine == "auto" else (self.engine,)
        if self.engine != "auto" and engines[0] not in self.candidates():
            own = GPU_ENGINE_OPTIONS[self.engine]
            wrong = sorted(self.given - set(own) - set(GPU_COMMON_OPTIONS))
            raise ValueError(f"options {wrong} do not apply to engine {self.engine!r} (it "
                             f"takes {', '.join(own)})")
        if not engines:
            raise ValueError(f"options {given} are not all taken by one engine: "
                             + "; ".join(f"{e} takes {', '.join(own)}"
                                         for e, own in GPU_ENGINE_OPTIONS.items()))
        if "blocked" in engines and {"part_rows", "chunk_bits"} & self.given:
            plan_args(np.dtype(dtype), self.part_rows, self.chunk_bits)
        return self

    def for_parts(self) -> None:
        """ValueError where an option is given that the parts of a run on several GPUs
        do not take (each runs the pull or the blocked step on its rows: ``engine`` and
        ``check_every`` only)."""
        wrong = sorted(self.given - {"check_every"})
        if wrong:
            raise ValueError(f"options {wrong} do not apply with gpus > 1 (each GPU runs "
                             "the pull or the blocked step on its rows: engine=)")


def _integer(value: Any, least: int = 1) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``least``."""
    return (isinstance(value, int | np.integer) and not isinstance(value, bool)
            and value >= least)


#: every option at its default, engine "auto"
DEFAULTS = EngineOptions()
