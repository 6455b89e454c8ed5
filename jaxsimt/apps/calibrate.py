"""Calibration of the cycle-level model's parameters against the committed H200 measurements (optax).

Samples: every profiled micro-kernel (`jaxsimt/data/h200/ncu_metrics.csv`: the busiest SM's active cycles
`sm__cycles_active.max` and the kernel time `gpu__time_duration.sum`), the GEMM ladder at 256^3 (same
metrics) and the ladder at 1024^3, 2048^3 and 4096^3 (`timings.json`: median of CUDA-event timings; and the
busiest SM's active cycles under ncu, `ladder_ncu/`).
Every sample is traced from the PTX the H200 ran (`jaxsimt.kernels.collection`, `ladder.trace_rung`).

Split (held out by kernel family and by size, never by chance):
* train: the micro_shared and micro_divergence families and the ladder at 256^3 (ncu);
* held out: the whole micro_global family, and the ladder at 1024^3, 2048^3 and 4096^3 (CUDA events and ncu
  cycles).

The fit minimises the squared log error of the predicted busiest-SM cycles over the training samples,
each family weighing the same (plus, with a smaller weight, of their kernel times, which fixes the launch
overhead), with Adam. Each parameter is fitted as a log-scale offset from the architecture's starting value,
squashed to within a factor MAX_FACTOR of it, with an L2 pull toward it (parameters move only as far as the
data asks); the L2 and DRAM latencies are fitted as increments over the level above, so that the memory
hierarchy stays ordered. Gradients come from `jax.grad` through the replay.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt.timing import interval
from jaxsimt.timing import replay as timing
from jaxsimt.timing import l1tags
from jaxsimt.timing import trace as tr
from jaxsimt.arch import get_arch

TRAIN_FAMILIES = ("micro_shared", "micro_divergence")
HELD_OUT_FAMILIES = ("micro_global",)
LADDER_TRAIN_SIZES = (256,)
LADDER_HELD_OUT_SIZES = (1024, 2048, 4096)
# The suite corpus at timing sizes (family "suites"): whole suites are held out, chosen before any fit on it
SUITES_TRAIN = ("cuda_samples", "polybench")
SUITES_HELD_OUT = ("rodinia", "parboil", "shoc")
# parameters the fit moves (the clock and the structural rates of the analytical model stay)
FIT = ("alu_latency", "fma_latency", "sfu_latency", "tensor_latency", "shared_latency", "l1_latency", "l2_latency",
       "dram_latency", "branch_latency", "barrier_latency", "alu_issue", "fp32_issue", "sfu_issue", "tensor_issue",
       "lsu_issue", "control_issue", "alu_dispatch_cycles",
       "mio_queue_cycles", "lsu_queue_cycles", "block_launch_cycles", "launch_overhead_us", "l2_bytes_per_cycle",
       "dram_gbytes_per_s", "tensor_flops_per_cycle_per_sm")
# parameters held at their micro-benchmark measurement, not fitted: the L1TEX data pipe's rate is measured
# directly (32-way conflicted shared loads), and global sectors pass the same pipe, so a fitted rate would
# trade the shared kernels' time against the global ones' (docs/timing.md, the L1TEX data stage); the block
# dispatch rate is measured on empty blocks, and the calibration's kernels run too few blocks per SM to see it
HELD = ("shared_cycles_per_wavefront", "block_dispatch_cycles")


@dataclass
class Sample:
    """One measured launch: its replay and what the H200 measured."""

    name: str
    family: str  # micro_shared | micro_global | micro_divergence | ladder | suites
    size: int  # GEMM size (0 for micro-kernels)
    split: str  # train | held_out
    work: timing.Work
    cycles: Optional[float]  # measured busiest-SM active cycles (ncu), None where not measured
    ms: float  # measured kernel time


def _split(family: str, size: int, suite: str = "") -> str:
    if family == "suites":
        return "train" if suite in SUITES_TRAIN else "held_out"
    if family == "ladder":
        return "train" if size in LADDER_TRAIN_SIZES else "held_out"
    return "train" if family in TRAIN_FAMILIES else "held_out"


def micro_samples(arch: str = "h200", names=None, max_steps: Optional[int] = None,
                  l1: str = "footprint") -> list[Sample]:
    """The profiled micro-kernels as nvcc compiled them (`jaxsimt.kernels.collection`, the PTX the H200
    ran), each traced (every block) with the registers ptxas gave it, its L1 hits from `l1` (the committed
    fit used "footprint"; "tags": `jaxsimt.timing.l1tags`, each block on an SM of its own)."""
    from jaxsimt.run import launch_timing

    from jaxsimt.apps import fixtures
    from jaxsimt.kernels import collection

    hw_all = fixtures.ncu_metrics(arch)
    out = []
    for case in collection.CASES:
        name = case.name
        if not case.fixture or name not in hw_all or (names is not None and name not in names):
            continue
        hw = hw_all[name]
        r, _ = collection.launch(case, arch=arch, regs=int(hw["launch__registers_per_thread"]), trace=True,
                                 max_steps=200_000)
        R = int(r.stats["active_blocks_per_sm"])
        hit_l1 = first = None
        if l1 == "tags" and launch_timing.global_loads(r.program):
            ctas = np.arange(int(np.prod(r.grid)))
            hits, misses, firsts = launch_timing.l1_model(r, ctas, R, arch, r.stats)
            hit_l1, first = l1tags.hit_fractions(hits, misses), l1tags.first_share(firsts, misses)
        t = tr.from_launch(r, hit_l1=hit_l1, first_share=first)
        work = timing.plan(t, arch, R, max_steps=max_steps)
        out.append(Sample(name, case.program, 0, _split(case.program, 0), work, float(hw["sm__cycles_active.max"]),
                          float(hw["gpu__time_duration.sum"]) * 1e-6))
    return with_repeat_medians(out, arch)


def with_repeat_medians(samples: list, arch: str = "h200") -> list:
    """The micro-kernel samples with their measured cycles and time the medians of the repeated profiles
    (`fixtures.micro_repeat`, warm: 16 runs each) where the fixture has them: one run of a kernel of
    400-2000 cycles is off its median by 11-13% on average (docs/timing.md), so one run is a noisy target.
    Other samples, and all without the fixture, are returned as they are."""
    from jaxsimt.apps import fixtures

    try:
        rep = fixtures.micro_repeat(arch)
    except fixtures.FixtureNotFound:
        return samples
    out = []
    for s in samples:
        r = rep.get(s.name) if s.family.startswith("micro_") else None
        if r:
            s = dataclasses.replace(s, cycles=float(np.median(r["sm__cycles_active.max"])),
                                    ms=float(np.median(r["gpu__time_duration.sum"])) * 1e-6)
        out.append(s)
    return out


def ladder_samples(sizes=LADDER_TRAIN_SIZES + LADDER_HELD_OUT_SIZES, arch: str = "h200", rungs=None,
                   max_steps: Optional[int] = None) -> list[Sample]:
    """The GEMM ladder's rungs at `sizes` (256: ncu cycles and time; larger: CUDA-event times), traced from
    the PTX the H200 ran (`ladder.trace_rung`)."""
    from jaxsimt.apps import fixtures, ladder

    hw = fixtures.ncu_metrics(arch)
    meas = fixtures.timings(arch)
    try:
        lad = fixtures.ladder_ncu(arch)
    except fixtures.FixtureNotFound:
        lad = {}
    out = []
    for rung in ladder.rungs():
        if rungs is not None and rung.name not in rungs:
            continue
        for n in sizes:
            if n == 256:
                if rung.name not in hw:
                    continue
                cycles, ms = float(hw[rung.name]["sm__cycles_active.max"]), float(hw[rung.name]["gpu__time_duration.sum"]) * 1e-6
            else:
                rec = meas.get((rung.name, n))
                if rec is None or rec.get("median_ms") is None:
                    continue
                # the busiest SM's cycles where the size was profiled (held out like the time)
                cycles, ms = lad.get((rung.name, n), {}).get("sm__cycles_active.max"), float(rec["median_ms"])
            a = ladder.analyse(rung, n, n, n, arch)
            R = int(a["stats"]["active_blocks_per_sm"])
            # streams long enough for the window with the committed parameters
            _, work, _ = ladder.replay_rung(rung, n, n, n, arch, R, timing.params_of(arch), max_steps=max_steps)
            out.append(Sample(rung.name, "ladder", n, _split("ladder", n), work, cycles, ms))
    return out


def suite_sample(suite: str, case: str, arch: str = "h200", l1: str = "tags") -> Sample:
    """The first launch of a program of the suite corpus at its timing size (`jaxsimt.kernels.suites`),
    traced without running its whole grid (`harness.first_launch(..., ctas=[0], timing=True)`: one block for
    the launch's stats, then the blocks the replay needs), with the H200's Nsight Compute cycles and time of
    that launch (jaxsimt/data/h200/suites_timing/). Only the first launch: its inputs are the host's. l1: the
    L1 model (`LaunchOptions.l1`)."""
    from jaxsimt.kernels import suites as S
    from jaxsimt.kernels.suites import harness as H

    if get_arch(arch).name != "h200":
        raise ValueError(f"the suite corpus was timed on the h200, not on {arch}")
    ncu = H.timing_ncu()[(suite, case)][0]
    r = H.first_launch(suite, case, S.module(suite).TIMING.get(case), ctas=[0], timing=True, arch=arch, l1=l1)
    return Sample(f"{suite}.{case}", "suites", 0, _split("suites", 0, suite), r.timing["work"],
                  float(ncu["sm__cycles_active.max"]), float(ncu["gpu__time_duration.sum"]) * 1e-6)


# ---------------------------------------------------------------------------------------------
# Batched replay: samples of one compiled shape stacked on a leading axis
# ---------------------------------------------------------------------------------------------


@dataclass
class Group:
    shape: timing.Shape
    n_regs: int
    kernels: dict  # stacked kernel arrays [B, ...]
    queues: jnp.ndarray  # [B, M, Q]
    n_queue: jnp.ndarray
    share: jnp.ndarray
    total: jnp.ndarray
    index: list  # sample positions
    fast_shape: Optional[timing.Shape] = None  # the fast replay's shape (`timing.fast_steps` of the group)
    atomic_ops: Optional[np.ndarray] = None  # [B] each sample's busiest atomic sector's operations (Work.atomic_ops)
    caps: Optional[jnp.ndarray] = None  # [B] each sample's window (`timing.stack`)
    interval_shape: Optional[timing.Shape] = None  # the interval model's shape (`interval.steps` of the group)
    widths: tuple = ()  # the register operand columns the group's instructions use (`interval.operand_widths`)


def groups(samples: list[Sample], params: Optional[dict] = None, replay: str = "fast") -> list[Group]:
    """Stack samples into groups of one replay shape (warp/block slots, schedulers, steps), padding the
    per-kernel arrays, queues and simulated SMs to the group's largest. params: the steps of `replay` (the
    fast replay or the interval model) are those that cover each group's window with these parameters
    (`timing.stacked_replay`), else the estimates `timing.fast_steps` and `interval.steps`."""
    by = {}
    for i, s in enumerate(samples):
        w = s.work
        # the suite corpus's programs differ in size more than the calibration's kernels: a group of its own per
        # power of two of steps and of traced warps, so that one large program does not pad the others
        key = (w.shape.block_slots <= 8, w.shape.steps <= 1024) + (
            (int(w.shape.steps).bit_length(), int(np.asarray(w.kernel["pcs"]).shape[0]).bit_length())
            if s.family == "suites" else ())
        by.setdefault(key, []).append(i)
    out = []
    for idx in by.values():
        stacked = timing.stack([samples[i].work for i in idx])
        shape, n_regs, kern, queues, n_queue, share, total, caps = stacked
        steps = max(timing.fast_steps(dataclasses.replace(samples[i].work, shape=dataclasses.replace(
            samples[i].work.shape, inner=shape.inner))) for i in idx)
        iv_steps = min(shape.steps, max(interval.steps(samples[i].work) for i in idx))
        if params is not None:  # the steps that cover the windows with these parameters
            _, st = timing.stacked_replay([samples[i].work for i in idx], params, jnp.int32(1), replay,
                                          stacked=stacked, with_steps=True)
            steps, iv_steps = (st, iv_steps) if replay == "fast" else (steps, st)
        # the SMs split over the local devices (one per core on a CPU host started so): the fit's replays in parallel
        queues, n_queue, share, total = timing.sm_sharded(queues, n_queue, share, total, axis=1)
        out.append(Group(shape, n_regs, kern, queues, n_queue, share, total, idx,
                         dataclasses.replace(shape, steps=steps),
                         np.asarray([samples[i].work.atomic_ops for i in idx], np.float32), caps,
                         interval.shape_with(shape, iv_steps), interval.operand_widths(kern)))
    return out


def _group_cycles(params, g: Group, policy: int, replay: str = "exact"):
    if replay == "fast":
        f = lambda k, q, n, sh, to, cap: jnp.max(timing.replay_sms_fast(  # noqa: E731
            params, k, q, n, sh, to, policy, cap, g.fast_shape, g.n_regs)["cycles"])
    elif replay == "interval":
        f = lambda k, q, n, sh, to, cap: jnp.max(interval.replay_sms_interval(  # noqa: E731
            params, k, q, n, sh, to, policy, cap, g.interval_shape, g.n_regs, g.widths)["cycles"])
    else:
        f = lambda k, q, n, sh, to, cap: jnp.max(timing.replay_sms(  # noqa: E731
            params, k, q, n, sh, to, policy, g.shape, g.n_regs, cap)["cycles"])
    return timing.with_atomics(jax.vmap(f)(g.kernels, g.queues, g.n_queue, g.share, g.total, g.caps), g.atomic_ops,
                               params)


def predict_cycles(params: dict, gs: list[Group], n: int, policy: str = "gto", replay: str = "exact") -> jnp.ndarray:
    """Predicted cycles of every sample [n] (a differentiable function of params); replay: `timing.run`'s."""
    pol = jnp.int32(timing.POLICIES.index(policy))
    out = jnp.zeros(n, jnp.float32)
    for g in gs:
        out = out.at[jnp.asarray(g.index)].set(_group_cycles(params, g, pol, replay))
    return out


