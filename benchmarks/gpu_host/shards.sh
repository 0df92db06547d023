#!/usr/bin/env bash
# R-MAT past one GPU, end to end from shards on disk (nvidia-h100-x4): the shards written by `webrank generate rmat $SCALE --shards $GPUS --device gpu`, the disk-read floor, then one `mpirun -n $GPUS webrank rank DIR --distributed --device gpu` process per GPU to ranks on disk, each GPU's memory sampled.
#   SCALE=30 GPUS=4 bash benchmarks/gpu_host/run.sh shards     (default SCALE=27; DIR on
#   /tmp, the shards of SCALE 30 80 GB, written in about 5 minutes: a second call on the
#   same machine while it is held finds them and ranks only; GENERATE_ONLY=1 writes them
#   only; results: $OUT/shards_SCALE.json and .txt)
set -uo pipefail
SECONDS=0
python3 tools/build_native.py > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
. "$(dirname "$0")/env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
S=${SCALE:-27}; P=${GPUS:-4}; D=/tmp/rmat$S-shards
nvidia-smi -L; nproc; free -g | head -2; df -h /tmp | tail -1
# the shards (kept where an earlier call on this machine wrote them), the read floors, the
# ranked run: benchmarks/distributed/shards_bench.py; GENERATE_ONLY=1 stops after the shards
python3 benchmarks/distributed/shards_bench.py $S --parts $P --device gpu --dir $D \
  --out $OUT/shards_$S.json ${GENERATE_ONLY:+--generate-only} 2>&1 | tail -8 | tee $OUT/shards_$S.txt
du -sh $D /tmp/rmat$S-shards-ranks 2>/dev/null | tee -a $OUT/shards_$S.txt
echo "== done at $SECONDS s"
