#!/usr/bin/env bash
# The bench suites on the GPU machine, each under its own time limit, each folder packed
# into one archive under $OUT (the device tool brings back at most 8 files).
#   SUITES="extrapolation:gpu:300 ..." bash benchmarks/gpu_host/run.sh suites
set -uo pipefail
. "$(dirname "$0")/env.sh"
work=$(mktemp -d)
for spec in $SUITES; do
  IFS=: read -r suite device limit <<<"$spec"
  echo "== $suite --device $device (limit ${limit}s)"
  timeout "$limit" python3 -m webrank bench "$suite" --device "$device" \
    --out "$work/${suite}_h100" ${BENCH_ARGS:-} > "$work/${suite}.log" 2>&1
  echo "exit $?"; tail -3 "$work/${suite}.log"
  cp "$work/${suite}.log" "$work/${suite}_h100/" 2>/dev/null
  tar -C "$work" -czf "$OUT/${suite}_h100.tgz" "${suite}_h100"
done
