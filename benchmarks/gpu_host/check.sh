#!/usr/bin/env bash
# One GPU call: build the compiled kernels, the GPU test suite (pytest -m gpu, time-boxed),
# then the first calls of every public GPU entry point (gpu_host/first_calls.sh).
#   bash benchmarks/gpu_host/run.sh check        (PYTEST_ARGS narrows the tests)
set -uo pipefail
SECONDS=0
python3 tools/build_native.py > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "== built at $SECONDS s"
. "$(dirname "$0")/env.sh"
timeout ${PYTEST_LIMIT:-330} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
  ${PYTEST_ARGS:-tests} > "$OUT/pytest_gpu.txt" 2>&1
echo "== pytest exit $? at $SECONDS s"; grep -E "passed|failed|FAILED|ERROR" "$OUT/pytest_gpu.txt" | tail -25
bash "$(dirname "$0")/first_calls.sh"
