"""The suite corpus on jaxsimt against the H200: run a case's host driver on the emulator, and compare its
outputs (bit for bit) and counters (per kernel, summed over the case's launches) with the committed ground
truth in jaxsimt/data/h200/suites/ (jaxsimt/kernels/suites/run_gpu.py wrote it on an H200).

Counters compared exactly (`EXACT`): global load/store requests and sectors, shared load/store wavefronts
and bank conflicts, registers per thread (ptxas's report of the PTX, jaxsimt/kernels/suites/*.ptxas.txt, at least the
architecture's minimum, passed as `regs=`) and theoretical occupancy. Reported beside them (`INFO`): warp
and thread instructions and divergent branch targets, which ncu counts on the SASS that ptxas makes of the
PTX and jaxsimt on the PTX itself (docs/suites.md says where and why they differ).
"""
from __future__ import annotations

import csv
import functools
import json
import os
import time
from dataclasses import dataclass, field

import numpy as np

import jaxsimt
from jaxsimt.arch import get_arch
from jaxsimt.kernels import suites as S
from jaxsimt.kernels.real_cuda import JaxsimtBackend, agreement
from jaxsimt.apps.validate import EXACT_METRICS, OCCUPANCY_METRIC

FIXTURES = os.path.join(os.path.dirname(jaxsimt.__file__), "data", "h200", "suites")
REGISTERS = "launch__registers_per_thread"
EXACT = tuple(EXACT_METRICS) + (REGISTERS, OCCUPANCY_METRIC)
INFO = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
        "smsp__sass_branch_targets_threads_divergent.sum")
_PER_LAUNCH = (REGISTERS, OCCUPANCY_METRIC)  # a property of the kernel, not summed over launches


@dataclass
class CaseRun:
    """One case's host driver run on jaxsimt: outputs and numpy reference {name: array}, every launch's
    (kernel, stats) in order, and the wall seconds of the run."""

    suite: str
    case: str
    outputs: dict
    reference: dict
    launches: list
    seconds: float
    reference_ok: dict = field(default_factory=dict)
    launch_seconds: list = field(default_factory=list)  # wall seconds of each launch


def registers(suite: str, arch: str = "h200") -> dict:
    """{kernel: registers per thread}: ptxas's count of the suite's PTX, at least the architecture's
    `min_registers_per_thread` (what the driver gives the kernel)."""
    low = get_arch(arch).min_registers_per_thread
    return {k: max(v, low) for k, v in S.ptxas_registers(suite).items()}


def run(suite: str, case: str, **launch_kwargs) -> CaseRun:
    """Run `case` of `suite` through its host driver on jaxsimt (keywords go to every `jaxsimt.ptx.launch`)."""
    mod = S.module(suite)
    be = JaxsimtBackend(S.ptx_path(suite), regs_of=registers(suite, launch_kwargs.get("arch", "h200")),
                        **launch_kwargs)
    t0 = time.perf_counter()
    out, ref = mod.run(be, case)
    dt = time.perf_counter() - t0
    tol = mod.TOLERANCE.get(case, 0)
    ok = {k: S.close(out[k], ref[k], tol) for k in ref}
    return CaseRun(suite, case, {k: np.asarray(v) for k, v in out.items()}, ref, list(be.launches), dt, ok,
                   list(be.seconds))


@functools.lru_cache(maxsize=None)
def _npz():
    with np.load(os.path.join(FIXTURES, "suites.npz")) as f:
        return {k: f[k] for k in f.files}


@functools.lru_cache(maxsize=None)
def runs_record() -> dict:
    """suites_runs.json: {suite: {case: {launches, seconds, reference, error?}}} of the H200 run."""
    with open(os.path.join(FIXTURES, "suites_runs.json")) as f:
        return json.load(f)


class _Stop(Exception):
    """Raised at a program's first launch: its driver stops there."""


class _FirstLaunchBackend(JaxsimtBackend):
    """The jaxsimt backend that runs only a program's first launch, with extra launch keywords, and then
    stops the driver (a later launch reads what earlier ones wrote, which a partial run does not compute)."""

    def __init__(self, ptx_path, first_kwargs, **kw):
        super().__init__(ptx_path, **kw)
        self.first_kwargs, self.result = first_kwargs, None

    def launch(self, name, grid, block, args, smem=0):
        kw = {**self.launch_kwargs(name), **self.first_kwargs}
        self.result = self.P.launch(self.ptx, name, grid, block, list(args), dynamic_smem=int(smem), **kw)
        raise _Stop


