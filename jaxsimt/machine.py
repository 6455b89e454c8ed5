"""The machine: a whole wave of thread blocks as array state, run by one `lax.while_loop`.

Each step picks the basic block at which the most ready warps stand (the pc of their stack's top entry),
runs that block — compiled as one function over all warps of the wave, through a `lax.switch` outside
any vmap — for exactly those warps under their active masks, and updates their reconvergence stacks.
Barriers release when every unfinished warp of a block waits. No Python loop runs over threads, warps
or instructions at run time: Python only unrolls a block's instructions while tracing it.

Shapes: W = warps in a wave (blocks per wave x warps per block), L = warp size, D = stack depth,
NB = basic blocks, NI = instructions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax

from jaxsimt import alu, errors, lsu, stack
from jaxsimt import types as T
from jaxsimt.program import BARRIER, BRANCH, EXIT, FALL, JUMP, Imm, Instr, Program, Reg

# Per-instruction memory counters (columns of State.mem)
MEM_REQUESTS, MEM_SECTORS, MEM_LINES, MEM_WAVEFRONTS, MEM_CONFLICTS, MEM_BYTES = range(6)
N_MEM = 6


@dataclass(frozen=True)
class Geometry:
    """Static launch shape of one wave."""

    block: tuple[int, int, int]
    warp_size: int
    ctas_per_wave: int
    depth: int

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // self.warp_size)

    @property
    def W(self) -> int:
        return self.ctas_per_wave * self.warps_per_block


@dataclass(frozen=True)
class Layout:
    """Static memory sizes: global memory words (rounded up to a size class, so launches of similar
    sizes share one compiled machine) and shared-memory words per block."""

    global_words: int
    shared_words: int


class Dyn(NamedTuple):
    """Run-time launch values: changing them never recompiles."""

    grid: jnp.ndarray  # [3] int32
    n_ctas: jnp.ndarray  # [] int32
    bases: jnp.ndarray  # [n_params] int64  byte address of each array argument (-1: scalar)
    sizes: jnp.ndarray  # [n_params] int64  bytes of each array argument


class State(NamedTuple):
    regs: tuple  # one [W, L] array per virtual register, in its own dtype
    gmem: jnp.ndarray  # [global_words] uint32
    smem: jnp.ndarray  # [ctas_per_wave * shared_words] uint32
    stack: stack.Stack
    exited: jnp.ndarray  # [W] uint32  lanes that have finished
    waiting: jnp.ndarray  # [W] bool  at a barrier
    steps: jnp.ndarray  # [] int32
    zero: jnp.ndarray  # [] uint32  a run-time zero (see alu.guard)
    warp_exec: jnp.ndarray  # [NB] int64  warp-level executions of each block
    thread_exec: jnp.ndarray  # [NB] int64  active lanes summed over those executions
    divergent: jnp.ndarray  # [NB] int64  divergent executions of the block's branch
    max_depth: jnp.ndarray  # [] int32
    mem: jnp.ndarray  # [NI, N_MEM] int64  per-instruction memory counters
    fault: jnp.ndarray  # [6] int64  (code, pc, warp, lane, address, wave); code 0: none
    trace: tuple  # () or (block [S] int32, mask [S, W] uint32, sp [S, W] int32)


class Options(NamedTuple):
    max_steps: int
    trace_steps: int  # 0: no trace
    mem_model: Optional[object] = None  # callable attaching memory counters (see jaxsimt.memstats)


# Block terminator kinds as integers (tables indexed by the running block)
_KIND = {FALL: 0, JUMP: 0, BRANCH: 1, BARRIER: 2, EXIT: 3}


# ---------------------------------------------------------------------------------------------
# Executing one basic block's instructions
# ---------------------------------------------------------------------------------------------


class _Exec:
    """Trace-time helper holding the machine's data while one block's instructions are unrolled."""

    def __init__(self, m: "Machine", data, active, wave, dyn: Dyn, zero):
        self.m, self.active, self.wave, self.dyn, self.zero = m, active, wave, dyn, zero
        regs, self.gmem, self.smem, self.mem, self.fault = data
        self.regs = list(regs)

    def data(self):
        return tuple(self.regs), self.gmem, self.smem, self.mem, self.fault

    # -- operands --
    def read(self, op, dtype: Optional[T.DType] = None):
        if isinstance(op, Imm):
            dt = dtype or op.dtype
            return jnp.asarray(op.value, dt.np_dtype)
        v = self.regs[op.index]
        if dtype is not None and dtype.np_dtype != op.dtype.np_dtype:
            v = v.astype(dtype.np_dtype)
        return v

    def write(self, reg: Reg, value):
        old = self.regs[reg.index]
        value = jnp.broadcast_to(jnp.asarray(value).astype(old.dtype), old.shape)
        self.regs[reg.index] = jnp.where(self.active, value, old)

    def record_fault(self, code: int, pc: int, bad, addr):
        self.fault = record_fault(self.fault, code, pc, bad, addr, self.wave)

    # -- instructions --
    def run(self, ins: Instr, pc: int):
        op = ins.op
        if op in alu.ALU_OPS:
            t = T.BY_NAME[ins.attr("type")]
            if op == "selp":
                args = [self.read(ins.src[0], t), self.read(ins.src[1], t), self.read(ins.src[2], T.pred)]
            elif op in ("shl", "shr"):
                args = [self.read(ins.src[0], t), self.read(ins.src[1], T.u32)]
            else:
                args = [self.read(s, t) for s in ins.src]
            self.write(ins.dst[0], alu.execute(op, ins, args, t, self.zero))
        elif op == "sreg":
            self.write(ins.dst[0], self.m.special(ins.attr("name"), self.wave, self.dyn))
        elif op in ("ld", "st", "atom"):
            self.memory(ins, pc)
        elif op == "shfl":
            val, _ = lsu.warp_shuffle(self.read(ins.src[0]), ins.attr("mode"), self.read(ins.src[1]),
                                      self.read(ins.src[2]), self.m.lane[None, :])
            self.write(ins.dst[0], val)
        elif op == "vote":
            self.write(ins.dst[0], self.vote(ins))
        else:
            raise NotImplementedError(f"instruction {op!r} ({ins.loc})")

    def vote(self, ins: Instr):
        p = self.read(ins.src[0]).astype(bool)
        member = ((jnp.uint32(ins.attr("membermask")) >> self.m.lane_u32) & 1).astype(bool)[None, :]
        part = self.active & member
        mode = ins.attr("mode")
        if mode == "ballot":
            return self.m.pack(p & part)[:, None]
        if mode == "all":
            return jnp.all(p | ~part, axis=1, keepdims=True)
        if mode == "any":
            return jnp.any(p & part, axis=1, keepdims=True)
        raise NotImplementedError(mode)

    def memory(self, ins: Instr, pc: int):
        m = self.m
        t = T.BY_NAME[ins.attr("type")]
        vec = ins.attr("vec", 1)
        nbytes = t.size * vec
        space = ins.attr("space")
        off = jnp.broadcast_to(self.read(ins.src[0]).astype(jnp.int64), self.active.shape) * t.size
        arr = ins.attr("array")
        if space == "global":
            base, size = self.dyn.bases[arr], self.dyn.sizes[arr]
            addr = base + off
            widx, boff = lsu.split_address(addr)
            oob_code = errors.OOB_GLOBAL
        else:
            decl = m.program.shared[arr]
            base, size = decl.offset, decl.nbytes
            addr = base + off
            w0, boff = lsu.split_address(addr)
            widx = w0 + m.cta_of_warp[:, None] * m.layout.shared_words
            oob_code = errors.OOB_SHARED
        act = self.active
        oob = act & ((off < 0) | (off + nbytes > size))
        mis = act & ~oob & ((addr % nbytes) != 0)
        self.record_fault(oob_code, pc, oob, off)
        self.record_fault(errors.MISALIGNED, pc, mis, off)
        ok = act & ~oob & ~mis
        if m.options.mem_model is not None:
            self.mem = m.options.mem_model(self.mem, pc, ins, addr, nbytes, ok, space)
        words = self.gmem if space == "global" else self.smem
        if ins.op == "ld":
            for r, v in zip(ins.dst, lsu.load(words, widx, boff, ok, t, vec)):
                self.write(r, v)
            return
        vals = [jnp.broadcast_to(self.read(s, t), ok.shape) for s in ins.src[1:]]
        if ins.op == "st":
            words = lsu.store(words, widx, boff, ok, vals, t)
        else:
            words, old = lsu.atomic(words, widx, ok, ins.attr("aop"), t, vals)
            self.write(ins.dst[0], old)
        if space == "global":
            self.gmem = words
        else:
            self.smem = words


def record_fault(fault, code: int, pc, bad, addr, wave):
    """Keep the first fault: (code, pc, warp, lane, address, wave) of the lowest faulting lane."""
    L = bad.shape[-1]
    flat = jnp.argmax(bad.reshape(-1))
    w, lane = flat // L, flat % L
    rec = jnp.stack([jnp.int64(code), jnp.asarray(pc, jnp.int64), w.astype(jnp.int64), lane.astype(jnp.int64),
                     jnp.broadcast_to(addr, bad.shape).reshape(-1)[flat].astype(jnp.int64),
                     jnp.asarray(wave, jnp.int64)])
    return jnp.where(jnp.any(bad) & (fault[0] == 0), rec, fault)


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------


class Machine:
    """A program bound to a wave shape and memory sizes; `run_wave` is the compiled run of one wave."""

    def __init__(self, program: Program, geo: Geometry, layout: Layout, options: Options):
        self.program, self.geo, self.layout, self.options = program, geo, layout, options
        self.NB = len(program.blocks)
        self.exit_pc = program.exit_index
        self.block_pcs = program.block_pcs()
        self.NI = sum(n for _, n in self.block_pcs)
        L, W = geo.warp_size, geo.W
        self.lane = jnp.arange(L, dtype=jnp.int32)
        self.lane_u32 = self.lane.astype(jnp.uint32)
        warp = jnp.arange(W, dtype=jnp.int32)
        self.cta_of_warp = warp // geo.warps_per_block
        self.warp_in_cta = warp % geo.warps_per_block
        # Terminator tables, indexed by the running block.
        terms = [b.term for b in program.blocks]
        self.t_kind = jnp.asarray([_KIND[t.kind] for t in terms], jnp.int32)
        self.t_target = jnp.asarray([t.target for t in terms], jnp.int32)
        self.t_fall = jnp.asarray([t.fallthrough for t in terms], jnp.int32)
        self.t_reconv = jnp.asarray([t.reconv for t in terms], jnp.int32)
        self.t_pc = jnp.asarray([pc0 + len(b.instrs) for b, (pc0, _) in zip(program.blocks, self.block_pcs)], jnp.int32)
        self.run_wave = jax.jit(self._run_wave, donate_argnums=(0,))

    # -- lanes and threads --
    def pack(self, bits):
        """[W, L] bool -> [W] uint32 lane mask."""
        return jnp.sum(jnp.where(bits, jnp.uint32(1) << self.lane_u32, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)

    def unpack(self, mask):
        return ((mask[:, None] >> self.lane_u32[None, :]) & 1).astype(bool)

    def thread_linear(self):
        return self.warp_in_cta[:, None] * self.geo.warp_size + self.lane[None, :]

    def cta_linear(self, wave):
        return wave * self.geo.ctas_per_wave + self.cta_of_warp

    def valid_mask(self, wave, dyn: Dyn):
        t = self.thread_linear()
        ok = (t < self.geo.threads_per_block) & (self.cta_linear(wave) < dyn.n_ctas)[:, None]
        return self.pack(ok)

    def special(self, name: str, wave, dyn: Dyn):
        g = self.geo
        bx, by, bz = g.block
        gx, gy, gz = dyn.grid[0], dyn.grid[1], dyn.grid[2]
        t = self.thread_linear()
        c = self.cta_linear(wave)[:, None]
        vals = {
            "tid.x": lambda: t % bx, "tid.y": lambda: (t // bx) % by, "tid.z": lambda: t // (bx * by),
            "ntid.x": lambda: bx, "ntid.y": lambda: by, "ntid.z": lambda: bz,
            "ctaid.x": lambda: c % gx, "ctaid.y": lambda: (c // gx) % gy, "ctaid.z": lambda: c // (gx * gy),
            "nctaid.x": lambda: gx, "nctaid.y": lambda: gy, "nctaid.z": lambda: gz,
            "laneid": lambda: self.lane[None, :], "warpid": lambda: self.warp_in_cta[:, None],
            "gtid": lambda: c * g.threads_per_block + t,
        }
        if name not in vals:
            raise NotImplementedError(f"special register {name}")
        return jnp.broadcast_to(jnp.asarray(vals[name](), jnp.int32), (g.W, g.warp_size))

    # -- one block's instructions: the only per-block code --
    def _block_fn(self, k: int):
        blk = self.program.blocks[k]
        pc0, _ = self.block_pcs[k]
        term = blk.term

        def fn(data, active, wave, dyn, zero):
            ex = _Exec(self, data, active, wave, dyn, zero)
            for j, ins in enumerate(blk.instrs):
                ex.run(ins, pc0 + j)
            if term.kind == BRANCH:
                p = ex.regs[term.pred.index].astype(bool)
                taken = self.pack((~p if term.negate else p) & active)
            else:
                taken = jnp.zeros((self.geo.W,), jnp.uint32)
            return ex.data(), taken

        return fn

    # -- the shared part of a step: scheduling, terminators, stacks, barriers --
    def _step(self, s: State, wave, dyn: Dyn, fns) -> State:
        g, NB = self.geo, self.NB
        top_pc, _, top_mask = stack.top(s.stack)
        alive = s.stack.sp > 0
        ready = alive & ~s.waiting
        counts = jnp.zeros((NB + 1,), jnp.int32).at[jnp.where(ready, top_pc, NB)].add(1)[:NB]
        b = jnp.argmax(counts).astype(jnp.int32)
        sel = ready & (top_pc == b)
        mask = jnp.where(sel, top_mask & ~s.exited, jnp.uint32(0))
        active = self.unpack(mask)

        data = (s.regs, s.gmem, s.smem, s.mem, s.fault)
        if NB > 1:
            data, taken = lax.switch(b, fns, data, active, wave, dyn, s.zero)
        else:
            data, taken = fns[0](data, active, wave, dyn, s.zero)
        regs, gmem, smem, mem, fault = data

        kind, target, fall, reconv, tpc = (self.t_kind[b], self.t_target[b], self.t_fall[b], self.t_reconv[b],
                                           self.t_pc[b])
        st, exited, waiting = s.stack, s.exited, s.waiting
        # fall-through / jump
        st = stack.set_top_pc(st, sel & (kind == 0), target)
        # conditional branch
        st, div, overflow = stack.branch(st, sel & (kind == 1), taken & mask, mask & ~taken, target, fall, reconv)
        fault = record_fault(fault, errors.STACK_OVERFLOW, tpc, overflow[:, None] & (self.lane == 0)[None, :],
                             st.sp[:, None], wave)
        # barrier: every live lane of the warp must be here
        at_bar = sel & (kind == 2)
        live = self.valid_mask(wave, dyn) & ~exited
        missing = self.unpack(live & ~mask) & at_bar[:, None]
        fault = record_fault(fault, errors.DIVERGENT_BARRIER, tpc, missing, 0, wave)
        st = stack.set_top_pc(st, at_bar, target)
        waiting = waiting | at_bar
        # exit
        at_exit = sel & (kind == 3)
        exited = jnp.where(at_exit, exited | mask, exited)
        st = stack.set_top_pc(st, at_exit, self.exit_pc)
        st = stack.pop_reconverged(st, exited)
        # deadlock: live warps, none ready
        dead = ~jnp.any(ready) & jnp.any(alive)
        rec = jnp.asarray([errors.DEADLOCK, -1, 0, 0, 0, 0], jnp.int64).at[5].set(jnp.asarray(wave, jnp.int64))
        fault = jnp.where(dead & (fault[0] == 0), rec, fault)
        # barrier release: every unfinished warp of the block waits
        done_or_wait = (~(st.sp > 0) | waiting).reshape(g.ctas_per_wave, g.warps_per_block).all(axis=1)
        waiting = waiting & ~done_or_wait[self.cta_of_warp]
        trace = s.trace
        if trace:
            tb, tm, tsp = trace
            trace = (tb.at[s.steps].set(b, mode="drop"), tm.at[s.steps].set(mask, mode="drop"),
                     tsp.at[s.steps].set(st.sp, mode="drop"))
        return s._replace(
            regs=regs, gmem=gmem, smem=smem, mem=mem, fault=fault, stack=st, exited=exited, waiting=waiting,
            steps=s.steps + 1, trace=trace,
            warp_exec=s.warp_exec.at[b].add(jnp.sum(sel & (mask != 0), dtype=jnp.int64)),
            thread_exec=s.thread_exec.at[b].add(jnp.sum(lax.population_count(mask), dtype=jnp.int64)),
            divergent=s.divergent.at[b].add(jnp.sum(div, dtype=jnp.int64)),
            max_depth=jnp.maximum(s.max_depth, jnp.max(st.sp)))

    # -- the run of one wave --
    def init_state(self, gmem, counters, scalars, wave, dyn: Dyn, zero) -> State:
        g = self.geo
        W, L = g.W, g.warp_size
        scal = {p.reg.index: v for p, v in zip([p for p in self.program.params if not p.is_pointer], scalars)}
        regs = []
        for r in self.program.regs:
            if r.index in scal:
                regs.append(jnp.broadcast_to(jnp.asarray(scal[r.index]).astype(r.dtype.np_dtype), (W, L)))
            else:
                regs.append(jnp.zeros((W, L), r.dtype.np_dtype))
        S = self.options.trace_steps
        trace = ((jnp.full((S,), -1, jnp.int32), jnp.zeros((S, W), jnp.uint32), jnp.zeros((S, W), jnp.int32))
                 if S else ())
        warp_exec, thread_exec, divergent, max_depth, mem = counters
        return State(
            regs=tuple(regs), gmem=gmem,
            smem=jnp.zeros((g.ctas_per_wave * max(self.layout.shared_words, 1),), jnp.uint32),
            stack=stack.init(self.valid_mask(wave, dyn), g.depth, 0, self.exit_pc),
            exited=jnp.zeros((W,), jnp.uint32), waiting=jnp.zeros((W,), bool), steps=jnp.int32(0), zero=zero,
            warp_exec=warp_exec, thread_exec=thread_exec, divergent=divergent, max_depth=max_depth, mem=mem,
            fault=jnp.zeros((6,), jnp.int64), trace=trace)

    def _run_wave(self, gmem, counters, scalars, wave, dyn: Dyn, zero):
        s0 = self.init_state(gmem, counters, scalars, wave, dyn, zero)
        fns = [self._block_fn(k) for k in range(self.NB)]

        def cond(s: State):
            return jnp.any(s.stack.sp > 0) & (s.fault[0] == 0) & (s.steps < self.options.max_steps)

        s = lax.while_loop(cond, lambda s: self._step(s, wave, dyn, fns), s0)
        unfinished = jnp.any(s.stack.sp > 0)
        budget = jnp.asarray([errors.STEP_BUDGET, -1, 0, 0, 0, 0], jnp.int64).at[5].set(jnp.asarray(wave, jnp.int64))
        fault = jnp.where(unfinished & (s.fault[0] == 0), budget, s.fault)
        counters = (s.warp_exec, s.thread_exec, s.divergent, s.max_depth, s.mem)
        top_pc, _, _ = stack.top(s.stack)
        return s.gmem, counters, fault, s.steps, s.trace, jnp.where(s.stack.sp > 0, top_pc, -1)

    def zero_counters(self):
        NB = self.NB
        return (jnp.zeros((NB,), jnp.int64), jnp.zeros((NB,), jnp.int64), jnp.zeros((NB,), jnp.int64),
                jnp.int32(0), jnp.zeros((self.NI, N_MEM), jnp.int64))
