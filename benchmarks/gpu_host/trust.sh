#!/usr/bin/env bash
# The trust measurements on the GPU machine (two GPUs when lent, for the NCCL tests):
# the gpu-marked tests (NCCL faults under mpirun -n 2 included), error_bound soundness
# on the GPU, and the seed suites' GPU parts. STEPS="tests bound dense approx extrap"
# picks the steps; mpi4py and the Open MPI wheel come from .whl/.
set -uo pipefail
. "$(dirname "$0")/env.sh"

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L | tee "$OUT/gpus.txt"; which mpirun; git rev-parse --short HEAD 2>/dev/null
want() { [[ " ${STEPS:-tests bound dense approx} " == *" $1 "* ]]; }
if want tests; then
  timeout "${TESTS_S:-300}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
    --durations=15 ${TESTS_PATH:-tests/} > "$OUT/pytest_gpu.log" 2>&1
  echo "== tests exit $?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest_gpu.log" | tail -20
fi
if want bound; then
  timeout "${BOUND_S:-200}" python3 benchmarks/methods/error_bound.py --device gpu \
    --engines auto pull blocked persistent --out "$OUT/error_bound_gpu.json" \
    > "$OUT/error_bound_gpu.log" 2>&1
  echo "== bound exit $?"; grep -E "UNSOUND|results|reference" "$OUT/error_bound_gpu.log"
fi
for suite in dense approx extrap iters; do
  want $suite || continue
  name=$(case $suite in dense) echo dense;; approx) echo approx;;
         iters) echo iterations;;
         extrap) echo extrapolation;; esac)
  timeout "${SUITE_S:-200}" python3 -m webrank bench $name --device gpu --repeats 3 \
    --out "$OUT/$name" > "$OUT/$name.log" 2>&1
  echo "== $name exit $?"; tail -n 3 "$OUT/$name.log"
  sed -n '/^## Comparison with the paper/,/^## Notes/p' "$OUT/$name/report.md" 2>/dev/null | head -40
done
# few files come back from the device: the suites' folders as one archive
suites=$(cd "$OUT" && ls -d seed-* 2>/dev/null | grep -v '\.log$')
if [ -n "$suites" ]; then
  tar -czf "$OUT/suites.tar.gz" -C "$OUT" $suites && (cd "$OUT" && rm -rf $suites)
fi
