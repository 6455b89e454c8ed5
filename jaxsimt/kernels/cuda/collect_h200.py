#!/usr/bin/env python3
"""Hardware ground truth on an H200: build, check, profile and time the programs in jaxsimt/kernels/cuda/.

Run from the repository root on a machine with an H200, CUDA 12+/13 (nvcc) and Nsight Compute (ncu):

    python3 jaxsimt/kernels/cuda/collect_h200.py --out DIR

Everything goes into at most three files under DIR:
    h200_fixtures.tar.gz   folder h200/ with the fixtures (unpack with: tar xzf h200_fixtures.tar.gz -C jaxsimt/data/)
    summary.txt            the short table printed last
    collect_log.txt        every progress line, command and error
The tarball is rewritten after every stage, so a run cut short still leaves what it had.
Stdlib only (numpy is not needed). `--dry-run` builds everything, writes the registry and the ptxas
reports, logs the commands it would run, and runs nothing on a GPU. `--retidy FIXDIR` rewrites the
ncu tables of an existing fixtures folder from its ncu_raw/ CSVs and applies the size rules below (no GPU).

Size rules (the fixtures are committed): ncu's .ncu-rep reports stay out (--keep-ncu-rep keeps them);
metrics that describe the device rather than the launch (device__, nvlink__, c2clink__, numa__) are
stored once in ncu_device_attributes.json instead of once per kernel; SASS listings over 1 MiB are left
out (the occupancy program's register-filler kernels); of `ncu --query-metrics` only names and units are kept.

Stages, in order (each guarded, each with a subprocess timeout, all within --deadline seconds):
  provenance   nvidia-smi, nvcc/ncu versions, date, git commit          -> provenance.json
  build        nvcc -arch=sm_90 -O3 -lineinfo -Xptxas -v per program, PTX, SASS
                                                                           -> ptxas.json, ptx/, sass/, build_logs/
  registry     every program's --list                                     -> registry.json
  device       occupancy --props / --sweep                                -> device_props.json, occupancy_sweep.csv
  checks       every kernel once with its host reference (no profiler), ladder at odd sizes
                                                                           -> checks.json, runs/
  ncu          one ncu run per program (--page raw --csv), metrics probed first
                                 -> ncu_metrics.csv, ncu_kernels.csv, ncu_device_attributes.json, ncu_raw/,
                                    ncu_metrics_known.txt
  mma_truth    jaxsimt/kernels/cuda/mma_truth.cu, when present: ./mma_truth OUTDIR  -> mma/
  timing       gemm_ladder --time 1024,2048,4096 (CUDA events, cuBLAS)    -> timings.json
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
T0 = time.time()

NVCC_FLAGS = ["-arch=sm_90", "-O3", "-lineinfo", "-std=c++17"]

# program -> source; the ladder gets link variants (see build_program)
PROGRAMS = {
    "micro_shared": "micro_shared.cu",
    "micro_global": "micro_global.cu",
    "micro_divergence": "micro_divergence.cu",
    "gemm_ladder": "gemm_ladder.cu",
    "occupancy": "occupancy.cu",
}
# programs profiled under ncu, with their arguments (the ladder at the profiling size)
PROFILED = [
    ("micro_shared", []),
    ("micro_global", []),
    ("micro_divergence", []),
    ("gemm_ladder", ["--size", "256,256,256"]),
]
KERNEL_REGEX = "regex:^(smem_|glob_|div_|gemm_)"
TIME_SIZES = "1024,2048,4096"

# Metrics: CORE are the ones the emulator is validated against; EXTRA are collected when the
# installed ncu knows them (probed with --query-metrics), several are candidates for one quantity
# (e.g. the tensor-pipe instruction count has different names across versions).
CORE_METRICS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "smsp__sass_branch_targets_threads_divergent.sum",
    "smsp__sass_branch_targets.sum",
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
]
EXTRA_METRICS = [
    "smsp__sass_branch_targets_threads_uniform.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "smsp__inst_executed_op_global_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "smsp__thread_inst_executed_pred_on.sum",
    "smsp__warps_launched.sum",
    "sm__cycles_elapsed.avg",
    "sm__cycles_active.avg",
    "smsp__cycles_active.avg",
    "smsp__inst_executed_pipe_tensor.sum",
    "smsp__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "smsp__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_pipe_fma.sum",
    "smsp__inst_executed_pipe_lsu.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_config_size",
    "launch__waves_per_multiprocessor",
    "launch__block_size",
    "launch__grid_size",
    "launch__thread_count",
    "launch__occupancy_per_block_size",
]
# metrics that describe the device, not the launch: one copy per program in ncu_device_attributes.json
DEVICE_METRIC_PREFIXES = ("device__", "nvlink__", "c2clink__", "numa__")
SASS_MAX_BYTES = 1 << 20
MMA_DIR = "mma"  # jaxsimt/units/mma/fixture.py reads jaxsimt/data/h200/mma/

# used when a run with the probed list fails: names seen on sm_90 in Nsight Compute's own sections
SAFE_METRICS = CORE_METRICS


class Collector:
    def __init__(self, out: str, dry_run: bool, deadline: float, time_sizes: str, keep_ncu_rep: bool = False):
        self.out = os.path.abspath(out)
        os.makedirs(self.out, exist_ok=True)
        self.dry = dry_run
        self.deadline = deadline
        self.time_sizes = time_sizes
        self.work = tempfile.mkdtemp(prefix="jaxsimt_h200_")
        self.fix = os.path.join(self.work, "h200")  # the tarball's root folder
        self.build = os.path.join(self.work, "build")
        os.makedirs(self.fix)
        os.makedirs(self.build)
        self.log_lines: list[str] = []
        self.stages: list[tuple[str, str, float]] = []  # (name, status, seconds)
        self.binaries: dict[str, str] = {}
        self.launches: dict[str, list[dict]] = {}  # program -> launch events of the check run
        self.checks: list[dict] = []
        self.ncu_rows: list[list] = []  # program, kernel, ncu_id, metric, value, unit
        self.ncu_kernels: list[list] = []  # program, kernel, launch_config, ncu_id, ncu_kernel_name
        self.ncu_device: dict[str, dict] = {}  # program -> {metric: {"value", "unit"}}
        self.keep_ncu_rep = keep_ncu_rep
        self.timings: list[dict] = []
        self.registry: dict[str, list] = {}
        self.ncu = shutil.which("ncu") or self._find_tool("ncu")
        self.nvcc = shutil.which("nvcc") or self._find_tool("nvcc")

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _find_tool(name):
        for d in ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute", "/usr/local/cuda/nsight-compute"):
            if os.path.isdir(d):
                for root, _dirs, files in os.walk(d):
                    if name in files:
                        p = os.path.join(root, name)
                        if os.access(p, os.X_OK):
                            return p
        return None

    def elapsed(self):
        return time.time() - T0

    def remaining(self):
        return self.deadline - self.elapsed()

    def log(self, msg: str):
        line = f"[{self.elapsed():6.1f}s] {msg}"
        print(line, flush=True)
        self.log_lines.append(line)

    def sh(self, cmd, timeout, cwd=None, env=None, quiet=False):
        """Runs cmd; returns (rc, stdout, stderr). rc 124 on timeout, 127 when not found."""
        timeout = max(1.0, min(timeout, self.remaining() - 5))
        if not quiet:
            self.log("$ " + " ".join(str(c) for c in cmd) + f"   (timeout {timeout:.0f}s)")
        try:
            p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                               errors="replace", timeout=timeout)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            so = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            se = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            self.log(f"  TIMEOUT after {timeout:.0f}s")
            return 124, so, se
        except FileNotFoundError as e:
            return 127, "", str(e)
        except Exception as e:  # noqa: BLE001
            return 1, "", repr(e)

    def write(self, rel, data):
        path = os.path.join(self.fix, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "w"
        with open(path, mode) as f:
            if isinstance(data, (dict, list)):
                json.dump(data, f, indent=1, sort_keys=False)
                f.write("\n")
            else:
                f.write(data)
        return path

    def pack(self):
        try:
            self.write("collect_log.txt", "\n".join(self.log_lines) + "\n")
            tmp = os.path.join(self.out, ".h200_fixtures.tar.gz.tmp")
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.fix, arcname="h200")
            os.replace(tmp, os.path.join(self.out, "h200_fixtures.tar.gz"))
            with open(os.path.join(self.out, "collect_log.txt"), "w") as f:
                f.write("\n".join(self.log_lines) + "\n")
        except Exception as e:  # noqa: BLE001
            print(f"packing failed: {e!r}", flush=True)

    def stage(self, name, fn, need=5.0):
        if self.remaining() < need:
            self.log(f"== {name}: SKIPPED (only {self.remaining():.0f}s left of the deadline)")
            self.stages.append((name, "skipped: deadline", 0.0))
            return
        t = time.time()
        self.log(f"== {name}")
        try:
            status = fn() or "ok"
        except Exception as e:  # noqa: BLE001
            status = f"error: {e!r}"
            self.log(f"  {name} raised:\n" + traceback.format_exc())
        dt = time.time() - t
        self.stages.append((name, status, dt))
        self.log(f"== {name}: {status} ({dt:.1f}s)")
        self.pack()

    # ------------------------------------------------------------------ provenance
    def provenance(self):
        prov = {
            "collected_at_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "dry_run": self.dry,
            "python": sys.version,
            "platform": " ".join(os.uname()),
            "nvcc_flags": NVCC_FLAGS,
            "ncu_path": self.ncu,
            "nvcc_path": self.nvcc,
        }
        cmds = {
            "nvidia_smi_query": ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap,"
                                 "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,pstate",
                                 "--format=csv"],
            "nvidia_smi": ["nvidia-smi"],
            "nvcc_version": [self.nvcc or "nvcc", "--version"],
            "ncu_version": [self.ncu or "ncu", "--version"],
            "git_commit": ["git", "-C", REPO, "rev-parse", "HEAD"],
            "git_status_kernels_cuda": ["git", "-C", REPO, "status", "--porcelain", "--", "jaxsimt/kernels/cuda"],
        }
        for key, cmd in cmds.items():
            rc, so, se = self.sh(cmd, 30, quiet=True)
            prov[key] = (so.strip() if rc == 0 else f"unavailable (rc {rc}): {(se or so).strip()[:300]}")
        self.write("provenance.json", prov)
        self.log("  GPU: " + prov["nvidia_smi_query"].replace("\n", " | ")[:300])
        self.log("  nvcc: " + prov["nvcc_version"].splitlines()[-1] if prov["nvcc_version"] else "")
        self.log("  ncu: " + prov["ncu_version"].splitlines()[-1] if prov["ncu_version"] else "")
        return "ok"

    # ------------------------------------------------------------------ build
    def _cublas_dirs(self):
        """Candidate (include, lib) folders of cuBLAS from a pip wheel, for machines whose toolkit lacks it."""
        out = []
        for sp in sys.path:
            for sub in ("nvidia/cu13", "nvidia/cublas", "nvidia/cu12"):
                inc, lib = os.path.join(sp, sub, "include"), os.path.join(sp, sub, "lib")
                if os.path.isfile(os.path.join(inc, "cublas_v2.h")) and os.path.isdir(lib):
                    out.append((inc, lib))
        return out

    def build_program(self, name, src):
        srcp = os.path.join(HERE, src)
        exe = os.path.join(self.build, name)
        base = [self.nvcc or "nvcc"] + NVCC_FLAGS + ["-Xptxas", "-v", srcp, "-o", exe]
        variants = [("plain", base)]
        if name == "gemm_ladder":
            variants = [("cublas linked", base[:1] + ["-DLADDER_CUBLAS_LINKED"] + base[1:] + ["-lcublas"])]
            for inc, lib in self._cublas_dirs():
                libs = sorted(f for f in os.listdir(lib) if f.startswith("libcublas.so"))
                if libs:
                    variants.append((f"cublas linked from {lib}",
                                     base[:1] + ["-DLADDER_CUBLAS_LINKED", "-I" + inc] + base[1:]
                                     + ["-L" + lib, "-l:" + libs[0], "-Xlinker", "-rpath=" + lib]))
            variants.append(("cublas by dlopen", base + ["-ldl"]))
        logs = []
        for label, cmd in variants:
            rc, so, se = self.sh(cmd, 240)
            logs.append(f"### {label}\n$ {' '.join(cmd)}\nrc={rc}\n{so}\n{se}\n")
            if rc == 0:
                self.write(f"build_logs/{name}.txt", "\n".join(logs))
                return exe, label, se
        self.write(f"build_logs/{name}.txt", "\n".join(logs))
        return None, "failed", "\n".join(logs)

    def ptx_program(self, name, src):
        out = os.path.join(self.fix, "ptx", name + ".ptx")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        cmd = [self.nvcc or "nvcc"] + NVCC_FLAGS + ["-ptx", os.path.join(HERE, src), "-o", out]
        rc, _so, se = self.sh(cmd, 240, quiet=True)
        return rc == 0

    @staticmethod
    def parse_ptxas(text):
        funcs, cur = {}, None
        for line in text.splitlines():
            m = re.search(r"Compiling entry function '([^']+)' for '([^']+)'", line)
            if m:
                cur = m.group(1)
                funcs[cur] = {"arch": m.group(2)}
                continue
            m = re.search(r"Function properties for (\S+)", line)
            if m:
                cur = m.group(1)
                funcs.setdefault(cur, {})
                continue
            if cur is None:
                continue
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                funcs[cur].update(stack_frame=int(m.group(1)), spill_stores=int(m.group(2)),
                                  spill_loads=int(m.group(3)))
            m = re.search(r"Used (\d+) registers", line)
            if m:
                d = funcs[cur]
                d["registers"] = int(m.group(1))
                for pat, key in ((r"used (\d+) barriers", "barriers"), (r"(\d+) bytes smem", "smem_bytes"),
                                 (r"(\d+) bytes cmem\[0\]", "cmem0_bytes"),
                                 (r"(\d+) bytes cumulative stack size", "cumulative_stack")):
                    mm = re.search(pat, line)
                    if mm:
                        d[key] = int(mm.group(1))
                d.setdefault("smem_bytes", 0)
        return funcs

    def demangle(self, names):
        tool = shutil.which("cu++filt") or self._find_tool("cu++filt") or shutil.which("c++filt")
        if not tool or not names:
            return {n: n for n in names}
        try:
            p = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=20)
            dem = p.stdout.splitlines()
            if len(dem) == len(names):
                return dict(zip(names, dem))
        except Exception:  # noqa: BLE001
            pass
        return {n: n for n in names}

    def build_all(self):
        results, ptxas = {}, {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2)) as ex:
            futs = {ex.submit(self.build_program, n, s): n for n, s in PROGRAMS.items()}
            pfuts = [ex.submit(self.ptx_program, n, s) for n, s in PROGRAMS.items()]
            mma = os.path.join(HERE, "mma_truth.cu")
            mfut = ex.submit(self.build_mma_truth) if os.path.isfile(mma) else None
            for f in concurrent.futures.as_completed(futs):
                n = futs[f]
                try:
                    exe, label, err = f.result()
                except Exception as e:  # noqa: BLE001
                    exe, label, err = None, f"exception {e!r}", ""
                results[n] = label
                if exe:
                    self.binaries[n] = exe
                    funcs = self.parse_ptxas(err)
                    dem = self.demangle(list(funcs))
                    ptxas[n] = {dem[k]: dict(v, mangled=k) for k, v in funcs.items()}
                self.log(f"  build {n}: {label}")
            for f in pfuts:
                try:
                    f.result()
                except Exception:  # noqa: BLE001
                    pass
            if mfut is not None:
                try:
                    mfut.result()
                except Exception as e:  # noqa: BLE001
                    self.log(f"  mma_truth build raised {e!r}")
        self.write("ptxas.json", ptxas)
        self.write("build.json", {"programs": results, "nvcc_flags": NVCC_FLAGS})
        # SASS of every binary (cuobjdump), when the tool is there
        cuobjdump = shutil.which("cuobjdump") or self._find_tool("cuobjdump")
        if cuobjdump:
            for n, exe in self.binaries.items():
                rc, so, _se = self.sh([cuobjdump, "--dump-sass", exe], 60, quiet=True)
                if rc == 0 and len(so) <= SASS_MAX_BYTES:
                    self.write(f"sass/{n}.sass", so)
                elif rc == 0:
                    self.log(f"  sass/{n}.sass left out: {len(so)} bytes > {SASS_MAX_BYTES}")
        failed = [n for n, l in results.items() if l == "failed" or l.startswith("exception")]
        return "ok" if not failed else "failed: " + ",".join(failed)

    def build_mma_truth(self):
        src = os.path.join(HERE, "mma_truth.cu")
        exe = os.path.join(self.build, "mma_truth")
        logs = []
        for flags in (["-arch=sm_90"], ["-gencode=arch=compute_90a,code=sm_90a"]):
            cmd = [self.nvcc or "nvcc"] + flags + ["-O3", "-lineinfo", "-std=c++17", "-Xptxas", "-v", src, "-o", exe]
            rc, so, se = self.sh(cmd, 240)
            logs.append(f"$ {' '.join(cmd)}\nrc={rc}\n{so}\n{se}\n")
            if rc == 0:
                self.binaries["mma_truth"] = exe
                break
        self.write("build_logs/mma_truth.txt", "\n".join(logs))
        self.log(f"  build mma_truth: {'ok' if 'mma_truth' in self.binaries else 'failed'}")

    # ------------------------------------------------------------------ registry
    def registry_stage(self):
        for n in ("micro_shared", "micro_global", "micro_divergence", "gemm_ladder"):
            exe = self.binaries.get(n)
            if not exe:
                continue
            rc, so, se = self.sh([exe, "--list"], 30, quiet=True)
            self.registry[n] = [json.loads(l) for l in so.splitlines() if l.startswith("{")]
        self.write("registry.json", self.registry)
        return f"{sum(len(v) for v in self.registry.values())} kernels"

    # ------------------------------------------------------------------ device
    def device_stage(self):
        exe = self.binaries.get("occupancy")
        if not exe:
            return "no occupancy binary"
        if self.dry:
            self.log(f"  dry run: would run {exe} --props and {exe} --sweep")
            return "skipped: dry run"
        rc, so, se = self.sh([exe, "--props"], 60)
        try:
            props = json.loads(so)
            self.write("device_props.json", props)
            self.log(f"  {props.get('name')}: {props.get('multiProcessorCount')} SMs, "
                     f"{props.get('clockRate_khz')} kHz, smem/SM {props.get('sharedMemPerMultiprocessor')}, "
                     f"optin {props.get('sharedMemPerBlockOptin')}, reserved {props.get('reservedSharedMemPerBlock')}")
        except Exception:  # noqa: BLE001
            self.write("device_props_raw.txt", f"rc={rc}\n{so}\n{se}")
            self.log(f"  --props failed rc={rc}: {se.strip()[:300]}")
        rc2, so2, se2 = self.sh([exe, "--sweep"], 120)
        self.write("occupancy_sweep.csv", so2)
        nrows = max(0, len(so2.strip().splitlines()) - 1)
        if rc2 != 0:
            self.log(f"  --sweep rc={rc2}: {se2.strip()[:300]}")
        return f"props rc={rc}, sweep rc={rc2}, {nrows} configurations"

    # ------------------------------------------------------------------ checks
    @staticmethod
    def parse_events(text):
        ev = []
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("{") and line.endswith("}"):
                try:
                    ev.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return ev

    def run_checks(self, name, args, tag):
        exe = self.binaries.get(name)
        if not exe:
            self.checks.append({"program": name, "kernel": "*", "mode": tag, "ok": False, "detail": "not built"})
            return
        rc, so, se = self.sh([exe] + args, 120)
        self.write(f"runs/{name}_{tag}.txt", f"rc={rc}\n--- stdout\n{so}\n--- stderr\n{se}")
        ev = self.parse_events(so)
        launches = [e for e in ev if e.get("event") == "launch"]
        if tag == "check":
            self.launches[name] = launches
        for e in launches:
            self.checks.append({"program": name, "kernel": e["kernel"], "mode": tag, "ok": bool(e.get("ok")),
                                "detail": e.get("detail", ""), "grid": e.get("grid"), "block": e.get("block"),
                                "dyn_smem": e.get("dyn_smem"), "params": e.get("params"),
                                "attr": e.get("attr")})
        done = [e for e in ev if e.get("event") == "done"]
        if not done:
            self.checks.append({"program": name, "kernel": "*", "mode": tag, "ok": False,
                                "detail": f"program did not finish (rc {rc}): {se.strip()[-300:]}"})
        nok = sum(1 for e in launches if e.get("ok"))
        self.log(f"  {name} {tag}: {nok}/{len(launches)} passed, rc={rc}")

    def checks_stage(self):
        if self.dry:
            self.log("  dry run: would run every program once (and gemm_ladder --check-sizes)")
            return "skipped: dry run"
        for n in ("micro_shared", "micro_global", "micro_divergence"):
            self.run_checks(n, [], "check")
        self.run_checks("gemm_ladder", ["--size", "256,256,256"], "check")
        self.run_checks("gemm_ladder", ["--check-sizes"], "check_sizes")
        self.write("checks.json", self.checks)
        bad = [c for c in self.checks if not c["ok"]]
        return f"{len(self.checks) - len(bad)}/{len(self.checks)} passed"

    # ------------------------------------------------------------------ ncu
    def probe_metrics(self):
        known = set()
        for cmd in ([self.ncu, "--query-metrics", "--chip", "gh100"], [self.ncu, "--query-metrics"]):
            rc, so, se = self.sh(cmd, 60)
            if rc == 0 and so:
                self.write("ncu_metrics_known.txt", self.known_metrics_text(so))
                for line in so.splitlines():
                    tok = line.strip().split(" ")[0] if line.strip() else ""
                    if "__" in tok:
                        known.add(tok)
                if known:
                    break
        wanted = CORE_METRICS + EXTRA_METRICS
        if not known:
            self.log("  metric query gave nothing; using the core list unfiltered")
            return CORE_METRICS, {"query": "failed", "used": CORE_METRICS}
        has_launch = any(k.startswith("launch__") for k in known)
        has_gpu_time = any(k.startswith("gpu__time_duration") for k in known)
        used, dropped = [], []
        for m in wanted:
            base = m.split(".")[0]
            if base in known or (m.startswith("launch__") and not has_launch) or \
                    (m.startswith("gpu__time_duration") and not has_gpu_time):
                used.append(m)
            else:
                dropped.append(m)
        self.log(f"  metrics: {len(used)} used, {len(dropped)} unknown to this ncu: {', '.join(dropped)}")
        return used, {"query": "ok", "known_count": len(known), "used": used, "dropped": dropped}

    def ncu_run(self, name, args, metrics, timeout):
        exe = self.binaries[name]
        rep = os.path.join(self.work, f"{name}.ncu-rep")
        logf = os.path.join(self.work, f"{name}.ncu-log.txt")
        cmd = [self.ncu, "--clock-control", "none", "--target-processes", "all", "--replay-mode", "kernel",
               "--section", "LaunchStats", "--section", "Occupancy",
               "--metrics", ",".join(metrics), "--kernel-name", KERNEL_REGEX,
               "--export", rep, "--force-overwrite", "--log-file", logf, exe] + args
        rc, so, se = self.sh(cmd, timeout)
        ncu_log = open(logf).read() if os.path.exists(logf) else ""
        self.write(f"ncu_raw/{name}.run.txt", f"rc={rc}\n$ {' '.join(cmd)}\n--- ncu log\n{ncu_log}\n"
                                               f"--- stdout\n{so}\n--- stderr\n{se}")
        launches = [e for e in self.parse_events(so) if e.get("event") == "launch"]
        if not os.path.exists(rep):
            return rc, None, launches, ncu_log
        csv_text = None
        for extra in (["--print-units", "base"], []):
            rc2, so2, se2 = self.sh([self.ncu, "--import", rep, "--csv", "--page", "raw"] + extra, 120)
            if rc2 == 0 and so2.strip():
                csv_text = so2
                break
        if csv_text is not None:
            self.write(f"ncu_raw/{name}.csv", csv_text)
        if self.keep_ncu_rep:
            shutil.copy(rep, os.path.join(self.fix, "ncu_raw", f"{name}.ncu-rep"))
        return rc, csv_text, launches, ncu_log

    def parse_ncu_csv(self, name, csv_text, launches):
        rows = list(csv.reader(io.StringIO(csv_text)))
        # skip anything before the header (ncu may print ==PROF== lines when no log file is given)
        start = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
        if start is None:
            return 0
        header, units, data = rows[start], rows[start + 1], rows[start + 2:]
        col = {h: i for i, h in enumerate(header)}
        kcol = col.get("Kernel Name")
        meta = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                "Block Size", "Grid Size", "Device", "CC", "Kernel Time", "Function Name"}
        data = [r for r in data if len(r) == len(header)]
        data.sort(key=lambda r: int(r[col["ID"]]) if r[col["ID"]].isdigit() else 0)
        if len(data) != len(launches):
            self.log(f"  WARNING {name}: {len(data)} profiled kernels vs {len(launches)} launches; matched in order")
        n = 0
        for i, r in enumerate(data):
            lz = launches[i] if i < len(launches) else {}
            kname = lz.get("kernel", f"unmatched_{i}")
            cfg = (f"grid={tuple(lz.get('grid', []))} block={tuple(lz.get('block', []))} "
                   f"dyn_smem={lz.get('dyn_smem', '')} {lz.get('params', '')}").strip()
            ncu_name = r[kcol] if kcol is not None else ""
            ncu_id = r[col["ID"]]
            self.ncu_kernels.append([name, kname, cfg, ncu_id, ncu_name])
            dev = self.ncu_device.setdefault(name, {})
            for h, j in col.items():
                if h in meta:
                    continue
                v = r[j]
                try:
                    val = float(v.replace(",", "")) if v not in ("", "n/a") else None
                except ValueError:
                    val = v
                if isinstance(val, float) and val.is_integer() and abs(val) < 2**53:
                    val = int(val)
                unit = units[j] if j < len(units) else ""
                if h.startswith(DEVICE_METRIC_PREFIXES):
                    prev = dev.get(h)
                    if prev is None:
                        dev[h] = {"value": val, "unit": unit}
                        continue
                    if prev["value"] == val:
                        continue
                    # differs between launches: keep it per kernel as well
                self.ncu_rows.append([name, kname, ncu_id, h, val, unit])
                n += 1
        return len(data)

    @staticmethod
    def known_metrics_text(query_text):
        """`ncu --query-metrics` output reduced to 'name<TAB>type<TAB>unit' lines (descriptions dropped)."""
        out = []
        for line in query_text.splitlines():
            parts = re.split(r"\s{2,}", line.strip())
            if parts and "__" in parts[0] and not parts[0].startswith("-"):
                out.append("\t".join(parts[:3]))
            elif line.startswith("Chip"):
                out.append("# " + line.strip())
        return "\n".join(out) + "\n"

    @staticmethod
    def stdout_of_run_txt(text):
        a = text.find("--- stdout\n")
        b = text.find("\n--- stderr", a)
        return text[a + len("--- stdout\n"):b if b >= 0 else None] if a >= 0 else ""

    def retidy(self, fixdir):
        """Rewrites an existing fixtures folder to this script's layout, from its ncu_raw/ files."""
        self.fix = os.path.abspath(fixdir)
        raw = os.path.join(self.fix, "ncu_raw")
        for name, _args in PROFILED:
            cp, rp = os.path.join(raw, name + ".csv"), os.path.join(raw, name + ".run.txt")
            if not os.path.isfile(cp):
                self.log(f"  {name}: no {cp}")
                continue
            launches = [e for e in self.parse_events(self.stdout_of_run_txt(open(rp).read()))
                        if e.get("event") == "launch"] if os.path.isfile(rp) else []
            nk = self.parse_ncu_csv(name, open(cp).read(), launches)
            self.log(f"  {name}: {nk} kernels")
        self.write_ncu_csv()
        q = os.path.join(self.fix, "ncu_metrics_query.txt")
        if os.path.isfile(q):
            self.write("ncu_metrics_known.txt", self.known_metrics_text(open(q).read()))
            os.remove(q)
        if not self.keep_ncu_rep and os.path.isdir(raw):
            for f in os.listdir(raw):
                if f.endswith(".ncu-rep"):
                    os.remove(os.path.join(raw, f))
        sass = os.path.join(self.fix, "sass")
        if os.path.isdir(sass):
            for f in os.listdir(sass):
                if os.path.getsize(os.path.join(sass, f)) > SASS_MAX_BYTES:
                    self.log(f"  sass/{f} left out: over {SASS_MAX_BYTES} bytes")
                    os.remove(os.path.join(sass, f))
        old, new = os.path.join(self.fix, "mma_truth"), os.path.join(self.fix, MMA_DIR)
        if os.path.isdir(old) and not os.path.exists(new):
            os.rename(old, new)

    def ncu_stage(self):
        if self.dry:
            self.log("  dry run: ncu commands would be:")
            for name, args in PROFILED:
                self.log(f"    {self.ncu or 'ncu'} --clock-control none --target-processes all --replay-mode kernel "
                         f"--section LaunchStats --section Occupancy --metrics <{len(CORE_METRICS + EXTRA_METRICS)} "
                         f"probed> --kernel-name {KERNEL_REGEX} --export {name}.ncu-rep --force-overwrite "
                         f"--log-file {name}.ncu-log.txt {name} {' '.join(args)}")
                self.log(f"    {self.ncu or 'ncu'} --import {name}.ncu-rep --csv --page raw --print-units base")
            return "skipped: dry run"
        if not self.ncu:
            return "ncu not found"
        metrics, info = self.probe_metrics()
        self.write("ncu_metric_selection.json", info)
        summary = []
        for name, args in PROFILED:
            if name not in self.binaries:
                summary.append(f"{name}: not built")
                continue
            left = self.remaining() - 60  # leave room for timing and packing
            if left < 20:
                summary.append(f"{name}: skipped (deadline)")
                self.log(f"  {name}: skipped, {self.remaining():.0f}s left")
                continue
            rc, csv_text, launches, ncu_log = self.ncu_run(name, args, metrics, min(200, left))
            if (csv_text is None or rc != 0) and metrics != SAFE_METRICS and "metric" in (ncu_log or "").lower():
                self.log(f"  {name}: ncu rc={rc} mentioning metrics; retrying with the core list")
                rc, csv_text, launches, ncu_log = self.ncu_run(name, args, SAFE_METRICS,
                                                               min(200, self.remaining() - 60))
            nk = self.parse_ncu_csv(name, csv_text, launches) if csv_text else 0
            summary.append(f"{name}: {nk} kernels rc={rc}")
            self.log(f"  {name}: {nk} kernels profiled, rc={rc}")
            self.write_ncu_csv()
            self.pack()
        return "; ".join(summary)

    def write_ncu_csv(self):
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["program", "kernel", "ncu_id", "metric", "value", "unit"])
        w.writerows(self.ncu_rows)
        self.write("ncu_metrics.csv", buf.getvalue())
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["program", "kernel", "launch_config", "ncu_id", "ncu_kernel_name"])
        w.writerows(self.ncu_kernels)
        self.write("ncu_kernels.csv", buf.getvalue())
        self.write("ncu_device_attributes.json", self.ncu_device)

    # ------------------------------------------------------------------ mma_truth
    def mma_stage(self):
        if not os.path.isfile(os.path.join(HERE, "mma_truth.cu")):
            return "skipped: jaxsimt/kernels/cuda/mma_truth.cu not present"
        exe = self.binaries.get("mma_truth")
        if not exe:
            return "not built (see build_logs/mma_truth.txt)"
        if self.dry:
            self.log(f"  dry run: would run {exe} <fixtures>/{MMA_DIR}")
            return "skipped: dry run"
        outdir = os.path.join(self.fix, MMA_DIR)
        os.makedirs(outdir, exist_ok=True)
        rc, so, se = self.sh([exe, outdir], min(120, self.remaining() - 90))
        self.write(f"{MMA_DIR}/run_log.txt", f"rc={rc}\n--- stdout\n{so}\n--- stderr\n{se}")
        self.checks.append({"program": "mma_truth", "kernel": "*", "mode": "run", "ok": rc == 0,
                            "detail": f"rc={rc}"})
        self.write("checks.json", self.checks)
        return f"rc={rc}, {len(os.listdir(outdir))} files"

    # ------------------------------------------------------------------ timing
    def timing_stage(self):
        exe = self.binaries.get("gemm_ladder")
        if not exe:
            return "no gemm_ladder binary"
        if self.dry:
            self.log(f"  dry run: would run {exe} --time {self.time_sizes}")
            return "skipped: dry run"
        rc, so, se = self.sh([exe, "--time", self.time_sizes, "--budget-ms", "500", "--skip-ms", "1500"],
                             min(300, self.remaining() - 15))
        ev = self.parse_events(so)
        self.timings = [e for e in ev if e.get("event") in ("timing", "cublas")]
        self.write("timings.json", {"sizes": self.time_sizes, "method": "CUDA events around each launch; one "
                                    "warm-up (checked on 512 sampled entries), then median of min(20, max(3, "
                                    "500 ms / warm-up)) repeats; a variant is skipped at a size when its median "
                                    "at the previous size predicts more than 1500 ms per run",
                                    "rc": rc, "results": self.timings, "stderr_tail": se[-2000:]})
        n = sum(1 for e in self.timings if e.get("event") == "timing" and not e.get("skipped"))
        return f"rc={rc}, {n} timed"

    # ------------------------------------------------------------------ summary
    def summary(self):
        L = []
        L.append("=" * 78)
        L.append(f"H200 collection summary  (elapsed {self.elapsed():.0f}s, dry_run={self.dry})")
        L.append(f"fixtures: {os.path.join(self.out, 'h200_fixtures.tar.gz')}  -> tar xzf ... -C jaxsimt/data/")
        L.append("-" * 78)
        for name, status, dt in self.stages:
            L.append(f"{name:<11} {dt:6.1f}s  {status[:58]}")
        if self.checks:
            L.append("-" * 78)
            progs = {}
            for c in self.checks:
                k = (c["program"], c["mode"])
                progs.setdefault(k, [0, 0])
                progs[k][0 if c["ok"] else 1] += 1
            L.append("checks: " + "  ".join(f"{p}/{m} {a}ok {b}FAIL" if b else f"{p}/{m} {a}ok"
                                            for (p, m), (a, b) in progs.items()))
            for c in [c for c in self.checks if not c["ok"]][:12]:
                L.append(f"  FAIL {c['program']}/{c['kernel']}: {str(c.get('detail'))[:60]}")
        if self.ncu_rows:
            L.append("-" * 78)
            want = {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "sh_ld_wf",
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "sh_ld_cf",
                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "sh_st_wf",
                    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "g_ld_req",
                    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "g_ld_sec",
                    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "g_st_sec",
                    "smsp__sass_branch_targets_threads_divergent.sum": "div_br",
                    "launch__registers_per_thread": "regs",
                    "gpu__time_duration.sum": "ns"}
            table = {}
            for prog, k, _id, metric, val, _u in self.ncu_rows:
                if metric in want:
                    table.setdefault((prog, k), {})[want[metric]] = val
            cols = list(want.values())
            L.append(f"{'kernel':<28}" + "".join(f"{c:>9}" for c in cols))
            pick = ("smem_stride_s1", "smem_stride_s2", "smem_stride_s32", "smem_stride_s33", "smem_elem_16B_float4",
                    "smem_tile_col", "smem_tile_col_pad", "smem_broadcast", "smem_pred_active0",
                    "smem_reduce_interleaved", "smem_reduce_sequential", "glob_ld_stride1", "glob_ld_stride32",
                    "glob_ld_offset1", "glob_st_stride2", "div_halfwarp", "div_nested", "div_loop",
                    "naive_uncoalesced", "naive_coalesced", "smem_tiled", "coarsened", "register_tiled", "wmma")
            for (prog, k), d in table.items():
                if k in pick:
                    L.append(f"{k[:28]:<28}" + "".join(f"{str(d.get(c, '-'))[:8]:>9}" for c in cols))
        ts = [e for e in self.timings if e.get("event") == "timing"]
        if ts:
            L.append("-" * 78)
            sizes = sorted({e["size"] for e in ts})
            variants = []
            for e in ts:
                if e["variant"] not in variants:
                    variants.append(e["variant"])
            L.append(f"{'GEMM ms (TFLOP/s)':<20}" + "".join(f"{s:>19}" for s in sizes))
            for v in variants:
                cells = []
                for s in sizes:
                    e = next((x for x in ts if x["size"] == s and x["variant"] == v), None)
                    if e is None:
                        cells.append("-")
                    elif e.get("skipped"):
                        cells.append("skipped")
                    else:
                        cells.append(f"{e['median_ms']:.3f} ({e['tflops']:.1f})" + ("" if e.get("check_ok") else "!"))
                L.append(f"{v:<20}" + "".join(f"{c:>19}" for c in cells))
        L.append("=" * 78)
        return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output folder (at most three files are written there); required unless --retidy")
    ap.add_argument("--dry-run", action="store_true", help="build and list only; run nothing on a GPU")
    ap.add_argument("--deadline", type=float, default=510.0, help="seconds for the whole collection (default 510)")
    ap.add_argument("--time-sizes", default=TIME_SIZES, help="square GEMM sizes to time (default 1024,2048,4096)")
    ap.add_argument("--skip", default="", help="comma-separated stages to leave out")
    ap.add_argument("--keep-ncu-rep", action="store_true", help="also keep ncu's .ncu-rep reports (large)")
    ap.add_argument("--retidy", metavar="FIXDIR", help="rewrite an existing fixtures folder (e.g. "
                    "jaxsimt/data/h200) to the current layout from its ncu_raw/ files; runs no GPU")
    args = ap.parse_args()
    if not args.out and not args.retidy:
        ap.error("--out is required")
    if args.retidy and not args.out:
        args.out = tempfile.mkdtemp(prefix="jaxsimt_retidy_")
    c = Collector(args.out, args.dry_run, args.deadline, args.time_sizes, args.keep_ncu_rep)
    if args.retidy:
        c.retidy(args.retidy)
        shutil.rmtree(c.work, ignore_errors=True)
        return 0
    skip = set(filter(None, args.skip.split(",")))
    c.log(f"collection starts: repo {REPO}, work folder {c.work}, out {c.out}, deadline {args.deadline:.0f}s")
    stages = [("provenance", c.provenance, 5), ("build", c.build_all, 30), ("registry", c.registry_stage, 5),
              ("device", c.device_stage, 10), ("checks", c.checks_stage, 20), ("ncu", c.ncu_stage, 60),
              ("mma_truth", c.mma_stage, 30), ("timing", c.timing_stage, 30)]
    try:
        for name, fn, need in stages:
            if name in skip:
                c.stages.append((name, "skipped: --skip", 0.0))
                continue
            c.stage(name, fn, need)
    finally:
        text = c.summary()
        try:
            with open(os.path.join(c.out, "summary.txt"), "w") as f:
                f.write(text + "\n")
            c.write("summary.txt", text + "\n")
        except Exception:  # noqa: BLE001
            pass
        c.pack()
        shutil.rmtree(c.work, ignore_errors=True)
        print(text, flush=True)
    bad = [s for s in c.stages if s[1].startswith(("error", "failed"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
