"""Time ground truth of the suite corpus on a GPU: every case of jaxsimt/kernels/suites/ at its timing size (`TIMING`
of its driver module: long enough on an H200 to time, with the launch structure of the original host code),
each launch timed with CUDA events over a few repeats of the whole case, then the first launches of every
case under Nsight Compute for their duration and cycles. Needs numpy and cupy only (not jaxsimt); the
backend, ncu driver and launch matching are run_gpu's:

    python3 jaxsimt/kernels/suites/time_gpu.py --out DIR [--suites a,b] [--cases x,y] [--repeats R]
                                       [--ncu-launches K] [--skip ncu] [--deadline S] [--metric-set timing|cache]

DIR/suites_timing_runs.json  per case: size (the driver's keyword arguments), launches (kernel, grid, block,
                             smem, CUDA-event microseconds of each timed repeat and their median), wall
                             seconds of each run, MiB allocated, reference check, errors; rewritten after
                             every case, so that a run cut short keeps what it did
DIR/suites_timing.csv        suite, case, launch, kernel, metric, value: ncu's duration, cycles and launch
                             configuration of the first K launches of each case; rewritten after every suite
                             (`--metric-set cache`: DIR/suites_cache.csv, with L1 / L2 hits and DRAM reads of
                             global loads instead, CACHE_METRICS)
DIR/suites_timing_ncu.log    ncu's logs, one suite after another
DIR/suites_timing_env.json   device, driver, cupy and ncu versions, the options, each stage's seconds

`--scale-check` builds every case's inputs at default and timing size on a backend that runs nothing and
prints each case's size, launches, threads launched and MiB allocated (no GPU; `--json PATH` writes them).
`--backend jaxsimt` runs the cases at their default size on the emulator (no GPU: a check of the plumbing;
the timing sizes would take it hours). `--replay SUITE` (used under ncu) runs one suite's cases at timing
size with the profiler on around the first K launches of each.

The numpy reference is checked on each case's first (warm-up) run only, except for the cases of a module's
`TIMING_NO_REFERENCE`, whose reference would take too long at timing size.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # run_gpu beside this file; it puts the `suites` package on the path
import run_gpu as R  # noqa: E402

# ncu's timing of each profiled launch: its duration, the elapsed cycles of the SM that ran longest, the
# active cycles of an SM sub-partition on average and of the busiest SM
TIMING_METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__cycles_active.avg",
                  "sm__cycles_active.max")
LAUNCH_METRICS = ("launch__grid_size", "launch__block_size", "launch__registers_per_thread")  # LaunchStats
# `--metric-set cache`: where each launch's global loads were served (the L1 and L2 tag models' ground truth):
# L1 sectors of global loads and their lookup hits, the L2 sectors L1 read and their hits, DRAM sectors read
CACHE_METRICS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
                 "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                 "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
                 "dram__sectors_read.sum", "gpu__time_duration.sum", "sm__cycles_elapsed.max")
METRIC_SETS = {"timing": ("suites_timing.csv", TIMING_METRICS), "cache": ("suites_cache.csv", CACHE_METRICS)}
MEMORY_CAP = 4 << 30  # bytes one case may allocate on the device at timing size
REPEATS = 3  # timed runs of each case after its warm-up run
NCU_LAUNCHES = 16  # launches profiled from the start of each case (ncu spends tenths of a second on each)
# Before each timed launch a one-thread kernel spins this long on the stream, so that the host has recorded
# the start event and launched the kernel by the time the GPU reaches them: the events then bracket the
# kernel, not the host's launch overhead (tens of microseconds are far more than CuPy's launch takes)
SPIN_NS = 100_000
TIMING_SHARE = 0.45  # share of the deadline for the timed runs when ncu follows them
NCU_EXIT_S = 20.0  # seconds left to ncu to print its results after the profiled process stops
NCU_MIN_S = 20.0  # a suite is not started under ncu with less time left
END_MARGIN_S = 20.0  # seconds kept free at the end of the deadline to write the results
# CUDA's launch limits (compute capability 9.0), checked by the dry backend
MAX_BLOCK_THREADS = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_DYNAMIC_SMEM = 48 << 10  # without the opt-in attribute, which the backends do not set
MIB = 1 << 20

# the spin kernel as PTX (loaded by the driver: no compiler needed on the GPU machine)
SPIN_PTX = """.version 7.8
.target sm_90
.address_size 64

