"""Time of the GEMM tile sweep (`jaxsimt sweep`): every default tile configuration of the ladder at one
size and architecture, emulated (one block per class of identical blocks, batched per kernel shape) and
run through the vmapped occupancy and cost models; prints the table and the winner's explanation, writes
JSON (benchmarks/results/tile_sweep_<platform>.json: timings and every row's counters).

    python benchmarks/bench_tile_sweep.py [--size 2048 2048 2048] [--arch h200]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import jax  # noqa: E402
from rich.console import Console  # noqa: E402

from jaxsimt.apps import tile_sweep as ts  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, nargs=3, default=[2048, 2048, 2048])
    ap.add_argument("--arch", default="h200")
    args = ap.parse_args()
    M, N, K = args.size
    t0 = time.perf_counter()
    rows = ts.tile_sweep(M, N, K, args.arch, progress=True)
    total = time.perf_counter() - t0
    # the models alone, again: compiled now, so this is their steady-state time over all configurations
    stats = [r["stats"] for r in rows]
    t1 = time.perf_counter()
    ts.models(args.arch, stats, M, N, K)
    models_again = time.perf_counter() - t1
    ts.render(rows, M, N, K, args.arch, Console(width=160))
    print(f"total {total:.1f} s; models over {len(rows)} configurations, second call: {models_again * 1e3:.1f} ms")
    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}:{dev.device_kind}", "cpus": os.cpu_count(), "python": platform.python_version(),
           "jax": jax.__version__, "size": [M, N, K], "arch": args.arch, "total_s": total,
           "emulate_s": rows[0]["timing_s"]["emulate"], "models_first_s": rows[0]["timing_s"]["models"],
           "models_second_s": models_again,
           "rows": [{k: v for k, v in r.items() if k not in ("timing_s",)} for r in rows]}
    dest = os.environ.get("OUT") or os.path.join(HERE, "results")
    os.makedirs(dest, exist_ok=True)
    path = os.path.join(dest, f"tile_sweep_{dev.platform}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print(f"written {path}")


if __name__ == "__main__":
    main()
