"""ptxas's order for global loads: where a global load moves up to, with the address arithmetic it waits on, so
that its latency overlaps the work before it (the rule of `jaxsimt.ptx.schedule`, which applies it to the PTX
front end's blocks; `jaxsimt.timing.issue_order` applies it across the branches ptxas if-converts).

`hoist` works on any sequence of items, given what each reads and writes and whether it stops loads or may join
a moving group; `movable`, `stops` and `pure` say that of an instruction, from the instruction table.
"""
from __future__ import annotations

from typing import Callable, Sequence

from jaxsimt.program import Instr
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


def pure(ins: Instr) -> bool:
    """A plain operation, which may move with a load's address: no memory access, no guard, not warp-synchronous,
    not a fence."""
    return (ins.operation is ins and isa.memory(ins) is None and not isa.is_warp_sync(ins)
            and not isa.is_fence(ins) and isa.timing_class(ins) != "control")


def hoist(body: Sequence, i: int, reads: Callable, writes: Callable, stops: Callable, pure: Callable) -> list:
    """`body` with the load at position `i` moved up: one item at a time while the item it would cross next does
    not stop it (`stops`) and has no register in common with the moving group that orders them (it writes one
    the group reads or writes, or reads one the group writes); an item that writes a register the group reads
    joins the group instead where it is `pure` (the load's address slice). The group lands right below the item
    that stops it, its members in their order, the items it crossed after it in theirs. Returns `body` itself
    where nothing moved. reads / writes: item -> set of registers."""
    group = [body[i]]
    g_rd, g_wr = set(reads(body[i])), set(writes(body[i]))
    crossed: list = []  # the items the group moves past, bottom up
    j = i
    while j > 0:
        prev = body[j - 1]
        if stops(prev):
            break
        p_rd, p_wr = reads(prev), writes(prev)
        if not (p_wr & (g_rd | g_wr) or p_rd & g_wr):
            crossed.append(prev)
        elif p_wr & g_rd and pure(prev):
            group.insert(0, prev)
            g_rd |= p_rd
            g_wr |= p_wr
        else:
            break
        j -= 1
    if not crossed:
        return body
    return list(body[:j]) + group + crossed[::-1] + list(body[i + 1:])
