#!/usr/bin/env bash
# Whole `mpirun -n P webrank rank SHARDS --distributed` runs of two source trees, alternated
# round by round on one machine (the ranks unbound: --bind-to none), with the run's phases.
#   bash benchmarks/distributed/ranks_ab.sh OLD/src NEW/src SHARDS [P] [ROUNDS]
# e.g. the shards of `webrank generate rmat 21 --shards 2 -o SHARDS`; published:
# benchmarks/results/distributed/cpu_2core/ranks_ab_rmat21.txt
set -uo pipefail
old=$1 new=$2 shards=$3 P=${4:-2} rounds=${5:-3}
out=$(mktemp -d)
for round in $(seq "$rounds"); do
  for tree in "$old" "$new"; do
    t0=$(date +%s.%N)
    PYTHONPATH=$tree mpirun -n "$P" --oversubscribe --bind-to none python -m webrank rank \
      "$shards" --distributed --json --tol 1e-10 -o "$out/ranks" > "$out/run.json" \
      2> "$out/run.err" || { tail -3 "$out/run.err"; exit 1; }
    t1=$(date +%s.%N)
    python -c "
import json; d = json.load(open('$out/run.json'))
print('round $round $tree: whole %.2f s, read %.2f, solve %.2f (steps %.2f), %d iterations'
      % ($t1 - $t0, d['setup_s'], d['elapsed_s'], d.get('steps_s', 0), d['iterations']))"
  done
done
rm -rf "$out"
