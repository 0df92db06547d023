#!/usr/bin/env bash
# The GPU engine's device call (one run of the device tool): the engine tests, then the
# gpu bench suite, each under its own time limit, results packed under $OUT.
#   TESTS="tests/test_gpu_engines.py" TEST_LIMIT=200 BENCH_LIMIT=330 BENCH_ARGS="--repeats 1" \
#     bash benchmarks/gpu_host/run.sh gpu_engine
# Run from the repo root with the datasets in .device_data/ and isal's wheel in .whl/.
set -uo pipefail
. "$(dirname "$0")/env.sh"
cat "$OUT/gpu.txt"
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
if [ -n "${TESTS:-tests/test_gpu_engines.py}" ]; then
  timeout "${TEST_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider -rf \
    ${TESTS:-tests/test_gpu_engines.py} > "$OUT/pytest_gpu_engine.log" 2>&1
  echo "pytest exit $?"; tail -25 "$OUT/pytest_gpu_engine.log"
fi
if [ "${BENCH_LIMIT:-330}" != 0 ]; then
  work=$(mktemp -d)
  timeout "${BENCH_LIMIT:-330}" python3 -m webrank bench gpu --device gpu \
    --out "$work/gpu_h100" ${BENCH_ARGS:---repeats 1} > "$work/gpu.log" 2>&1
  echo "bench exit $?"; tail -40 "$work/gpu.log"
  cp "$work/gpu.log" "$work/gpu_h100/" 2>/dev/null
  tar -C "$work" -czf "$OUT/gpu_h100.tgz" gpu_h100
fi
