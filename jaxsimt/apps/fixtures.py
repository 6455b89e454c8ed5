"""Hardware ground truth: loaders for the committed measurements in `jaxsimt/data/<arch>/`.

The files are package data, so these loaders work from a source checkout and from an installed wheel.
Each returns plain Python/numpy structures (no pandas):

| loader | file | returns |
|---|---|---|
| `device_props(arch)` | `device_props.json` | dict of cudaDeviceProp fields |
| `registry(arch)` | `registry.json` | program -> list of {kernel, config} |
| `ncu_kernels(arch)` | `ncu_kernels.csv` | kernel -> `NcuKernel` (program, grid, block, dyn smem, parameters) |
| `ncu_metrics(arch)` | `ncu_metrics.csv` | kernel -> {metric: value} (int where integral, else float or str) |
| `occupancy_sweep(arch)` | `occupancy_sweep.csv` | column -> numpy array (one entry per configuration) |
| `timings(arch)` | `timings.json` | (variant, size) -> timing record |

A missing file raises `FixtureNotFound` (a `FileNotFoundError`) naming the file and the architectures that
have fixtures. Results are cached per architecture; treat them as read-only.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Union

import numpy as np

Number = Union[int, float]


class FixtureNotFound(FileNotFoundError):
    """A hardware fixture file is not there (not collected for this architecture, or not installed)."""


def _data_root():
    return resources.files("jaxsimt").joinpath("data")


def available_archs() -> list[str]:
    """Architectures with a fixtures folder (lowercase names)."""
    root = _data_root()
    try:
        return sorted(p.name for p in root.iterdir() if p.is_dir() and p.joinpath("README.md").is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []


def path(arch: str, name: str):
    """The fixture file `name` of `arch` (a Traversable; `str()` gives a path for a normal install)."""
    arch = str(arch).lower()
    p = _data_root().joinpath(arch, *name.split("/"))
    if not p.is_file():
        have = ", ".join(available_archs()) or "none"
        raise FixtureNotFound(
            f"no hardware fixture {name!r} for arch {arch!r} (looked in jaxsimt/data/{arch}/; architectures "
            f"with fixtures: {have})")
    return p


def _text(arch: str, name: str) -> str:
    return path(arch, name).read_text(encoding="utf-8")


def _json(arch: str, name: str):
    return json.loads(_text(arch, name))


def _csv(arch: str, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_text(arch, name))))


def _number(s: str) -> Union[Number, str]:
    """'12' -> 12, '1.5' -> 1.5, '1,399' -> 1399; anything else stays a string."""
    t = s.strip().replace(",", "")
    try:
        return int(t)
    except ValueError:
        pass
    try:
        v = float(t)
    except ValueError:
        return s
    return int(v) if v.is_integer() and abs(v) < 2**53 and "." not in t and "e" not in t.lower() else v


@functools.lru_cache(maxsize=None)
def device_props(arch: str = "h200") -> dict:
    """cudaDeviceProp fields measured on the device (`device_props.json`)."""
    return _json(arch, "device_props.json")


@functools.lru_cache(maxsize=None)
def registry(arch: str = "h200") -> dict[str, list[dict]]:
    """program -> [{'kernel': name, 'config': text}], every profiled kernel in registry order."""
    raw = _json(arch, "registry.json")
    return {prog: [{"kernel": e["kernel"], "config": e.get("config", "")} for e in entries]
            for prog, entries in raw.items()}


@dataclass(frozen=True)
class NcuKernel:
    """One profiled launch: its program, fixed launch configuration and parameters."""

    program: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dyn_smem: int
    params: dict = field(default_factory=dict)  # e.g. {'p': 4, 'elem_bytes': 4}
    ncu_id: int = -1
    ncu_kernel_name: str = ""

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


_TRIPLE = re.compile(r"(grid|block)=\((\d+),\s*(\d+),\s*(\d+)\)")


def _launch_config(text: str):
    dims = {m.group(1): tuple(int(m.group(i)) for i in (2, 3, 4)) for m in _TRIPLE.finditer(text)}
    rest = _TRIPLE.sub("", text)
    params = {}
    for tok in rest.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            params[k] = _number(v)
    dyn = int(params.pop("dyn_smem", 0))
    return dims.get("grid", (1, 1, 1)), dims.get("block", (1, 1, 1)), dyn, params


@functools.lru_cache(maxsize=None)
def ncu_kernels(arch: str = "h200") -> dict[str, NcuKernel]:
    """kernel name -> NcuKernel, in profiling order (`ncu_kernels.csv`)."""
    out: dict[str, NcuKernel] = {}
    for row in _csv(arch, "ncu_kernels.csv"):
        grid, block, dyn, params = _launch_config(row["launch_config"])
        out[row["kernel"]] = NcuKernel(row["program"], row["kernel"], grid, block, dyn, params,
                                       int(row["ncu_id"]), row["ncu_kernel_name"])
    return out


@functools.lru_cache(maxsize=None)
def ncu_metrics(arch: str = "h200") -> dict[str, dict[str, Union[Number, str]]]:
    """kernel name -> {metric name: value} (`ncu_metrics.csv`; counts as int, ratios as float)."""
    out: dict[str, dict] = {}
    for row in _csv(arch, "ncu_metrics.csv"):
        out.setdefault(row["kernel"], {})[row["metric"]] = _number(row["value"])
    return out


def metric(kernel: str, name: str, arch: str = "h200") -> Union[Number, str]:
    """One measured metric of one kernel; KeyError naming what is missing."""
    table = ncu_metrics(arch)
    if kernel not in table:
        raise KeyError(f"no ncu measurements for kernel {kernel!r} on {arch}")
    if name not in table[kernel]:
        raise KeyError(f"metric {name!r} was not measured for kernel {kernel!r} on {arch}")
    return table[kernel][name]


_SWEEP_STR = ("kernel", "status")


@functools.lru_cache(maxsize=None)
def occupancy_sweep(arch: str = "h200") -> dict[str, np.ndarray]:
    """column -> array over the sweep's configurations (`occupancy_sweep.csv`).

    Columns: kernel, status (str); target_regs, num_regs (actual registers per thread),
    attr_max_threads_per_block, static_smem, local_bytes, max_dyn_smem_attr, threads_per_block, dyn_smem,
    blocks_per_sm (what cudaOccupancyMaxActiveBlocksPerMultiprocessor returned), active_warps_per_sm (int64).
    """
    lines = [ln for ln in _text(arch, "occupancy_sweep.csv").splitlines() if ln.strip()]
    if len(lines) < 2:
        raise ValueError(f"occupancy_sweep.csv for {arch} has no rows")
    header = lines[0].split(",")
    n_tail = len(header) - 1
    rows = []
    for ln in lines[1:]:
        # The kernel name is a C++ template id with unquoted commas (`pressure_capped<128, 72>`): every
        # other column is a plain token, so split those off the right.
        parts = ln.rsplit(",", n_tail)
        if len(parts) != len(header):
            raise ValueError(f"occupancy_sweep.csv for {arch}: cannot parse row {ln!r}")
        rows.append(parts)
    cols: dict[str, np.ndarray] = {}
    for j, name in enumerate(header):
        vals = [r[j].strip() for r in rows]
        cols[name] = np.array(vals) if name in _SWEEP_STR else np.array([int(v) for v in vals], np.int64)
    return cols


@functools.lru_cache(maxsize=None)
def timings(arch: str = "h200") -> dict[tuple[str, int], dict]:
    """(variant, size) -> {'median_ms', 'min_ms', 'max_ms', 'tflops', 'reps', 'check_ok', 'skipped', ...}
    for the GEMM ladder rungs and cuBLAS (`timings.json`)."""
    raw = _json(arch, "timings.json")
    out = {}
    for r in raw.get("results", []):
        if r.get("event") == "timing":
            rec = {k: v for k, v in r.items() if k not in ("event", "variant", "size")}
            out[(r["variant"], int(r["size"]))] = rec
    return out


@functools.lru_cache(maxsize=None)
def ladder_ncu(arch: str = "h200") -> dict[tuple[str, int], dict[str, float]]:
    """(rung, size) -> {metric: value} of the GEMM ladder at its timed sizes under Nsight Compute
    (`ladder_ncu/ladder_ncu.csv`, `jaxsimt/kernels/cuda/ladder_ncu_h200.py`): duration (ns), the busiest SM's
    active cycles, the SM clock (Hz), warp instructions issued, achieved occupancy and the stall reasons per
    issued instruction."""
    out: dict = {}
    for r in _csv(arch, "ladder_ncu/ladder_ncu.csv"):
        out.setdefault((r["rung"], int(r["size"])), {})[r["metric"]] = float(r["value"])
    return out


@functools.lru_cache(maxsize=None)
def micro_repeat(arch: str = "h200", mode: str = "warm") -> dict[str, dict[str, list[float]]]:
    """kernel -> {metric: [value per repeat]} of the micro-kernels (micro_global, micro_shared,
    micro_divergence) profiled again and again (`micro_repeat/micro_repeat_<mode>.csv.gz`,
    `jaxsimt/kernels/cuda/micro_repeat_h200.py`; mode warm: the second of two passes over each program's
    kernels, cold: a fresh process's only pass)."""
    import gzip

    text = gzip.decompress(path(arch, f"micro_repeat/micro_repeat_{mode}.csv.gz").read_bytes()).decode()
    out: dict = {}
    for r in csv.DictReader(io.StringIO(text)):
        out.setdefault(r["kernel"], {}).setdefault(r["metric"], []).append(float(r["value"]))
    return out


def kernels_of(program: str, arch: str = "h200") -> list[str]:
    """Kernel names of one program (micro_shared, micro_global, micro_divergence, gemm_ladder)."""
    return [k for k, v in ncu_kernels(arch).items() if v.program == program]


@functools.lru_cache(maxsize=None)
def timing_micro(arch: str = "h200") -> dict[str, dict]:
    """name -> {'value', 'unit', 'param', 'detail'}: the timing model's micro-benchmarks
    (`jaxsimt/kernels/cuda/micro_timing.cu`, `timing_micro/micro_timing.jsonl` and `atomics.jsonl`): latencies
    in cycles, rates per SM or per chip, empty-kernel launch times in microseconds; `param` names the
    `arch.Timing` field a measurement gives (empty where it gives none)."""
    out = {}
    text = _text(arch, "timing_micro/micro_timing.jsonl")
    try:  # the global atomics, measured in a later run
        text += "\n" + _text(arch, "timing_micro/atomics.jsonl")
    except FixtureNotFound:
        pass
    for line in text.splitlines():
        if line.strip().startswith("{"):
            r = json.loads(line)
            out[r.pop("name")] = r
    try:
        out.update(_l1_rates(arch))
    except FixtureNotFound:
        pass
    return out


@functools.lru_cache(maxsize=None)
def issue_micro_runs(name: str = "issue_micro/micro_issue.jsonl", arch: str = "h200") -> list[dict]:
    """Runs of the issue micro-benchmarks (`jaxsimt/kernels/cuda/micro_issue.cu`) from one of their JSON-lines
    files, one dict per run: group ("regbank", "icache", "loaded", "span"), kernel, sm_cycles (the median
    repeat's busiest SM), iters, and the group's own fields (loaded: level, lanes, warps_per_sm; span: also
    stride_lines)."""
    return [json.loads(ln) for ln in _text(arch, name).splitlines()
            if ln.strip().startswith("{") and '"group":"device"' not in ln.replace(" ", "")]


def issue_micro(arch: str = "h200") -> list[dict]:
    """The H200's issue micro-benchmark runs (`issue_micro/micro_issue.jsonl`; `issue_micro_runs`)."""
    return issue_micro_runs("issue_micro/micro_issue.jsonl", arch)


def l1_rates(arch: str = "h200") -> dict[str, dict]:
    """The L1 hit path by request shape (kernels/cuda/l1_rate.cu: `timing_micro/l1_rate_events.csv`, runs
    averaged, and ncu's counts per launch in `l1_rate_ncu.csv`): shape -> {'sectors', 'lines' (ncu's
    l1tex__data_pipe_lsu_wavefronts per request), 'tag_wavefronts' (l1tex__t_output_wavefronts per request),
    'cycles_per_request' (SM cycles, CUDA events at the clock the run assumed)}."""
    lines = _text(arch, "timing_micro/l1_rate_events.csv").splitlines()
    head = lines[0].split(",")  # each run wrote its own header line
    rows = [dict(zip(head, ln.split(","))) for ln in lines if ln.strip() and ln != lines[0]]
    ncu = {}
    for r in csv.DictReader(io.StringIO(_text(arch, "timing_micro/l1_rate_ncu.csv"))):
        ncu[(r["kernel"], r["metric"])] = float(r["median"])
    out = {}
    for shape in dict.fromkeys(r["shape"] for r in rows):
        req = ncu[(shape, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")]
        out[shape] = {
            "sectors": ncu[(shape, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")] / req,
            "lines": ncu[(shape, "l1tex__data_pipe_lsu_wavefronts.sum")] / req,
            "tag_wavefronts": ncu[(shape, "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum")] / req,
            "cycles_per_request": float(np.mean([1.0 / float(r["requests_per_sm_cycle"]) for r in rows
                                                 if r["shape"] == shape]))}
    return out


def _l1_rates(arch: str) -> dict[str, dict]:
    """timing_micro records of the L1 hit path (`l1_rates`): the SM cycles per line of global loads whose
    lanes each read their own line (the data stage's rate for global accesses, no param: the model takes
    the shared pipe's measured rate for it, and this checks it)."""
    r = l1_rates(arch)["lines_32_1"]
    return {"l1_global_cycles_per_line": {
        "value": r["cycles_per_request"] / r["lines"], "unit": "cycles", "param": "",
        "detail": "LDG.32 hitting L1, each lane its own line (32 per request), 64 warps per SM (l1_rate.cu)"}}