def first_launch(suite: str, case: str, size=None, **launch_kwargs):
    """The LaunchResult of the first launch of `case` at `size` (its driver's keyword arguments; None: the
    default size), launched with the suite's ptxas registers and `launch_kwargs` (e.g. `ctas=[0],
    timing=True`: the timing model without running the whole grid)."""
    mod = S.module(suite)
    be = _FirstLaunchBackend(S.ptx_path(suite), launch_kwargs, regs_of=registers(suite))
    try:
        mod.run(be, case, size, reference=False)
    except _Stop:
        return be.result
    raise RuntimeError(f"{suite}.{case} launched nothing")


TIMING_FIXTURES = os.path.join(os.path.dirname(jaxsimt.__file__), "data", "h200", "suites_timing")


def timing_record() -> dict:
    """suites_timing_runs.json: {suite: {case: {size, launches (kernel, grid, block, smem, CUDA-event times in
    us), event_us_total_median, reference, ...}}} of the H200 run at the timing sizes (time_gpu.py)."""
    with open(os.path.join(TIMING_FIXTURES, "suites_timing_runs.json")) as f:
        return json.load(f)


def timing_ncu() -> dict:
    """{(suite, case): {launch index: {metric: value}}} of suites_timing.csv: Nsight Compute's time and cycles
    of the first launches of each case at its timing size."""
    out: dict = {}
    with open(os.path.join(TIMING_FIXTURES, "suites_timing.csv")) as f:
        for row in csv.DictReader(f):
            per = out.setdefault((row["suite"], row["case"]), {}).setdefault(int(row["launch"]), {})
            per[row["metric"]] = _num(row["value"])
    return out


def h200_outputs(suite: str, case: str) -> dict:
    pre = f"{suite}.{case}."
    return {k[len(pre):]: v for k, v in _npz().items() if k.startswith(pre)}


@functools.lru_cache(maxsize=None)
def _ncu() -> dict:
    out: dict = {}
    with open(os.path.join(FIXTURES, "suites_ncu.csv"), newline="") as f:
        for r in csv.DictReader(f):
            key = (r["suite"], r["case"])
            launches = out.setdefault(key, {})
            d = launches.setdefault(int(r["launch"]), {"kernel": r["kernel"]})
            v = float(r["value"])
            d[r["metric"]] = int(v) if v.is_integer() else v
    return out


def h200_launches(suite: str, case: str) -> list:
    """[(kernel, {metric: value})] of the case's profiled launches, in launch order."""
    d = _ncu().get((suite, case), {})
    return [(d[i]["kernel"], {k: v for k, v in d[i].items() if k != "kernel"}) for i in sorted(d)]


def _per_kernel(launches, metrics):
    """{kernel: {metric: value}}: counts summed over the kernel's launches; registers and occupancy of its
    first launch (None where a metric is missing)."""
    out: dict = {}
    for kernel, stats in launches:
        d = out.setdefault(kernel, {})
        for m in metrics:
            v = stats.get(m)
            if m in _PER_LAUNCH:
                d.setdefault(m, v)
            elif v is None or (m in d and d[m] is None):
                d[m] = None
            else:
                d[m] = d.get(m, 0) + v
    return out


@dataclass
class Row:
    """One (kernel, counter) pair: the H200's value, jaxsimt's, and whether it is compared exactly."""

    suite: str
    case: str
    kernel: str
    metric: str
    hardware: object
    emulator: object
    exact: bool

    @property
    def ok(self) -> bool:
        if isinstance(self.hardware, float) or isinstance(self.emulator, float):
            return self.hardware is not None and self.emulator is not None and \
                abs(float(self.hardware) - float(self.emulator)) < 1e-6
        return self.hardware == self.emulator


def compare_counters(r: CaseRun) -> list:
    """Rows per kernel of the case for every EXACT and INFO counter (jaxsimt's stats vs the H200's ncu)."""
    metrics = EXACT + INFO
    emu = _per_kernel([(k, {m: _num(s.get(m)) for m in metrics}) for k, s in r.launches], metrics)
    hw = _per_kernel(h200_launches(r.suite, r.case), metrics)
    rows = []
    for kernel in emu:
        for m in metrics:
            rows.append(Row(r.suite, r.case, kernel, m, hw.get(kernel, {}).get(m), emu[kernel].get(m), m in EXACT))
    return rows


def _num(v):
    if v is None:
        return None
    v = float(v)
    return int(v) if v.is_integer() else v


def compare_outputs(r: CaseRun) -> dict:
    """{output: (bit-equal elements, elements)} of the run against the H200's outputs."""
    want = h200_outputs(r.suite, r.case)
    return agreement(want, r.outputs)
