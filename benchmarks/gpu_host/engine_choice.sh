#!/usr/bin/env bash
# One GPU: which engine wins on graphs in crawl order (web_crawl) and on R-MAT, the data behind engine="auto" (benchmarks/gpu/gpu_engine_choice.py).
#   bash benchmarks/gpu_host/run.sh engine_choice    (RMAT=20,22,24 WEB=20,22,24; results
#   append to $OUT/engine_choice.jsonl)
set -uo pipefail
SECONDS=0
python3 tools/build_native.py > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "== built at $SECONDS s"
. "$(dirname "$0")/env.sh"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
timeout 120 python3 -m pytest -q -p no:cacheprovider -rfE tests/test_gpu_engines.py \
  tests/test_generate.py -k "locality or web_crawl" > "$OUT/pytest_engine_choice.txt" 2>&1
echo "== pytest exit $? at $SECONDS s"; tail -5 "$OUT/pytest_engine_choice.txt"
timeout ${LIMIT:-300} python3 benchmarks/gpu/gpu_engine_choice.py --rmat "${RMAT:-20,22,24}" \
  --web "${WEB:-20,22,24}" --real .device_data/cnr-2000.txt.gz \
  --out "$OUT/engine_choice.jsonl" > "$OUT/engine_choice.log" 2>&1
echo "== engine choice exit $? at $SECONDS s"; tail -12 "$OUT/engine_choice.log"
