"""The interval model: every warp's issue and stall intervals from one pass over its instructions, combined per SM
by a closed queueing network.

The exact replay (`replay.py`) issues one warp instruction per step and settles every contention cycle by cycle.
This model splits the SM's time in two, as GPUMech (Huang et al., MICRO 2014) and GCoM do:

1. **The warps alone.** One `lax.scan` step advances every resident warp of every simulated SM by one instruction
   (a warp at a barrier waits for its block), with the latencies and service times of the exact replay but
   nothing shared: each instruction issues when its warp and its scoreboard allow. This gives each SM's
   isolated window time T1 (its warps' issue intervals and the stalls between them, barriers, branch
   resolution, block starts and launch gaps included) and what its instructions ask of each shared resource:
   issue cycles on the warp schedulers and their pipes, wavefronts of the MIO / L1TEX data pipe, cycles of the
   L1 stage, of the SM's share of L2 and of DRAM bandwidth.
2. **The warps together.** The N resident warps are N customers of a closed queueing network whose queues are
   those resources (the schedulers' and pipes' share split over the schedulers, the rest shared by the SM).
   Each warp takes T1 per pass through the window alone, its service D_r at each queue included; together it
   also waits at each queue for the service of the warps ahead of it. Exact mean value analysis (MVA) over the
   population 1..N gives the throughput X(N) and the window's time with contention, T = N / X(N); with N = 1
   it is T1, and when one resource saturates the window takes N D_r of it. The window's two halves (the warps'
   first pass, then the steady state the extrapolation continues) are analysed apart, and every time of the
   isolated pass is stretched by its half's T / T1, the extrapolation of long queues included.

A step issues up to one instruction per resident warp (64 on an H200 SM at full occupancy) with no interaction
between warps but their block's barrier, so a whole-GPU window of W instructions per SM takes about W / 64
steps of cheap, elementwise work. What the model leaves out, against the exact replay: which warp waits when
several contend (MVA is a mean over them), the order of the memory queues (tandem stages count as separate
queues), burstiness (all warps loading at once at a block's start is averaged over the window half), the extra
barrier wait contention causes, and stores: a warp does not wait for its stores, so the exact replay ends a
kernel with the stores still draining where MVA charges them to the warps that issued them. The departures
on the calibration samples are in docs/timing.md ("The interval model"); the exact replay stays the reference.

Shapes as in `replay.py`: WS warp slots, RB block slots, NSCH schedulers, NR register slots, S steps.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt.timing import machine as mc
from jaxsimt.timing import trace as tr

NARROW = (4, 4)  # (sources, destinations): an instruction of more is wide (read and written for a few warps a step)
WIDE_SHARE = 8  # a step reads the operands of wide instructions for at most 1 / WIDE_SHARE of the warp slots
SLACK = 1.0  # scan steps per instruction of a resident warp's window share (more where warps wait: `replay._covering`)
# the queues of the network: scheduler issue (with its pipes), MIO / L1TEX data pipe, L1 stage, L2 share, DRAM share
QUEUES = ("issue", "mio", "l1", "l2", "dram")
_INF = mc._INF


# columns of the per-instruction table (`_instruction_table`): what an instruction does in the isolated pass
(C_CLS, C_FOLDED, C_BARRIER, C_CONTROL, C_DONE, C_NEXT, C_PIPE, C_SLOT, C_KIND, C_THROTTLE) = range(10)
# then per queue of QUEUES its cycles (the issue queue's column stays 0: slots and pipes give it), then the same
# for an instruction its warp waits on (a load: its result; a store does not hold its warp)
C_DEMAND = 10
N_COLS = C_DEMAND + 2 * len(QUEUES)


def _instruction_table(p: dict, k: mc.Kernel, lo: dict, shape: mc.Shape):
    """Per static instruction [NI, N_COLS] (float32): its class, whether it is folded, a barrier, a control
    instruction; the cycles from its issue to its result with the shared resources idle (C_DONE), to its warp's
    next issue (C_NEXT), its pipe's issue interval and its scheduler slot; the scoreboard kind its result sets
    and the throttle reason of its pipe; its cycles at each queue, all and those its warp waits for. Everything
    the isolated pass needs of an instruction, gathered as one row per warp and step."""
    NSCH = shape.schedulers
    cl, fw = k["cls"], k["folded"]
    lat, issue = lo["lat"], lo["issue"]
    is_sh, is_gl, is_ctl = (cl == tr.SHARED) | (cl == tr.SHUFFLE), cl == tr.GLOBAL, cl == tr.CONTROL
    sec, req, hit_l1, todr = k["sectors"], k["requests"], k["hit_l1"], k["to_dram"]
    o1 = mc._tag_stage_cycles(req, k["wavefronts"], p)
    miss = sec * (1.0 - hit_l1)
    d2 = miss / lo["sectors_per_cycle_l2"]
    d3 = miss * todr / lo["sectors_per_cycle_dram"]
    glat = mc._global_latency(hit_l1, k["dram_wait"], req, k["wavefronts"], p)
    wav = mc._data_stage_cycles(k["wavefronts"], p)
    # with the queues idle the global stages overlap as in the exact replay: the longest of them, then the latency
    done = jnp.where(is_sh, wav + p["shared_latency"],
                     jnp.where(is_gl, jnp.maximum(jnp.maximum(o1, wav), d2 + d3) + glat, lat[cl]))
    interval = jnp.where(cl == tr.TENSOR,
                         jnp.maximum(issue[tr.TENSOR], k["flops"] * NSCH / p["tensor_flops_per_cycle_per_sm"]),
                         issue[cl])
    z = jnp.zeros_like(done)
    cols = [cl.astype(jnp.float32), fw.astype(jnp.float32), (cl == tr.BARRIER).astype(jnp.float32),
            is_ctl.astype(jnp.float32), jnp.where(fw, 0.0, done),
            jnp.where(fw, 0.0, jnp.where(is_ctl, p["branch_latency"], 1.0)), interval,
            jnp.maximum(jnp.where((cl == tr.ALU) | is_ctl, p["alu_dispatch_cycles"], 1.0), k["issue_floor"]),
            lo["kind_t"][cl].astype(jnp.float32), lo["thr_t"][cl].astype(jnp.float32),
            z, jnp.where(is_sh | is_gl, wav, 0.0), jnp.where(is_gl, o1, 0.0),
            jnp.where(is_gl, d2, 0.0), jnp.where(is_gl, d3, 0.0)]
    waits = k["dst"][:, 0] >= 0
    cols += [jnp.where(waits, x, 0.0) for x in cols[C_DEMAND:]]
    return jnp.where(fw[:, None] & (jnp.arange(N_COLS) >= C_PIPE)[None, :] & (jnp.arange(N_COLS) != C_KIND)[None, :],
                     0.0, jnp.stack(cols, axis=1))


def _read_scoreboard(reg, rows, wep, regs, NR: int):
    """The latest ready time [n] and its scoreboard kind [n] over the register slots regs [n, operands] (-1: none)
    of warp slots rows [n] whose blocks are in epochs wep [n], from the register file reg [WS, NR, 2]; a register
    written in an earlier block of the warp slot (another epoch) reads as ready."""
    n = regs.shape[0]
    # through the flat register file: a one-index gather is cheaper than take_along_axis's
    got = jnp.take(reg.reshape(-1, 2), (rows[:, None] * NR + jnp.maximum(regs, 0)).reshape(-1), axis=0,
                   mode="clip").reshape(n, -1, 2)
    ek = got[:, :, 1].astype(jnp.int32)
    rt = jnp.where((regs >= 0) & ((ek >> 4) == wep[:, None]), got[:, :, 0], 0.0)
    return jnp.max(rt, axis=1), jnp.take_along_axis(ek, jnp.argmax(rt, axis=1)[:, None], axis=1)[:, 0] & 15


def _isolated_sm(p: dict, k: mc.Kernel, queue, n_queue, share, total, cap, shape: mc.Shape, n_regs: int,
                 timeline: bool = True, narrow: tuple = ()):
    """One SM's window with its warps alone (step 1 of the module docstring): every ready warp issues its next
    instruction each step. cap: warp instructions of the window (the exact replay's steps). Returns the
    replay's dict of results (`replay._window_result`) for the isolated SM, plus `demand` [2 len(QUEUES)]: the
    window's cycles at each queue over all warps, then those of instructions their warps wait for, `demand_halves`
    [2, 2 len(QUEUES)] the same for each half of the window, `warps`: the resident warps, `t0`: the first block's
    start."""
    WS = shape.warp_slots
    NR = n_regs
    NW, L = k["pcs"].shape
    lo, c = mc._sm_start(p, k, queue, n_queue, share, shape, n_regs)
    j, wpb, bslot, wib, valid, sched, rb = (lo[x] for x in ("j", "wpb", "bslot", "wib", "valid", "sched", "rb"))
    table = _instruction_table(p, k, lo, shape)
    regtab = jnp.concatenate([k["src"], k["dst"]], axis=1)  # [NI, sources + destinations]
    n_src = k["src"].shape[1]
    # instructions of more operands than `narrow`'s (a WMMA mma's 24 sources): at most wide_k warps of the SM
    # read and write their registers each step, the others every warp's narrow columns; a warp at a wide
    # instruction beyond those waits for a later step, which changes none of its times (they are its own), only
    # the step at which the window's halves split
    wide_k = max(1, WS // WIDE_SHARE) if narrow else 0
    if wide_k:
        ns_n, nd_n = narrow
        wide = (jnp.sum(k["src"] >= 0, axis=1) > ns_n) | (jnp.sum(k["dst"] >= 0, axis=1) > nd_n)
        table = jnp.concatenate([table, wide[:, None].astype(jnp.float32)], axis=1)
        regtab_n = jnp.concatenate([k["src"][:, :ns_n], k["dst"][:, :nd_n]], axis=1)
    members = valid[None, :] & (bslot[None, :] == rb[:, None])  # [RB, WS]
    n_members = jnp.sum(members, axis=1)
    reason_ids = jnp.arange(len(mc.REASONS), dtype=jnp.int32)[None, :]
    cls_ids = jnp.arange(tr.N_CLASSES, dtype=jnp.int32)
    c = {k_: v for k_, v in c.items() if k_ != "reg_t"}  # replaced by `reg` below
    # per register slot: its ready time and 16 x the epoch of its warp slot's block when written + the scoreboard
    # kind (as a float: one array, gathered and updated in place once per step)
    c = dict(c, reg=jnp.stack([jnp.zeros((WS, NR), jnp.float32), jnp.full((WS, NR), float(mc.WAIT), jnp.float32)], -1),
             wep=jnp.zeros(WS, jnp.int32),
             bar_t=jnp.zeros(WS, jnp.float32), t_last=lo["f0"], demand=jnp.zeros(2 * len(QUEUES), jnp.float32),
             pipe_d=jnp.zeros((WS, tr.N_CLASSES), jnp.float32), slot_d=jnp.zeros(WS, jnp.float32),  # per warp slot
             own_pipe=jnp.zeros((WS, tr.N_CLASSES), jnp.float32))

    def step(c, _):
        tb = c["slot_tb"][bslot]
        tw = jnp.clip(tb * wpb + wib, 0, NW - 1)
        go = valid & (tb >= 0) & ~c["done"] & ~c["bar"] & (c["issued"] < cap)
        pc = jnp.maximum(k["pcs"][tw, jnp.clip(c["pos"], 0, L - 1)], 0)
        row = table[pc]  # [WS, N_COLS (+ 1: wide)]
        cl = row[:, C_CLS].astype(jnp.int32)
        fw, is_ctl = row[:, C_FOLDED] > 0, row[:, C_CONTROL] > 0
        if wide_k:
            want = go & (row[:, N_COLS] > 0)
            rank = jnp.cumsum(want) - want
            go = go & ~(want & (rank >= wide_k))
            pick = jnp.nonzero(want & (rank < wide_k), size=wide_k, fill_value=WS)[0]  # [wide_k], WS: none
            pw = jnp.minimum(pick, WS - 1)
            regs = regtab_n[pc]
            dst = regs[:, ns_n:]
            regs_w = regtab[pc[pw]]  # every operand of the picked warps' instructions
            dep, dep_kind = _read_scoreboard(c["reg"], j, c["wep"], regs, NR)
            dep_w, kind_w = _read_scoreboard(c["reg"], pw, c["wep"][pw], regs_w, NR)
            dep, dep_kind = dep.at[pick].set(dep_w, mode="drop"), dep_kind.at[pick].set(kind_w, mode="drop")
        else:
            regs = regtab[pc]
            dst = regs[:, n_src:]
            dep, dep_kind = _read_scoreboard(c["reg"], j, c["wep"], regs, NR)
        # the reads above before the register file's in-place update below (else XLA copies it every step)
        dep, dep_kind, reg_in = lax.optimization_barrier((dep, dep_kind, c["reg"]))
        x1 = c["wfree"]
        x2 = jnp.where(fw, x1, jnp.maximum(x1, dep))
        # the warp's own previous instruction of the class holds its pipe (other warps' uses are contention)
        mine_c = (cl[:, None] == cls_ids[None, :]) & ~fw[:, None]  # [WS, classes]
        T = jnp.maximum(x2, jnp.max(jnp.where(mine_c, c["own_pipe"], -_INF), axis=1))
        complete = jnp.where(fw, jnp.maximum(T, dep), T + row[:, C_DONE])
        busy = go & ~fw
        mine_c = mine_c & go[:, None]
        slot_d = c["slot_d"] + jnp.where(busy, row[:, C_SLOT], 0.0)
        pipe_d = c["pipe_d"] + jnp.where(mine_c, row[:, C_PIPE][:, None], 0.0)
        own_pipe = jnp.where(mine_c, (T + row[:, C_PIPE])[:, None], c["own_pipe"])
        demand = c["demand"] + jnp.sum(jnp.where(go[:, None], row[:, C_DEMAND:N_COLS], 0.0), axis=0)
        # -- stall accounting: readiness (branch / barrier / block start), the scoreboard, the warp's own pipe --
        x0 = c["last_issue"] + 1.0
        sa = jnp.maximum(x1 - x0, 0.0)
        sb = jnp.maximum(x2 - jnp.maximum(x1, x0), 0.0)
        sc = jnp.maximum(T - jnp.maximum(x2, x0), 0.0)
        thr = row[:, C_THROTTLE].astype(jnp.int32)
        r_ = reason_ids
        stall = c["stall"] + busy[:, None] * (jnp.where(r_ == c["wreason"][:, None], sa[:, None], 0.0)
                                              + jnp.where(r_ == dep_kind[:, None], sb[:, None], 0.0)
                                              + jnp.where(r_ == thr[:, None], sc[:, None], 0.0)
                                              + jnp.where(r_ == mc.SELECTED, 1.0, 0.0))
        # -- scoreboard: only the written register slots change --
        dcol = jnp.where(go[:, None] & (dst >= 0), dst, NR)
        rows = j[:, None] + 0 * dcol
        tag = (c["wep"] * 16 + row[:, C_KIND].astype(jnp.int32)).astype(jnp.float32)
        written = jnp.stack([complete, tag], -1)  # [WS, 2]
        reg = reg_in.at[rows, dcol].set(jnp.broadcast_to(written[:, None, :], dcol.shape + (2,)), mode="drop")
        if wide_k:  # the picked warps' further destinations
            dcol_w = jnp.where((pick < WS)[:, None] & (regs_w[:, n_src:] >= 0), regs_w[:, n_src:], NR)
            reg = reg.at[pw[:, None] + 0 * dcol_w, dcol_w].set(
                jnp.broadcast_to(written[pw][:, None, :], dcol_w.shape + (2,)), mode="drop")
        # -- the warps --
        wfree = jnp.where(go, T + row[:, C_NEXT], x1)
        wreason = jnp.where(go, jnp.where(is_ctl & ~fw, mc.BRANCH, mc.NOT_SELECTED), c["wreason"])
        last_issue = jnp.where(busy, T, c["last_issue"])
        pos = c["pos"] + go.astype(jnp.int32)
        finished = go & (pos >= k["length"][tw])
        done = c["done"] | finished
        wend = jnp.where(finished, T + 1.0, c["wend"])
        end_t = jnp.maximum(c["end_t"], jnp.max(jnp.where(finished, T + 1.0, -_INF)))
        # -- barriers: a block releases when every unfinished warp has arrived --
        arrive = go & (row[:, C_BARRIER] > 0)
        bar = c["bar"] | arrive
        bar_t = jnp.where(arrive, T, c["bar_t"])
        release = jnp.all(~members | bar[None, :] | done[None, :], axis=1) & jnp.any(members & bar[None, :], axis=1)
        rel_t = jnp.max(jnp.where(members & bar[None, :], bar_t[None, :], -_INF), axis=1) + p["barrier_latency"]
        rel = release[bslot] & valid & bar
        wfree = jnp.where(rel, rel_t[bslot], wfree)
        wreason = jnp.where(rel, mc.BAR, wreason)
        bar = bar & ~rel
        # -- block completion: the freed slots take the next blocks of the queue --
        blk_done = jnp.any(members & finished[None, :], axis=1) & jnp.all(~members | done[None, :], axis=1)
        blk_end = jnp.max(jnp.where(members, wend[None, :], 0.0), axis=1)
        nx = mc._next_blocks(p, lo, c, blk_done, blk_end, queue, n_queue)
        occ = c["occ"] + jnp.sum(jnp.where(blk_done, n_members * (c["slot_tb"] >= 0) * (blk_end - c["slot_start"]),
                                           0.0))
        fresh = blk_done[bslot] & valid
        start = nx["start"][bslot]
        n_go = jnp.sum(go.astype(jnp.int32))
        t_last = jnp.maximum(c["t_last"], jnp.max(jnp.where(go, T, -_INF)))
        c2 = dict(c, slot_tb=nx["slot_tb"], slot_start=jnp.where(blk_done, nx["start"], c["slot_start"]),
                  qnext=nx["qnext"], disp=nx["disp"], pos=jnp.where(fresh, 0, pos),
                  done=jnp.where(fresh, nx["next"][bslot] < 0, done), wfree=jnp.where(fresh, start, wfree),
                  wreason=jnp.where(fresh, mc.NOINST, wreason), last_issue=jnp.where(fresh, start - 1.0, last_issue),
                  reg=reg, wep=c["wep"] + fresh.astype(jnp.int32), bar=bar, bar_t=bar_t, wend=wend,
                  age=jnp.where(fresh, nx["index"][bslot] * wpb + wib, c["age"]), stall=stall, end_t=end_t, occ=occ,
                  issued=c["issued"] + n_go, t_last=t_last, demand=demand, pipe_d=pipe_d, slot_d=slot_d,
                  own_pipe=jnp.where(fresh[:, None], 0.0, own_pipe))
        gap_reason = jnp.where(sc > jnp.maximum(sa, sb), thr, jnp.where(sb > sa, dep_kind, c["wreason"]))
        ys = (c2["issued"], t_last, demand, jnp.sum(slot_d), jnp.sum(pipe_d, axis=0))
        if timeline:  # a fifth of the step's cost: only when asked for
            ys += (jnp.where(busy, T, jnp.nan), jnp.where(busy, j, -1), jnp.where(busy, sched, -1),
                   jnp.where(busy, pc, -1), jnp.where(busy, tw, -1),
                   jnp.where(busy & (sa + sb + sc > 0), gap_reason, -1), x0)
        return c2, ys

    inner = functools.partial(lax.scan, step, length=shape.inner)
    chunk = jax.checkpoint(lambda c, _: inner(c, None)) if mc.CHECKPOINT else (lambda c, _: inner(c, None))
    c, ys = lax.scan(chunk, c, None, length=shape.steps // shape.inner)
    out = mc._window_result(c, ys[0], ys[1], ys[5:] if timeline else None, n_queue, total, n_members)
    # the window's halves by instructions (as the extrapolation splits it): the time and demands of each
    n_cum, t_run = ys[0].reshape(-1), ys[1].reshape(-1)
    kh = jnp.argmax(n_cum >= c["issued"] // 2)
    # the issue queue: the larger of the issue slots and the busiest pipe (they overlap), over the schedulers
    Q = len(QUEUES)
    issue_half = jnp.maximum(ys[3].reshape(-1)[kh], jnp.max(ys[4].reshape(-1, tr.N_CLASSES)[kh]))
    issue_whole = jnp.maximum(jnp.sum(c["slot_d"]), jnp.max(jnp.sum(c["pipe_d"], axis=0)))
    half = ys[2].reshape(-1, 2 * Q)[kh].at[0].set(issue_half).at[Q].set(issue_half)
    whole = c["demand"].at[0].set(issue_whole).at[Q].set(issue_whole)
    out["demand"] = whole
    out["demand_halves"] = jnp.stack([half, whole - half])
    out["t_half"] = t_run[kh]
    out["warps"] = jnp.sum(valid & (bslot < jnp.minimum(lo["R"], n_queue)))
    out["t0"] = lo["t0"]
    return out


def mva(demand, alone, n, n_max: int, local, waits=None):
    """Exact mean value analysis of a closed network: `n` customers (warps; at most the static `n_max`), each
    taking `alone` cycles per cycle through the network when it is alone (its service included), with `demand`
    [Q] cycles of service at each queue in it; a queue of which the SM has NSCH equal copies, a customer seeing
    only its own, has `local` [Q] 1 / NSCH (else 1). By the arrival theorem a customer finds at each queue the
    mean queue the other n - 1 leave there and waits for their service: R_q(n) = W_q Q_q(n - 1) local_q,
    X(n) = n / (alone + sum_q R_q(n)), Q_q(n) = X(n) (R_q(n) + D_q) (with W = D, the standard recursion with the
    think time alone - sum D, which here is never negative). `waits` [Q] (default `demand`): the part of the
    demand whose customer waits for it; the rest (stores) occupies the queue without holding its customer.
    Returns the throughput X(n) (cycles through the network per unit time) and the mean time a customer spends
    at each queue, waiting and served [Q]."""
    waits = demand if waits is None else waits

    def body(q, i):
        r = waits * q * local
        x = i / jnp.maximum(alone + jnp.sum(r), 1e-9)
        return jnp.where(i <= n, x * (r + demand), q), (x, r + demand)

    _, (xs, rs) = lax.scan(body, jnp.zeros_like(demand), jnp.arange(1, n_max + 1, dtype=jnp.float32))
    idx = jnp.clip(n - 1, 0, n_max - 1).astype(jnp.int32)
    return xs[idx], rs[idx]


def _interval_sm(p: dict, k: mc.Kernel, queue, n_queue, share, total, cap, shape: mc.Shape, n_regs: int,
                 timeline: bool = True, narrow: tuple = ()):
    """One SM through the interval model: the isolated window (`_isolated_sm`), its demands per resident warp
    through `mva`, every time stretched by the contended over the isolated window time. Returns the replay's
    dict of results, plus `isolated_cycles` and `stretch`."""
    out = _isolated_sm(p, k, queue, n_queue, share, total, cap, shape, n_regs, timeline, narrow)
    NSCH = shape.schedulers
    n = jnp.maximum(out["warps"], 1).astype(jnp.float32)
    local = jnp.asarray([1.0 / NSCH, 1.0, 1.0, 1.0, 1.0], jnp.float32)
    t0, t_half = out["t0"], out["t_half"]
    end_iso = out["cycles"]

    Q = len(QUEUES)
    # the backlog a queue lets the warps run ahead of it (its throttle): the issue queue none, the MIO and L1 their
    # queues', the L2 and DRAM shares all (nothing throttles on them: only loads wait for them)
    depth = jnp.stack([jnp.float32(0.0), p["mio_queue_cycles"], p["lsu_queue_cycles"], mc._INF, mc._INF])

    def contended(t_iso, demand):  # MVA's time for a stretch of the window the warps took t_iso cycles alone
        t_iso = jnp.maximum(t_iso, 1.0)
        per_warp = demand[:Q] / n
        x, resid = mva(per_warp, t_iso, n, shape.warp_slots, local, waits=demand[Q:] / n)
        # a queue saturated by work nobody waits for (stores) holds the warps at its throttle
        bound = jnp.max(demand[:Q] * local - depth)
        return jnp.maximum(n / jnp.maximum(x, 1e-9), bound), jnp.maximum(resid - per_warp, 0.0)

    # the window's first half (the warps' first pass: startup), then its second (the steady state, which the
    # extrapolation continues), each stretched by its own contention
    t_a, q_a = contended(t_half - t0, out["demand_halves"][0])
    t_b, q_b = contended(out["window_cycles"] - t_half, out["demand_halves"][1])
    s_a = t_a / jnp.maximum(t_half - t0, 1.0)
    s_b = t_b / jnp.maximum(out["window_cycles"] - t_half, 1.0)
    stretch_t = lambda t: jnp.where(t <= t_half, t0 + s_a * (t - t0), t0 + t_a + s_b * (t - t_half))  # noqa: E731
    cycles = stretch_t(end_iso)
    window_end = stretch_t(out["window_cycles"])
    t_iso = jnp.maximum(out["window_cycles"] - t0, 1.0)
    t_win = window_end - t0
    stretch = t_win / t_iso
    queued = q_a + q_b
    # the contention's warp-cycles, charged to the queues in proportion to their queueing time
    wait = queued / jnp.maximum(jnp.sum(queued), 1e-9) * n * (t_win - t_iso)
    to_reason = jnp.asarray([mc.NOT_SELECTED, mc.MIO, mc.LG, mc.LONG, mc.LONG], jnp.int32)
    extra = jnp.zeros(len(mc.REASONS), jnp.float32).at[to_reason].add(wait)
    valid = out["stall"][:, mc.SELECTED] > 0
    stall = out["stall"] + jnp.where(valid[:, None], extra[None, :] / jnp.maximum(jnp.sum(valid), 1), 0.0)
    out = dict(out, cycles=cycles, window_cycles=window_end, stall=stall, warp_cycles=out["warp_cycles"] * stretch,
               isolated_cycles=out["cycles"], stretch=stretch)
    if timeline:
        tl = out["timeline"]
        out["timeline"] = (stretch_t(tl[0]),) + tuple(tl[1:6]) + (stretch_t(tl[6]),)
    return out


def operand_widths(kernel: mc.Kernel) -> tuple:
    """(source, destination) register columns any instruction of the kernel arrays uses (at least 1 each): the
    scoreboard's gather and scatter need no more of the padded ones; then the same over the instructions of at
    most NARROW operands each, where others use more (a WMMA mma's 24 sources: `_isolated_sm` reads those for
    a few warps a step)."""
    src, dst = (np.sum(np.asarray(kernel[x]) >= 0, axis=-1) for x in ("src", "dst"))
    used = lambda a: max(1, int(np.max(a, initial=0)))  # noqa: E731
    widths = (used(src), used(dst))
    small = (src <= NARROW[0]) & (dst <= NARROW[1])
    return widths if small.all() else widths + (used(src[small]), used(dst[small]))


def replay_sms_interval(params: dict, k: mc.Kernel, queues, n_queue, share, total, policy, cap, shape: mc.Shape,
                        n_regs: int, widths: tuple = (), timeline: bool = True):
    """`replay.replay_sms` through the interval model (vmapped over SMs); policy is unused (MVA is a mean over
    the warps); cap: the window's warp instructions per SM; widths: `operand_widths` of the kernel (static;
    default every column); timeline: whether the results hold the issue timeline (static)."""
    if widths:  # operands are packed to the left: the columns beyond the widest instruction's are all -1
        k = dict(k, src=k["src"][..., :widths[0]], dst=k["dst"][..., :widths[1]])
    narrow = tuple(widths[2:4])
    f = lambda q, n, sh, to: _interval_sm(params, k, q, n, sh, to, cap, shape, n_regs, timeline, narrow)  # noqa: E731
    return jax.vmap(f)(queues, n_queue, share, total)


replay_interval = jax.jit(replay_sms_interval, static_argnames=("shape", "n_regs", "widths", "timeline"))


CHUNK = 16  # the interval model's steps are a multiple of this (its chunks are `shape_with`'s)


def steps(work, slack: float = SLACK) -> int:
    """Scan steps of the interval model for a work: its window's instructions (`work.shape.steps`) over the
    resident warps, times `slack`; a multiple of CHUNK, at most the exact replay's steps."""
    S = work.shape.steps
    resident = max(1, min(int(work.kernel["blocks"]), int(np.max(work.n_queue))) * int(work.kernel["wpb"]))
    need = slack * min(S, float(max(work.total.max(), 1.0))) / resident
    return int(min(S, max(CHUNK, -(-int(np.ceil(need)) // CHUNK) * CHUNK)))


def shape_with(shape: mc.Shape, n_steps: int) -> mc.Shape:
    """The replay shape for `n_steps` steps of the interval model: its checkpointed chunks the largest divisor of
    both the steps and the shape's chunk."""
    return dataclasses.replace(shape, steps=n_steps, inner=math.gcd(n_steps, shape.inner))
