"""Independent Thread Scheduling (Volta and later): per-lane program counters instead of a stack.

The second execution mode of the machine, chosen per launch (`jaxsimt.launch(..., mode="its")`); the
default everywhere stays the reconvergence stack of `jaxsimt.units.stack`. Each lane has its own pc (a basic
block index); the lanes of a warp standing at one pc form a *pc group*, and a warp runs one group at a
time, so diverged paths interleave and a lane can wait for another lane of its own warp.

Which group a warp runs (the scheduling policy, documented in docs/its.md):
- a lane is *ready* when it has not finished, does not wait at `bar.sync`, and is not held at the entry
  of a warp-synchronous block (below);
- among the ready lanes that have not *yielded*, the warp runs the group with the lowest pc; all ready
  lanes standing at that pc run together (opportunistic reconvergence: lanes at one pc merge);
- a group that takes a backward branch (to a block not after the current one) yields: the warp's
  other groups get their turn before it runs again. When every ready lane has yielded, a new round
  starts (the flags clear) and the lowest pc runs again.
  Lowest-pc-first keeps forward code reconverging at its joins as the stack would; yielding at
  backward branches guarantees forward progress: a group stuck in a loop (a spin on a lock) cannot
  starve a group of its warp (the lock's holder) for more than one iteration.
- Warp-synchronous instructions wait for their member lanes: `bar.warp.sync` / `jaxsimt.syncwarp`
  (`__syncwarp`), `shfl.sync`, `vote.sync` and the warp-wide tensor-core instructions start a block
  (`split_at_sync` cuts blocks before them), and a group at such a block is held until every live lane
  of the instruction's member mask stands there too.
- `bar.sync` counts threads, not warps: a lane arriving waits; when every live lane of the thread
  block waits, all are released.

Across warps the step picks, as in stack mode, the block at which the most warps' chosen groups stand,
except that a warp left waiting for more steps than the program has blocks runs next (`pick_block`), so
no warp starves either (a lock held by one warp and spun on by others).

Shapes: W warps, L lanes; pcs are block indices, `exit_pc` for finished (or never valid) lanes.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax

from jaxsimt import errors
from jaxsimt.units import barriers, isa
from jaxsimt.machine.core import RECENT, Counters, Fault, Machine, State, TermKind, pick_block
from jaxsimt.program import Program, recut
from jaxsimt.units.intops import mod

FULL = 0xFFFFFFFF



class Lanes(NamedTuple):
    """The per-lane control state of ITS mode (held in `State.stack`)."""

    pc: jnp.ndarray  # [W, L] int32  block each lane stands at; exit_pc: finished or not a thread
    bar: jnp.ndarray  # [W, L] bool  waiting at bar.sync
    yielded: jnp.ndarray  # [W, L] bool  took a backward branch in the warp's current round
    age: jnp.ndarray  # [W] int32  steps since the warp last ran while it was ready


def member_mask(ins) -> int:
    """Static member mask of a warp-synchronous instruction (`isa.member_mask`; all lanes when it is held in
    a register or the instruction has none)."""
    m = isa.member_mask(ins)
    return FULL if m is None else m


def split_at_sync(program: Program) -> tuple[Program, dict]:
    """The ITS view of a program: blocks cut before every warp-synchronous instruction, so that each such
    instruction starts a block. Instruction order (and so every pc) is unchanged.

    Returns (program, {block index: member mask} of the blocks that start with such an instruction)."""
    pieces: list[list] = []  # per old block: list of instruction lists
    for b in program.blocks:
        parts, cur = [], []
        for ins in b.instrs:
            inner = ins.operation
            if inner is not ins and isa.is_warp_sync(inner):
                raise NotImplementedError(
                    f"kernel {program.name}: predicated warp-synchronous instruction {inner.op} ({ins.loc}) is "
                    f"not supported in ITS mode")
            if isa.is_warp_sync(ins) and cur:
                parts.append(cur)
                cur = []
            cur.append(ins)
        parts.append(cur)
        pieces.append([(part, b.interpret) for part in parts])
    out = recut(program, pieces)
    sync = {blk.index: member_mask(blk.instrs[0]) for blk in out.blocks if blk.instrs and isa.is_warp_sync(blk.instrs[0])}
    return out, sync


# ---------------------------------------------------------------------------------------------
# Pure pieces of the ITS step, over [W, L] arrays
# ---------------------------------------------------------------------------------------------


def init(valid, exit_pc: int) -> Lanes:
    """valid: [W, L] bool lanes that are threads of a running block; they start at block 0."""
    z = jnp.zeros(valid.shape, bool)
    return Lanes(jnp.where(valid, 0, exit_pc).astype(jnp.int32), z, z, jnp.zeros(valid.shape[:1], jnp.int32))


def held_at_sync(lanes: Lanes, live, sync: dict, lane_bit):
    """[W, L] bool: lanes standing at a warp-synchronous block whose member lanes have not all arrived."""
    held = jnp.zeros(live.shape, bool)
    for blk, mask in sync.items():  # few blocks: a static loop
        here = live & ~lanes.bar & (lanes.pc == blk)
        member = (jnp.uint32(mask) & lane_bit) != 0
        missing = jnp.any(live & member[None, :] & ~here, axis=1, keepdims=True)
        held = held | (here & missing)
    return held


def choose(lanes: Lanes, ready, big: int):
    """The group each warp runs: lowest pc among ready lanes that have not yielded (all ready lanes when
    every one has). Returns (pc [W], group [W, L] bool, warp ready [W] bool, yielded flags after a new
    round starts)."""
    fresh = ready & ~lanes.yielded
    any_fresh = jnp.any(fresh, axis=1, keepdims=True)
    cand = jnp.where(any_fresh, fresh, ready)
    yielded = lanes.yielded & any_fresh
    pc = jnp.min(jnp.where(cand, lanes.pc, big), axis=1)
    group = ready & (lanes.pc == pc[:, None])
    return pc, group, jnp.any(ready, axis=1), yielded


def pc_groups(pc, live, big: int):
    """[W] number of distinct pcs among each warp's live lanes."""
    s = jnp.sort(jnp.where(live, pc, big), axis=1)
    new = jnp.concatenate([s[:, :1] != big, (s[:, 1:] != s[:, :-1]) & (s[:, 1:] != big)], axis=1)
    return jnp.sum(new, axis=1, dtype=jnp.int32)


