"""Lowering of a parsed PTX `.entry` onto the emulator's `Program`.

Basic blocks split at labels and after `bra`, `bar.sync`, `ret` and `exit`; `.func` bodies are inlined at
each `call` (recursion is refused). Predicated non-branch instructions stay in their block as one guarded
instruction (`ptx.guard`: the inner instruction runs for the lanes whose predicate holds), which is how the
hardware issues them. Module-scope `.const` and `.global` variables
become hidden array arguments appended after the kernel's own (see `Program.ptx_hidden`); the per-thread `.local`
frame is the machine's local memory (`Program.ptx_local_bytes` per thread, space "local"); `.shared`
variables (static, and `.extern` dynamic sized by `dynamic_smem`) become the Program's shared layout.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from jaxsimt import types as T
from jaxsimt.units.barriers import PTX_BARRIERS
from jaxsimt.units.barriers import attrs as barrier_attrs
from jaxsimt.units.rocache import L2_ONLY
from jaxsimt.program import (BARRIER, BRANCH, EXIT, FALL, JUMP, Block, Imm, Instr, Param, Program, Reg, SharedDecl,
                             SourceLoc, Terminator, estimate_registers, finalize)
from jaxsimt.ptx import ast, contract, provenance, schedule, vectorize
from jaxsimt.ptx import sources
from jaxsimt.ptx.errors import PtxUnsupportedError
from jaxsimt.ptx.opcodes import check_supported
from jaxsimt.ptx.operands import validate
from jaxsimt.ptx.parser import parse

_SREG = {"tid", "ntid", "ctaid", "nctaid"}
_ROUND = {"rn", "rz", "rm", "rp"}
_IROUND = {"rni", "rzi", "rmi", "rpi"}
_CMPS = set("eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan".split())
_TENSOR = {"wmma.load", "wmma.store", "wmma.mma", "mma", "ldmatrix"}
# load cache operators that cache in L2 only (PTX ISA: .cg "cache global", .cv "don't cache, fetch again")
_L2_ONLY_OPS = frozenset({"cg", "cv", "L1::no_allocate"})
# memory-ordering qualifiers: ptxas issues each such load as written (never merged into a vector load)
_ORDERED = frozenset({"volatile", "relaxed", "acquire", "mmio"})
_SHAPE = re.compile(r"^m\d+n\d+k\d+$")


def _toolkit_header(path: str) -> bool:
    """Whether a `.file` path is one of the CUDA toolkit's own headers (where intrinsics are defined)."""
    p = path.replace("\\", "/")
    return "/include/" in p and ("/cuda" in p or "/targets/" in p) and p.endswith((".h", ".hpp", ".cuh"))


@dataclass(frozen=True)
class Hidden:
    """A hidden array argument: a module variable (`kind` const/global, `data` its initial bytes)."""

    index: int
    name: str
    kind: str
    data: bytes = b""
    frame: int = 0


def _dtype(name: str) -> T.DType:
    if name not in T.BY_NAME:
        raise KeyError(name)
    return T.BY_NAME[name]


def _wrap(v: int, dt: T.DType) -> int:
    if dt == T.pred:
        return bool(v)
    bits = dt.bits
    v &= (1 << bits) - 1
    if dt.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


class _Ctx:
    """One inlined instance of a function body."""

    def __init__(self, fn: ast.Function, inst: int, bind: dict, ret_key, chain: tuple):
        self.fn, self.inst, self.bind, self.ret_key, self.chain = fn, inst, bind, ret_key, chain
        self.reg_types = {}
        for d in fn.reg_decls:
            for n in d.names:
                self.reg_types[n] = d.dtype
        self.vars = {v.name: v for v in fn.var_decls}
        self.constants = _constant_registers(fn)


# opcodes whose first operand is read, not written (a barrier id, a member mask, a sleep time, an index)
_NO_DESTINATION = frozenset({"bar", "barrier", "bar.warp.sync", "nanosleep", "brx", "pmevent"})


def _constant_registers(fn: ast.Function) -> dict:
    """{register name: value} of the function's registers whose only definition is a `mov` of an integer
    immediate (nvcc's PTX defines most registers once: a shuffle's member mask is `mov.b32 %r7, -1`)."""
    defs, value = {}, {}
    for st in fn.body:
        if isinstance(st, ast.Label) or not st.operands or st.opcode in _NO_DESTINATION:
            continue
        d = st.operands[0]
        for r in (d.first, d.second) if isinstance(d, ast.RegPair) else (d,):
            if isinstance(r, ast.Reg):
                defs[r.name] = defs.get(r.name, 0) + 1
                src = st.operands[1] if len(st.operands) > 1 else None
                if st.opcode == "mov" and st.pred is None and isinstance(src, ast.Imm) and not src.is_float:
                    value[r.name] = int(src.value)
    return {n: v for n, v in value.items() if defs.get(n) == 1}


