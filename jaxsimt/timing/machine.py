"""The SM the timing replays model: its parameters as a pytree, the shape of one replay, the per-kernel arrays,
the layout of an SM's warp and block slots and the state every replay starts from, block dispatch from the
SM's queue, and the window's extrapolation to the whole queue.

`replay.py` (the exact and the fast replay) and `interval.py` (the interval model) advance this state
differently; what they share lives here.

Shapes: WS warp slots per SM (the architecture's max warps per SM), RB block slots, NSCH schedulers, NR
register slots, NI instructions, NW traced warps, L stream length, Q queued blocks, S replay steps.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt.timing import fetch
from jaxsimt.timing import trace as tr
from jaxsimt.arch import Arch, get_arch
from jaxsimt.units import regbanks

REASONS = ("selected", "not_selected", "wait", "short_scoreboard", "long_scoreboard", "barrier",
           "branch_resolving", "math_pipe_throttle", "mio_throttle", "lg_throttle", "no_instruction")
SELECTED, NOT_SELECTED, WAIT, SHORT, LONG, BAR, BRANCH, MATH, MIO, LG, NOINST = range(len(REASONS))
POLICIES = ("lrr", "gto")

# per timing class: the scoreboard kind its result sets, and the throttle reason of its pipe
_KIND = np.array([WAIT, WAIT, SHORT, WAIT, SHORT, LONG, WAIT, WAIT, SHORT], np.int32)
_THROTTLE = np.array([MATH, MATH, MATH, MATH, MIO, LG, MATH, MATH, MIO], np.int32)
_INF = np.float32(3e38)  # a numpy scalar: a jnp one at import would start JAX's backends
CHECKPOINT = True


def params_of(arch: "Arch | str") -> dict:
    """The architecture's timing parameters as a dict of float32 scalars (a pytree for jax.grad): the
    calibrated ones (`Arch.timing_fitted`) where they exist, else the starting values (`Arch.timing`)."""
    arch = get_arch(arch)
    t = arch.timing_fitted or arch.timing
    return {k: jnp.asarray(float(v), jnp.float32) for k, v in dataclasses.asdict(t).items()}


def starting_params(arch: "Arch | str") -> dict:
    """The architecture's starting (uncalibrated) timing parameters, as `params_of`."""
    arch = get_arch(arch)
    return {k: jnp.asarray(float(v), jnp.float32) for k, v in dataclasses.asdict(arch.timing).items()}


@dataclass(frozen=True)
class Shape:
    """Static sizes of one replay (part of the compiled shape)."""

    warp_slots: int  # WS
    block_slots: int  # RB
    schedulers: int  # NSCH
    steps: int  # S = outer * inner
    inner: int  # steps per checkpointed chunk


Kernel = dict  # per-kernel arrays (a dict pytree): cls/dst/src/requests/sectors/wavefronts/hit_l1/to_dram/dram_wait
# /flops/issue_floor [NI], pcs [NW, L], length [NW], wpb [], blocks [] (resident blocks per SM)


def _pad(a: np.ndarray, n: int, axis: int = 0, value=0) -> np.ndarray:
    width = [(0, 0)] * a.ndim
    width[axis] = (0, n - a.shape[axis])
    return np.pad(a, width, constant_values=value)


