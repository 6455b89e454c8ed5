"""Ground truth of the suite corpus on a GPU: every case of jaxsimt/kernels/suites/ run from its committed PTX through
CuPy (the driver's ptxas compiles it), then under Nsight Compute for the counters jaxsimt names, then the
Rodinia loads outside J under compute-sanitizer. Needs numpy and cupy only (not jaxsimt):

    python3 jaxsimt/kernels/suites/run_gpu.py --out DIR [--suites a,b] [--skip ncu,sanitizer] [--deadline S]

DIR/suites.npz         outputs, keys "<suite>.<case>.<output>"
DIR/suites_runs.json   per case: launches (kernel, grid, block, smem), wall seconds, reference check, errors
DIR/suites_ncu.csv     suite, case, launch, kernel, metric, value (one row per profiled launch and metric)
DIR/suites_env.json    device, driver, runtime, cupy, ncu version, timings of each stage
DIR/sanitizer.txt      compute-sanitizer's report of `srad_v2_rodinia_loads`
DIR/sass/              ptxas -v report and cuobjdump -sass of each suite's PTX (the machine code ncu counts)

`--reparse DIR` rewrites DIR/suites_ncu.csv from the ncu logs (no GPU); `--replay SUITE` (used under ncu)
runs one suite's cases and nothing else; `--backend jaxsimt` runs the same
plumbing on the emulator (no GPU) to check the script.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import importlib.util
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # `suites` as a package, without jaxsimt

METRICS = (
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "smsp__sass_branch_targets.sum",
    "smsp__sass_branch_targets_threads_divergent.sum", "gpu__time_duration.sum",
)
# reported by ncu's LaunchStats and Occupancy sections (not requestable one by one)
SECTION_METRICS = ("launch__registers_per_thread", "launch__shared_mem_per_block_static",
                   "launch__shared_mem_per_block_dynamic", "launch__grid_size", "launch__block_size",
                   "sm__maximum_warps_per_active_cycle_pct")
SANITIZER_CASE = ("rodinia", "srad_v2_rodinia_loads")


def suites_pkg():
    return importlib.import_module("suites")


def launch_record(name, grid, block, smem=0) -> dict:
    """One launch's entry in a case's launch log: kernel, grid and block as lists, dynamic shared bytes."""
    return {"kernel": name, "grid": list(np.atleast_1d(grid).tolist()), "block": list(np.atleast_1d(block).tolist()),
            "smem": int(smem)}


class LoggedBackend:
    """A backend (`be`) that also records every launch's configuration in `log` (`launch_record`)."""

    def __init__(self, be):
        self.be = be
        self.log = []

    def __getattr__(self, name):
        return getattr(self.be, name)

    def launch(self, name, grid, block, args, smem=0):
        self.log.append(launch_record(name, grid, block, smem))
        self.be.launch(name, grid, block, args, smem=smem)


