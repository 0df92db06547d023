#!/usr/bin/env bash
# Every GPU of one host (nvidia-h100-x4): the kernels built, the distributed GPU tests, then 1, 2 and 4 GPUs through webrank.pagerank (distributed_bench.py scaling).
#   bash benchmarks/gpu_host/run.sh scaling     (SCALES=22,24,26,27 the R-MAT scales;
#   results append to $OUT/scaling.jsonl, the log to $OUT/scaling.log)
set -uo pipefail
SECONDS=0
python3 tools/build_native.py > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "== built at $SECONDS s"
. "$(dirname "$0")/env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L; nproc
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout ${PYTEST_LIMIT:-200} python3 -m pytest -q -p no:cacheprovider -rfE \
    tests/test_gpu_distributed.py -k "${PYTEST_K:-}" > "$OUT/pytest_distributed.txt" 2>&1
  echo "== pytest exit $? at $SECONDS s"; tail -25 "$OUT/pytest_distributed.txt"
fi
timeout ${SCALING_LIMIT:-300} python3 benchmarks/distributed/distributed_bench.py scaling \
  "${SCALES:-22,24,26,27}" --real .device_data/cnr-2000.txt.gz --out "$OUT/scaling.jsonl" \
  > "$OUT/scaling.log" 2>&1
echo "== scaling exit $? at $SECONDS s"; tail -45 "$OUT/scaling.log"
# the CLI's line where gpus=N runs on fewer GPUs (a small real graph)
python3 -m webrank rank .device_data/cnr-2000.txt.gz --device gpu --gpus 4 --tol 1e-10 \
  --top 3 2>&1 | tail -3