.visible .entry spin(.param .u64 spin_ns)
{
	.reg .pred 	%p;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [spin_ns];
	mov.u64 	%rd2, %globaltimer;
$L_wait:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p, %rd4, %rd1;
	@%p bra 	$L_wait;
	ret;
}
"""


def suite_module(suite):
    return importlib.import_module(f"suites.{suite}")


def selected(names, suite, case) -> bool:
    """Whether `names` (None: everything) names the case, as "case", "suite.case" or "suite"."""
    return names is None or case in names or f"{suite}.{case}" in names or suite in names


def timing_size(mod, case):
    """The case's timing size (keyword arguments of its driver); None where it keeps its default size."""
    return mod.TIMING.get(case)


def _axes(dims):
    return list(dims) + [1] * (3 - len(dims))


def threads(launch: dict) -> int:
    """Threads a launch-log entry starts: grid times block."""
    return int(np.prod(launch["grid"])) * int(np.prod(launch["block"]))


def launch_problems(launch: dict) -> list:
    """How a launch-log entry breaks CUDA's launch limits (empty where it does not)."""
    grid, block = _axes(launch["grid"]), _axes(launch["block"])
    out = []
    if int(np.prod(block)) > MAX_BLOCK_THREADS:
        out.append(f"{launch['kernel']}: {np.prod(block)} threads a block")
    out += [f"{launch['kernel']}: block {block}" for b, cap in zip(block, MAX_BLOCK) if not 1 <= b <= cap]
    out += [f"{launch['kernel']}: grid {grid}" for g, cap in zip(grid, MAX_GRID) if not 1 <= g <= cap]
    if launch["smem"] > MAX_DYNAMIC_SMEM:
        out.append(f"{launch['kernel']}: {launch['smem']} dynamic shared bytes")
    return out


class DryBackend:
    """A backend that runs no kernel: a buffer is the host array it was made from (no kernel writes it, and
    not copying keeps the check fast), every launch is logged as run_gpu logs it, and the bytes of every
    buffer are counted (what the device would allocate). For looking at sizes without a GPU: a case whose
    launches depend on what its kernels compute shows the launches of a first iteration only (bfs: no
    kernel sets the flag of another level)."""

    def __init__(self, ptx_path=None):
        self.log, self.allocated = [], 0

    def array(self, a):
        a = np.asarray(a)
        self.allocated += a.nbytes
        return a

    def at(self, buf, offset):
        return buf[offset:]

    def get(self, buf):
        return buf

    def set_constant(self, symbol, a):
        pass

    def launch(self, name, grid, block, args, smem=0):
        self.log.append(R.launch_record(name, grid, block, smem))


def dry_run(suite, case, size) -> dict:
    """A case's launches, threads, bytes allocated and launch-limit problems at `size` (None: default) on
    the dry backend, with the host's seconds to make its inputs."""
    be = DryBackend()
    t0 = time.perf_counter()
    suite_module(suite).run(be, case, size, reference=False)
    return {"size": size or {}, "launches": be.log, "threads": sum(threads(l) for l in be.log),
            "bytes": be.allocated, "problems": [p for l in be.log for p in launch_problems(l)],
            "seconds": round(time.perf_counter() - t0, 3)}


def scale_check(suites, cases, json_path=None) -> int:
    """Print each case's timing size, launches, threads and MiB allocated (no GPU); 1 where a case breaks a
    launch limit or the memory cap."""
    out, bad = {}, 0
    print(f"{'case':38} {'size':44} {'launches':>8} {'threads':>13} {'MiB':>8} {'host s':>6}")
    for s in suites:
        mod = suite_module(s)
        for case in mod.CASES:
            if not selected(cases, s, case):
                continue
            size = timing_size(mod, case)
            rec = {"default": dry_run(s, case, None), "timing": dry_run(s, case, size)}
            out[f"{s}.{case}"] = rec
            t = rec["timing"]
            note = "" if size else "  (fixed size)"
            if case in mod.TIMING_NO_REFERENCE:
                note += "  (no reference at timing size)"
            if t["problems"] or t["bytes"] > MEMORY_CAP:
                bad = 1
                note += "  PROBLEM: " + "; ".join(t["problems"] or [f"over {MEMORY_CAP / MIB:.0f} MiB"])
            size_text = ", ".join(f"{k}={v}" for k, v in (size or {}).items()) or "default"
            print(f"{s + '.' + case:38} {size_text:44} {len(t['launches']):8d} {t['threads']:13,d} "
                  f"{t['bytes'] / MIB:8.1f} {t['seconds']:6.2f}{note}", flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"memory_cap": MEMORY_CAP, "cases": out}, f, indent=0)
    return bad


