"""compute-sanitizer's verdicts on the sanitizer corpus, on a GPU: every CUDA case of
jaxsimt/kernels/sanitizer/cases.py built with nvcc -lineinfo, launched by the host driver jaxsimt/kernels/sanitizer/sanhost.cu
as the case says (buffers cudaMalloc'd in parameter order, `case.uninit` ones never written), once without
a tool and once under each compute-sanitizer tool. Needs python3, numpy, nvcc and compute-sanitizer (not
jaxsimt):

    python3 jaxsimt/kernels/sanitizer/collect_h200.py --out DIR [--cases a,b] [--runs plain,memcheck,...] [--jobs N]
    python3 jaxsimt/kernels/sanitizer/collect_h200.py --out DIR --probe      (versions, tools' help, two cases)
    python3 jaxsimt/kernels/sanitizer/collect_h200.py --reparse DIR          (rewrite DIR/verdicts.json from its logs)
    python3 jaxsimt/kernels/sanitizer/collect_h200.py --export DIR DEST      (the committed fixture, from DIR)

DIR/verdicts.json   {"env": ..., "runs": {name: argv}, "cases": {case: {run: verdict}}}; a verdict holds
                    `reported`, `errors` (the tool's summary count), `records` (each finding: what it said,
                    source line, thread, block, address and the argument and byte offset it falls in, race
                    accesses), `exit`, `timed_out`; the plain run holds `launch`/`sync` codes and, for
                    clean cases, `reference_ok`
DIR/logs.tar.gz     logs/CASE.RUN.txt: the text each run printed (backtraces off)
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ("memcheck", "racecheck", "initcheck", "synccheck", "clean")
NVCC_FLAGS = ["-cubin", "-arch=sm_90", "-O3", "-lineinfo"]
COMMON = ["--print-limit", "32", "--show-backtrace", "no"]
# Each run: the tool's options. An option the installed compute-sanitizer does not list in its --help is
# dropped (the verdict records the argv that ran).
RUNS = {
    "plain": None,
    "memcheck": ["--tool", "memcheck"],
    "memcheck_padding": ["--tool", "memcheck", "--padding", "256"],
    "racecheck": ["--tool", "racecheck", "--racecheck-report", "all", "--racecheck-detect-level", "info"],
    "racecheck_default": ["--tool", "racecheck"],  # what a first try shows: race analysis, warnings and errors
    "initcheck": ["--tool", "initcheck"],
    "synccheck": ["--tool", "synccheck"],
}
TIMEOUT = 60  # seconds per run: a planted bug may hang its block on the hardware
PROBE_CASES = ("mc_store_past_end", "rc_raw_between_warps")


def load_cases():
    spec = importlib.util.spec_from_file_location("sanitizer_cases", os.path.join(HERE, "cases.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def sh(cmd, timeout=120, **kw):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        return p.returncode, p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, repr(e)


def environment() -> dict:
    env = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "python": sys.version.split()[0]}
    for key, cmd in (("nvidia_smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                     "--format=csv,noheader"]),
                     ("nvcc", ["nvcc", "--version"]), ("compute_sanitizer", ["compute-sanitizer", "--version"])):
        env[key] = sh(cmd)[1].strip()
    return env


def tool_help() -> dict:
    out = {"general": sh(["compute-sanitizer", "--help"])[1]}
    for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
        out[tool] = sh(["compute-sanitizer", "--tool", tool, "--help"])[1]
    return out


def _known(opts, known: str) -> list:
    """`opts` (options, each with its value if it has one) without those `known` (the help text) lacks."""
    kept, i = [], 0
    while i < len(opts):
        has_value = i + 1 < len(opts) and not opts[i + 1].startswith("--")
        if opts[i] == "--tool" or opts[i] in known:
            kept += opts[i:i + 1 + has_value]
        i += 1 + has_value
    return kept


def usable_runs(helptext: dict, names) -> dict:
    """{run: argv prefix}: RUNS restricted to `names`, without options the tools' help does not list."""
    known = "\n".join(helptext.values())
    out = {}
    for name in names:
        if RUNS[name] is None:
            out[name] = None
            continue
        kept = _known(RUNS[name], known)
        if name.endswith("_padding") and "--padding" not in kept:
            continue  # that run would repeat plain memcheck
        out[name] = ["compute-sanitizer"] + kept + _known(COMMON, known)
    return out


