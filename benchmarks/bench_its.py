"""Cost of Independent Thread Scheduling against the reconvergence stack, on the same kernels.

Two kernels, each launched in both modes with all counters on: the naive GEMM (no divergence: what the
per-lane pc machinery costs per step) and `loop_tail` over many warps (a lane-dependent loop: ITS runs
the tail once per exit iteration). For each: first call (compile + run), steady-state median of repeats,
steps, warp instructions and warp instructions per second; printed as a table and written as JSON to
benchmarks/results/its_<device>.json.

    python benchmarks/bench_its.py [--gemm-n 128] [--tail-blocks 256] [--repeats 3]
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


def _time(fn, repeats: int):
    t0 = time.perf_counter()
    r = fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return r, first, statistics.median(times)


def cases(gemm_n: int, tail_blocks: int):
    from jaxsimt.kernels import gemm
    from jaxsimt.kernels import its as K
    rng = np.random.default_rng(0)
    n = gemm_n
    A, B = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    g = -(-n // 16)
    k = gemm.BY_NAME["naive_coalesced"].kernel()
    yield (f"naive_gemm N={n}", lambda mode: js.launch(k, (g, g), (16, 16), (n, n, n, A, B, np.zeros((n, n), np.float32)),
                                                      mode=mode))
    out = np.zeros(tail_blocks * 256, np.int32)
    # loop_tail indexes by threadIdx.x: every block writes the same 256 elements (the same values)
    yield (f"loop_tail {tail_blocks}x256", lambda mode: js.launch(K.loop_tail, tail_blocks, 256, [out], mode=mode))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemm-n", type=int, default=128)
    ap.add_argument("--tail-blocks", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rows = []
    for name, run in cases(a.gemm_n, a.tail_blocks):
        for mode in ("stack", "its"):
            r, first, med = _time(lambda: run(mode), a.repeats)
            s = r.stats
            rows.append({"kernel": name, "mode": mode, "first_call_s": first, "median_s": med, "repeats": a.repeats,
                         "steps": s["emulator__steps"], "warp_instructions": s["smsp__inst_executed.sum"],
                         "simd_efficiency": s["simd_efficiency"],
                         "warp_inst_per_s": s["smsp__inst_executed.sum"] / med})
            x = rows[-1]
            print(f"{name:24s} {mode:5s} first {first:7.2f} s  median {med:7.3f} s  steps {x['steps']:6d}  "
                  f"warp inst {x['warp_instructions']:9d}  simd {x['simd_efficiency']:.3f}  "
                  f"{x['warp_inst_per_s']:.3g} warp inst/s", flush=True)
    dev = jax.devices()[0]
    kind = "gpu" if dev.platform == "gpu" else "cpu"
    out = {"device": str(dev), "platform": platform.platform(), "cpu_count": os.cpu_count(), "rows": rows}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"its_{kind}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