# ---------------------------------------------------------------------------------------------
# The machine in ITS mode
# ---------------------------------------------------------------------------------------------


class ItsMachine(Machine):
    """`Machine` with per-lane pcs: the same block functions, memory model and counters; its own step.

    Counters: a warp instruction is one execution of an instruction by one pc group (a warp that runs
    two diverged groups through the same block issues it twice); thread instructions count the group's
    lanes; a divergent branch is one whose group splits. `max_depth` holds the most pc groups a warp had
    at once (reported as `emulator__max_pc_groups`; ITS has no stack)."""

    def __init__(self, program: Program, geo, layout, options):
        self.source_program = program
        super().__init__(program, geo, layout, options)

    def prepare(self, program: Program, options) -> Program:
        """The tiered program cut at warp-synchronous instructions (`split_at_sync`). No jump is threaded: lanes
        that reach a block from two places may run it together here, which a threaded copy would split."""
        view, self.sync = split_at_sync(Machine.prepare(program, options, threaded=False))
        return view

    def _step(self, s: State, wave, dyn, fns) -> State:
        g, NB, exit_pc = self.geo, self.NB, self.exit_pc
        lanes: Lanes = s.stack
        lane_bit = jnp.uint32(1) << self.lane_u32
        live = lanes.pc != exit_pc
        ready_l = live & ~lanes.bar & ~held_at_sync(lanes, live, self.sync, lane_bit)
        pc, group, ready, yielded = choose(lanes, ready_l, NB + 1)
        b = pick_block(pc, ready, lanes.age, NB)
        sel = ready & (pc == b)
        active = group & sel[:, None]
        mask = self.pack(active)

        item = self.item_of_warp(wave, dyn)
        if s.findings:
            s = s._replace(findings=self.sync_before(s.findings, b, active, self.unpack(self.valid_mask(wave, dyn)),
                                                     wave, s.steps))
        s, taken = self._run_block(b, fns, s, active, wave, dyn)
        fault, findings = s.fault, s.findings

        kind, target, fall = self.t_kind[b], self.t_target[b], self.t_fall[b]
        taken_l = self.unpack(taken) & active
        new_pc = jnp.where(kind == TermKind.BRANCH, jnp.where(taken_l, target, fall),
                           jnp.where(kind == TermKind.EXIT, exit_pc, target))
        pcs = jnp.where(active, new_pc, lanes.pc)
        div = sel & (kind == TermKind.BRANCH) & (taken != 0) & ((mask & ~taken) != 0)
        # a backward branch yields the warp to its other groups
        yielded = jnp.where(active, new_pc <= b, yielded)
        arriving = active & (kind == TermKind.BARRIER)  # [W, L]; each lane counts one thread
        bars, findings, arriving = self.barrier_arrive(s.barriers, findings, arriving, arriving, b, 1, wave)
        bar = lanes.bar | arriving
        exited = jnp.where(sel & (kind == TermKind.EXIT), s.exited | mask, s.exited)
        live = pcs != exit_pc
        # deadlock: live lanes, none ready (waiting at a barrier or held at a warp sync forever)
        dead = ~jnp.any(ready) & jnp.any(live)
        fault = fault.unless(dead, Fault.of(errors.DEADLOCK, wave))
        bars, findings, bar = self.barrier_release(bars, findings, bar, ~live, arriving, b, dead, wave)
        groups = pc_groups(pcs, live, NB + 1)
        trace = s.trace
        if trace:
            tb, tm, tsp = trace
            trace = (tb.at[s.steps].set(b, mode="drop"), tm.at[s.steps].set(mask, mode="drop"),
                     tsp.at[s.steps].set(groups, mode="drop"))
        return s._replace(
            fault=fault, findings=findings, barriers=bars, stack=Lanes(pcs, bar, yielded, jnp.where(ready & ~sel, lanes.age + 1, 0)), exited=exited,
            steps=s.steps + 1, trace=trace, recent=s.recent.at[mod(s.steps, RECENT)].set(b),
            warp_exec=s.warp_exec.at[:, b].add(self.tally(sel & (mask != 0), item)),
            thread_exec=s.thread_exec.at[:, b].add(self.tally(lax.population_count(mask), item)),
            divergent=s.divergent.at[:, b].add(self.tally(div, item)),
            max_depth=jnp.maximum(s.max_depth, self.item_max(groups, item)))

    def init_state(self, gmem, counters, wave, dyn, zero) -> State:
        s = super().init_state(gmem, counters, wave, dyn, zero)
        g = self.geo
        return s._replace(stack=init(self.unpack(self.valid_mask(wave, dyn)), self.exit_pc),
                          barriers=barriers.init(g.ctas_per_wave, g.warps_per_block * g.warp_size, self.n_barriers)
                          if self.any_barrier else ())

    def _run_wave(self, gmem, counters, wave, dyn, zero):
        s0 = self.init_state(gmem, counters, wave, dyn, zero)
        fns = self.branches()

        def cond(s: State):
            return jnp.any(s.stack.pc != self.exit_pc) & self.running(s) & (s.steps < dyn.max_steps)

        s = lax.while_loop(cond, lambda s: self._step(s, wave, dyn, fns), s0)
        live = s.stack.pc != self.exit_pc
        fault = s.fault.unless(self.unfinished(s, jnp.any(live)), Fault.of(errors.STEP_BUDGET, wave))
        counters = Counters(s.warp_exec, s.thread_exec, s.divergent, s.max_depth, s.mem)
        where = (jnp.where(live, s.stack.pc, -1), pc_groups(s.stack.pc, live, self.NB + 1), s.recent, s.steps)
        return self.gmem_out(s), counters, fault, s.steps, s.trace, where, s.findings
