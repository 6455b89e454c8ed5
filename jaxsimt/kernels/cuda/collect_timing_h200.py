#!/usr/bin/env python3
"""The timing model's micro-benchmarks on an H200, in one run: build `micro_timing.cu`, run it, keep its SASS,
and profile its empty-kernel launches with Nsight Compute (kernel duration and SM cycles vs grid size).

Run from the repository root on a machine with an H200, nvcc and (optionally) ncu:

    python3 jaxsimt/kernels/cuda/collect_timing_h200.py --out DIR

Writes only DIR/h200_timing_micro.tar.gz (a folder `timing_micro/`: micro_timing.jsonl, micro_timing.sass,
ncu_launch.csv, env.json, log.txt) and prints the measurements last. Unpack it with
`tar xzf DIR/h200_timing_micro.tar.gz -C jaxsimt/data/h200/`. Stdlib only; each step has a timeout and a
failing step leaves the others' files.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NVCC = ["nvcc", "-arch=sm_90", "-O3", "-lineinfo", "-std=c++17", "-Xptxas", "-v"]
NCU_METRICS = "gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_elapsed.max"


def sh(cmd, log, timeout, **kw):
    t0 = time.time()
    log.write(f"$ {' '.join(cmd)}\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.write(f"  failed: {e}\n")
        return None
    log.write(f"  rc={p.returncode} ({time.time() - t0:.1f} s)\n{p.stderr[-4000:]}\n")
    return p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-ncu", action="store_true")
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="micro_timing_")  # the build and the folder; only the tarball goes to --out
    d = os.path.join(work, "timing_micro")
    os.makedirs(d, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(d, "log.txt"), "w")
    exe = os.path.join(work, "micro_timing")
    env = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for key, cmd in (("nvidia_smi", ["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,"
                                     "pstate,driver_version", "--format=csv"]),
                     ("nvcc", ["nvcc", "--version"]), ("ncu", ["ncu", "--version"])):
        p = sh(cmd, log, 60)
        env[key] = p.stdout.strip() if p is not None else None
    p = sh(NVCC + [os.path.join(HERE, "micro_timing.cu"), "-o", exe], log, 300)
    env["ptxas"] = p.stderr if p is not None else None
    if p is not None and p.returncode == 0:
        s = sh(["cuobjdump", "--dump-sass", exe], log, 120)
        if s is not None:
            with open(os.path.join(d, "micro_timing.sass"), "w") as f:
                f.write(s.stdout)
        r = sh([exe], log, 150)
        if r is not None:
            with open(os.path.join(d, "micro_timing.jsonl"), "w") as f:
                f.write(r.stdout)
            print(r.stdout)
        if not a.no_ncu and shutil.which("ncu"):
            n = sh(["ncu", "--clock-control", "none", "--metrics", NCU_METRICS, "--csv", "--page", "raw",
                    "--print-units", "base", "-k", "regex:empty_kernel", exe, "--only", "launches",
                    "--launch-reps", "1"], log, 120)
            if n is not None:
                with open(os.path.join(d, "ncu_launch.csv"), "w") as f:
                    f.write(n.stdout)
    with open(os.path.join(d, "env.json"), "w") as f:
        json.dump(env, f, indent=1)
    log.close()
    with tarfile.open(os.path.join(a.out, "h200_timing_micro.tar.gz"), "w:gz") as t:
        t.add(d, arcname="timing_micro")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
