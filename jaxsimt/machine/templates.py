"""Execution tiers: which basic blocks the machine compiles and which it interprets.

Compiling a basic block costs XLA time in proportion to its length (tens of milliseconds per instruction
on a CPU), so a kernel of thousands of instructions would wait minutes for its first run. The machine
therefore compiles at most `compile_budget` instructions — the blocks inside loops first, where the time
goes — and interprets the rest: those blocks are cut into one-instruction blocks, and every instruction
of the same shape (op, attributes, operand types, immediates' kinds; registers and immediate values
abstracted) shares one compiled template that reads its operands from the register files by run-time
slot. Compile time then grows with the number of distinct shapes, which a kernel's length hardly changes.

Interpreted instructions are the same instructions: they count the same counters and compute the same
bits; only the number of machine steps (`emulator__steps`) differs.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from jaxsimt import types as T
from jaxsimt.program import BRANCH, Block, Imm, Instr, Program, Reg, recut
from jaxsimt.units import isa

# Default number of instructions compiled per program (None: compile every block). A compiled
# instruction costs XLA ~0.1 s on two CPU cores against ~0.05 s for a template that many instructions
# share; 32 keeps the innermost loops of ordinary kernels (the naive GEMM's k loop) compiled and every
# kernel's first run within seconds.
COMPILE_BUDGET = 32
# A program of at most this many times the budget compiles whole: its blocks fused cost less to compile
# than templates of its mostly distinct instructions would (the naive GEMM's 83 instructions: 4.8 s whole,
# 6.3 s tiered), while in longer programs only the loops are worth it (a tiled GEMM's 120: 12.8 s with
# 96 instructions of loops compiled, 4.6 s with 32).
WHOLE_PROGRAM_FACTOR = 3
# ... unless the code it would interpret shares templates: at most this many distinct templates per interpreted
# instruction. Across the real-CUDA corpus the tiered machine came out with fewer optimised HLO instructions at
# ratios up to about 0.5 (LU's straight-line lud_internal, 0.25: 8,326 -> 3,253) and with more above it (the
# reduction sample's kernels, 0.47-0.92: 3,055-3,436 -> 3,357-3,823); docs/performance.md.
SHARED_TEMPLATES = 0.45

# Placeholder register indices: operand k of a template is Reg(PLACEHOLDER - k).
PLACEHOLDER = -1


def loop_depth(blocks: list[Block], exit_index: int) -> list[int]:
    """Loop nesting depth of each block: the number of back edges (a successor at or before the block, in
    the front ends' program order) whose span [target, source] holds it."""
    depth = [0] * len(blocks)
    for b in blocks:
        for s in b.term.successors(exit_index):
            if s != exit_index and s <= b.index:
                for k in range(s, b.index + 1):
                    depth[k] += 1
    return depth


def templatable(ins: Instr) -> bool:
    """Whether an instruction's registers and immediates appear only as operands (dst, src, and those of
    a predicated wrapper's inner instruction), so that abstracting them leaves its semantics intact."""
    for k, v in ins.attrs:
        if k == "inner":
            if not templatable(v):
                return False
        elif isinstance(v, (Reg, Imm)) or (isinstance(v, tuple) and any(isinstance(x, (Reg, Imm)) for x in v)):
            return False
    return True


def plan(program: Program, budget: Optional[int]) -> Program:
    """The program with its blocks assigned to tiers: unchanged (every block compiled) where `budget` is None, or where
    it has at most WHOLE_PROGRAM_FACTOR x `budget` instructions and the code it would interpret shares few templates
    (more than SHARED_TEMPLATES per instruction); else the loop blocks of several instructions, deepest first, are
    compiled while their instructions fit in the budget and every other block is cut into one-instruction blocks
    marked `interpret` (a block whose instruction cannot be a template stays compiled)."""
    blocks = program.blocks
    if budget is None:
        return program
    tiered = _tiered(program, budget)
    if sum(len(b.instrs) for b in blocks) > WHOLE_PROGRAM_FACTOR * budget:
        return tiered
    interpreted = [b for b in tiered.blocks if b.interpret]
    n = sum(len(b.instrs) for b in interpreted)
    shapes = {template_of(b)[0] for b in interpreted}
    return tiered if n and len(shapes) <= SHARED_TEMPLATES * n else program


def _tiered(program: Program, budget: int) -> Program:
    """`program` with its loop blocks of several instructions compiled, deepest first, while their instructions fit
    in `budget`, and every other block cut into interpreted one-instruction blocks."""
    blocks = program.blocks
    depth = loop_depth(blocks, program.exit_index)
    compiled, used = set(), 0
    # a block of one instruction takes one step either way: compiling it would only add a branch
    for b in sorted((b for b in blocks if depth[b.index] > 0 and len(b.instrs) > 1),
                    key=lambda b: (-depth[b.index], b.index)):
        if used + len(b.instrs) <= budget:
            compiled.add(b.index)
            used += len(b.instrs)
    parts: list[list[tuple[list[Instr], bool]]] = []
    for b in blocks:
        if b.index in compiled or not all(templatable(i) for i in b.instrs):
            parts.append([(b.instrs, False)])
        else:
            parts.append([([i], True) for i in b.instrs] or [([], True)])
    return recut(program, parts)


@dataclass(frozen=True)
class OffsetOperand:
    """A memory instruction's constant offset (attr `offset`) abstracted as the template's operand k, so
    that loads and stores that differ only in their offsets share one template."""

    k: int


@dataclass(frozen=True)
class ArrayOperand:
    """The array a memory access addresses (attr `array`: the indexed form's parameter or shared variable) or a
    PTX address derives from (attr `origin`: a parameter's index; `shared_array`: a shared variable's),
    abstracted as the template's operand k, so that accesses of one shape to different arrays share one
    template: the bounds they are checked against are looked up at run time."""

    k: int


ARRAY_ATTRS = ("origin", "shared_array")
# what only the PTX lowering's provenance analysis reads (which variable a `mov` takes the address of): no part
# of an instruction's semantics, so no part of a template's key
PROVENANCE_ATTRS = ("addr_of", "symbol")


def _abstract(ins: Instr, operands: list) -> Instr:
    """`ins` with every register and immediate operand, a memory instruction's constant offset and the array
    its address derives from replaced by a placeholder (appended to `operands` in order) and its source
    location dropped."""

    def ph(x):
        operands.append(x)
        return Reg(PLACEHOLDER - (len(operands) - 1), x.dtype)

    dst = tuple(ph(r) for r in ins.dst)
    src = tuple(ph(x) for x in ins.src)
    attrs = []
    for k, v in ins.attrs:
        if k == "inner":
            v = _abstract(v, operands)
        elif k == "offset" and isinstance(v, int) and not isinstance(v, bool):
            operands.append(Imm(v, T.s64))
            v = OffsetOperand(len(operands) - 1)
        elif (k in ARRAY_ATTRS or (k == "array" and isa.feeds(ins, "memory"))) and isinstance(v, int) \
                and not isinstance(v, bool):
            operands.append(Imm(v, T.s32))
            v = ArrayOperand(len(operands) - 1)
        elif k in PROVENANCE_ATTRS:
            continue
        attrs.append((k, v))
    return Instr(ins.op, dst, src, tuple(attrs), None)


def template_of(block: Block):
    """(key, operands) of an interpreted block: the key identifies its template (the abstracted
    instruction, which operands are immediates of which Python kind, how its branch reads its predicate);
    operands are its registers and immediates in placeholder order (the branch predicate last)."""
    operands: list = []
    shape = tuple(_abstract(i, operands) for i in block.instrs)  # the terminator's instruction only counts
    t = block.term
    if t.kind == BRANCH:
        operands.append(t.pred)
        branch = (True, t.negate, t.pred.dtype)
    else:
        branch = (False,)
    kinds = tuple(type(x.value).__name__ if isinstance(x, Imm) else "reg" for x in operands)
    imm_types = tuple(x.dtype for x in operands if isinstance(x, Imm))
    return (shape, branch, kinds, imm_types), operands


DTYPES = T.ALL
DTYPE_INDEX = {dt.name: i for i, dt in enumerate(DTYPES)}


def imm_bits(imm: Imm) -> np.ndarray:
    """[len(DTYPES)] uint64: the immediate converted to each dtype as the compiled tier converts it
    (`jnp.asarray(value, dtype)`), as the bits of that dtype; 0 where the conversion is undefined."""
    return _imm_bits(type(imm.value), imm.value)


@functools.lru_cache(maxsize=None)
def _imm_bits(kind: type, value) -> np.ndarray:
    # keyed by the value's type too: 1, 1.0 and True are equal as keys but convert differently; programs
    # repeat few distinct immediates
    out = np.zeros(len(DTYPES), np.uint64)
    for i, dt in enumerate(DTYPES):
        v = _exact(value, dt.np_dtype)
        if v is None:
            v = _through_jax(value, dt.np_dtype)
        if v is None:
            continue
        raw = v.tobytes()
        out[i] = np.frombuffer(raw + b"\0" * (8 - len(raw)), np.uint64)[0]
    out.setflags(write=False)
    return out


def _exact(value, np_dtype) -> np.ndarray | None:
    """`value` as a numpy scalar of `np_dtype` where the conversion is exact (the value is representable), so
    that every rounding and overflow rule agrees with JAX's; else None. Most immediates are: this path avoids
    a JAX conversion (~0.5 ms each, and a compilation per dtype the first time) for 17 dtypes of each."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            v = np.asarray(value, np_dtype)
            back = v.item() if np_dtype == np.bool_ else (
                float(v) if np.issubdtype(np_dtype, np.floating) or v.dtype.kind == "V" else int(v))
    except (OverflowError, ValueError, TypeError):
        return None
    if isinstance(value, bool) or np_dtype == np.bool_:
        return v if back == value else None  # 0, 1, False, True only
    return v if back == value and not (isinstance(value, float) and value != value) else None


def _through_jax(value, np_dtype) -> np.ndarray | None:
    """`value` converted as the compiled tier converts it (`jnp.asarray(value, dtype)`); None where JAX
    refuses."""
    import jax.numpy as jnp

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return np.asarray(jnp.asarray(value, np_dtype))
    except (OverflowError, ValueError, TypeError):
        return None
