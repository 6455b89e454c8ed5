"""The registers a lowered instruction reads and writes, for the PTX front end's passes over lowered blocks
(`jaxsimt.ptx.vectorize`, `jaxsimt.ptx.schedule`).

A predicated instruction (`ptx.guard`) counts its own operands and its inner instruction's: the guard reads its
predicate, the inner sources and (a partial write keeps the old values) the inner destinations.
"""
from __future__ import annotations

from jaxsimt.program import Instr, Reg


def reads(ins: Instr) -> set:
    """Indices of the registers `ins` reads."""
    regs = set()
    for x in (ins, ins.operation):
        regs |= {s.index for s in x.src if isinstance(s, Reg)}
    return regs


def writes(ins: Instr) -> set:
    """Indices of the registers `ins` writes."""
    return {r.index for x in (ins, ins.operation) for r in x.dst}
