#!/usr/bin/env bash
# First runs on a fresh GPU machine, then after `webrank warmup`, then R-MAT 23 whole
# processes and the gpu-marked tests. Run it first thing on a fresh machine (the caches
# must be cold): nothing in the source tree holds compiled kernels.
#   bash benchmarks/gpu_host/run.sh firstrun
set -uo pipefail
SECONDS=0
. "$(dirname "$0")/env.sh"
cat "$OUT/gpu.txt"
C=$WEBRANK_DATASETS/cnr-2000.txt.gz; N=$WEBRANK_DATASETS/web-NotreDame.txt.gz
{
  echo "== cold: the first runs on this machine"
  whole $C gpu; whole $C gpu; whole $C cpu; whole $C cpu
  echo "== webrank warmup into empty caches, then first runs"
  export NUMBA_CACHE_DIR=/tmp/numba-cache CUPY_CACHE_DIR=/tmp/cupy-cache
  /usr/bin/time -f "warmup wall %e s" python3 -m webrank warmup
  whole $C gpu; whole $C cpu; whole $N gpu; whole $N cpu
  unset NUMBA_CACHE_DIR CUPY_CACHE_DIR
} 2>&1 | tee "$OUT/first_runs.txt"
S=${SCALE:-23}; D=/tmp/webrank-ingest; mkdir -p $D
python3 -m webrank generate rmat $S --out $D/rmat$S.txt --seed 1 | tail -1
python3 -m webrank convert $D/rmat$S.txt $D/rmat$S.npz | tail -1
{
  for f in $D/rmat$S.txt $D/rmat$S.npz; do whole $f gpu; whole $f gpu; done
  whole $D/rmat$S.npz gpu -o /tmp/s.csv
  whole $D/rmat$S.txt cpu
} 2>&1 | tee "$OUT/whole_rmat.txt"
python3 -X importtime -m cProfile -o /tmp/p.prof -m webrank rank $D/rmat$S.txt --device gpu \
  --tol 1e-10 -o /tmp/s.parquet 2> /tmp/imp.txt > /dev/null
{ sort -t'|' -k2 -n -r /tmp/imp.txt | head -20
  python3 -c "import pstats; pstats.Stats('/tmp/p.prof').sort_stats('cumtime').print_stats(45)"
} > "$OUT/profile_rmat${S}_txt.txt" 2>&1
echo "== at $SECONDS s: tests"
timeout $((${LIMIT_S:-570} - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
  tests/ > "$OUT/pytest_gpu.log" 2>&1
echo "tests exit $?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest_gpu.log" | tail -8
echo "== done at $SECONDS s"
