#!/usr/bin/env bash
# First calls of every public GPU entry point, each in a fresh process with an empty CuPy
# kernel cache (tests/gpu_first_calls.py): kernels compiled on the way, first and second
# call; and the first `--distributed` run (torchrun, one rank) against its second.
#   bash benchmarks/gpu_host/run.sh first_calls      (after python3 tools/build_native.py)
set -uo pipefail
SECONDS=0
. "$(dirname "$0")/env.sh"
C=$WEBRANK_DATASETS/cnr-2000.txt.gz
N=/tmp/cnr-2000.npz
python3 -m webrank convert "$C" "$N" >/dev/null
R=$OUT/first_calls.jsonl
WEBRANK_FIRST_CALL_PROFILE=1 python3 tests/gpu_first_calls.py "$C" ${ENTRIES:-} > "$R"
python3 tests/gpu_first_calls.py "$N" cli-rank | sed 's/"cli-rank"/"cli-rank-npz"/' >> "$R"
python3 - "$R" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "error" in d:
        print(f"{d['entry']:24s} ERROR {d['error'][-600:]}"); continue
    made = d.get("compiled_at_load", []) + d["compiled"]
    print(f"{d['entry']:24s} first {d['first_s']:.3f} s second {d['second_s']:.3f} s "
          f"ratio {d['first_s'] / d['second_s']:.2f} compiled {len(made)}")
    for c in made:
        print(f"    {','.join(c['kernels'])[:70]:70s} <- {' <- '.join(reversed(c['at']))}")
    if d.get("profile") and d["first_s"] > 1.5 * d["second_s"] + 0.05:
        print("      first call, most cumulative time:", *d["profile"], sep="\n        ")
PY
echo "== whole processes, each with a new HOME and an empty CuPy cache: first, then second"
cat > /tmp/one_call.py <<'PY'
import sys, webrank
g = webrank.load(sys.argv[1], device="gpu")
if sys.argv[2] == "personalized":
    ids = list(range(6)) if g.labels is None else list(g.labels[:6])
    webrank.personalized_pagerank(g, [ids[:1], ids[1:3], ids[3:]], device="gpu", tol=1e-10)
else:
    r = webrank.pagerank(g, device="gpu", tol=1e-10)
    webrank.update(r, added_edges=([1, 2, 3], [4, 5, 6]), tol=1e-10, device="gpu")
PY
for what in personalized update; do
  export CUPY_CACHE_DIR=$(mktemp -d) HOME=$(mktemp -d)
  for run in first second; do
    t0=$(date +%s.%N); python3 /tmp/one_call.py "$C" $what || echo FAILED; t1=$(date +%s.%N)
    echo "$what whole process $run: $(python3 -c "print(f'{$t1-$t0:.3f}')") s, CuPy kernels in the cache: $(ls $CUPY_CACHE_DIR | wc -l)"
  done
done
if [ -z "${ENTRIES:-}" ] && command -v torchrun >/dev/null; then
  echo "== --distributed, one rank (torchrun), fresh CuPy cache then warm"
  python3 -m webrank convert "$C" /tmp/shards --shards 1 >/dev/null
  export CUPY_CACHE_DIR=$(mktemp -d) CUPY_CACHE_SAVE_CUDA_SOURCE=1
  for run in first second; do
    rm -rf /tmp/dout; t0=$(date +%s.%N)
    torchrun --standalone --nproc_per_node 1 -m webrank rank /tmp/shards --distributed \
      --device gpu --tol 1e-10 -o /tmp/dout > /tmp/dist.log 2>&1 || tail -5 /tmp/dist.log
    t1=$(date +%s.%N)
    echo "distributed $run: $(python3 -c "print(f'{$t1-$t0:.3f}')") s, CuPy kernels compiled so far: $(ls $CUPY_CACHE_DIR | grep -vc '\.cu$')"
  done
  grep -ho '__global__ void [a-z_0-9]*' $CUPY_CACHE_DIR/*.cu 2>/dev/null | sort | uniq -c | head -30
fi
echo "== done at $SECONDS s"
