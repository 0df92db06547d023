#!/usr/bin/env bash
# One device call for the GPU engine (issue 3): its GPU tests, then `webrank bench gpu`
# and `webrank bench seed-hybrid`, results under $OUT. Run from the repo root on the GPU
# machine with the datasets in .device_data/ and, where the image lacks it, isal in .whl/.
set -uo pipefail
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export WEBRANK_DATASETS=${WEBRANK_DATASETS:-$PWD/.device_data}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest ${TESTS:-tests/test_hybrid.py tests/test_gpu_build.py} -q -x \
  -p no:cacheprovider 2>&1 | tee "$OUT/pytest_gpu_engine.log" | tail -15
for suite in ${SUITES:-gpu seed-hybrid}; do
  python3 -m webrank bench "$suite" --device gpu \
    --out "$OUT/${suite}_h100" ${BENCH_ARGS:-} 2>&1 | tail -40
done
