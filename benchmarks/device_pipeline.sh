#!/usr/bin/env bash
# The user's whole process on the GPU machine: R-MAT 23 from text and from .npz, the
# real graphs on a fresh machine (compiles included), ingestion's phases on 16 cores,
# and a profile of the GPU call's setup.   SCALE=23 bash benchmarks/device_pipeline.sh
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
cat "$OUT/gpu.txt"
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
S=${SCALE:-23}; D=/tmp/webrank-ingest; mkdir -p $D
whole() {  # whole process, wall clock: whole FILE DEVICE [args]
  local f=$1 dev=$2; shift 2
  local t0=$(date +%s.%N)
  python3 -m webrank rank "$f" --device "$dev" --tol 1e-10 --json -o /tmp/s.parquet "$@" \
    > /tmp/rank.json 2>/tmp/rank.err || tail -2 /tmp/rank.err
  local t1=$(date +%s.%N)
  python3 -c "import json,sys; d=json.load(open('/tmp/rank.json')); print(f'$(basename $f) \
$dev whole {$t1-$t0:.3f} s: load {d[\"load_s\"]:.3f} setup {d[\"setup_s\"]:.3f} solve \
{d[\"elapsed_s\"]:.3f} it {d[\"iterations\"]} {d[\"method\"]} {d.get(\"engine\",\"\")}')"
}
for g in cnr-2000 web-NotreDame; do
  whole "$WEBRANK_DATASETS/$g.txt.gz" gpu --dtype float32; whole "$WEBRANK_DATASETS/$g.txt.gz" gpu --dtype float32
  whole "$WEBRANK_DATASETS/$g.txt.gz" cpu; whole "$WEBRANK_DATASETS/$g.txt.gz" cpu
done 2>&1 | tee "$OUT/whole_real.txt"
t0=$(date +%s.%N)
python3 -m webrank generate rmat $S --out $D/rmat$S.txt --seed 1
python3 -m webrank convert $D/rmat$S.txt $D/rmat$S.npz
echo "generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
for f in $D/rmat$S.txt $D/rmat$S.npz; do
  for k in 1 2; do whole $f gpu; done
  whole $f gpu --dtype float32
done 2>&1 | tee "$OUT/whole_rmat.txt"
timeout 120 python3 benchmarks/ingest_profile.py $D/rmat$S.txt --repeat 2 2>&1 \
  | tee "$OUT/ingest_profile_$S.txt"
timeout 100 python3 benchmarks/gpu_setup_profile.py $D/rmat$S.npz 2>&1 \
  | tee "$OUT/gpu_setup_profile_$S.txt" | head -80
