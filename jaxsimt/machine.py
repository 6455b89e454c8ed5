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

    grid: tuple[int, int, int]
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
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def n_waves(self) -> int:
        return -(-self.n_ctas // self.ctas_per_wave)

    @property
    def W(self) -> int:
        return self.ctas_per_wave * self.warps_per_block


@dataclass(frozen=True)
class Layout:
    """Where each array argument lives in global memory, and the shared memory per block."""

    bases: tuple[int, ...]  # byte address per parameter (-1 for scalars)
    sizes: tuple[int, ...]  # bytes per parameter (0 for scalars)
    global_words: int
    shared_words: int  # per block


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
    mem_model: Optional[object] = None  # callable(pc_info, ...) attaching memory counters


# ---------------------------------------------------------------------------------------------
# Executing one basic block
# ---------------------------------------------------------------------------------------------


class _Exec:
    """Trace-time helper holding the state while one block's instructions are unrolled."""

    def __init__(self, m: "Machine", state: State, active, wave):
        self.m, self.s, self.active, self.wave = m, state, active, wave
        self.regs = list(state.regs)
        self.gmem, self.smem, self.fault, self.mem = state.gmem, state.smem, state.fault, state.mem

    # -- operands --
    def read(self, op, dtype: Optional[T.DType] = None):
        if isinstance(op, Imm):
            dt = dtype or op.dtype
            return jnp.asarray(op.value, dt.np_dtype)
        v = self.regs[op.index]
        if dtype is not None and dtype != op.dtype and dtype.np_dtype != op.dtype.np_dtype:
            v = v.astype(dtype.np_dtype)
        return v

    def write(self, reg: Reg, value):
        old = self.regs[reg.index]
        value = jnp.broadcast_to(jnp.asarray(value).astype(old.dtype), old.shape)
        self.regs[reg.index] = jnp.where(self.active, value, old)

    def record_fault(self, code: int, pc: int, bad, addr):
        L = bad.shape[-1]
        flat = jnp.argmax(bad.reshape(-1))
        w, lane = flat // L, flat % L
        rec = jnp.stack([jnp.int64(code), jnp.int64(pc), w.astype(jnp.int64), lane.astype(jnp.int64),
                         addr.reshape(-1)[flat].astype(jnp.int64), jnp.asarray(self.wave, jnp.int64)])
        take = jnp.any(bad) & (self.fault[0] == 0)
        self.fault = jnp.where(take, rec, self.fault)

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
            self.write(ins.dst[0], alu.execute(op, ins, args, t, self.s.zero))
        elif op == "sreg":
            self.write(ins.dst[0], self.m.special(ins.attr("name"), self.wave))
        elif op in ("ld", "st", "atom"):
            self.memory(ins, pc)
        elif op == "shfl":
            t = ins.dst[0].dtype
            val, _ = lsu.warp_shuffle(self.read(ins.src[0]), ins.attr("mode"), self.read(ins.src[1]),
                                      self.read(ins.src[2]), self.m.lane[None, :])
            self.write(ins.dst[0], val.astype(t.np_dtype))
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
        idx = self.read(ins.src[0]).astype(jnp.int64)
        off = idx * t.size
        arr = ins.attr("array")
        if space == "global":
            base, size = m.layout.bases[arr], m.layout.sizes[arr]
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
            vals = lsu.load(words, widx, boff, ok, t, vec)
            for r, v in zip(ins.dst, vals):
                self.write(r, v)
            return
        if ins.op == "st":
            vals = [jnp.broadcast_to(self.read(s, t), ok.shape) for s in ins.src[1:]]
            words = lsu.store(words, widx, boff, ok, vals, t)
        else:  # atom
            vals = [jnp.broadcast_to(self.read(s, t), ok.shape) for s in ins.src[1:]]
            words, old = lsu.atomic(words, widx, ok, ins.attr("aop"), t, vals)
            self.write(ins.dst[0], old)
        if space == "global":
            self.gmem = words
        else:
            self.smem = words


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------


class Machine:
    """A program bound to a launch shape and memory layout; `run_wave` is the compiled run."""

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
        self.run_wave = jax.jit(self._run_wave, donate_argnums=(0,))

    # -- geometry helpers --
    def pack(self, bits):
        """[W, L] bool -> [W] uint32 lane mask."""
        return jnp.sum(jnp.where(bits, jnp.uint32(1) << self.lane_u32, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)

    def unpack(self, mask):
        return ((mask[:, None] >> self.lane_u32[None, :]) & 1).astype(bool)

    def thread_linear(self):
        return self.warp_in_cta[:, None] * self.geo.warp_size + self.lane[None, :]

    def cta_linear(self, wave):
        return wave * self.geo.ctas_per_wave + self.cta_of_warp

    def valid_mask(self, wave):
        t = self.thread_linear()
        ok = (t < self.geo.threads_per_block) & (self.cta_linear(wave) < self.geo.n_ctas)[:, None]
        return self.pack(ok)

    def special(self, name: str, wave):
        g = self.geo
        bx, by, bz = g.block
        gx, gy, gz = g.grid
        t = self.thread_linear()
        c = self.cta_linear(wave)[:, None]
        vals = {
            "tid.x": t % bx, "tid.y": (t // bx) % by, "tid.z": t // (bx * by),
            "ntid.x": bx, "ntid.y": by, "ntid.z": bz,
            "ctaid.x": c % gx, "ctaid.y": (c // gx) % gy, "ctaid.z": c // (gx * gy),
            "nctaid.x": gx, "nctaid.y": gy, "nctaid.z": gz,
            "laneid": self.lane[None, :], "warpid": self.warp_in_cta[:, None],
            "gtid": c * g.threads_per_block + t,
        }
        if name not in vals:
            raise NotImplementedError(f"special register {name}")
        return jnp.broadcast_to(jnp.asarray(vals[name], jnp.int32), (g.W, g.warp_size))

    # -- one block --
    def _block_fn(self, k: int):
        blk = self.program.blocks[k]
        pc0, _ = self.block_pcs[k]
        term = blk.term

        def fn(s: State, sel, wave) -> State:
            _, _, top_mask = stack.top(s.stack)
            mask = jnp.where(sel, top_mask & ~s.exited, jnp.uint32(0))
            active = self.unpack(mask)
            ex = _Exec(self, s, active, wave)
            for j, ins in enumerate(blk.instrs):
                ex.run(ins, pc0 + j)
            tpc = pc0 + len(blk.instrs)
            st, exited, waiting = s.stack, s.exited, s.waiting
            divergent = s.divergent
            if term.kind in (FALL, JUMP):
                st = stack.set_top_pc(st, sel, term.target)
            elif term.kind == BRANCH:
                p = ex.regs[term.pred.index].astype(bool)
                if term.negate:
                    p = ~p
                taken = self.pack(p & active)
                st, div, overflow = stack.branch(st, sel, taken, mask & ~taken, term.target,
                                                 term.fallthrough, term.reconv)
                divergent = divergent.at[k].add(jnp.sum(div, dtype=jnp.int64))
                ex.record_fault(errors.STACK_OVERFLOW, tpc, overflow[:, None] & (self.lane == 0)[None, :],
                                jnp.zeros(active.shape, jnp.int64) + st.sp[:, None])
            elif term.kind == BARRIER:
                live = self.valid_mask(wave) & ~exited
                bad = sel & (mask != live)
                first_missing = self.unpack(live & ~mask) & bad[:, None]
                ex.record_fault(errors.DIVERGENT_BARRIER, tpc, first_missing, jnp.zeros(active.shape, jnp.int64))
                st = stack.set_top_pc(st, sel, term.target)
                waiting = waiting | sel
            elif term.kind == EXIT:
                exited = exited | mask
                st = stack.set_top_pc(st, sel, self.exit_pc)
            st = stack.pop_reconverged(st, exited)
            n_warps = jnp.sum(sel & (mask != 0), dtype=jnp.int64)
            n_threads = jnp.sum(lax.population_count(mask), dtype=jnp.int64)
            return s._replace(
                regs=tuple(ex.regs), gmem=ex.gmem, smem=ex.smem, stack=st, exited=exited, waiting=waiting,
                warp_exec=s.warp_exec.at[k].add(n_warps), thread_exec=s.thread_exec.at[k].add(n_threads),
                divergent=divergent, mem=ex.mem, fault=ex.fault)

        return fn

    # -- the run --
    def init_state(self, gmem, scalars, wave, counters) -> State:
        g = self.geo
        W, L = g.W, g.warp_size
        regs = []
        scal = {p.reg.index: v for p, v in zip([p for p in self.program.params if not p.is_pointer], scalars)}
        for r in self.program.regs:
            if r.index in scal:
                regs.append(jnp.broadcast_to(jnp.asarray(scal[r.index]).astype(r.dtype.np_dtype), (W, L)))
            else:
                regs.append(jnp.zeros((W, L), r.dtype.np_dtype))
        valid = self.valid_mask(wave)
        S = self.options.trace_steps
        trace = ((jnp.full((S,), -1, jnp.int32), jnp.zeros((S, W), jnp.uint32), jnp.zeros((S, W), jnp.int32))
                 if S else ())
        warp_exec, thread_exec, divergent, max_depth, mem = counters
        return State(
            regs=tuple(regs), gmem=gmem,
            smem=jnp.zeros((g.ctas_per_wave * max(self.layout.shared_words, 1),), jnp.uint32),
            stack=stack.init(valid, g.depth, 0, self.exit_pc),
            exited=jnp.zeros((W,), jnp.uint32), waiting=jnp.zeros((W,), bool),
            steps=jnp.int32(0), zero=jnp.uint32(0),
            warp_exec=warp_exec, thread_exec=thread_exec, divergent=divergent, max_depth=max_depth, mem=mem,
            fault=jnp.zeros((6,), jnp.int64), trace=trace)

    def _run_wave(self, gmem, counters, scalars, wave, zero):
        g = self.geo
        s0 = self.init_state(gmem, scalars, wave, counters)
        s0 = s0._replace(zero=zero)
        fns = [self._block_fn(k) for k in range(self.NB)]
        NB = self.NB

        def cond(s: State):
            return jnp.any(s.stack.sp > 0) & (s.fault[0] == 0) & (s.steps < self.options.max_steps)

        def body(s: State):
            top_pc, _, _ = stack.top(s.stack)
            alive = s.stack.sp > 0
            ready = alive & ~s.waiting
            counts = jnp.zeros((NB + 1,), jnp.int32).at[jnp.where(ready, top_pc, NB)].add(1)[:NB]
            b = jnp.argmax(counts).astype(jnp.int32)
            sel = ready & (top_pc == b)
            s2 = lax.switch(b, fns, s, sel, wave) if NB > 1 else fns[0](s, sel, wave)
            # deadlock: live warps, none ready
            dead = ~jnp.any(ready) & jnp.any(alive)
            rec = jnp.asarray([errors.DEADLOCK, -1, 0, 0, 0, 0], jnp.int64).at[5].set(wave.astype(jnp.int64))
            fault = jnp.where(dead & (s2.fault[0] == 0), rec, s2.fault)
            # barrier release: every unfinished warp of the block waits
            alive2 = s2.stack.sp > 0
            done_or_wait = (~alive2 | s2.waiting).reshape(g.ctas_per_wave, g.warps_per_block).all(axis=1)
            waiting = s2.waiting & ~done_or_wait[self.cta_of_warp]
            trace = s2.trace
            if trace:
                tb, tm, tsp = trace
                i = s.steps
                top_mask = stack.top(s.stack)[2] & ~s.exited
                trace = (tb.at[i].set(b, mode="drop"),
                         tm.at[i].set(jnp.where(sel, top_mask, 0), mode="drop"),
                         tsp.at[i].set(s2.stack.sp, mode="drop"))
            return s2._replace(
                waiting=waiting, fault=fault, steps=s.steps + 1, trace=trace,
                max_depth=jnp.maximum(s2.max_depth, jnp.max(s2.stack.sp)))

        s = lax.while_loop(cond, body, s0)
        unfinished = jnp.any(s.stack.sp > 0)
        fault = jnp.where(unfinished & (s.fault[0] == 0),
                          jnp.asarray([errors.STEP_BUDGET, -1, 0, 0, 0, 0], jnp.int64).at[5].set(wave.astype(jnp.int64)),
                          s.fault)
        counters = (s.warp_exec, s.thread_exec, s.divergent, s.max_depth, s.mem)
        return s.gmem, counters, fault, s.steps, s.trace, s.stack.pc

    def zero_counters(self):
        NB = self.NB
        return (jnp.zeros((NB,), jnp.int64), jnp.zeros((NB,), jnp.int64), jnp.zeros((NB,), jnp.int64),
                jnp.int32(0), jnp.zeros((self.NI, N_MEM), jnp.int64))
