"""What one rank's read of its shard costs: seconds and the process's own (anonymous)
memory per link, for two source trees, in fresh processes.

    python benchmarks/distributed/shard_read.py SHARD_DIR OLD_SRC NEW_SRC [--rounds 2]

``SHARD_DIR`` from ``webrank generate rmat 22 --shards 2 -o SHARD_DIR``; part 0 is read
(``webrank.distributed.inputs.read_shard``, with its checks). Memory-mapped shards show
no anonymous memory: their pages are the page cache's. Prints one line a process
(published: ``benchmarks/results/distributed/cpu_2core/shard_read.txt``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from webrank.distributed.inputs import read_shard
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) * 1024
base = anon()
t = time.perf_counter()
part = read_shard(sys.argv[2], 0, int(sys.argv[3]))
print(f"read {time.perf_counter() - t:.3f} s, {part.num_edges:,} links, own memory "
      f"{(anon() - base) / part.num_edges:.1f} bytes a link")
"""


def main() -> None:
    import json
    from pathlib import Path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shards")
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    parts = json.loads((Path(args.shards) / "webrank-shards.json").read_text())["parts"]
    for _ in range(args.rounds):
        for tree in args.trees:
            out = subprocess.run([sys.executable, "-c", CHILD, tree, args.shards, str(parts)],
                                 capture_output=True, text=True)
            print(tree, (out.stdout or out.stderr).strip().splitlines()[-1])


if __name__ == "__main__":
    main()
