#!/usr/bin/env python3
"""The SM clock an H200 runs at under Tensor Core load (`tensor_clock.cu`), for the timing model's conversion of
cycles to time.

The GEMM ladder's wmma rung ran at 1.80 GHz where every other rung ran at 1.98 GHz (`ladder_ncu/`). This
measures the clock against the share of the tensor pipe a kernel keeps busy, on kernels made for it: six
mixes of mma.sync and FFMA per loop iteration, each for three lengths (about 20 us to a few ms), under Nsight
Compute (`--clock-control none`: the clock the launch met, `sm__cycles_elapsed.avg.per_second`, and the pipes'
busy shares); then each mix for about a second without the profiler while `nvidia-smi` samples the SM clock
every 20 ms.

Needs nvcc and ncu (not jaxsimt); run from the repository root:

    python3 jaxsimt/kernels/cuda/tensor_clock_h200.py --out DIR

Writes DIR/tensor_clock.csv (mmas, ffmas, iters, metric, value), DIR/tensor_clock_smi.csv (mmas, ffmas,
seconds, clock MHz, power W) and DIR/tensor_clock.log.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from device_tools import SmiSampler, nvcc  # noqa: E402

MIXES = ((8, 0), (8, 16), (8, 64), (4, 128), (1, 128), (0, 64))  # (mma.sync, FFMA) per iteration and warp
ITERS = (40, 400, 4000)
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "sm__cycles_active.avg",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor_op_hmma.sum",
           "smsp__inst_executed.sum")


def ncu_run(ncu, exe, mix, iters, work, metrics, log):
    rep = os.path.join(work, "tc.ncu-rep")
    cmd = [ncu, "--clock-control", "none", "--metrics", ",".join(metrics), "--export", rep, "--force-overwrite",
           exe, str(mix[0]), str(mix[1]), str(iters)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    log.write(f"$ {' '.join(cmd)}\nrc={p.returncode}\n{p.stdout[-500:]}{p.stderr[-1500:]}\n")
    if p.returncode:
        return None
    q = subprocess.run([ncu, "--import", rep, "--csv", "--page", "raw", "--print-units", "base"],
                       capture_output=True, text=True, timeout=120)
    rows = list(csv.reader(io.StringIO(q.stdout)))
    if len(rows) < 3:
        return None
    d = dict(zip(rows[0], rows[2]))
    return {m: d.get(m, "").replace(",", "") for m in metrics}


def sustained(exe, mix, seconds, log):
    """The mix launched again and again for about `seconds` with nvidia-smi sampling: [(t, MHz, W)]."""
    smi = SmiSampler("clocks.sm,power.draw").start()
    time.sleep(0.5)
    t0 = time.time()
    while time.time() - t0 < seconds:
        subprocess.run([exe, str(mix[0]), str(mix[1]), "40000"], capture_output=True, timeout=120)
    t1 = time.time()
    time.sleep(0.3)
    smi.stop()
    out = []
    for t, s in smi.samples:
        if t0 + 0.3 <= t <= t1:  # past the first launch's start
            try:
                mhz, w = (float(x) for x in s.split(","))
            except ValueError:
                continue
            out.append((round(t - t0, 3), mhz, w))
    log.write(f"sustained {mix}: {len(out)} samples\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=2.0, help="sustained run per mix")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    with open(os.path.join(a.out, "tensor_clock.log"), "w") as log, tempfile.TemporaryDirectory() as work:
        exe = nvcc("tensor_clock.cu", os.path.join(work, "tensor_clock"), log)
        metrics = METRICS
        with open(os.path.join(a.out, "tensor_clock.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["mmas", "ffmas", "iters", "metric", "value"])
            for mix in MIXES:
                for iters in ITERS:
                    r = ncu_run(ncu, exe, mix, iters, work, metrics, log)
                    if r is None and metrics is METRICS:  # a metric this ncu lacks: the clock and time alone
                        metrics = METRICS[:3]
                        r = ncu_run(ncu, exe, mix, iters, work, metrics, log)
                    if r is None:
                        print(f"{mix} x{iters}: ncu failed (see the log)")
                        continue
                    for m, v in r.items():
                        w.writerow([mix[0], mix[1], iters, m, v])
                    f.flush()
                    print(f"{mix} x{iters}: {float(r['gpu__time_duration.sum']) / 1e3:9.1f} us  clock "
                          f"{float(r['sm__cycles_elapsed.avg.per_second']) / 1e9:.3f} GHz  tensor "
                          f"{r.get(METRICS[3], '-')}%  fma {r.get(METRICS[4], '-')}%", flush=True)
        with open(os.path.join(a.out, "tensor_clock_smi.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["mmas", "ffmas", "seconds", "clock_mhz", "power_w"])
            for mix in MIXES:
                got = sustained(exe, mix, a.seconds, log)
                for t, mhz, pw in got:
                    w.writerow([mix[0], mix[1], t, mhz, pw])
                mhz = sorted(x[1] for x in got)
                print(f"{mix} sustained: {len(got)} samples, clock median {mhz[len(mhz) // 2] if mhz else 0:.0f} MHz",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
