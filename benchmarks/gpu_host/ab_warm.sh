#!/usr/bin/env bash
# Warm speed before and after a change, on one GPU machine: `webrank bench gpu --quick`
# and the CPU engines' per-step times (benchmarks/cpu/cpu_engines.py --quick), the older tree
# (a `git archive` in .device_old/) and this one alternated.
#   AB_RUNS="old1 new1 old2 new2" bash benchmarks/gpu_host/run.sh ab_warm
set -uo pipefail
. "$(dirname "$0")/env.sh"
for run in ${AB_RUNS:-old1 new1 old2 new2}; do
  tree=$( [ "${run%[0-9]}" = new ] && echo . || echo .device_old )
  PYTHONPATH=$tree/src:${PYTHONPATH#src:} timeout ${AB_S:-100} python3 -m webrank bench gpu \
    --quick --repeats 3 --device gpu --out "$OUT/bench_gpu_$run" > "$OUT/bench_gpu_$run.log" 2>&1
  echo "== bench gpu ($run) exit $?"
  PYTHONPATH=$tree/src:${PYTHONPATH#src:} timeout ${CPU_S:-60} python3 \
    benchmarks/cpu/cpu_engines.py --quick --out "$OUT/cpu_engines_$run.json" \
    > "$OUT/cpu_engines_$run.log" 2>&1
  echo "== cpu engines ($run) exit $?"
done
tar -czf "$OUT/ab_warm.tar.gz" -C "$OUT" $(cd "$OUT" && ls -d bench_gpu_*/ 2>/dev/null) \
  && (cd "$OUT" && rm -rf bench_gpu_*/)