def build(work: str) -> dict:
    """nvcc each source to a cubin and the host driver; {target: (exit code, output)}."""
    os.makedirs(work, exist_ok=True)
    res = {}
    for name in SOURCES:
        res[name] = sh(["nvcc"] + NVCC_FLAGS + ["-o", os.path.join(work, name + ".cubin"),
                                                 os.path.join(HERE, name + ".cu")], timeout=300)
    res["sanhost"] = sh(["nvcc", "-O2", "-o", os.path.join(work, "sanhost"), os.path.join(HERE, "sanhost.cu")],
                        timeout=300)
    return res


def write_spec(case, work: str, run: str) -> tuple:
    """The spec file of `case` for `run` and its input files under `work` (where the cubins are); (spec path,
    args, {param index: output path})."""
    d = os.path.join(work, run, case.name)
    os.makedirs(d, exist_ok=True)
    args = case.args()
    lines = [f"module {os.path.join(work, case.source[:-3] + '.cubin')}", f"kernel {case.entry}",
             "grid %d %d %d" % case.grid, "block %d %d %d" % case.block]
    outs = {}
    for k, a in enumerate(args):
        a = np.asarray(a)
        if a.ndim == 0:
            lines.append(f"scalar {a.nbytes} {a.tobytes().hex()}")
            continue
        init = "uninit"
        if k not in case.uninit:
            init = os.path.join(d, f"in{k}.bin")
            a.tofile(init)
        outs[k] = os.path.join(d, f"out{k}.bin")
        lines.append(f"buf {a.nbytes} {init} {outs[k]}")
    spec = os.path.join(d, "spec.txt")
    with open(spec, "w") as f:
        f.write("\n".join(lines) + "\n")
    return spec, args, outs


# ---- parsing compute-sanitizer's text --------------------------------------------------------------------

_PREFIX = re.compile(r"^=+ ?(.*)$")
_LOC = re.compile(r"at (?:0x[0-9a-f]+ in )?(\w+)\+0x([0-9a-f]+) in (.+?):(\d+)")
_ACCESS = re.compile(r"(Read|Write|Atomic)\s+(?:access|Thread \((\d+),(\d+),(\d+)\))\s+at (?:0x[0-9a-f]+ in )?"
                     r"(\w+)\+0x[0-9a-f]+ in (.+?):(\d+)")
