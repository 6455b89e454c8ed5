"""The program representation: basic blocks of instructions over typed virtual registers.

Both front-ends (the Python DSL and, later, PTX) produce a `Program`. Control flow lives only in block
terminators (fall-through, jump, conditional branch, barrier, exit). Reconvergence points are computed
here from the control-flow graph as immediate post-dominators, the way a compiler hands them to the
hardware. The kernel's exit is a pseudo-block, index `len(blocks)`, that post-dominates everything.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

from jaxsimt.types import DType


@dataclass(frozen=True)
class Reg:
    """A virtual register: one value of `dtype` per thread."""

    index: int
    dtype: DType
    name: str = ""

    def __repr__(self) -> str:
        return f"%{self.name or 'r'}{self.index}:{self.dtype.name}"


@dataclass(frozen=True)
class Imm:
    """An immediate operand."""

    value: Union[int, float, bool]
    dtype: DType

    def __repr__(self) -> str:
        return f"{self.value!r}:{self.dtype.name}"


Operand = Union[Reg, Imm]


@dataclass(frozen=True)
class SourceLoc:
    file: str
    line: int
    text: str = ""

    def __str__(self) -> str:
        s = f"{self.file}:{self.line}"
        return f"{s}: {self.text.strip()}" if self.text else s


@dataclass(frozen=True)
class Instr:
    """One instruction. `op` names its semantics (see `jaxsimt.units.alu` and `jaxsimt.units.lsu`); `attrs` holds
    static modifiers (comparison, memory space, array id, vector width, ...) as a sorted tuple of pairs."""

    op: str
    dst: tuple[Reg, ...]
    src: tuple[Operand, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    loc: Optional[SourceLoc] = None

    def attr(self, key, default=None):
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def with_attrs(self, **attrs) -> "Instr":
        """This instruction with `attrs` added (or replaced)."""
        merged = dict(self.attrs, **attrs)
        return replace(self, attrs=tuple(sorted(merged.items(), key=lambda kv: kv[0])))

    @property
    def operation(self) -> "Instr":
        """The instruction that does the work: the inner one of a predicated wrapper (PTX `@%p op`,
        lowered to `ptx.guard` with attr `inner`), else this one. Counters and models classify by it."""
        return self.attr("inner") or self

    def __repr__(self) -> str:
        a = "".join(f".{k}={v}" for k, v in self.attrs)
        return f"{self.op}{a} {', '.join(map(repr, self.dst))} <- {', '.join(map(repr, self.src))}"


# Terminator kinds
FALL, JUMP, BRANCH, BARRIER, EXIT = "fall", "jump", "branch", "barrier", "exit"


@dataclass
class Terminator:
    """How a block ends.

    kind FALL/JUMP: continue at `target`. BRANCH: lanes whose predicate (`pred`, inverted when `negate`)
    holds go to `target`, the others to `fallthrough`; `reconv` is the branch's reconvergence block
    (immediate post-dominator). BARRIER: wait for the block's warps, then continue at `target`.
    EXIT: the lanes finish. `instr` is the branch/barrier/exit instruction itself (counted like any
    other), None for a plain fall-through.
    """

    kind: str
    target: int = -1
    fallthrough: int = -1
    pred: Optional[Reg] = None
    negate: bool = False
    reconv: int = -1
    instr: Optional[Instr] = None

    def successors(self, exit_index: int) -> list[int]:
        if self.kind in (FALL, JUMP, BARRIER):
            return [self.target]
        if self.kind == BRANCH:
            return [self.target, self.fallthrough]
        return [exit_index]


@dataclass
class Block:
    index: int
    instrs: list[Instr]
    term: Terminator
    interpret: bool = False  # run by the interpreter tier (jaxsimt.machine.templates), not compiled on its own
    origin: Optional[int] = None  # the front end's block this one was cut from by the tier plan (None: itself)
    origins: tuple = ()  # the front end's block of each of all_instrs(), where blocks were merged (empty: origin)
    pcs: tuple = ()  # the pc of each of all_instrs(), in a program where blocks hold copies of other blocks'
    # instructions (`thread_jumps`; empty: the block's place in the program's order of instructions)
    unthreaded: Optional["Block"] = None  # this block before `thread_jumps` threaded a jump into it

    def all_instrs(self) -> list[Instr]:
        return self.instrs + ([self.term.instr] if self.term.instr is not None else [])

    @property
    def front_index(self) -> int:
        """The front end's block this one begins with."""
        return self.index if self.origin is None else self.origin

    def origin_of(self, j: int) -> int:
        """The front end's block of instruction j of all_instrs()."""
        return self.origins[j] if self.origins else self.front_index


