"""What a kernel's first launch pays: for programs of the real-CUDA corpus (jaxsimt/kernels/suites/), every wave
the machine compiles, split into Python tracing, lowering to StableHLO and XLA compilation, with the optimised
HLO's instructions by the step phase that made them (the machine's named scopes: schedule, execute, memory,
counters, terminators (the stacks), barriers, tally (the per-block instruction counts); "step, other" is the rest
of the loop body; "outside" is before and after the loop). Prints a table and writes JSON.

    python benchmarks/bench_compile.py [--cases cuda_samples.reduction rodinia.srad_v2 ...] [--out FILE]

Each case runs in this process after the previous one (JAX's caches warm), so compare cases run the same way;
the machine's speed varies from run to run: alternate versions when comparing them (docs/performance.md).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import sys
import time

import jax

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from jaxsimt.kernels.suites import harness as H  # noqa: E402
from jaxsimt.machine import core  # noqa: E402

PHASES = ("schedule", "execute", "memory", "counters", "terminators", "barriers", "tally")
DEFAULT_CASES = ("cuda_samples.vectorAdd", "cuda_samples.transpose", "cuda_samples.reduction", "rodinia.srad_v2",
                 "polybench.correlation")


def phase_of(op_name: str) -> str:
    """The step phase an HLO instruction's op_name names (the innermost named scope), else where it sits."""
    parts = op_name.split("/")
    inner = [p for p in parts if p in PHASES]
    if inner:
        return inner[-1]
    return "step, other" if "while" in parts and "body" in parts else "outside"


def hlo_phases(hlo_text: str) -> collections.Counter:
    """Instructions of an optimised HLO module (fused computations included) by phase."""
    out: collections.Counter = collections.Counter()
    for line in hlo_text.splitlines():
        m = re.search(r'op_name="([^"]*)"', line)
        if m and " = " in line:
            out[phase_of(m.group(1))] += 1
    return out


class Recorder:
    """Wraps `Machine.run_wave` so that each new executable's trace, lowering and compilation are timed apart
    and its HLO counted; the wave then runs as usual (on the machine's own executable)."""

    def __init__(self):
        self.waves: list = []
        self._orig = core.Machine.run_wave

    def __enter__(self):
        rec = self

        def run_wave(m, gmem, counters, wave, dyn, zero):
            key = m.executable_key(gmem, counters, dyn)
            if key not in m._executables:
                with core._no_gc():  # as the machine traces
                    t0 = time.perf_counter()
                    traced = m._jitted.trace(gmem, counters, wave, dyn, zero)
                    t1 = time.perf_counter()
                    lowered = traced.lower()
                    t2 = time.perf_counter()
                compiled = lowered.compile(compiler_options=core.compiler_options(m.options.optimize))
                t3 = time.perf_counter()
                phases = hlo_phases(compiled.as_text())
                rec.waves.append({"kernel": m.program.name, "trace_s": t1 - t0, "lower_s": t2 - t1,
                                  "compile_s": t3 - t2, "instructions": sum(phases.values()),
                                  "phases": dict(phases)})
                m._executables[key] = compiled
                m.compiles += 1
            return rec._orig(m, gmem, counters, wave, dyn, zero)

        core.Machine.run_wave = run_wave
        return self

    def __exit__(self, *exc):
        core.Machine.run_wave = self._orig


def measure(case: str) -> dict:
    suite, name = case.split(".", 1)
    with Recorder() as rec:
        t0 = time.perf_counter()
        H.run(suite, name)
        total = time.perf_counter() - t0
    phases: collections.Counter = collections.Counter()
    for w in rec.waves:
        phases.update(w["phases"])
    return {"case": case, "first_call_s": round(total, 3), "waves": len(rec.waves),
            "trace_s": round(sum(w["trace_s"] for w in rec.waves), 3),
            "lower_s": round(sum(w["lower_s"] for w in rec.waves), 3),
            "compile_s": round(sum(w["compile_s"] for w in rec.waves), 3),
            "instructions": sum(phases.values()), "phases": dict(phases), "per_wave": rec.waves}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES))
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "compile_cpu.json"))
    a = ap.parse_args(argv)
    rows = [measure(c) for c in a.cases]
    cols = PHASES + ("step, other", "outside")
    print(f"{'case':32s} {'waves':>5s} {'first s':>8s} {'trace s':>8s} {'lower s':>8s} {'XLA s':>7s} {'instr':>7s}  "
          + " ".join(f"{c:>11s}" for c in cols))
    for r in rows:
        print(f"{r['case']:32s} {r['waves']:5d} {r['first_call_s']:8.2f} {r['trace_s']:8.2f} {r['lower_s']:8.2f} "
              f"{r['compile_s']:7.2f} {r['instructions']:7d}  "
              + " ".join(f"{r['phases'].get(c, 0):11d}" for c in cols))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"machine": f"{platform.node()} ({os.cpu_count()} cores)", "jax": jax.__version__, "rows": rows},
                  f, indent=1)
    print(f"written {a.out}")


if __name__ == "__main__":
    main()
