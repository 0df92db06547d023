#!/usr/bin/env bash
# R-MAT past one GPU, end to end from shards on disk (nvidia-h100-x4): the shards written by `webrank generate rmat $SCALE --shards $GPUS --device gpu`, the disk-read floor, then one `mpirun -n $GPUS webrank rank DIR --distributed --device gpu` process per GPU to ranks on disk, each GPU's memory sampled.
#   SCALE=30 GPUS=4 bash benchmarks/gpu_host/run.sh shards     (default SCALE=27; DIR on
#   /tmp, the shards of SCALE 30 80 GB, written in about 5 minutes: a second call on the
#   same machine while it is held finds them and ranks only; results: $OUT/shards_*.txt)
set -uo pipefail
SECONDS=0
python3 tools/build_native.py > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
. "$(dirname "$0")/env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
S=${SCALE:-27}; P=${GPUS:-4}; D=/tmp/rmat$S-shards; mkdir -p /tmp/ranks$S
nvidia-smi -L; nproc; free -g | head -2; df -h /tmp | tail -1
if [ ! -f $D/webrank-shards.json ]; then  # (kept from an earlier call on this machine)
  t0=$(date +%s.%N)
  python3 -m webrank generate rmat $S --shards $P --device gpu --seed 1 -o $D \
    2>&1 | tail -2 | tee $OUT/shards_generate.txt
  echo "generate wall $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s" | tee -a $OUT/shards_generate.txt
fi
du -sh $D | tee -a $OUT/shards_generate.txt
# the read floors: every shard read once, side by side, from the page cache as it stands;
# and the disk itself (direct reads of 2 GiB of each shard, side by side)
t0=$(date +%s.%N); for f in $D/part-*.npz; do cat $f > /dev/null & done; wait
echo "read floor (cat of every shard, side by side) $(python3 -c "print(round($(date +%s.%N)-$t0,2))") s" | tee $OUT/shards_floor.txt
t0=$(date +%s.%N)
for f in $D/part-*.npz; do dd if=$f of=/dev/null bs=64M count=32 iflag=direct 2>/dev/null & done; wait
echo "disk: direct reads of 2 GiB of each of $P shards side by side: $(python3 -c "t = $(date +%s.%N) - $t0; print(f'{t:.2f} s, {2 * $P / t:.2f} GiB/s')")" | tee -a $OUT/shards_floor.txt
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader -lms 500 > $OUT/shards_gpu_memory.csv &
SMI=$!
t0=$(date +%s.%N)
mpirun -n $P --bind-to none python3 -m webrank rank $D --distributed --device gpu \
  --dtype float32 --tol 1e-10 --json -o /tmp/ranks$S > $OUT/shards_rank.json 2> $OUT/shards_rank.err
rc=$?
t1=$(date +%s.%N); kill $SMI
echo "rank exit $rc, whole $(python3 -c "print(round($t1-$t0,2))") s" | tee $OUT/shards_rank.txt
tail -3 $OUT/shards_rank.err; head -c 1500 $OUT/shards_rank.json; echo
python3 -c "
import csv, collections
peak = collections.defaultdict(int)
for row in csv.reader(open('$OUT/shards_gpu_memory.csv')):
    peak[row[0].strip()] = max(peak[row[0].strip()], int(row[1].split()[0]))
print('peak GPU memory (MiB):', dict(peak))" | tee -a $OUT/shards_rank.txt
du -sh /tmp/ranks$S | tee -a $OUT/shards_rank.txt
echo "== done at $SECONDS s"