_BY = re.compile(r"by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
_HAZARD = re.compile(r"Potential (\w+) hazard detected at (__\w+__ )?(0x[0-9a-f]+) in block \((\d+),(\d+),(\d+)\)")
_ADDR = re.compile(r"(?:Address|Access to) (0x[0-9a-f]+)")
_NEAREST = re.compile(r"is ([\d,]+) bytes (after|before) the nearest allocation at (0x[0-9a-f]+) "
                      r"of size ([\d,]+) bytes")
_INSIDE = re.compile(r"is inside the nearest allocation at (0x[0-9a-f]+) of size ([\d,]+) bytes")
_COUNT = re.compile(r"\[(\d+) hazards?\]")
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?\s*$")
_NOT_PRINTED = re.compile(r"ERROR SUMMARY: (\d+) errors? (?:was|were) not printed")
_RACES = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_ALLOC = re.compile(r"^alloc (\d+) (0x[0-9a-f]+|\(nil\)) (\d+)$")
_SKIP = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application")


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def allocations(text: str) -> list:
    """[(param index, base, nbytes)] from sanhost's "alloc" lines."""
    out = []
    for line in text.splitlines():
        m = _ALLOC.match(line.strip())
        if m and m.group(2).startswith("0x"):
            out.append((int(m.group(1)), int(m.group(2), 16), int(m.group(3))))
    return out


def place(addr: int, allocs: list) -> dict:
    """The argument and byte offset of a global address: the allocation holding it, else the nearest one
    starting below it (an offset past its end), else the lowest (a negative offset)."""
    inside = [(k, addr - b) for k, b, n in allocs if b <= addr < b + n]
    if inside:
        return {"arg": inside[0][0], "offset": inside[0][1], "inside": True}
    below = [(addr - b, k) for k, b, n in allocs if b <= addr]
    if below:
        off, k = min(below)
        return {"arg": k, "offset": off, "inside": False}
    if allocs:
        k, b, _ = min(allocs, key=lambda a: a[1])
        return {"arg": k, "offset": addr - b, "inside": False}
    return {}


def parse_log(text: str) -> dict:
    """compute-sanitizer's text report -> {"records": [...], "errors": N, "hazards_displayed"...}."""
    allocs = allocations(text)
    records, cur = [], None
    summary = {}
    for raw in text.splitlines():
        m = _PREFIX.match(raw)
        if not m or not raw.startswith("="):
            continue
        body = m.group(1)
        if not body.strip():
            continue
        if (e := _ERRORS.search(body)):
            summary["errors"] = int(e.group(1))
            continue
        if (e := _NOT_PRINTED.search(body)):
            summary["not_printed"] = int(e.group(1))
            continue
        if (r := _RACES.search(body)):
            summary.update(hazards_displayed=int(r.group(1)), race_errors=int(r.group(2)),
                           race_warnings=int(r.group(3)))
            continue
        if not body.startswith(" ") and not body.startswith(_SKIP):
            cur = {"what": body.strip(), "text": [body.strip()]}
            records.append(cur)
        elif cur is not None:
            cur["text"].append(body.strip())
    for rec in records:
        txt = " ".join(rec["text"])
        accesses = [{"op": a.group(1), "line": int(a.group(7)), "file": os.path.basename(a.group(6)),
                     **({"thread": [int(a.group(i)) for i in (2, 3, 4)]} if a.group(2) else {})}
                    for a in _ACCESS.finditer(txt)]
        if accesses:
            rec["accesses"] = accesses
        loc = _LOC.search(txt)
        if loc:
            rec.update(function=loc.group(1), file=os.path.basename(loc.group(3)), line=int(loc.group(4)))
        if (b := _BY.search(txt)):
            rec["thread"] = [int(b.group(i)) for i in (1, 2, 3)]
            rec["block"] = [int(b.group(i)) for i in (4, 5, 6)]
        if (h := _HAZARD.search(txt)):
            rec["hazard"] = h.group(1)
            rec["space"] = (h.group(2) or "").strip().strip("_") or None
            rec["address"] = h.group(3)
            rec["block"] = [int(h.group(i)) for i in (4, 5, 6)]
        if (a := _ADDR.search(txt)):
            rec["address"] = a.group(1)
            if "__shared__" not in txt and "__local__" not in txt:
                rec["placed"] = place(int(a.group(1), 16), allocs)
        if (n := _NEAREST.search(txt)):
            rec["nearest"] = {"bytes": _int(n.group(1)), "side": n.group(2), "base": n.group(3),
                              "size": _int(n.group(4))}
        elif (n := _INSIDE.search(txt)):
            rec["nearest"] = {"bytes": 0, "side": "inside", "base": n.group(1), "size": _int(n.group(2))}
        if "nearest" in rec and "address" in rec:
            # the allocation compute-sanitizer names as the nearest, as (argument, byte offset from its start)
            base = int(rec["nearest"]["base"], 16)
            for k, b, _ in allocs:
                if b == base:
                    rec["nearest"].update(arg=k, offset=int(rec["address"], 16) - b)
        for problem in ("out of bounds", "misaligned"):
            if f"is {problem}" in txt:
                rec["problem"] = problem
        if rec["what"].startswith(("Error:", "Warning:")):
            rec["severity"] = rec["what"].split(":", 1)[0].lower()
        if (c := _COUNT.search(txt)):
            rec["hazards"] = int(c.group(1))
        for w in ("read", "write"):
            if f"__global__ {w}" in txt or f"__shared__ {w}" in txt or f"__local__ {w}" in txt:
                rec["op"] = w
        if (s := re.search(r"Invalid (__\w+__) ", txt)) or (s := re.search(r"(__\w+__) memory", txt)):
            rec.setdefault("space", s.group(1).strip("_"))
        rec["api"] = rec["what"].startswith("Program hit") or "API" in rec["what"]
    return {"records": records, **summary, "allocations": [list(a) for a in allocs]}


def verdict(name: str, text: str, code, timed_out: bool) -> dict:
    p = parse_log(text)
    device = [r for r in p["records"] if not r["api"]]
    v = {"exit": code, "timed_out": timed_out, "errors": p.get("errors"), "reported": bool(device),
         "api_errors": len(p["records"]) - len(device), "records": p["records"][:32],
         "allocations": p["allocations"]}
    for k in ("hazards_displayed", "race_errors", "race_warnings", "not_printed"):
        if k in p:
            v[k] = p[k]
    for line in text.splitlines():
        for key in ("launch", "sync"):
            if line.startswith(key + ": "):
                v[key] = line.split(": ", 1)[1].strip()
    return v


def trim(text: str, limit: int = 400) -> str:
    lines = [ln for ln in text.splitlines() if "Host Frame" not in ln and "Saved host backtrace" not in ln]
    if len(lines) > limit:
        lines = lines[:limit] + [f"[{len(lines) - limit} more lines trimmed]"]
    return "\n".join(lines) + "\n"


# ---- the runs --------------------------------------------------------------------------------------------

def run_one(case, run: str, argv, work: str, logs: str) -> tuple:
    spec, args, outs = write_spec(case, work, run)
    cmd = (argv or []) + [os.path.join(work, "sanhost"), spec]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        text, code, timed_out = p.stdout + p.stderr, p.returncode, False
    except subprocess.TimeoutExpired as e:
        text = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
        text += f"\n[timed out after {TIMEOUT} s]\n"
        code, timed_out = None, True
    with open(os.path.join(logs, f"{case.name}.{run}.txt"), "w") as f:
        f.write(trim(text))
    v = verdict(run, text, code, timed_out)
    v["seconds"] = round(time.time() - t0, 2)
    v["argv"] = (argv or []) + ["sanhost", "SPEC"]
    if run == "plain":
        v["reported"] = None  # no tool ran
        if case.reference is not None and v.get("sync") == "cudaSuccess":
            ok = {}
            for k, want in case.reference(args).items():
                got = np.fromfile(outs[k], dtype=np.asarray(args[k]).dtype).reshape(np.shape(args[k]))
                ok[str(k)] = bool(np.allclose(got, want, rtol=1e-6, atol=1e-6))
            v["reference_ok"] = ok
    return case.name, run, v


def collect(out: str, case_names, run_names, jobs: int, probe: bool) -> dict:
    C = load_cases()
    work = os.path.join(out, "work")
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    t0 = time.time()
    env = environment()
    helptext = tool_help()
    with open(os.path.join(out, "help.txt"), "w") as f:
        for k, v in helptext.items():
            f.write(f"==== compute-sanitizer {k} --help\n{v}\n")
    print(json.dumps(env, indent=1), flush=True)
    built = build(work)
    env["build"] = {k: {"exit": c, "output": o[-2000:]} for k, (c, o) in built.items()}
    for k, (c, o) in built.items():
        print("build", k, c, o[-500:] if c else "", flush=True)
    runs = usable_runs(helptext, run_names)
    cases = [c for c in C.cuda_cases() if not case_names or c.name in case_names]
    if probe:
        cases = [c for c in cases if c.name in PROBE_CASES]
    result = {"env": env, "runs": {k: v for k, v in runs.items()}, "cases": {c.name: {} for c in cases}}
    jobs_list = [(c, r, a) for c in cases for r, a in runs.items()]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(run_one, c, r, a, work, logs) for c, r, a in jobs_list]
        for fut in concurrent.futures.as_completed(futs):
            name, run, v = fut.result()
            result["cases"][name][run] = v
            print(f"{name:28s} {run:17s} reported={v['reported']} errors={v['errors']} exit={v['exit']} "
                  f"{'TIMEOUT ' if v['timed_out'] else ''}{v.get('sync', '')} {v['seconds']}s", flush=True)
    env["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(out, "verdicts.json"), "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    with tarfile.open(os.path.join(out, "logs.tar.gz"), "w:gz") as tar:
        tar.add(logs, arcname="logs")
    shutil.rmtree(work, ignore_errors=True)
    return result


def reparse(d: str) -> None:
    """Rewrite d/verdicts.json's records from the logs under d/logs (no GPU)."""
    with open(os.path.join(d, "verdicts.json")) as f:
        result = json.load(f)
    for name, per in result["cases"].items():
        for run, v in per.items():
            path = os.path.join(d, "logs", f"{name}.{run}.txt")
            if os.path.exists(path):
                with open(path) as f:
                    text = f.read()
                new = verdict(run, text, v["exit"], v["timed_out"])
                for k in ("seconds", "argv", "reference_ok"):
                    if k in v:
                        new[k] = v[k]
                if run == "plain":
                    new["reported"] = None
                per[run] = new
    with open(os.path.join(d, "verdicts.json"), "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


RECORDS_KEPT = 8  # findings per verdict in the committed fixture (the log keeps the text of more)
LOG_LINES = 48  # lines per run in the committed logs


def export(src: str, dest: str) -> None:
    """The committed form of a collection `src` (verdicts.json and logs/): `dest`/verdicts.json with the
    first RECORDS_KEPT findings of each verdict, and `dest`/logs/CASE.txt, every run's log of the case
    (backtraces off, LOG_LINES lines at most)."""
    with open(os.path.join(src, "verdicts.json")) as f:
        result = json.load(f)
    env = result["env"]
    out = {"collected": {k: env.get(k) for k in ("date", "nvidia_smi", "nvcc", "compute_sanitizer", "seconds")},
           "nvcc_flags": NVCC_FLAGS, "runs": result["runs"], "cases": {}}
    out["collected"]["nvcc"] = (env.get("nvcc") or "").splitlines()[-2:]
    out["collected"]["compute_sanitizer"] = (env.get("compute_sanitizer") or "").splitlines()[-1:]
    os.makedirs(os.path.join(dest, "logs"), exist_ok=True)
    for name in sorted(result["cases"]):
        per, case_out, text = result["cases"][name], {}, []
        for run in RUNS:
            if run not in per:
                continue
            v = dict(per[run])
            device = [r for r in v.pop("records") if not r["api"]]
            v["findings"] = len(device)
            v["records"] = [{k: x for k, x in r.items() if k not in ("text", "api")} for r in device[:RECORDS_KEPT]]
            v.pop("argv", None)
            v.pop("seconds", None)
            case_out[run] = v
            path = os.path.join(src, "logs", f"{name}.{run}.txt")
            if os.path.exists(path):
                with open(path) as f:
                    lines = f.read().splitlines()
                more = len(lines) - LOG_LINES
                text += [f"#### {run}: {' '.join(result['runs'][run] or ['(no tool)'])} sanhost SPEC"]
                text += lines[:LOG_LINES] + ([f"[{more} more lines]"] if more > 0 else []) + [""]
        out["cases"][name] = case_out
        with open(os.path.join(dest, "logs", f"{name}.txt"), "w") as f:
            f.write("\n".join(text))
    with open(os.path.join(dest, "verdicts.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


def summary(result: dict) -> str:
    runs = [r for r in RUNS if any(r in per for per in result["cases"].values())]
    rows = ["case".ljust(28) + " ".join(r[:12].ljust(12) for r in runs)]
    for name, per in result["cases"].items():
        cells = []
        for r in runs:
            v = per.get(r)
            if v is None:
                cells.append("-")
            elif r == "plain":
                cells.append("hang" if v["timed_out"] else (v.get("sync") or "?")[4:16])
            else:
                cells.append("TIMEOUT" if v["timed_out"] else ("yes %s" % v["errors"] if v["reported"] else "no"))
        rows.append(name.ljust(28) + " ".join(c.ljust(12) for c in cells))
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--cases", default="")
    ap.add_argument("--runs", default=",".join(RUNS))
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--reparse")
    ap.add_argument("--export", nargs=2, metavar=("SRC", "DEST"))
    a = ap.parse_args(argv)
    if a.reparse:
        reparse(a.reparse)
        return 0
    if a.export:
        export(*a.export)
        return 0
    if not a.out:
        ap.error("--out DIR is needed")
    names = [n for n in a.cases.split(",") if n]
    result = collect(a.out, names, [r for r in a.runs.split(",") if r], a.jobs, a.probe)
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
