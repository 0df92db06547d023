"""A model on paper of partitioned PageRank on many GPUs, from measured rates.

    python benchmarks/distributed/distributed_model.py [--results DIR]
        [--nodes 3.5e9 --links 128e9] [--inter-gbps 50]

(``--results`` default: ``benchmarks/results/distributed/h200x2``.)

Inputs, from the 2 x H200 results (``distributed.jsonl``): the pull step's rate
per GPU on the largest graph (R-MAT 29, ~4.3B links a GPU: its per-iteration time less
the all-gather, scaled from R-MAT 27's measured one by the vector's size) and the
all-gather bandwidth between the two GPUs (NVLink). Between hosts, ``--inter-gbps`` GB/s a
GPU (one 400 Gb/s NIC per GPU: 50 GB/s, less in practice) is an assumption, not a
measurement. Defaults: the 2012 Web Data Commons hyperlink graph (3.5B pages, 128B links).

Per iteration, 1D (rows split P ways, the whole gathered vector on every GPU):
    compute  = links / P / rate
    exchange = 4 n (P - 1) / P / bandwidth           (float32 gathered vector)
    memory   = links / P * idx + (n / P) * 48 + 2 * 4 n
2D (a pr x pc grid, pr ~ pc ~ sqrt(P); each GPU a block of rows x sources):
    exchange = 4 n (pc - 1) / (pr pc) ... reduce-scatter of partial sums along a row of
               the grid, then all-gather of the new slice along a column:
               about 4 n (1 / pr + 1 / pc) bytes a GPU
    memory   = links / P * 4 + (n / P) * 48 + 2 * 4 n / pc + 8 n / pr
``idx`` is 8 bytes in 1D when n > 2**31 (global source ids need int64) and 4 in 2D (ids
local to a column block). No overlap of exchange and compute is assumed (webrank does not
overlap them today). Prints a Markdown table (the one in docs/distributed.md); writes
no file.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

HERE = Path(__file__).parent


def measured(results: Path) -> dict[str, float]:
    """Pull rate per GPU (links/s) and the all-gather's per-GPU receive bandwidth (B/s)."""
    recs = [json.loads(line) for line in (results / "distributed.jsonl").open()]
    large = next(r["result"] for r in recs if r["what"] == "large")
    strong = next(r["result"] for r in recs if r["what"] == "strong")
    gpus = large["gpus"]
    # the all-gather of R-MAT 27's float32 vector, measured; R-MAT 29's scaled by n
    gather27 = strong["2gpu_allgather_ms"] / 1e3
    received27 = 4 * strong["n"] * (gpus - 1) / gpus
    bw = received27 / gather27
    gather29 = 4 * large["n"] * (gpus - 1) / gpus / bw
    compute29 = large["ms_per_iteration"] / 1e3 - gather29
    rate = large["edges"] / gpus / compute29
    return {"rate": rate, "intra_bw": bw, "gather29_ms": 1e3 * gather29,
            "compute29_ms": 1e3 * compute29}


def model(n: float, m: float, p: int, rate: float, bw: float) -> dict[str, float]:
    """Per-iteration seconds and bytes per GPU, 1D and 2D, for P GPUs."""
    idx1 = 8 if n > 2**31 - 1 else 4
    compute = m / p / rate
    one_d = {"compute": compute, "exchange": 4 * n * (p - 1) / p / bw,
             "memory": m / p * idx1 + n / p * 48 + 8 * n}
    pr = 2 ** (int(math.log2(p)) // 2)
    pc = p // pr
    two_d = {"compute": compute,
             "exchange": (4 * n / pr * (pc - 1) / pc + 4 * n / pc * (pr - 1) / pr) / bw,
             "memory": m / p * 4 + n / p * 48 + 8 * n / pc + 8 * n / pr, "grid": (pr, pc)}
    return {"1d": one_d, "2d": two_d}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path,
                    default=HERE.parent / "results" / "distributed" / "h200x2")
    ap.add_argument("--nodes", type=float, default=3.5e9)
    ap.add_argument("--links", type=float, default=128e9)
    ap.add_argument("--inter-gbps", type=float, default=50.0,
                    help="GB/s a GPU between hosts (assumed)")
    ap.add_argument("--gpus-per-host", type=int, default=8)
    args = ap.parse_args()
    got = measured(args.results)
    print(f"measured on 2 x H200: pull {got['rate'] / 1e9:.1f}G links/s a GPU (R-MAT 29: "
          f"{got['compute29_ms']:.0f} ms compute + {got['gather29_ms']:.1f} ms all-gather), "
          f"all-gather {got['intra_bw'] / 1e9:.0f} GB/s a GPU over NVLink")
    print(f"graph: {args.nodes:.3g} nodes, {args.links:.3g} links; between hosts "
          f"{args.inter_gbps:.0f} GB/s a GPU (assumed)\n")
    print("| GPUs | link | compute ms | 1D exchange ms | 1D ms/it | 1D GB/GPU | 2D grid | "
          "2D exchange ms | 2D ms/it | 2D GB/GPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in (8, 64, 512):
        inter = p > args.gpus_per_host
        bw = args.inter_gbps * 1e9 if inter else got["intra_bw"]
        r = model(args.nodes, args.links, p, got["rate"], bw)
        a, b = r["1d"], r["2d"]
        print(f"| {p} | {'hosts' if inter else 'NVLink'} | {1e3 * a['compute']:.1f} | "
              f"{1e3 * a['exchange']:.1f} | {1e3 * (a['compute'] + a['exchange']):.1f} | "
              f"{a['memory'] / 1e9:.1f} | {b['grid'][0]}x{b['grid'][1]} | "
              f"{1e3 * b['exchange']:.1f} | {1e3 * (b['compute'] + b['exchange']):.1f} | "
              f"{b['memory'] / 1e9:.1f} |")
    # where 1D stops scaling: exchange (constant in P) equals compute (1/P)
    bw = args.inter_gbps * 1e9
    p_star = args.links / got["rate"] / (4 * args.nodes / bw)
    print(f"\n1D across hosts stops scaling near P = {p_star:.0f} (its exchange, "
          f"{4 * args.nodes / bw * 1e3:.0f} ms whatever P, equals the compute there).")


if __name__ == "__main__":
    main()
