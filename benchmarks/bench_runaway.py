"""How long a runaway loop takes to be reported: a kernel that never leaves its loop, launched with the default
step budget, at several launch sizes. Prints the budget, the steps per second and the seconds until
`StepBudgetExceeded` (compile included, and apart), as a table, and writes JSON
(benchmarks/results/runaway_<device>.json).

    python benchmarks/bench_runaway.py [--threads 256 4096 16384]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import jax
import numpy as np

import jaxsimt as js
from jaxsimt import Ptr, s32
from jaxsimt.run.launch import default_max_steps


@js.kernel
def runaway(out: Ptr[s32]):
    i = js.var(0)
    for _ in js.while_(lambda: i >= 0):  # never false
        i.set(i + 1)
        with js.if_(i > 1 << 30):
            i.set(0)
    out[js.global_thread_index()] = i


def run(threads: int) -> dict:
    block = min(threads, 256)
    grid = threads // block
    out = np.zeros(threads, np.int32)
    t0 = time.perf_counter()
    try:  # the compile, at the same machine shape with a tiny budget
        js.launch(runaway, grid, block, (out,), max_steps=10)
    except js.StepBudgetExceeded:
        pass
    first = time.perf_counter() - t0
    warps = threads // 32
    budget = default_max_steps(runaway.program, warps)
    t0 = time.perf_counter()
    try:
        js.launch(runaway, grid, block, (out,))
        raise AssertionError("the runaway loop finished")
    except js.StepBudgetExceeded:
        pass
    t = time.perf_counter() - t0
    return {"threads": threads, "warps": warps, "budget_steps": budget, "compile_s": first, "report_s": t,
            "steps_per_s": budget / t}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[256, 4096, 16384])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = [run(n) for n in a.threads]
    print(f"{'threads':>8} {'warps':>6} {'budget':>9} {'compile s':>10} {'reported after s':>17} {'steps/s':>9}")
    for r in rows:
        print(f"{r['threads']:>8} {r['warps']:>6} {r['budget_steps']:>9} {r['compile_s']:>10.2f} "
              f"{r['report_s']:>17.2f} {r['steps_per_s']:>9.0f}")
    dev = jax.devices()[0].platform
    path = a.out or os.path.join(os.path.dirname(__file__), "results", f"runaway_{dev}.json")
    with open(path, "w") as f:
        json.dump({"device": dev, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
