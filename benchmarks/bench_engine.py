"""The engine's two figures: compile time against kernel length, and steady-state throughput.

Compile time: for each PTX kernel of `jaxsimt/kernels/ptx/` (one launch each, the H200 collection's
configuration), the first call's time minus the steady-state run's (median of repeats), beside the
kernel's length in instructions, at the default compile budget and, with `--budgets`, at others
(`none` compiles every block). Throughput: the naive GEMM (the ladder's coalesced rung) with all counters
on and off, in emulated thread multiply-adds per second.

Prints both as tables and writes JSON (benchmarks/results/engine_<device>.json).

    python benchmarks/bench_engine.py [--kernels all|quick|NAME...] [--budgets default none 0]
                                      [--sizes 256 512] [--repeats 3] [--no-gemm] [--no-compile]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import jax
import numpy as np

from jaxsimt.kernels import collection
from jaxsimt.run.gpu_graphs import enable_concurrent_gpu_graphs

try:
    from jaxsimt.machine.templates import COMPILE_BUDGET
except ImportError:  # an engine that compiles every block
    COMPILE_BUDGET = None

# A spread of lengths: ~20 to ~1,500 instructions per warp (the pressure family is one straight block).
QUICK = ["smem_stride_s1", "glob_ld_stride1", "pressure<5>", "div_nested", "gemm_naive_coalesced@33x65x17",
         "mma_truth_m16n8k16_f16_f32", "gemm_smem_tiled@33x65x17", "gemm_coarsened@33x65x17",
         "gemm_wmma@33x65x17", "gemm_register_tiled@33x65x17", "pressure<64,32>", "pressure<64,40>",
         "pressure<96,64>", "pressure<128,72>", "pressure<256,128>", "pressure<256,168>", "pressure<256,255>"]


def _budget(s: str):
    """A --budgets word: "default" (the launch's own default), "none" (compile everything) or a number."""
    return s if s == "default" else None if s == "none" else int(s)


def _kw(budget) -> dict:
    # "default" passes nothing, so the benchmark also runs on engines without a compile budget
    return {} if budget == "default" else {"compile_budget": budget}


def one_per_entry() -> list[str]:
    """The first collection case of every distinct PTX entry."""
    seen, out = set(), []
    for c in collection.CASES:
        if (c.program, c.entry) not in seen:
            seen.add((c.program, c.entry))
            out.append(c.name)
    return out


def compile_time(name: str, budget, repeats: int) -> dict:
    case = collection.by_name()[name]
    t0 = time.perf_counter()
    r, args = collection.launch(case, **_kw(budget))
    first = time.perf_counter() - t0
    case.check(r, args)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        collection.launch(case, **_kw(budget))
        times.append(time.perf_counter() - t0)
    run = statistics.median(times)
    prog = r.program
    return {"kernel": name, "program": case.program, "budget": budget,
            "instructions": sum(1 for _ in prog.instructions()),
            "interpreted": sum(len(b.instrs) for b in prog.blocks if getattr(b, "interpret", False)),
            "first_call_s": first, "run_s": run, "compile_s": first - run,
            "steps": int(r.stats["emulator__steps"])}


def gemm_rate(n: int, repeats: int, counters: bool, budget, blocks_per_wave=None) -> dict:
    import jaxsimt as js
    from jaxsimt.kernels import gemm

    k = gemm.BY_NAME["naive_coalesced"].kernel()
    rng = np.random.default_rng(n)
    A, B = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    args = (n, n, n, A, B, np.zeros((n, n), np.float32))
    g = -(-n // 16)
    t0 = time.perf_counter()
    kw = {**_kw(budget), "blocks_per_wave": blocks_per_wave}
    r = js.launch(k, (g, g), (16, 16), args, counters=counters, **kw)
    first = time.perf_counter() - t0
    ok = bool(np.allclose(r["C"], A.astype(np.float64) @ B, rtol=1e-4))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        js.launch(k, (g, g), (16, 16), args, counters=counters, **kw)
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    return {"N": n, "counters": counters, "budget": budget, "blocks_per_wave": blocks_per_wave, "correct": ok, "first_call_s": first, "median_s": t,
            "fma_per_s": n ** 3 / t, "steps": int(r.stats["emulator__steps"])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["quick"], help="all, quick, or collection case names")
    ap.add_argument("--budgets", nargs="+", default=["default"], help="compile budgets: default, none, or a number")
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-gemm", action="store_true")
    ap.add_argument("--blocks-per-wave", type=int, nargs="+", default=[0],
                    help="wave sizes for the GEMM (0: the launch's default; -1: the whole grid in one wave)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/engine_<device>.json)")
    ap.add_argument("--no-concurrent-graphs", action="store_true",
                    help="on a GPU, leave XLA's CUDA graphs sequential (jaxsimt.enable_concurrent_gpu_graphs)")
    a = ap.parse_args(argv)
    # as the jaxsimt command does, before the first computation
    graphs = not a.no_concurrent_graphs and enable_concurrent_gpu_graphs()
    names = {"all": one_per_entry(), "quick": QUICK}.get(a.kernels[0], a.kernels) if len(a.kernels) == 1 else a.kernels
    budgets = [_budget(b) for b in a.budgets]
    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}:{dev.device_kind}", "cpus": os.cpu_count(), "python": platform.python_version(),
           "jax": jax.__version__, "concurrent_gpu_graphs": graphs, "default_budget": COMPILE_BUDGET,
           "compile": [], "gemm": []}
    path = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"engine_{dev.platform}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    print(f"engine on {dev.platform} ({dev.device_kind}), {os.cpu_count()} cores, default budget "
          f"{COMPILE_BUDGET}")
    if not a.no_compile:
        print(f"{'kernel':<32} {'budget':>6} {'instr':>6} {'interp':>6} {'compile s':>10} {'run s':>8} {'steps':>6}")
        for n in names:
            for b in budgets:
                r = compile_time(n, b, a.repeats)
                out["compile"].append(r)
                print(f"{n:<32} {str(b):>6} {r['instructions']:>6} {r['interpreted']:>6} {r['compile_s']:>10.2f} "
                      f"{r['run_s']:>8.3f} {r['steps']:>6}", flush=True)
                with open(path, "w") as f:
                    json.dump(out, f, indent=1)
    if not a.no_gemm:
        print(f"{'N':>6} {'counters':>8} {'budget':>6} {'wave':>6} {'ok':>4} {'first s':>8} {'median s':>9} {'FMA/s':>10} "
              f"{'steps':>6}")
        for n in a.sizes:
            for bpw in a.blocks_per_wave:
                bpw = None if bpw == 0 else (-(-n // 16)) ** 2 if bpw < 0 else bpw
                for counters in (True, False):
                    r = gemm_rate(n, a.repeats, counters, budgets[0], bpw)
                    out["gemm"].append(r)
                    print(f"{n:>6} {str(counters):>8} {str(r['budget']):>6} {str(bpw or 'auto'):>6} "
                          f"{str(r['correct']):>4} {r['first_call_s']:>8.2f} {r['median_s']:>9.3f} {r['fma_per_s']:>10.3g} "
                          f"{r['steps']:>6}", flush=True)
                with open(path, "w") as f:
                    json.dump(out, f, indent=1)
    print(f"written {path}")


if __name__ == "__main__":
    sys.exit(main())