def kernel_arrays(t: tr.Trace, blocks_per_sm: int, NI: int = 0, NW: int = 0, L: int = 0,
                  arch: "Arch | str | None" = None) -> Kernel:
    """The replay's per-kernel arrays, padded to powers of two (or to NI / NW / L when larger) so that
    kernels of similar sizes share one compiled replay and can be stacked into one batch.

    issue_floor [NI]: the fewest cycles each instruction holds its scheduler, set by the register file's
    banks (`regbanks.read_cycles`) and by instruction fetch (`fetch.fetch_cycles`) of `arch` (default: the
    H200)."""
    instrs = t.program.instructions()
    flops = np.asarray([float(o.operation.attr("flops", 0) or 0) for _, o in instrs], np.float32)[t.origins()]
    issued = None if t.folded is None else ~np.asarray(t.folded[:len(instrs)], bool)
    arch = get_arch(arch or "h200")
    per_scheduler = blocks_per_sm * t.warps_per_block / arch.warp_schedulers_per_sm
    floor = np.maximum(regbanks.read_cycles(t.program, arch, issued),
                       fetch.fetch_cycles(t.program, arch, per_scheduler, issued))[t.origins()]
    NI = max(NI, _pow2(max(len(t.cls), 64)))
    NW = max(NW, _pow2(max(t.pcs.shape[0], 32)))
    L = max(L, _pow2(max(t.pcs.shape[1], 64)))
    f32 = lambda a: jnp.asarray(_pad(np.asarray(a, np.float32), NI))  # noqa: E731
    length = np.minimum(t.length, t.pcs.shape[1]).astype(np.int32)
    folded = t.folded if t.folded is not None else np.zeros(len(t.cls), bool)
    return Kernel(cls=jnp.asarray(_pad(t.cls, NI, value=tr.ALU)), dst=jnp.asarray(_pad(t.dst, NI, value=-1)),
                  src=jnp.asarray(_pad(t.src, NI, value=-1)), requests=f32(t.requests), sectors=f32(t.sectors),
                  wavefronts=f32(t.wavefronts), hit_l1=f32(t.hit_l1), to_dram=f32(t.to_dram), flops=f32(flops),
                  issue_floor=jnp.asarray(_pad(np.asarray(floor, np.float32), NI, value=1.0)),
                  dram_wait=f32(t.to_dram if t.dram_wait is None else t.dram_wait),
                  folded=jnp.asarray(_pad(folded, NI, value=False)),
                  pcs=jnp.asarray(_pad(_pad(t.pcs, L, 1, -1), NW, 0, -1)), length=jnp.asarray(_pad(length, NW)),
                  wpb=jnp.int32(t.warps_per_block), blocks=jnp.int32(blocks_per_sm))


def _class_tables(p: dict, nsch):
    lat = jnp.stack([p["alu_latency"], p["fma_latency"], p["sfu_latency"], p["tensor_latency"],
                     p["shared_latency"], p["l1_latency"], jnp.float32(0.0), p["branch_latency"],
                     p["shared_latency"]])
    issue = jnp.stack([p["alu_issue"], p["fp32_issue"], p["sfu_issue"], p["tensor_issue"], p["lsu_issue"],
                       p["lsu_issue"], p["control_issue"], p["control_issue"], p["lsu_issue"]])
    return lat, issue


def _tag_stage_cycles(requests, lines, p: dict):
    """Cycles a global access holds the SM's L1TEX tag stage: one per tag wavefront, which takes up to
    l1_lines_per_tag_cycle of a request's lines (a global access's `Trace.wavefronts`)."""
    return jnp.maximum(requests, lines / p["l1_lines_per_tag_cycle"])


def _data_stage_cycles(wavefronts, p: dict):
    """Cycles an access holds the L1TEX data stage, which shared and global accesses share: one wavefront
    per cycle, a shared access's bank wavefronts or a global access's lines (`Trace.wavefronts`)."""
    return jnp.maximum(wavefronts, 1.0) * p["shared_cycles_per_wavefront"]


def _global_latency(hit_l1, dram_wait, requests, lines, p: dict):
    """Cycles from a global access's last stage to its data: L1's latency for the sectors L1 holds, L2's for
    the misses, DRAM's for the misses that wait for DRAM (`Trace.dram_wait`), in proportion; and, since a
    request waits for the slowest of its lines, the L2 and DRAM latencies' rise per doubling of the lines a
    request misses (`lines` of `requests`: `Trace.wavefronts` of a global access)."""
    miss = 1.0 - hit_l1
    per_request = lines / jnp.maximum(requests, 1.0)
    doublings = lambda n: jnp.log2(jnp.maximum(n, 1.0))  # noqa: E731
    return (p["l1_latency"] + miss * (p["l2_latency"] - p["l1_latency"])
            + miss * dram_wait * (p["dram_latency"] - p["l2_latency"])
            + jnp.where(miss > 0, p["l2_latency_per_doubling"] * doublings(per_request * miss), 0.0)
            + jnp.where(miss * dram_wait > 0,
                        p["dram_latency_per_doubling"] * doublings(per_request * miss * dram_wait), 0.0))


