#!/usr/bin/env bash
# Device call for the CUDA-graph engine: GPU tests, per-iteration times, acceptance.
set -uo pipefail
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src:${PYTHONPATH:-} WEBRANK_DATASETS=$PWD/.device_data PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest tests/test_pagerank.py -q -x -p no:cacheprovider -m gpu 2>&1 \
  | tee "$OUT/pytest_gpu.log" | tail -4
python3 benchmarks/gpu_iteration_time.py 2>&1 | tee "$OUT/iteration_time.txt"
python3 benchmarks/gpu_acceptance.py 2>&1 | tee "$OUT/acceptance.txt"
python3 benchmarks/core_benchmark.py --skip-networkx --out "$OUT" --repeat 5 2>&1 | tail -5