class _Lowerer:
    def __init__(self, module: ast.Module, entry: ast.Function, args, dynamic_smem: int, contract: bool = True,
                 pointers: Optional[dict] = None, vectorize_loads: bool = True, schedule_loads: bool = True):
        self.mod, self.entry, self.args = module, entry, args
        self.dynamic_smem = int(dynamic_smem)
        self.contract = contract
        self.vectorize_loads = vectorize_loads  # merge shared loads as ptxas does (jaxsimt/ptx/vectorize.py)
        self.schedule_loads = schedule_loads  # move global loads up as ptxas does (jaxsimt/ptx/schedule.py)
        self.contractible: set = set()  # ids of the plain (no rounding modifier) f32/f64 mul/add/sub emitted
        self.pointers = dict(pointers or {})  # parameter -> (parameter whose buffer it points into, byte offset)
        self.regs: list[Reg] = []
        self.regmap: dict = {}
        self.blocks: list = []  # [key, instrs, term-spec]
        self.alias: dict = {}
        self.n_anon = 0
        self.n_inst = 0
        self.src_cache: dict = {}
        self.source_dirs: tuple = ()
        self.params: list[Param] = []
        self.hidden: list[Hidden] = []
        self.hidden_of: dict = {}
        self.shared: list[SharedDecl] = []
        self.shared_of: dict = {}
        self.shared_bytes = 0
        self.local_off: dict = {}
        self.local_frame = 0
        self.local_align = 1

    # ---------------------------------------------------------------- errors and source lines
    def fail(self, ins, reason):
        raise PtxUnsupportedError(ins.line, ins.name, reason, self.mod.filename, ins.text)

    def loc(self, ins: ast.Instruction) -> SourceLoc:
        if ins.loc is not None:
            path = self.mod.file_table.get(ins.loc[0], self.mod.filename)
            line = ins.loc[1]
            if ins.inlined_at is not None and _toolkit_header(path):
                # an intrinsic inlined from the CUDA headers (__syncwarp, __shfl_sync): its call site
                path = self.mod.file_table.get(ins.inlined_at[0], self.mod.filename)
                line = ins.inlined_at[1]
            text = self.source_line(path, line) or ins.text
            return SourceLoc(path, line, text)
        return SourceLoc(self.mod.filename, ins.line, ins.text)

    def source_line(self, path: str, line: int) -> str:
        if path not in self.src_cache:  # only from the folders the user allows (jaxsimt.ptx.sources)
            self.src_cache[path] = sources.read_lines(path, sources.allowed_dirs(self.mod.filename, self.source_dirs))
        lines = self.src_cache[path]
        if lines and 1 <= line <= len(lines):
            return lines[line - 1].strip()
        return ""

    # ---------------------------------------------------------------- registers
    def new_reg(self, dt: T.DType, name: str) -> Reg:
        r = Reg(len(self.regs), dt, name.lstrip("%").replace("$", "_"))
        self.regs.append(r)
        return r

    def reg(self, ctx: _Ctx, name: str) -> Reg:
        key = (ctx.fn.name, name)
        if key not in self.regmap:
            tname = ctx.reg_types.get(name)
            if tname is None or tname not in T.BY_NAME:
                raise PtxUnsupportedError(ctx.fn.line, name, f"register type .{tname} not supported",
                                          self.mod.filename)
            self.regmap[key] = self.new_reg(_dtype(tname), f"{ctx.fn.name}.{name}" if ctx.inst else name)
        return self.regmap[key]

    def temp(self, dt: T.DType) -> Reg:
        return self.new_reg(dt, f"tmp{len(self.regs)}")

    # ---------------------------------------------------------------- blocks
    def open_block(self, key):
        self.blocks.append([key, [], None])

    def anon(self):
        self.n_anon += 1
        return ("$anon", self.n_anon)

    def label(self, key):
        cur = self.blocks[-1]
        if cur[2] is None and not cur[1]:
            self.alias[key] = cur[0]  # an empty fall-through block: same block
            return
        if cur[2] is None:
            cur[2] = (FALL, key, None, False, None)
        self.open_block(key)

    def terminate(self, kind, target=None, pred=None, negate=False, instr=None):
        cur = self.blocks[-1]
        if kind == BRANCH:
            nxt = self.anon()
            cur[2] = (BRANCH, target, pred, negate, instr, nxt)
            self.open_block(nxt)
            return
        cur[2] = (kind, target, pred, negate, instr)
        self.open_block(self.anon())

    def emit(self, op, dst=(), src=(), loc=None, **attrs):
        ins = Instr(op, tuple(dst), tuple(src), tuple(sorted(attrs.items())), loc)
        self.blocks[-1][1].append(ins)
        return ins

    # ---------------------------------------------------------------- variables
    def _referenced_names(self) -> set:
        """Names of variables the kernel's reachable functions name in their operands."""
        names = set()
        for fn in self._reachable():
            for ins in fn.instructions:
                for op in ins.operands:
                    for x in (op.elems if isinstance(op, ast.Vec) else (op,)):
                        if isinstance(x, ast.Sym):
                            names.add(x.name)
                        elif isinstance(x, ast.Addr) and isinstance(x.base, ast.Sym):
                            names.add(x.base.name)
        return names

    def layout_shared(self):
        # module-scope shared variables the kernel never names take no room in its block, as in ptxas's layout
        # (its `smem` report), which places the others where an aligned vector load can reach them
        used = self._referenced_names()
        decls = [v for v in self.mod.globals if v.space == "shared" and (v.is_dynamic or v.name in used)]
        for fn in self._reachable():
            decls += [v for v in fn.var_decls if v.space == "shared"]
        off = 0
        dyn = []
        for v in decls:
            if v.is_dynamic:
                dyn.append(v)
                continue
            off = self._add_shared(v, off, v.elements)
        for v in dyn:
            align = v.align or T.BY_NAME.get(v.dtype, T.u8).size
            start = -(-off // align) * align
            n = self.dynamic_smem // max(1, self._esize(v))
            self.shared_of[v.name] = len(self.shared)
            self.shared.append(SharedDecl(v.name, self._edtype(v), (max(n, 1),), start))
            off = max(off, start + self.dynamic_smem)
        self.shared_bytes = off

    def _esize(self, v):
        return self._edtype(v).size

    def _edtype(self, v) -> T.DType:
        return T.BY_NAME.get(v.dtype, T.u8) if v.dtype in T.BY_NAME and v.dtype != "pred" else T.u8

    def _add_shared(self, v, off, n):
        dt = self._edtype(v)
        align = v.align or dt.size
        start = -(-off // align) * align
        self.shared_of[v.name] = len(self.shared)
        self.shared.append(SharedDecl(v.name, dt, (n,), start))
        return start + n * dt.size

    def layout_local(self):
        off, align = 0, 1
        for fn in self._reachable():
            for v in fn.var_decls:
                if v.space == "local":
                    a = v.align or self._esize(v)
                    off = -(-off // a) * a
                    self.local_off[(fn.name, v.name)] = off
                    off += (v.elements or 0) * self._esize(v)
                    align = max(align, a)
        self.local_frame = -(-off // max(align, 16)) * max(align, 16) if off else 0

    def _reachable(self):
        seen, out, todo = set(), [], [self.entry]
        while todo:
            fn = todo.pop()
            if fn.name in seen:
                continue
            seen.add(fn.name)
            out.append(fn)
            for ins in fn.instructions:
                if ins.opcode == "call" and isinstance(ins.operands[1], ast.Sym):
                    try:
                        todo.append(self.mod.function(ins.operands[1].name))
                    except KeyError:
                        pass
        return out

    def add_hidden(self, name, kind, data=b"", frame=0):
        idx = len(self.params)
        self.params.append(Param(name, T.u8, True, None, idx, space="const" if kind == "const" else "global"))
        h = Hidden(idx, name, kind, data, frame)
        self.hidden.append(h)
        self.hidden_of[name] = h
        return h

    def module_vars(self):
        for v in self.mod.globals:
            if v.space in ("const", "global"):
                if v.elements is None:
                    continue
                self.add_hidden(v.name, v.space, self._init_bytes(v))

    def _init_bytes(self, v) -> bytes:
        dt = self._edtype(v)
        n = v.elements
        out = bytearray(n * dt.size)
        for k, val in enumerate(v.init or ()):
            if not isinstance(val, ast.Imm):
                raise PtxUnsupportedError(v.line, v.name, "address initializers are not supported", self.mod.filename)
            if dt.is_float:
                b = np.asarray(val.value, dt.np_dtype).tobytes()
            else:
                b = int(val.value & ((1 << dt.bits) - 1)).to_bytes(dt.size, "little")
            out[k * dt.size:(k + 1) * dt.size] = b
        return bytes(out)

    # ---------------------------------------------------------------- whole kernel
    def run(self) -> Program:
        entry = self.entry
        args = self.args
        if args is not None and len(args) != len(entry.params):
            raise TypeError(f"kernel {entry.name} takes {len(entry.params)} arguments, got {len(args)}")
        for i, p in enumerate(entry.params):
            if p.dims or p.dtype not in T.BY_NAME:
                raise PtxUnsupportedError(entry.line, p.name, "kernel parameters passed by value as byte arrays "
                                          "(structs) are not supported", self.mod.filename)
            a = args[i] if args is not None else None
            is_arr = isinstance(a, np.ndarray) and a.ndim > 0 if a is not None else p.dtype in ("u64", "b64")
            if is_arr:
                dt = T.as_dtype(a.dtype) if a is not None else T.u8
                self.params.append(Param(p.name, dt, True, None, i))
            else:
                self.params.append(Param(p.name, _dtype(p.dtype), False, None, i))
        self.module_vars()
        self.layout_shared()
        self.layout_local()
        self.open_block(("$entry", 0))
        ctx = _Ctx(entry, 0, {}, None, (entry.name,))
        self.body(ctx)
        if self.blocks[-1][2] is None:
            self.blocks[-1][2] = (EXIT, None, None, False, None)
        return self.build()

    def contract_mul_add(self):
        """Fuse the plain mul + add/sub pairs that ptxas fuses into fma (the rule: jaxsimt/ptx/contract.py)."""
        contract.contract_mul_add(self.blocks, self.alias, self.contractible, self.temp)

    def build(self) -> Program:
        if self.contract:
            self.contract_mul_add()
        if self.vectorize_loads:
            vectorize.vectorize_shared_loads(self.blocks)  # as ptxas does (jaxsimt/ptx/vectorize.py)
        ptx_order = [[k, list(body), t] for k, body, t in self.blocks] if self.schedule_loads else None
        if self.schedule_loads:
            schedule.schedule_loads(self.blocks)  # as ptxas does (jaxsimt/ptx/schedule.py)
        prog = provenance.annotate(self.program(self.blocks))
        # launches without `regs=` estimate registers from the PTX's order: the scheduling changes the order the
        # timing model issues, not the estimate's live ranges (nor the counters of such launches)
        prog.ptx_register_estimate = estimate_registers(self.program(ptx_order)) if ptx_order else None
        prog.ptx_hidden = list(self.hidden)
        prog.ptx_user_params = len(self.entry.params)
        prog.ptx_local_bytes = self.local_frame
        return prog

    def program(self, spec: list) -> Program:
        """The finalized `Program` of lowered blocks ([key, instrs, term-spec])."""
        index = {}
        for i, b in enumerate(spec):
            index[b[0]] = i

        def res(key):
            while key in self.alias:
                key = self.alias[key]
            return index[key]

        blocks = []
        for i, (key, instrs, t) in enumerate(spec):
            kind = t[0]
            if kind == BRANCH:
                term = Terminator(BRANCH, target=res(t[1]), fallthrough=res(t[5]), pred=t[2], negate=t[3], instr=t[4])
            elif kind in (FALL, JUMP):
                term = Terminator(kind, target=res(t[1]), instr=t[4])
            elif kind == BARRIER:
                term = Terminator(BARRIER, target=i + 1, instr=t[4])
            else:
                term = Terminator(EXIT, instr=t[4])
            blocks.append(Block(i, instrs, term))
        return finalize(Program(self.entry.name, self.params, self.regs, blocks, self.shared, self.shared_bytes,
                                self.mod.filename))

    def body(self, ctx: _Ctx):
        for st in ctx.fn.body:
            if isinstance(st, ast.Label):
                self.label((ctx.inst, st.name))
            else:
                self.instruction(st, ctx)

    # ---------------------------------------------------------------- operands
    def src(self, op, ctx, dt: Optional[T.DType], ins=None, loc=None):
        if isinstance(op, ast.Reg):
            return self.reg(ctx, op.name)
        if isinstance(op, ast.Imm):
            return self.imm(op, dt)
        if isinstance(op, ast.SpecialReg):
            r = self.temp(T.u32)
            self.special(r, op, ins, loc)
            return r
        if isinstance(op, ast.Sym):
            r = self.temp(T.u64 if dt is None or dt.bits == 64 else dt)
            self.sym_address(r, op.name, ctx, ins, loc)
            return r
        self.fail(ins, f"operand {op!r} not supported here")

    def imm(self, op: ast.Imm, dt: Optional[T.DType]):
        dt = dt or (T.f64 if op.is_float else T.s64)
        if op.is_float:
            if dt.is_float:
                return Imm(float(op.value), dt)
            return Imm(_wrap(op.bits, dt), dt)
        if dt.is_float:
            # an integer literal in a float instruction is the bit pattern (PTX hex float forms aside)
            return Imm(float(op.value), dt)
        return Imm(_wrap(int(op.value), dt), dt)

    def dst(self, op, ctx, ins):
        if isinstance(op, ast.Reg):
            return self.reg(ctx, op.name)
        if isinstance(op, ast.Sink):
            return self.temp(T.b32)
        self.fail(ins, f"destination {op!r} not supported")

    # ---------------------------------------------------------------- instructions
    def instruction(self, ins: ast.Instruction, ctx: _Ctx):
        loc = self.loc(ins)
        op = ins.opcode
        if op == "bra":
            self.branch(ins, ctx, loc)
            return
        if op in ("ret", "exit"):
            self.ret(ins, ctx, loc)
            return
        if op in ("bar", "barrier"):
            self.barrier(ins, ctx, loc)
            return
        if op == "call":
            self.call(ins, ctx, loc)
            return
        if op in ("stmatrix", "movmatrix"):
            self.fail(ins, f"{op} is not supported by the PTX lowering")
        start = len(self.blocks[-1][1])
        blk = self.blocks[-1]
        self.lower_op(ins, ctx, loc)
        if "ftz" in ins.modifiers:  # f32 operands and results flushed to zero where subnormal (core.Exec.run)
            blk[1][start:] = [i.with_attrs(ftz=True) for i in blk[1][start:]]
        if "nounroll" in ins.pragmas and blk is self.blocks[-1]:
            # the loop whose header this opens is not unrolled by ptxas (`timing.unroll`)
            blk[1][start:] = [i.with_attrs(nounroll=True) for i in blk[1][start:]]
        if ins.pred is not None:
            if self.blocks[-1] is not blk:
                self.fail(ins, "predicated instruction that ends a block")
            new = blk[1][start:]
            del blk[1][start:]
            p = self.reg(ctx, ins.pred.reg)
            for inner in new:
                # the inner instruction's operands (and, as a partial write keeps the old values, its
                # destinations) are the guard's sources too, after the predicate, so that liveness sees them
                blk[1].append(Instr("ptx.guard", inner.dst, (p,) + tuple(inner.src) + tuple(inner.dst),
                                    (("inner", inner), ("negate", ins.pred.negated)), inner.loc))

    def branch(self, ins, ctx, loc):
        tgt = ins.operands[0]
        if not isinstance(tgt, ast.Sym):
            self.fail(ins, "indirect branches are not supported")
        key = (ctx.inst, tgt.name)
        bi = Instr("bra", (), (), (("uni", "uni" in ins.modifiers),), loc)
        if ins.pred is None:
            self.terminate(JUMP, key, instr=bi)
        else:
            p = self.reg(ctx, ins.pred.reg)
            bi = Instr("bra", (), (p,), (("negate", ins.pred.negated),), loc)
            self.terminate(BRANCH, key, p, ins.pred.negated, bi)

    def ret(self, ins, ctx, loc):
        if ins.opcode == "exit" or ctx.ret_key is None:
            ei = Instr("exit", (), (), (), loc)
            if ins.pred is None:
                self.terminate(EXIT, instr=ei)
            else:
                key = self.anon()
                p = self.reg(ctx, ins.pred.reg)
                self.terminate(BRANCH, key, p, ins.pred.negated, Instr("bra", (), (p,), (), loc))
                cont = self.blocks[-1][0]
                self.blocks[-1] = [key, [], (EXIT, None, None, False, ei)]
                self.open_block(cont)
            return
        ri = Instr("ret", (), (), (), loc)
        if ins.pred is None:
            self.terminate(JUMP, ctx.ret_key, instr=ri)
        else:
            p = self.reg(ctx, ins.pred.reg)
            self.terminate(BRANCH, ctx.ret_key, p, ins.pred.negated, ri)

    def barrier(self, ins, ctx, loc):
        """`bar.sync a{, b}` / `barrier.sync{.aligned} a{, b}` (wait) and `bar.arrive a, b` (count, go on):
        block barrier `a`, waiting for `b` threads (without `b`: every thread of the block). Immediate operands,
        or registers nvcc defines once with a `mov` (inline asm's "r" operands)."""
        mods = set(ins.modifiers) - {"aligned", "cta"}
        ops = ins.operands
        if "red" in mods:
            self.fail(ins, "bar.red (__syncthreads_count/_and/_or) is not supported")
        if mods not in ({"sync"}, {"arrive"}) or ins.pred is not None or not 1 <= len(ops) <= 2:
            self.fail(ins, "only bar.sync a{, b}, barrier.sync a{, b} and bar.arrive a, b, not predicated, are "
                           "supported")
        vals = []
        for o in ops:
            if isinstance(o, ast.Reg) and o.name in ctx.constants:
                vals.append(ctx.constants[o.name])
            elif isinstance(o, ast.Imm) and not o.is_float:
                vals.append(int(o.value))
            else:
                self.fail(ins, "a barrier id or thread count that is not a constant is not supported")
        bar_id, threads = vals[0], (vals[1] if len(vals) > 1 else 0)
        if not 0 <= bar_id < PTX_BARRIERS:
            self.fail(ins, f"barrier id {bar_id} out of range (0..{PTX_BARRIERS - 1})")
        if len(vals) > 1 and threads <= 0:
            self.fail(ins, f"barrier thread count {threads} must be positive")
        if mods == {"arrive"} and len(vals) < 2:
            self.fail(ins, "bar.arrive needs a thread count")
        self.terminate(BARRIER, instr=Instr("bar", (), (), barrier_attrs(bar_id, threads, mods == {"arrive"}), loc))

    def call(self, ins, ctx, loc):
        rets, target, argl = ins.operands[:3]
        if len(ins.operands) > 3 or not isinstance(target, ast.Sym):
            self.fail(ins, "indirect calls are not supported")
        if ins.pred is not None:
            self.fail(ins, "predicated calls are not supported")
        name = target.name
        if name in ctx.chain:
            self.fail(ins, f"recursive call of {name} (call chain {' -> '.join(ctx.chain + (name,))}): the "
                           f"lowering inlines functions and cannot inline recursion")
        try:
            fn = self.mod.function(name)
        except KeyError:
            self.fail(ins, f"call of an undefined function {name}")
        if not fn.has_body:
            self.fail(ins, f"call of the external function {name} (no body in this module)")
        bind = {}
        for p, a in zip(fn.params, argl.items):
            bind[p.name] = self.param_var(a, ctx, ins)
        for p, a in zip(fn.return_params, rets.items):
            bind[p.name] = self.param_var(a, ctx, ins)
        self.n_inst += 1
        cont = ("$ret", self.n_inst)
        callee = _Ctx(fn, self.n_inst, bind, cont, ctx.chain + (name,))
        self.body(callee)
        if self.blocks[-1][2] is None:
            self.blocks[-1][2] = (FALL, cont, None, False, None)
        self.open_block(cont)

    def param_var(self, a, ctx, ins) -> Reg:
        """The register standing for a `.param` variable (call arguments and return values)."""
        name = a.name if isinstance(a, (ast.Sym, ast.Reg)) else None
        if name in ctx.bind:
            return ctx.bind[name]
        key = (ctx.fn.name, "param:" + str(name))
        if key not in self.regmap:
            v = ctx.vars.get(name)
            if v is None or v.space != "param":
                self.fail(ins, f"{name} is not a .param variable")
            dt = self._edtype(v)
            n = v.elements or 1
            nbytes = n * dt.size
            if nbytes not in (1, 2, 4, 8):
                self.fail(ins, f".param {name} of {nbytes} bytes (aggregates passed by value) is not supported")
            self.regmap[key] = self.new_reg(T.BY_NAME[f"b{nbytes * 8}"], name)
        return self.regmap[key]

    def sym_address(self, r: Reg, name: str, ctx: _Ctx, ins, loc, offset: int = 0):
        if name in self.shared_of:
            d = self.shared[self.shared_of[name]]
            self.emit("mov", [r], [Imm(d.offset + offset, r.dtype)], loc, type=r.dtype.name, addr_of="shared",
                      symbol=self.shared_of[name])
        elif name in self.hidden_of:
            h = self.hidden_of[name]
            if offset:
                self.fail(ins, "address of a variable plus an offset")
            self.emit("param", [r], [], loc, index=h.index)
        elif (ctx.fn.name, name) in self.local_off:
            # a local variable's address is its byte offset in the thread's local window
            self.emit("mov", [r], [Imm(self.local_off[(ctx.fn.name, name)] + offset, r.dtype)], loc,
                      type=r.dtype.name, addr_of="local")
        elif name == "WARP_SZ":
            # PTX's predefined constant (the samples' `warpSize` compiles to it), not a module variable
            self.emit("sreg", [r], [], loc, name="warp_size")
        else:
            self.fail(ins, f"address of {name} (not a shared, const, global or local variable)")

    def special(self, r: Reg, op: ast.SpecialReg, ins, loc):
        name = op.name.lstrip("%")
        if name in _SREG:
            self.emit("sreg", [r], [], loc, name=f"{name}.{op.component or 'x'}")
        elif name in ("laneid", "warpid"):
            self.emit("sreg", [r], [], loc, name=name)
        elif name.startswith("lanemask_") or name in ("nwarpid", "smid", "nsmid", "gridid", "clock", "clock64",
                                                     "clock_hi", "globaltimer", "globaltimer_lo", "globaltimer_hi"):
            self.emit("sreg", [r], [], loc, name=name)
        elif name in ("dynamic_smem_size", "total_smem_size", "aggr_smem_size"):
            v = self.dynamic_smem if name == "dynamic_smem_size" else self.shared_bytes
            self.emit("sreg", [r], [], loc, name=name, value=v)
        else:
            self.fail(ins, f"special register %{name} not supported")

    # ---------------------------------------------------------------- one instruction
    def lower_op(self, ins: ast.Instruction, ctx: _Ctx, loc):  # noqa: C901 - one table of cases
        op, mods, types = ins.opcode, set(ins.modifiers), ins.types
        ops = ins.operands
        t = _dtype(types[-1]) if types and types[-1] in T.BY_NAME else None
        ttxt = types[-1] if types else None

        def S(k, dt=None):
            return self.src(ops[k], ctx, dt if dt is not None else t, ins, loc)

        def D(k):
            return self.dst(ops[k], ctx, ins)

        if op == "bar.warp.sync":  # a wait point of Independent Thread Scheduling (jaxsimt.machine.its)
            mm = ops[0] if ops else None
            if isinstance(mm, ast.Reg) and mm.name in ctx.constants:
                mm = ctx.constants[mm.name] & 0xFFFFFFFF
            elif isinstance(mm, ast.Imm):
                mm = (mm.bits if mm.is_float else int(mm.value)) & 0xFFFFFFFF
            else:
                mm = None
            self.emit("warpsync", (), (), loc, membermask=mm)
            return
        if op in ("membar", "fence", "cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all"):
            self.emit("ptx.fence", (), (), loc)  # a no-op that orders memory (jaxsimt.units.isa: `fence`)
            return
        if op in ("nanosleep", "griddepcontrol", "prefetch", "prefetchu"):
            self.emit("ptx.nop", (), (), loc)
            return
        if op == "mov":
            self.mov(ins, ctx, loc, t)
            return
        if op == "cvta":
            # shared and local addresses move into / out of their window of the generic space
            # (jaxsimt.units.generic); global, const and param addresses are the same in both
            a = ops[1]
            space = ins.space if ins.space in ("shared", "local") else None
            if isinstance(a, ast.Sym):
                if space is None:
                    self.sym_address(D(0), a.name, ctx, ins, loc)
                    return
                src = self.temp(_dtype(ttxt))
                self.sym_address(src, a.name, ctx, ins, loc)
            else:
                src = S(1)
            if space is None:
                self.emit("mov", [D(0)], [src], loc, type=ttxt)
            else:
                self.emit("cvta", [D(0)], [src], loc, space=space, to="to" in mods)
            return
        if op == "isspacep":
            self.emit("isspacep", [D(0)], [S(1, T.u64)], loc, space=ins.space)
            return
        if op in ("ld", "ldu", "st"):
            self.memory(ins, ctx, loc)
            return
        if op in ("atom", "red"):
            self.atomic(ins, ctx, loc)
            return
        if op == "cp.async":
            self.cp_async(ins, ctx, loc)
            return
        if ttxt in ("f16x2", "bf16x2"):
            if op not in ("add", "sub", "mul", "fma", "min", "max", "neg", "abs"):
                self.fail(ins, f"{op}.{ttxt} not supported")
            rnd = next((m for m in ins.modifiers if m in _ROUND), None)
            self.emit("ptx.x2", [D(0)], [S(k, T.b32) for k in range(1, len(ops))], loc, fn=op, half=ttxt[:-2],
                      rnd=rnd, relu="relu" in mods, sat="sat" in mods, nan="NaN" in mods)
            return
        if op in ("add", "sub", "mul", "mad", "fma", "div"):
            self.arith(ins, ctx, loc, t, S, D)
            return
        # the special function unit's f32 forms say whether they flush denormals (ptxas wraps the others)
        unit = {"ftz": "ftz" in ins.modifiers} if t == T.f32 else {}
        if op in ("rcp", "sqrt"):
            rnd = next((m for m in ins.modifiers if m in _ROUND), None)
            if t == T.f32 and rnd not in (None, "rn"):
                self.emit("ptx.farith", [D(0)], [S(1)], loc, type="f32", fn=op, rnd=rnd)
            elif t == T.f32 and "approx" in ins.modifiers:
                self.emit(op, [D(0)], [S(1)], loc, type=ttxt, approx=True, **unit)
            else:
                self.emit(op, [D(0)], [S(1)], loc, type=ttxt)
            return
        if op in ("rsqrt", "lg2"):
            self.emit(op, [D(0)], [S(1)], loc, type=ttxt, **unit)
            return
        if op in ("sin", "cos"):
            self.emit(op, [D(0)], [S(1)], loc, type=ttxt)
            return
        if op in ("ex2", "tanh"):
            if op == "ex2" and t in (T.f32, T.f64):
                self.emit("ex2", [D(0)], [S(1)], loc, type=ttxt, **unit)
            else:
                self.emit("ptx.funary", [D(0)], [S(1)], loc, type=ttxt, fn=op)
            return
        if op in ("min", "max"):
            if {"xorsign", "abs"} & mods:
                self.fail(ins, f"{op}.xorsign/.abs not supported")
            if "NaN" in mods or "relu" in mods:
                self.emit("ptx.minmax", [D(0)], [S(1), S(2)], loc, type=ttxt, fn=op, nan="NaN" in mods,
                          relu="relu" in mods)
            else:
                self.emit(op, [D(0)], [S(1), S(2)], loc, type=ttxt)
            return
        if op in ("neg", "abs", "not", "rem", "and", "or", "xor", "shl", "shr"):
            self.emit(op, [D(0)], [S(k, T.u32 if op in ("shl", "shr") and k == 2 else None)
                                   for k in range(1, len(ops))], loc, type=ttxt)
            return
        if op in ("setp", "set"):
            self.setp(ins, ctx, loc)
            return
        if op == "selp":
            self.emit("selp", [D(0)], [S(1), S(2), S(3, T.pred)], loc, type=ttxt)
            return
        if op == "slct":
            self.fail(ins, "slct not supported")
        if op == "cvt":
            self.cvt(ins, ctx, loc, S, D)
            return
        if op in ("popc", "clz", "brev", "cnot"):
            self.emit("ptx." + op, [D(0)], [S(1)], loc, type=ttxt)
            return
        if op in ("bfe", "bfi"):
            n = 3 if op == "bfe" else 4
            srcs = [S(1)] + ([S(2)] if op == "bfi" else []) + [S(k, T.u32) for k in range(n - 1, n + 1)]
            self.emit("ptx." + op, [D(0)], srcs, loc, type=ttxt)
            return
        if op == "bfind":
            self.emit("ptx.bfind", [D(0)], [S(1)], loc, type=ttxt, shiftamt="shiftamt" in mods)
            return
        if op == "prmt":
            if mods - {"b32"}:
                self.fail(ins, "prmt modes other than the default are not supported")
            self.emit("ptx.prmt", [D(0)], [S(1), S(2), S(3)], loc, type="b32")
            return
        if op == "lop3":
            lut = ops[4]
            if not isinstance(lut, ast.Imm):
                self.fail(ins, "lop3 with a non-immediate truth table")
            self.emit("ptx.lop3", [D(0)], [S(1), S(2), S(3)], loc, type="b32", lut=int(lut.value) & 0xFF)
            return
        if op == "shf":
            self.emit("ptx.shf", [D(0)], [S(1, T.u32), S(2, T.u32), S(3, T.u32)], loc,
                      dir="l" if "l" in mods else "r", mode="wrap" if "wrap" in mods else "clamp")
            return
        if op in ("mul24", "mad24"):
            if "sat" in mods:
                self.fail(ins, "mad24.sat not supported")
            self.emit("ptx.mul24", [D(0)], [S(k) for k in range(1, len(ops))], loc, type=ttxt, hi="hi" in mods)
            return
        if op == "sad":
            self.emit("ptx.sad", [D(0)], [S(1), S(2), S(3)], loc, type=ttxt)
            return
        if op in ("dp4a", "dp2a"):
            self.emit("ptx.dp4a", [D(0)], [S(1, T.u32), S(2, T.u32), S(3, T.u32)], loc, atype=types[0],
                      btype=types[1], n=4 if op == "dp4a" else 2, hi="hi" in mods)
            return
        if op == "copysign":
            self.emit("ptx.copysign", [D(0)], [S(1), S(2)], loc, type=ttxt)
            return
        if op == "testp":
            test = next((m for m in ins.modifiers if m not in T.BY_NAME), None)
            if test is None:
                self.fail(ins, "testp needs a test (.finite, .number, ...)")
            self.emit("ptx.testp", [D(0)], [S(1)], loc, type=ttxt, test=test)
            return
        if op == "activemask":
            self.emit("ptx.activemask", [D(0)], [], loc)
            return
        if op == "vote":
            self.vote(ins, ctx, loc)
            return
        if op in ("redux", "match"):
            self.warp_collective(ins, ctx, loc)
            return
        if op == "shfl":
            self.shfl(ins, ctx, loc)
            return
        if op in _TENSOR:
            self.tensor(ins, ctx, loc)
            return
        self.fail(ins, "instruction not supported by the PTX lowering")

    # ---------------------------------------------------------------- families
    def mov(self, ins, ctx, loc, t):
        d, s = ins.operands[0], ins.operands[1]
        ttxt = ins.types[-1]
        if isinstance(d, ast.Vec):
            src = self.src(s, ctx, t, ins, loc)
            slots = [k for k, e in enumerate(d.elems) if not isinstance(e, ast.Sink)]
            dsts = [self.dst(d.elems[k], ctx, ins) for k in slots]
            self.emit("ptx.unpack", dsts, [src], loc, type=ttxt, n=len(d.elems), slots=tuple(slots))
            return
        if isinstance(s, ast.Vec):
            bits = t.bits if t is not None else 32 if ttxt in ("f16x2", "bf16x2") else 0
            part = T.BY_NAME.get(f"b{bits // len(s.elems)}")
            if part is None or bits % len(s.elems):
                self.fail(ins, f"{len(s.elems)} values do not pack into .{ttxt}")
            self.emit("ptx.pack", [self.dst(d, ctx, ins)], [self.src(e, ctx, part, ins, loc) for e in s.elems], loc,
                      type=ttxt)
            return
        r = self.dst(d, ctx, ins)
        if isinstance(s, ast.SpecialReg):
            self.special(r, s, ins, loc)
        elif isinstance(s, ast.Sym):
            self.sym_address(r, s.name, ctx, ins, loc)
        else:
            self.emit("mov", [r], [self.src(s, ctx, t, ins, loc)], loc, type=ttxt)

    def arith(self, ins, ctx, loc, t, S, D):
        op, mods = ins.opcode, set(ins.modifiers)
        ttxt = ins.types[-1]
        n = len(ins.operands)
        if "cc" in mods:
            self.fail(ins, "carry (.cc) arithmetic is not supported")
        if t.is_int:
            if "hi" in mods:
                self.emit("ptx.mul.hi", [D(0)], [S(k) for k in range(1, n)], loc, type=ttxt)
            elif "wide" in mods:
                wt = T.BY_NAME[("s" if t.is_signed else "u") + str(2 * t.bits)]
                srcs = [S(1), S(2)] + ([S(3, wt)] if n > 3 else [])
                self.emit("ptx.mul.wide", [D(0)], srcs, loc, type=ttxt)
            elif "sat" in mods:
                self.emit("ptx.sat", [D(0)], [S(k) for k in range(1, n)], loc, type=ttxt, fn=op)
            else:
                self.emit(op, [D(0)], [S(k) for k in range(1, n)], loc, type=ttxt)
            return
        rnd = next((m for m in ins.modifiers if m in _ROUND), None)
        if op == "mad":
            op = "fma"  # mad.f32 / mad.rn.f32 is fma on sm_20 and later
        if op == "div" and t == T.f32 and rnd is None:
            # div.approx / div.full: the dividend times the special function unit's reciprocal
            self.emit("div.approx", [D(0)], [S(1), S(2)], loc, type="f32", full="full" in mods, ftz="ftz" in mods)
            return
        special = (rnd not in (None, "rn") and t != T.f64) or "sat" in mods or "relu" in mods
        if special:
            self.emit("ptx.farith", [D(0)], [S(k) for k in range(1, n)], loc, type=ttxt, fn=op, rnd=rnd,
                      sat="sat" in mods, relu="relu" in mods)
        else:
            e = self.emit(op, [D(0)], [S(k) for k in range(1, n)], loc, type=ttxt)
            if rnd is None and op in ("mul", "add", "sub") and t in (T.f32, T.f64):
                self.contractible.add(id(e))  # ptxas may fuse these (no .rn): see contract_mul_add

    def setp(self, ins, ctx, loc):
        ops = ins.operands
        types = ins.types
        if not types or types[-1] not in T.BY_NAME:
            self.fail(ins, f"comparison of .{types[-1] if types else '?'} operands not supported")
        st = _dtype(types[-1])
        cmp = next((m for m in ins.modifiers if m in _CMPS), None)
        if cmp is None:
            self.fail(ins, "a comparison (.eq, .lt, ...) is needed")
        comb = next((m for m in ins.modifiers if m in ("and", "or", "xor")), None)
        d0 = ops[0]
        dsts = [self.dst(d0.first, ctx, ins), self.dst(d0.second, ctx, ins)] if isinstance(d0, ast.RegPair) \
            else [self.dst(d0, ctx, ins)]
        srcs = [self.src(ops[1], ctx, st, ins, loc), self.src(ops[2], ctx, st, ins, loc)]
        cneg = False
        if comb:
            c = ops[3]
            if isinstance(c, ast.NotPred):
                cneg, c = True, c.reg
            srcs.append(self.src(c, ctx, T.pred, ins, loc))
        setty = types[0] if ins.opcode == "set" else None
        # the simple form carries no more attributes than the DSL's comparison (one template for both)
        full = dict(combine=comb, cneg=cneg, set=setty) if comb or setty or len(dsts) > 1 else {}
        self.emit("setp", dsts, srcs, loc, type=st.name, cmp=cmp, **full)

    def cvt(self, ins, ctx, loc, S, D):
        dt, stt = ins.types[0], ins.types[1]
        if dt not in T.BY_NAME or stt not in T.BY_NAME:
            self.fail(ins, f"cvt between {dt} and {stt} not supported")
        mods = set(ins.modifiers)
        rnd = next((m for m in ins.modifiers if m in _ROUND | _IROUND), None)
        if {"rna", "rs", "satfinite"} & mods:
            self.fail(ins, "cvt .rna/.rs/.satfinite not supported")
        self.emit("cvt", [D(0)], [S(1, _dtype(stt))], loc, type=stt, to=dt, rnd=rnd, sat="sat" in mods,
                  relu="relu" in mods)

    def vote(self, ins, ctx, loc):
        ops = ins.operands
        mode = next((m for m in ins.modifiers if m in ("all", "any", "uni", "ballot")), None)
        if mode is None or len(ops) < 2:
            self.fail(ins, "vote needs a mode (.all, .any, .uni, .ballot), a destination and a predicate")
        p = ops[1]
        neg = False
        if isinstance(p, ast.NotPred):
            neg, p = True, p.reg
        mm = ops[2] if len(ops) > 2 else ast.Imm(-1, False, "-1")
        d = self.dst(ops[0], ctx, ins)
        self.emit("vote", [d], [self.src(p, ctx, T.pred, ins, loc), self.src(mm, ctx, T.u32, ins, loc)], loc,
                  mode=mode, negate=neg)

    def warp_collective(self, ins, ctx, loc):
        """redux.sync.{add,min,max,and,or,xor}.{u32,s32,b32} d, a, membermask and
        match.{any,all}.sync.{b32,b64} d[|p], a, membermask."""
        ops, mods = ins.operands, set(ins.modifiers)
        ttxt = ins.types[-1] if ins.types else None
        if ins.opcode == "redux":
            fn = next((m for m in ins.modifiers if m in ("add", "min", "max", "and", "or", "xor")), None)
            if fn is None or ttxt not in ("u32", "s32", "b32") or "abs" in mods or "NaN" in mods or len(ops) != 3:
                self.fail(ins, "redux.sync supported for .add/.min/.max/.and/.or/.xor on 32-bit integers")
            t = _dtype(ttxt)
            self.emit("ptx.redux", [self.dst(ops[0], ctx, ins)],
                      [self.src(ops[1], ctx, t, ins, loc), self.src(ops[2], ctx, T.u32, ins, loc)], loc,
                      type=ttxt, fn=fn)
            return
        mode = "all" if "all" in mods else "any" if "any" in mods else None
        if mode is None or ttxt not in ("b32", "b64") or len(ops) != 3:
            self.fail(ins, "match.sync needs .any or .all, .b32 or .b64, a destination, a value and a membermask")
        d0 = ops[0]
        if isinstance(d0, ast.RegPair):
            if mode == "any":
                self.fail(ins, "match.any.sync has no predicate destination")
            dsts = [self.dst(d0.first, ctx, ins), self.dst(d0.second, ctx, ins)]
        else:
            dsts = [self.dst(d0, ctx, ins)]
        self.emit("ptx.match", dsts, [self.src(ops[1], ctx, _dtype(ttxt), ins, loc),
                                      self.src(ops[2], ctx, T.u32, ins, loc)], loc, type=ttxt, mode=mode)

    def shfl(self, ins, ctx, loc):
        ops = ins.operands
        mode = next((m for m in ins.modifiers if m in ("up", "down", "bfly", "idx")), None)
        if mode is None or len(ops) < 4:
            self.fail(ins, "shfl needs a mode (.up, .down, .bfly, .idx), a destination and three sources")
        d0 = ops[0]
        dsts = [self.dst(d0.first, ctx, ins), self.dst(d0.second, ctx, ins)] if isinstance(d0, ast.RegPair) \
            else [self.dst(d0, ctx, ins)]
        srcs = [self.src(ops[k], ctx, T.b32, ins, loc) for k in (1, 2, 3)]
        mm = ops[4] if len(ops) > 4 else None  # shfl.sync's member mask (synccheck compares it with the lanes)
        if isinstance(mm, ast.Reg) and mm.name in ctx.constants:
            mm = ctx.constants[mm.name] & 0xFFFFFFFF
        elif isinstance(mm, ast.Imm) and not mm.is_float:
            mm = int(mm.value) & 0xFFFFFFFF
        else:
            mm = None
        self.emit("shfl", dsts, srcs, loc, mode=mode, membermask=mm)

    # ---------------------------------------------------------------- tensor cores
    def _regs(self, op, ctx, ins, what):
        if not isinstance(op, ast.Vec) or not all(isinstance(e, ast.Reg) for e in op.elems):
            self.fail(ins, f"{what} must be a vector of registers")
        return [self.reg(ctx, e.name) for e in op.elems]

    def _shape(self, ins):
        shape = next((m for m in ins.modifiers if _SHAPE.match(m)), None)
        if shape is None:
            self.fail(ins, "no shape modifier")
        return shape

    def tensor(self, ins, ctx, loc):
        """mma.sync / ldmatrix / wmma.{load,mma,store} onto `jaxsimt.tensor`'s machine ops."""
        from jaxsimt import tensor as TC  # registers tensor.mma / tensor.ldmatrix
        from jaxsimt.units.mma import layouts
        op, mods = ins.opcode, set(ins.modifiers)
        if op == "ldmatrix":
            num = next((int(m[1:]) for m in ins.modifiers if m in ("x1", "x2", "x4")), None)
            if num is None or "m8n8" not in mods or ins.types[-1] != "b16" or (ins.space or "generic") != "shared":
                self.fail(ins, "only ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 is supported")
            dst = self._regs(ins.operands[0], ctx, ins, "the destination")
            if len(dst) != num:
                self.fail(ins, f"ldmatrix .x{num} writes {num} registers")
            base, off = self._tensor_base(ins.operands[1], ctx, ins, loc, "shared")
            self.emit("tensor.ldmatrix", dst, [base], loc, num=num, trans="trans" in mods, packed=True,
                      space="shared", type="b16", offset=off)
            return
        shape = self._shape(ins)
        types = ins.types
        if op in ("mma", "wmma.mma"):
            if op == "mma" and shape not in layouts.MMA_SYNC_SHAPES or op == "wmma.mma" and \
                    shape not in layouts.WMMA_SHAPES:
                self.fail(ins, f"shape {shape} not supported")
            if op == "mma" and not {"row", "col"} <= mods:
                self.fail(ins, "mma.sync layouts other than .row.col are not supported")
            if len(types) == 4:
                acc, it, it2, ctype = types
            elif len(types) == 2 and op == "wmma.mma":
                (acc, ctype), it, it2 = types, "f16", "f16"
            else:
                self.fail(ins, "unexpected type list")
            if it != it2 or acc != ctype or it not in ("f16", "bf16", "tf32") or acc not in ("f16", "f32") \
                    or {"satfinite", "rm", "rp", "rz"} & mods:
                self.fail(ins, f"mma with inputs .{it}/.{it2}, accumulators .{acc}/.{ctype} not supported")
            if acc not in layouts.SUPPORTED.get((shape, it), ()):
                self.fail(ins, f"{shape} with .{it} inputs and .{acc} accumulators not supported")
            d = self._regs(ins.operands[0], ctx, ins, "D")
            a = self._regs(ins.operands[1], ctx, ins, "A")
            b = self._regs(ins.operands[2], ctx, ins, "B")
            c = self._regs(ins.operands[3], ctx, ins, "C")
            extra = dict(packed_ab=it != "tf32", packed_cd=acc == "f16", acc=acc)
            for name, regs, packed, operand in (("A", a, it != "tf32", "a"), ("B", b, it != "tf32", "b"),
                                                ("C", c, acc == "f16", "c"), ("D", d, acc == "f16", "d")):
                n = layouts.fragment_layout(shape, operand, it).shape[1]
                if len(regs) * (2 if packed else 1) < n:
                    self.fail(ins, f"{name} needs {n} elements, got {len(regs)} registers")
            if shape == "m16n16k16":  # two m16n8k16 instructions (the n-halves), as the H200 runs it
                for half in (0, 1):
                    TC._emit_mma_into(self.emit, d, a, b, c, shape, it, "hardware", loc, half=half, n_half=8,
                                      instr_shape="m16n8k16", **extra)
            else:
                TC._emit_mma_into(self.emit, d, a, b, c, shape, it, "hardware", loc, **extra)
            return
        self.wmma_ldst(ins, ctx, loc, shape)

    def _tensor_base(self, a, ctx, ins, loc, space):
        """(register holding the base byte address, constant offset) of a tensor instruction's address."""
        if not isinstance(a, ast.Addr):
            self.fail(ins, "memory operand form not supported")
        if a.base is None:
            r = self.temp(T.u64)
            self.emit("mov", [r], [Imm(a.offset, T.u64)], loc, type="u64")
            return r, 0
        if isinstance(a.base, ast.Reg):
            return self.reg(ctx, a.base.name), a.offset
        r = self.temp(T.u32 if space == "shared" else T.u64)
        self.sym_address(r, a.base.name, ctx, ins, loc)
        return r, a.offset

    def wmma_ldst(self, ins, ctx, loc, shape):
        """wmma.load.{a,b,c} / wmma.store.d: per-lane loads / stores of the fragment elements in jaxsimt's
        WMMA layout (element j of lane l = tile element l + 32 j, row-major; docs/mma.md). 16-bit
        elements are packed two per .b32 register; registers beyond the fragment's elements hold copies.
        Every emitted instruction carries attr `expansion` (the PTX instruction it implements): the timing
        model issues only the loads / stores of an expansion (`jaxsimt.timing.trace.folded_mask`)."""
        block, start = self.blocks[-1][1], len(self.blocks[-1][1])
        self._wmma_ldst(ins, ctx, loc, shape)
        assert self.blocks[-1][1] is block  # the expansion is straight-line code
        block[start:] = [Instr(i.op, i.dst, i.src, tuple(sorted(i.attrs + (("expansion", ins.opcode),))), i.loc)
                         for i in block[start:]]

    def _wmma_ldst(self, ins, ctx, loc, shape):
        from jaxsimt.units.mma import layouts
        mods = set(ins.modifiers)
        if shape not in layouts.WMMA_SHAPES:
            self.fail(ins, f"WMMA shape {shape} not supported")
        store = ins.opcode == "wmma.store"
        operand = "c" if store else next((m for m in ("a", "b", "c") if m in mods), None)
        layout = "col" if "col" in mods else "row" if "row" in mods else None
        ty = ins.types[-1] if ins.types else None
        if operand is None or layout is None or ty not in ("f16", "bf16", "tf32", "f32"):
            self.fail(ins, "only f16/bf16/tf32/f32 WMMA fragments with a .row/.col layout are supported")
        space = ins.space or "generic"
        rows, cols = layouts.operand_shape(shape, operand)
        n = rows * cols // 32
        et = T.f32 if ty in ("tf32", "f32") else _dtype(ty)
        packed = et.bits == 16
        ops = ins.operands
        regs = self._regs(ops[1] if store else ops[0], ctx, ins, "the fragment")
        if len(regs) * (2 if packed else 1) < n:
            self.fail(ins, f"the fragment needs {n} elements, got {len(regs)} registers")
        base, off = self._tensor_base(ops[0] if store else ops[1], ctx, ins, loc, space)
        if len(ops) > 2:
            ld = self.src(ops[2], ctx, T.u64, ins, loc)
        else:
            ld = Imm(cols if layout == "row" else rows, T.u64)
        u64 = T.u64
        lane = self.temp(T.u32)
        self.emit("sreg", [lane], [], loc, name="laneid")
        r0, c0, e0, t = self.temp(u64), self.temp(u64), self.temp(u64), self.temp(u64)
        self.emit("shr", [r0], [lane, Imm(cols.bit_length() - 1, T.u32)], loc, type="u64")
        self.emit("and", [c0], [lane, Imm(cols - 1, u64)], loc, type="b64")
        dr = 32 // cols
        step = self.temp(u64)
        if layout == "row":
            self.emit("mul", [t], [r0, ld], loc, type="u64")
            self.emit("add", [e0], [t, c0], loc, type="u64")
            self.emit("mul", [step], [ld, Imm(dr * et.size, u64)], loc, type="u64")
        else:
            self.emit("mul", [t], [c0, ld], loc, type="u64")
            self.emit("add", [e0], [t, r0], loc, type="u64")
            self.emit("mov", [step], [Imm(dr * et.size, u64)], loc, type="u64")
        b0 = self.temp(u64)
        self.emit("mul", [b0], [e0, Imm(et.size, u64)], loc, type="u64")
        addr = self.temp(u64)
        self.emit("add", [addr], [base, b0], loc, type="u64")
        addrs = [addr]
        for _ in range(n - 1):
            nxt = self.temp(u64)
            self.emit("add", [nxt], [addrs[-1], step], loc, type="u64")
            addrs.append(nxt)
        attrs = dict(space=space, vec=1, offset=off)
        if not packed:
            if store:
                for j, a in enumerate(addrs):
                    self.emit("st", (), [a, regs[j]], loc, type="f32", **attrs)
            else:
                for j, a in enumerate(addrs):
                    self.emit("ld", [regs[j]], [a], loc, type="f32", **attrs)
                for j in range(n, len(regs)):
                    self.emit("mov", [regs[j]], [regs[j % n]], loc, type=regs[j].dtype.name)
            return
        halves = [self.temp(T.b16) for _ in range(n)]
        if store:
            for j in range(0, n, 2):
                self.emit("ptx.unpack", [halves[j], halves[j + 1]], [regs[j // 2]], loc, type="b32", n=2,
                          slots=(0, 1))
            for j, a in enumerate(addrs):
                self.emit("st", (), [a, halves[j]], loc, type="b16", **attrs)
            return
        for j, a in enumerate(addrs):
            self.emit("ld", [halves[j]], [a], loc, type="b16", **attrs)
        for k, r in enumerate(regs):
            self.emit("ptx.pack", [r], [halves[(2 * k) % n], halves[(2 * k + 1) % n]], loc, type="b32")

    # ---------------------------------------------------------------- memory
    def address(self, a: ast.Addr, ctx, ins, loc, space):
        """(src operand, attrs) of a memory operand."""
        if not isinstance(a, ast.Addr):
            self.fail(ins, "memory operand form not supported")
        base = a.base
        if base is None:
            return Imm(a.offset, T.u64), {"offset": 0}
        if isinstance(base, ast.Reg):
            return self.reg(ctx, base.name), {"offset": a.offset}
        name = base.name
        if name in self.shared_of and space in ("shared", "generic"):
            if space == "generic":
                self.fail(ins, "generic access to a shared variable by name")
            return Imm(0, T.u32), {"offset": a.offset, "array": self.shared_of[name]}
        if name in self.hidden_of and space in ("const", "global", "generic"):
            return Imm(0, T.u32), {"offset": a.offset, "array": self.hidden_of[name].index}
        if (ctx.fn.name, name) in self.local_off:
            r = self.temp(T.u64)
            self.sym_address(r, name, ctx, ins, loc)
            return r, {"offset": a.offset}
        self.fail(ins, f"address of {name} not supported in .{space}")

    def memory(self, ins, ctx, loc):
        ops = ins.operands
        op = "st" if ins.opcode == "st" else "ld"
        mods = set(ins.modifiers)
        space = ins.space or "generic"
        ty = ins.types[-1]
        if ty not in T.BY_NAME:
            self.fail(ins, f"memory type .{ty} not supported")
        t = _dtype(ty)
        vec = ins.vector
        if space == "param":
            self.param_access(ins, ctx, loc, op, t)
            return
        addr_op = ops[0] if op == "st" else ops[1]
        val_op = ops[1] if op == "st" else ops[0]
        src0, attrs = self.address(addr_op, ctx, ins, loc, space)
        vals = list(val_op.elems) if isinstance(val_op, ast.Vec) else [val_op]
        if len(vals) != vec:
            self.fail(ins, "vector width does not match the operand")
        if space == "tex":
            self.fail(ins, "texture memory not supported")
        attrs = dict(attrs, space=space, type=ty, vec=vec)
        if op == "ld" and space == "global" and "nc" in mods:
            attrs["cache"] = "ro"  # the read-only (non-coherent) path: jaxsimt.units.rocache
        elif op == "ld" and space in ("global", "generic") and mods & _L2_ONLY_OPS:
            attrs["cache"] = L2_ONLY  # cached in L2 only: neither hits nor fills L1 (the timing model's L1 tags)
        if op == "ld" and mods & _ORDERED:
            attrs["ordered"] = True
        if op == "ld":
            dsts = [self.dst(v, ctx, ins) for v in vals]
            if t.is_signed and any(d.dtype.bits > t.bits for d in dsts):  # signed loads sign-extend
                tmps = [self.temp(t) for _ in dsts]
                self.emit("ld", tmps, [src0], loc, **attrs)
                for d, tmp in zip(dsts, tmps):
                    self.emit("cvt", [d], [tmp], loc, type=ty, to=f"s{d.dtype.bits}", rnd=None, sat=False,
                              relu=False)
                return
            self.emit("ld", dsts, [src0], loc, **attrs)
        else:
            self.emit("st", (), [src0] + [self.src(v, ctx, t, ins, loc) for v in vals], loc, **attrs)

    def param_access(self, ins, ctx, loc, op, t):
        ops = ins.operands
        a = ops[1] if op == "ld" else ops[0]
        if not isinstance(a, ast.Addr) or not isinstance(a.base, ast.Sym) or a.offset != 0 or ins.vector != 1:
            self.fail(ins, "parameter access other than a whole scalar parameter is not supported")
        name = a.base.name
        if ctx.inst == 0 and op == "ld" and name in [p.name for p in self.entry.params]:
            k = [p.name for p in self.entry.params].index(name)
            d = self.dst(ops[0], ctx, ins)
            owner, off = self.pointers.get(k, (k, 0))
            self.emit("param", [d], [], loc, index=owner)
            if off:  # a pointer into its buffer: the buffer's base plus the offset
                self.emit("add", [d], [d, Imm(int(off), d.dtype)], loc, type=d.dtype.name)
            return
        r = self.param_var(a.base, ctx, ins)
        if op == "ld":
            self.emit("mov", [self.dst(ops[0], ctx, ins)], [r], loc, type=t.name)
        else:
            self.emit("mov", [r], [self.src(ops[1], ctx, t, ins, loc)], loc, type=t.name)

    def atomic(self, ins, ctx, loc):
        ops = ins.operands
        mods = ins.modifiers
        aop = next((m for m in mods if m in ("add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec")),
                   None)
        ty = ins.types[-1] if ins.types else None
        if ty not in T.BY_NAME:
            self.fail(ins, f"atomics on .{ty} not supported")
        t = _dtype(ty)
        if t.size != 4 or ins.vector != 1:
            self.fail(ins, "atomics: only 32-bit add/min/max/exch/cas/and/or/xor/inc/dec are supported")
        if aop in ("inc", "dec") and ty != "u32":
            self.fail(ins, f"atom.{aop} is defined for .u32 only")
        if aop in ("min", "max") and t.is_float:
            self.fail(ins, "floating-point atomic min/max not supported")
        space = ins.space or "generic"
        if ins.opcode == "red":
            dst, rest = [], ops
        else:
            dst, rest = [self.dst(ops[0], ctx, ins)], ops[1:]
        src0, attrs = self.address(rest[0], ctx, ins, loc, space)
        if space == "local":
            self.fail(ins, "atomics on local memory are not supported")
        attrs = dict(attrs, space=space, type=ty, aop=aop)
        self.emit("atom", dst, [src0] + [self.src(v, ctx, t, ins, loc) for v in rest[1:]], loc, **attrs)

    def cp_async(self, ins, ctx, loc):
        ops = ins.operands
        size = ops[2]
        same = len(ops) == 4 and isinstance(ops[3], ast.Imm) and isinstance(size, ast.Imm) and ops[3].value == size.value
        if not isinstance(size, ast.Imm) or size.value not in (4, 8, 16) or (len(ops) > 3 and not same):
            self.fail(ins, "cp.async with a source size or cache policy operand is not supported")
        n = int(size.value)
        vec = n // 4
        temps = [self.temp(T.b32) for _ in range(vec)]
        gsrc, gattrs = self.address(ops[1], ctx, ins, loc, "global")
        self.emit("ld", temps, [gsrc], loc, **dict(gattrs, space="global", type="b32", vec=vec))
        ssrc, sattrs = self.address(ops[0], ctx, ins, loc, "shared")
        self.emit("st", (), [ssrc] + temps, loc, **dict(sattrs, space="shared", type="b32", vec=vec))


def _signature(args):
    if args is None:
        return None
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim > 0:
            out.append(("arr", str(a.dtype)))
        else:
            out.append(("scalar",))
    return tuple(out)


_CACHE: dict = {}
_VALID: dict = {}  # id(module) -> module, for the modules that passed `validate`


def lower(module, kernel: Optional[str] = None, args: Optional[Sequence] = None, dynamic_smem: int = 0,
          check: bool = True, contract: bool = True, pointers: Optional[dict] = None,
          source_dirs: Sequence[str] = (), vectorize_loads: bool = True, schedule_loads: bool = True) -> Program:
    """Lower entry `kernel` of a PTX module (an `ast.Module` or PTX text) to a `Program`.

    args: the launch arguments, used only to decide which parameters are pointers (numpy arrays with at
    least one dimension) and their element types; without them every .u64/.b64 parameter is a pointer to
    bytes (u8). dynamic_smem: bytes of `.extern .shared` memory. contract: fuse plain `mul` + dependent
    `add`/`sub` pairs into `fma` as ptxas does (docs/ptx.md); False keeps two roundings. vectorize_loads: merge
    scalar shared loads of consecutive elements into vector loads as ptxas does (`jaxsimt.ptx.vectorize`); False
    keeps the PTX's loads. schedule_loads: move global loads up their blocks, with their address arithmetic, as
    ptxas does (`jaxsimt.ptx.schedule`); False keeps the PTX's order. pointers:
    {parameter index: (index of the parameter holding the buffer, byte offset)}: that parameter's value is
    the other's base plus the offset (aliased and offset pointer arguments; the parameter itself is then
    passed as a scalar). source_dirs: folders besides the PTX file's own that `.file` sources may be read
    from (`jaxsimt.ptx.sources`). Lowered programs are cached by module, kernel, argument kinds, dynamic
    shared-memory size and these options, so repeated launches reuse compiled machines.
    """
    if isinstance(module, str):
        module = parse(module)
    if check:
        check_supported(module)
    if _VALID.get(id(module)) is not module:
        validate(module)  # operand counts, kinds, register classes and widths, declarations: as ptxas
        _VALID[id(module)] = module
    if kernel is None:
        if len(module.entries) != 1:
            raise ValueError(f"{module.filename}: {len(module.entries)} kernels; name one of "
                             f"{[e.name for e in module.entries]}")
        kernel = module.entries[0].name
    ptrs = tuple(sorted((int(k), (int(v[0]), int(v[1]))) for k, v in (pointers or {}).items()))
    source_dirs = tuple(os.fspath(d) for d in source_dirs)
    key = (id(module), kernel, _signature(args), int(dynamic_smem), bool(contract), ptrs, source_dirs,
           bool(vectorize_loads), bool(schedule_loads))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is module:
        return hit[1]
    try:
        entry = module.function(kernel)
    except KeyError:
        raise ValueError(f"{module.filename}: no kernel named {kernel!r}; entries: "
                         f"{[e.name for e in module.entries]}") from None
    if not entry.is_entry:
        raise ValueError(f"{kernel} is a .func, not a kernel (.entry)")
    low = _Lowerer(module, entry, None if args is None else list(args), dynamic_smem, contract, dict(ptrs),
                   bool(vectorize_loads), bool(schedule_loads))
    low.source_dirs = source_dirs
    prog = low.run()
    _CACHE[key] = (module, prog)
    return prog


def hidden_arrays(prog: Program, grid, block) -> list:
    """The hidden array arguments of a lowered program for a launch of `grid` x `block` threads."""
    out = []
    for h in getattr(prog, "ptx_hidden", []):
        out.append(np.frombuffer(h.data, np.uint8).copy() if h.data else np.zeros(1, np.uint8))
    return out


_ = struct
