#!/usr/bin/env bash
# The whole `webrank rank FILE --device gpu` process with and without the GPU warm-up
# thread (WEBRANK_GPU_WARMUP=0 turns it off), runs interleaved; SCALE (default 22) is the
# R-MAT graph written as text first, plus cnr-2000.txt.gz from .device_data.
set -uo pipefail
. "$(dirname "$0")/env.sh"
S=${SCALE:-22}
python3 -m webrank generate rmat "$S" --seed 1 --out "/tmp/r$S.txt" > /dev/null
for f in "/tmp/r$S.txt" "$WEBRANK_DATASETS/cnr-2000.txt.gz"; do
  for run in 1 2 3; do
    for warm in 0 1; do
      t0=$EPOCHREALTIME
      WEBRANK_GPU_WARMUP=$warm python3 -m webrank rank "$f" --device gpu --tol 1e-10 \
        --top 0 -o /tmp/scores.parquet > /tmp/rank.log 2>&1
      rc=$?
      t1=$EPOCHREALTIME
      echo "$(basename "$f") warmup=$warm run=$run exit=$rc whole=$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}") s; $(tail -n 2 /tmp/rank.log | tr '\n' ' ')"
    done
  done
done | tee "$OUT/warmup_whole_process.txt"
