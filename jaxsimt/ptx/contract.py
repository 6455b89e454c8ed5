"""Contraction of plain PTX `mul` + `add`/`sub` into `fma`, as ptxas does it (one rounding instead of two).

nvcc leaves some `a * b + c` of the source as `mul.f32` then `add.f32` in PTX, and ptxas fuses them into
FFMA/DFMA. Which ones it fuses was read off its SASS (the suite corpus's, and that of small PTX kernels
made to tell the cases apart; docs/ptx.md has the evidence). The rule, on the lowered blocks of one kernel:

- A candidate is a `mul` without a rounding modifier (f32/f64), not predicated. Its readers are the reads
  its value reaches (data flow over the blocks, through loops, until the register is written again).
- It is fused only if every reader is an `add`/`sub` without a rounding modifier of the same type that
  reads the product in exactly one operand and that no other write of the register reaches (no join of
  two values: a predicated write, another path's write; a path on which the register is not yet written
  does not count, as ptxas takes an undefined value for any). Then each reader becomes one `fma` and
  the `mul` goes. Otherwise none is fused: a product also stored, compared, multiplied, read by `fma.rn` or
  `add.rn`, read twice by one add, or merged with another value keeps its `mul` and every `add`.
- Predicated readers are fused (a predicated fma). The product's operands may be written between the
  `mul` and a reader: the fma reads their values at the `mul` (kept in a copy where needed).
- Readers may lie in other straight-line runs of blocks than the `mul` (past a conditional branch or a
  join) only if one of the `mul`'s operands is a constant to ptxas: an immediate, a register set once by a
  `mov` of an immediate, a kernel parameter (`ld.param`) or a `ld.const` at a fixed address. A product of
  two other registers is fused only when all its readers follow it in its own run. A `div.rn.f32` ends a
  run where it stands: ptxas expands it into a fast path and a called slow path (FCHK, BRA, CALL.REL), which
  splits its basic block (BlackScholes: of the two options a thread prices, the products computed before the
  second option's division keep their FMUL, those after it are fused).
- An add of two fusable products takes the one with fewer readers, of equal ones the first operand; the
  other then has a reader that is not fused, and keeps its `mul` (repeated until nothing changes).
- a*b - c is fma(a, b, -c) and c - a*b is fma(-a, b, c): negation is exact. `.rn` forms are never fused.
"""
from __future__ import annotations

from typing import Callable

from jaxsimt import types as T
from jaxsimt.program import BARRIER, BRANCH, EXIT, FALL, JUMP, Imm, Instr, Reg


def successors(blocks, alias) -> list:
    """[tuple of successor block indices] of each lowered block ([key, instrs, term-spec]); `alias` maps
    the key of an empty fall-through block to the block it stands for."""
    index = {b[0]: i for i, b in enumerate(blocks)}

    def res(key):
        while key in alias:
            key = alias[key]
        return index[key]

    out = []
    for i, (_, _, t) in enumerate(blocks):
        kind = t[0] if t is not None else EXIT
        if kind == BRANCH:
            out.append((res(t[1]), res(t[5])))
        elif kind in (FALL, JUMP):
            out.append((res(t[1]),))
        elif kind == BARRIER:
            out.append((i + 1,) if i + 1 < len(blocks) else ())
        else:
            out.append(())
    return out


def runs(succ) -> list:
    """[run id] of each block: blocks chained by an edge with one way out and one way in (a fall-through,
    an unconditional jump, a barrier) form one straight-line run, as ptxas sees one basic block."""
    preds = [0] * len(succ)
    for ss in succ:
        for s in ss:
            preds[s] += 1
    run = list(range(len(succ)))
    for b in range(len(succ)):  # blocks are laid out in program order: a chain runs forward
        if len(succ[b]) == 1 and succ[b][0] > b and preds[succ[b][0]] == 1:
            run[succ[b][0]] = run[b]
    return run


def _splits(ins) -> bool:
    """An instruction ptxas expands into a branch to a slow path, ending its basic block there."""
    op = ins.operation
    return op.op == "div" and op.attr("type") == "f32"


