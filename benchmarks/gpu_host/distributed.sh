#!/usr/bin/env bash
# The multi-GPU device call (nvidia-h200-x2): the GPU tests of webrank.distributed, then
# each measurement of benchmarks/distributed/distributed_bench.py under its own time limit;
# results append to $OUT/distributed.jsonl, logs to $OUT/*.log. ONLY="pytest strong27 ..."
# runs just the steps named; PYTEST_K narrows the tests (pytest -k).
set -uo pipefail
. "$(dirname "$0")/env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L; which mpirun torchrun
R=$OUT/distributed.jsonl
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
step() {  # step LIMIT NAME ARGS...
  local limit=$1 name=$2; shift 2
  want "$name" || return 0
  timeout "$limit" python3 benchmarks/distributed/distributed_bench.py "$@" --out "$R" \
    > "$OUT/$name.log" 2>&1
  echo "== $name exit $?"; grep -v '^  *[0-9.]*,\?$' "$OUT/$name.log" | tail -${TAIL:-14}
}
if want pytest; then
  timeout 170 python3 -m pytest -q -p no:cacheprovider -rf tests/test_gpu_distributed.py \
    -k "${PYTEST_K:-}" > "$OUT/pytest_gpu_distributed.log" 2>&1
  echo "== pytest exit $?"; tail -8 "$OUT/pytest_gpu_distributed.log"
fi
step 40 env env
step 200 strong27 strong 27
step 220 large29 large 29
step 200 ooc28 ooc 28 --cap 0.25
TAIL=40 step 150 cli cli .device_data
step 120 strong26 strong 26
