#!/usr/bin/env bash
# Warm whole GPU calls against their solve (benchmarks/gpu/gpu_call_phases.py), the older
# tree (a `git archive` in .device_old/, built here) and this one alternated.
#   GRAPHS="cnr-2000 rmat-22 rmat-24 rmat-26" AB_RUNS="old1 new1 old2 new2" \
#     bash benchmarks/gpu_host/run.sh call_phases
set -uo pipefail
. "$(dirname "$0")/env.sh"
if [ -d .device_old/src ] && ! ls .device_old/src/webrank/kernels/_cpu*.so >/dev/null 2>&1; then
  (cd .device_old && python3 tools/build_native.py > /tmp/build_old.log 2>&1) \
    || { echo "old tree: build failed"; tail -5 /tmp/build_old.log; }
fi
for run in ${AB_RUNS:-old1 new1 old2 new2}; do
  tree=$( [ "${run%[0-9]}" = new ] && echo . || echo .device_old )
  [ -d "$tree/src" ] || continue
  (cd benchmarks/gpu && PYTHONPATH=../../$tree/src:${PYTHONPATH#src:} timeout ${PHASES_S:-200} \
    python3 gpu_call_phases.py --graphs ${GRAPHS:-cnr-2000 rmat-22 rmat-24 rmat-26} \
    --data "$WEBRANK_DATASETS" --repeats ${REPEATS:-15} --out "$OUT/call_phases_$run.json" \
    > "$OUT/call_phases_$run.txt" 2>&1)
  echo "== call phases ($run, $(cat $tree/COMMIT 2>/dev/null || git rev-parse --short HEAD)) exit $?"
  grep -E "^[a-zA-Z0-9-]+: n " "$OUT/call_phases_$run.txt" | sed 's/; phases.*//'
done
