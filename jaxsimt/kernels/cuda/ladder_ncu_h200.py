#!/usr/bin/env python3
"""The GEMM ladder at its timed sizes under Nsight Compute, and the SM clock while it runs, on an H200.

The ladder's CUDA-event times (`timings.json`) give milliseconds only. This adds, for every rung at 1024^3,
2048^3 and 4096^3 (one profiled launch each, after a warm-up launch, random inputs): the busiest SM's
active cycles, the elapsed cycles, the SM clock ncu saw (`sm__cycles_elapsed.avg.per_second`), the warp
instructions issued, achieved occupancy and the warp-state breakdown per issued instruction (the stall
reasons jaxsimt's replay names) — so that the timing model can be held out against cycles, whatever clock the
GPU ran; and, without the profiler, each rung's CUDA-event time at 4096^3 with `nvidia-smi` sampling the SM
clock every 20 ms (the clock under the load the timings were taken at).

Needs nvcc, numpy and cupy (not jaxsimt); run from the repository root:

    python3 jaxsimt/kernels/cuda/ladder_ncu_h200.py --out DIR

Writes DIR/ladder_ncu.csv (rung, size, metric, value), DIR/ladder_clock.json and DIR/ladder_ncu.log.
`--launch` (used under ncu) runs the profiled launches only.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from device_tools import SmiSampler, nvcc  # noqa: E402

SIZES = (1024, 2048, 4096)
# rung: (mangled entry, grid at size n, block) as gemm_ladder.cu launches them
RUNGS = {
    "naive_uncoalesced": ("_Z22gemm_naive_uncoalescedPKfS0_Pfiii", lambda n: (n // 16, n // 16), (16, 16)),
    "naive_coalesced": ("_Z20gemm_naive_coalescedPKfS0_Pfiii", lambda n: (n // 16, n // 16), (16, 16)),
    "smem_tiled": ("_Z15gemm_smem_tiledPKfS0_Pfiii", lambda n: (n // 16, n // 16), (16, 16)),
    "coarsened": ("_Z14gemm_coarsenedPKfS0_Pfiii", lambda n: (n // 32, n // 32), (16, 16)),
    "register_tiled": ("_Z19gemm_register_tiledPKfS0_Pfiii", lambda n: (n // 64, n // 64), (256, 1)),
    "wmma": ("_Z9gemm_wmmaPK6__halfS1_Pfiii", lambda n: (n // 32, n // 32), (128, 1)),
}
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
          "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
          "short_scoreboard", "sleeping", "tex_throttle", "wait")
METRICS = ("gpu__time_duration.sum", "sm__cycles_active.max", "sm__cycles_elapsed.max", "smsp__cycles_active.avg",
           "sm__cycles_elapsed.avg.per_second", "smsp__inst_issued.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "launch__registers_per_thread", "launch__grid_size", "launch__block_size") + tuple(
    f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALLS)


def problem(cp, name: str, n: int, seed: int):
    import numpy as np
    rng = np.random.default_rng(seed)
    dt = np.float16 if name == "wmma" else np.float32
    A = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(dt))
    B = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(dt))
    C = cp.full((n, n), np.nan, np.float32)
    return A, B, C


def warmed(cp, mod, name: str, n: int):
    """A rung at n^3 on fresh random inputs, launched once (warm-up): (launch again, its output C)."""
    import numpy as np
    entry, grid, block = RUNGS[name]
    f = mod.get_function(entry)
    A, B, C = problem(cp, name, n, n)
    args = (A, B, C, np.int32(n), np.int32(n), np.int32(n))

    def go():
        f(grid(n), block, args)

    go()
    cp.cuda.runtime.deviceSynchronize()
    return go, C


def launches(cubin: str) -> None:
    """One warm-up and one profiled launch of every rung at every size (the profiler on around the latter)."""
    import cupy as cp
    mod = cp.RawModule(path=cubin)
    for n in SIZES:
        for name in RUNGS:
            go, C = warmed(cp, mod, name, n)
            cp.cuda.runtime.profilerStart()
            go()
            cp.cuda.runtime.deviceSynchronize()
            cp.cuda.runtime.profilerStop()
            if not bool(cp.isfinite(C).all()):
                raise SystemExit(f"{name}@{n}: output not fully written")


def clock_under_load(cubin: str, log) -> dict:
    """Each rung's CUDA-event time at 4096^3 (median of 5 after a warm-up) with nvidia-smi sampling the SM
    clock: {rung: {median_ms, clocks_mhz: [samples while it ran]}}."""
    import cupy as cp
    import numpy as np
    smi = SmiSampler("timestamp,clocks.sm,power.draw,temperature.gpu").start()
    samples = smi.samples
    time.sleep(1.0)
    mod = cp.RawModule(path=cubin)
    out, n = {}, 4096
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    for name in RUNGS:
        go, _ = warmed(cp, mod, name, n)
        t0 = time.time()
        ms = []
        for _ in range(5):
            e0.record()
            go()
            e1.record()
            e1.synchronize()
            ms.append(cp.cuda.get_elapsed_time(e0, e1))
        out[name] = {"median_ms": float(np.median(ms)), "ms": ms, "t0": t0, "t1": time.time()}
    time.sleep(0.5)
    smi.stop()
    for name, r in out.items():
        got = [s for t, s in samples if r["t0"] <= t <= r["t1"]]
        r["clocks_mhz"] = [float(s.split(",")[1]) for s in got]
        r["power_w"] = [float(s.split(",")[2]) for s in got]
    log.write(f"{len(samples)} nvidia-smi samples\n")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="")
    ap.add_argument("--launch", default="", help="(under ncu) the cubin whose rungs to launch")
    a = ap.parse_args(argv)
    if a.launch:
        launches(a.launch)
        return 0
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "ladder_ncu.log"), "w")
    work = tempfile.mkdtemp(prefix="ladder_ncu_")
    cubin = nvcc("gemm_ladder.cu", os.path.join(work, "gemm_ladder.cubin"), log, ["-cubin"])
    t0 = time.time()
    clock = clock_under_load(cubin, log)
    log.write(f"clock phase {time.time() - t0:.1f} s\n")
    with open(os.path.join(a.out, "ladder_clock.json"), "w") as f:
        json.dump(clock, f, indent=1)
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--csv", "--print-units", "base", "--metrics", ",".join(METRICS),
           sys.executable, os.path.abspath(__file__), "--launch", cubin]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    log.write(f"$ {' '.join(cmd)}\nrc={p.returncode} ({time.time() - t0:.1f} s)\n{p.stderr[-4000:]}\n")
    rows = [r for r in csv.DictReader(io.StringIO("".join(ln for ln in p.stdout.splitlines(True)
                                                          if ln.startswith('"'))))]
    order = [(name, n) for n in SIZES for name in RUNGS]
    ids = sorted({int(r["ID"]) for r in rows})
    with open(os.path.join(a.out, "ladder_ncu.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rung", "size", "metric", "value"])
        for r in rows:
            name, n = order[ids.index(int(r["ID"]))]
            w.writerow([name, n, r["Metric Name"], r["Metric Value"].replace(",", "")])
    print(f"{'rung':<18} {'size':>5} {'ms':>9} {'cycles.max':>12} {'GHz(ncu)':>8} {'smi MHz (4096, load)':>22}")
    by = {(r["ID"], r["Metric Name"]): r["Metric Value"].replace(",", "") for r in rows}
    for i in ids:
        name, n = order[ids.index(i)]
        g = lambda m: float(by.get((str(i), m), "nan"))  # noqa: E731
        c = clock.get(name, {}).get("clocks_mhz", []) if n == 4096 else []
        print(f"{name:<18} {n:>5} {g('gpu__time_duration.sum') / 1e6:>9.3f} {g('sm__cycles_active.max'):>12.0f} "
              f"{g('sm__cycles_elapsed.avg.per_second') / 1e9:>8.3f} "
              f"{(f'{min(c):.0f}-{max(c):.0f} ({len(c)})' if c else ''):>22}")
    print(p.stderr[-1500:] if p.returncode else "ncu ok")
    return 0 if p.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
