#!/usr/bin/env bash
# One device call: GPU tests, acceptance numbers, per-iteration times, CLI runs and the
# core benchmark. Run from the repo root on the GPU machine with the datasets in
# .device_data/ (or WEBRANK_DATASETS) and, where the image lacks them, wheels in .whl/.
set -uo pipefail
. "$(dirname "$0")/env.sh"
cat "$OUT/gpu.txt"
python3 -m pytest tests/test_pagerank.py tests/test_cli.py -q -p no:cacheprovider 2>&1 \
  | tee "$OUT/pytest_gpu.log" | tail -4
python3 benchmarks/gpu/gpu_iteration_time.py 2>&1 | tee "$OUT/gpu_iteration_time.txt"
python3 benchmarks/gpu/gpu_acceptance.py 2>&1 | tee "$OUT/gpu_acceptance.txt"
for g in cnr-2000 web-NotreDame soc-Epinions1; do
  for dt in float32 float64; do
    python3 -m webrank rank "$WEBRANK_DATASETS/$g.txt.gz" --tol 1e-10 --device gpu \
      --dtype $dt --top 5
  done
done > "$OUT/cli_gpu.txt" 2>&1
python3 benchmarks/headline/core_benchmark.py --skip-networkx --out "$OUT" --repeat 5 2>&1 | tail -5