def _profiler(cp):
    """(start, stop) of the CUDA profiler API in this CuPy."""
    rt = cp.cuda.runtime
    if hasattr(rt, "profilerStart"):
        return rt.profilerStart, rt.profilerStop
    from cupy.cuda import profiler
    return profiler.start, profiler.stop


def load_spin(cp):
    """The spin kernel (None where the driver does not load it: the events then include launch overhead)."""
    fd, path = tempfile.mkstemp(suffix=".ptx")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(SPIN_PTX)
        return cp.RawModule(path=path).get_function("spin")
    except Exception as e:  # noqa: BLE001 - reported by the caller as no spin
        print("spin kernel not loaded:", repr(e), file=sys.stderr)
        return None
    finally:
        os.remove(path)


class TimedBackend(R.CupyBackend):
    """run_gpu's CuPy backend with every launch timed by CUDA events (microseconds in `event_us`, in launch
    order) and the bytes of its buffers counted. Each launch still ends in a synchronize, as the host code's
    launches do under run_gpu."""

    def __init__(self, ptx_path, spin=None):
        super().__init__(ptx_path)
        self.cp = self.be.cp
        self.spin = spin
        self.start, self.end = self.cp.cuda.Event(), self.cp.cuda.Event()
        self.event_us, self.allocated = [], 0

    def array(self, a):
        buf = self.be.array(a)
        self.allocated += buf.nbytes
        return buf

    def launch(self, name, grid, block, args, smem=0):
        rec = R.launch_record(name, grid, block, smem)
        self.log.append(rec)
        kernel = self.be.mod.get_function(name)  # loads the module before the clock starts
        if self.spin is not None:
            self.spin((1,), (1,), (np.uint64(SPIN_NS),))
        self.start.record()
        kernel(tuple(rec["grid"]), tuple(rec["block"]), tuple(args), shared_mem=int(smem))
        self.end.record()
        self.end.synchronize()
        self.event_us.append(round(self.cp.cuda.get_elapsed_time(self.start, self.end) * 1e3, 3))


class ProfiledBackend(R.CupyBackend):
    """run_gpu's CuPy backend with the profiler on around the first `limit` launches (None: all), which are
    those ncu profiles under --profile-from-start off."""

    def __init__(self, ptx_path, limit):
        super().__init__(ptx_path)
        self.limit = limit
        self.profiler_start, self.profiler_stop = _profiler(self.be.cp)

    def launch(self, name, grid, block, args, smem=0):
        profiled = self.limit is None or len(self.log) < self.limit
        if profiled:
            self.profiler_start()
        try:
            super().launch(name, grid, block, args, smem=smem)  # synchronizes
        finally:
            if profiled:
                self.profiler_stop()


def free_device_memory(gpu):
    if gpu:
        import cupy as cp
        cp.get_default_memory_pool().free_all_blocks()


def check_reference(out, ref, tol) -> dict:
    """{output: {ok: within `tol` as the corpus checks it, max_rel_err: the largest difference over the
    largest |reference|}}."""
    S = R.suites_pkg()
    res = {}
    for k, want in ref.items():
        got = np.asarray(out.get(k))
        if got.shape != np.shape(want):
            res[k] = {"ok": False, "max_rel_err": None, "shape": [list(got.shape), list(np.shape(want))]}
            continue
        w64, g64 = np.asarray(want, np.float64), got.astype(np.float64)
        scale = max(float(np.max(np.abs(w64), initial=0.0)), 1e-30)
        res[k] = {"ok": bool(S.close(got, want, tol)),
                  "max_rel_err": float(np.max(np.abs(g64 - w64), initial=0.0)) / scale}
    return res


