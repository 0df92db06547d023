#!/usr/bin/env bash
# First answers on a fresh GPU machine: whole `webrank rank` processes with every cache
# empty (new HOME, no NUMBA_CACHE_DIR/CUPY_CACHE_DIR), then warm; the CuPy kernels a first
# run compiles (their sources kept); each GPU engine and dtype's first use in a process.
#   TREE=src bash benchmarks/gpu_host/run.sh first_answer      (TREE: the src folder to run)
set -uo pipefail
SECONDS=0
. "$(dirname "$0")/env.sh"
TREE=${TREE:-src}; TAG=${TAG:-new}
export PYTHONPATH=$TREE:${PYTHONPATH#src:}
cat "$OUT/gpu.txt"
C=$WEBRANK_DATASETS/cnr-2000.txt.gz
fresh() { export HOME=$(mktemp -d); unset NUMBA_CACHE_DIR CUPY_CACHE_DIR;
          find $TREE -name '*.nbi' -delete -o -name '*.nbc' -delete; }
{
  echo "== $TAG ($TREE): first runs, every cache empty"
  fresh; whole $C gpu; whole $C gpu
  fresh; whole $C cpu; whole $C cpu
  echo "== CuPy kernels compiled by a first --device gpu run"
  fresh; export CUPY_CACHE_DIR=$HOME/cc CUPY_CACHE_SAVE_CUDA_SOURCE=1
  whole $C gpu
  echo "files in the CuPy cache: $(ls $CUPY_CACHE_DIR | grep -vc '\.cu$') kernels"
  tar czf $OUT/cupy_sources_$TAG.tgz -C $CUPY_CACHE_DIR . 2>/dev/null
  echo "== first use of each engine and dtype in one process (cnr-2000, warm after)"
  fresh
  python3 - "$C" <<'PY'
import sys, time
import webrank
g = webrank.load(sys.argv[1], device="gpu")
webrank.pagerank(g, device="gpu", tol=1e-6)
for engine in ("pull", "blocked", "persistent"):
    for dtype in ("float32", "float64"):
        ts = []
        for _ in range(2):
            t0 = time.perf_counter()
            webrank.pagerank(g, device="gpu", dtype=dtype, tol=1e-10,
                             engine=engine)
            ts.append(time.perf_counter() - t0)
        print(f"{engine:10s} {dtype}: first {ts[0]:.3f} s, warm {ts[1]:.3f} s")
PY
} 2>&1 | tee "$OUT/first_answer_$TAG.txt"
echo "== done at $SECONDS s"
