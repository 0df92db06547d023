"""The ``webrank`` console script and ``python -m webrank``.

Before the command line's modules are imported (a few tenths of a second of the
process), a command that may run on the GPU starts creating the CUDA context on a
thread of its own (:mod:`webrank.kernels.cuda_context`): the two overlap, where a GPU
run otherwise waited for one, then the other. Then :func:`webrank.cli.run`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["main", "may_use_gpu"]

#: commands that run on the GPU where one is usable (``--device`` defaults to ``auto``)
GPU_COMMANDS = frozenset({"rank", "ppr"})


def may_use_gpu(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` (without the program name) names a command
    that runs on this process's first GPU where one is usable: ``rank`` or ``ppr``
    without ``--device cpu``, not ``--distributed`` (a process of a partitioned run
    uses its local rank's GPU), with CuPy installed and ``WEBRANK_GPU_WARMUP`` not
    ``0``. Read from the words alone: the command line's own parse comes later and
    has the last word on everything."""
    import importlib.util

    if os.environ.get("WEBRANK_GPU_WARMUP", "1") == "0" or not argv:
        return False
    if argv[0] not in GPU_COMMANDS or "--distributed" in argv:
        return False
    for i, word in enumerate(argv):
        if word == "--device" and i + 1 < len(argv):
            if argv[i + 1] == "cpu":
                return False
        elif word == "--device=cpu":
            return False
    return importlib.util.find_spec("cupy") is not None


def main() -> None:
    """Run the command line (the console script's entry point)."""
    if may_use_gpu(sys.argv[1:]):
        from webrank.kernels.cuda_context import start_primary_context

        start_primary_context()
    from webrank.cli import run

    run()
