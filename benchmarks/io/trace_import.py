"""Who imports a module first: run a module as ``python -m`` would, printing the stack
of the first import of each named module (to stderr), with the time since start.

    python benchmarks/io/trace_import.py cupyx,scipy -- -m webrank rank g.txt --device gpu

A whole-process run pays for every import on its path; a heavy one pulled in by a side
door (CuPy's ``__array_ufunc__`` imports ``cupyx.scipy.special``, which imports SciPy)
shows here with the line of ours that opened it. Writes no file (``run.sh pipeline`` keeps
its output: ``benchmarks/results/io/h100/pipeline/imports_and_uploads/trace_rmat23_txt.txt``).
"""

from __future__ import annotations

import importlib.abc
import runpy
import sys
import time
import traceback

T0 = time.perf_counter()


class FirstImport(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname, path, target=None):
        if fullname in self.names:
            self.names.discard(fullname)
            print(f"--- first import of {fullname} at {time.perf_counter() - T0:.3f} s",
                  file=sys.stderr)
            traceback.print_stack(sys._getframe(1), file=sys.stderr)
        return None  # the usual finders do the import


def main() -> None:
    names, sep, *rest = sys.argv[1:]
    if sep != "--" or not rest or rest[0] != "-m":
        raise SystemExit(__doc__)
    sys.meta_path.insert(0, FirstImport(set(names.split(","))))
    sys.argv = rest[1:]
    runpy.run_module(rest[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
