"""The memory stage of a machine step: where the instructions that write memory run (stores, atomics).

A step runs one basic block for the warps standing at it. The machine cuts blocks after every instruction
that writes a memory (`split`), so a block holds at most one, as its last instruction. The block's other
instructions run in the step's `lax.switch`, which reads the memories but writes none of them; its store or
atomic then runs here, outside the switch: the bounds and alignment checks with the fault record, the
coalescer and bank counters, and the write into global, shared or local memory. Each such instruction shape
(op, attributes, operand types; registers, immediates and offsets abstracted, as the interpreter's templates
do) is compiled once, whatever the kernel's length, and reads its operands from the register files by
run-time row.

Why outside the switch: a `lax.switch` of three or more branches of which one updates a memory copies
every memory it carries on every step (measured on a 2-core CPU: 4.5 ms a step for a 16 MiB global memory
against 3.5 us without it), while a `lax.cond` whose other branch passes the memory through updates it in
place, and branches that only read a memory do not copy it. The stage is therefore a chain of `cond`s, one
per instruction shape, of which the step's block selects at most one. Loads stay in the blocks: cutting
blocks at them too made the naive GEMM's loop take 5 steps a trip instead of 3, and a step's fixed cost
(scheduling, stacks, counters) outweighed what it saved.
"""
from __future__ import annotations

from jaxsimt.units import isa
from jaxsimt.program import BRANCH, Instr, Program, Reg, recut

# The memory accesses (`isa.memory`) that run in the memory stage: those that write a memory (`lsu.store`,
# `lsu.atomic`); a predicated one (`ptx.guard`) counts as its inner instruction. Loads (ld, tex2d, ldmatrix)
# only read memories and run in the blocks.
WRITES = frozenset({"write", "atomic"})


def is_memory(ins: Instr, kinds: frozenset = WRITES) -> bool:
    """Whether the instruction runs in the memory stage: it accesses memory in one of the ways `kinds`."""
    return isa.memory(ins) in kinds


def registers(ins: Instr) -> set[int]:
    """Indices of every register an instruction names: destinations, sources, and registers held in its
    attributes (a predicated wrapper's inner instruction among them)."""
    out = {x.index for x in (*ins.dst, *ins.src) if isinstance(x, Reg)}
    for _, v in ins.attrs:
        if isinstance(v, Instr):
            out |= registers(v)
        elif isinstance(v, Reg):
            out.add(v.index)
        elif isinstance(v, tuple):
            out |= {x.index for x in v if isinstance(x, Reg)}
    return out


def split(program: Program, kinds: frozenset = WRITES) -> Program:
    """The program with its blocks cut after every instruction that writes a memory, so that a block holds at
    most one, as its last. The order of the instructions (so every pc) is unchanged.

    A block's branch reads its predicate before the memory stage runs; where the block's memory instruction
    writes that predicate (an atomic's old value), the terminator gets a block of its own."""
    pieces = []
    for b in program.blocks:
        parts, cur = [], []
        for ins in b.instrs:
            cur.append(ins)
            if is_memory(ins, kinds):
                parts.append(cur)
                cur = []
        t = b.term
        if cur or not parts:
            parts.append(cur)
        elif t.kind == BRANCH and t.pred is not None and t.pred.index in {r.index for r in parts[-1][-1].dst}:
            parts.append([])
        pieces.append([(p, b.interpret) for p in parts])
    if all(len(p) == 1 for p in pieces):
        return program
    return recut(program, pieces)


def memory_instruction(block, kinds: frozenset = WRITES) -> Instr | None:
    """The block's memory-stage instruction (its last instruction, after `split`), or None."""
    return block.instrs[-1] if block.instrs and is_memory(block.instrs[-1], kinds) else None