def reads(ins: Instr) -> set:
    """Indices of the registers `ins` reads. A predicated instruction (`ptx.guard`) counts its own operands and
    its inner instruction's: the guard reads its predicate, the inner sources and (a partial write keeps the old
    values) the inner destinations."""
    regs = set()
    for x in (ins, ins.operation):
        regs |= {s.index for s in x.src if isinstance(s, Reg)}
    return regs


def writes(ins: Instr) -> set:
    """Indices of the registers `ins` writes."""
    return {r.index for x in (ins, ins.operation) for r in x.dst}


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a scalar register, or a pointer to a global array of `dtype`."""

    name: str
    dtype: DType
    is_pointer: bool
    reg: Optional[Reg] = None  # scalar params live in a register
    index: int = 0  # position in the argument list
    space: str = "global"  # what a pointer points to: "global", "const" (__constant__) or "texture" (2D)


@dataclass(frozen=True)
class SharedDecl:
    """A per-block shared-memory array at `offset` bytes in the block's shared space."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    offset: int

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * self.dtype.size


@dataclass
class Program:
    """A kernel as the machine runs it."""

    name: str
    params: list[Param]
    regs: list[Reg]
    blocks: list[Block]
    shared: list[SharedDecl] = field(default_factory=list)
    shared_bytes: int = 0
    source_file: str = ""

    @property
    def exit_index(self) -> int:
        return len(self.blocks)

    def instructions(self) -> list[tuple[int, Instr]]:
        """All instructions in pc order, as (block index, instr); the pc is the list index. An instruction some
        blocks hold a copy of (`thread_jumps`) is listed once, with the first block that holds it."""
        table: dict = {}
        for b, pcs in zip(self.blocks, self.pc_lists()):
            for pc, i in zip(pcs, b.all_instrs()):
                table.setdefault(pc, (b.index, i))
        return [table[pc] for pc in range(len(table))]

    def pc_lists(self) -> list[tuple[int, ...]]:
        """The pc of each instruction (all_instrs) of each block: consecutive in block order, unless the blocks
        say otherwise (`Block.pcs`)."""
        if any(b.pcs for b in self.blocks):
            return [b.pcs for b in self.blocks]
        out, pc = [], 0
        for b in self.blocks:
            n = len(b.all_instrs())
            out.append(tuple(range(pc, pc + n)))
            pc += n
        return out

    def unthreaded(self) -> "Program":
        """The program before `thread_jumps` (itself where no jump was threaded): what a machine prepares when
        it is given a program another machine ran (a launch result's)."""
        if not any(b.pcs for b in self.blocks):
            return self
        return _with_blocks(self, [b.unthreaded or replace(b, pcs=()) for b in self.blocks])

    def first_pcs(self) -> list[int]:
        """Each block's first pc; for a block without instructions, the pc after the last one before it."""
        out, last = [], -1
        for pcs in self.pc_lists():
            out.append(pcs[0] if pcs else last + 1)
            last = pcs[-1] if pcs else last
        return out

    def dump(self) -> str:
        lines = [f".kernel {self.name}"]
        for b in self.blocks:
            lines.append(f"B{b.index}:")
            for i in b.all_instrs():
                lines.append(f"    {i!r}")
            t = b.term
            lines.append(f"    -> {t.kind} target=B{t.target} fall=B{t.fallthrough} reconv=B{t.reconv}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Control-flow graph analysis
# ---------------------------------------------------------------------------------------------


def prune_unreachable(blocks: list[Block]) -> list[Block]:
    """Drop blocks unreachable from block 0 and renumber; terminators are remapped in place."""
    exit_old = len(blocks)
    seen, stack = set(), [0]
    while stack:
        b = stack.pop()
        if b in seen or b == exit_old:
            continue
        seen.add(b)
        stack += blocks[b].term.successors(exit_old)
    keep = [b for b in blocks if b.index in seen]
    remap = {b.index: i for i, b in enumerate(keep)}
    remap[exit_old] = len(keep)
    for i, b in enumerate(keep):
        b.index = i
        t = b.term
        if t.target >= 0:
            t.target = remap[t.target]
        if t.fallthrough >= 0:
            t.fallthrough = remap[t.fallthrough]
    return keep


def immediate_post_dominators(blocks: list[Block]) -> list[int]:
    """Immediate post-dominator of every block (the exit pseudo-block is `len(blocks)`).

    Iterative dataflow on the reverse CFG (Cooper, Harvey & Kennedy, "A Simple, Fast Dominance
    Algorithm"). Blocks that cannot reach the exit (infinite loops) get the exit as their ipdom.
    """
    n = len(blocks)
    exit_ = n
    succ = {b.index: b.term.successors(exit_) for b in blocks}
    pred: dict[int, list[int]] = {i: [] for i in range(n + 1)}
    for b, ss in succ.items():
        for s in ss:
            pred[s].append(b)
    # Reverse post-order of the reverse CFG, starting from exit.
    order, seen = [], set()

    def dfs(v):
        stack = [(v, iter(pred[v]))]
        seen.add(v)
        while stack:
            node, it = stack[-1]
            nxt = next((p for p in it if p not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(pred[nxt])))

    dfs(exit_)
    rpo = list(reversed(order))
    num = {v: i for i, v in enumerate(rpo)}
    ipdom = {exit_: exit_}

    def intersect(a, b):
        while a != b:
            while num[a] > num[b]:
                a = ipdom[a]
            while num[b] > num[a]:
                b = ipdom[b]
        return a

    changed = True
    while changed:
        changed = False
        for v in rpo[1:]:
            cands = [s for s in succ[v] if s in ipdom]
            if not cands:
                continue
            new = cands[0]
            for s in cands[1:]:
                new = intersect(s, new)
            if ipdom.get(v) != new:
                ipdom[v] = new
                changed = True
    return [ipdom.get(i, exit_) for i in range(n)]


def fold_moves(program: Program) -> Program:
    """Copy propagation for traced programs: `t = op(...); v = mov t` becomes `v = op(...)` when the
    temporary t is used by that mov alone (the DSL's `var.set(expr)` and `var += x` produce this pair;
    a compiler would emit one instruction)."""
    uses: dict[int, int] = {}
    for b in program.blocks:
        for ins in b.all_instrs():
            for x in ins.src:
                if isinstance(x, Reg):
                    uses[x.index] = uses.get(x.index, 0) + 1
        if b.term.pred is not None:
            uses[b.term.pred.index] = uses.get(b.term.pred.index, 0) + 1
    for b in program.blocks:
        out: list[Instr] = []
        for ins in b.instrs:
            prev = out[-1] if out else None
            if (ins.op == "mov" and len(ins.src) == 1 and isinstance(ins.src[0], Reg) and prev is not None
                    and prev.dst == (ins.src[0],) and uses.get(ins.src[0].index) == 1
                    and ins.src[0].dtype == ins.dst[0].dtype and ins.src[0] != ins.dst[0]):
                out[-1] = Instr(prev.op, ins.dst, prev.src, prev.attrs, prev.loc)
                continue
            out.append(ins)
        b.instrs = out
    return program


# Longest basic block compiled as one function. Fully unrolled code (e.g. a kernel holding hundreds of
# values live in one straight line) makes one XLA computation so large that compiling it takes minutes
# or fails; chunks of this size compile quickly and cost one extra scheduling step per chunk.
MAX_BLOCK_INSTRUCTIONS = 256


def split_long_blocks(blocks: list[Block], limit: Optional[int] = None) -> list[Block]:
    """Cut every block of more than `limit` instructions into a chain of fall-through blocks of at most
    `limit` instructions (the last keeps the terminator) and renumber. Control flow and results are
    unchanged: a warp runs the chain straight through, so only the step count grows."""
    limit = limit or MAX_BLOCK_INSTRUCTIONS
    if all(len(b.instrs) <= limit for b in blocks):
        return blocks
    first: dict[int, int] = {}  # old index -> new index of its first chunk
    chunks: list[tuple[int, list[Instr], bool]] = []  # (old index, instructions, is the last chunk)
    for b in blocks:
        first[b.index] = len(chunks)
        parts = [b.instrs[i:i + limit] for i in range(0, len(b.instrs), limit)] or [[]]
        chunks += [(b.index, part, k == len(parts) - 1) for k, part in enumerate(parts)]
    first[len(blocks)] = len(chunks)  # the exit pseudo-block
    out = []
    for i, (old, part, last) in enumerate(chunks):
        if last:
            t = blocks[old].term
            term = Terminator(t.kind, first[t.target] if t.target >= 0 else -1,
                              first[t.fallthrough] if t.fallthrough >= 0 else -1, t.pred, t.negate, -1,
                              t.instr)
        else:
            term = Terminator(FALL, i + 1)
        out.append(Block(i, part, term))
    return out


def finalize(program: Program) -> Program:
    """Prune unreachable blocks, split very long ones, and attach reconvergence points to every
    conditional branch."""
    program.blocks = split_long_blocks(prune_unreachable(program.blocks))
    ipdom = immediate_post_dominators(program.blocks)
    for b in program.blocks:
        if b.term.kind == BRANCH:
            b.term.reconv = ipdom[b.index]
    return program


def _live_in(program: Program) -> dict[int, set]:
    """Registers live on entry to each block (backward dataflow over the CFG)."""
    exit_ = program.exit_index
    blocks = program.blocks
    live_in: dict[int, set] = {b.index: set() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            live = set()
            for sidx in b.term.successors(exit_):
                if sidx != exit_:
                    live |= live_in[sidx]
            if b.term.pred is not None:
                live.add(b.term.pred.index)
            for ins in reversed(b.instrs):
                live = (live - {d.index for d in ins.dst}) | {x.index for x in ins.src if isinstance(x, Reg)}
            if live != live_in[b.index]:
                live_in[b.index] = live
                changed = True
    return live_in


def recut(program: Program, pieces: list) -> Program:
    """The program with each block b replaced by the consecutive blocks `pieces[b]`, a list of
    (instructions, interpret) pairs whose instructions together are b's, in order: every piece but the last
    falls through to the next, the last keeps b's terminator. Branch targets are remapped; the order of the
    instructions (so every pc) is unchanged; each piece's origin is b's front-end block (per instruction
    where b was merged from several)."""
    first, k = {}, 0
    for b, parts in zip(program.blocks, pieces):
        first[b.index] = k
        k += len(parts)
    first[program.exit_index] = k
    blocks = []
    for b, parts in zip(program.blocks, pieces):
        done = 0
        for j, (instrs, interp) in enumerate(parts):
            idx = first[b.index] + j
            last = j + 1 == len(parts)
            term = _retarget(b.term, first) if last else Terminator(FALL, idx + 1)
            n = len(instrs) + (1 if last and term.instr is not None else 0)
            origins = tuple(b.origin_of(done + i) for i in range(n)) if b.origins else ()
            done += len(instrs)
            blocks.append(Block(idx, list(instrs), term, interpret=interp, origin=b.front_index, origins=origins))
    return _with_blocks(program, blocks)


def _retarget(t: Terminator, first: dict) -> Terminator:
    """`t` with its target, fall-through and reconvergence blocks renumbered by `first` (old -> new index)."""
    def remap(k: int) -> int:
        return first[k] if k >= 0 else k

    return replace(t, target=remap(t.target), fallthrough=remap(t.fallthrough), reconv=remap(t.reconv))


def _with_blocks(program: Program, blocks: list) -> Program:
    out = replace(program, blocks=blocks)
    # front-end extras (e.g. the PTX lowering's hidden arrays and local frame) stay with the program
    out.__dict__.update({k: v for k, v in program.__dict__.items() if k not in out.__dict__ and k != "_machines"})
    return out


def merge_straight(program: Program, limit: Optional[int] = None) -> Program:
    """The program with every block that only falls through into the next one merged with it, where that next
    block has no other predecessor and no branch reconverges at it, up to `limit` instructions a block
    (default MAX_BLOCK_INSTRUCTIONS): one machine step then runs both (a loop body and its increment, say).
    Instructions, their order (so every pc) and what each executes are unchanged: such a pair always runs
    with the same lanes, one after the other."""
    blocks, exit_ = program.blocks, program.exit_index
    preds = [0] * (exit_ + 1)
    reconv = set()
    for b in blocks:
        for t in b.term.successors(exit_):
            preds[t] += 1
        if b.term.kind == BRANCH:
            reconv.add(b.term.reconv)
    limit = limit or MAX_BLOCK_INSTRUCTIONS
    chains: list[list[Block]] = []
    length = 0  # instructions of the last chain
    for b in blocks:
        prev = chains[-1][-1] if chains else None
        if (prev is not None and length + len(b.instrs) <= limit
                and prev.term.kind == FALL and prev.term.instr is None and prev.term.target == b.index
                and preds[b.index] == 1 and b.index not in reconv and not prev.interpret and not b.interpret):
            chains[-1].append(b)
            length += len(b.instrs)
        else:
            chains.append([b])
            length = len(b.instrs)
    if len(chains) == len(blocks):
        return program
    first = {}
    for k, chain in enumerate(chains):
        for b in chain:
            first[b.index] = k
    first[exit_] = len(chains)
    out = []
    for k, chain in enumerate(chains):
        term = _retarget(chain[-1].term, first)
        instrs = [i for b in chain for i in b.instrs]
        origins = tuple(b.origin_of(j) for b in chain for j in range(len(b.all_instrs()))) if len(chain) > 1 \
            else chain[0].origins
        out.append(Block(k, instrs, term, interpret=chain[0].interpret, origin=chain[0].front_index, origins=origins))
    return _with_blocks(program, out)


def thread_jumps(program: Program, jumper_ok=lambda ins: True, head_ok=lambda ins: True, head_limit: int = 4,
                 limit: Optional[int] = None) -> Program:
    """The program with every loop's back edge threaded into the loop's test: a block that jumps (or falls)
    back to a block ending in a conditional branch also runs that block's instructions and ends in its branch, so
    one machine step runs the body and the test of a trip. The jump stays in the block as an instruction that
    does nothing; the copies keep their pcs (`Block.pcs`), so every instruction counts as before.

    Only where the lanes that jump always run the head alone: no branch reconverges at the head (lanes arriving
    there from elsewhere would merge with them first) and neither block is interpreted. Under the reconvergence
    stack that makes the threaded program execute, count and fault exactly as the original. Each threaded jump
    compiles its head once more, so only backward jumps (a step saved every trip, not once), into heads of at
    most `head_limit` instructions that all pass `head_ok`, from blocks whose instructions pass `jumper_ok`, and
    of at most `limit` instructions together."""
    blocks, exit_ = program.blocks, program.exit_index
    reconv = {b.term.reconv for b in blocks if b.term.kind == BRANCH}
    pcs = program.pc_lists()
    limit = limit or MAX_BLOCK_INSTRUCTIONS
    out, threaded = [], 0
    for b in blocks:
        t = b.term
        head = blocks[t.target] if t.kind in (JUMP, FALL) and 0 <= t.target <= b.index else None
        if (head is None or head.term.kind != BRANCH or head.index in reconv or b.interpret or head.interpret
                or head.index == b.index or len(head.instrs) > head_limit
                or len(b.instrs) + len(head.all_instrs()) + 1 > limit
                or not all(map(jumper_ok, b.instrs)) or not all(map(head_ok, head.instrs))):
            out.append(replace(b, pcs=pcs[b.index]))
            continue
        mine = b.all_instrs()
        out.append(Block(b.index, mine + head.instrs, replace(head.term), origin=b.front_index,
                         origins=tuple(b.origin_of(j) for j in range(len(mine)))
                         + tuple(head.origin_of(j) for j in range(len(head.all_instrs()))),
                         pcs=pcs[b.index] + pcs[head.index], unthreaded=b))
        threaded += 1
    return _with_blocks(program, out) if threaded else program


def cross_block_registers(program: Program) -> list[int]:
    """Registers whose value flows from one basic block to another (live on entry to some block).

    Only these need to be machine state; every other register lives and dies inside one block."""
    out = set()
    for live in _live_in(program).values():
        out |= live
    return sorted(out)


def estimate_registers(program: Program) -> int:
    """Peak number of live 32-bit registers per thread (64-bit values count 2, predicates 0): the
    documented estimate of a DSL kernel's register count for occupancy (a compiler's allocation differs;
    pass `regs=` to launch to use the real one)."""
    exit_ = program.exit_index
    width = {r.index: (0 if r.dtype.kind == "pred" else max(1, r.dtype.bits // 32)) for r in program.regs}
    live_in = _live_in(program)
    peak = 0
    for b in program.blocks:
        live = set()
        for sidx in b.term.successors(exit_):
            if sidx != exit_:
                live |= live_in[sidx]
        if b.term.pred is not None:
            live.add(b.term.pred.index)
        peak = max(peak, sum(width[r] for r in live))
        for ins in reversed(b.instrs):
            d = {x.index for x in ins.dst}
            peak = max(peak, sum(width[r] for r in live | d))
            live = (live - d) | {x.index for x in ins.src if isinstance(x, Reg)}
        peak = max(peak, sum(width[r] for r in live))
    return peak
