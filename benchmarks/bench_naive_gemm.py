"""Emulation speed of the naive GEMM (seed 000's coalesced mapping, 16x16 blocks, one FMA per k).

For N in 128, 256, 512 (default) it times `jaxsimt.launch` with all counters on (memory model included),
separating the first call (compile + run) from the steady state (median of repeats), and prints
emulated thread multiply-adds per second and warp instructions per second as a table, also written as
JSON (benchmarks/results/naive_gemm_<device>.json).

    python benchmarks/bench_naive_gemm.py [--sizes 128 256 512] [--repeats 3] [--no-counters] [--inline-counts]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import jax
import numpy as np

import jaxsimt as js


def naive_gemm():
    """Seed 000's coalesced naive GEMM: the ladder's rung (column from threadIdx.x, 16x16 blocks)."""
    from jaxsimt.kernels import gemm
    return gemm.BY_NAME["naive_coalesced"].kernel()


def run(n: int, repeats: int, counters: bool) -> dict:
    rng = np.random.default_rng(n)
    A, B = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    C = np.zeros((n, n), np.float32)
    g = -(-n // 16)
    args = (n, n, n, A, B, C)
    k = naive_gemm()
    t0 = time.perf_counter()
    r = js.launch(k, (g, g), (16, 16), args, counters=counters)
    first = time.perf_counter() - t0
    ok = np.allclose(r["C"], A.astype(np.float64) @ B, rtol=1e-4)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        js.launch(k, (g, g), (16, 16), args, counters=counters)
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    return {
        "N": n, "correct": bool(ok), "first_call_s": first, "median_s": t, "repeats": repeats,
        "fma_per_s": n ** 3 / t, "warp_inst_per_s": r.stats["smsp__inst_executed.sum"] / t,
        "warp_instructions": r.stats["smsp__inst_executed.sum"], "steps": r.stats["emulator__steps"],
        "counters": counters,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-counters", action="store_true")
    ap.add_argument("--inline-counts", action="store_true",
                    help="count each access where it runs instead of in the step's counter stage (the same counts)")
    ap.add_argument("--no-concurrent-graphs", action="store_true",
                    help="on a GPU, leave XLA's CUDA graphs sequential (jaxsimt.enable_concurrent_gpu_graphs)")
    args = ap.parse_args()
    # as the jaxsimt command does, before the first computation
    graphs = not args.no_concurrent_graphs and js.enable_concurrent_gpu_graphs()
    if args.inline_counts:
        from jaxsimt.machine.core import Machine
        Machine.count_stage = False
    dev = jax.devices()[0]
    rows = [run(n, args.repeats, not args.no_counters) for n in args.sizes]
    print(f"naive GEMM emulation on {dev.platform} ({dev.device_kind}), {os.cpu_count()} cores, "
          f"counters {'off' if args.no_counters else 'on'}{', counted inline' if args.inline_counts else ''}")
    print(f"{'N':>6} {'ok':>4} {'first call s':>13} {'median s':>10} {'FMA/s':>11} {'warp inst/s':>12} {'steps':>7}")
    for r in rows:
        print(f"{r['N']:>6} {str(r['correct']):>4} {r['first_call_s']:>13.2f} {r['median_s']:>10.3f} "
              f"{r['fma_per_s']:>11.3g} {r['warp_inst_per_s']:>12.3g} {r['steps']:>7}")
    out = {"device": f"{dev.platform}:{dev.device_kind}", "cpus": os.cpu_count(), "python": platform.python_version(),
           "jax": jax.__version__, "concurrent_gpu_graphs": graphs, "rows": rows}
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", f"naive_gemm_{dev.platform}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"written {path}")


if __name__ == "__main__":
    main()
