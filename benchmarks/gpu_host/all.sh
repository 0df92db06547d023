#!/usr/bin/env bash
# One device call per stage (STAGE=tests | solvers | suites): the whole test suite on the
# GPU machine, the GPU runs of the solver/PPR/incremental benchmarks, the bench suites.
# Run from the repo root with the datasets in .device_data/ and isal's wheel in .whl/.
set -uo pipefail
. "$(dirname "$0")/env.sh"
case "${STAGE:-tests}" in
tests)
  python3 -m pytest -q -p no:cacheprovider ${TESTS:-tests} 2>&1 | tee "$OUT/pytest_all.log" \
    | tail -25
  # networkx's own tests through the backend need webrank installed (entry points):
  # CI runs them (.ci/run); the device image runs webrank from source
  ;;
solvers)
  python3 benchmarks/methods/krylov_matvecs.py --device gpu --out "$OUT/krylov_gpu_h100.json" \
    2>&1 | tail -30
  python3 benchmarks/methods/adaptive_fixed.py --device gpu --out "$OUT/adaptive_fixed_gpu_h100.json" \
    2>&1 | tail -20
  python3 benchmarks/methods/ppr_batch.py --device gpu --compaction \
    --out "$OUT/ppr_gpu_h100.json" 2>&1 | tail -12
  python3 benchmarks/methods/ppr_batch.py --device gpu --graph cnr-2000 --compaction \
    --out "$OUT/ppr_gpu_cnr_h100.json" 2>&1 | tail -12
  python3 benchmarks/methods/incremental.py --device gpu --out "$OUT/incremental_gpu_h100.json" \
    2>&1 | tail -20
  ;;
suites)
  for suite in ${SUITES:-extrapolation hybrid gpu}; do
    python3 -m webrank bench "$suite" --device ${BENCH_DEVICE:-gpu} \
      --out "$OUT/${suite}_h100" ${BENCH_ARGS:-} 2>&1 | tail -30
  done
  ;;
esac
