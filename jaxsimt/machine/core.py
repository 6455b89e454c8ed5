"""The machine: a whole wave of thread blocks as array state, run by one `lax.while_loop`.

Each step picks the basic block at which the most ready warps stand (the pc of their stack's top entry;
a warp left waiting longer than the program has blocks goes first, so none starves),
runs that block — compiled as one function over all warps of the wave, through a `lax.switch` outside
any vmap — for exactly those warps under their active masks, and updates their reconvergence stacks.
Barriers release when every unfinished warp of a block waits. No Python loop runs over threads, warps
or instructions at run time: Python only unrolls a block's instructions while tracing it.
Independent Thread Scheduling (launch mode "its") swaps the stacks for per-lane pcs in
`jaxsimt.machine.its.ItsMachine`, which reuses this machine's block functions, memory model and counters.

Shapes: W = warps in a wave (blocks per wave x warps per block), L = warp size, D = stack depth,
NB = basic blocks, NI = instructions, I = items of a batched launch (1 for a plain launch).

Batched launches fold their items into the block axis: item i's blocks have the linear ids
i * n_ctas + (block id in its grid), its arrays lie side by side with the other items' in global memory,
and each warp reads its item's bases, sizes and scalars; counters keep a leading item axis, summed per
item (`Machine.tally`) as they are counted.
"""
from __future__ import annotations

import collections
import contextlib
import enum
import functools
import gc
from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
from jax import lax

from jaxsimt import errors, exact
from jaxsimt.units import barriers, fp32, generic, isa, lsu, memcounts, rocache, stack
from jaxsimt.machine import memstage, sanitizer, splats, templates
from jaxsimt import types as T
from jaxsimt.program import (BARRIER, BRANCH, EXIT, FALL, JUMP, Block, Imm, Instr, Program, Reg, Terminator, merge_straight,
                              cross_block_registers, thread_jumps)

from jaxsimt.units.memcounts import MEM_COLUMNS, N_MEM  # noqa: F401 (MEM_COLUMNS: re-exported for launch)
from jaxsimt.units.intops import floordiv, mod
THREAD_HEAD_LIMIT = 4  # the longest loop test a back edge is threaded into (its instructions compile once more)
RECENT = 64  # steps of block history kept for the step-budget report (which blocks a stuck warp cycles through)


@dataclass(frozen=True)
class Geometry:
    """Static launch shape of one wave."""

    block: tuple[int, int, int]
    warp_size: int
    ctas_per_wave: int
    depth: int
    items: int = 1  # launches folded into the block axis (counters are kept per item)

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
    sizes share one compiled machine), shared-memory words per block, local-memory words per thread."""

    global_words: int
    shared_words: int
    local_words: int = 0


class Dyn(NamedTuple):
    """Run-time launch values: changing them never recompiles."""

    grid: jnp.ndarray  # [3] int32
    n_ctas: jnp.ndarray  # [] int32  blocks in one item's grid
    bases: jnp.ndarray  # [I, n_params] int64  byte address of each item's array arguments (-1: scalar)
    sizes: jnp.ndarray  # [I, n_params] int64  bytes of each array argument
    scalars: tuple = ()  # one [I] array per scalar parameter, in parameter order
    ctas: jnp.ndarray = None  # [waves * ctas_per_wave] int32  item * n_ctas + block id of the blocks to run
    # (I * n_ctas: none)
    tex: jnp.ndarray = None  # [I, n_params, 2] int32  (width, height) of each 2D-texture parameter
    max_steps: jnp.ndarray = None  # [] int32  the step budget of each wave
    mufu: object = None  # mufu.Tables: the special function unit's result tables the program reads


class State(NamedTuple):
    regs: tuple  # register files: one [R_f + 1, W, L] array per register dtype (Machine.files); Machine.slot
    # maps a register to (file, row). Rows hold the registers live across blocks and those interpreted.
    gmem: jnp.ndarray  # [global_words] uint32
    smem: jnp.ndarray  # [ctas_per_wave * shared_words] uint32
    lmem: jnp.ndarray  # [W * L * local_words] uint32  per-thread local memory
    stack: stack.Stack
    exited: jnp.ndarray  # [W] uint32  lanes that have finished
    waiting: jnp.ndarray  # [W] bool  at a barrier
    steps: jnp.ndarray  # [] int32
    zero: jnp.ndarray  # [] uint32  a run-time zero (see alu.guard)
    warp_exec: jnp.ndarray  # [I, NB] int64  warp-level executions of each block
    thread_exec: jnp.ndarray  # [I, NB] int64  active lanes summed over those executions
    divergent: jnp.ndarray  # [I, NB] int64  divergent executions of the block's branch
    max_depth: jnp.ndarray  # [I] int32
    mem: jnp.ndarray  # [I, NI, N_MEM] int64  per-instruction memory counters
    fault: "Fault"  # the wave's first fault (code NONE: none)
    trace: tuple  # () or (block [S] int32, mask [S, W] uint32, sp [S, W] int32)
    recent: jnp.ndarray = None  # [RECENT] int32  block run by the last RECENT steps (ring, index steps % RECENT)
    cache: tuple = ()  # () or rocache.Cache: the read-only/texture cache of each block of the wave
    age: jnp.ndarray = None  # [W] int32  steps since the warp last ran while it was ready (stack mode)
    findings: tuple = ()  # () or sanitizer.Findings (launches with checks)
    shadow: tuple = ()  # () or sanitizer.Shadow (racecheck, initcheck)
    barriers: tuple = ()  # () or barriers.Barriers (programs with block barriers)


class Options(NamedTuple):
    trace_steps: int  # 0: no trace (the step budget is run-time: Dyn.max_steps)
    arch: Optional[object] = None  # the Arch whose memory model counts requests/sectors/wavefronts
    optimize: bool = True  # full XLA backend optimisation (slower compile, ~2x faster run)
    data: bool = True  # False: addresses are computed, checked and counted, but memory is not touched
    # (loads read zeros, stores are dropped): counters of kernels whose control flow ignores data
    target: Optional[object] = None  # the Arch emulated, counters or not (generic-address windows)
    ro_cache: Optional[object] = None  # rocache.CacheShape of the read-only/texture path (None: not simulated)
    compile_budget: Optional[int] = templates.COMPILE_BUDGET  # instructions compiled per program; the rest
    # is interpreted (jaxsimt.machine.templates); None: compile every block
    check: frozenset = frozenset()  # sanitizer checks on (jaxsimt.machine.sanitizer.CHECKS); empty: bounds faults only
    collect: bool = False  # with checks: keep running and collect findings (else stop at the first)


class TermKind(enum.IntEnum):
    """A block terminator's kind as the step's tables hold it (`Machine.t_kind`, indexed by block)."""

    FLOW = 0  # fall-through or jump: continue at the target
    BRANCH = 1  # conditional branch: the predicate's lanes to the target, the others fall through
    BARRIER = 2  # wait for the thread block's warps, then continue at the target
    EXIT = 3  # the lanes finish


_KIND = {FALL: TermKind.FLOW, JUMP: TermKind.FLOW, BRANCH: TermKind.BRANCH, BARRIER: TermKind.BARRIER,
         EXIT: TermKind.EXIT}


class Fault(NamedTuple):
    """The first fault of a wave, as it crosses the loop: what it is (`errors.FaultCode`; NONE: no fault), the
    pc, warp and lane of the lowest faulting lane, the address (or, for some codes, another number the
    fault's report shows) and the wave, held as one int64 [6] record `rec` in that order (a numpy array on the
    host, after a run: `host`). One array, not six scalars: each update of the fault is one select, which the
    compiler makes one kernel, not six."""

    rec: jnp.ndarray

    code = property(lambda self: self.rec[0])
    pc = property(lambda self: self.rec[1])
    warp = property(lambda self: self.rec[2])
    lane = property(lambda self: self.rec[3])
    address = property(lambda self: self.rec[4])
    wave = property(lambda self: self.rec[5])

    @staticmethod
    def of(code, wave, pc=-1, warp=0, lane=0, address=0) -> "Fault":
        return Fault(jnp.stack([jnp.asarray(v, jnp.int64) for v in (code, pc, warp, lane, address, wave)]))

    @staticmethod
    def of_ints(code: int, pc: int, warp: int, lane: int, address: int, wave: int) -> "Fault":
        """A fault on the host."""
        return Fault(np.array([code, pc, warp, lane, address, wave], np.int64))

    def host(self) -> "Fault":
        """This fault with its record fetched to the host."""
        return Fault(np.asarray(self.rec, np.int64))

    def fields(self) -> tuple:
        """(code, pc, warp, lane, address, wave) as Python ints (a fault on the host)."""
        return tuple(int(v) for v in np.asarray(self.rec))

    def unless(self, cond, other: "Fault") -> "Fault":
        """`other` where `cond` holds and this records no fault yet; else this (the first fault stays)."""
        return Fault(jnp.where(cond & (self.code == errors.NONE), other.rec, self.rec))


class Counters(NamedTuple):
    """What a wave's run counts, carried from wave to wave (I = batch items, NB blocks, NI instructions)."""

    warp_exec: jnp.ndarray  # [I, NB] int64  warp-level executions of each block
    thread_exec: jnp.ndarray  # [I, NB] int64  active lanes summed over those executions
    divergent: jnp.ndarray  # [I, NB] int64  divergent executions of the block's branch
    max_depth: jnp.ndarray  # [I] int32  deepest stack (ITS: most pc groups) of any warp
    mem: jnp.ndarray  # [I, NI, N_MEM] int64  per-instruction memory counters (MEM_COLUMNS)


# ---------------------------------------------------------------------------------------------
# Executing one basic block's instructions
# ---------------------------------------------------------------------------------------------


