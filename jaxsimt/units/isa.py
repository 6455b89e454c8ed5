"""The instruction table: every operation a `Program` can hold, declared once.

An entry (`Op`) says what the operation is:

* `run(ex, ins, pc)`: its semantics over a warp's lanes, through the executing block's helper `ex`
  (`machine._Exec`: `ex.read`, `ex.write`, `ex.active`, `ex.memory`, ...); None for the terminators (`bar`,
  `exit`, `ret`), which the step's terminator phase carries out (and `bra` too, whose `run` does nothing: a jump
  left inside a block by `program.thread_jumps`);
* `timing`: its timing class (`trace.CLASS_NAMES`), a name or a function of the instruction;
* `memory`: whether it touches memory, and how ("read", "write", "atomic"); the space is the
  instruction's `space` attribute. Writes and atomics run in the step's memory stage (`jaxsimt.machine.memstage`);
* `warp_sync`: it synchronises the lanes its member mask names (ITS waits for them; synccheck checks
  them), and `mask(ins)` gives that mask where it is static;
* `copy`: a register copy (`mov`), which the timing traces do not issue where ptxas folds it away;
* `orders_warp`: a warp barrier (`__syncwarp`), which orders its lanes' accesses for racecheck;
* `fence`: a block barrier or a memory fence (`bar`, `membar`, `fence`, cp.async's commit and waits): no memory
  access moves across it (the PTX front end's scheduling of global loads, `jaxsimt.ptx.schedule`);
* `feeds`: the counter families its executions add to beyond the instruction counts ("memory": requests,
  sectors, wavefronts and bank conflicts per instruction; "texture": the texture cache);
* `tables(ins)`: the functions of the special function unit (`mufu`) whose result tables it reads, which the
  launch hands to the machine as run-time data;
* `low_zeros(ins, zeros)`: how many low bits of its integer result are known to be zero, given those of its
  sources (`zeros`, one per source operand); 0 where nothing is known. The PTX front end's vectorization of
  shared loads (`jaxsimt.ptx.vectorize`) proves addresses aligned with it, as ptxas does.

The machine, the ITS machine, the memory stage, the stats, the sanitizer and the timing traces read this
table; no other module tests op names. Front ends emit the ops by name; the DSL and the PTX lowering share
the entries where their semantics agree.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

from jaxsimt.units import alu, generic, mufu, ptxops, texture
from jaxsimt import types as T
from jaxsimt.units.mma import execute as mma_execute
from jaxsimt.program import Imm, Instr

# Timing classes (the order of jaxsimt.timing.trace's class indices)
TIMING_CLASSES = ("alu", "fp32", "sfu", "tensor", "shared", "global", "barrier", "control", "shuffle")


def _no_tables(ins) -> tuple:
    return ()


@dataclass(frozen=True)
class Op:
    name: str
    run: Optional[Callable]  # (ex, ins, pc) -> None; None: a terminator
    timing: Union[str, Callable[[Instr], str]] = "alu"
    memory: Optional[str] = None  # None | "read" | "write" | "atomic"
    warp_sync: bool = False
    mask: Callable[[Instr], Optional[int]] = lambda ins: None  # noqa: E731 - the static member mask
    feeds: frozenset = frozenset()
    orders_warp: bool = False  # a warp barrier (`__syncwarp`): orders its lanes' accesses for racecheck
    fence: bool = False  # a block barrier or memory fence: no memory access moves across it
    copy: bool = False  # a register copy (mov), which ptxas folds away where it can
    compare: bool = False  # sets a predicate from a comparison (setp): a loop's exit test
    offset: bool = False  # adds or subtracts its operands (add, sub): with an immediate, a loop counter's step
    tables: Callable[[Instr], tuple] = _no_tables  # the mufu functions whose tables it reads
    low_zeros: Callable[[Instr, tuple], int] = lambda ins, zeros: 0  # noqa: E731 - known zero low bits of the result


# ---------------------------------------------------------------------------------------------
# Semantics the table names directly (the rest live in the units: alu, lsu, ptxops, mma, ...)
# ---------------------------------------------------------------------------------------------


def _alu(ex, ins, pc):
    """The core ALU ops (`alu.execute`): operands read as the instruction's type (selp's third as a
    predicate, shift counts as u32)."""
    t = T.BY_NAME[ins.attr("type")]
    if ins.op == "selp":
        args = [ex.read(ins.src[0], t), ex.read(ins.src[1], t), ex.read(ins.src[2], T.pred)]
    elif ins.op in ("shl", "shr"):
        args = [ex.read(ins.src[0], t), ex.read(ins.src[1], T.u32)]
    else:
        args = [ex.read(s, t) for s in ins.src]
    ex.write(ins.dst[0], alu.execute(ins.op, ins, args, t, ex.zero))


def _unit_reads(ins) -> tuple:
    """The special-function-unit tables a core op of the unit (ex2, lg2, rsqrt, rcp, sqrt, sin, cos) reads: f32
    runs on the unit (rcp and sqrt only in their .approx form; .rn is the ALU's correctly rounded result), other
    types on the ALU."""
    rounded = ins.op in ("rcp", "sqrt") and not ins.attr("approx")
    return (ins.op,) if ins.attr("type") == "f32" and not rounded else ()


def _sfu(ex, ins, pc):
    """ex2, lg2, rsqrt, rcp, sqrt, sin and cos: on f32, the special function unit bit for bit (`mufu.approx`,
    with ptxas's handling of denormals unless .ftz) where the architecture's was measured; else, and on other
    types, the ALU."""
    tab = ex.dyn.mufu
    if not _unit_reads(ins) or tab is None:
        return _alu(ex, ins, pc)
    ex.write(ins.dst[0], mufu.approx(ins.op, ex.read(ins.src[0], T.f32), tab, bool(ins.attr("ftz", False))))


def _div_approx(ex, ins, pc):
    """div.approx / div.full on f32: the dividend times the special function unit's reciprocal (`mufu.div`);
    correctly rounded where the architecture's unit was not measured."""
    a, b = (ex.read(s, T.f32) for s in ins.src)
    tab = ex.dyn.mufu
    if tab is None:
        ex.write(ins.dst[0], alu.div(a, b, T.f32, ex.zero))
        return
    ex.write(ins.dst[0], mufu.div(a, b, tab, bool(ins.attr("full", False)), bool(ins.attr("ftz", False))))


def _funary_reads(ins) -> tuple:
    return ("tanh",) if ins.attr("fn") == "tanh" and ins.attr("type") == "f32" else ()


def _funary(ex, ins, pc):
    """tanh.approx.f32 on the special function unit (`mufu.tanh`); 16-bit tanh and ex2 (`ptxops.funary`)."""
    if not _funary_reads(ins) or ex.dyn.mufu is None:
        return ptxops.funary(ex, ins, pc)
    ex.write(ins.dst[0], mufu.approx("tanh", ex.read(ins.src[0], T.f32), ex.dyn.mufu, False))


def _sreg(ex, ins, pc):
    """A special register, for both front ends: the launch's geometry from the machine (`Machine.special`), the
    others PTX names (lane masks, %nwarpid, shared-memory sizes, %WARP_SZ, clocks) from `ptxops.sreg`."""
    name = ins.attr("name")
    if name in ex.m.LAUNCH_SREGS:
        ex.write(ins.dst[0], ex.m.special(name, ex.wave, ex.dyn))
    else:
        ptxops.sreg(ex, ins, pc)


def _param(ex, ins, pc):
    ex.write(ins.dst[0], ex.param(ins.attr("index")))


def _jumped(ex, ins, pc):
    """An unconditional jump threaded into the block it jumps to (`program.thread_jumps`): nothing to do there.
    As a block's terminator the step carries a `bra` out."""


def _memory(ex, ins, pc):
    ex.memory(ins, pc)


def _warpsync(ex, ins, pc):
    """`__syncwarp(mask)` / `bar.warp.sync`: nothing to compute. Under the reconvergence stack the warp runs
    in lockstep already; under ITS the wait happens before the block runs (`its.ItsMachine`)."""


# ---------------------------------------------------------------------------------------------
# Timing classes and member masks that depend on the instruction
# ---------------------------------------------------------------------------------------------


def _is_float(ins) -> bool:
    return str(ins.attr("type", "")).startswith("f")


def _space_class(ins) -> str:
    return "shared" if ins.attr("space", "global") == "shared" else "global"


def _fp(ins) -> str:
    return "fp32" if _is_float(ins) else "alu"


def _div(ins) -> str:
    return "sfu" if _is_float(ins) else "alu"


def _integer(ins) -> bool:
    t = T.BY_NAME.get(ins.attr("type"))
    return t is not None and t.is_int


def _alu_low_zeros(ins, z: tuple) -> int:
    """Known zero low bits of an integer ALU result: a sum keeps the fewer of its terms', a product adds its
    factors', a left shift by a constant adds the count, an `and` keeps the more of its operands'."""
    if not _integer(ins) or not z:
        return 0
    op = ins.op
    if op in ("mov", "neg"):
        return z[0]
    if op in ("add", "sub", "or", "xor", "min", "max"):
        return min(z[:2])
    if op == "and":
        return max(z[:2])
    if op == "mul":
        return z[0] + z[1]
    if op == "mad":
        return min(z[0] + z[1], z[2])
    if op == "shl" and isinstance(ins.src[1], Imm):
        return z[0] + int(ins.src[1].value)
    if op == "selp":
        return min(z[:2])
    return 0


def _same_low_zeros(ins, z: tuple) -> int:
    """An integer conversion (`cvt` between integer types, `cvta`): the value's low bits are kept."""
    src = T.BY_NAME.get(ins.attr("type"))
    return z[0] if z and (src is None or src.is_int) else 0


def _attr_mask(ins) -> Optional[int]:
    m = ins.attr("membermask")
    return None if m is None else int(m) & 0xFFFFFFFF


def _src_mask(k: int):
    def mask(ins) -> Optional[int]:
        return int(ins.src[k].value) & 0xFFFFFFFF if len(ins.src) > k and isinstance(ins.src[k], Imm) else None
    return mask


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

_FP_OPS = "add sub mul mad fma min max neg abs".split()
_SFU_OPS = "sqrt rsqrt rcp ex2 lg2 sin cos".split()
_UNIT_OPS = tuple(n for n in mufu.UNIT if n in alu.ALU_OPS)  # the core ops the special function unit computes
assert set(_FP_OPS) | set(_SFU_OPS) | {"div"} <= alu.ALU_OPS and set(_UNIT_OPS) <= set(_SFU_OPS)

_ENTRIES = (
    [Op(n, _sfu if n in _UNIT_OPS else _alu,
        _fp if n in _FP_OPS else "sfu" if n in _SFU_OPS else _div if n == "div" else "alu",
        copy=n == "mov", offset=n in ("add", "sub"), tables=_unit_reads if n in _UNIT_OPS else _no_tables,
        low_zeros=_alu_low_zeros)
     for n in sorted(alu.ALU_OPS)]
    + [
        Op("sreg", _sreg),
        Op("param", _param),
        Op("ld", _memory, _space_class, memory="read", feeds=frozenset({"memory"})),
        Op("st", _memory, _space_class, memory="write", feeds=frozenset({"memory"})),
        Op("atom", _memory, _space_class, memory="atomic", feeds=frozenset({"memory"})),
        Op("tex2d", texture.tex2d, "alu", memory="read", feeds=frozenset({"texture"})),
        Op("div.approx", _div_approx, "sfu", tables=lambda ins: ("rcp",)),
        Op("ptx.funary", _funary, tables=_funary_reads),
        # the full PTX forms, which both front ends emit: setp with its combining predicate and `set` form, cvt
        # with rounding modes, .sat and .relu, shfl.sync with the ISA's packed clamp and segment mask (the DSL
        # packs CUDA's width into it as the CUDA headers do). A shuffle issues to the MIO queue as shared
        # memory does, hence its own timing class.
        Op("setp", ptxops.setp, compare=True),
        Op("cvt", ptxops.cvt, low_zeros=_same_low_zeros),
        Op("shfl", ptxops.shfl, "shuffle", warp_sync=True, mask=_attr_mask),
        # vote.sync d, p, membermask (both front ends: `__all_sync` & co. pass their mask as an immediate); classed
        # as the PTX lowering's was calibrated, VOTE being an integer-pipe instruction
        Op("vote", ptxops.vote, "alu", warp_sync=True, mask=_src_mask(1)),
        Op("warpsync", _warpsync, "alu", warp_sync=True, mask=_attr_mask, orders_warp=True),
        Op("cvta", generic.cvta, low_zeros=_same_low_zeros),
        Op("isspacep", generic.isspacep),
        Op("tensor.mma", mma_execute.mma, "tensor", warp_sync=True),
        Op("tensor.ldmatrix", mma_execute.ldmatrix, "shared", memory="read", warp_sync=True,
           feeds=frozenset({"memory"})),
        # terminators (Terminator.instr): counted and classed, carried out by the step
        Op("bar", None, "barrier", fence=True),
        Op("bra", _jumped, "control"),
        Op("exit", None, "control"),
        Op("ret", None, "control"),
    ]
    # the PTX lowering's own ops (jaxsimt.units.ptxops). Their timing class is "alu" throughout (what the
    # calibrated timing model was fitted with), including the rounding-mode float arithmetic that the DSL's
    # ops class as fp32.
    # (membar, fence and cp.async's commit and waits are no-ops here, as every access is complete when issued,
    # but fences all the same: nothing is scheduled across them)
    + [Op("ptx.guard", ptxops.guard), Op("ptx.nop", ptxops.nop), Op("ptx.fence", ptxops.nop, fence=True)]
    # mul.wide and mad.wide (a third source: the addend)
    + [Op("ptx.mul.wide", ptxops.mul_wide, low_zeros=lambda ins, z: min([z[0] + z[1]] + list(z[2:3])))]
    + [Op("ptx." + n, getattr(ptxops, f)) for n, f in (
        ("mul.hi", "mul_hi"), ("sat", "sat_int"), ("mul24", "mul24"), ("sad", "sad"),
        ("dp4a", "dp4a"), ("popc", "popc"), ("clz", "clz"), ("brev", "brev"), ("bfe", "bfe"), ("bfi", "bfi"),
        ("bfind", "bfind"), ("prmt", "prmt"), ("lop3", "lop3"), ("shf", "shf"), ("cnot", "cnot"),
        ("farith", "farith"), ("minmax", "minmax"), ("copysign", "copysign"), ("testp", "testp"),
        ("pack", "pack"), ("unpack", "unpack"), ("x2", "x2"),
        ("activemask", "activemask"))]
    + [Op("ptx.redux", ptxops.redux, warp_sync=True, mask=_src_mask(1)),
       Op("ptx.match", ptxops.match, warp_sync=True, mask=_src_mask(1))]
)

OPS: dict = {op.name: op for op in _ENTRIES}
assert len(OPS) == len(_ENTRIES), "an op is declared twice"


def spec(ins: Instr) -> Op:
    """The table entry of an instruction's op (its own, not a guard's inner one)."""
    op = OPS.get(ins.op)
    if op is None:
        raise NotImplementedError(f"instruction {ins.op!r} ({ins.loc}) is not in the instruction table")
    return op


def timing_class(ins: Instr) -> str:
    """The timing class name of the instruction that does the work (a guard's inner one)."""
    ins = ins.operation
    op = spec(ins)
    if op.memory is None and ins.attr("pipe") == "tensor":  # an MMA lowered to another op keeps its pipe
        return "tensor"
    return op.timing(ins) if callable(op.timing) else op.timing


def unit_tables(instructions) -> tuple:
    """The special function unit's functions (`mufu.UNIT` names) whose tables any of `instructions` reads."""
    need = set()
    for ins in instructions:
        need.update(spec(ins.operation).tables(ins.operation))
    return tuple(sorted(need))


def memory(ins: Instr) -> Optional[str]:
    """How the working instruction touches memory: None, "read", "write" or "atomic"."""
    return spec(ins.operation).memory


def feeds(ins: Instr, family: str) -> bool:
    """Whether the working instruction's executions feed the counter `family` ("memory", "texture")."""
    return family in spec(ins.operation).feeds


def is_warp_sync(ins: Instr) -> bool:
    """Whether the instruction (its own op: a predicated one is its guard) synchronises member lanes."""
    return spec(ins).warp_sync


def is_compare(ins: Instr) -> bool:
    """Whether the instruction (its own op) sets a predicate from a comparison."""
    return spec(ins).compare


def is_offset(ins: Instr) -> bool:
    """Whether the instruction (its own op) adds or subtracts its two operands."""
    return spec(ins).offset


def is_fence(ins: Instr) -> bool:
    """Whether the instruction (or a guard's inner one) is a block barrier or a memory fence."""
    return spec(ins).fence or spec(ins.operation).fence


def member_mask(ins: Instr) -> Optional[int]:
    """The static member mask of a warp-synchronous instruction (or of a guard's inner one), None for other
    instructions and for masks held in registers."""
    op = spec(ins.operation)
    return op.mask(ins.operation) if op.warp_sync else None


def low_zeros(ins: Instr, zeros: tuple) -> int:
    """Known zero low bits of the integer result of `ins` (its own op, not a guard's inner one: a guarded write may
    leave the old value), given those of its source operands."""
    return spec(ins).low_zeros(ins, zeros)


READ_OPS = frozenset(n for n, o in OPS.items() if o.memory == "read")
WRITE_OPS = frozenset(n for n, o in OPS.items() if o.memory in ("write", "atomic"))
