"""L1 hit rates of global loads: the timing model's two L1 models against the H200, on the suite corpus's first
launches at their timing sizes (the launches `bench_timing_suites.py` predicts) and the GEMM ladder.

For each launch: the H200's `l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum` over
`l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` (jaxsimt/data/h200/suites_cache/), the footprint estimate
(`trace.memory_fractions`: one block's distinct bytes spread over its sectors) and the tag model
(`jaxsimt.timing.l1tags`: the blocks of the busiest SM's queue through one SM's L1), each as the
sector-weighted hit rate of the launch's global loads. Prints a table, the mean absolute error of each model
in percentage points, and writes benchmarks/results/l1_hits_cpu.json.

    python benchmarks/bench_l1.py [--cases suite.case ...] [--raw FILE]

Each program runs in a process of its own (one long process runs out of memory for compiled machines); its
row is appended to `--raw` (JSON lines, default benchmarks/results/l1_hits_raw.jsonl), and programs already
there are skipped, so an interrupted run resumes.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from jaxsimt.arch import get_arch  # noqa: E402
from jaxsimt.kernels import suites as S  # noqa: E402
from jaxsimt.kernels.suites import harness as H  # noqa: E402
from jaxsimt.run import launch_timing  # noqa: E402
from jaxsimt.timing import replay, trace as tr  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(HERE), "jaxsimt", "data", "h200", "suites_cache")
SECTORS, HITS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum")


def h200_suites() -> dict:
    """{(suite, case): {metric: value}} of each case's first launch (suites_cache.csv)."""
    out: dict = {}
    with open(os.path.join(FIXTURE, "suites_cache.csv")) as f:
        for row in csv.DictReader(f):
            if row["launch"] == "0":
                per = out.setdefault((row["suite"], row["case"]), {"kernel": row["kernel"]})
                per[row["metric"]] = float(row["value"])
    return out


def model_rates(r, arch) -> dict:
    """The footprint and tag models' L1 hit rates of launch result `r` (one traced block, ctas=[0])."""
    prog = r.program
    loads = list(launch_timing.global_loads(prog))
    sectors = np.asarray([float(row.get("sectors", 0)) for row in r.per_instruction])
    n_ctas = int(np.prod(r.grid))
    per_block = tr.array_bytes(r) / max(n_ctas, 1) / arch.sector_size  # footprint and DRAM sectors per block
    hit_fp, _ = tr.memory_fractions(prog, tr.static_tables(prog)[0], sectors, per_block, per_block)
    load_sectors = sectors[loads].sum()
    R = max(int(r.stats["active_blocks_per_sm"]), 1)
    ctas = replay.traced_blocks(n_ctas, R, arch.num_sms)
    t0 = time.perf_counter()
    hits, misses = launch_timing.l1_hits(r, ctas, R, arch, r.stats)
    return {"footprint": float((hit_fp[loads] * sectors[loads]).sum() / load_sectors) if load_sectors else None,
            "tags": float(hits.sum() / max((hits + misses).sum(), 1)) if (hits + misses).sum() else None,
            "tags_s": round(time.perf_counter() - t0, 2), "traced_blocks": len(ctas), "blocks_per_sm": R}


def measure_one(name: str, raw: str) -> None:
    """Append program `name`'s row to the JSON-lines file `raw`."""
    suite, case = name.split(".", 1)
    m = h200_suites()[(suite, case)]
    try:
        r = H.first_launch(suite, case, S.module(suite).TIMING.get(case), ctas=[0], arch="h200")
        row = {"program": name, "kernel": m["kernel"], "h200": m[HITS] / m[SECTORS],
               **model_rates(r, get_arch("h200"))}
    except Exception as e:  # noqa: BLE001 - recorded; the other programs go on
        row = {"program": name, "kernel": m["kernel"], "error": repr(e)[:200]}
    with open(raw, "a") as f:
        f.write(json.dumps(row) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=None)
    ap.add_argument("--raw", default=os.path.join(HERE, "results", "l1_hits_raw.jsonl"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "l1_hits_cpu.json"))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        measure_one(a.one, a.raw)
        return
    hw = h200_suites()
    names = [f"{s}.{c}" for s, c in S.programs() if hw.get((s, c), {}).get(SECTORS)
             and (not a.cases or f"{s}.{c}" in a.cases)]
    for name in names:
        done = {}
        if os.path.exists(a.raw):
            with open(a.raw) as f:
                done = {d["program"]: d for d in map(json.loads, f)}
        if name not in done:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, "--raw", a.raw])
    with open(a.raw) as f:
        got = {d["program"]: d for d in map(json.loads, f)}
    rows = [got[n] for n in names if n in got]
    for row in rows:
        print(json.dumps(row), flush=True)
    ok = [r for r in rows if r.get("tags") is not None and r.get("footprint") is not None]
    summary = {k: round(100 * statistics.mean(abs(r[k] - r["h200"]) for r in ok), 1) if ok else None
               for k in ("footprint", "tags")}
    summary["launches"] = len(ok)
    summary.update({f"within_10pt_{k}": sum(abs(r[k] - r["h200"]) <= 0.10 for r in ok) for k in ("footprint", "tags")})
    print("| program | kernel | H200 | footprint | tags |\n|---|---|---:|---:|---:|")
    for r in ok:
        print(f"| {r['program']} | {r['kernel']} | {100 * r['h200']:.1f}% | {100 * r['footprint']:.1f}% | "
              f"{100 * r['tags']:.1f}% |")
    print("mean absolute error, percentage points:", summary)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"rows": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