# ---------------------------------------------------------------------------------------------
# The fit
# ---------------------------------------------------------------------------------------------


def _targets(samples: list[Sample]):
    """(use cycles? [n], measured value [n]) — cycles where ncu measured them, else ms."""
    use_c = np.asarray([s.cycles is not None for s in samples])
    val = np.asarray([s.cycles if s.cycles is not None else s.ms for s in samples], np.float64)
    return use_c, val


def _tensor(samples: list[Sample]) -> np.ndarray:
    """[n] bool: the samples whose kernels issue Tensor Core instructions (their clock is the tensor one)."""
    return np.asarray([timing.uses_tensor(s.work) for s in samples])


def log_errors(params: dict, gs, samples: list[Sample]):
    cyc = predict_cycles(params, gs, len(samples))
    use_c, val = _targets(samples)
    pred = jnp.where(jnp.asarray(use_c), cyc, timing.predicted_ms(cyc, params, _tensor(samples)))
    return jnp.log(pred / jnp.asarray(val, jnp.float32))


# memory latencies are fitted as increments over the level above, so that L1 <= L2 <= DRAM always holds
LATENCY_LADDER = (("l2_latency", "l1_latency"), ("dram_latency", "l2_latency"))
MAX_FACTOR = 3.0  # no parameter moves further than this factor from its starting value


