"""Vectorization of shared-memory loads, as ptxas does it: scalar `ld.shared` of consecutive elements become one
vector load (LDS.64, LDS.128).

nvcc leaves an unrolled `As[ty][k] ... As[ty][k + 3]` as four `ld.shared.f32` from one address register with the
immediate offsets o, o + 4, o + 8, o + 12; ptxas issues one LDS.128 for them when it can prove the first address
16-byte aligned. The H200's counters show it: one shared load instruction and its wavefronts where the PTX has
four (the GEMM ladder's shared-memory rungs, the CUDA samples' matrixMul, Rodinia's LU, Parboil's sgemm;
docs/ptx.md). The rule, on the lowered blocks of one kernel:

- Candidates are unpredicated scalar shared loads (`vec` 1) of one result register, addressed as a register
  plus an immediate offset, without a memory-ordering qualifier (`.volatile`, `.relaxed`, `.acquire`: attr
  `ordered`; ptxas issues those as written: the micro-kernel smem_interleave2's two volatile loads of
  `sm[2*tid]`, `sm[2*tid+1]` stay two LDS on the H200, 2-way conflicts each). Loads of one register with the same attributes are grouped by offset: 2 or 4
  elements of consecutive offsets, at most 16 bytes together, the larger group first, lowest offsets first.
- The group's first address must be aligned to the group's size: the register's known zero low bits (data flow
  over the whole kernel through the instruction table's `low_zeros`: sums, products, shifts, conversions,
  moves of shared variables' addresses) and the offset's. A shared variable's address is the one jaxsimt lays
  it out at.
- The loads must lie in one block with nothing between the first and the last that writes shared memory (a
  store or an atomic to the shared or generic space), that writes the address register, or that reads or writes
  a member's result register before the member's own position (the vector load writes them all at the first).

The group becomes one vector load at the first member's position, its results in offset order; the other members
go. Results are bit for bit the same; instruction and wavefront counts follow the hardware's.
"""
from __future__ import annotations

import numpy as np

from jaxsimt import types as T
from jaxsimt.program import Imm, Instr, Reg
from jaxsimt.ptx.dataflow import reads, writes
from jaxsimt.units import isa

CAP = 32  # known zero low bits of a value nothing limits (an immediate 0; a register no definition limits)
MAX_BYTES = 16  # the widest shared load (LDS.128)


def _imm_zeros(v) -> int:
    if not isinstance(v, (int, np.integer)):
        return 0  # a float immediate says nothing about an address
    v = int(v)
    return CAP if v == 0 else min(CAP, (v & -v).bit_length() - 1)


def known_low_zeros(blocks) -> dict:
    """{register index: known zero low bits of every value it holds} over lowered blocks ([key, instrs, term]):
    the greatest fixed point of every definition's `isa.low_zeros`, starting from CAP (a register read but never
    written is absent: 0)."""
    instrs = [ins for _, body, _ in blocks for ins in body]
    zeros = {r.index: CAP for ins in instrs for r in ins.dst}

    def of(x) -> int:
        if isinstance(x, Imm):
            return _imm_zeros(x.value)
        return zeros.get(x.index, 0) if isinstance(x, Reg) else 0

    changed = True
    while changed:
        changed = False
        for ins in instrs:
            if not ins.dst:
                continue
            z = max(0, min(CAP, isa.low_zeros(ins, tuple(of(s) for s in ins.src))))
            for r in ins.dst:
                if z < zeros[r.index]:
                    zeros[r.index] = z
                    changed = True
    return zeros


def _candidate(ins: Instr) -> bool:
    """An unpredicated scalar shared load of one register from a register plus an immediate offset."""
    return (ins.operation is ins and isa.memory(ins) == "read" and ins.attr("space") == "shared"
            and ins.attr("vec") == 1 and not ins.attr("ordered") and isinstance(ins.attr("offset"), int)
            and len(ins.dst) == 1
            and len(ins.src) == 1 and isinstance(ins.src[0], Reg) and ins.attr("type") in T.BY_NAME)


def _writes_shared(ins: Instr) -> bool:
    op = ins.operation
    return isa.memory(op) in ("write", "atomic") and op.attr("space") in ("shared", "generic", None)


def _safe(body, members, base: int) -> bool:
    """Whether the loads at positions `members` (sorted by offset) can all be done at the first one's position."""
    pos = [p for p, _ in members]
    first, last = min(pos), max(pos)
    mine = set(pos)
    dsts = [ins.dst[0].index for _, ins in members]
    if len(set(dsts)) != len(dsts) or base in dsts:
        return False
    for p in range(first + 1, last + 1):
        if p in mine:
            continue
        ins = body[p]
        if _writes_shared(ins) or base in writes(ins):
            return False
    for p, ins in members:
        d = ins.dst[0].index
        for q in range(first + 1, p):
            if q not in mine and d in (reads(body[q]) | writes(body[q])):
                return False
    return True


def _groups(body, zeros: dict) -> list:
    """[(members [(position, instr)] in offset order)] of one block's loads to merge."""
    by_key: dict = {}
    for p, ins in enumerate(body):
        if _candidate(ins):
            key = (ins.src[0].index, tuple((k, v) for k, v in ins.attrs if k != "offset"))
            by_key.setdefault(key, []).append((p, ins))
    out = []
    for (base, _), loads in by_key.items():
        size = T.BY_NAME[loads[0][1].attr("type")].size
        at = {}
        for p, ins in loads:
            at.setdefault(ins.attr("offset"), []).append((p, ins))
        used: set = set()
        for n in (4, 2):
            if n * size > MAX_BYTES:
                continue
            for o in sorted(at):
                offs = [o + k * size for k in range(n)]
                if any(x in used or len(at.get(x, ())) != 1 for x in offs):
                    continue
                if min(zeros.get(base, 0), _imm_zeros(o)) < (n * size).bit_length() - 1:
                    continue
                members = [at[x][0] for x in offs]
                if _safe(body, members, base):
                    out.append(members)
                    used.update(offs)
    return out


def vectorize_shared_loads(blocks) -> int:
    """Merge, in place, the shared loads ptxas merges (the rule above) in lowered blocks ([key, instrs, term]).
    Returns the number of vector loads made."""
    zeros = known_low_zeros(blocks)
    made = 0
    for b in blocks:
        body = b[1]
        groups = _groups(body, zeros)
        if not groups:
            continue
        drop, put = set(), {}
        for members in groups:
            first = min(p for p, _ in members)
            lead = body[first]
            attrs = tuple(sorted([(k, v) for k, v in lead.attrs if k not in ("offset", "vec")]
                                 + [("offset", members[0][1].attr("offset")), ("vec", len(members))]))
            put[first] = Instr(lead.op, tuple(ins.dst[0] for _, ins in members), lead.src, attrs, lead.loc)
            drop.update(p for p, _ in members if p != first)
            made += 1
        b[1] = [put.get(p, ins) for p, ins in enumerate(body) if p not in drop]
    return made