def _sm_start(p: dict, k: Kernel, queue, n_queue, share, shape: Shape, n_regs: int):
    """What both replays of one SM start from: the warp slots' layout (slot j [WS]: its block slot, warp in
    block, scheduler, whether a warp can be there), the class tables and the SM's bandwidth shares, the
    first blocks of the queue in their slots and their start times, and the carry both replays keep.
    Returns (layout dict, carry dict)."""
    WS, RB, NSCH = shape.warp_slots, shape.block_slots, shape.schedulers
    j = jnp.arange(WS, dtype=jnp.int32)
    wpb = k["wpb"]
    R = jnp.minimum(k["blocks"], RB)
    bslot = jnp.minimum(j // wpb, RB - 1)
    wib = j % wpb
    t0 = p["block_launch_cycles"]
    n_first = jnp.minimum(R, n_queue)
    rb = jnp.arange(RB, dtype=jnp.int32)
    slot_tb = jnp.where(rb < n_first, queue[jnp.minimum(rb, queue.shape[0] - 1)], -1)
    # the first blocks start block_dispatch_cycles apart (all at t0 without a dispatch limit)
    disp_dt = p["block_dispatch_cycles"]
    start0 = t0 + rb.astype(jnp.float32) * disp_dt
    lat, issue = _class_tables(p, NSCH)
    f0 = jnp.float32(0)
    layout = dict(
        j=j, wpb=wpb, R=R, bslot=bslot, wib=wib, valid=j < R * wpb, sched=j % NSCH, rb=rb, lat=lat, issue=issue,
        kind_t=jnp.asarray(_KIND), thr_t=jnp.asarray(_THROTTLE),
        sectors_per_cycle_l2=p["l2_bytes_per_cycle"] * share / 32.0,
        sectors_per_cycle_dram=p["dram_gbytes_per_s"] / _clock(p, k) * share / 32.0,
        t0=t0, disp_dt=disp_dt, slot_tb=slot_tb, start0=start0, f0=f0)
    carry = dict(
        t_sched=jnp.zeros(NSCH, jnp.float32), last=jnp.full(NSCH, -1, jnp.int32),
        pipe=jnp.zeros((NSCH, tr.N_CLASSES), jnp.float32), mio=f0, l1=f0, l2=f0, dram=f0,
        slot_tb=slot_tb, slot_start=start0, qnext=n_first,
        disp=t0 + (n_first - 1).astype(jnp.float32) * disp_dt,  # when the SM last started a block
        pos=jnp.zeros(WS, jnp.int32), wfree=start0[bslot], wreason=jnp.full(WS, NOINST, jnp.int32),
        last_issue=start0[bslot] - 1.0, reg_t=jnp.zeros((WS, n_regs), jnp.float32), bar=jnp.zeros(WS, bool),
        done=jnp.zeros(WS, bool), wend=jnp.zeros(WS, jnp.float32), age=(bslot * wpb + wib).astype(jnp.int32),
        stall=jnp.zeros((WS, len(REASONS)), jnp.float32), end_t=f0, occ=f0, issued=jnp.int32(0))
    return layout, carry


def _next_blocks(p: dict, lo: dict, c: dict, blk_done, blk_end, queue, n_queue) -> dict:
    """The block slots that finished a block in one step of the fast or the interval replay (blk_done [RB], their
    blocks' ends blk_end [RB]) take the next blocks of the queue, in slot order, each `block_launch_cycles` after
    its slot freed and `block_dispatch_cycles` after the SM's previous start. Returns the new slot_tb [RB],
    each slot's start [RB], its queue index [RB], whether it got a block (more [RB]), the block it got (next
    [RB], -1: none), qnext and disp."""
    disp_dt = lo["disp_dt"]
    brank = jnp.cumsum(blk_done.astype(jnp.int32)) - blk_done.astype(jnp.int32)
    qi = c["qnext"] + brank
    more = blk_done & (qi < n_queue)
    nxt = jnp.where(more, queue[jnp.minimum(qi, queue.shape[0] - 1)], -1)
    # block k of the SM starts no sooner than block_dispatch_cycles after block k - 1
    rf = brank.astype(jnp.float32)
    chain = lax.cummax(jnp.where(more, blk_end + p["block_launch_cycles"] - rf * disp_dt, -_INF))
    start = jnp.where(disp_dt > 0, jnp.maximum(jnp.maximum(chain + rf * disp_dt, blk_end + p["block_launch_cycles"]),
                                               c["disp"] + (rf + 1.0) * disp_dt),
                      blk_end + p["block_launch_cycles"])
    return dict(slot_tb=jnp.where(blk_done, nxt, c["slot_tb"]), start=start, index=qi, more=more, next=nxt,
                disp=jnp.where(jnp.any(more), jnp.max(jnp.where(more, start, -_INF)), c["disp"]),
                qnext=c["qnext"] + jnp.sum(more.astype(jnp.int32)))


def _window_result(c: dict, n_cum, t_run, timeline, n_queue, total, n_members) -> dict:
    """The fast or the interval replay's results from its final carry and per-step outputs: the issued count
    n_cum and the latest issue time t_run after each step, the timeline's seven entries (None: not asked for,
    and then absent from the results): the SM's cycles, extrapolated at the rate of the window's second half of
    instructions where its queue is longer, as `_replay_sm` does."""
    n_cum, t_run = n_cum.reshape(-1), t_run.reshape(-1)
    finished = (c["qnext"] >= n_queue) & jnp.all(c["slot_tb"] < 0)
    # steady-state extrapolation from the window's second half of instructions, as `_replay_sm`
    n_end = c["issued"]
    kh = jnp.argmax(n_cum >= n_end // 2)
    t_half, n_half = t_run[kh], n_cum[kh]
    t_last = c["t_last"]
    rate = jnp.maximum(n_end - n_half, 1).astype(jnp.float32) / jnp.maximum(t_last - t_half, 1e-3)
    extra = jnp.maximum(total - n_end, 0.0) / rate
    window_end = jnp.where(finished, c["end_t"], t_last + 1.0)
    cycles = jnp.where(finished, c["end_t"], window_end + extra)
    running = c["slot_tb"] >= 0
    occ = c["occ"] + jnp.sum(jnp.where(running, n_members * (window_end - c["slot_start"]), 0.0))
    out = {"cycles": cycles, "finished": finished, "window_cycles": window_end, "issued": c["issued"],
           "stall": c["stall"], "warp_cycles": occ}
    if timeline is not None:
        out["timeline"] = tuple(y.reshape(-1) for y in timeline)
    return out


def _pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def predicted_ms(cycles, params: dict, tensor=False):
    """Kernel time in ms: cycles at the SM clock (`tensor_clock_ghz` for kernels that issue Tensor Core
    instructions, `tensor` [...] bool, where the architecture has one) plus the fixed launch overhead."""
    return cycles / (predicted_clock(params, tensor) * 1e6) + params["launch_overhead_us"] * 1e-3


def _clock(p: dict, k: Kernel):
    """The SM clock (GHz) the kernel runs at: the tensor clock if it issues Tensor Core instructions."""
    return predicted_clock(p, jnp.any(k["cls"] == tr.TENSOR))


def predicted_clock(params: dict, tensor=False):
    """The SM clock (GHz): `tensor_clock_ghz` where `tensor` (and the architecture has one), else `clock_ghz`."""
    tc = params.get("tensor_clock_ghz", 0.0)
    return jnp.where(jnp.asarray(tensor) & (tc > 0), tc, params["clock_ghz"])
