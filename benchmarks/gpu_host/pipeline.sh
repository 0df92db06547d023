#!/usr/bin/env bash
# The user's whole process on the GPU machine. STEPS picks (default: all):
#   real     the real graphs, whole `webrank rank` processes, gpu and cpu
#   rmat     R-MAT $SCALE from text and from .npz, whole processes on the GPU
#   ingest   ingestion's phases on all cores (benchmarks/io/ingest_profile.py)
#   setup    a profile of the GPU call's setup (benchmarks/gpu/gpu_setup_profile.py)
#   profile  cProfile and -X importtime of whole `webrank rank` processes (npz, txt; gpu)
#   auto     each CPU method's first and second solve, pinned to 16/4/2 cores
#            (benchmarks/cpu/cpu_auto_choice.py on R-MAT $AUTO_SCALE and cnr-2000)
#   trace    who first imports cupyx/SciPy/Numba in whole GPU processes (trace_import.py)
#   upload   host → device copies of a 0.5 GB array: one cp.asarray, slices, memory map
#   graphblas  benchmarks/cpu/cpu_vs_graphblas.py at all cores and pinned to 2 (taskset)
#   e2e      `webrank bench e2e` (WEBRANK_E2E_SCALES, default "20 22"), both devices
#   probe    which CuPy operation first loads cupyx (and with it SciPy)
#   tests    the gpu-marked tests ($TESTS_PATH, default tests/)
#   ab       `webrank bench gpu` ($AB_ARGS, default --quick --repeats 5) with the tree in
#            .device_old/ and this one, alternated as $AB_RUNS says ("old1 new1 old2 new2");
#            benchmarks/before_after/ab_compare.py tabulates them
#   SCALE=23 STEPS="rmat profile" bash benchmarks/gpu_host/run.sh pipeline
set -uo pipefail
. "$(dirname "$0")/env.sh"
cat "$OUT/gpu.txt"
want() { [[ " ${STEPS:-real rmat ingest setup profile auto} " == *" $1 "* ]]; }
S=${SCALE:-23}; D=/tmp/webrank-ingest; mkdir -p $D
if want real; then
  for g in cnr-2000 web-NotreDame; do
    whole "$WEBRANK_DATASETS/$g.txt.gz" gpu --dtype float32; whole "$WEBRANK_DATASETS/$g.txt.gz" gpu --dtype float32
    whole "$WEBRANK_DATASETS/$g.txt.gz" cpu; whole "$WEBRANK_DATASETS/$g.txt.gz" cpu
  done 2>&1 | tee "$OUT/whole_real.txt"
fi
if want rmat || want profile || want ingest || want setup || want trace; then
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
  timeout 120 python3 benchmarks/io/ingest_profile.py $D/rmat$S.txt --repeat 2 2>&1 \
    | tee "$OUT/ingest_profile_$S.txt"
fi
if want setup; then
  timeout 100 python3 benchmarks/gpu/gpu_setup_profile.py $D/rmat$S.npz 2>&1 \
    | tee "$OUT/gpu_setup_profile_$S.txt" | head -80
fi
if want auto; then
  A=${AUTO_SCALE:-22}
  python3 -m webrank generate rmat $A --out $D/rmat$A.npz --seed 1 > /dev/null
  timeout ${AUTO_S:-300} python3 benchmarks/cpu/cpu_auto_choice.py $D/rmat$A.npz \
    "$WEBRANK_DATASETS/cnr-2000.txt.gz" --threads ${AUTO_THREADS:-16 4} --repeat 1 \
    --out "$OUT/cpu_auto_choice.json" 2>&1 | tail -8
fi
if want trace; then
  for f in $D/rmat$S.npz $D/rmat$S.txt; do
    python3 benchmarks/io/trace_import.py cupyx.linalg,scipy,numba,pandas -- -m webrank rank $f \
      --device gpu --tol 1e-10 -o /tmp/s.parquet > /dev/null 2> /tmp/trace.txt
    grep -v "^    " /tmp/trace.txt | grep -v -e "frozen importlib" -e "click/core.py" \
      > "$OUT/trace_$(basename $f | tr . _).txt"
    grep -- "^---" /tmp/trace.txt || echo "$(basename $f): none of them imported"
  done
fi
if want upload; then
  for way in asarray slices mapped; do
    python3 - "$way" "$D" <<'PY'
import sys, time, numpy as np
way, folder = sys.argv[1], sys.argv[2]
import cupy as cp
cp.zeros(1).sum(); cp.cuda.Device().synchronize()
a = np.arange(1 << 27, dtype=np.int32)  # 0.5 GB
np.save(f"{folder}/a.npy", a)
from webrank.arrays import to_device
t = time.perf_counter()
if way == "asarray":
    d = cp.asarray(a)
elif way == "slices":
    d = to_device(a)
else:
    d = to_device(np.load(f"{folder}/a.npy", mmap_mode="r"))
cp.cuda.Device().synchronize()
print(f"upload 0.5 GB {way}: {time.perf_counter() - t:.3f} s", flush=True)
PY
  done 2>&1 | tee "$OUT/upload.txt"