def segments(blocks, run) -> dict:
    """{(block, position): (run, k)}: the straight-line stretch of each instruction position (the block's end
    included), k counting the instructions that split its run (`_splits`) before it."""
    count: dict = {}
    out = {}
    for b, (_, instrs, _) in enumerate(blocks):  # runs chain forward in block order
        for i, ins in enumerate(instrs):
            out[(b, i)] = (run[b], count.get(run[b], 0))
            if _splits(ins):
                count[run[b]] = count.get(run[b], 0) + 1
        out[(b, len(instrs))] = (run[b], count.get(run[b], 0))
    return out


def _term_reads(t) -> set:
    """Register indices a block's terminator spec reads (its predicate, its instruction's sources)."""
    if t is None:
        return set()
    regs = [t[2]] + (list(t[4].src) if t[4] is not None else [])
    return {r.index for r in regs if isinstance(r, Reg)}


def reached_reads(blocks, succ, reg: int, start, watch=frozenset()) -> dict:
    """The reads of register `reg` that the value written at `start` = (block, position) reaches before an
    unpredicated write of `reg` replaces it, on any path: {(block, position): frozenset of the registers of
    `watch` that may be written in between}. Position len(instrs) is the block's terminator. A predicated
    write (`ptx.guard`) keeps the old value for the other lanes: it replaces nothing, and (reading its
    destination) is itself a read."""
    b0, i0 = start
    changed0 = frozenset(d.index for d in blocks[b0][1][i0].dst if d.index in watch)
    reads: dict = {}
    seen = set()
    todo = [(b0, i0 + 1, changed0)]
    while todo:
        b, j, changed = todo.pop()
        instrs = blocks[b][1]
        killed = False
        for k in range(j, len(instrs)):
            ins = instrs[k]
            if any(isinstance(s, Reg) and s.index == reg for s in ins.src):
                reads[(b, k)] = reads.get((b, k), frozenset()) | changed
            if ins.op != "ptx.guard" and any(d.index == reg for d in ins.dst):
                killed = True
                break
            w = [d.index for d in ins.dst if d.index in watch]
            if w:
                changed = changed | frozenset(w)
        if killed:
            continue
        if reg in _term_reads(blocks[b][2]):
            reads[(b, len(instrs))] = reads.get((b, len(instrs)), frozenset()) | changed
        for s in succ[b]:
            if (s, changed) not in seen:
                seen.add((s, changed))
                todo.append((s, 0, changed))
    return reads


def _definitions(blocks) -> dict:
    """{register index: [(block, position)]} of every instruction writing it."""
    defs: dict = {}
    for b, (_, instrs, _) in enumerate(blocks):
        for i, ins in enumerate(instrs):
            for d in ins.dst:
                defs.setdefault(d.index, []).append((b, i))
    return defs


def _is_constant(op, blocks, defs) -> bool:
    """Whether ptxas sees the operand as a constant (an immediate or a constant-bank value): an immediate,
    or a register written once, by a `mov` of an immediate, a kernel parameter or a fixed `ld.const`."""
    if isinstance(op, Imm):
        return True
    locs = defs.get(op.index, [])
    if len(locs) != 1:
        return False
    b, i = locs[0]
    ins = blocks[b][1][i]
    if ins.op == "param":
        return True
    if ins.op == "mov":
        return isinstance(ins.src[0], Imm)
    return ins.op == "ld" and ins.attr("space") == "const" and all(isinstance(s, Imm) for s in ins.src)


def _reader_operand(mul, ins, reg: int, contractible):
    """The operand index by which `ins` (an add/sub, possibly predicated) reads the product `reg` once,
    or None when `ins` cannot take the product into an fma."""
    add = ins.operation
    if add.op not in ("add", "sub") or id(add) not in contractible or add.attr("type") != mul.attr("type"):
        return None
    if sum(1 for s in ins.src if isinstance(s, Reg) and s.index == reg) != 1:
        return None  # both operands, or (predicated) also kept as the old value of the destination
    ks = [k for k, s in enumerate(add.src) if isinstance(s, Reg) and s.index == reg]
    return ks[0] if ks else None


