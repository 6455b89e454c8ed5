"""The cycle-level timing model on real CUDA: the first launch of every program of the suite corpus
(jaxsimt/kernels/suites/) at its timing size, replayed with each set of timing parameters and compared with
the H200's Nsight Compute time of the same launch (jaxsimt/data/h200/suites_timing/).

    python benchmarks/bench_timing_suites.py [--cases suite.case ...] [--cache DIR] [--out PATH] [--l1 tags|footprint]

Each program is traced in a process of its own (`calibrate.suite_sample`: one block for the launch's
stats, then the blocks the replay needs; the whole grid never runs), its sample pickled into `--cache`
(reused when there, so an interrupted run resumes). The samples are then replayed with three parameter
sets: the committed fit (`Arch.timing_fitted`, fitted to the GEMM ladder and micro-kernels only), the
starting values (`Arch.timing`), and the H200's micro-benchmark measurements ("microbench": `calibrate.measured_start`).
The corpus's split (`calibrate.SUITES_TRAIN` / `SUITES_HELD_OUT`) is by whole suite; no committed
parameter was fitted to any of it yet. Prints a table per program and MAPE per split and suite, and
writes JSON (default benchmarks/results/timing_suites_cpu.json).
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from jaxsimt.apps import calibrate  # noqa: E402
from jaxsimt.kernels import suites as S  # noqa: E402
from jaxsimt.timing import replay as timing  # noqa: E402


def param_sets(arch: str = "h200") -> dict:
    return {"fitted": timing.params_of(arch), "starting": timing.starting_params(arch),
            "microbench": calibrate.measured_start(arch)[0]}


def _trace_one(name: str, cache: str, l1: str) -> None:
    """Trace one program into cache/<name>.pkl (or cache/<name>.err with why it failed)."""
    s, c = name.split(".", 1)
    t0 = time.perf_counter()
    try:
        sample = calibrate.suite_sample(s, c, l1=l1)
    except Exception as e:  # noqa: BLE001 - recorded; the other programs go on
        with open(os.path.join(cache, f"{name}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}"[:2000])
        raise
    with open(os.path.join(cache, f"{name}.pkl"), "wb") as f:
        pickle.dump({"sample": sample, "seconds": time.perf_counter() - t0}, f)


def load(names, cache: str, l1: str = "tags") -> tuple:
    """({name: (Sample, trace seconds)}, {name: error}), tracing what the cache lacks, one process each."""
    got, failed = {}, {}
    for name in names:
        pkl, err = (os.path.join(cache, f"{name}.{x}") for x in ("pkl", "err"))
        if not os.path.exists(pkl) and not os.path.exists(err):
            subprocess.run([sys.executable, os.path.abspath(__file__), "--trace-one", name, "--cache", cache,
                            "--l1", l1],
                           capture_output=True, text=True)
        if os.path.exists(pkl):
            with open(pkl, "rb") as f:
                d = pickle.load(f)
            got[name] = (d["sample"], d["seconds"])
        elif os.path.exists(err):
            with open(err) as f:
                failed[name] = f.read()
        else:
            failed[name] = "no sample written"
        print(f"{name}: " + (f"traced in {got[name][1]:.1f} s" if name in got else failed[name]), file=sys.stderr,
              flush=True)
    return got, failed


def _mape(v) -> "float | None":
    return 100.0 * float(np.mean(np.abs(v))) if len(v) else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", help="suite.case names (default: every program)")
    ap.add_argument("--cache", default="", help="folder of traced samples (default: a temporary one)")
    ap.add_argument("--out", help="JSON path (default benchmarks/results/timing_suites_cpu.json)")
    ap.add_argument("--l1", default="tags", choices=("tags", "footprint"),
                    help="where L1 hits come from (LaunchOptions.l1; a cache folder holds one model's samples)")
    ap.add_argument("--trace-one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.trace_one:
        _trace_one(a.trace_one, a.cache, a.l1)
        return 0
    cache = a.cache or tempfile.mkdtemp(prefix="timing_suites_")
    os.makedirs(cache, exist_ok=True)
    names = a.cases or [f"{s}.{c}" for s, c in S.programs()]
    got, failed = load(names, cache, a.l1)
    samples = [got[n][0] for n in names if n in got]
    sets = param_sets()
    preds = {k: calibrate.evaluate(samples, p) for k, p in sets.items()}
    rows = []
    for i, smp in enumerate(samples):
        row = {"name": smp.name, "split": smp.split, "measured_us": smp.ms * 1e3, "measured_cycles": smp.cycles,
               "trace_s": round(got[smp.name][1], 2)}
        for k in sets:
            r = preds[k][i]
            row[f"{k}_us"], row[f"{k}_cycles"], row[f"{k}_error"] = (r["predicted_ms"] * 1e3, r["predicted_cycles"],
                                                                       r["ms_error"])
        rows.append(row)
    print("| program | split | H200 us | " + " | ".join(f"{k} us | error" for k in sets) + " |")
    print("|---|---|---:|" + "---:|---:|" * len(sets))
    for r in rows:
        print(f"| {r['name']} | {r['split']} | {r['measured_us']:.1f} | "
              + " | ".join(f"{r[k + '_us']:.1f} | {100 * r[k + '_error']:+.1f}%" for k in sets) + " |")
    for n, e in failed.items():
        print(f"| {n} | failed: {e[:80]} |")
    summary = {}
    groups = {"all": rows, "train": [r for r in rows if r["split"] == "train"],
              "held_out": [r for r in rows if r["split"] == "held_out"]}
    groups.update({s: [r for r in rows if r["name"].split(".")[0] == s] for s in S.SUITES})
    print(f"\n{'programs':<14} {'n':>3} " + " ".join(f"{'MAPE ' + k:>15}" for k in sets))
    for g, rs in groups.items():
        summary[g] = {"n": len(rs), **{k: _mape([r[k + "_error"] for r in rs]) for k in sets},
                      **{f"{k}_within_20pct": sum(abs(r[k + "_error"]) <= 0.2 for r in rs) for k in sets}}
        print(f"{g:<14} {len(rs):>3} " + " ".join(f"{summary[g][k] or float('nan'):>14.1f}%" for k in sets))
    path = a.out or os.path.join(HERE, "results", "timing_suites_cpu.json")
    with open(path, "w") as f:
        json.dump({"platform": platform.platform(), "jax": jax.__version__, "l1": a.l1, "summary": summary,
                   "rows": rows,
                   "failed": failed, "params": {k: {p: float(v) for p, v in ps.items()} for k, ps in sets.items()}},
                  f, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