fi
if want graphblas; then
  python3 -m webrank generate rmat 20 --out $D/rmat20.npz --seed 1 > /dev/null
  python3 -m webrank generate rmat 22 --out $D/rmat22.npz --seed 1 > /dev/null
  G="$D/rmat20.npz $D/rmat22.npz $WEBRANK_DATASETS/cnr-2000.txt.gz $WEBRANK_DATASETS/web-NotreDame.txt.gz"
  timeout ${GB_S:-200} python3 benchmarks/cpu/cpu_vs_graphblas.py $G --repeat 3 \
    --out "$OUT/cpu_vs_graphblas_16threads.json" 2>&1 | tail -5
  timeout ${GB_S:-200} taskset -c 0,1 python3 benchmarks/cpu/cpu_vs_graphblas.py $G --repeat 3 \
    --out "$OUT/cpu_vs_graphblas_2threads.json" 2>&1 | tail -5
fi
if want e2e; then
  WEBRANK_E2E_SCALES=${E2E_SCALES:-20 22} timeout ${E2E_S:-300} python3 -m webrank bench e2e \
    --device both --repeats ${E2E_REPEATS:-2} --data "$WEBRANK_DATASETS" --out "$OUT/e2e" \
    > "$OUT/e2e.log" 2>&1
  echo "== e2e exit $?"; tail -3 "$OUT/e2e.log"
  tar -czf "$OUT/e2e.tar.gz" -C "$OUT" e2e && rm -rf "$OUT/e2e"
fi
if want tests; then
  timeout ${TESTS_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
    ${TESTS_PATH:-tests/} > "$OUT/pytest_gpu.log" 2>&1
  echo "== tests exit $?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest_gpu.log" | tail -12
fi
if want probe; then
  python3 - <<'PY' 2>&1 | tee "$OUT/probe.txt"
import sys, time, numpy as np
t = time.perf_counter()
import cupy as cp
print("cupy", cp.__version__, "numpy", np.__version__, f"import {time.perf_counter() - t:.3f} s")
loaded = lambda: "cupyx.linalg" in sys.modules or "scipy" in sys.modules
a = cp.arange(10)
steps = [
    ("zeros(1).sum()", lambda: cp.zeros(1).sum()),
    ("a.astype(int64)", lambda: a.astype(cp.int64)),
    ("a << 32", lambda: a << 32),
    ("a | a", lambda: a | a),
    ("a[0] != 0", lambda: a[0] != 0),
    ("bool(a[0] != 0)", lambda: bool(a[0] != 0)),
    ("int(a[-1])", lambda: int(a[-1])),
    ("a.min()", lambda: a.min()),
    ("cp.isfinite(a)", lambda: cp.isfinite(a)),
    ("a.sort()", lambda: cp.sort(a)),
    ("cp.bincount", lambda: cp.bincount(a)),
    ("cp.cumsum", lambda: cp.cumsum(a)),
    ("cp.asarray(np)", lambda: cp.asarray(np.arange(5))),
    ("a.get()", lambda: a.get()),
    ("np.float64(2) * a", lambda: np.float64(2) * a),
]
for name, f in steps:
    before = loaded()
    t = time.perf_counter()
    f()
    cp.cuda.Device().synchronize()
    dt = time.perf_counter() - t
    print(f"{name:24s} {dt * 1e3:8.1f} ms", "LOADED cupyx/scipy" if loaded() and not before else "")
PY
  D2=/tmp/webrank-ingest; mkdir -p $D2
  python3 -m webrank generate rmat 22 --out $D2/rmat22.npz --seed 1 > /dev/null
  python3 -X importtime -m cProfile -o /tmp/p.prof -m webrank rank $D2/rmat22.npz --device gpu \
    --tol 1e-10 -o /tmp/s.parquet 2> /tmp/imp.txt > /dev/null
  { sort -t'|' -k2 -n -r /tmp/imp.txt | head -30
    python3 -c "import pstats; pstats.Stats('/tmp/p.prof').sort_stats('cumtime').print_stats(70)"
  } > "$OUT/profile_rmat22_npz.txt" 2>&1
  for k in 1 2 3; do whole $D2/rmat22.npz gpu; done 2>&1 | tee -a "$OUT/probe.txt"
fi
if want ab; then
  # the GPU suite (--quick) with an older source tree (a `git archive` carried in
  # .device_old/) and with this one, same machine; AB_RUNS="old1 new1 old2 new2"
  # alternates them: a machine that slows down mid-run shows in the baselines (cuSPARSE,
  # torch), whose code is the same in both trees
  for run in ${AB_RUNS:-old new}; do
    name=$run; tree=$( [ "${run%[0-9]}" = new ] && echo . || echo .device_old )
    [ -d "$tree/src" ] || continue
    PYTHONPATH=$tree/src:${PYTHONPATH#src:} timeout ${AB_S:-150} python3 -m webrank bench gpu \
      ${AB_ARGS:---quick --repeats 5} --device gpu --out "$OUT/bench_gpu_$name" \
      > "$OUT/bench_gpu_$name.log" 2>&1
    echo "== bench gpu ($name) exit $?"
  done
  tar -czf "$OUT/bench_gpu_ab.tar.gz" -C "$OUT" $(cd "$OUT" && ls -d bench_gpu_*/ 2>/dev/null) \
    && (cd "$OUT" && rm -rf bench_gpu_*/)
fi