def time_case(suite, case, size, make_backend, repeats, reference, deadline, gpu) -> dict:
    """One case run 1 + `repeats` times at `size` (the first a warm-up, with the reference check where
    `reference`): its launch log with each launch's CUDA-event microseconds in the timed runs (where the
    backend times them), wall seconds of every run, MiB allocated, reference check and errors."""
    mod = suite_module(suite)
    rec = {"size": size or {}, "launches": [], "wall_s": []}
    timed = []  # event microseconds of each timed run, in launch order
    for r in range(repeats + 1):
        if time.time() > deadline:
            rec["error"] = "skipped: deadline" if r == 0 else f"deadline after {r - 1} timed runs"
            break
        be = make_backend(os.path.join(HERE, mod.PTX))
        t0 = time.time()
        try:
            out, ref = mod.run(be, case, size, reference=reference and r == 0)
        except Exception as e:  # noqa: BLE001 - recorded, the other cases go on
            rec["error"] = f"run {r}: {e!r}"[:2000]
            if r == 0:
                rec["launches"] = be.log
            break
        finally:
            free_device_memory(gpu)
        rec["wall_s"].append(round(time.time() - t0, 4))
        if r == 0:
            rec["launches"] = be.log
            if getattr(be, "allocated", None) is not None:
                rec["allocated_mib"] = round(be.allocated / MIB, 1)
            if ref is not None:
                rec["reference"] = check_reference(out, ref, mod.TOLERANCE.get(case, 0))
        elif be.log != rec["launches"]:
            rec["error"] = f"run {r} launched differently from the first"
            break
        else:
            timed.append(be.event_us)
    if timed:
        for i, launch in enumerate(rec["launches"]):
            launch["event_us"] = [t[i] for t in timed]
            launch["event_us_median"] = float(np.median(launch["event_us"]))
        totals = [round(sum(t), 3) for t in timed]
        rec["event_us_total"], rec["event_us_total_median"] = totals, float(np.median(totals))
    return rec


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=0)
    os.replace(tmp, path)  # a reader (or a timeout) never sees half a file


def replay(suite, cases, limit, stop_at):
    """Under ncu: the suite's cases at timing size with the profiler on around the first `limit` launches of
    each, starting no case after `stop_at` (so that ncu can still print before its own time is up)."""
    mod = suite_module(suite)
    for case in cases or mod.CASES:
        if stop_at and time.time() > stop_at:
            print("replay stopped before", case, file=sys.stderr)
            break
        try:
            mod.run(ProfiledBackend(os.path.join(HERE, mod.PTX), limit), case, timing_size(mod, case),
                    reference=False)
        except Exception as e:  # noqa: BLE001 - the other cases go on
            print("replay", case, repr(e), file=sys.stderr)
        free_device_memory(True)


