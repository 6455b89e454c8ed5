"""What the sanitizer's checks cost: the naive GEMM (the ladder's coalesced rung, 16x16 blocks) at N = 256
(default) without checks and with each check (`launch(..., check=..., collect=True)`), counters on. Prints,
per check set, the first call (compile + run) and the steady-state median of repeats, and the ratio of the
median to the unchecked one, as a table, and writes JSON (benchmarks/results/sanitizer_<device>.json).

    python benchmarks/bench_sanitizer.py [--n 256] [--repeats 3] [--checks none memcheck racecheck ...]
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

CHECK_SETS = ["none", "memcheck", "synccheck", "initcheck", "racecheck", "all"]


def run(n: int, check: str, repeats: int) -> dict:
    from jaxsimt.kernels import gemm

    k = gemm.BY_NAME["naive_coalesced"].kernel()
    rng = np.random.default_rng(n)
    A, B = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    args = (n, n, n, A, B, np.zeros((n, n), np.float32))
    g = -(-n // 16)
    kw = {} if check == "none" else {"check": check, "collect": True}
    t0 = time.perf_counter()
    r = js.launch(k, (g, g), (16, 16), args, **kw)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        js.launch(k, (g, g), (16, 16), args, **kw)
        times.append(time.perf_counter() - t0)
    return {"N": n, "check": check, "first_call_s": first, "median_s": statistics.median(times),
            "repeats": repeats, "findings": len(r.findings), "steps": r.stats["emulator__steps"],
            "correct": bool(np.allclose(r["C"], A.astype(np.float64) @ B, rtol=1e-4))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--checks", nargs="+", default=CHECK_SETS)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = [run(a.n, c, a.repeats) for c in a.checks]
    base = next((r["median_s"] for r in rows if r["check"] == "none"), None)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()  # taskset counts
    print(f"naive GEMM N={a.n} on {jax.devices()[0].platform} ({cores} cores), counters on")
    print(f"{'checks':<12}{'first call s':>14}{'median s':>12}{'x unchecked':>13}{'steps':>9}{'findings':>10}")
    for r in rows:
        r["x_unchecked"] = r["median_s"] / base if base else None
        x = f"{r['x_unchecked']:.2f}" if base else "-"
        print(f"{r['check']:<12}{r['first_call_s']:>14.2f}{r['median_s']:>12.3f}{x:>13}{r['steps']:>9}"
              f"{r['findings']:>10}")
    dev = jax.devices()[0].platform
    out = a.out or os.path.join(os.path.dirname(__file__), "results", f"sanitizer_{dev}.json")
    with open(out, "w") as f:
        json.dump({"device": dev, "cores": cores, "machine": platform.machine(), "rows": rows}, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
