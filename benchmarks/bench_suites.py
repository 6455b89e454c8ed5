"""The suite corpus (jaxsimt/kernels/suites/) on jaxsimt: every case's host driver run twice in one process (first
call, compiles included; then steady state), its outputs checked against numpy and, with the H200 fixtures
(jaxsimt/data/h200/suites/), bit for bit against the H200, its counters per kernel against Nsight Compute.

    python benchmarks/bench_suites.py run [--cases suite.case ...] [--raw DIR]   # emulate, save raw results
    python benchmarks/bench_suites.py report [--raw DIR]                         # compare, table + JSON

`run` appends to DIR/raw.jsonl (one line per case: timings, per-launch stats) and DIR/<suite>.<case>.npz
(outputs), skipping cases already there, so it can be resumed; one process per case gives every case a
fresh first call (and one long process runs out of memory for compiled machines):
    for c in $(python -c "from jaxsimt.kernels import suites as S; print(*[f'{s}.{c}' for s, c in S.programs()])");
    do python benchmarks/bench_suites.py run --cases $c; done `report` writes
benchmarks/results/suites_cpu.json and prints the markdown table of docs/suites.md. Timings are wall
seconds on whatever machine runs it (say which, and how loaded, when you quote them).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from jaxsimt.kernels import suites as S  # noqa: E402
from jaxsimt.kernels.suites import harness as H  # noqa: E402

DEFAULT_RAW = os.path.join(ROOT, "benchmarks", "results", "suites_raw")


def _done(raw):
    path = os.path.join(raw, "raw.jsonl")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(d["suite"], d["case"]): d for d in map(json.loads, f)}


def _kernel_seconds(first, steady) -> dict:
    """{kernel: [seconds of its first launch in the first run, median seconds of its launches in the
    second run]}: the first call (compilation included) and the steady state of each kernel."""
    out: dict = {}
    for (k, _), t in zip(first.launches, first.launch_seconds):
        out.setdefault(k, [round(t, 3), []])
    for (k, _), t in zip(steady.launches, steady.launch_seconds):
        out[k][1].append(t)
    return {k: [v[0], round(statistics.median(v[1]), 4) if v[1] else None] for k, v in out.items()}


def cmd_run(a):
    os.makedirs(a.raw, exist_ok=True)
    done = _done(a.raw)
    todo = [tuple(x.split(".", 1)) for x in a.cases] if a.cases else S.programs()
    for suite, case in todo:
        if (suite, case) in done:
            continue
        rec = {"suite": suite, "case": case}
        try:
            first = H.run(suite, case)
            steady = H.run(suite, case)
            rec.update(first_s=round(first.seconds, 3), steady_s=round(steady.seconds, 3),
                       reference=first.reference_ok,
                       same_twice=all(np.array_equal(first.outputs[k], steady.outputs[k]) for k in first.outputs),
                       launches=[[k, {m: float(v) for m, v in st.items() if isinstance(v, (int, float, np.number))}]
                                 for k, st in first.launches],
                       kernel_s=_kernel_seconds(first, steady))
            np.savez_compressed(os.path.join(a.raw, f"{suite}.{case}.npz"), **first.outputs)
        except Exception as e:  # noqa: BLE001 - recorded: the stage this case reached
            rec.update(error=f"{type(e).__name__}: {e}"[:1500], traceback=traceback.format_exc()[-1500:])
        with open(os.path.join(a.raw, "raw.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps({k: v for k, v in rec.items() if k not in ("launches", "traceback")}), flush=True)


def _stage(err: str) -> str:
    """The last stage a failing case reached, from its error."""
    if "PtxSyntaxError" in err:
        return "parse"
    if "PtxUnsupportedError" in err or "PtxInvalidError" in err:
        return "lower"
    return "run"


def report(raw=DEFAULT_RAW) -> dict:
    """Per case: stages reached, timings, output and counter agreement with the H200."""
    done = _done(raw)
    cases, pairs = [], {"exact": [0, 0], "info": [0, 0]}
    kernels_total = 0
    for suite, case in S.programs():
        d = done.get((suite, case))
        row = {"suite": suite, "case": case}
        if d is None:
            row["stage"] = "not run"
            cases.append(row)
            continue
        if "error" in d:
            row.update(stage=_stage(d["error"]), error=d["error"].splitlines()[0][:200])
            cases.append(row)
            continue
        with np.load(os.path.join(raw, f"{suite}.{case}.npz")) as f:
            outs = {k: f[k] for k in f.files}
        regs = H.registers(suite)
        # registers are what the run passes as regs= (H.registers): recorded runs made before the
        # architecture's minimum was applied get it here
        launches = [(k, dict(st, **{H.REGISTERS: regs.get(k, st.get(H.REGISTERS))})) for k, st in d["launches"]]
        r = H.CaseRun(suite, case, outs, {}, launches, d["first_s"])
        agree = H.compare_outputs(r)
        equal = bool(agree) and all(ok == n for ok, n in agree.values())
        rows = H.compare_counters(r)
        exact = [x for x in rows if x.exact and x.hardware is not None]
        info = [x for x in rows if not x.exact and x.hardware is not None]
        pairs["exact"][0] += sum(x.ok for x in exact)
        pairs["exact"][1] += len(exact)
        pairs["info"][0] += sum(x.ok for x in info)
        pairs["info"][1] += len(info)
        kern = sorted({x.kernel for x in rows})
        kernels_total += len(kern)
        row.update(stage="counters" if equal and exact and all(x.ok for x in exact) else
                   "result" if equal else "run",
                   kernels=kern, launches=len(d["launches"]), first_s=d["first_s"], steady_s=d["steady_s"],
                   kernel_s=d.get("kernel_s", {}),
                   numpy_ok=all(d["reference"].values()), h200_equal=equal,
                   outputs_differ={k: v for k, v in agree.items() if v[0] != v[1]},
                   counters_exact=f"{sum(x.ok for x in exact)}/{len(exact)}",
                   counters_info=f"{sum(x.ok for x in info)}/{len(info)}",
                   differ=[[x.kernel, x.metric, x.hardware, x.emulator] for x in rows if x.hardware is not None
                           and not x.ok])
        cases.append(row)
    firsts = [c["first_s"] for c in cases if "first_s" in c]
    return {"machine": f"{platform.node()} {platform.machine()} ({os.cpu_count()} cores)", "cases": cases,
            "kernels": kernels_total, "pairs": pairs,
            "first_s_median": round(statistics.median(firsts), 2) if firsts else None,
            "first_s_max": max(firsts) if firsts else None}


def markdown(rep: dict) -> str:
    lines = ["| suite | program | kernels | launches | stages reached | = H200 result | exact counters = H200 | "
             "instr./branch counters = H200 | first call s | steady s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in rep["cases"]:
        if "first_s" not in c:
            lines.append(f"| {c['suite']} | {c['case']} | | | {c['stage']} ({c.get('error', '')}) | | | | | |")
            continue
        stages = {"counters": "parse, lower, run, result, counters", "result": "parse, lower, run, result",
                  "run": "parse, lower, run"}[c["stage"]]
        lines.append(f"| {c['suite']} | {c['case']} | {len(c['kernels'])} | {c['launches']} | {stages} | "
                     f"{'yes' if c['h200_equal'] else 'no'} | {c['counters_exact']} | {c['counters_info']} | "
                     f"{c['first_s']:.1f} | {c['steady_s']:.2f} |")
    return "\n".join(lines)


def markdown_kernels(rep: dict) -> str:
    """Per kernel: seconds of its first launch in a fresh process (compilation included) and the median of
    its launches when the program runs again in the same process."""
    lines = ["| suite | program | kernel | first launch s | steady s |", "|---|---|---|---|---|"]
    for c in rep["cases"]:
        for k, (first, steady) in c.get("kernel_s", {}).items():
            lines.append(f"| {c['suite']} | {c['case']} | {k} | {first:.1f} | {steady:.3f} |")
    return "\n".join(lines)


def cmd_report(a):
    rep = report(a.raw)
    if a.machine:
        rep["machine"] = a.machine
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rep, f, indent=1)
    print(markdown(rep))
    if a.kernels:
        print()
        print(markdown_kernels(rep))
    e, i = rep["pairs"]["exact"], rep["pairs"]["info"]
    print(f"\nkernels {rep['kernels']}; exact counter pairs equal {e[0]}/{e[1]}; instruction/branch pairs equal "
          f"{i[0]}/{i[1]}; first call median {rep['first_s_median']} s, max {rep['first_s_max']} s")


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cases", nargs="*", default=None, help="suite.case names (default: all)")
    r.add_argument("--raw", default=DEFAULT_RAW)
    p = sub.add_parser("report")
    p.add_argument("--raw", default=DEFAULT_RAW)
    p.add_argument("--kernels", action="store_true", help="also the per-kernel timing table")
    p.add_argument("--machine", default=None, help="where `run` ran (default: this machine's name and cores)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "suites_cpu.json"))
    a = ap.parse_args(argv)
    (cmd_run if a.cmd == "run" else cmd_report)(a)


if __name__ == "__main__":
    main()
