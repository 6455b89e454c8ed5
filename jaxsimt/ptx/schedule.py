"""Scheduling of global loads, as ptxas does it: a global load moves up its basic block, together with the address
arithmetic it waits on, so that its latency overlaps the work before it.

nvcc's PTX puts a load where the source reads the value, often right before its first use; ptxas's scheduler
issues the LDG as early as its operands allow (the SASS of the real-CUDA programs and of the suites shows the LDGs
of a block ahead of the arithmetic between them and their uses). The timing model replays each warp's
instructions in program order, issued in order, so a load left at its PTX position pays its whole latency where
the hardware overlapped it. The rule, on the lowered blocks of one kernel (after the vectorization of shared
loads, `jaxsimt.ptx.vectorize`):

- Movable: unpredicated loads from the global space (`ld.global`, its `.nc` and L2-only forms too) without a
  memory-ordering qualifier (`.volatile`, `.relaxed`, `.acquire`: attr `ordered`). Generic, const, local and
  param loads stay where they are.
- Each movable load, from the top of the block down, moves up one instruction at a time while the instruction it
  would cross next
  - is not a block barrier or memory fence (the table's `fence`: `bar`, `membar`, `fence`, cp.async's commit and
    waits), nor warp-synchronous (`warp_sync`: shuffles, votes, `bar.warp.sync`, `mma`, `ldmatrix`), nor a
    jump;
  - does not touch memory outside the shared space: no store or atomic that may alias the load (global,
    generic), and no other load through the L1 (global, generic, local, const, texture): loads keep their order,
    so the L1's tags see them in the same order;
  - writes no register the moving instructions read or write, and reads none they write.
- The load takes its address arithmetic along: an instruction it would cross that writes a register the moving
  group reads joins the group instead, where it is a plain operation (no memory access, no predicate guard, not
  warp-synchronous, not a fence). The group is the load's backward slice inside the block, transitively.
- The group lands right below the instruction that stops it (or at the top of the block), its members in their
  order, the instructions it crossed after it in theirs. So a member moves past only the instructions crossed
  above its own position, each of which was checked against the whole group as it stood then (every member
  below it): none of those writes a register a member reads or writes, or reads one a member writes.

Every register keeps the value each reader saw and no memory access changes order with one it could see, so
results are bit for bit the same; instruction counts and memory counters too (the same instructions, the
accesses through the L1 in the same order). Only the order the timing model issues them in changes.
"""
from __future__ import annotations

from jaxsimt.program import Instr
from jaxsimt.ptx.dataflow import reads, writes
from jaxsimt.units import isa


def movable(ins: Instr) -> bool:
    """An unpredicated global load without an ordering qualifier."""
    return (ins.operation is ins and isa.memory(ins) == "read" and ins.attr("space") == "global"
            and not ins.attr("ordered"))


def stops(ins: Instr) -> bool:
    """Whether no global load moves across `ins`: a barrier or fence, a warp-synchronous instruction, a jump, or a
    memory access outside the shared space."""
    op = ins.operation
    if isa.is_fence(ins) or isa.is_warp_sync(ins) or isa.is_warp_sync(op) or isa.timing_class(ins) == "control":
        return True
    return isa.memory(ins) is not None and op.attr("space") != "shared"


def _pure(ins: Instr) -> bool:
    """A plain operation, which may move with a load's address: no memory access, no guard, not warp-synchronous,
    not a fence."""
    return (ins.operation is ins and isa.memory(ins) is None and not isa.is_warp_sync(ins)
            and not isa.is_fence(ins) and isa.timing_class(ins) != "control")


def _conflicts(ins: Instr, rd: set, wr: set) -> bool:
    """Whether `ins` and instructions reading `rd` and writing `wr` must keep their order."""
    return bool(writes(ins) & (rd | wr)) or bool(reads(ins) & wr)


def hoist(body: list, i: int) -> list:
    """The block `body` with the load at position `i` moved up as the rule allows (with its address slice)."""
    group = [body[i]]  # the instructions that move, in their order, the load last
    g_rd, g_wr = reads(body[i]), writes(body[i])
    crossed: list = []  # the instructions the group moves past, bottom up
    j = i
    while j > 0:
        prev = body[j - 1]
        if stops(prev):
            break
        if not _conflicts(prev, g_rd, g_wr):
            crossed.append(prev)
        elif writes(prev) & g_rd and _pure(prev):
            group.insert(0, prev)
            g_rd |= reads(prev)
            g_wr |= writes(prev)
        else:
            break
        j -= 1
    if not crossed:
        return body
    return body[:j] + group + crossed[::-1] + body[i + 1:]


def schedule_loads(blocks) -> int:
    """Move, in place, the global loads of lowered blocks ([key, instrs, term]) up as ptxas does (the rule above).
    Returns the number of loads moved."""
    moved = 0
    for b in blocks:
        for ins in [x for x in b[1] if movable(x)]:
            body = b[1]
            i = next(k for k, x in enumerate(body) if x is ins)
            new = hoist(body, i)
            if new is not body:
                b[1] = new
                moved += 1
    return moved