MEASURED_FACTOR = 1.5  # a parameter with a micro-benchmark measurement moves at most this factor from it


# measurements of the committed fixture that do not measure what they were meant to (see docs/timing.md), with why;
# none at present (the shared pipe's rate, once from a kernel whose loads ptxas hoisted, is now measured with
# 32-way bank-conflicted loads)
NOT_MEASURED: dict = {}


def launch_terms(arch: str = "h200") -> dict:
    """The launch and block-dispatch terms from the empty-kernel launches profiled with ncu
    (`timing_micro/ncu_launch.csv`): launch_overhead_us (a one-block launch's gpu__time_duration less its
    SM's active cycles at the clock), block_launch_cycles (that one empty block's sm__cycles_active.max: its
    dispatch to its exit) and block_dispatch_cycles (the slope of the busiest SM's active cycles over blocks
    per SM from 64 to 256 blocks per SM: one SM takes a new block at most this often)."""
    import csv
    import io

    from jaxsimt.apps import fixtures

    text = fixtures.path(arch, "timing_micro/ncu_launch.csv").read_text()
    rows = list(csv.DictReader(io.StringIO("".join(ln for ln in text.splitlines(True) if ln.startswith('"')))))
    num = lambda r, k: float(r[k].replace(",", ""))  # noqa: E731
    clock = float(fixtures.timing_micro(arch)["clock_ghz"]["value"])
    sms = int(fixtures.timing_micro(arch)["sms"]["value"])
    runs = [r for r in rows if r.get("Grid Size", "").startswith("(")]
    grid = lambda r: int(r["Grid Size"].strip("()").split(",")[0])  # noqa: E731
    one = [r for r in runs if grid(r) == 1]
    over = np.mean([num(r, "gpu__time_duration.sum") * 1e-3 - num(r, "sm__cycles_active.max") / (clock * 1e3)
                    for r in one])
    slopes = []
    for block in sorted({r["Block Size"] for r in runs}):
        pts = {grid(r) // sms: [] for r in runs if r["Block Size"] == block and grid(r) >= 64 * sms}
        for r in runs:
            if r["Block Size"] == block and grid(r) // sms in pts:
                pts[grid(r) // sms].append(num(r, "sm__cycles_active.max"))
        lo, hi = min(pts), max(pts)
        slopes.append((np.mean(pts[hi]) - np.mean(pts[lo])) / (hi - lo))
    return {"launch_overhead_us": float(over), "block_launch_cycles": float(np.mean([num(r, "sm__cycles_active.max")
                                                                                    for r in one])),
            "block_dispatch_cycles": float(np.mean(slopes))}


# the loaded-latency runs that set the latency's rise with a request's lines: at most this many warps per SM, where
# the chip's queues stay short (the DRAM's random-sector rate is reached near 16 warps of 32 lanes)
LOADED_MAX_WARPS = 4


def loaded_terms(arch: str = "h200") -> dict:
    """l2_latency_per_doubling and dram_latency_per_doubling from the pointer chases of 1, 4 and 32 lanes a warp
    (`fixtures.issue_micro`, group "loaded"): per level, a chase step's cycles (the median over 1 to
    LOADED_MAX_WARPS warps per SM) less what the L1TEX data stage and the SM's share of the L2 and DRAM bandwidth
    (their micro-benchmark measurements) take for its lines beyond one, least squares over log2(lanes); the DRAM
    rise is what it adds to L2's."""
    from jaxsimt.apps import fixtures

    m = {k: float(v["value"]) for k, v in fixtures.timing_micro(arch).items()}
    a = get_arch(arch)
    per_sm_cycle = 1.0 / (m["sms"] * a.sector_size)  # sectors per SM-cycle for a chip-wide byte rate
    rate = {"l2": m["l2_bytes_per_cycle"] * per_sm_cycle,
            "dram": m["dram_gbytes_per_s"] / m["clock_ghz"] * per_sm_cycle}
    slope = {}
    for level in ("l2", "dram"):
        rows = [r for r in fixtures.issue_micro(arch)
                if r["group"] == "loaded" and r["level"] == level and r["warps_per_sm"] <= LOADED_MAX_WARPS]
        lanes = sorted({r["lanes"] for r in rows})
        lat = [float(np.median([r["sm_cycles"] / r["iters"] for r in rows if r["lanes"] == n])) for n in lanes]
        stages = [max(n * m["shared_cycles_per_wavefront"], n / rate["l2"],
                      n / rate["dram"] if level == "dram" else 0.0) for n in lanes]
        x = np.log2(lanes)
        y = np.asarray(lat) - (np.asarray(stages) - stages[0])
        slope[level] = float(np.polyfit(x, y, 1)[0])
    return {"l2_latency_per_doubling": slope["l2"], "dram_latency_per_doubling": slope["dram"] - slope["l2"]}


def issue_terms(arch: str = "h200") -> dict:
    """branch_latency and lsu_issue from the branch and shuffle loops of `micro_issue.cu` ("branch", "mio"), run on
    an H100 80GB HBM3: the H200's SM (GH100, the same 1.98 GHz clock), where the two chips differ in their memory
    (`issue_micro/branch_mio_h100.jsonl`). branch_latency: a one-warp-a-scheduler loop's cycles an iteration (the
    median over bodies of 1 to 16 independent FFMAs, all ~31) less the counter's and the compare's dependent
    latencies (2 x the measured `alu_latency`): what the model's chain add -> setp -> bra -> next issue leaves to
    the branch. lsu_issue: cycles between a scheduler's independent shuffles with 2 to 8 warps a scheduler."""
    from jaxsimt.apps import fixtures

    alu = float(fixtures.timing_micro(arch)["alu_latency"]["value"])
    rows = fixtures.issue_micro_runs("issue_micro/branch_mio_h100.jsonl", arch)
    loop = [r["sm_cycles"] / r["iters"] for r in rows if r["group"] == "branch" and r["warps_per_scheduler"] == 1]
    shfl = [r["sm_cycles"] / (r["iters"] * r["per_iter"] * r["warps_per_scheduler"])
            for r in rows if r["group"] == "mio" and r["warps_per_scheduler"] >= 2]
    return {"branch_latency": float(np.median(loop)) - 2.0 * alu, "lsu_issue": float(np.median(shfl))}


def measured(arch: str = "h200") -> dict:
    """{Timing field: value} measured by the micro-benchmarks (`fixtures.timing_micro`, `launch_terms`): the
    fields the fit moves or holds (HELD) that a micro-benchmark measures ({} without the fixture; NOT_MEASURED
    left out)."""
    from jaxsimt.apps import fixtures

    try:
        m = fixtures.timing_micro(arch)
    except fixtures.FixtureNotFound:
        return {}
    out = {r["param"]: float(r["value"]) for r in m.values()
           if r.get("param") in FIT + HELD and r["param"] not in NOT_MEASURED}
    for terms in (launch_terms, issue_terms):
        try:
            out.update({k: v for k, v in terms(arch).items() if k in FIT + HELD})
        except fixtures.FixtureNotFound:
            pass
    return out


def measured_start(arch: str = "h200") -> "tuple[dict, dict]":
    """(starting parameters with every measured field set to its measurement, {field the fit moves: max
    factor}: within MEASURED_FACTOR of a measurement, MAX_FACTOR of an unmeasured starting value)."""
    base = dict(timing.starting_params(arch))
    meas = measured(arch)
    for k, v in meas.items():
        base[k] = jnp.float32(v)
    return base, {k: (MEASURED_FACTOR if k in meas else MAX_FACTOR) for k in FIT}


def beside_measurements(params: dict, arch: str = "h200") -> list:
    """Per measured field: measurement, the given (fitted) value, their ratio, and whether it is within
    MEASURED_FACTOR."""
    rows = []
    for k, v in measured(arch).items():
        f = float(params[k])
        rows.append({"param": k, "measured": v, "fitted": f, "ratio": f / v if v else float("nan"),
                     "within": 1 / MEASURED_FACTOR <= (f / v if v else 0) <= MEASURED_FACTOR})
    return rows


def constrained(base: dict, th: dict, max_factor: "float | dict" = MAX_FACTOR) -> dict:
    """The parameters for unconstrained log-scale offsets `th`: each fitted quantity is its starting value
    times exp(log(f) tanh(th / log(f))) (within a factor f of it, smooth, and exp(th) near the start), f
    `max_factor` (one for all, or a dict per field); the L2 and DRAM latencies are the level above's plus a
    fitted increment."""
    f = max_factor if isinstance(max_factor, dict) else {k: max_factor for k in th}
    b = {k: jnp.log(jnp.float32(f[k])) for k in th}
    scale = {k: jnp.exp(b[k] * jnp.tanh(th[k] / b[k])) for k in th}
    p = dict(base)
    for k in th:
        p[k] = base[k] * scale[k]
    for k, above in LATENCY_LADDER:  # in order: L2 from the fitted L1, then DRAM from that L2
        if k in th:
            p[k] = p[above] + (base[k] - base[above]) * scale[k]
    return p


def fit(samples: list[Sample], arch: str = "h200", steps: int = 40, lr: float = 0.08, prior: float = 0.02,
        log=print, on_step=None, max_factor: float = MAX_FACTOR, from_measured: bool = False,
        replay: str = "exact"):
    """Fit FIT (log scale, Adam) on the training samples. Returns (params, history of (step, loss, s)).
    on_step(step, params): called after every update (e.g. to save the parameters so far). from_measured:
    start from the micro-benchmark measurements and keep each measured field within MEASURED_FACTOR of
    its measurement (`measured_start`). replay: `timing.run`'s (the gradients go through it)."""
    import optax

    train = [s for s in samples if s.split == "train"]
    base = timing.starting_params(arch)
    if from_measured:
        base, max_factor = measured_start(arch)
    # the fast replay's steps: those covering each group's window at the starting parameters
    gs = groups(train, constrained(base, {k: jnp.float32(0.0) for k in FIT}, max_factor) if replay == "fast" else None)
    theta = {k: jnp.float32(0.0) for k in FIT}

    # the micro-kernels' times also fix the launch overhead: time - busiest SM's cycles at the clock
    ms_rows = [s for s in train if s.cycles is not None]
    ms_meas = jnp.asarray([s.ms for s in ms_rows], jnp.float32)
    ms_idx = jnp.asarray([train.index(s) for s in ms_rows])
    tensor = _tensor(train)

    def params_of(th):
        return constrained(base, th, max_factor)

    # every family weighs the same (the 33 smem_stride kernels would otherwise outvote the ladder)
    fams = [s.family for s in train]
    w = jnp.asarray([1.0 / (len(set(fams)) * fams.count(f)) for f in fams], jnp.float32)
    w_ms = w[ms_idx] / jnp.sum(w[ms_idx])

    def loss(th):
        p = params_of(th)
        cyc = predict_cycles(p, gs, len(train), replay=replay)
        use_c, val = _targets(train)
        pred = jnp.where(jnp.asarray(use_c), cyc, timing.predicted_ms(cyc, p, tensor))
        err = jnp.log(pred / jnp.asarray(val, jnp.float32))
        err_ms = jnp.log(timing.predicted_ms(cyc[ms_idx], p, tensor[np.asarray(ms_idx)]) / ms_meas)
        return (jnp.sum(w * err ** 2) + 0.25 * jnp.sum(w_ms * err_ms ** 2)
                + prior * sum(v ** 2 for v in th.values()) / len(th))

    vg = jax.jit(jax.value_and_grad(loss))
    opt = optax.adam(lr)
    state = opt.init(theta)
    hist = []
    t0 = time.perf_counter()
    for i in range(steps):
        val, g = vg(theta)
        upd, state = opt.update(g, state)
        theta = optax.apply_updates(theta, upd)
        hist.append((i, float(val), time.perf_counter() - t0))
        log(f"step {i:3d}  loss {float(val):.4f}  ({time.perf_counter() - t0:.0f} s)")
        if on_step is not None:
            on_step(i, params_of(theta))
    return {k: v for k, v in params_of(theta).items()}, hist


def evaluate(samples: list[Sample], params: dict, replay: str = "exact") -> list[dict]:
    """Per sample: measured and predicted cycles / ms and the relative error of the time."""
    gs = groups(samples, params if replay != "exact" else None, replay)
    cyc = np.asarray(jax.jit(lambda p: predict_cycles(p, gs, len(samples), replay=replay))(params), np.float64)
    rows = []
    for s, c in zip(samples, cyc):
        ms = float(timing.predicted_ms(c, params, timing.uses_tensor(s.work)))
        rows.append({"name": s.name, "family": s.family, "size": s.size, "split": s.split,
                     "measured_cycles": s.cycles, "predicted_cycles": float(c), "measured_ms": s.ms,
                     "predicted_ms": ms,
                     "cycles_error": None if s.cycles is None else (float(c) - s.cycles) / s.cycles,
                     "ms_error": (ms - s.ms) / s.ms})
    return rows


def mape(rows, key: str = "ms_error") -> float:
    v = [abs(r[key]) for r in rows if r[key] is not None]
    return 100.0 * float(np.mean(v)) if v else float("nan")


def spearman(x, y) -> float:
    """Spearman's rank correlation (no ties expected)."""
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def timing_literal(params: dict, arch: str = "h200") -> str:
    """The fitted parameters as `dataclasses.replace(<starting Timing>, ...)` of those that moved (to paste into
    arch.py as the architecture's `timing_fitted`)."""
    base = dataclasses.asdict(get_arch(arch).timing)
    moved = ",\n".join(f"    {k}={float(params[k]):.6g}" for k in base
                        if abs(float(params[k]) - float(base[k])) > 1e-6 * abs(float(base[k])))
    return f"dataclasses.replace(\n    _{arch.upper()}_TIMING,\n{moved},\n)"
