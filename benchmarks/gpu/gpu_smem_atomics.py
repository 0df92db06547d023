"""Why the blocked engine's gather sums in 64-bit fixed point: shared-memory atomics on
the GPU, measured.

Times one billion shared-memory additions per kernel (each thread adds to a 4,096-entry
array in shared memory, like one partition's sums) for: float ``atomicAdd`` (a
compare-and-swap loop on NVIDIA GPUs), 64-bit integer ``atomicAdd``, and two 32-bit adds
with a carry;
with random destinations (no conflicts) and with every lane of a warp on one destination
(a hub row). Then compiles the blocked engine's kernels with nvcc and counts the
shared-memory atomic instructions in their SASS (cuobjdump), to show which one the
gather uses.

    python benchmarks/gpu/gpu_smem_atomics.py [--out FILE.json]

Results: ``--out`` (default ``gpu_smem_atomics.json`` here; published:
``benchmarks/results/gpu/h100/gpu_smem_atomics.json``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SOURCE = r"""
typedef unsigned long long u64;
#define ROWS 4096
template <int KIND>
__global__ void adds(const unsigned* __restrict__ dst, const float* __restrict__ val,
                     const long long n, const int conflict, u64* out)
{
    __shared__ u64 sums[ROWS];
    float* fsums = reinterpret_cast<float*>(sums);
    unsigned* lo = reinterpret_cast<unsigned*>(sums);
    for (int i = threadIdx.x; i < ROWS; i += blockDim.x) sums[i] = 0;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += stride) {
        const unsigned d = conflict ? dst[k >> 5] % ROWS : dst[k] % ROWS;
        const float v = val[k & 1023];
        if (KIND == 0) {
            atomicAdd(&fsums[d], v);
        } else if (KIND == 1) {
            atomicAdd(&sums[d], (u64)__float2ll_rn(v * 1e9f));
        } else {
            const u64 q = (u64)__float2ll_rn(v * 1e9f);
            const unsigned l = (unsigned)q, old = atomicAdd(&lo[2 * (d % (ROWS / 2))], l);
            atomicAdd(&lo[2 * (d % (ROWS / 2)) + 1], (unsigned)(q >> 32) + (old + l < old));
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, sums[0]);
}
"""
KINDS = {0: "float atomicAdd (CAS loop)", 1: "64-bit integer atomicAdd",
         2: "two 32-bit adds with carry"}


def measure() -> list[dict]:
    import cupy as cp

    n = 1 << 30
    rng = cp.random.default_rng(1)
    dst = rng.integers(0, 2**31, size=n, dtype=cp.uint32)
    val = rng.random(1024, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.uint64)
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",),
                       name_expressions=[f"adds<{k}>" for k in KINDS])
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = []
    for kind, label in KINDS.items():
        fn = mod.get_function(f"adds<{kind}>")
        for conflict in (0, 1):
            args = (dst, val, np.int64(n), np.int32(conflict), out)
            fn((sms * 2,), (512,), args)
            cp.cuda.Device().synchronize()
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            times = []
            for _ in range(5):
                start.record()
                fn((sms * 2,), (512,), args)
                stop.record()
                stop.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
            t = float(np.median(times))
            rows.append({"kind": label, "pattern": "warp on one row" if conflict else
                         "random rows", "seconds": t, "gadds_per_s": n / t / 1e9})
    return rows


def sass_census() -> dict[str, int]:
    """Shared-memory atomic instructions in the blocked engine's kernels."""
    from webrank.kernels import cuda_blocked as kb

    nvcc, cuobjdump = shutil.which("nvcc"), shutil.which("cuobjdump")
    if not (nvcc and cuobjdump):
        return {"unavailable": 1}
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "blocked.cu"
        names = [n for n in kb.all_names() if "gather" in n or "solve" in n]
        cu.write_text(kb.SOURCE + "\nvoid wr_all() {\n" + "".join(
            f"    (void)&{n};\n" for n in names) + "}\n")
        subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-cubin", "-o",
                        str(cu) + ".cubin", str(cu)], check=True)
        sass = subprocess.run([cuobjdump, "-sass", str(cu) + ".cubin"], check=True,
                              capture_output=True, text=True).stdout
    found = re.findall(r"\b(ATOMS\.[A-Z0-9.]+|ATOMS\b)", sass)
    return {k: found.count(k) for k in sorted(set(found))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu_smem_atomics.json")
    args = ap.parse_args()
    from webrank.bench.env import environment

    rows = measure()
    census = sass_census()
    doc = {"environment": environment(), "adds_per_kernel": 1 << 30, "results": rows,
           "blocked_kernels_sass_atomics": census}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    for r in rows:
        print(f"{r['kind']:32s} {r['pattern']:16s} {r['gadds_per_s']:8.1f} G adds/s")
    print("blocked gather/solve SASS:", census)


if __name__ == "__main__":
    main()