def fusable_products(blocks, alias, contractible) -> dict:
    """{(block, position) of a mul: {(block, position) of a reader: (operand index, frozenset of the mul's
    operand registers written in between)}} for every mul whose readers could all take it (before
    competing products are settled)."""
    succ = successors(blocks, alias)
    seg = segments(blocks, runs(succ))
    defs = _definitions(blocks)
    out = {}
    for b, (_, instrs, _) in enumerate(blocks):
        for i, mul in enumerate(instrs):
            if mul.op != "mul" or id(mul) not in contractible:
                continue
            reg = mul.dst[0].index
            watch = frozenset(s.index for s in mul.src if isinstance(s, Reg))
            reads = reached_reads(blocks, succ, reg, (b, i), watch)
            if not reads:
                continue
            if any(seg[r] != seg[(b, i)] for r in reads) and not any(_is_constant(s, blocks, defs) for s in mul.src):
                continue  # readers outside the mul's own straight-line stretch
            readers = {}
            for (rb, rj), changed in reads.items():
                ins = blocks[rb][1][rj] if rj < len(blocks[rb][1]) else None
                k = _reader_operand(mul, ins, reg, contractible) if ins is not None else None
                if k is None:
                    break
                readers[(rb, rj)] = (k, changed)
            else:
                others = set()  # reads another write of the register also reaches: a join
                for s in defs[reg]:
                    if s != (b, i):
                        others.update(reached_reads(blocks, succ, reg, s))
                if not others.intersection(readers):
                    out[(b, i)] = readers
    return out


def settle(products: dict) -> dict:
    """Keep the products every one of whose readers takes it: an add reading two of them takes the one with
    fewer readers (of equal ones its first operand); the other keeps its mul. Repeated until stable."""
    alive = dict(products)
    while True:
        by_reader: dict = {}
        for m, readers in alive.items():
            for r, (k, _) in readers.items():
                by_reader.setdefault(r, []).append((len(readers), k, m))
        chosen = {r: min(c)[2] for r, c in by_reader.items()}
        lost = [m for m, readers in alive.items() if any(chosen[r] != m for r in readers)]
        if not lost:
            return alive
        for m in lost:
            del alive[m]


def _fma(mul, reader, k, a, b, temp) -> list:
    """The instructions replacing `reader` (an add/sub reading the product as operand k, possibly
    predicated) by one fma of a, b (the mul's operands)."""
    add = reader.operation
    c = add.src[1 - k]
    t = T.BY_NAME[mul.attr("type")]
    out = []
    # FFMA.FTZ where both halves flush (.ftz: fast-math code has it on every f32 instruction)
    attrs = (("ftz", True),) if mul.attr("ftz") and add.attr("ftz") else ()

    def neg(x):
        if isinstance(x, Imm):
            return Imm(-x.value, x.dtype)
        r = temp(t)
        out.append(Instr("neg", (r,), (x,), attrs + (("type", t.name),), add.loc))
        return r

    if add.op == "sub" and k == 0:  # a*b - c
        c = neg(c)
    elif add.op == "sub":  # c - a*b
        a = neg(a)
    out.append(Instr("fma", add.dst, (a, b, c), attrs + (("type", t.name),), add.loc))
    if reader.op != "ptx.guard":
        return out
    p, negate = reader.src[0], reader.attr("negate")
    return [Instr("ptx.guard", i.dst, (p,) + tuple(i.src) + tuple(i.dst), (("inner", i), ("negate", negate)), i.loc)
            for i in out]


def contract_mul_add(blocks, alias, contractible, temp: Callable) -> None:
    """Fuse, in place, what ptxas fuses (module docstring). blocks: the lowering's [key, instrs, term-spec]
    lists; contractible: ids of the plain mul/add/sub instructions emitted; temp(dtype) -> a new Reg."""
    fused = settle(fusable_products(blocks, alias, contractible))
    replace: dict = {}  # (block, position) -> the instructions standing there instead
    for (b, i), readers in sorted(fused.items()):
        mul = blocks[b][1][i]
        changed = frozenset().union(*(ch for _, ch in readers.values()))
        kept, ops = [], []
        for s in mul.src:
            if isinstance(s, Reg) and s.index in changed:  # written before some reader: read it at the mul
                r = temp(s.dtype)
                kept.append(Instr("mov", (r,), (s,), (("type", s.dtype.name),), mul.loc))
                ops.append(r)
            else:
                ops.append(s)
        replace[(b, i)] = kept
        for (rb, rj), (k, _) in readers.items():
            replace[(rb, rj)] = _fma(mul, blocks[rb][1][rj], k, ops[0], ops[1], temp)
    for b, blk in enumerate(blocks):
        if any((b, j) in replace for j in range(len(blk[1]))):
            blk[1] = [x for j, ins in enumerate(blk[1]) for x in replace.get((b, j), [ins])]
