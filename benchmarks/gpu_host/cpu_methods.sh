#!/usr/bin/env bash
# The CPU methods on the GPU machine's host (16 cores), and the gpu-marked tests.
#   TESTS=1 THREADS="16 4" ALPHAS="0.85 0.99" ONLY="power gauss-seidel auto" \
#     bash benchmarks/gpu_host/run.sh cpu_methods
# Each thread count runs pinned to that many cores (taskset), so "2" is a 2-core machine.
set -uo pipefail
. "$(dirname "$0")/env.sh"
cat "$OUT/gpu.txt"
lscpu | grep -E "Model name|^CPU\(s\)" > "$OUT/cpu.txt"
if [ "${TESTS:-0}" = 1 ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 \
    | tee "$OUT/pytest_gpu.log" | tail -3
fi
for t in ${THREADS:-16 4 2}; do
  echo "== $t threads"
  taskset -c "0-$((t - 1))" env NUMBA_NUM_THREADS="$t" python3 benchmarks/cpu/cpu_engines.py \
    --methods --alphas ${ALPHAS:-0.85 0.99} --repeat "${REPEAT:-4}" \
    ${ONLY:+--only $ONLY} --out "$OUT/cpu_methods_${t}threads.json" 2>&1 | tail -20
done
