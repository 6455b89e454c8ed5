"""Scheduling of global loads, as ptxas does it: a global load moves up its basic block, together with the address
arithmetic it waits on, so that its latency overlaps the work before it.

nvcc's PTX puts a load where the source reads the value, often right before its first use; ptxas's scheduler
issues the LDG as early as its operands allow (the SASS of the real-CUDA programs and of the suites shows the LDGs
of a block ahead of the arithmetic between them and their uses). The timing model replays each warp's
instructions in program order, issued in order, so a load left at its PTX position pays its whole latency where
the hardware overlapped it. The rule (`jaxsimt.units.loadorder`, which the timing model's issue order also
applies across the branches ptxas if-converts, `jaxsimt.timing.issue_order`), on the lowered blocks of one kernel
(after the vectorization of shared loads, `jaxsimt.ptx.vectorize`):

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

from jaxsimt.ptx.dataflow import reads, writes
from jaxsimt.units import loadorder
from jaxsimt.units.loadorder import movable, pure, stops  # noqa: F401  (the rule's parts, named here too)


def hoist(body: list, i: int) -> list:
    """The block `body` with the load at position `i` moved up as the rule allows (with its address slice)."""
    return loadorder.hoist(body, i, reads, writes, stops, pure)


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
