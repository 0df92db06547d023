#!/usr/bin/env bash
# The whole-process pipeline on the GPU machine: ingestion against pyarrow on its 16
# cores, `webrank bench e2e` on the GPU, and the gpu-marked tests.
#   TESTS=1 INGEST="20 23" E2E="22 23" E2E_DEVICE=gpu bash benchmarks/gpu_host/run.sh e2e
set -uo pipefail
. "$(dirname "$0")/env.sh"
cat "$OUT/gpu.txt"
lscpu | grep -E "Model name|^CPU\(s\)" | tee "$OUT/cpu.txt"
python3 -c "import numba, cupy, pyarrow, numpy; print('numba', numba.__version__, 'cupy', \
cupy.__version__, 'pyarrow', pyarrow.__version__, 'numpy', numpy.__version__)"
if [ "${TESTS:-0}" = 1 ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 | tee "$OUT/pytest_gpu.log" \
    | tail -3
fi
if [ -n "${INGEST:-}" ]; then
  python3 benchmarks/io/ingest.py --scales $INGEST --repeat "${REPEAT:-5}" \
    --out "$OUT/ingest.json" 2>&1 | grep -v "^wrote"
  for s in ${PROFILE:-}; do
    python3 benchmarks/io/ingest_profile.py "/tmp/webrank-ingest/rmat$s.txt" --repeat 3 2>&1 \
      | tee "$OUT/ingest_profile_$s.txt"
  done
fi
if [ -n "${E2E:-}" ]; then
  WEBRANK_E2E_SCALES="$E2E" python3 -m webrank bench e2e --device "${E2E_DEVICE:-gpu}" \
    --repeats "${E2E_REPEATS:-2}" --out "$OUT/e2e" 2>&1 | tail -40
fi
