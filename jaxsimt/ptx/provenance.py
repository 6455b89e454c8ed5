"""Pointer provenance: which allocation each byte address of a PTX kernel was derived from.

PTX addresses are raw bytes, so an access that strays past the end of its array lands in whatever lies
there, often the next allocation. Bounds are checked per array (an out-of-bounds `in[i + 1]` must fault
even where `out` starts right after `in`), so each memory instruction is told, when the program is built,
the parameter its address derives from: a pointer parameter's value plus or minus integers stays that
parameter's allocation, through moves, `cvta`, additions (`add`, `mad.wide` lowered to adds), `and` (an
alignment mask) and selections between pointers of one allocation, around loops (a forward data-flow
fixpoint over the control-flow graph, once, in Python).

Each register's value is UNDEF (not yet defined), INT (an integer: an index, an offset, a size), a pointer
tag — ("param", p), ("shared", variable) or ("local",) — or TOP (a pointer of unknown origin: loaded from memory,
one of two allocations, a pointer difference added back). An access whose address is a tagged pointer gets
the attribute `origin`: p (an int: checked against parameter p's allocation, exactly), "shared" or "local"
(the address of a variable of that space: using it as a global address is a wrong-space access); a shared
variable's also gets `shared_array` (its index in the program's shared declarations: checked against that
array's bounds, not only the block's shared memory). Accesses
through TOP pointers keep no origin and are checked against the allocation their address falls in.
"""
from __future__ import annotations

from dataclasses import replace

from jaxsimt.program import Imm, Instr, Program, Reg

UNDEF, INT, TOP = "undef", "int", "top"

# ops that carry a pointer through unchanged when their other operands are integers
_OFFSETTING = frozenset({"add", "sub", "and", "or"})
_COPYING = frozenset({"mov", "cvta", "cvt"})  # a pointer converted between widths stays itself
_MEMORY = frozenset({"ld", "st", "atom"})


def join(a, b):
    """The least upper bound of two register values."""
    if a == UNDEF or a == b:
        return b
    if b == UNDEF:
        return a
    return TOP


def _is_tag(v) -> bool:
    return isinstance(v, tuple)


def _value(env: dict, op):
    if isinstance(op, Imm):
        return INT
    return env.get(op.index, UNDEF)


def _result(program: Program, ins: Instr, env: dict):
    """The value an (unguarded) instruction writes to its destinations."""
    op = ins.op
    if op == "param":
        return ("param", ins.attr("index")) if program.params[ins.attr("index")].is_pointer else INT
    if op == "mov" and ins.attr("addr_of") is not None:  # a variable's address (a shared one: which)
        return (ins.attr("addr_of"),) + ((ins.attr("symbol"),) if ins.attr("symbol") is not None else ())
    vals = [_value(env, s) for s in ins.src]
    if op in _COPYING:
        return vals[0] if vals else INT
    if op in _MEMORY:  # a 64-bit value loaded from memory may be a pointer
        return TOP if any(d.dtype.bits == 64 for d in ins.dst) else INT
    if op == "selp":
        return join(vals[0], vals[1])
    tags = [v for v in vals if _is_tag(v) or v == TOP]
    if not tags:
        return INT
    if op in _OFFSETTING and len(tags) == 1 and _is_tag(tags[0]) and (op != "sub" or _is_tag(vals[0])):
        return tags[0]
    if op == "sub" and len(tags) == 2 and _is_tag(vals[0]) and vals[0] == vals[1]:
        return INT  # a pointer difference within one allocation
    return TOP


def _transfer(program: Program, ins: Instr, env: dict) -> None:
    inner = ins.attr("inner")
    if inner is not None:  # predicated: the lanes whose predicate fails keep the old value
        new = _result(program, inner, env)
        for d in inner.dst:
            env[d.index] = join(env.get(d.index, UNDEF), new)
        return
    new = _result(program, ins, env)
    for d in ins.dst:
        env[d.index] = new


def analyse(program: Program) -> list[dict]:
    """The register values at the entry of each block ([NB] dicts: register index -> value)."""
    nb = len(program.blocks)
    entry = [dict() for _ in range(nb)]
    work = list(range(nb))
    queued = set(work)
    while work:
        b = work.pop(0)
        queued.discard(b)
        env = dict(entry[b])
        for ins in program.blocks[b].instrs:
            _transfer(program, ins, env)
        term = program.blocks[b].term
        for s in term.successors(nb):
            if s >= nb:
                continue
            merged = dict(entry[s])
            for k, v in env.items():
                merged[k] = join(merged.get(k, UNDEF), v)
            if merged != entry[s]:
                entry[s] = merged
                if s not in queued:
                    work.append(s)
                    queued.add(s)
    return entry


def _annotate(ins: Instr, env: dict) -> Instr:
    inner = ins.attr("inner")
    if inner is not None:
        new_inner = _annotate(inner, env)
        if new_inner is inner:
            return ins
        return replace(ins, attrs=tuple((k, new_inner if k == "inner" else v) for k, v in ins.attrs))
    if ins.op not in _MEMORY or ins.attr("array") is not None or not ins.src or not isinstance(ins.src[0], Reg):
        return ins
    v = env.get(ins.src[0].index, UNDEF)
    if not _is_tag(v):
        return ins
    extra = (("origin", v[1] if v[0] == "param" else v[0]),)
    if v[0] == "shared" and len(v) > 1:
        extra += (("shared_array", v[1]),)
    return replace(ins, attrs=tuple(sorted(ins.attrs + extra, key=lambda kv: kv[0])))


def annotate(program: Program) -> Program:
    """The program with each byte-addressed load, store and atomic told its address's origin (attr
    `origin`, see the module docstring); the blocks are otherwise unchanged."""
    entry = analyse(program)
    for b, env0 in zip(program.blocks, entry):
        env = dict(env0)
        out = []
        for ins in b.instrs:
            out.append(_annotate(ins, env))
            _transfer(program, ins, env)
        b.instrs = out
    return program

