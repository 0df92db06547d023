#!/usr/bin/env bash
# The user's whole process on the GPU machine. STEPS picks (default: all):
#   real     the real graphs, whole `webrank rank` processes, gpu and cpu
#   rmat     R-MAT $SCALE from text and from .npz, whole processes on the GPU
#   ingest   ingestion's phases on all cores (benchmarks/ingest_profile.py)
#   setup    a profile of the GPU call's setup (benchmarks/gpu_setup_profile.py)
#   profile  cProfile and -X importtime of whole `webrank rank` processes (npz, txt; gpu)
#   auto     each CPU method's first and second solve, pinned to 16/4/2 cores
#            (benchmarks/cpu_auto_choice.py on R-MAT $AUTO_SCALE and cnr-2000)
#   SCALE=23 STEPS="rmat profile" bash benchmarks/device_pipeline.sh
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
cat "$OUT/gpu.txt"
want() { [[ " ${STEPS:-real rmat ingest setup profile auto} " == *" $1 "* ]]; }
S=${SCALE:-23}; D=/tmp/webrank-ingest; mkdir -p $D
if want real; then
  for g in cnr-2000 web-NotreDame; do
    whole "$WEBRANK_DATASETS/$g.txt.gz" gpu --dtype float32; whole "$WEBRANK_DATASETS/$g.txt.gz" gpu --dtype float32
    whole "$WEBRANK_DATASETS/$g.txt.gz" cpu; whole "$WEBRANK_DATASETS/$g.txt.gz" cpu
  done 2>&1 | tee "$OUT/whole_real.txt"
fi
if want rmat || want profile || want ingest || want setup; then
  t0=$(date +%s.%N)
  python3 -m webrank generate rmat $S --out $D/rmat$S.txt --seed 1
  python3 -m webrank convert $D/rmat$S.txt $D/rmat$S.npz
  echo "generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
fi
if want rmat; then
  for f in $D/rmat$S.txt $D/rmat$S.npz; do
    for k in 1 2; do whole $f gpu; done
    whole $f gpu --dtype float32
  done 2>&1 | tee "$OUT/whole_rmat.txt"
  { whole $D/rmat$S.npz gpu -o /tmp/s.csv; whole $D/rmat$S.npz cpu
    whole $D/rmat$S.txt cpu; } 2>&1 | tee -a "$OUT/whole_rmat.txt"
fi
if want profile; then
  for f in $D/rmat$S.npz $D/rmat$S.txt; do
    b=$(basename $f | tr . _)
    python3 -X importtime -m cProfile -o /tmp/p.prof -m webrank rank $f --device gpu \
      --tol 1e-10 -o /tmp/s.parquet 2> /tmp/imp.txt > /dev/null
    { sort -t'|' -k2 -n -r /tmp/imp.txt | head -25
      python3 -c "import pstats; pstats.Stats('/tmp/p.prof').sort_stats('cumtime').print_stats(60)"
    } > "$OUT/profile_$b.txt" 2>&1
    grep -m1 "function calls" "$OUT/profile_$b.txt"
  done
fi
if want ingest; then
  timeout 120 python3 benchmarks/ingest_profile.py $D/rmat$S.txt --repeat 2 2>&1 \
    | tee "$OUT/ingest_profile_$S.txt"
fi
if want setup; then
  timeout 100 python3 benchmarks/gpu_setup_profile.py $D/rmat$S.npz 2>&1 \
    | tee "$OUT/gpu_setup_profile_$S.txt" | head -80
fi
if want auto; then
  A=${AUTO_SCALE:-22}
  python3 -m webrank generate rmat $A --out $D/rmat$A.npz --seed 1 > /dev/null
  timeout ${AUTO_S:-300} python3 benchmarks/cpu_auto_choice.py $D/rmat$A.npz \
    "$WEBRANK_DATASETS/cnr-2000.txt.gz" --threads ${AUTO_THREADS:-16 4} --repeat 1 \
    --out "$OUT/cpu_auto_choice.json" 2>&1 | tail -8
fi
