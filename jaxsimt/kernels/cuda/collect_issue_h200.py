#!/usr/bin/env python3
"""Register-bank, instruction-cache and loaded-latency micro-benchmarks (`micro_issue.cu`) on an H200, in one
run: build, keep the SASS (the register numbers and reuse flags the bank analysis reads), run.

Run from the repository root on a machine with an H200 and nvcc:

    python3 jaxsimt/kernels/cuda/collect_issue_h200.py --out DIR

Writes DIR/micro_issue.jsonl, DIR/micro_issue.sass.gz, DIR/env.json and DIR/log.txt; copy them to
`jaxsimt/data/h200/issue_micro/`. Stdlib only.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_tools  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", action="append", default=[], help="regbank, icache, loaded, span, branch or mio (repeatable)")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "log.txt"), "w")
    env = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for key, cmd in (("nvidia_smi", ["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,"
                                     "power.limit,pstate,driver_version", "--format=csv"]),
                     ("nvcc", ["nvcc", "--version"])):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        env[key] = p.stdout.strip()
    exe = device_tools.nvcc("micro_issue.cu", os.path.join(a.out, "micro_issue"), log, extra=("-lineinfo",))
    p = subprocess.run(["cuobjdump", "--dump-sass", exe], capture_output=True, text=True, timeout=300)
    with gzip.open(os.path.join(a.out, "micro_issue.sass.gz"), "wt") as f:
        f.write(p.stdout)
    cmd = [exe] + [x for g in a.only for x in ("--only", g)]
    sampler = device_tools.SmiSampler("clocks.sm,power.draw,temperature.gpu", ms=200)
    sampler.start()
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=540)
    sampler.stop()
    env["run_s"] = round(time.time() - t0, 1)
    env["smi_samples"] = sampler.samples[::5]
    log.write(f"$ {' '.join(cmd)}\nrc={r.returncode}\n{r.stderr[-3000:]}\n")
    with open(os.path.join(a.out, "micro_issue.jsonl"), "w") as f:
        f.write(r.stdout)
    with open(os.path.join(a.out, "env.json"), "w") as f:
        json.dump(env, f, indent=1)
    os.remove(exe)
    print(r.stdout[-6000:])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
