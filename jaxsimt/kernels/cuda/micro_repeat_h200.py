#!/usr/bin/env python3
"""The micro-kernels profiled again and again on an H200: how far one launch's cycles move between runs.

The timing model's micro-kernel ground truth (`jaxsimt/data/h200/ncu_metrics.csv`) is one Nsight Compute run per
kernel. These kernels last 400-2000 cycles, so a DRAM refresh, the clock ncu happens to find
(`--clock-control none`) or where a block lands moves them by a large fraction. This profiles every kernel of
micro_global, micro_shared and micro_divergence REPEATS times, as collect_h200.py does (kernel replay, caches
flushed before each), with the metrics the model is compared on and the SM clock of each run. `--mode cold`
profiles each kernel in a fresh process's single pass over the registry (the first kernel meets cold
instruction caches and TLBs); `--mode warm` runs the registry twice (`--twice`) and profiles the second pass.

Needs nvcc and ncu (not jaxsimt); run from the repository root:

    python3 jaxsimt/kernels/cuda/micro_repeat_h200.py --out DIR [--repeats 8] [--mode warm|cold]

Writes DIR/micro_repeat_<mode>.csv (program, kernel, repeat, metric, value; kernel as the registry names it)
and DIR/micro_repeat_<mode>.log.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from device_tools import nvcc  # noqa: E402

PROGRAMS = ("micro_global", "micro_shared", "micro_divergence")
METRICS = ("sm__cycles_active.max", "smsp__cycles_active.avg", "sm__cycles_elapsed.max", "gpu__time_duration.sum",
           "sm__cycles_elapsed.avg.per_second", "dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum")
KERNEL_REGEX = "regex:^(smem_|glob_|div_)"


def registry(exe: str) -> list[str]:
    """The program's kernels in launch order (its --list)."""
    out = subprocess.run([exe, "--list"], capture_output=True, text=True, timeout=60).stdout
    return [json.loads(ln)["kernel"] for ln in out.splitlines() if ln.startswith("{")]


def profile(ncu: str, exe: str, work: str, log, warm: bool) -> list[dict]:
    """One ncu run of every kernel of `exe` (warm: of the second of two passes): [{kernel, metric: value}] in
    launch order."""
    rep = os.path.join(work, "run.ncu-rep")
    names = registry(exe)
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--replay-mode", "kernel",
           "--metrics", ",".join(METRICS), "--kernel-name", KERNEL_REGEX, "--export", rep, "--force-overwrite"]
    cmd += (["--launch-skip", str(len(names)), exe, "--twice"] if warm else [exe])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log.write(f"$ {' '.join(cmd)}\nrc={p.returncode}\n{p.stderr[-1500:]}\n")
    q = subprocess.run([ncu, "--import", rep, "--csv", "--page", "raw", "--print-units", "base"],
                       capture_output=True, text=True, timeout=300)
    rows = list(csv.reader(io.StringIO(q.stdout)))
    if len(rows) < 3:
        log.write(f"no rows: {q.stderr[-1500:]}\n")
        return []
    head = rows[0]
    out = []
    for r in rows[2:]:  # row 1: units
        d = dict(zip(head, r))
        out.append({m: d.get(m, "").replace(",", "") for m in METRICS})  # '2,056' -> 2056
    if len(out) != len(names):
        log.write(f"{len(out)} profiled launches for {len(names)} kernels: left out\n")
        return []
    return [{"kernel": n, **r} for n, r in zip(names, out)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds; stops starting new runs after it")
    ap.add_argument("--mode", choices=("warm", "cold"), default="warm")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    t0 = time.time()
    with open(os.path.join(a.out, f"micro_repeat_{a.mode}.log"), "w") as log, \
            open(os.path.join(a.out, f"micro_repeat_{a.mode}.csv"), "w", newline="") as f, \
            tempfile.TemporaryDirectory() as work:
        w = csv.writer(f)
        w.writerow(["program", "kernel", "repeat", "metric", "value"])
        exes = {n: nvcc(f"{n}.cu", os.path.join(work, n), log, ["-lineinfo"]) for n in PROGRAMS}
        for k in range(a.repeats):
            for n in PROGRAMS:
                if time.time() - t0 > a.deadline:
                    print(f"deadline: stopped before repeat {k} of {n}")
                    return 0
                rows = profile(ncu, exes[n], work, log, a.mode == "warm")
                for r in rows:
                    for m in METRICS:
                        w.writerow([n, r["kernel"], k, m, r[m]])
                f.flush()
                cyc = [float(r["sm__cycles_active.max"] or 0) for r in rows]
                print(f"repeat {k} {n}: {len(rows)} kernels, cycles {min(cyc or [0]):.0f}..{max(cyc or [0]):.0f}, "
                      f"{time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