class _Exec:
    """Trace-time helper holding the machine's data while one block's instructions are unrolled."""

    def __init__(self, m: "Machine", data, active, wave, dyn: Dyn, zero, collect: bool = False,
                 records: bool = False):
        self.m, self.active, self.wave, self.dyn, self.zero = m, active, wave, dyn, zero
        regs, self.gmem, self.smem, self.lmem, self.mem, self.fault, self.cache, self.findings, self.shadow = data
        self.regs = list(regs)  # register files, indexed by m.slot[reg.index] = (file, row)
        # collect: register writes are gathered as (file, row, value) and the files stay as they came in (a
        # branch of the step's switch returns only the rows it wrote, see `Machine.write_set`); else the
        # files are updated in place
        self.writes = [] if collect else None
        self.item = m.item_of_warp(wave, dyn)  # [W] the batch item each warp belongs to
        if m.geo.items == 1:  # a broadcast, not a gather: compiles to less in every block
            self.bases, self.sizes = (jnp.broadcast_to(x[0], (m.geo.W,) + x.shape[1:]) for x in (dyn.bases, dyn.sizes))
        else:
            self.bases, self.sizes = dyn.bases[self.item], dyn.sizes[self.item]  # [W, n_params]
        self.local: dict = {}  # registers that live only inside this block: plain values
        # racecheck: the block's loads, as (memory 1 global / 2 shared, word [W, L], lanes, key, ordering word)
        # for the memory stage to record in the shadow (a block of the switch reads the shadow, never writes it)
        self.pending: list = []
        # records: the step counts these instructions' accesses after them (`Machine.count_records`), which
        # gather here as (memcounts.Shape, pc, addr [W, L], lanes [W, L], bytes per lane); else each is counted
        # where it runs
        self.records = [] if records else None
        self.ftz = False  # the running instruction's .ftz: f32 operands and results flushed where subnormal

    def data(self):
        return (tuple(self.regs), self.gmem, self.smem, self.lmem, self.mem, self.fault, self.cache, self.findings,
                self.shadow)

    # -- operands --
    def read(self, op, dtype: Optional[T.DType] = None):
        """An operand as `dtype`: registers of another type of the same width are reinterpreted
        bit for bit (PTX's untyped .bN registers), of another width truncated/zero-extended; under .ftz an
        f32 subnormal reads as a zero of its sign."""
        v = self._read(op, dtype)
        return fp32.flush(v) if self.ftz and v.dtype == jnp.float32 else v

    def _read(self, op, dtype: Optional[T.DType] = None):
        if isinstance(op, Imm):
            dt = dtype or op.dtype
            return jnp.asarray(op.value, dt.np_dtype)
        slot = self.m.slot.get(op.index)
        if op.index in self.local:
            v = self.local[op.index]
        elif slot is not None:
            v = self.row(*slot)
        else:  # read before any write: registers start as zero
            v = jnp.zeros(self.active.shape, op.dtype.np_dtype)
        if dtype is not None and dtype.np_dtype != op.dtype.np_dtype:
            v = reinterpret(v, op.dtype, dtype)
        return v

    def as_lanes(self, reg: Reg, value):
        """`value` as [W, L] of the register's dtype (other dtypes reinterpreted bit for bit)."""
        value = jnp.asarray(value)
        if value.dtype != reg.dtype.np_dtype:
            value = reinterpret(value, T.as_dtype(value.dtype), reg.dtype)
        return jnp.broadcast_to(value, self.active.shape)

    def write(self, reg: Reg, value):
        """Write `value` to `reg` in the active lanes (under .ftz, f32 subnormals as zeros of their sign)."""
        if self.ftz and jnp.asarray(value).dtype == jnp.float32:
            value = fp32.flush(value)
        self._write(reg, value)

    def _write(self, reg: Reg, value):
        value = self.as_lanes(reg, value)
        slot = self.m.slot.get(reg.index)
        if slot is None:
            self.local[reg.index] = value  # dies with the block: no merge with inactive lanes needed
        else:
            f, row = slot
            self.put(f, row, jnp.where(self.active, value, self.row(f, row)))

    def row(self, f: int, row):
        """Register file f's row (a Python int or a run-time int32 [] index) as this block has left it [W, L]."""
        v = self.regs[f][row] if isinstance(row, int) else lax.dynamic_index_in_dim(self.regs[f], row, keepdims=False)
        for wf, wrow, wval in self.writes or ():
            if wf != f:
                continue
            if isinstance(row, int) and isinstance(wrow, int):
                v = wval if row == wrow else v
            else:
                v = jnp.where(wrow == row, wval, v)
        return v

    def put(self, f: int, row, value):
        """Set register file f's row to value [W, L] (already merged with the inactive lanes' old values)."""
        if self.writes is None:
            self.regs[f] = (self.regs[f].at[row].set(value) if isinstance(row, int)
                            else lax.dynamic_update_index_in_dim(self.regs[f], value, row, 0))
            return
        if isinstance(row, int):  # a later write of a static row replaces the earlier one
            self.writes[:] = [w for w in self.writes if not (w[0] == f and isinstance(w[1], int) and w[1] == row)]
        self.writes.append((f, row, value))

    def in_state(self, reg: Reg) -> bool:
        """Whether the register lives in the register files (else it lives only inside this block)."""
        return reg.index in self.m.slot

    def offset(self, ins: Instr):
        """A memory instruction's constant byte (or, indexed, element-scaled) offset."""
        return ins.attr("offset", 0)

    def array_of(self, ins: Instr, key: str):
        """The array a memory access addresses (`key` "array": the indexed form's parameter or shared variable) or
        a PTX address derives from ("origin", a parameter's index, or "shared_array", a shared variable's;
        jaxsimt.ptx.provenance): an int, None, or (origin) the name of another space."""
        return ins.attr(key)

    def shared_extent(self, var):
        """(first byte, bytes) of shared variable `var`: Python ints for an int, traced [] for a template operand."""
        if isinstance(var, int):
            decl = self.m.program.shared[var]
            return decl.offset, decl.nbytes
        return tuple(jnp.asarray(t)[var] for t in self.m.shared_extents)

    def count(self, pc, op: str, name: str, addr, nbytes: int, ok, space: str = ""):
        """Count one access of every warp of the step at instruction pc (`memcounts`): here, or as a record for
        the step's counter stage. op: "ld" or "st", the direction the memory model counts; name: "gmem" or
        "smem"; addr [W, L]; ok [W, L] the lanes that access."""
        shape = memcounts.Shape(op, name, nbytes, space == "const")
        if self.records is None:
            self.mem = self.m.count_memory(self.mem, pc, shape, addr, ok, self.item)
        else:
            self.records.append((self.m.counting_shape(shape), pc, addr, ok, nbytes))

    def look_up_cached(self, pc, addr, nbytes: int, ok):
        """A read-only load's lookup in its block's cache (`rocache`): here, or as a record for the counter
        stage, which looks the step's records up in the order they ran."""
        m = self.m
        if self.records is None:
            self.mem, self.cache = memcounts.count_cached(self.mem, self.cache, m.options.ro_cache, pc, addr, nbytes,
                                                          ok, self.item, m.geo.warps_per_block)
        else:
            self.records.append((memcounts.Shape("ld", memcounts.RO, 0, False), pc, addr, ok, nbytes))

    def record_faults(self, faults, pc: int, addr):
        """Faults (code, lanes [W, L]) of one instruction, the first of them with any lane counting: one record
        where they all stop the run (fewer operations to compile at every memory instruction), else each
        recorded as it is (a check's findings are each kept)."""
        if any(self.m.checked(code) for code, _ in faults):
            for code, bad in faults:
                self.record_fault(code, pc, bad, addr)
            return
        code, bad = faults[-1]
        code = jnp.int64(code)
        for c, b in reversed(faults[:-1]):
            first = jnp.any(b)
            code, bad = jnp.where(first, jnp.int64(c), code), jnp.where(first, b, bad)
        self.fault = record_fault(self.fault, code, pc, bad, addr, self.wave)

    def record_fault(self, code: int, pc: int, bad, addr, other=-1, other_pc=-1):
        """A fault, or under the check it belongs to (`sanitizer.CHECK_OF`) a finding, at the lanes `bad`."""
        self.fault, self.findings = self.m.flag(self.fault, self.findings, code, pc, bad, addr, self.wave, other,
                                                other_pc)

    # -- instructions --
    def run(self, ins: Instr, pc: int):
        """Execute one instruction for the active lanes: its semantics from the instruction table."""
        op = isa.spec(ins)
        if op.run is None:
            raise NotImplementedError(f"terminator {ins.op!r} ({ins.loc}) inside a block")
        outer, self.ftz = self.ftz, bool(ins.attr("ftz", False))
        try:
            op.run(self, ins, pc)
        finally:
            self.ftz = outer

    def param(self, index: int):
        """A kernel parameter's value: an array argument's base address (u64) or a scalar."""
        p = self.m.program.params[index]
        if p.is_pointer:
            return self.bases[:, index, None].astype(jnp.uint64)
        k = [q.index for q in self.m.program.params if not q.is_pointer].index(index)
        return jnp.asarray(self.dyn.scalars[k])[self.item, None]

    def address(self, ins: Instr, nbytes: int, pc: int, space=None, raw=None, act=None):
        """Resolve a memory instruction's per-lane address.

        Returns (memory name, word index [W, L], byte in word [W, L], address [W, L] int64 as the memory
        model sees it, lanes that may access [W, L]). Two forms: indexed (attr `array`: element index
        into a known array, as the DSL emits) and by byte address (attr `array` None: the operand plus
        attr `offset` is a byte address, as PTX emits). Out-of-bounds and misaligned lanes fault.
        space, raw (the address operand's value [W, L]) and act (lanes) override the instruction's."""
        m = self.m
        act = self.active if act is None else act
        space = space or ins.attr("space")
        arr = self.array_of(ins, "array")
        raw_given = raw
        raw = jnp.broadcast_to(self.read(ins.src[0]) if raw is None else raw, act.shape)
        if arr is not None:
            t = T.BY_NAME[ins.attr("type")]
            off = raw.astype(jnp.int64) * t.size + self.offset(ins)
        else:
            off = raw.astype(jnp.int64) + self.offset(ins)
            src = ins.src[0]
            if space in ("shared", "local") and raw_given is None and src.dtype.bits == 32:
                # a 32-bit shared/local address wraps as the hardware's 32-bit adder does
                # ([%r+4] with %r = -4 is byte 0)
                off = off & 0xFFFFFFFF
        if space in ("global", "generic", "const"):
            origin = self.array_of(ins, "origin")
            if arr is not None:
                base, size = self.bases[:, arr, None], self.sizes[:, arr, None]
                addr = base + off
                rel = off
            elif origin is not None and not isinstance(origin, str):
                # a pointer derived from a parameter (jaxsimt.ptx.provenance): checked against that parameter's
                # allocation, wherever the address lands
                p = origin
                addr = off
                base, size = self.bases[:, p, None], self.sizes[:, p, None]
                rel = addr - base
            else:
                addr = off
                # a pointer of unknown origin: the allocation holding each address (few arrays: test each)
                bases, sizes = self.bases[:, :, None], self.sizes[:, :, None]
                inside = [(addr >= bases[:, q.index]) & (addr < bases[:, q.index] + sizes[:, q.index])
                          for q in m.program.params if q.is_pointer]
                hit = jnp.any(jnp.stack(inside), axis=0) if inside else jnp.zeros(act.shape, bool)
                base = jnp.zeros(act.shape, jnp.int64)
                size = jnp.zeros(act.shape, jnp.int64)
                for q, ins_q in zip([q for q in m.program.params if q.is_pointer], inside):
                    base = jnp.where(ins_q, bases[:, q.index], base)
                    size = jnp.where(ins_q, sizes[:, q.index], size)
                rel = jnp.where(hit, addr - base, addr)
                size = jnp.where(hit, size, -1)
                if origin in ("shared", "local"):  # a shared/local variable's address used as global
                    self.record_fault(errors.WRONG_SPACE, pc, act, addr)
                    act = jnp.zeros_like(act)  # no lane accesses (nor faults again as out of bounds)
            name, code = "gmem", errors.OOB_GLOBAL
            widx, boff = lsu.split_address(addr)
        elif space == "shared":
            if arr is not None:
                base, size = self.shared_extent(arr)
                addr = base + off
                rel = off
            elif (var := self.array_of(ins, "shared_array")) is not None:  # a shared variable's address
                # (jaxsimt.ptx.provenance): checked against that variable
                start, size = self.shared_extent(var)
                addr, rel = off, off - start
            else:
                addr, rel, size = off, off, m.program.shared_bytes
            name, code = "smem", errors.OOB_SHARED
            w0, boff = lsu.split_address(addr)
            widx = w0 + m.cta_of_warp[:, None] * m.layout.shared_words
        elif space == "local":
            addr, rel, size = off, off, m.layout.local_words * 4
            name, code = "lmem", errors.OOB_LOCAL
            w0, boff = lsu.split_address(addr)
            thread = jnp.arange(m.geo.W)[:, None] * m.geo.warp_size + m.lane[None, :]
            widx = w0 + thread * m.layout.local_words
        else:
            raise NotImplementedError(f"memory space {space!r} ({ins.loc})")
        oob = act & ((rel < 0) | (rel + nbytes > size))
        const = ins.attr("offset", 0)
        if arr is not None and space == "global" and nbytes == t.size and isinstance(const, int) and const % nbytes == 0:
            # an element of an array the launch laid out (bases aligned to at least 256 bytes): always aligned
            self.record_fault(code, pc, oob, rel)
            return name, widx, boff, addr, act & ~oob
        mis = act & ~oob & (mod(addr, nbytes) != 0)
        self.record_faults(((code, oob), (errors.MISALIGNED, mis)), pc, rel)
        return name, widx, boff, addr, act & ~oob & ~mis

    def memory(self, ins: Instr, pc: int):
        target = self.m.options.target
        if (ins.attr("space") == "generic" and ins.attr("array") is None and target is not None
                and target.generic_window_bytes):
            out = generic.access(self, ins, pc, target)
        else:
            out = self.access(ins, pc)
        for r, v in zip(ins.dst, out):
            self.write(r, v)

    def access(self, ins: Instr, pc: int, space=None, raw=None, act=None) -> list:
        """Run one load/store/atomic for lanes `act` (default: the active ones); `space`/`raw` override the
        instruction's space and address operand (see `address`). Returns the values for ins.dst: the
        loaded elements (ld), the old value (atom with a destination), else nothing."""
        m = self.m
        t = T.BY_NAME[ins.attr("type")]
        vec = ins.attr("vec", 1)
        nbytes = t.size * vec
        name, widx, boff, addr, ok = self.address(ins, nbytes, pc, space, raw, act)
        space = space or ins.attr("space")
        if m.options.arch is not None and name in ("gmem", "smem"):
            self.count(pc, "st" if isa.memory(ins) == "write" else "ld", name, addr, nbytes, ok, space)
        if m.uses_ro_cache and ins.attr("cache") in ("ro", "tex") and name == "gmem":
            self.look_up_cached(pc, addr, nbytes, ok)
        if self.shadow:
            self.sanitize(ins, pc, name, widx, boff, addr, nbytes, ok)
        words = getattr(self, name)
        if not m.options.data:  # counters only
            return [jnp.zeros(ok.shape, r.dtype.np_dtype) for r in ins.dst]
        kind = isa.memory(ins)
        if kind == "read":  # ld, and loads of other units (tex2d)
            return lsu.load(words, widx, boff, ok, t, vec)
        vals = [jnp.broadcast_to(self.read(s, t), ok.shape) for s in ins.src[1:]]
        if kind == "write":
            setattr(self, name, lsu.store(words, widx, boff, ok, vals, t))
            return []
        words, old = lsu.atomic(words, widx, ok, ins.attr("aop"), t, vals)
        setattr(self, name, words)
        return [old] if ins.dst else []


    def sanitize(self, ins: Instr, pc, name: str, widx, boff, addr, nbytes: int, ok):
        """racecheck and initcheck of one load, store or atomic (the memory stage runs them all when these
        checks are on): findings against the shadow memory, then the shadow updated (`jaxsimt.machine.sanitizer`)."""
        m, sh = self.m, self.shadow
        kind = isa.memory(ins)
        mem = name[0]  # g, s or l
        init = getattr(sh, f"{mem}_init")
        if len(init):
            if kind != "write":
                self.record_fault(errors.FaultCode.UNINIT, pc, sanitizer.uninitialized(init, widx, boff, ok, nbytes),
                                  addr)
            if kind != "read":
                sh = sh._replace(**{f"{mem}_init": sanitizer.mark_initialized(init, widx, boff, ok, nbytes)})
        race = getattr(sh, f"{mem}_race", ()) if mem != "l" else ()
        if len(race):
            g_race, atom_time = sh.g_race
            race = g_race if mem == "g" else race
            f = self.findings
            g = m.geo
            cta = m.cta_fused(self.wave, self.dyn).astype(jnp.int64)[:, None]
            tid = cta * g.threads_per_block + m.thread_linear()
            mask = sanitizer.byte_mask(boff, nbytes)
            ep = sanitizer.access_ep(f.episode[m.cta_of_warp][:, None], f.warp_sync[:, None], mask)
            me = sanitizer.Access((tid << 32) | jnp.asarray(pc, jnp.int64), jnp.broadcast_to(ep, ok.shape),
                                  tid, cta, m.warp_in_cta[:, None].astype(jnp.int64), f.clock)
            how = (kind, widx, ok, me, g.threads_per_block, g.warp_size, max(1, nbytes // 4))
            found, seen = sanitizer.race_check(race, atom_time, *how)
            if self.writes is not None:  # a load in a block of the step's switch: the memory stage records it
                for code, bad, other in found:
                    self.record_fault(code, pc, bad, addr, other >> 32, other & 0xFFFFFFFF)
                for w in range(max(1, nbytes // 4)):
                    self.pending.append((1 if mem == "g" else 2, widx + w, ok, me.key, me.ep))
                return
            race, atom_time, intra = sanitizer.race_update(race, atom_time, *how, seen=seen)
            for code, bad, other in found + intra:
                self.record_fault(code, pc, bad, addr, other >> 32, other & 0xFFFFFFFF)
            sh = sh._replace(g_race=(race if mem == "g" else g_race, atom_time),
                             s_race=race if mem == "s" else sh.s_race)
        self.shadow = sh


class _TemplateExec(_Exec):
    """`_Exec` for one interpreted instruction shape: placeholder operand k is the register file row
    `rows[k]` ([K] int32, run-time) or the immediate whose bits in each dtype are `imms[k]` ([K, n dtypes]
    uint64, run-time), as `kinds[k]` says ("reg" or the immediate's Python kind)."""

    def __init__(self, m, data, active, wave, dyn, zero, kinds, rows, imms, collect: bool = False,
                 records: bool = False):
        super().__init__(m, data, active, wave, dyn, zero, collect, records)
        self.kinds, self.rows, self.imms = kinds, rows, imms

    def _placeholder(self, op):
        return isinstance(op, Reg) and op.index <= templates.PLACEHOLDER

    def _read(self, op, dtype: Optional[T.DType] = None):
        if not self._placeholder(op):
            return super()._read(op, dtype)
        k = templates.PLACEHOLDER - op.index
        if self.kinds[k] != "reg":  # an immediate, converted to the dtype asked for as the compiled tier does
            dt = dtype or op.dtype
            bits = self.imms[k, templates.DTYPE_INDEX[dt.name]]
            if dt == T.pred:
                return bits != 0
            return lax.bitcast_convert_type(bits.astype(T.UINT_OF_BITS[dt.bits].np_dtype), dt.np_dtype)
        v = self.row(self.m.file_of[op.dtype.np_dtype], self.rows[k])
        if dtype is not None and dtype.np_dtype != op.dtype.np_dtype:
            v = reinterpret(v, op.dtype, dtype)
        return v

    def _write(self, reg: Reg, value):
        if not self._placeholder(reg):
            return super()._write(reg, value)
        value = self.as_lanes(reg, value)
        f, row = self.m.file_of[reg.dtype.np_dtype], self.rows[templates.PLACEHOLDER - reg.index]
        self.put(f, row, jnp.where(self.active, value, self.row(f, row)))

    def in_state(self, reg: Reg) -> bool:
        return self._placeholder(reg) or super().in_state(reg)

    def offset(self, ins: Instr):
        off = ins.attr("offset", 0)
        if isinstance(off, templates.OffsetOperand):  # the offset is an operand of the template
            return self.read(Reg(templates.PLACEHOLDER - off.k, T.s64)).astype(jnp.int64)
        return off

    def array_of(self, ins: Instr, key: str):
        v = ins.attr(key)
        if isinstance(v, templates.ArrayOperand):  # the array is an operand of the template: a traced int32 []
            return self.read(Reg(templates.PLACEHOLDER - v.k, T.s32))
        return v


_CLASSIC_EMITTERS = "xla_cpu_use_fusion_emitters"
_EXACT_HALVES = "xla_allow_excess_precision"
_DISABLED_PASSES, _TREE_REDUCTIONS = "xla_disable_hlo_passes", "tree_reduction_rewriter"
_CODEGEN_SPLITS = "xla_cpu_parallel_codegen_split_count"


def compiler_options(optimize: bool) -> dict:
    """XLA options of a wave's compilation. Half-precision results are never kept wider than their type.
    Without `optimize` the backend does no optimisation passes (small launches compile ~3x faster). On a CPU,
    where this XLA still has them, its classic loop emitters replace its newer fusion emitters: the machine's
    many small fusions compile ~35% faster that way and run as fast; an unoptimised wave's code is generated as
    one LLVM module (docs/performance.md)."""
    opts: dict = {} if optimize else {"xla_backend_optimization_level": 0}
    # every f16/bf16 operation of the emulated kernel rounds to its type, as the hardware's does: XLA may
    # otherwise keep a fusion's f16 intermediates in f32
    opts[_EXACT_HALVES] = False
    if jax.default_backend() == "cpu" and _has_compile_option(_CLASSIC_EMITTERS, False):
        opts[_CLASSIC_EMITTERS] = False
    if jax.default_backend() == "cpu" and not optimize and _has_compile_option(_CODEGEN_SPLITS, 1):
        # one LLVM module: a small wave's hundreds of tiny kernels compile ~5% faster than split into parallel
        # modules, each with its own target machine (docs/performance.md)
        opts[_CODEGEN_SPLITS] = 1
    if jax.default_backend() == "cpu" and not optimize:
        # XLA:CPU splits every reduction of more than a few dozen elements into a reduce-window and a reduce, two
        # kernels, for the parallelism of large reductions; a small wave's reductions (its any/sum over the warps,
        # integers only, so the order changes no bit) need none of it (docs/performance.md)
        opts[_DISABLED_PASSES] = _TREE_REDUCTIONS
    return opts


@functools.lru_cache(maxsize=None)
def _has_compile_option(name: str, value) -> bool:
    """Whether this XLA knows the compile option `name` (newer versions dropped some) and takes `value` for it: one
    tiny compilation, once per process."""
    try:
        jax.jit(lambda x: x + 1).lower(jnp.int32(0)).compile(compiler_options={name: value})
    except Exception as e:  # noqa: BLE001 - XLA says "No such compile option" as a runtime error
        if "compile option" in str(e):
            return False
        raise
    return True


@contextlib.contextmanager
def _no_gc():
    """Python's cycle collector paused: tracing a machine allocates hundreds of thousands of small objects, and
    the collections they trigger took about a tenth of the tracing time while freeing nothing (JAX's traces
    hold no garbage cycles until they are done)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def device_table(x, dtype=None):
    """A host table (a list or numpy array) as a device array: a transfer, where `jnp.asarray` compiles a small
    program for every new shape (about 10 ms each, dozens per kernel set-up)."""
    return jax.device_put(np.asarray(x, dtype))


def reinterpret(x, src: T.DType, dst: T.DType):
    """Bits of `x` (type src) as type dst: same width bitcast, else truncate / zero-extend the bits."""
    if src == dst:
        return x
    if dst == T.pred:
        return x != 0
    if src == T.pred:
        return x.astype(dst.np_dtype)
    if src.bits == dst.bits:
        return jax.lax.bitcast_convert_type(x, dst.np_dtype)
    u = jax.lax.bitcast_convert_type(x, T.UINT_OF_BITS[src.bits].np_dtype)
    u = u.astype(T.UINT_OF_BITS[dst.bits].np_dtype)
    return jax.lax.bitcast_convert_type(u, dst.np_dtype)


# The most blocks a program may have for `pick_block` to count the warps at each block by comparison
# ([W, n_blocks] work, no atomics) rather than by a scatter-add ([W] work), per backend. A GPU serialises
# a scatter-add whose warps mostly add into one bin (98 us of a 560 us naive GEMM step on an H200 at
# N=2048, against ~3 us compared); a CPU adds serially either way, and comparing costs it n_blocks times more.
COUNT_BY_COMPARISON = {"gpu": 256}


def pick_block(pc, ready, age, n_blocks: int):
    """The block a step runs: where the most ready warps stand (pc [W]), unless a ready warp has waited
    more than `n_blocks` steps (age [W]): then that, the longest-waiting, warp's block. Any cycle of blocks
    that the majority runs is at most n_blocks long, so a warp that waits longer would otherwise starve
    (e.g. the holder of a lock that the other warps spin on), which no hardware warp scheduler does."""
    at = jnp.where(ready, pc, n_blocks)
    if n_blocks <= COUNT_BY_COMPARISON.get(jax.default_backend(), 0):
        counts = jnp.sum(at[:, None] == jnp.arange(n_blocks, dtype=at.dtype), axis=0, dtype=jnp.int32)
    else:
        counts = jnp.zeros((n_blocks + 1,), jnp.int32).at[at].add(1)[:n_blocks]
    waited = jnp.where(ready, age, -1)
    oldest = jnp.argmax(waited)
    return jnp.where(waited[oldest] > n_blocks, pc[oldest], jnp.argmax(counts)).astype(jnp.int32)


def record_fault(fault: Fault, code: int, pc, bad, addr, wave) -> Fault:
    """Keep the first fault: a fault of `code` at the lowest lane of `bad` [W, L], with its address from
    `addr` (broadcast to [W, L]), unless one is recorded already."""
    # Found without a conditional: one reduction over the lanes (fused with what computes `bad`), then the
    # first warp, its first lane and that lane's address, each computed for one element. A `lax.cond` whose
    # branch searches would need `bad` and `addr` written out in full as its operands at every step.
    per_warp = jnp.any(bad, axis=-1)  # [W]
    warp = jnp.argmax(per_warp)
    lane = jnp.argmax(lax.dynamic_index_in_dim(bad, warp, axis=0, keepdims=False))
    at = lax.dynamic_index_in_dim(lax.dynamic_index_in_dim(jnp.broadcast_to(addr, bad.shape), warp, axis=0,
                                                           keepdims=False), lane, axis=0, keepdims=False)
    return fault.unless(per_warp[warp], Fault.of(code, wave, pc, warp, lane, at))


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------


class Machine:
    """A program bound to a wave shape and memory sizes; `run_wave` is the compiled run of one wave."""

    # the special registers the launch's geometry defines (`special`); the others PTX names (lane masks,
    # shared-memory sizes, clocks, ...) are computed by `ptxops.sreg`
    LAUNCH_SREGS = frozenset(f"{r}.{c}" for r in ("tid", "ntid", "ctaid", "nctaid") for c in "xyz") | {
        "laneid", "warpid", "gtid"}

    # Accesses are counted in a stage after the step's block, compiled once per access shape (False: where each
    # runs, the coalescer and bank model compiled at every memory instruction). The stage compiles ~2x faster
    # and steps as fast or faster (docs/performance.md); both count the same.
    count_stage = True

    def __init__(self, program: Program, geo: Geometry, layout: Layout, options: Options):
        program = self.prepare(program, options)
        self.program, self.geo, self.layout, self.options = program, geo, layout, options
        self.NB = len(program.blocks)
        self.exit_pc = program.exit_index
        self.pcs = program.pc_lists()  # the pc of each instruction of each block
        self._tiers()
        self.NI = len(program.instructions())
        L, W = geo.warp_size, geo.W
        self.lane = device_table(np.arange(L), np.int32)
        self.lane_u32 = device_table(np.arange(L), np.uint32)
        warp = np.arange(W, dtype=np.int32)
        self.cta_of_warp = device_table(warp // geo.warps_per_block)
        self.warp_in_cta = device_table(warp % geo.warps_per_block)
        # each shared variable's (first byte, bytes), for templates whose variable is a run-time operand
        self.shared_extents = (np.array([d.offset for d in program.shared] or [0], np.int64),
                               np.array([d.nbytes for d in program.shared] or [0], np.int64))
        # Terminator tables, indexed by the running block.
        terms = [b.term for b in program.blocks]
        self.t_kind = device_table([int(_KIND[t.kind]) for t in terms], jnp.int32)
        self.t_target = device_table([t.target for t in terms], jnp.int32)
        self.t_fall = device_table([t.fallthrough for t in terms], jnp.int32)
        self.t_reconv = device_table([t.reconv for t in terms], jnp.int32)
        self.first_pcs = program.first_pcs()
        self.t_first = device_table(self.first_pcs, jnp.int32)
        # the pc of each block's terminator instruction (blocks without one never fault at their end)
        self.t_pc = device_table([p[len(b.instrs)] if len(p) > len(b.instrs) else 0
                                 for b, p in zip(program.blocks, self.pcs)], jnp.int32)
        self.uses_ro_cache = self.options.ro_cache is not None and rocache.used_by(program)
        self._sync_tables()
        # blocks that do nothing but exit (no instructions; the exit pseudo-block too), [NB + 1]
        self.any_barrier = any(b.term.kind == BARRIER for b in program.blocks)
        bars = barriers.table(program)
        arch = options.target or options.arch
        barriers.validate(program, bars, geo.warp_size,
                          arch.barriers_per_block if arch is not None else barriers.PTX_BARRIERS)
        self.n_barriers = bars.n
        self.counted_barriers = bool(bars.count.any())  # static: only then can arrivals name different counts
        self.t_bar_id, self.t_bar_count, self.t_bar_arrive = (device_table(bars.bar_id), device_table(bars.count),
                                                              device_table(bars.arrive))
        self.exit_only = device_table([not b.instrs and b.term.kind == EXIT for b in program.blocks] + [True])
        self._jitted = exact.jit(self._run_wave, donate_argnums=(0,))
        self._executables: dict = {}  # argument shapes -> compiled wave
        self.compiles = 0  # wave executables compiled so far (LaunchResult.compiles: a launch's share)
        self._compiled = None  # the one last run

    @staticmethod
    def memory_ops(options: Options) -> frozenset:  # the accesses (isa.memory kinds) of the memory stage
        """The ops the memory stage runs: stores and atomics (loads run in the blocks; under racecheck the
        shadow records them after the step's switch, `record_loads`)."""
        return memstage.WRITES

    @staticmethod
    def prepare(program: Program, options: Options, threaded: bool = True) -> Program:
        """The program as this machine runs it: straight runs of blocks merged (`merge_straight`: fewer steps),
        its blocks assigned to the compiled and interpreted tiers and cut after every instruction of the memory
        stage (`memstage.split`), and (`threaded`) loops' back edges threaded into their tests (`thread_jumps`: a
        loop takes one step a trip instead of two)."""
        merged = merge_straight(program.unthreaded())
        kinds = Machine.memory_ops(options)
        split = memstage.split(templates.plan(merged, options.compile_budget), kinds)
        if not threaded:
            return split
        # the jumping block keeps its store or atomic last; a head's loads would compile again
        return thread_jumps(split, jumper_ok=lambda ins: not memstage.is_memory(ins, kinds),
                            head_ok=lambda ins: isa.memory(ins) is None, head_limit=THREAD_HEAD_LIMIT)

    @property
    def defers_counts(self) -> bool:
        """Whether this run counts its accesses in the counter stage (`count_stage`; not op by op, without jit,
        where every step would trace every block to find its records)."""
        return self.options.arch is not None and self.count_stage and not jax.config.jax_disable_jit

    @property
    def shares_splats(self) -> bool:
        """Whether the branches' constant outputs come from arrays made once before the branching (`splats`): for
        unoptimised waves, where compilation is most of the time and each constant would be a kernel of its own.
        Optimised (large) waves keep them: a shared array is copied where a constant is only written."""
        return not self.options.optimize and not jax.config.jax_disable_jit

    @property
    def uses_shadow(self) -> bool:
        """Whether the run keeps shadow memory (racecheck or initcheck)."""
        return bool(self.options.check & {"racecheck", "initcheck"})

    def _sync_tables(self):
        """synccheck's static tables: `after` [NB, NB] (sanitizer.after_barrier), and per block the static member
        mask (`sync_mask` [NB] uint32, 0: none) and pc (`sync_pc`) of its first warp-synchronous instruction,
        and whether it holds a `__syncwarp` (`has_warpsync` [NB])."""
        nb = self.NB
        mask, spc, ws = np.zeros(nb, np.uint32), np.zeros(nb, np.int32), np.zeros(nb, bool)
        for b, pcs in zip(self.program.blocks, self.pcs):
            for j, ins in enumerate(b.instrs):
                mm = sanitizer.member_mask(ins)
                ws[b.index] |= isa.spec(ins.operation).orders_warp
                if mm is not None and not mask[b.index]:
                    mask[b.index], spc[b.index] = mm, pcs[j]
        after = sanitizer.after_barrier(self.program) if "synccheck" in self.options.check else np.zeros((1, 1), bool)
        self.after = device_table(after)
        # what synccheck has to look at in this program (static: a kernel without barriers pays for none)
        self.has_barriers = bool(after.any())
        self.has_sync_masks = bool(mask.any())
        self.sync_mask, self.sync_pc, self.has_warpsync = device_table(mask), device_table(spc), device_table(ws)

    def flag(self, fault, findings, code: int, pc, bad, addr, wave, other=-1, other_pc=-1):
        """(fault, findings) with a fault of `code` at the lanes `bad` [W, L] recorded: as a finding where its
        check is on (`checked`), else as the wave's fault."""
        if self.checked(code):
            return fault, sanitizer.record(findings, code, pc, bad, addr, wave, other, other_pc)
        return record_fault(fault, code, pc, bad, addr, wave), findings

    def sync_before(self, f, b, active, threads, wave, steps):
        """synccheck before block b runs for the lanes `active` [W, L] (`threads`: the lanes that are threads
        of the launch): lanes running work that follows a barrier other lanes of their block wait at
        (BARRIER_SKIPPED), warp-synchronous instructions whose member mask names threads that do not run them
        (SYNC_MASK: threads elsewhere, and threads that have exited: both leave the instruction undefined,
        and under ITS exited threads are the only ones a warp sync does not wait for); and each warp's
        `__syncwarp` count. Returns the findings."""
        g = self.geo
        running = jnp.any(active, axis=1)  # [W]
        f = f._replace(warp_sync=f.warp_sync + (running & self.has_warpsync[b]).astype(jnp.int32),
                       clock=(jnp.asarray(wave, jnp.int64) << 32) | steps.astype(jnp.int64))
        if "synccheck" not in self.options.check:
            return f
        if self.has_barriers:
            f = self._skipped_barrier(f, b, active, wave)
        if not self.has_sync_masks:
            return f
        named = self.unpack(jnp.broadcast_to(self.sync_mask[b], (g.W,))) & threads
        return sanitizer.record(f, errors.FaultCode.SYNC_MASK, self.sync_pc[b],
                                named & ~active & running[:, None] & (self.sync_mask[b] != 0), self.sync_mask[b], wave)

    def _skipped_barrier(self, f, b, active, wave):
        """synccheck: the lanes `active` [W, L] running block b while lanes of their block wait at a barrier b
        follows (BARRIER_SKIPPED)."""
        g = self.geo
        wait = f.bar_block >= 0
        past = wait & self.after[jnp.maximum(f.bar_block, 0), b]  # [W, L] waiting at a barrier b follows
        cta_past = past.reshape(g.ctas_per_wave, -1).any(axis=1)
        bar_pc = jnp.where(past, self.t_pc[jnp.maximum(f.bar_block, 0)], -1).reshape(g.ctas_per_wave, -1).max(axis=1)
        return sanitizer.record(f, errors.FaultCode.BARRIER_SKIPPED, self.t_first[b],
                                active & cta_past[self.cta_of_warp][:, None], 0, wave, -1,
                                bar_pc[self.cta_of_warp][:, None])

    def sync_release(self, f, freed, released, wave):
        """synccheck and ordering at barriers (`f.bar_block`: the barrier block each lane waits at): `freed`
        [W, L] (or [W, 1]) the waiters released now, `released` [C] blocks in which a barrier completed. Counts
        the episode and, under synccheck, reports lanes released from an uncounted barrier at a different
        instruction than others of their block (BARRIER_MISMATCH; counted barriers are met at different
        instructions by design: a producer's bar.arrive, a consumer's bar.sync). Returns the findings."""
        g = self.geo
        rel = freed & (f.bar_block >= 0)
        if "synccheck" in self.options.check and self.has_barriers:
            whole = rel & (self.t_bar_count[jnp.maximum(f.bar_block, 0)] == 0)
            blk = jnp.where(whole, f.bar_block, -1).reshape(g.ctas_per_wave, -1)
            lo = jnp.where(blk >= 0, blk, self.NB).min(axis=1)[self.cta_of_warp][:, None]
            hi = blk.max(axis=1)[self.cta_of_warp][:, None]
            f = sanitizer.record(f, errors.FaultCode.BARRIER_MISMATCH, self.t_pc[jnp.maximum(hi, 0)],
                                 whole & (lo != hi) & (f.bar_block == hi), 0, wave, -1,
                                 self.t_pc[jnp.minimum(lo, self.NB - 1)])
        return f._replace(episode=f.episode + released.astype(jnp.int32), bar_block=jnp.where(rel, -1, f.bar_block))

    def count_clash(self, f, clash, pc, lanes, count, wave):
        """synccheck: the lanes `lanes` [W, L] arriving with thread `count` at a counted barrier whose phase
        others of their block entered with another count (`clash` [C], barriers.arrive) (BARRIER_COUNTS)."""
        if "synccheck" not in self.options.check or not self.counted_barriers:
            return f
        return sanitizer.record(f, errors.FaultCode.BARRIER_COUNTS, pc, lanes & clash[self.cta_of_warp][:, None],
                                count, wave)

    def never_completes(self, f, dead, waiting, bars, wave):
        """synccheck, when no warp of the wave can go on (`dead`): lanes waiting (`waiting` [W, L] or [W, 1])
        at a barrier whose phase can no longer complete, with the threads it has counted (`barriers.short`, -1
        for an uncounted barrier; the finding's address) (BARRIER_HANG). The launch reports the finding instead
        of a deadlock."""
        if "synccheck" not in self.options.check:
            return f
        stuck = dead & waiting & (f.bar_block >= 0)
        counted = barriers.short(bars, waiting.reshape(self.geo.ctas_per_wave, -1)).reshape(waiting.shape)
        return sanitizer.record(f, errors.FaultCode.BARRIER_HANG, self.t_pc[jnp.maximum(f.bar_block, 0)], stuck,
                                counted, wave)

    # -- the barrier phases of a step, shared by both modes (units: warps [W] in stack mode, lanes [W, L] under
    # ITS; jaxsimt.units.barriers) --
    def barrier_arrive(self, bars, findings, units, lanes, b, weight: int, wave):
        """The units `units` arriving at block b's barrier (its terminator), each counting `weight` threads;
        `lanes` [W, L] their lanes. Returns (barriers, findings, the units that wait: bar.arrive counts and goes
        on)."""
        if not self.any_barrier:  # static
            return bars, findings, units
        bars, clash = barriers.arrive(bars, units.reshape(self.geo.ctas_per_wave, -1), self.t_bar_id[b],
                                      self.t_bar_count[b], weight)
        if findings:
            findings = self.count_clash(findings, clash, self.t_pc[b], lanes, self.t_bar_count[b], wave)
        return bars, findings, units & ~self.t_bar_arrive[b]

    def barrier_release(self, bars, findings, waiting, done, waits, b, dead, wave):
        """Release the `waiting` units whose barrier's phase completes (a counted one when its count is reached,
        an uncounted one when every unit of the block not `done` waits at it); `waits` [W, L]: the lanes that
        began waiting at block b this step. Returns (barriers, findings, the units still waiting)."""
        if not self.any_barrier:  # static
            return bars, findings, waiting
        C = self.geo.ctas_per_wave
        bars, freed, released = barriers.release(bars, waiting.reshape(C, -1), done.reshape(C, -1))
        freed = freed.reshape(waiting.shape)
        if findings:
            per_lane = lambda x: x.reshape(self.geo.W, -1)  # noqa: E731 - [W] -> [W, 1], [W, L] stays
            findings = findings._replace(bar_block=jnp.where(waits, b, findings.bar_block))
            findings = self.sync_release(findings, per_lane(freed), released, wave)
            findings = self.never_completes(findings, dead, per_lane(waiting & ~freed), bars, wave)
        return bars, findings, waiting & ~freed

    def checked(self, code: int) -> bool:
        """Whether a fault of `code` is a finding of a check that is on (else it stops the run as a fault)."""
        return sanitizer.CHECK_OF.get(code) in self.options.check

    def _tiers(self):
        """Register files, compiled blocks, interpreter templates and memory-stage templates, and the tables
        that map a block to its `lax.switch` branch (`branch_of` [NB]) and its template's operands (`t_rows`
        [NB, K], `t_imms` [NB, K, n dtypes]), and to its store or atomic's template in the memory stage
        (`m_branch` [NB], -1: none; `m_rows`, `m_imms`; `m_pc` [NB] its pc)."""
        program = self.program
        # A block's store or atomic (its last) runs in the memory stage; the rest is its body.
        self.mem_ins = [memstage.memory_instruction(b, self.memory_ops(self.options)) for b in program.blocks]
        self.body = [b.instrs[:-1] if m is not None else b.instrs for b, m in zip(program.blocks, self.mem_ins)]
        interp = [b for b in program.blocks if b.interpret]
        shapes = [templates.template_of(Block(b.index, self.body[b.index], b.term)) for b in interp]
        mem_blocks = [b for b in program.blocks if self.mem_ins[b.index] is not None]
        mem_shapes = [self._memory_template(b) for b in mem_blocks]
        # The register files hold the registers live across blocks, every operand of an interpreted block and
        # every register a store or atomic names (the memory stage reads and writes them there).
        state = set(cross_block_registers(program))
        state |= {x.index for _, ops in shapes for x in ops if isinstance(x, Reg)}
        for b in mem_blocks:  # its template's operands among them
            state |= memstage.registers(self.mem_ins[b.index])
        self.state_regs = [program.regs[i] for i in sorted(state)]
        self.files = sorted({r.dtype.np_dtype for r in self.state_regs}, key=str)
        self.file_of = {d: f for f, d in enumerate(self.files)}
        rows = [0] * len(self.files)
        self.slot = {}
        for r in self.state_regs:
            f = self.file_of[r.dtype.np_dtype]
            self.slot[r.index] = (f, rows[f])
            rows[f] += 1
        self.file_rows = rows
        self.compiled = [b.index for b in program.blocks if not b.interpret]
        branch_of = np.zeros(self.NB, np.int32)
        for k, b in enumerate(self.compiled):
            branch_of[b] = k
        keys: dict = {}
        for b, (key, _) in zip(interp, shapes):
            branch_of[b.index] = len(self.compiled) + keys.setdefault(key, len(keys))
        self.templates = list(keys)  # template keys in branch order
        self.t_rows, self.t_imms = self._operand_tables([b.index for b in interp], [ops for _, ops in shapes])
        self.branch_of, self._branch_of = device_table(branch_of), branch_of
        mkeys: dict = {}
        m_branch = np.full(self.NB, -1, np.int32)
        m_pc = np.zeros(self.NB, np.int32)
        for b, (key, _) in zip(mem_blocks, mem_shapes):
            m_branch[b.index] = mkeys.setdefault(key, len(mkeys))
            m_pc[b.index] = self.pcs[b.index][len(b.instrs) - 1]
        self.mem_templates = list(mkeys)
        # the most rows of each register file one switch branch writes (its write set's size)
        k_writes = [0] * len(self.files)
        for k in self.compiled:
            dsts = {r.index for ins in self.body[k] for r in ins.dst if r.index in self.slot}
            for f in range(len(self.files)):
                k_writes[f] = max(k_writes[f], sum(self.slot[i][0] == f for i in dsts))
        for shape, *_ in self.templates:
            for f in range(len(self.files)):
                n = sum(self.file_of[r.dtype.np_dtype] == f for ins in shape for r in ins.dst)
                k_writes[f] = max(k_writes[f], n)
        self.k_writes = k_writes
        # racecheck: the most checked words one branch loads (a generic load may touch both memories)
        self.n_pending = 0
        if "racecheck" in self.options.check:
            def loads(instrs):
                n = 0
                for ins in instrs:
                    op = ins.operation
                    if isa.memory(op) == "read":
                        words = max(1, T.BY_NAME[op.attr("type")].size * op.attr("vec", 1) // 4) \
                            if op.attr("type") in T.BY_NAME else 4
                        n += words * (2 if op.attr("space") == "generic" else 1)
                return n
            self.n_pending = max([loads(self.body[k]) for k in self.compiled]
                                 + [loads(shape) for shape, *_ in self.templates] + [0])
        self.active_shape = (self.geo.W, self.geo.warp_size)
        self.m_rows, self.m_imms = self._operand_tables([b.index for b in mem_blocks], [ops for _, ops in mem_shapes])
        self.m_branch, self.m_pc, self._m_branch = device_table(m_branch), device_table(m_pc), m_branch

    @staticmethod
    def _memory_template(b: Block):
        """(key, operands) of block b's store or atomic as the memory stage runs it: its template (shared
        by every such instruction of its shape), or the instruction itself where it cannot be one."""
        ins = b.instrs[-1]
        if templates.templatable(ins):
            return templates.template_of(Block(b.index, [ins], Terminator(FALL, 0)))
        return ("exact", b.index), []

    def _operand_tables(self, blocks: list, operands: list):
        """([NB, K] int32 register-file rows, [NB, K, n dtypes] uint64 immediate bits) of each listed block's
        template operands."""
        K = max([len(ops) for ops in operands] + [1])
        rows = np.zeros((self.NB, K), np.int32)
        imms = np.zeros((self.NB, K, len(templates.DTYPES)), np.uint64)
        for b, ops in zip(blocks, operands):
            for j, x in enumerate(ops):
                if isinstance(x, Reg):
                    rows[b, j] = self.slot[x.index][1]
                else:
                    imms[b, j] = templates.imm_bits(x)
        return device_table(rows), device_table(imms)

    def run_wave(self, gmem, counters, wave, dyn: Dyn, zero):
        """Run one wave (compiled on first use). Returns (gmem, counters, fault, steps, trace, where, findings):
        where = (pc [W] of each unfinished warp's top entry or -1, stack depth [W], recent blocks [RECENT], steps);
        findings: () or the wave's `sanitizer.Findings` (launches with checks). gmem: see `init_state`."""
        if not jax.config.jax_disable_jit:
            # one executable per argument shape: launches of one machine differ in their block tables' length
            # (the number of waves)
            key = self.executable_key(gmem, counters, dyn)
            self._compiled = self._executables.get(key)
            if self._compiled is None:
                with _no_gc():
                    lowered = self._jitted.lower(gmem, counters, wave, dyn, zero)
                self._compiled = lowered.compile(compiler_options=compiler_options(self.options.optimize))
                self._executables[key] = self._compiled
                self.compiles += 1
            return self._compiled(gmem, counters, wave, dyn, zero)
        return self._run_wave(gmem, counters, wave, dyn, zero)

    @staticmethod
    def executable_key(gmem, counters, dyn: Dyn) -> tuple:
        """What a wave's executable depends on besides the machine: its arguments' shapes and types."""
        return tuple((jnp.shape(x), jnp.result_type(x)) for x in jax.tree_util.tree_leaves((gmem, counters, dyn)))

    # -- memory counters --
    def tally(self, x, item):
        """[W] per-warp counts -> [I] int64 sums per batch item (`item` [W]: each warp's item)."""
        return memcounts.tally(x, item, self.geo.items)

    def count_memory(self, mem, pc, shape: memcounts.Shape, addr, ok, item):
        """mem [I, NI, N_MEM] with one access (addr [W, L], lanes ok [W, L]) of every warp of the step counted
        at instruction pc."""
        return memcounts.count_inline(self.options.arch, mem, pc, shape, addr, ok, item)

    # -- lanes and threads --
    def pack(self, bits):
        """[W, L] bool -> [W] uint32 lane mask."""
        return jnp.sum(jnp.where(bits, jnp.uint32(1) << self.lane_u32, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)

    def unpack(self, mask):
        return ((mask[:, None] >> self.lane_u32[None, :]) & 1).astype(bool)

    def thread_linear(self):
        return self.warp_in_cta[:, None] * self.geo.warp_size + self.lane[None, :]

    def cta_fused(self, wave, dyn: Dyn):
        """[W] item * n_ctas + linear block id of each warp's block in this wave."""
        return dyn.ctas[wave * self.geo.ctas_per_wave + self.cta_of_warp]

    def cta_linear(self, wave, dyn: Dyn):
        """[W] linear block id (in its item's grid) of each warp's block in this wave."""
        return mod(self.cta_fused(wave, dyn), dyn.n_ctas, nonneg=True)

    def item_of_warp(self, wave, dyn: Dyn):
        """[W] int32 batch item of each warp (padding blocks: the last item; they never run)."""
        if self.geo.items == 1:
            return jnp.zeros((self.geo.W,), jnp.int32)
        item = floordiv(self.cta_fused(wave, dyn), dyn.n_ctas, nonneg=True)
        return jnp.minimum(item, self.geo.items - 1).astype(jnp.int32)

    def valid_mask(self, wave, dyn: Dyn):
        t = self.thread_linear()
        ok = (t < self.geo.threads_per_block) & (self.cta_fused(wave, dyn) < dyn.n_ctas * self.geo.items)[:, None]
        return self.pack(ok)

    def special(self, name: str, wave, dyn: Dyn):
        """[W, L] int32: the special register `name` (one of `LAUNCH_SREGS`: the launch's geometry) of every lane."""
        g = self.geo
        bx, by, bz = g.block
        gx, gy, gz = dyn.grid[0], dyn.grid[1], dyn.grid[2]
        t = self.thread_linear()
        c = self.cta_linear(wave, dyn)[:, None]
        vals = {
            "tid.x": lambda: mod(t, bx), "tid.y": lambda: mod(floordiv(t, bx), by),
            "tid.z": lambda: floordiv(t, bx * by),
            "ntid.x": lambda: bx, "ntid.y": lambda: by, "ntid.z": lambda: bz,
            # block ids and grid sizes are non-negative: one truncating division each
            "ctaid.x": lambda: mod(c, gx, nonneg=True),
            "ctaid.y": lambda: mod(floordiv(c, gx, nonneg=True), gy, nonneg=True),
            "ctaid.z": lambda: floordiv(c, gx * gy, nonneg=True),
            "nctaid.x": lambda: gx, "nctaid.y": lambda: gy, "nctaid.z": lambda: gz,
            "laneid": lambda: self.lane[None, :], "warpid": lambda: self.warp_in_cta[:, None],
            "gtid": lambda: c * g.threads_per_block + t,
        }
        if name not in vals:
            raise NotImplementedError(f"special register {name}")
        return jnp.broadcast_to(jnp.asarray(vals[name](), jnp.int32), (g.W, g.warp_size))

    # -- one block's instructions: the only per-block code --
    # A branch of the step's switch runs a block's body: (data, zero, active, wave, dyn, b) -> (register write
    # set, mem, fault, cache, lanes whose branch predicate holds [W] uint32), data as `_Exec` takes it. It
    # reads the memories and writes none (stores and atomics run in the memory stage).
    def _block_fn(self, k: int):
        blk = self.program.blocks[k]
        pcs = self.pcs[k]
        term, body = blk.term, self.body[k]

        def fn(data, zero, active, wave, dyn, operands):
            ex = _Exec(self, data, active, wave, dyn, zero, collect=True, records=self.defers_counts)
            for j, ins in enumerate(body):
                ex.run(ins, pcs[j])
            if term.kind == BRANCH:
                p = ex.read(term.pred).astype(bool)
                taken = self.pack((~p if term.negate else p) & active)
            else:
                taken = jnp.zeros((self.geo.W,), jnp.uint32)
            return self._branch_out(ex, data, taken)

        return fn

    def _template_fn(self, key):
        """The interpreter's function for one instruction shape: block b's operands come from the tables."""
        shape, branch, kinds, _ = key

        def fn(data, zero, active, wave, dyn, operands):
            pc, rows, imms = operands
            ex = _TemplateExec(self, data, active, wave, dyn, zero, kinds, rows, imms, collect=True,
                               records=self.defers_counts)
            for j, ins in enumerate(shape):
                ex.run(ins, pc + j)
            if branch[0]:
                p = ex.read(Reg(templates.PLACEHOLDER - (len(kinds) - 1), branch[2])).astype(bool)
                taken = self.pack((~p if branch[1] else p) & active)
            else:
                taken = jnp.zeros((self.geo.W,), jnp.uint32)
            return self._branch_out(ex, data, taken)

        return fn

    def _branch_out(self, ex: _Exec, data, taken):
        _, gmem, smem, lmem, *_, shadow = data
        if ex.gmem is not gmem or ex.smem is not smem or ex.lmem is not lmem or ex.shadow is not shadow:
            raise AssertionError("a block wrote a memory outside the memory stage")
        return (self.write_set(ex.writes), ex.mem, ex.fault, ex.cache, ex.findings, self.pending_set(ex.pending), taken,
                self.record_list(ex.records))

    # -- the counter stage: every access of the step counted after its block and its memory stage --
    def record_list(self, records):
        """A branch's access records (`_Exec.records`) in order, as `_with_records` pads them: [(shape, pc,
        addr [W, L] int64, lanes [W, L], bytes per lane)]; {} where its accesses were counted where they ran."""
        if records is None:
            return {}
        return [(shape, jnp.asarray(pc, jnp.int32), jnp.broadcast_to(jnp.asarray(addr, jnp.int64), self.active_shape),
                 jnp.broadcast_to(ok, self.active_shape), jnp.asarray(n, jnp.int32)) for shape, pc, addr, ok, n in records]

    def _with_records(self, fns, args, shared: Optional[splats.Shared] = None) -> tuple:
        """(the most records of each shape one of `fns` leaves: [(memcounts.Shape, slots)], the fns with their
        records padded to those slots, as a switch or cond runs them, and each fn's number of records of each
        shape: [{shape: n}]). fns: functions of `args` whose last
        output is their `record_list`; each is traced once, here, and its trace run again by the
        padded fn (tracing a block's Python twice would cost as much as a tenth of a small kernel's first
        launch). With `shared`, outputs that are splats, and the records of a shape a fn leaves none of, come
        from `shared`'s arrays (`jaxsimt.machine.splats`)."""
        traced, most = [], {}
        for fn in fns:
            shapes: list = []

            def raw(*a, fn=fn, shapes=shapes):
                *head, recs = fn(*a)
                shapes.extend(r[0] for r in recs)
                return (*head, [r[1:] for r in recs])

            closed, out = jax.make_jaxpr(raw, return_shape=True)(*args)
            made = shared.replacements(closed, out) if shared is not None else None  # made outside the branching
            traced.append((jax_core.jaxpr_as_fun(closed), jax.tree_util.tree_structure(out), shapes, made))
            for shape in set(shapes):
                most[shape] = max(most.get(shape, 0), shapes.count(shape))
        slots = sorted(most.items())
        none = {}  # with `shared`: the records of a fn that leaves none of a shape
        if shared is not None:
            for shape, k in slots:
                one = memcounts.pack(self.options.arch, shape, [], k, self.active_shape)
                none[shape] = memcounts.Records(*(None if x is None else shared.get(
                    ("records", shape, j), x.shape, np.asarray(memcounts.fill(self.options.arch, shape, j), x.dtype))
                                                  for j, x in enumerate(one)))

        def padded(run, tree, shapes, made):
            def fn(*a):
                outs = run(*jax.tree_util.tree_leaves(a))
                if made is not None:
                    outs = [o if m is None else m for o, m in zip(outs, made)]
                *head, recs = jax.tree_util.tree_unflatten(tree, outs)
                return (*head, {shape: none[shape] if shape in none and shape not in shapes else
                                memcounts.pack(self.options.arch, shape,
                                               [r for sh, r in zip(shapes, recs) if sh == shape], k, self.active_shape)
                                for shape, k in slots})
            return fn

        return slots, [padded(*t) for t in traced], [collections.Counter(t[2]) for t in traced]

    def count_records(self, mem, cache, records: dict, item, present: dict):
        """(mem [I, NI, N_MEM], read-only cache) with the step's access records counted: each shape's records
        at once, compiled once per shape whatever the kernel (skipped where the step's block leaves none of that
        shape: `present[shape]`, a traced bool); read-only loads looked up in their cache in the order they ran."""
        for shape, rec in sorted(records.items()):
            # a record without lanes counts nothing, so skipping by the block alone changes no count
            run = present[shape]
            if shape.name == memcounts.RO:
                mem, cache = lax.cond(
                    run, lambda c, r: memcounts.count_cache_records(
                        *c, self.options.ro_cache, r, item, self.geo.warps_per_block),
                    lambda c, r: c, (mem, cache), rec)
                continue
            mem = lax.cond(run,
                           lambda m, r, shape=shape: memcounts.count_records(self.options.arch, m, shape, r, item),
                           lambda m, r: m, mem, rec)
        return mem, cache

    def write_set(self, writes: list) -> tuple:
        """A branch's register writes as one (rows [K_f] int32, values [K_f, W, L]) pair per register file, K_f
        the most rows any branch writes in file f (`k_writes`); unused slots name row R_f, the file's sink row
        (`init_state`). Where two writes may name the same row at run time, the later wins."""
        out = []
        for f, dt in enumerate(self.files):
            mine = [(row, v) for wf, row, v in writes if wf == f]
            K, R = self.k_writes[f], self.file_rows[f]
            if len(mine) > K:
                raise AssertionError(f"a block writes {len(mine)} rows of register file {f}, more than {K} counted")
            rows = [jnp.asarray(r, jnp.int32) for r, _ in mine]
            for i in range(len(rows)):
                for j in range(i + 1, len(rows)):
                    rows[i] = jnp.where(rows[i] == rows[j], R, rows[i])
            rows += [jnp.int32(R)] * (K - len(mine))
            vals = [v for _, v in mine] + [jnp.zeros(self.active_shape, dt)] * (K - len(mine))
            if K == 0:
                out.append((jnp.zeros((0,), jnp.int32), jnp.zeros((0,) + self.active_shape, dt)))
            else:
                out.append((jnp.stack(rows), jnp.stack(vals)))
        return tuple(out)

    @staticmethod
    def write_back(file, rows, vals):
        """A register file [R_f + 1, W, L] with a write set's rows [K] set to vals [K, W, L], one row at a time (a
        row update is done in place; XLA:CPU runs a scatter of whole rows as a loop, several times slower)."""
        for k in range(rows.shape[0]):
            file = lax.dynamic_update_index_in_dim(file, vals[k], rows[k], 0)
        return file

    def pending_set(self, pending: list) -> tuple:
        """A branch's loads for racecheck (`_Exec.pending`) padded to `n_pending` entries (memory 0: none)."""
        if not self.n_pending:
            return ()
        if len(pending) > self.n_pending:
            raise AssertionError(f"a block makes {len(pending)} checked loads, more than {self.n_pending} counted")
        shape = self.active_shape
        rows = [(jnp.int32(mem), jnp.broadcast_to(widx, shape).astype(jnp.int32), jnp.broadcast_to(ok, shape),
                 jnp.broadcast_to(key, shape).astype(jnp.int64), jnp.broadcast_to(ep, shape).astype(jnp.int64))
                for mem, widx, ok, key, ep in pending]
        z = jnp.zeros(shape, jnp.int64)
        rows += [(jnp.int32(0), z.astype(jnp.int32), jnp.zeros(shape, bool), z, z)] * (self.n_pending - len(pending))
        return tuple(rows)

    def record_loads(self, shadow, findings, pending):
        """The shadow with a step's loads recorded as readers (`sanitizer.race_update`), one memory each."""
        g = self.geo
        g_race, atom_time = shadow.g_race
        s_race = shadow.s_race
        for mem, widx, ok, key, ep in pending:
            tid = key >> 32
            me = sanitizer.Access(key, ep, tid, floordiv(tid, g.threads_per_block),
                                  floordiv(mod(tid, g.threads_per_block), g.warp_size), findings.clock)
            upd = lambda r, ok: sanitizer.race_update(r, atom_time, "read", widx, ok, me, g.threads_per_block,  # noqa: E731
                                                      g.warp_size)[0]
            g_race = lax.cond(mem == 1, lambda r: upd(r, ok), lambda r: r, g_race)
            s_race = lax.cond(mem == 2, lambda r: upd(r, ok), lambda r: r, s_race)
        return shadow._replace(g_race=(g_race, atom_time), s_race=s_race)

    def branches(self) -> list:
        """The step's `lax.switch` branches: one per compiled block, then one per interpreter template."""
        return [self._block_fn(k) for k in self.compiled] + [self._template_fn(key) for key in self.templates]

    def _memory_fn(self, key, active, wave, dyn, zero, operands):
        """The memory stage's function for one memory-instruction shape, for block b: data -> (data, its access
        records for the counter stage), data as `_Exec` takes it."""

        def fn(data):
            if key[0] == "exact":  # an instruction that cannot be a template: itself, at its own pc
                blk = self.program.blocks[key[1]]
                ex = _Exec(self, data, active, wave, dyn, zero, records=self.defers_counts)
                ex.run(blk.instrs[-1], self.pcs[blk.index][len(blk.instrs) - 1])
            else:
                shape, _, kinds, _ = key
                pc, rows, imms = operands
                ex = _TemplateExec(self, data, active, wave, dyn, zero, kinds, rows, imms,
                                   records=self.defers_counts)
                ex.run(shape[0], pc)
            return ex.data(), self.record_list(ex.records)

        return fn

    def _memory_stage(self, b, s: State, active, wave, dyn: Dyn):
        """Run block b's store or atomic, if it has one, for the `active` lanes (see `jaxsimt.machine.memstage`).
        Returns (state, its access records for the counter stage, each memory template's number of records of
        each shape: [{shape: n}])."""
        if not self.mem_templates:
            return s, {}, []
        data = (s.regs, s.gmem, s.smem, s.lmem, s.mem, s.fault, s.cache, s.findings, s.shadow)
        operands = (self.m_pc[b], self.m_rows[b], self.m_imms[b])  # read once for every template
        fns = [self._memory_fn(key, active, wave, dyn, s.zero, operands) for key in self.mem_templates]
        slots, per_fn = [], []
        if self.defers_counts:
            slots, fns, per_fn = self._with_records(fns, (data,), splats.Shared(s.zero) if self.shares_splats else None)
        out = (data, {shape: memcounts.pack(self.options.arch, shape, [], k, self.active_shape) for shape, k in slots})
        for k, fn in enumerate(fns):
            out = lax.cond(self.m_branch[b] == k, lambda o, fn=fn: fn(o[0]), lambda o: o, out)
        data, records = out
        regs, gmem, smem, lmem, mem, fault, cache, findings, shadow = data
        return s._replace(regs=regs, gmem=gmem, smem=smem, lmem=lmem, mem=mem, fault=fault, cache=cache,
                          findings=findings, shadow=shadow), records, per_fn

    def counting_shape(self, shape: memcounts.Shape) -> memcounts.Shape:
        """The shape the counter stage counts an access under. Without `optimize` (small launches, where the
        compilation is most of a first call) loads and stores whose counts agree share one
        (`memcounts.counting_shape`): one model compiled per memory instead of per direction and width, for
        the price of counting every slot of the shared shape at any step that has one of them (the corpus:
        first calls a tenth faster, second runs of its small programs a seventh slower; docs/performance.md).
        With `optimize`, where the run is what takes the time, each keeps its own."""
        return shape if self.options.optimize else memcounts.counting_shape(self.options.arch, shape)

    def _records_per_block(self, shape, per_branch: list, per_template: list) -> tuple:
        """([NB], [NB]) int32: how many records of `shape` each block leaves in its body (its branch's count in
        `per_branch`) and in its memory stage (its template's in `per_template`); zeros where a list is empty."""
        n_body, n_stage = np.zeros(self.NB, np.int32), np.zeros(self.NB, np.int32)
        if per_branch:
            n_body[:] = [per_branch[k][shape] for k in self._branch_of]
        if per_template:
            n_stage[:] = [per_template[k][shape] if k >= 0 else 0 for k in self._m_branch]
        return n_body, n_stage

    def _merge_records(self, b, shape, body, stage, n_body: np.ndarray, n_stage: np.ndarray):
        """Block b's records of one shape: its body's (from its switch branch) then its memory stage's, in the
        order they ran. Slots: the most one block leaves (its body's and its stage's together), fewer than the
        body's slots and the stage's side by side where no block fills both: a loop body's loads and the store
        after the loop share slots, so a step counts no more records than before they shared a shape. n_body,
        n_stage [NB]: each block's records of this shape in its body and its stage (`_records_per_block`)."""
        if body is None or stage is None:
            return body if stage is None else stage
        K_body, K_stage = body.addr.shape[0], stage.addr.shape[0]
        K = max(int(np.max(n_body + n_stage)), K_body, K_stage)
        if K == K_body + K_stage:
            return memcounts.concat(body, stage)
        first = device_table(n_body)[b]  # where block b's stage records go: after its body's
        slot = jnp.arange(K, dtype=jnp.int32)
        take = (slot >= first) & (slot < first + device_table(n_stage)[b])
        at = jnp.clip(slot - first, 0, K_stage - 1)

        def merged(x, y, j):
            if K > K_body:
                x = jnp.concatenate([x, jnp.full((K - K_body,) + x.shape[1:], memcounts.fill(self.options.arch, shape, j),
                                                 x.dtype)])
            return jnp.where(take.reshape((K,) + (1,) * (x.ndim - 1)), y[at], x)

        return memcounts.Records(*(None if x is None else merged(x, y, j) for j, (x, y) in enumerate(zip(body, stage))))

    def _run_block(self, b, fns, s: State, active, wave, dyn: Dyn):
        """Run block b for the `active` lanes [W, L]: its body (its compiled branch or its template), then its
        store or atomic; returns (state, lanes whose branch predicate holds [W] uint32)."""
        # the running block's template operands, read once for every branch
        operands = (self.t_first[b], self.t_rows[b], self.t_imms[b]) if self.templates else ()
        args = ((s.regs, s.gmem, s.smem, s.lmem, s.mem, s.fault, s.cache, s.findings, s.shadow), s.zero, active, wave,
                dyn, operands)
        per_branch = []
        shares = self.shares_splats and len(fns) > 1
        if self.defers_counts:
            _, fns, per_branch = self._with_records(fns, args, splats.Shared(s.zero) if shares else None)
        elif shares:
            fns = splats.share(fns, args, s.zero)
        # the phases as named scopes: XLA's instructions keep the name (compile-time and profile breakdowns)
        with jax.named_scope("execute"):
            ws, mem, fault, cache, findings, pending, taken, records = (
                lax.switch(self.branch_of[b], fns, *args) if len(fns) > 1 else fns[0](*args))
            regs = tuple(self.write_back(r, rows, vals) for r, (rows, vals) in zip(s.regs, ws))
        s = s._replace(regs=regs, mem=mem, fault=fault, cache=cache, findings=findings)
        if pending:
            s = s._replace(shadow=self.record_loads(s.shadow, s.findings, pending))
        with jax.named_scope("memory"):
            s, stored, per_template = self._memory_stage(b, s, active, wave, dyn)
        if records or stored:
            merged, present = {}, {}
            for shape in set(records) | set(stored):
                n_body, n_stage = self._records_per_block(shape, per_branch, per_template)
                merged[shape] = self._merge_records(b, shape, records.get(shape), stored.get(shape), n_body,
                                                    n_stage)
                present[shape] = device_table(n_body + n_stage > 0)[b]
            records = merged
            with jax.named_scope("counters"):
                mem, cache = self.count_records(s.mem, s.cache, records, self.item_of_warp(wave, dyn), present)
            s = s._replace(mem=mem, cache=cache)
        return s, taken

    # -- the shared part of a step: scheduling, terminators, stacks, barriers --
    def _step(self, s: State, wave, dyn: Dyn, fns) -> State:
        g, NB = self.geo, self.NB
        with jax.named_scope("schedule"):
            top_pc, _, top_mask = stack.top(s.stack)
            alive = s.stack.sp > 0
            ready = alive & ~s.waiting
            b = pick_block(top_pc, ready, s.age, NB)
            sel = ready & (top_pc == b)
            mask = jnp.where(sel, top_mask & ~s.exited, jnp.uint32(0))
            active = self.unpack(mask)

        item = self.item_of_warp(wave, dyn)
        if s.findings:
            s = s._replace(findings=self.sync_before(s.findings, b, active, self.unpack(self.valid_mask(wave, dyn)),
                                                     wave, s.steps))
        s, taken = self._run_block(b, fns, s, active, wave, dyn)
        regs, gmem, smem, lmem, mem, fault, findings = s.regs, s.gmem, s.smem, s.lmem, s.mem, s.fault, s.findings

        kind, target, fall, reconv, tpc = (self.t_kind[b], self.t_target[b], self.t_fall[b], self.t_reconv[b],
                                           self.t_pc[b])
        st, exited, waiting = s.stack, s.exited, s.waiting
        with jax.named_scope("barriers"):
            # barrier: every live lane of the warp must be here
            at_bar = sel & (kind == TermKind.BARRIER)
            live = self.valid_mask(wave, dyn) & ~exited
            missing = self.unpack(live & ~mask & ~self.parked_for_exit(st, mask)) & at_bar[:, None]
            fault, findings = self.flag(fault, findings, errors.DIVERGENT_BARRIER, tpc, missing, 0, wave)
        with jax.named_scope("terminators"):
            # every terminator as a branch: a conditional one splits the lanes by its predicate; every lane of a
            # fall-through, jump or barrier goes to the target, of an exit to the exit pseudo-block
            is_branch = kind == TermKind.BRANCH
            st, div, overflow = stack.branch(st, sel, jnp.where(is_branch, taken & mask, mask),
                                             jnp.where(is_branch, mask & ~taken, jnp.uint32(0)),
                                             jnp.where(kind == TermKind.EXIT, self.exit_pc, target), fall, reconv)
            fault = record_fault(fault, errors.STACK_OVERFLOW, tpc, overflow[:, None] & (self.lane == 0)[None, :],
                                 st.sp[:, None], wave)
            at_exit = sel & (kind == TermKind.EXIT)
            exited = jnp.where(at_exit, exited | mask, exited)
            st = stack.pop_reconverged(st, exited)
        with jax.named_scope("barriers"):
            # a warp's arrival counts the warp size, as the hardware counts it
            bars, findings, at_bar = self.barrier_arrive(s.barriers, findings, at_bar,
                                                         self.unpack(mask) & at_bar[:, None], b, g.warp_size, wave)
            waiting = waiting | at_bar
            # deadlock: live warps, none ready
            dead = ~jnp.any(ready) & jnp.any(alive)
            fault = fault.unless(dead, Fault.of(errors.DEADLOCK, wave))
            bars, findings, waiting = self.barrier_release(bars, findings, waiting, ~(st.sp > 0),
                                                           at_bar[:, None] & active, b, dead, wave)
        trace = s.trace
        if trace:
            tb, tm, tsp = trace
            trace = (tb.at[s.steps].set(b, mode="drop"), tm.at[s.steps].set(mask, mode="drop"),
                     tsp.at[s.steps].set(st.sp, mode="drop"))
        with jax.named_scope("tally"):
            warp_exec = s.warp_exec.at[:, b].add(self.tally(sel & (mask != 0), item))
            thread_exec = s.thread_exec.at[:, b].add(self.tally(lax.population_count(mask), item))
            divergent = s.divergent.at[:, b].add(self.tally(div, item))
            # the deepest a stack was at any point: before the step too (a warp that ends in its first step
            # still held its initial entry)
            max_depth = jnp.maximum(s.max_depth, self.item_max(jnp.maximum(s.stack.sp, st.sp), item))
        return s._replace(
            regs=regs, gmem=gmem, smem=smem, lmem=lmem, mem=mem, fault=fault, stack=st, exited=exited, waiting=waiting,
            findings=findings, barriers=bars, steps=s.steps + 1, trace=trace, recent=s.recent.at[mod(s.steps, RECENT)].set(b),
            warp_exec=warp_exec, thread_exec=thread_exec, divergent=divergent, max_depth=max_depth,
            age=jnp.where(ready & ~sel, s.age + 1, 0))

    def parked_for_exit(self, st, mask):
        """[W] uint32: lanes not in the top entry `mask` that wait in a lower stack entry at a block that does
        nothing but exit and in no entry with work left (an early `return` before a later barrier: the lanes only
        wait there to exit, and exited threads do not hold a barrier up on Volta and later)."""
        if not self.any_barrier:  # static: a kernel without barriers never asks
            return jnp.zeros_like(mask)
        D = st.pc.shape[1]
        below = jnp.arange(D)[None, :] < (st.sp - 1)[:, None]
        at_exit = self.exit_only[jnp.clip(st.pc, 0, self.NB)]

        def lanes_of(entries):  # [W, D] -> [W] uint32: the lanes of those stack entries
            return jnp.bitwise_or.reduce(jnp.where(entries, st.mask, jnp.uint32(0)), axis=1)

        # a reconvergence entry at the exit holds every lane of its branch, also those whose path has still
        # to run (in an entry of its own): only lanes in no such entry are waiting to exit
        return lanes_of(below & at_exit) & ~lanes_of(below & ~at_exit) & ~mask

    def item_max(self, x, item):
        """[W] int32 -> [I] maxima per batch item (items without a warp here: int32 min)."""
        if self.geo.items == 1:
            return jnp.max(x)[None]
        return jax.ops.segment_max(x, item, num_segments=self.geo.items)

    # -- the run of one wave --
    def init_state(self, gmem, counters, wave, dyn: Dyn, zero) -> State:
        """The wave's state at its start. `gmem`: the global memory [global_words] uint32, or with shadow memory
        (`uses_shadow`) the pair (memory, (its race shadow or (), its initialized bytes or ())) (`gmem_out`)."""
        g = self.geo
        gshadow = None
        if self.uses_shadow:
            gmem, gshadow = gmem
        W, L = g.W, g.warp_size
        item = self.item_of_warp(wave, dyn)
        scal = {p.reg.index: v for p, v in zip([p for p in self.program.params if not p.is_pointer], dyn.scalars)
                if p.reg is not None}
        # one row a register, and a last one that takes the write sets' unused slots (`write_set`)
        regs = [jnp.zeros((n + 1, W, L), d) for n, d in zip(self.file_rows, self.files)]
        for r in self.state_regs:
            if r.index in scal:
                f, row = self.slot[r.index]
                v = jnp.asarray(scal[r.index])[item, None]
                regs[f] = regs[f].at[row].set(jnp.broadcast_to(v.astype(r.dtype.np_dtype), (W, L)))
        S = self.options.trace_steps
        trace = ((jnp.full((S,), -1, jnp.int32), jnp.zeros((S, W), jnp.uint32), jnp.zeros((S, W), jnp.int32))
                 if S else ())
        warp_exec, thread_exec, divergent, max_depth, mem = counters
        return State(
            regs=tuple(regs), gmem=gmem,
            smem=jnp.zeros((g.ctas_per_wave * max(self.layout.shared_words, 1),), jnp.uint32),
            lmem=jnp.zeros((W * L * self.layout.local_words if self.layout.local_words else 1,), jnp.uint32),
            stack=stack.init(self.valid_mask(wave, dyn), g.depth, 0, self.exit_pc),
            exited=jnp.zeros((W,), jnp.uint32), waiting=jnp.zeros((W,), bool), steps=jnp.int32(0), zero=zero,
            warp_exec=warp_exec, thread_exec=thread_exec, divergent=divergent, max_depth=max_depth, mem=mem,
            fault=Fault.of(errors.NONE, 0, pc=0), trace=trace, recent=jnp.full((RECENT,), -1, jnp.int32),
            age=jnp.zeros((W,), jnp.int32),
            cache=rocache.init(g.ctas_per_wave, self.options.ro_cache) if self.uses_ro_cache else (),
            findings=sanitizer.init_findings(g.ctas_per_wave, W, L) if self.options.check else (),
            shadow=self.init_shadow(gshadow) if gshadow is not None else (),
            barriers=barriers.init(g.ctas_per_wave, g.warps_per_block, self.n_barriers) if self.any_barrier else ())

    def init_shadow(self, gshadow) -> "sanitizer.Shadow":
        """Shadow memory at a wave's start: global memory's as the previous wave left it, shared and local
        memory's fresh (their contents are the wave's own)."""
        g, check = self.geo, self.options.check
        smem_words = g.ctas_per_wave * max(self.layout.shared_words, 1)
        lmem_words = g.W * g.warp_size * self.layout.local_words if self.layout.local_words else 1
        g_race, g_init = gshadow
        return sanitizer.Shadow(
            g_race=g_race, s_race=sanitizer.race_shadow(smem_words, g_race[1].shape[0] > 0) if "racecheck" in check
            else (), g_init=g_init,
            s_init=jnp.zeros((4 * smem_words,), bool) if "initcheck" in check else (),
            l_init=jnp.zeros((4 * lmem_words,), bool) if "initcheck" in check else ())

    def gmem_out(self, s: State):
        """What a wave hands the next: global memory, with its shadow when the run keeps one (`init_state`)."""
        return (s.gmem, (s.shadow.g_race, s.shadow.g_init)) if self.uses_shadow else s.gmem

    def running(self, s: State):
        """Whether the wave may go on: no fault, and no finding of a check that stops at the first."""
        ok = s.fault.code == errors.NONE
        return ok & (s.findings.total == 0) if self.stops_at_finding else ok

    def unfinished(self, s: State, live):
        """Whether a wave that left its loop with `live` threads ran out of its step budget (rather than
        stopping at a finding)."""
        return live & (s.findings.total == 0) if self.stops_at_finding else live

    @property
    def stops_at_finding(self) -> bool:
        return bool(self.options.check) and not self.options.collect

    def _run_wave(self, gmem, counters, wave, dyn: Dyn, zero):
        s0 = self.init_state(gmem, counters, wave, dyn, zero)
        fns = self.branches()

        def cond(s: State):
            return jnp.any(s.stack.sp > 0) & self.running(s) & (s.steps < dyn.max_steps)

        s = lax.while_loop(cond, lambda s: self._step(s, wave, dyn, fns), s0)
        unfinished = self.unfinished(s, jnp.any(s.stack.sp > 0))
        fault = s.fault.unless(unfinished, Fault.of(errors.STEP_BUDGET, wave))
        counters = Counters(s.warp_exec, s.thread_exec, s.divergent, s.max_depth, s.mem)
        top_pc, _, _ = stack.top(s.stack)
        return self.gmem_out(s), counters, fault, s.steps, s.trace, (jnp.where(s.stack.sp > 0, top_pc, -1), s.stack.sp,
                                                                     s.recent, s.steps), s.findings

    def zero_counters(self) -> Counters:
        NB, I = self.NB, self.geo.items
        return Counters(*(device_table(np.zeros(shape, dt)) for shape, dt in (
            ((I, NB), np.int64), ((I, NB), np.int64), ((I, NB), np.int64), ((I,), np.int32),
            ((I, self.NI, N_MEM), np.int64))))