def profile(suites, runs, ncu, out, limit, deadline, env, names=None, metric_set="timing"):
    """The cases that ran (those of `names` only, where given) under ncu, one process a suite, the suite with
    the fewest profiled launches first (so that the deadline cuts the largest): DIR/suites_timing.csv and
    the logs."""
    env["ncu_version"] = R.ncu_version(ncu)
    env["ncu"] = {}
    csv_name, metrics = METRIC_SETS[metric_set]
    rows, work = [], tempfile.mkdtemp(prefix="suites_timing_ncu_")
    log_all = os.path.join(out, "suites_timing_ncu.log")
    open(log_all, "w").close()

    def to_profile(s):
        return {c: r for c, r in runs[s].items() if r.get("launches") and "error" not in r and selected(names, s, c)}

    for s in sorted(suites, key=lambda s: sum(len(r["launches"][:limit]) for r in to_profile(s).values())):
        cases = to_profile(s)
        left = deadline - END_MARGIN_S - time.time()
        if not cases or left < NCU_MIN_S:
            env["ncu"][s] = "skipped: " + ("no case to profile" if not cases else "deadline")
            continue
        target = [sys.executable, os.path.abspath(__file__), "--replay", s, "--cases", ",".join(cases),
                  "--ncu-launches", str(limit or 0), "--stop-at", str(time.time() + left - NCU_EXIT_S)]
        r, info = R.ncu_suite(s, ncu, cases, work, left, metrics=metrics, sections=("LaunchStats",),
                              wanted=metrics + LAUNCH_METRICS, target=target,
                              options=("--profile-from-start", "off"), limit=limit, log_name=f"{s}.ncu-log.txt")
        rows += r
        env["ncu"][s] = info
        print("ncu", s, info, flush=True)
        with open(os.path.join(out, csv_name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["suite", "case", "launch", "kernel", "metric", "value"])
            w.writerows(rows)
        log = os.path.join(work, f"{s}.ncu-log.txt")
        if os.path.exists(log):
            with open(log, errors="replace") as src, open(log_all, "a") as dst:
                dst.write(f"==== {s}\n")
                shutil.copyfileobj(src, dst)
    shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--suites", default=None, help="comma-separated suites (default: all)")
    ap.add_argument("--cases", default=None, help="comma-separated cases: case, suite.case or suite (default: all)")
    ap.add_argument("--backend", default="cupy", choices=("cupy", "jaxsimt"))
    ap.add_argument("--repeats", type=int, default=REPEATS, help="timed runs of each case after its warm-up")
    ap.add_argument("--ncu-launches", type=int, default=NCU_LAUNCHES,
                    help="launches profiled from the start of each case (0: all)")
    ap.add_argument("--ncu-cases", default=None, help="profile only these (names as --cases; default: all)")
    ap.add_argument("--skip", default="", help="ncu: no Nsight Compute stage")
    ap.add_argument("--metric-set", default="timing", choices=sorted(METRIC_SETS),
                    help="ncu metrics: timing (duration, cycles) or cache (L1 / L2 hits, DRAM reads)")
    ap.add_argument("--deadline", type=float, default=450.0, help="seconds from start for the whole collection")
    ap.add_argument("--scale-check", action="store_true", help="sizes, launches and bytes of every case; no GPU")
    ap.add_argument("--json", help="with --scale-check: write its records here")
    ap.add_argument("--replay", default=None, help=argparse.SUPPRESS)  # under ncu: one suite's launches
    ap.add_argument("--stop-at", type=float, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    S = R.suites_pkg()
    suites = a.suites.split(",") if a.suites else list(S.SUITES)
    cases = a.cases.split(",") if a.cases else None
    limit = a.ncu_launches or None
    if a.scale_check:
        return scale_check(suites, cases, a.json)
    if a.replay:
        replay(a.replay, cases, limit, a.stop_at)
        return 0
    if not a.out:
        ap.error("--out DIR is needed (or --scale-check)")
    t_start = time.time()
    deadline = t_start + a.deadline
    gpu = a.backend == "cupy"
    os.makedirs(a.out, exist_ok=True)
    if gpu:
        import cupy as cp
        spin = load_spin(cp)

        def make_backend(ptx):
            return TimedBackend(ptx, spin)
        repeats = a.repeats
    else:  # the emulator: default sizes, one run, no events
        spin, make_backend, repeats = None, R.EmulatorBackend, 0
    ncu = R.find_ncu() if gpu and "ncu" not in a.skip.split(",") else None
    env = {"stages": {}, "options": {"backend": a.backend, "repeats": repeats, "ncu_launches": limit,
                                     "spin_ns": SPIN_NS if spin is not None else None, "deadline_s": a.deadline}}
    env.update(R.device_env(gpu))
    env_path = os.path.join(a.out, "suites_timing_env.json")
    _write_json(env_path, env)
    timing_deadline = t_start + a.deadline * TIMING_SHARE if ncu else deadline - END_MARGIN_S
    runs_path = os.path.join(a.out, "suites_timing_runs.json")
    runs = {}
    for s in suites:
        mod = suite_module(s)
        runs[s] = {}
        for case in mod.CASES:
            if not selected(cases, s, case):
                continue
            size = timing_size(mod, case) if gpu else None
            check = size is None or case not in mod.TIMING_NO_REFERENCE
            rec = time_case(s, case, size, make_backend, repeats, check, timing_deadline, gpu)
            runs[s][case] = rec
            _write_json(runs_path, runs)
            print(s, case, rec.get("error", "ok"), f"{len(rec['launches'])} launches",
                  f"{rec.get('event_us_total_median', float('nan')):.1f} us",
                  {k: v["ok"] for k, v in rec.get("reference", {}).items()}, flush=True)
    env["stages"]["timing_s"] = round(time.time() - t_start, 1)
    _write_json(env_path, env)
    if ncu:
        t0 = time.time()
        profile(suites, runs, ncu, a.out, limit, deadline, env, a.ncu_cases.split(",") if a.ncu_cases else None,
                a.metric_set)
        env["stages"]["ncu_s"] = round(time.time() - t0, 1)
    env["stages"]["total_s"] = round(time.time() - t_start, 1)
    _write_json(env_path, env)
    print(json.dumps(env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