class CupyBackend(LoggedBackend):
    """The backend of jaxsimt/kernels/cuda/run_real_cuda.py, recording every launch's configuration."""

    def __init__(self, ptx_path):
        spec = importlib.util.spec_from_file_location("run_real_cuda",
                                                      os.path.join(ROOT, "kernels", "cuda", "run_real_cuda.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        super().__init__(mod.CupyBackend(ptx_path))


class EmulatorBackend(LoggedBackend):
    """jaxsimt's backend with the same launch log (a check of this script without a GPU)."""

    def __init__(self, ptx_path):
        from jaxsimt.kernels.real_cuda import JaxsimtBackend
        super().__init__(JaxsimtBackend(ptx_path))


def run_suite(suite, backend_cls, cases=None, deadline=None):
    """{case: record} and {"<suite>.<case>.<output>": array}; one failing case does not stop the others."""
    S = suites_pkg()
    mod = importlib.import_module(f"suites.{suite}")
    runs, arrays = {}, {}
    for case in cases or mod.CASES:
        if deadline and time.time() > deadline:
            runs[case] = {"error": "skipped: deadline"}
            continue
        be = backend_cls(os.path.join(HERE, mod.PTX))
        t0 = time.time()
        try:
            out, ref = mod.run(be, case)
            tol = mod.TOLERANCE.get(case, 0)
            rec = {"seconds": round(time.time() - t0, 4), "launches": be.log,
                   "reference": {k: bool(S.close(out[k], ref[k], tol)) for k in ref}}
            for k, v in out.items():
                arrays[f"{suite}.{case}.{k}"] = np.asarray(v)
        except Exception as e:  # noqa: BLE001 - recorded, the rest continue
            rec = {"seconds": round(time.time() - t0, 4), "launches": be.log, "error": repr(e)[:2000]}
        runs[case] = rec
        print(suite, case, "error" if "error" in rec else "ok", rec.get("reference", rec.get("error")), flush=True)
    return runs, arrays


def parse_ncu(csv_text, metrics=METRICS + SECTION_METRICS):
    """ncu --csv --page raw --print-units base: [(id, kernel name, {metric: value})] in launch order, for the
    columns named in `metrics`."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    start = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if start is None:
        return []
    header, data = rows[start], [r for r in rows[start + 2:] if len(r) == len(rows[start])]
    col = {h: i for i, h in enumerate(header)}
    out = []
    for r in sorted(data, key=lambda r: int(r[col["ID"]]) if r[col["ID"]].isdigit() else 0):
        vals = {}
        for m in metrics:
            if m in col:
                v = r[col[m]].replace(",", "")
                try:
                    f = float(v)
                    vals[m] = int(f) if f.is_integer() else f
                except ValueError:
                    vals[m] = v
        out.append((int(r[col["ID"]]), r[col.get("Kernel Name", 0)], vals))
    return out


def ncu_suite(suite, ncu, runs, work, timeout, metrics=METRICS, sections=("LaunchStats", "Occupancy"),
              wanted=METRICS + SECTION_METRICS, target=None, options=(), limit=None, log_name=None):
    """Profile one suite's cases (one ncu process) and match its launches to the cases' launch logs.

    metrics and sections: what ncu collects; wanted: the columns kept; target: the command ncu runs (this
    script's --replay of the suite by default); options: more ncu options; limit: only the first `limit`
    launches of each case are profiled (the target starts and stops the profiler around them); log_name:
    the log file in `work`."""
    log = os.path.join(work, log_name or f"{suite}.ncu-log.txt")
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--replay-mode", "kernel"]
    for section in sections:
        cmd += ["--section", section]
    cmd += ["--metrics", ",".join(metrics), "--csv", "--page", "raw", "--print-units", "base", "--log-file", log,
            *options, *(target or [sys.executable, os.path.abspath(__file__), "--replay", suite])]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout) or "", "timeout"
    prof = parse_ncu(text, wanted)
    if not prof and os.path.exists(log):  # with --log-file, ncu writes its results there too
        with open(log, errors="replace") as f:
            prof = parse_ncu(f.read(), wanted)
    rows, info = match_launches(suite, prof, runs, limit)
    info.update(rc=rc, seconds=round(time.time() - t0, 1))
    return rows, info


def match_launches(suite, prof, runs, limit=None):
    """ncu's profiled launches matched in order to the cases' launch logs (the first `limit` launches of each
    case where only those were profiled): rows for suites_ncu.csv."""
    order = [(case, i, l["kernel"]) for case, rec in runs.items()
             for i, l in enumerate(rec.get("launches", [])[:limit])]
    rows, mismatched = [], 0
    for k, (_, kname, vals) in enumerate(prof):
        if k >= len(order):
            break
        case, i, kernel = order[k]
        if kname.split("(")[0] != kernel:
            mismatched += 1
        for m, v in vals.items():
            rows.append([suite, case, i, kernel, m, v])
    return rows, {"profiled": len(prof), "launches": len(order), "name_mismatches": mismatched}


def reparse(folder):
    """Rewrite DIR/suites_ncu.csv from the ncu logs and DIR/suites_runs.json of a collection (no GPU)."""
    with open(os.path.join(folder, "suites_runs.json")) as f:
        all_runs = json.load(f)
    rows, info = [], {}
    for s in all_runs:
        log = os.path.join(folder, f"{s}.ncu-log.txt")
        if not os.path.exists(log):
            continue
        with open(log, errors="replace") as f:
            r, info[s] = match_launches(s, parse_ncu(f.read()), all_runs[s])
        rows += r
    with open(os.path.join(folder, "suites_ncu.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["suite", "case", "launch", "kernel", "metric", "value"])
        w.writerows(rows)
    return info


def device_env(gpu: bool) -> dict:
    """The device (name, compute capability), driver, runtime and cupy versions where `gpu`, and numpy's,
    Python's and the date."""
    env = {}
    if gpu:
        import cupy as cp
        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        env.update(device=name.decode() if isinstance(name, bytes) else str(name),
                   cc=f"{props['major']}.{props['minor']}", driver=cp.cuda.runtime.driverGetVersion(),
                   runtime=cp.cuda.runtime.runtimeGetVersion(), cupy=cp.__version__)
    env.update(numpy=np.__version__, python=platform.python_version(),
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    return env


def find_ncu():
    """The path of Nsight Compute's ncu (None where it is not installed)."""
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.path.exists(p)), None)


def ncu_version(ncu) -> str:
    """The last line of `ncu --version` (the error, where that fails)."""
    try:
        return subprocess.run([ncu, "--version"], capture_output=True, text=True,
                              timeout=60).stdout.strip().splitlines()[-1]
    except Exception as e:  # noqa: BLE001 - recorded in its place
        return repr(e)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--suites", default=None)
    ap.add_argument("--skip", default="")
    ap.add_argument("--replay", default=None)
    ap.add_argument("--backend", default="cupy", choices=("cupy", "jaxsimt"))
    ap.add_argument("--cases", default=None, help="comma-separated case names (with --backend jaxsimt checks)")
    ap.add_argument("--deadline", type=float, default=400.0, help="seconds from start for the whole collection")
    ap.add_argument("--reparse", metavar="DIR", help="rewrite DIR/suites_ncu.csv from DIR's ncu logs and exit")
    a = ap.parse_args(argv)
    if a.reparse:
        print(json.dumps(reparse(a.reparse)))
        return 0
    backend_cls = CupyBackend if a.backend == "cupy" else EmulatorBackend
    S = suites_pkg()
    if a.replay:  # under ncu: the launches only
        mod = importlib.import_module(f"suites.{a.replay}")
        for case in mod.CASES:
            try:
                mod.run(backend_cls(os.path.join(HERE, mod.PTX)), case)
            except Exception as e:  # noqa: BLE001
                print("replay", case, repr(e), file=sys.stderr)
        return 0
    t_start = time.time()
    deadline = t_start + a.deadline
    os.makedirs(a.out, exist_ok=True)
    skip = set(a.skip.split(",")) if a.skip else set()
    suites = a.suites.split(",") if a.suites else list(S.SUITES)
    cases = a.cases.split(",") if a.cases else None
    env = {"stages": {}}
    all_runs, arrays = {}, {}
    t0 = time.time()
    for s in suites:
        mod = importlib.import_module(f"suites.{s}")
        sel = [c for c in mod.CASES if c in cases] if cases else None
        runs, arr = run_suite(s, backend_cls, sel, deadline - 150 if "ncu" not in skip else deadline - 20)
        all_runs[s] = runs
        arrays.update(arr)
    env["stages"]["results_s"] = round(time.time() - t0, 1)
    np.savez_compressed(os.path.join(a.out, "suites.npz"), **arrays)
    with open(os.path.join(a.out, "suites_runs.json"), "w") as f:
        json.dump(all_runs, f, indent=0)
    env.update(device_env(a.backend == "cupy"))
    ncu = find_ncu()
    if "ncu" not in skip and ncu and a.backend == "cupy":
        env["ncu_version"] = ncu_version(ncu)
        rows, env["ncu"] = [], {}
        # fewest launches first: a deadline cuts the largest suite, not several small ones
        for s in sorted(suites, key=lambda s: sum(len(r.get("launches", [])) for r in all_runs[s].values())):
            left = deadline - 40 - time.time()
            if left < 20:
                env["ncu"][s] = "skipped: deadline"
                continue
            r, info = ncu_suite(s, ncu, all_runs[s], a.out, min(left, 150))
            rows += r
            env["ncu"][s] = info
            print("ncu", s, info, flush=True)
            with open(os.path.join(a.out, "suites_ncu.csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["suite", "case", "launch", "kernel", "metric", "value"])
                w.writerows(rows)
    ptxas, cuobjdump = shutil.which("ptxas"), shutil.which("cuobjdump")
    if "sass" not in skip and ptxas and cuobjdump and a.backend == "cupy":
        os.makedirs(os.path.join(a.out, "sass"), exist_ok=True)
        env["sass"] = {}
        for s in suites:
            mod = importlib.import_module(f"suites.{s}")
            cubin = os.path.join(a.out, "sass", f"{s}.cubin")
            try:
                p = subprocess.run([ptxas, "-arch=sm_90", "-O3", "-v", os.path.join(HERE, mod.PTX), "-o", cubin],
                                   capture_output=True, text=True, timeout=120)
                with open(os.path.join(a.out, "sass", f"{s}.ptxas.txt"), "w") as f:
                    f.write(p.stdout + p.stderr)
                q = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, timeout=120)
                with open(os.path.join(a.out, "sass", f"{s}.sass"), "w") as f:
                    f.write(q.stdout)
                os.remove(cubin)
                env["sass"][s] = "ok"
            except Exception as e:  # noqa: BLE001
                env["sass"][s] = repr(e)
    san = shutil.which("compute-sanitizer") or ("/usr/local/cuda/bin/compute-sanitizer"
                                                if os.path.exists("/usr/local/cuda/bin/compute-sanitizer") else None)
    if "sanitizer" not in skip and san and a.backend == "cupy" and time.time() < deadline - 30:
        # no memory pool: every buffer its own cudaMalloc, so reads outside a buffer are outside any allocation
        code = ("import sys; sys.argv=['x']; sys.path.insert(0, %r); import cupy; cupy.cuda.set_allocator(None); "
                "import run_gpu as r; "
                "r.run_suite(%r, r.CupyBackend, [%r])" % (HERE, SANITIZER_CASE[0], SANITIZER_CASE[1]))
        try:
            p = subprocess.run([san, "--tool", "memcheck", "--print-limit", "8", sys.executable, "-c", code],
                               capture_output=True, text=True, timeout=max(20, deadline - 20 - time.time()))
            text = p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            text = "timeout"
        with open(os.path.join(a.out, "sanitizer.txt"), "w") as f:
            f.write(text[-20000:])
    env["stages"]["total_s"] = round(time.time() - t_start, 1)
    with open(os.path.join(a.out, "suites_env.json"), "w") as f:
        json.dump(env, f, indent=1)
    print(json.dumps(env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
