"""The cycle-level timing model: instruction traces replayed on SMs with warp schedulers and scoreboards.

Each simulated SM holds up to `active_blocks_per_sm` blocks (occupancy) and takes the next block of its
queue when one finishes. Its warps are mapped to schedulers by warp slot mod N. One replay step issues one
warp instruction on the SM: among every warp's earliest issue time — the max of its own readiness (one
instruction per cycle, branch resolution, barrier release, block start), its scoreboard (the source and
destination registers' ready times), its pipe's issue interval, and the MIO / LSU queue backlog — the
earliest one fixes the scheduler, and that scheduler's policy picks among its warps ready in that cycle:
loose round-robin (the next warp after the last one issued) or greedy-then-oldest (the last one again if
ready, else the oldest). Shared-memory wavefronts are served one after another on the SM's shared pipe;
global accesses go through an L1 stage (requests and sectors per cycle), then their L1 misses through the
SM's share of L2 bandwidth, and the DRAM share of those through the SM's share of DRAM bandwidth, each a
queue with its own latency. Barriers release a block's warps when every unfinished warp has arrived.

Every time is a float computed by max and plus from the parameters, so `jax.grad` of the cycles with
respect to the parameters (a pytree of floats, `params_of(arch)`) exists almost everywhere; the choices
(which warp issues) are piecewise constant. The replay is a `lax.scan` with a static number of steps; an
SM whose queue holds more instructions than that is extrapolated at the rate of the second half of the
window (steady state), which keeps replaying huge grids cheap.

`run(..., replay="fast")` replays the same machine with one issue interval of the SM per step (every
scheduler that can issue in it does; see `_replay_sm_fast`), the same window and outputs; the default
`replay="exact"` above is the reference it is checked against (tests/test_timing_fast.py).

Stall reasons follow Nsight Compute's names (smsp__pcsamp_warps_issue_stalled_*): for every issued
instruction, the warp-cycles since its warp's previous issue are split into the constraint that held it
— block not started (no_instruction), branch_resolving, barrier, the scoreboard (wait: fixed-latency
producer; short_scoreboard: shared memory / SFU / shuffle; long_scoreboard: global memory), the pipe
(math_pipe_throttle, mio_throttle, lg_throttle) — then not_selected, and one selected cycle.

Shapes: WS warp slots per SM (the architecture's max warps per SM), RB block slots, NSCH schedulers,
NR register slots, NI instructions, NW traced warps, L stream length, Q queued blocks, S replay steps.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt.timing import interval
from jaxsimt.timing import trace as tr
from jaxsimt.timing.machine import (  # noqa: F401  (the SM's pieces, also this module's public names)
    BAR, BRANCH, CHECKPOINT, LG, LONG, MATH, MIO, NOINST, NOT_SELECTED, POLICIES, REASONS, SELECTED, SHORT, WAIT,
    Kernel, Shape, _INF, _KIND, _THROTTLE, _class_tables, _clock, _data_stage_cycles, _global_latency, _next_blocks,
    _pad, _pow2, _sm_start, _tag_stage_cycles, _window_result, kernel_arrays, params_of, predicted_clock, predicted_ms,
    starting_params)
from jaxsimt.arch import Arch, get_arch

# The replay window (steps of one SM; longer queues are extrapolated from its second half, `window_steps`):
# at least WINDOW_MIN, at most WINDOW_MAX, and at most WINDOW_BUDGET steps over all simulated SMs of one
# replay (its timeline holds a few floats per step and SM).
WINDOW_MIN = 8192
WINDOW_MAX = 65536
WINDOW_BUDGET = 1 << 21
WARP_SLOT_QUANTUM = 16  # warp slots beyond this many come in multiples of it (below: powers of two)


def _replay_sm(p: dict, k: Kernel, queue, n_queue, share, total, policy, shape: Shape, n_regs: int, cap=None):
    """Replay one SM: its queue [Q] of traced block ids (n_queue of them), its share of the chip's L2 and
    DRAM bandwidth, `total` instructions its queue holds (for extrapolation); cap: the window's instructions
    (a run-time int at most shape.steps, default shape.steps: later steps issue nothing, so that works of
    several windows share one compiled replay). Returns a dict of results."""
    WS, RB, NSCH = shape.warp_slots, shape.block_slots, shape.schedulers
    NR = n_regs
    cap = jnp.int32(shape.steps) if cap is None else cap
    lo, c = _sm_start(p, k, queue, n_queue, share, shape, n_regs)
    (j, wpb, R, bslot, wib, valid, sched, rb, lat, issue, kind_t, thr_t, sectors_per_cycle_l2, sectors_per_cycle_dram,
     t0, disp_dt, slot_tb, start0, f0) = (lo[x] for x in (
        "j", "wpb", "R", "bslot", "wib", "valid", "sched", "rb", "lat", "issue", "kind_t", "thr_t",
        "sectors_per_cycle_l2", "sectors_per_cycle_dram", "t0", "disp_dt", "slot_tb", "start0", "f0"))
    c = dict(c, reg_k=jnp.full((WS, NR), WAIT, jnp.int32), bar_t=jnp.zeros(WS, jnp.float32))

    def step(c, _):
        tb = c["slot_tb"][bslot]
        tw = jnp.clip(tb * wpb + wib, 0, k["pcs"].shape[0] - 1)
        live = valid & (tb >= 0) & ~c["done"]
        pc = jnp.maximum(k["pcs"][tw, jnp.clip(c["pos"], 0, k["pcs"].shape[1] - 1)], 0)
        cl = k["cls"][pc]
        srcs, dsts = k["src"][pc], k["dst"][pc]
        regs = jnp.concatenate([srcs, dsts], axis=1)
        rt = jnp.where(regs >= 0, jnp.take_along_axis(c["reg_t"], jnp.maximum(regs, 0), axis=1), 0.0)
        dep = jnp.max(rt, axis=1)
        rid = jnp.maximum(regs[j, jnp.argmax(rt, axis=1)], 0)
        dep_kind = c["reg_k"][j, rid]
        x1 = c["wfree"]
        # a folded instruction (trace.folded_mask: the hardware issues none for it) waits for nothing but its
        # warp's previous instruction, takes no pipe or scheduler slot, and passes its sources' ready time on
        fw = k["folded"][pc]
        x2 = jnp.where(fw, x1, jnp.maximum(x1, dep))
        thr = jnp.where((cl == tr.SHARED) | (cl == tr.SHUFFLE), c["mio"] - p["mio_queue_cycles"],
                        jnp.where(cl == tr.GLOBAL, c["l1"] - p["lsu_queue_cycles"], -_INF))
        x3 = jnp.where(fw, x2, jnp.maximum(x2, jnp.maximum(c["pipe"][sched, cl], thr)))
        tw_ = jnp.where(live & ~c["bar"], jnp.where(fw, x3, jnp.maximum(x3, c["t_sched"][sched])), _INF)
        wmin = jnp.argmin(tw_)
        tstar = tw_[wmin]
        go = tstar < _INF
        s = sched[wmin]
        cand = (sched == s) & (tw_ < tstar + 1.0)
        nloc = WS // NSCH
        lrr_key = (j // NSCH - c["last"][s] // NSCH - 1) % nloc
        gto_key = jnp.where(j == c["last"][s], -1, c["age"])
        key = jnp.where(policy == 0, lrr_key, gto_key)
        sel = jnp.argmin(jnp.where(cand, key, jnp.iinfo(jnp.int32).max)).astype(jnp.int32)
        T = tw_[sel]
        csel, pcsel = cl[sel], pc[sel]
        fold = fw[sel]
        # -- the issued instruction's completion --
        interval = jnp.where(csel == tr.TENSOR,
                             jnp.maximum(issue[tr.TENSOR], k["flops"][pcsel] * NSCH / p["tensor_flops_per_cycle_per_sm"]),
                             issue[csel])
        wf = k["wavefronts"][pcsel]
        wav = _data_stage_cycles(wf, p)
        sh_start = jnp.maximum(T, c["mio"])
        is_sh = (csel == tr.SHARED) | (csel == tr.SHUFFLE)
        is_gl = csel == tr.GLOBAL
        sec, req = k["sectors"][pcsel], k["requests"][pcsel]
        hit, todr = k["hit_l1"][pcsel], k["to_dram"][pcsel]
        s1 = jnp.maximum(T, c["l1"])
        o1 = _tag_stage_cycles(req, wf, p)
        miss = sec * (1.0 - hit)
        s2 = jnp.maximum(s1, c["l2"])
        e2 = s2 + miss / sectors_per_cycle_l2
        dsec = miss * todr
        s3 = jnp.maximum(s2, c["dram"])
        e3 = s3 + dsec / sectors_per_cycle_dram
        glat = _global_latency(hit, k["dram_wait"][pcsel], req, wf, p)
        d_end = jnp.maximum(c["mio"], s1) + wav  # its data stage (after the tag stage's start), which it waits for
        g_done = jnp.maximum(jnp.maximum(jnp.maximum(s1 + o1, d_end), jnp.where(miss > 0, e2, 0.0)),
                             jnp.where(dsec > 0, e3, 0.0)) + glat
        complete = jnp.where(fold, jnp.maximum(T, dep[sel]), jnp.where(is_sh, sh_start + wav + p["shared_latency"],
                                                jnp.where(is_gl, g_done, T + lat[csel])))
        upd = go & (c["issued"] < cap)  # every state change below only when an instruction issued
        mio = jnp.where(upd & is_sh, sh_start + wav,
                        jnp.where(upd & is_gl, d_end, c["mio"]))
        l1 = jnp.where(upd & is_gl, s1 + o1, c["l1"])
        l2 = jnp.where(upd & is_gl & (miss > 0), e2, c["l2"])
        dram = jnp.where(upd & is_gl & (dsec > 0), e3, c["dram"])
        # -- stall accounting of the selected warp's wait --
        x0 = c["last_issue"][sel] + 1.0
        a = jnp.maximum(x1[sel] - x0, 0.0)
        b = jnp.maximum(x2[sel] - jnp.maximum(x1[sel], x0), 0.0)
        cc = jnp.maximum(x3[sel] - jnp.maximum(x2[sel], x0), 0.0)
        d = jnp.maximum(T - jnp.maximum(x3[sel], x0), 0.0)
        reasons = jnp.stack([c["wreason"][sel], dep_kind[sel], thr_t[csel], jnp.int32(NOT_SELECTED),
                             jnp.int32(SELECTED)])
        amounts = jnp.stack([a, b, cc, d, jnp.float32(1.0)]) * (upd & ~fold)
        stall = c["stall"].at[sel].add(jnp.zeros(len(REASONS), jnp.float32).at[reasons].add(amounts))
        # -- scoreboard, pipes, the warp --
        ds = k["dst"][pcsel]
        reg_t = c["reg_t"].at[sel, jnp.where(ds >= 0, ds, NR)].set(
            jnp.where(upd, complete, c["reg_t"][sel, jnp.maximum(ds, 0)]), mode="drop")
        reg_k = c["reg_k"].at[sel, jnp.where(ds >= 0, ds, NR)].set(kind_t[csel], mode="drop")
        pipe = c["pipe"].at[s, csel].set(jnp.where(upd & ~fold, T + interval, c["pipe"][s, csel]))
        slot = jnp.maximum(jnp.where((csel == tr.ALU) | (csel == tr.CONTROL), p["alu_dispatch_cycles"], 1.0),
                           k["issue_floor"][pcsel])
        t_sched = c["t_sched"].at[s].set(jnp.where(upd & ~fold, T + slot, c["t_sched"][s]))
        last = c["last"].at[s].set(jnp.where(upd, sel, c["last"][s]))
        is_ctl = csel == tr.CONTROL
        wfree = c["wfree"].at[sel].set(jnp.where(upd, jnp.where(fold, T, T + jnp.where(is_ctl, p["branch_latency"], 1.0)),
                                                 x1[sel]))
        wreason = c["wreason"].at[sel].set(jnp.where(is_ctl & ~fold, BRANCH, NOT_SELECTED))
        last_issue = c["last_issue"].at[sel].set(jnp.where(upd & ~fold, T, c["last_issue"][sel]))
        pos = c["pos"].at[sel].add(upd.astype(jnp.int32))
        finished = upd & (pos[sel] >= k["length"][tw[sel]])
        done = c["done"].at[sel].set(c["done"][sel] | finished)
        wend = c["wend"].at[sel].set(jnp.where(finished, T + 1.0, c["wend"][sel]))
        end_t = jnp.where(finished, jnp.maximum(c["end_t"], T + 1.0), c["end_t"])
        # -- barrier: arrive; release the block's warps when every unfinished one has arrived --
        members = valid & (bslot == bslot[sel])
        bar = c["bar"].at[sel].set(c["bar"][sel] | (upd & (csel == tr.BARRIER)))
        bar_t = c["bar_t"].at[sel].set(jnp.where(upd & (csel == tr.BARRIER), T, c["bar_t"][sel]))
        release = upd & (csel == tr.BARRIER) & jnp.all(~members | bar | done) & jnp.any(members & bar)
        rel_t = jnp.max(jnp.where(members & bar, bar_t, -_INF)) + p["barrier_latency"]
        rel = release & members & bar
        wfree = jnp.where(rel, rel_t, wfree)
        wreason = jnp.where(rel, BAR, wreason)
        bar = bar & ~rel
        # -- block completion: the slot takes the next block of the queue --
        bs = bslot[sel]
        blk_done = finished & jnp.all(~members | done)
        blk_end = jnp.max(jnp.where(members, wend, 0.0))
        n_members = jnp.sum(members & (c["slot_tb"][bs] >= 0))
        occ = c["occ"] + jnp.where(blk_done, n_members * (blk_end - c["slot_start"][bs]), 0.0)
        more = c["qnext"] < n_queue
        nxt = jnp.where(more, queue[jnp.minimum(c["qnext"], queue.shape[0] - 1)], -1)
        slot_tb_new = c["slot_tb"].at[bs].set(jnp.where(blk_done, nxt, c["slot_tb"][bs]))
        start = jnp.maximum(blk_end + p["block_launch_cycles"], jnp.where(disp_dt > 0, c["disp"] + disp_dt, -_INF))
        slot_start = c["slot_start"].at[bs].set(jnp.where(blk_done, start, c["slot_start"][bs]))
        disp = jnp.where(blk_done & more, start, c["disp"])
        qnext = c["qnext"] + (blk_done & more).astype(jnp.int32)
        fresh = members & blk_done
        pos = jnp.where(fresh, 0, pos)
        done = jnp.where(fresh, nxt < 0, done)
        wfree = jnp.where(fresh, start, wfree)
        wreason = jnp.where(fresh, NOINST, wreason)
        last_issue = jnp.where(fresh, start - 1.0, last_issue)
        reg_t = jnp.where(fresh[:, None], 0.0, reg_t)
        age = jnp.where(fresh, c["qnext"] * wpb + wib, c["age"])
        c2 = dict(t_sched=t_sched, last=last, pipe=pipe, mio=mio, l1=l1, l2=l2, dram=dram, slot_tb=slot_tb_new,
                  slot_start=slot_start, qnext=qnext, disp=disp, pos=pos, wfree=wfree, wreason=wreason,
                  last_issue=last_issue,
                  reg_t=reg_t, reg_k=reg_k, bar=bar, bar_t=bar_t, done=done, wend=wend, age=age, stall=stall,
                  end_t=end_t, occ=occ, issued=c["issued"] + upd.astype(jnp.int32))
        gap_reason = reasons[jnp.argmax(amounts[:4])]
        ys = (jnp.where(upd, T, jnp.nan), jnp.where(upd, sel, -1), jnp.where(upd, s, -1),
              jnp.where(upd, pcsel, -1), jnp.where(upd, tw[sel], -1), jnp.where(upd & (jnp.max(amounts[:4]) > 0),
                                                                              gap_reason, -1), x0)
        return c2, ys

    inner = functools.partial(lax.scan, step, length=shape.inner)
    chunk = jax.checkpoint(lambda c, _: inner(c, None)) if CHECKPOINT else (lambda c, _: inner(c, None))
    c, ys = lax.scan(chunk, c, None, length=shape.steps // shape.inner)
    ys = tuple(y.reshape(-1) for y in ys)
    # issue times of the window; steps that issued nothing hold NaN in the timeline, 0 here (a NaN in an
    # unselected branch of a jnp.where would still poison the gradient)
    times = jnp.where(jnp.isnan(ys[0]), 0.0, ys[0])
    S = jnp.minimum(cap, shape.steps)
    finished = (c["qnext"] >= n_queue) & jnp.all(c["slot_tb"] < 0)
    # steady-state extrapolation for queues longer than the window
    h = S // 2
    t_last, t_half = times[S - 1], times[h - 1]
    rate = (S - h).astype(jnp.float32) / jnp.maximum(t_last - t_half, 1e-3)
    extra = jnp.maximum(total - c["issued"], 0.0) / rate
    window_end = jnp.where(finished, c["end_t"], t_last + 1.0)
    cycles = jnp.where(finished, c["end_t"], window_end + extra)
    running = (c["slot_tb"] >= 0)
    occ = c["occ"] + jnp.sum(jnp.where(running, jnp.sum(valid[None, :] & (bslot[None, :] == jnp.arange(RB)[:, None]),
                                                        axis=1) * (window_end - c["slot_start"]), 0.0))
    return {"cycles": cycles, "finished": finished, "window_cycles": window_end, "issued": c["issued"],
            "stall": c["stall"], "warp_cycles": occ, "timeline": ys}


def replay_sms(params: dict, k: Kernel, queues, n_queue, share, total, policy, shape: Shape, n_regs: int, cap=None):
    """Replay every simulated SM (vmapped over the leading axis of queues [M, Q], n_queue / share / total
    [M]); policy: 0 loose round-robin, 1 greedy-then-oldest; cap: `_replay_sm`'s. Returns _replay_sm's dict
    with a leading M."""
    f = lambda q, n, sh, to: _replay_sm(params, k, q, n, sh, to, policy, shape, n_regs, cap)  # noqa: E731
    return jax.vmap(f)(queues, n_queue, share, total)


replay = jax.jit(replay_sms, static_argnames=("shape", "n_regs"))


# ---------------------------------------------------------------------------------------------
# The fast replay: one issue interval of the SM per step
# ---------------------------------------------------------------------------------------------
#
# The same machine as `_replay_sm`, advanced differently: one scan step is one issue interval of the SM,
# in which every warp scheduler whose earliest warp falls within FAST_INTERVAL cycles of the SM's earliest
# one issues its pick (up to NSCH warp instructions per step instead of one), in `_replay_sm`'s order.
# Shared and global instructions, which meet state other schedulers read (the MIO, L1, L2 and DRAM queues
# and their throttles), issue only in the interval's first cycle; the other instructions change nothing
# another scheduler reads before the interval ends (barrier releases and block starts are max / plus of
# times, whatever the order). A warp's scoreboard readiness for its next instruction is computed once,
# when it issues (only its own issues write its registers), instead of for every warp at every step.
# What can differ from `_replay_sm`: the order of two schedulers' non-memory issues within one interval,
# which free block slot takes the next queued block when several free in one step, and the scoreboard
# kind charged when two registers are ready at the same time.

REPLAYS = ("exact", "fast", "interval")  # "interval": jaxsimt/timing/interval.py
FAST_INTERVAL = 16.0  # schedulers whose next issue falls within this many cycles of the SM's earliest one share a step
FAST_SLACK = 1.5  # fast steps per instruction of the busiest scheduler in the window (steps it does not issue)


def _replay_sm_fast(p: dict, k: Kernel, queue, n_queue, share, total, policy, cap, shape: Shape, n_regs: int):
    """`_replay_sm`'s replay of one SM, one issue interval per step (see above). cap: warp instructions of
    the window (the exact replay's steps): issue stops there, so both extrapolate from the same window.
    Returns `_replay_sm`'s dict; the timeline holds NSCH entries per step [S * NSCH]."""
    WS, RB, NSCH = shape.warp_slots, shape.block_slots, shape.schedulers
    NR, NLOC = n_regs, WS // NSCH
    NW, L = k["pcs"].shape
    lo, c = _sm_start(p, k, queue, n_queue, share, shape, n_regs)
    (j, wpb, R, bslot, wib, valid, sched, rb, lat, issue, kind_t, thr_t, sectors_per_cycle_l2, sectors_per_cycle_dram,
     t0, disp_dt, slot_tb, start0, f0) = (lo[x] for x in (
        "j", "wpb", "R", "bslot", "wib", "valid", "sched", "rb", "lat", "issue", "kind_t", "thr_t",
        "sectors_per_cycle_l2", "sectors_per_cycle_dram", "t0", "disp_dt", "slot_tb", "start0", "f0"))
    n_members = jnp.sum(valid[None, :] & (bslot[None, :] == rb[:, None]), axis=1)  # [RB]
    first_pc = lambda stb: jnp.maximum(k["pcs"][jnp.clip(stb[bslot] * wpb + wib, 0, NW - 1), 0], 0)  # noqa: E731
    lrow = jnp.arange(NLOC, dtype=jnp.int32)[:, None]
    jl = j.reshape(NLOC, NSCH)
    # per static instruction, the register slots it reads or writes (its scoreboard) and those it writes
    rr = jnp.arange(NR, dtype=jnp.int32)[None, None, :]
    dst_m = jnp.any(k["dst"][:, :, None] == rr, axis=1)  # [NI, NR]
    use_m = jnp.any(k["src"][:, :, None] == rr, axis=1) | dst_m
    reg_ids = jnp.arange(NR, dtype=jnp.int32)[None, :]
    reason_ids = jnp.arange(len(REASONS), dtype=jnp.int32)[None, :]
    c = dict(
        c, t_last=f0,
        # each warp's next instruction, and its scoreboard: ready time and kind of its latest source / dest
        npc=first_pc(slot_tb), ndep=jnp.zeros(WS, jnp.float32), nkind=jnp.full(WS, WAIT, jnp.int32),
        # per register: 16 x the block epoch of its warp slot when written + the scoreboard kind; a new
        # block (epoch + 1) reads the older values as 0 without the register file being cleared
        reg_ek=jnp.full((WS, NR), WAIT, jnp.int32), wep=jnp.zeros(WS, jnp.int32),
        # per block slot: warps at the barrier, the latest arrival, finished warps, the latest finish
        n_bar=jnp.zeros(RB, jnp.int32), bar_max=jnp.full(RB, -_INF), n_done=jnp.zeros(RB, jnp.int32),
        wend_max=jnp.zeros(RB, jnp.float32),
    )

    def step(c, _):
        tb = c["slot_tb"][bslot]
        tw = jnp.clip(tb * wpb + wib, 0, NW - 1)
        live = valid & (tb >= 0) & ~c["done"]
        pc = c["npc"]
        cl, fw = k["cls"][pc], k["folded"][pc]
        x1 = c["wfree"]
        x2 = jnp.where(fw, x1, jnp.maximum(x1, c["ndep"]))
        is_sh_w, is_gl_w = (cl == tr.SHARED) | (cl == tr.SHUFFLE), cl == tr.GLOBAL
        thr = jnp.where(is_sh_w, c["mio"] - p["mio_queue_cycles"], jnp.where(is_gl_w, c["l1"] - p["lsu_queue_cycles"], -_INF))
        x3 = jnp.where(fw, x2, jnp.maximum(x2, jnp.maximum(c["pipe"][sched, cl], thr)))
        tw_ = jnp.where(live & ~c["bar"], jnp.where(fw, x3, jnp.maximum(x3, c["t_sched"][sched])), _INF)
        # -- every scheduler's pick (warp slot l * NSCH + s is scheduler s's l-th warp) --
        tws = tw_.reshape(NLOC, NSCH)
        Ts = jnp.min(tws, axis=0)
        lrr_key = (jl // NSCH - c["last"][None, :] // NSCH - 1) % NLOC
        gto_key = jnp.where(jl == c["last"][None, :], -1, c["age"].reshape(NLOC, NSCH))
        key = jnp.where(policy == 0, lrr_key, gto_key)
        lsel = jnp.argmin(jnp.where(tws < Ts[None, :] + 1.0, key, jnp.iinfo(jnp.int32).max), axis=0).astype(jnp.int32)
        hit = lrow == lsel[None, :]  # [NLOC, NSCH]: each scheduler's picked warp slot
        # the schedulers issuing in this interval, in time order, at most the window's remaining instructions
        tcyc = jnp.min(Ts)
        # in `_replay_sm`'s order: by the scheduler's earliest warp (the policy's pick may be up to a cycle
        # later), ties to the lower warp slot (its argmin)
        first = jnp.argmin(tws, axis=0).astype(jnp.int32) * NSCH + jnp.arange(NSCH, dtype=jnp.int32)
        before = (Ts[None, :] < Ts[:, None]) | ((Ts[None, :] == Ts[:, None]) & (first[None, :] < first[:, None]))
        inv = jnp.sum(before, axis=1).astype(jnp.int32)  # each scheduler's place in the order (no sort: NSCH is 4)
        sid = jnp.arange(NSCH, dtype=jnp.int32)
        order = jnp.sum(jnp.where(inv[None, :] == sid[:, None], sid[None, :], 0), axis=1)

        def put(old, val):  # [WS] state: each scheduler's picked warp takes val (in issue order)
            return jnp.where(hit, val[inv][None, :], old.reshape(NLOC, NSCH)).reshape(WS)

        s_o = order
        sel = lsel[order] * NSCH + order
        T0 = tw_[sel]  # the picked warp's own time (the policy may pick one up to a cycle after the earliest)
        rank = jnp.arange(NSCH, dtype=jnp.int32)
        csel, pcsel, fold = cl[sel], pc[sel], fw[sel]
        is_sh, is_gl, is_ctl = is_sh_w[sel], is_gl_w[sel], csel == tr.CONTROL
        # the SM's memory queues see their instructions in time order: those issue only in the interval's
        # first cycle and when no scheduler's pick is a folded instruction before them (whose successor
        # may issue in the same cycle); the others touch no state another scheduler reads before the
        # interval's end
        mem = (is_sh | is_gl) & ~fold
        Tmin = Ts[order]
        fold_min = jnp.min(jnp.where(fold, Tmin, _INF))
        window = jnp.where(mem, 1.0, FAST_INTERVAL)
        go0 = (Tmin < _INF) & (Tmin < tcyc + window) & (~mem | (Tmin <= fold_min)) & (rank < cap - c["issued"])
        dep = c["ndep"][sel]
        wf = k["wavefronts"][pcsel]
        wav = _data_stage_cycles(wf, p)
        sec, req = k["sectors"][pcsel], k["requests"][pcsel]
        hit_l1, todr = k["hit_l1"][pcsel], k["to_dram"][pcsel]
        o1 = _tag_stage_cycles(req, wf, p)
        miss = sec * (1.0 - hit_l1)
        dsec = miss * todr
        glat = _global_latency(hit_l1, k["dram_wait"][pcsel], req, wf, p)
        # -- the SM's shared queues, one issue after another --
        mio, l1, l2, dram = c["mio"], c["l1"], c["l2"], c["dram"]
        gos, comp = [], []
        filled = jnp.bool_(False)  # whether an earlier issue of this interval moved a memory queue
        for i in range(NSCH):
            # an earlier issue of this interval that filled the queue past this one's throttle voids the
            # scheduler's pick: it picks again in the next step (the interval's first issue always stands)
            th = jnp.where(is_sh[i], mio - p["mio_queue_cycles"], jnp.where(is_gl[i], l1 - p["lsu_queue_cycles"], -_INF))
            gi = go0[i] & (fold[i] | ~filled | (th <= T0[i]))
            Ti = T0[i]
            sh_start = jnp.maximum(Ti, mio)
            s1 = jnp.maximum(Ti, l1)
            s2 = jnp.maximum(s1, l2)
            e2 = s2 + miss[i] / sectors_per_cycle_l2
            s3 = jnp.maximum(s2, dram)
            e3 = s3 + dsec[i] / sectors_per_cycle_dram
            d_end = jnp.maximum(mio, s1) + wav[i]
            g_done = jnp.maximum(jnp.maximum(jnp.maximum(s1 + o1[i], d_end), jnp.where(miss[i] > 0, e2, 0.0)),
                                 jnp.where(dsec[i] > 0, e3, 0.0)) + glat[i]
            comp.append(jnp.where(fold[i], jnp.maximum(Ti, dep[i]),
                                  jnp.where(is_sh[i], sh_start + wav[i] + p["shared_latency"],
                                            jnp.where(is_gl[i], g_done, Ti + lat[csel[i]]))))
            mio = jnp.where(gi & is_sh[i], sh_start + wav[i], jnp.where(gi & is_gl[i], d_end, mio))
            l1 = jnp.where(gi & is_gl[i], s1 + o1[i], l1)
            l2 = jnp.where(gi & is_gl[i] & (miss[i] > 0), e2, l2)
            dram = jnp.where(gi & is_gl[i] & (dsec[i] > 0), e3, dram)
            filled = filled | (gi & (is_sh[i] | is_gl[i]))
            gos.append(gi)
        T, go, complete = T0, jnp.stack(gos), jnp.stack(comp)
        x3i = x3[sel]
        interval = jnp.where(csel == tr.TENSOR,
                             jnp.maximum(issue[tr.TENSOR], k["flops"][pcsel] * NSCH / p["tensor_flops_per_cycle_per_sm"]),
                             issue[csel])
        # -- stall accounting of the issued warps' waits --
        x0 = c["last_issue"][sel] + 1.0
        x1s, x2s = x1[sel], x2[sel]
        a = jnp.maximum(x1s - x0, 0.0)
        b = jnp.maximum(x2s - jnp.maximum(x1s, x0), 0.0)
        cc = jnp.maximum(x3i - jnp.maximum(x2s, x0), 0.0)
        d = jnp.maximum(T - jnp.maximum(x3i, x0), 0.0)
        reasons = jnp.stack([c["wreason"][sel], c["nkind"][sel], thr_t[csel], jnp.full(NSCH, NOT_SELECTED),
                             jnp.full(NSCH, SELECTED)], axis=1)
        amounts = jnp.stack([a, b, cc, d, jnp.ones(NSCH)], axis=1) * (go & ~fold)[:, None]
        rows_s = c["stall"][sel]  # [NSCH, R]: the issued warps' rows, in issue order
        for r in range(amounts.shape[1]):
            rows_s = rows_s + jnp.where(reason_ids == reasons[:, r:r + 1], amounts[:, r:r + 1], 0.0)
        # -- scoreboard: the issued warps' register rows, rewritten where their instruction writes --
        wmask = dst_m[pcsel] & go[:, None]
        wep_sel = c["wep"][sel]
        rows_t = jnp.where(wmask, complete[:, None], c["reg_t"][sel])
        rows_ek = jnp.where(wmask, (wep_sel * 16 + kind_t[csel])[:, None], c["reg_ek"][sel])
        reg_t, reg_ek, stall = c["reg_t"], c["reg_ek"], c["stall"]
        for i in range(NSCH):  # row updates in place (each scheduler's own warp: no two collide)
            reg_t = lax.dynamic_update_index_in_dim(reg_t, rows_t[i], sel[i], 0)
            reg_ek = lax.dynamic_update_index_in_dim(reg_ek, rows_ek[i], sel[i], 0)
            stall = lax.dynamic_update_index_in_dim(stall, rows_s[i], sel[i], 0)
        # -- pipes, schedulers, the warps --
        busy = go & ~fold
        cmask = jnp.arange(tr.N_CLASSES)[None, :] == csel[:, None]
        pipe = jnp.where(cmask & busy[:, None], (T + interval)[:, None], c["pipe"][s_o])[inv]
        slot = jnp.maximum(jnp.where((csel == tr.ALU) | (csel == tr.CONTROL), p["alu_dispatch_cycles"], 1.0),
                           k["issue_floor"][pcsel])
        t_sched = jnp.where(busy, T + slot, c["t_sched"][s_o])[inv]
        last = jnp.where(go, sel, c["last"][s_o])[inv]
        wfree = put(x1, jnp.where(go, jnp.where(fold, T, T + jnp.where(is_ctl, p["branch_latency"], 1.0)), x1s))
        wreason = put(c["wreason"], jnp.where(go, jnp.where(is_ctl & ~fold, BRANCH, NOT_SELECTED), c["wreason"][sel]))
        last_issue = put(c["last_issue"], jnp.where(busy, T, c["last_issue"][sel]))
        pos_sel = c["pos"][sel] + go.astype(jnp.int32)
        pos = put(c["pos"], pos_sel)
        tw_sel = tw[sel]
        finished = go & (pos_sel >= k["length"][tw_sel])
        done = put(c["done"], c["done"][sel] | finished)
        wend = put(c["wend"], jnp.where(finished, T + 1.0, c["wend"][sel]))
        end_t = jnp.maximum(c["end_t"], jnp.max(jnp.where(finished, T + 1.0, -_INF)))
        # the issued warps' next instructions and their scoreboard
        npc_s = jnp.maximum(k["pcs"][tw_sel, jnp.clip(pos_sel, 0, L - 1)], 0)
        rt = jnp.where(use_m[npc_s] & ((rows_ek >> 4) == wep_sel[:, None]), rows_t, 0.0)  # [NSCH, NR]
        rt_max = jnp.max(rt, axis=1)
        # the first register holding the latest ready time (two plain reductions: cheaper than an argmax)
        top = jnp.min(jnp.where(rt == rt_max[:, None], reg_ids, NR), axis=1)[:, None]
        npc = put(pc, jnp.where(go, npc_s, pc[sel]))
        ndep = put(c["ndep"], jnp.where(go, rt_max, c["ndep"][sel]))
        nkind = put(c["nkind"], jnp.where(go, jnp.take_along_axis(rows_ek, top, axis=1)[:, 0] & 15, c["nkind"][sel]))
        # -- barriers: a block whose warp arrived this step releases when every unfinished warp has --
        arrive = go & (csel == tr.BARRIER)
        bmask = bslot[sel][:, None] == rb[None, :]  # [NSCH, RB]
        bar = put(c["bar"], c["bar"][sel] | arrive)
        n_bar = c["n_bar"] + jnp.sum(bmask & arrive[:, None], axis=0)
        bar_max = jnp.maximum(c["bar_max"], jnp.max(jnp.where(bmask & arrive[:, None], T[:, None], -_INF), axis=0))
        n_done = c["n_done"] + jnp.sum(bmask & finished[:, None], axis=0)
        release = jnp.any(bmask & arrive[:, None], axis=0) & (n_bar + n_done >= n_members) & (n_bar > 0)
        rel = release[bslot] & valid & bar
        wfree = jnp.where(rel, (bar_max + p["barrier_latency"])[bslot], wfree)
        wreason = jnp.where(rel, BAR, wreason)
        bar = bar & ~rel
        n_bar = jnp.where(release, 0, n_bar)
        bar_max = jnp.where(release, -_INF, bar_max)
        # -- block completion: the freed slots take the next blocks of the queue, in slot order --
        blk_end = jnp.maximum(c["wend_max"], jnp.max(jnp.where(bmask & finished[:, None], (T + 1.0)[:, None], 0.0), axis=0))
        blk_done = jnp.any(bmask & finished[:, None], axis=0) & (n_done >= n_members)
        occ = c["occ"] + jnp.sum(jnp.where(blk_done, (n_members * (c["slot_tb"] >= 0)) * (blk_end - c["slot_start"]), 0.0))
        nx = _next_blocks(p, lo, c, blk_done, blk_end, queue, n_queue)
        slot_tb_new, start, qi, more = nx["slot_tb"], nx["start"], nx["index"], nx["more"]
        slot_start = jnp.where(blk_done, start, c["slot_start"])
        disp, qnext = nx["disp"], nx["qnext"]
        n_done = jnp.where(blk_done, jnp.where(more, 0, n_members), n_done)
        wend_max = jnp.where(blk_done, 0.0, blk_end)
        fresh = blk_done[bslot] & valid
        pos = jnp.where(fresh, 0, pos)
        done = jnp.where(fresh, nx["next"][bslot] < 0, done)
        wfree = jnp.where(fresh, start[bslot], wfree)
        wreason = jnp.where(fresh, NOINST, wreason)
        last_issue = jnp.where(fresh, start[bslot] - 1.0, last_issue)
        wep = c["wep"] + fresh.astype(jnp.int32)
        age = jnp.where(fresh, qi[bslot] * wpb + wib, c["age"])
        npc = jnp.where(fresh, first_pc(slot_tb_new), npc)
        ndep = jnp.where(fresh, 0.0, ndep)
        nkind = jnp.where(fresh, WAIT, nkind)
        n_go = jnp.sum(go.astype(jnp.int32))
        t_last = jnp.maximum(c["t_last"], jnp.max(jnp.where(go, T, -_INF)))
        c2 = dict(t_sched=t_sched, last=last, pipe=pipe, mio=mio, l1=l1, l2=l2, dram=dram, slot_tb=slot_tb_new,
                  slot_start=slot_start, qnext=qnext, disp=disp, pos=pos, wfree=wfree, wreason=wreason,
                  last_issue=last_issue, reg_t=reg_t, bar=bar, done=done, wend=wend,
                  age=age, stall=stall, end_t=end_t, occ=occ, issued=c["issued"] + n_go, t_last=t_last,
                  npc=npc, ndep=ndep, nkind=nkind, reg_ek=reg_ek, wep=wep, n_bar=n_bar, bar_max=bar_max,
                  n_done=n_done, wend_max=wend_max)
        gaps = amounts[:, :4]
        gap_reason = jnp.take_along_axis(reasons, jnp.argmax(gaps, axis=1)[:, None], axis=1)[:, 0]
        ys = (jnp.where(go, T, jnp.nan), jnp.where(go, sel, -1), jnp.where(go, s_o, -1), jnp.where(go, pcsel, -1),
              jnp.where(go, tw_sel, -1), jnp.where(go & (jnp.max(gaps, axis=1) > 0), gap_reason, -1), x0,
              c2["issued"], t_last)
        return c2, ys

    inner = functools.partial(lax.scan, step, length=shape.inner)
    chunk = jax.checkpoint(lambda c, _: inner(c, None)) if CHECKPOINT else (lambda c, _: inner(c, None))
    c, ys = lax.scan(chunk, c, None, length=shape.steps // shape.inner)
    return _window_result(c, ys[7], ys[8], ys[:7], n_queue, total, n_members)


def replay_sms_fast(params: dict, k: Kernel, queues, n_queue, share, total, policy, cap, shape: Shape, n_regs: int):
    """`replay_sms` with the fast replay (`_replay_sm_fast`); cap: the window's warp instructions per SM."""
    f = lambda q, n, sh, to: _replay_sm_fast(params, k, q, n, sh, to, policy, cap, shape, n_regs)  # noqa: E731
    return jax.vmap(f)(queues, n_queue, share, total)


replay_fast = jax.jit(replay_sms_fast, static_argnames=("shape", "n_regs"))


# ---------------------------------------------------------------------------------------------
# From a trace to a prediction
# ---------------------------------------------------------------------------------------------


@dataclass
class Work:
    """What the replay of one kernel needs besides the parameters."""

    kernel: Kernel
    queues: np.ndarray  # [M, Q] traced block id of each simulated SM's blocks, in dispatch order
    n_queue: np.ndarray  # [M]
    share: np.ndarray  # [M] fraction of the chip's L2 / DRAM bandwidth each simulated SM gets
    total: np.ndarray  # [M] instructions of each simulated SM's queue
    shape: Shape
    n_regs: int
    sms: np.ndarray  # [M] index of each simulated SM
    occupancy_blocks: int
    # L2 operations of the kernel's global atomics on their busiest sector (`launch_timing.atomic_hot_ops`)
    atomic_ops: float = 0.0


def warmup(t: tr.Trace) -> int:
    """Instructions of the longest traced warp stream up to the end of the second pass through its outermost
    loop (0 for streams without a loop; the whole stream where that loop runs once). The outermost loop is
    the stream's backward jump (to a pc at or before the jumping one) over the most instructions."""
    pcs = np.asarray(t.pcs)
    if pcs.shape[1] < 2:
        return 0
    a, b = pcs[:, :-1], pcs[:, 1:]
    back = (b >= 0) & (b <= a)
    span = np.where(back, a - b, -1)
    j = np.argmax(span, axis=1)
    rows = np.arange(len(pcs))
    has = span[rows, j] >= 0
    edge = back & (a == a[rows, j][:, None]) & (b == b[rows, j][:, None])
    taken = np.cumsum(edge, axis=1)
    twice = taken[:, -1] >= 2
    second = np.argmax(taken >= 2, axis=1) + 2  # instructions up to and including the second jump's target
    length = np.minimum(np.asarray(t.length), pcs.shape[1])
    need = np.where(has, np.where(twice, second, length), 0)
    return int(need.max(initial=0))


def window_steps(t: tr.Trace, resident_warps: int, n_sms: int = 1) -> int:
    """The replay window for a trace: enough steps for every resident warp to issue twice its `warmup`
    (so that the window's second half, whose rate is extrapolated, is past the first pass through each
    warp's outermost loop and holds at least one more), a power of two within [WINDOW_MIN, WINDOW_MAX], at
    most WINDOW_BUDGET over `n_sms` simulated SMs."""
    need = _pow2(max(2 * resident_warps * warmup(t), 1))
    return int(min(max(need, WINDOW_MIN), window_cap(n_sms)))


def window_cap(n_sms: int) -> int:
    """The longest window a replay of `n_sms` simulated SMs gets: WINDOW_BUDGET over them, a power of two within
    [WINDOW_MIN, WINDOW_MAX]."""
    return max(WINDOW_MIN, min(WINDOW_MAX, _pow2(WINDOW_BUDGET // max(n_sms, 1) + 1) // 2))


def _warp_slots(n: int) -> int:
    """A replay's warp slots for n resident warps: a power of two up to WARP_SLOT_QUANTUM, a multiple of it
    above (kernels of near occupancies share a compiled replay; 48 resident warps need not pay for 64)."""
    return _pow2(n) if n <= WARP_SLOT_QUANTUM else -(-int(n) // WARP_SLOT_QUANTUM) * WARP_SLOT_QUANTUM


def plan(t: tr.Trace, arch: "Arch | str", blocks_per_sm: int, grid_blocks: Optional[int] = None,
         max_steps: Optional[int] = None, inner: int = 256, steps: Optional[int] = None) -> Work:
    """Distribute the grid's blocks over the SMs (block i to SM i mod num_sms, as the hardware's first
    dispatch round does) and pick the SMs to replay: every SM with distinct work when each block was
    traced, else the busiest SM with the traced blocks repeated cyclically. The window: `steps`, else at
    most `max_steps` (default `window_steps`) and the busiest queue's instructions."""
    arch = get_arch(arch)
    G = int(grid_blocks if grid_blocks is not None else t.meta.get("n_ctas", t.n_blocks))
    nt = t.n_blocks
    n_sm_used = min(G, arch.num_sms)
    per_block = np.zeros(nt, np.int64)
    np.add.at(per_block, t.block, t.length)
    queues = []
    if nt >= G:  # every block traced: each SM with blocks
        for sm in range(n_sm_used):
            queues.append(np.arange(sm, G, arch.num_sms))
    else:  # representative blocks: the busiest SM, traced blocks repeated
        n = -(-G // arch.num_sms)
        queues.append(np.arange(n) % nt)
    seen, uniq, sms = set(), [], []
    for sm, q in enumerate(queues):
        key = tuple(q.tolist())
        if key not in seen:
            seen.add(key)
            uniq.append(q)
            sms.append(sm)
    Q = _pow2(max(1024, max(len(q) for q in uniq)))  # one compiled shape for most grids
    M = _pow2(len(uniq))  # padding SMs have an empty queue
    qa = np.full((M, Q), -1, np.int32)
    n_queue = np.zeros(M, np.int32)
    total = np.zeros(M, np.float32)
    for i, q in enumerate(uniq):
        qa[i, :len(q)] = q
        n_queue[i] = len(q)
        total[i] = per_block[q].sum()
    sms = sms + [-1] * (M - len(uniq))
    resident = min(blocks_per_sm, int(n_queue.max()))
    if max_steps is None:
        max_steps = window_steps(t, resident * t.warps_per_block, len(uniq))
    S = int(steps or min(_pow2(int(total.max())), max_steps))
    inner_ = min(inner, S)
    S = max(S, inner_)
    # warp and block slots: what the resident blocks need (fewer slots, a cheaper replay step)
    ws = max(_warp_slots(resident * t.warps_per_block), arch.warp_schedulers_per_sm)
    shape = Shape(ws, _pow2(resident), arch.warp_schedulers_per_sm, S, inner_)
    if blocks_per_sm * t.warps_per_block > arch.max_warps_per_sm or blocks_per_sm < 1:
        raise ValueError(f"kernel {t.program.name}: {blocks_per_sm} resident blocks of {t.warps_per_block} warps do "
                         f"not fit the {arch.max_warps_per_sm} warp slots of an {arch.name} SM")
    return Work(kernel_arrays(t, resident, arch=arch), qa, n_queue, np.full(M, 1.0 / n_sm_used, np.float32), total, shape, _pow2(max(t.n_regs, 32)), np.asarray(sms),
                blocks_per_sm)


def fast_steps(work: Work, slack: Optional[float] = None) -> int:
    """Scan steps of the fast replay for a work: enough for the window's instructions (`work.shape.steps`)
    at one issue per step on the busiest scheduler (the warp slots' instructions mapped to schedulers by
    slot mod N as the replay does, a queued block taking slot i mod resident), times `slack` for steps in
    which the schedulers are out of step; a multiple of the chunk size, at most the exact replay's steps."""
    slack = FAST_SLACK if slack is None else slack
    S, inner, NSCH = work.shape.steps, work.shape.inner, work.shape.schedulers
    length = np.asarray(work.kernel["length"], np.float64)
    wpb, R = int(work.kernel["wpb"]), int(work.kernel["blocks"])
    frac = 0.0
    for q, n in zip(work.queues, work.n_queue):
        if n == 0:
            continue
        q = np.asarray(q[:n], np.int64)
        wib = np.arange(wpb)
        slot = (np.arange(n) % max(R, 1))[:, None] * wpb + wib[None, :]
        lens = length[np.minimum(q[:, None] * wpb + wib[None, :], len(length) - 1)]
        per = np.bincount((slot % NSCH).ravel(), weights=lens.ravel(), minlength=NSCH)
        frac = max(frac, per.max() / max(per.sum(), 1.0))
    need = slack * frac * min(S, float(max(work.total.max(), 1.0)))
    return int(min(S, max(inner, -(-int(np.ceil(need)) // inner) * inner)))


def _check_replay(replay: str) -> None:
    if replay not in REPLAYS:
        raise ValueError(f"replay {replay!r}: choose one of {', '.join(REPLAYS)}")


def run(work: Work, params: dict, policy: str = "gto", replay: str = "exact", timeline: bool = True) -> dict:
    """Replay a planned kernel; returns the per-SM results (arrays with a leading SM axis). replay: "exact"
    (`_replay_sm`, one warp instruction per step, the reference), "fast" (`_replay_sm_fast`, one issue
    cycle of every SM per step, the same window of instructions) or "interval" (`interval.py`). timeline:
    whether the results hold the issue timeline (`timeline.py`); the interval model spends about a fifth of
    its time writing it, the others one issue per scheduler and step."""
    _check_replay(replay)
    pol = jnp.int32(POLICIES.index(policy))
    M = work.queues.shape[0]
    args = (params, work.kernel, *sm_sharded(work.queues, work.n_queue, work.share, work.total), pol)
    cut = lambda out: jax.tree.map(lambda x: x[:M], out)  # noqa: E731  (the padding `sm_sharded` added)
    if replay == "fast":
        out = _covering(lambda steps: cut(replay_fast(*args, jnp.int32(work.shape.steps), n_regs=work.n_regs,
                                                      shape=dataclasses.replace(work.shape, steps=steps))),
                        fast_steps(work), work.shape.steps, work.total)[0]
    elif replay == "interval":  # leaves the timeline out itself where not asked for (a fifth of its step)
        out = _covering(lambda steps: cut(interval.replay_interval(
            *args, jnp.int32(work.shape.steps), n_regs=work.n_regs, shape=interval.shape_with(work.shape, steps),
            widths=interval.operand_widths(work.kernel), timeline=timeline)), interval.steps(work), work.shape.steps,
            work.total)[0]
    else:
        out = cut(globals()["replay"](*args, shape=work.shape, n_regs=work.n_regs))
    return out if timeline else {k: v for k, v in out.items() if k != "timeline"}


def sm_sharded(queues, n_queue, share, total, devices=None, axis: int = 0) -> tuple:
    """A work's per-SM arrays (queues [M, Q], n_queue [M], share [M], total [M]; with axis=1 a stack of them
    [B, M, ...]) as JAX arrays split over the SM axis across `devices` (default: every local device), so that
    the replays, which treat SMs apart, run a part of the SMs on each device (the cores of a CPU host started
    with several host devices, or several GPUs). With one device, the arrays as they are. The SM axis is
    padded to a multiple of the devices with SMs that have no blocks (n_queue 0): they issue nothing, and
    callers cut per-SM results back to M."""
    devices = jax.local_devices() if devices is None else list(devices)
    arrays = (np.asarray(queues), np.asarray(n_queue), np.asarray(share), np.asarray(total))
    if len(devices) < 2:
        return tuple(jnp.asarray(a) for a in arrays)
    M, D = arrays[0].shape[axis], len(devices)
    fill = (-1, 0, 1.0, 0.0)  # no block, no queue, any share, no instructions

    def pad(a, f):
        w = [(0, 0)] * a.ndim
        w[axis] = (0, -M % D)
        return np.pad(a, w, constant_values=f)

    mesh = jax.sharding.Mesh(np.asarray(devices), ("sm",))
    spec = lambda a: jax.sharding.PartitionSpec(*(("sm" if d == axis else None) for d in range(a.ndim)))  # noqa: E731
    return tuple(jax.device_put(pad(a, f), jax.sharding.NamedSharding(mesh, spec(a))) for a, f in zip(arrays, fill))


def _covering(replay_with, steps: int, most: int, total, cap=None):
    """A fast replay (replay_with(steps)) whose steps cover its window: where an SM neither finished nor
    issued the window's `cap` instructions (default `most`; an array broadcast against `total`) within
    `steps`, again with twice the steps (at most `most`), so that both replays extrapolate from the same
    window. Returns (output, steps)."""
    cap = most if cap is None else np.asarray(cap)
    while True:
        out = replay_with(steps)
        if isinstance(out["issued"], jax.core.Tracer):  # under jax.grad / jit: the steps as estimated
            return out, steps
        short = ~np.asarray(out["finished"]) & (np.asarray(out["issued"]) < np.minimum(cap, np.asarray(total)))
        if steps >= most or not short.any():
            return out, steps
        steps = min(2 * steps, most)


def _pad_to(a, shape, value):
    a = np.asarray(a)
    return a if a.ndim == 0 else np.pad(a, [(0, s - d) for s, d in zip(shape, a.shape)], constant_values=value)


_PAD = {"pcs": -1, "dst": -1, "src": -1, "cls": tr.ALU}


def stack(works: list) -> tuple:
    """Works padded to one replay shape and stacked on a leading batch axis [B, ...]: (shape, n_regs, kernel
    arrays, queues, n_queue, share, total, caps: each work's window [B]). Padding never issues: padded warps
    and SMs have empty streams and queues, padded register slots are never read, and a work's replay stops
    at its own window."""
    shape = Shape(max(w.shape.warp_slots for w in works), max(w.shape.block_slots for w in works),
                  works[0].shape.schedulers, max(w.shape.steps for w in works), max(w.shape.inner for w in works))
    kern = {}
    for key in works[0].kernel:
        arrs = [np.asarray(w.kernel[key]) for w in works]
        shp = tuple(max(a.shape[d] for a in arrs) for d in range(arrs[0].ndim))
        kern[key] = jnp.asarray(np.stack([_pad_to(a, shp, _PAD.get(key, 0)) for a in arrs]))
    M = max(w.queues.shape[0] for w in works)
    Q = max(w.queues.shape[1] for w in works)
    return (shape, max(w.n_regs for w in works), kern,
            jnp.asarray(np.stack([_pad_to(w.queues, (M, Q), -1) for w in works])),
            jnp.asarray(np.stack([_pad_to(w.n_queue, (M,), 0) for w in works])),
            jnp.asarray(np.stack([_pad_to(w.share, (M,), 1.0) for w in works])),
            jnp.asarray(np.stack([_pad_to(w.total, (M,), 0.0) for w in works])),
            jnp.asarray([w.shape.steps for w in works], jnp.int32))


@functools.partial(jax.jit, static_argnames=("shape", "n_regs"))
def _replay_batch(params, kern, queues, n_queue, share, total, policy, caps, shape: Shape, n_regs: int):
    f = lambda k, q, n, sh, to, cap: replay_sms(params, k, q, n, sh, to, policy, shape, n_regs, cap)  # noqa: E731
    return jax.vmap(f)(kern, queues, n_queue, share, total, caps)


@functools.partial(jax.jit, static_argnames=("shape", "n_regs"))
def _replay_batch_fast(params, kern, queues, n_queue, share, total, policy, caps, shape: Shape, n_regs: int):
    f = lambda k, q, n, sh, to, cap: replay_sms_fast(params, k, q, n, sh, to, policy, cap, shape, n_regs)  # noqa: E731
    return jax.vmap(f)(kern, queues, n_queue, share, total, caps)


@functools.partial(jax.jit, static_argnames=("shape", "n_regs", "widths"))
def _replay_batch_interval(params, kern, queues, n_queue, share, total, policy, caps, shape: Shape, n_regs: int,
                           widths: tuple):
    f = lambda k, q, n, sh, to, cap: interval.replay_sms_interval(  # noqa: E731
        params, k, q, n, sh, to, policy, cap, shape, n_regs, widths)
    return jax.vmap(f)(kern, queues, n_queue, share, total, caps)


def stacked_replay(works: list, params: dict, policy, replay: str = "exact", stacked=None, with_steps: bool = False):
    """The per-SM results [B, M, ...] of works stacked by `stack` (pass `stacked` to reuse a stacking):
    one vmapped replay, exact or fast (its steps: the most any of the works needs, `fast_steps`, doubled
    until they cover the windows), each work's window its own. with_steps: (results, the replay's steps)."""
    shape, n_regs, kern, queues, n_queue, share, total, caps = stacked or stack(works)
    if replay == "fast":
        steps = min(shape.steps, max(fast_steps(dataclasses.replace(w, shape=dataclasses.replace(
            w.shape, inner=shape.inner))) for w in works))
        out, steps = _covering(lambda st: _replay_batch_fast(
            params, kern, queues, n_queue, share, total, policy, caps,
            shape=dataclasses.replace(shape, steps=st), n_regs=n_regs), steps, shape.steps, total, caps[:, None])
        return (out, steps) if with_steps else out
    if replay == "interval":
        steps = min(shape.steps, max(interval.steps(w) for w in works))
        out, steps = _covering(lambda st: _replay_batch_interval(
            params, kern, queues, n_queue, share, total, policy, caps, shape=interval.shape_with(shape, st),
            n_regs=n_regs, widths=interval.operand_widths(kern)), steps, shape.steps, total, caps[:, None])
        return (out, steps) if with_steps else out
    out = _replay_batch(params, kern, queues, n_queue, share, total, policy, caps, shape=shape, n_regs=n_regs)
    return (out, shape.steps) if with_steps else out


def run_many(works: list, params: dict, policy: str = "gto", replay: str = "exact") -> list:
    """`run` of several planned kernels as one compiled, vmapped replay (their shapes padded to the largest):
    one compilation instead of one per shape. Returns each kernel's per-SM results, cut to its own SMs and
    steps (the same numbers `run` gives each alone, its window steps issuing the same instructions)."""
    _check_replay(replay)
    pol = jnp.int32(POLICIES.index(policy))
    res = [None] * len(works)
    by_chunk = {}  # works of several windows share a replay (each stops at its own), one of each chunk size
    for i, w in enumerate(works):
        by_chunk.setdefault(w.shape.inner, []).append(i)
    for idx in by_chunk.values():
        out = stacked_replay([works[i] for i in idx], params, pol, replay)
        for b, i in enumerate(idx):
            M, WS = works[i].queues.shape[0], works[i].shape.warp_slots
            one = {k: v[b, :M] for k, v in out.items() if k != "timeline"}
            one["stall"] = one["stall"][:, :WS]
            one["timeline"] = tuple(y[b, :M] for y in out["timeline"])
            res[i] = one
    return res


def with_atomics(cycles, atomic_ops, params: dict):
    """Kernel cycles at least the busiest L2 sector's atomic operations one after another: the replay's SMs
    do not see each other's atomics, which serialize where their sector lives."""
    return jnp.maximum(cycles, atomic_ops * params["atomic_cycles_per_op"])


def kernel_cycles(work: Work, params: dict, policy: str = "gto", replay: str = "exact"):
    """Cycles of the whole kernel (its slowest SM, or its busiest atomic sector): a differentiable scalar
    of `params`."""
    return with_atomics(jnp.max(run(work, params, policy, replay, timeline=False)["cycles"]), work.atomic_ops, params)


def uses_tensor(work: "Work") -> bool:
    """Whether the kernel issues Tensor Core instructions (its clock is then `tensor_clock_ghz`)."""
    return bool(np.any(np.asarray(work.kernel["cls"]) == tr.TENSOR))


def summarize(work: Work, out: dict, params: dict, arch: "Arch | str") -> dict:
    """Flat stats (`cycles`, `predicted_ms`, achieved occupancy, stall_* warp-cycles and their share)."""
    arch = get_arch(arch)
    cyc = np.asarray(out["cycles"], np.float64)
    i = int(np.argmax(cyc))
    total = float(with_atomics(cyc[i], work.atomic_ops, params))
    stall = np.asarray(out["stall"], np.float64)[i].sum(axis=0)
    issued = float(np.asarray(out["issued"])[i])
    window = float(np.asarray(out["window_cycles"])[i])
    occ = float(np.asarray(out["warp_cycles"])[i]) / max(window * arch.max_warps_per_sm, 1e-9)
    stats = {"cycles": total, "predicted_ms": float(predicted_ms(total, params, uses_tensor(work))),
             "timing__achieved_occupancy": occ, "timing__issued_in_window": int(issued),
             "timing__window_cycles": window, "timing__extrapolated": int(not bool(np.asarray(out["finished"])[i])),
             "timing__atomic_sector_ops": float(work.atomic_ops)}
    n = max(stall[SELECTED], 1.0)
    for r, name in enumerate(REASONS):
        stats[f"stall_{name}"] = float(stall[r])
        stats[f"stall_{name}_per_issue"] = float(stall[r] / n)
    return stats


def predict(t: tr.Trace, arch: "Arch | str", blocks_per_sm: int, params: Optional[dict] = None,
            policy: str = "gto", grid_blocks: Optional[int] = None, max_steps: Optional[int] = None,
            steps: Optional[int] = None, replay: str = "exact"):
    """Plan, replay (`run`'s replay: exact or fast) and summarize one traced kernel: (stats, work, raw
    per-SM output)."""
    params = params if params is not None else params_of(arch)
    work = plan(t, arch, blocks_per_sm, grid_blocks, max_steps, steps=steps)
    out = run(work, params, policy, replay)
    return summarize(work, out, params, arch), work, out


# ---------------------------------------------------------------------------------------------
# Launches
# ---------------------------------------------------------------------------------------------

MAX_TRACED_BLOCKS = 32


def traced_blocks(n_ctas: int, blocks_per_sm: int, num_sms: int, limit: int = MAX_TRACED_BLOCKS,
                  rounds: int = 2) -> np.ndarray:
    """Blocks to trace: all when the grid has at most `limit`, else the first blocks the busiest SM runs
    (i, i + num_sms, ...): `rounds` rounds of its resident blocks, whose streams stand for the others."""
    if n_ctas <= limit:
        return np.arange(n_ctas)
    n = min(-(-n_ctas // num_sms), max(rounds * blocks_per_sm, 1), limit)
    return np.arange(n) * num_sms


# ---------------------------------------------------------------------------------------------
# The issue timeline, drawn
# ---------------------------------------------------------------------------------------------

STALL_COLOURS = {"not_selected": "#c7c7c7", "wait": "#9ecae1", "short_scoreboard": "#6baed6",
                 "long_scoreboard": "#e6550d", "barrier": "#756bb1", "branch_resolving": "#fdd0a2",
                 "math_pipe_throttle": "#31a354", "mio_throttle": "#e7ba52", "lg_throttle": "#ad494a",
                 "no_instruction": "#f0f0f0"}


def plot_timeline(out: dict, path: str, sm: int = 0, max_issues: int = 4000, title: str = "") -> None:
    """Draw one simulated SM's issue timeline to a PNG: one row per warp slot (grouped by scheduler), a
    black tick per issued instruction, and the wait before each issue coloured by its stall reason."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    time_, slot, sched, pc, _, reason, start = (np.asarray(y[sm]) for y in out["timeline"])
    ok = np.flatnonzero(pc >= 0)[:max_issues]
    if ok.size == 0:
        raise ValueError("the timeline has no issued instruction")
    nsch = int(sched[ok].max()) + 1
    rows = sorted(set(slot[ok].tolist()), key=lambda w: (w % nsch, w))
    y_of = {w: i for i, w in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(12, 0.25 * len(rows) + 1.5))
    for r, name in enumerate(REASONS):
        if name not in STALL_COLOURS:
            continue
        sel = ok[reason[ok] == r]
        if sel.size:
            ax.barh([y_of[w] for w in slot[sel]], time_[sel] - start[sel], left=start[sel], height=0.8,
                    color=STALL_COLOURS[name], linewidth=0)
    ax.scatter(time_[ok], [y_of[w] for w in slot[ok]], marker="|", s=30, c="black", linewidths=0.8)
    ax.set_yticks(range(len(rows)), [f"warp {w} (sched {w % nsch})" for w in rows], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    ax.set_title(title or "issue timeline (ticks: issues; bars: the wait before each, by stall reason)")
    ax.legend(handles=[Patch(color=c, label=n) for n, c in STALL_COLOURS.items()], fontsize=7, ncol=5,
              loc="upper center", bbox_to_anchor=(0.5, -0.12 if len(rows) > 8 else -0.3))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
