"""The host half of a staged GPU copy: ``webrank.kernels.cpu_build.copy_bytes`` moving 8 MiB
slices out of a page-locked buffer into a faulted array of 34 MiB (R-MAT 22's scores) and
512 MiB, with non-temporal stores and with ``memcpy``, on all threads; medians of 9.

    python benchmarks/gpu/host_copy.py        (needs CuPy for the page-locked buffer)

Prints the rates (published: ``benchmarks/results/gpu/h100/whole_call/host_copy.txt``).
"""

import statistics
import time

import numpy as np

from webrank.backends.gpu_arrays import pinned_empty
from webrank.kernels.cpu_build import copy_bytes

SLICE = 1 << 23


def main() -> None:
    slice_ = pinned_empty(SLICE, np.uint8)
    slice_[:] = 1
    for n_bytes in (34 << 20, 512 << 20):
        dst = np.empty(n_bytes, np.uint8)
        dst[:] = 0
        for streaming in (True, False, True, False):
            ts = []
            for _ in range(9):
                t = time.perf_counter()
                for off in range(0, n_bytes, SLICE):
                    size = min(SLICE, n_bytes - off)
                    copy_bytes(dst[off:off + size], slice_[:size], streaming=streaming)
                ts.append(time.perf_counter() - t)
            med = statistics.median(ts)
            print(f"host copy of {n_bytes >> 20} MiB from an 8 MiB pinned slice, "
                  f"streaming={streaming}: {med * 1e3:.2f} ms ({n_bytes / med / 1e9:.1f} GB/s)")


if __name__ == "__main__":
    main()
