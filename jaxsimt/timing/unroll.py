"""The loops ptxas unrolls, as the timing model issues them.

nvcc unrolls a counted loop by 4 in PTX (a main loop stepping its counter by 4, then a remainder loop marked
`.pragma "nounroll"`), and ptxas unrolls that main loop by 4 again: in the H200's SASS of the suite corpus and
the GEMM ladder (jaxsimt/data/h200/suites/sass, jaxsimt/data/h200/sass), every single-block loop whose exit test
compares a counter stepped by a constant with a bound the loop does not change, and whose body is small, has
four copies of its PTX body with renamed registers and one exit test. PolyBench's gemm, 2mm, 3mm, atax, bicg,
mvt, syrk, covariance and correlation, gramschmidt, the ladder's two naive rungs, CUDA samples' scalarProd and
mergeHistogram256, Rodinia's invert_mapping and SHOC's scalar CSR SpMV issue 16 or 32 loads an iteration there,
where the PTX issues 4 or 8; loops over a grid stride (a register step: the reductions), with larger bodies
(syr2k's 16 loads, gesummv's 24, hotspot's 24, kmeans), with a barrier (the tiled GEMMs) or marked
`nounroll` keep theirs. A warp issuing the PTX's order waits for each group of loads in turn: four latencies
where the hardware pays one.

So the replay issues each run of UNROLL consecutive iterations of such a loop as ptxas's unrolled body: the
iterations are copies of the loop's instructions (new static instructions after the program's, `origin` their
original), whose registers are renamed per copy so that a later copy's loads do not wait for an earlier copy's
(the last copy writes the original registers, which the code after the loop and the next run read); the exit
tests of all copies but the last are folded; and the loads move up the whole unrolled body by the rule of
`jaxsimt.units.loadorder`. Iterations left over at the end of a run (fewer than UNROLL) issue as the loop itself,
as ptxas's remainder does. The functional run is not changed.
"""
from __future__ import annotations

import numpy as np

from jaxsimt.program import BRANCH, FALL, JUMP, Imm, Program, Reg, writes
from jaxsimt.units import isa, loadorder

UNROLL = 4  # the copies of the loop body in ptxas's unrolled loop
# The largest loop body (instructions of the lowered loop, its branch included) ptxas unrolls: in the corpus's SASS
# every counted loop of at most 36 is unrolled (gramschmidt's kernel3, 12 loads), every one of 48 or more is not
# (Parboil sgemm's inner loop, 48; spmv_jds, gesummv, syr2k, 49-50; hotspot, 115)
UNROLL_MAX_BODY = 40


def _counted(instrs: list, pred) -> bool:
    """Whether a loop body's exit test (its branch's predicate `pred`) compares a counter the body steps by a
    constant (r = r +/- imm) with an immediate or a register the body does not write: a trip count ptxas can
    compute on entry."""
    written: dict = {}
    for k, ins in enumerate(instrs):
        for r in writes(ins):
            written.setdefault(r, []).append(k)
    if pred is None or pred.index not in written:
        return False
    test = instrs[written[pred.index][-1]].operation
    if not isa.is_compare(test):
        return False
    stepped = 0
    for r in (x for x in test.src if isinstance(x, Reg) and x.index in written):
        if len(written[r.index]) != 1:
            return False
        step = instrs[written[r.index][0]].operation
        srcs = list(step.src)
        if not (isa.is_offset(step) and len(srcs) == 2 and any(isinstance(x, Imm) for x in srcs)
                and any(isinstance(x, Reg) and x.index == r.index for x in srcs)):
            return False
        stepped += 1
    return stepped > 0


def loops(prog: Program, max_body: int = UNROLL_MAX_BODY) -> list:
    """The loops ptxas unrolls, as lists of their pcs: single-block loops of the PTX (a run of blocks falling
    into each other, entered only at its first, whose last branches back to the first: the machine may cut a
    PTX block into several), counted (`_counted`), of at most UNROLL_MAX_BODY instructions, with no barrier,
    fence, warp-synchronous or control instruction but the back branch, and no `nounroll` mark. None where
    blocks share instructions (threaded jumps)."""
    if any(b.pcs for b in prog.blocks):
        return []
    pcl = prog.pc_lists()
    entered = set()  # blocks entered other than by falling from the block before
    for b in prog.blocks:
        t = b.term
        if t.kind in (BRANCH, JUMP):
            entered.add(t.target)
        if t.kind == BRANCH and t.fallthrough != b.index + 1:
            entered.add(t.fallthrough)
    out = []
    for j, b in enumerate(prog.blocks):
        t = b.term
        if t.kind != BRANCH or t.instr is None or not 0 <= t.target <= j:
            continue
        i = t.target
        chain = prog.blocks[i:j + 1]
        if any(c.term.kind != FALL or c.term.target != c.index + 1 for c in chain[:-1]):
            continue
        if any(c.index in entered for c in chain[1:]):
            continue
        pcs = [pc for c in chain for pc in pcl[c.index]]
        instrs = [ins for c in chain for ins in c.all_instrs()]
        body = instrs[:-1]
        if len(instrs) > max_body or any(ins.attr("nounroll") for ins in instrs):
            continue
        if any(isa.is_fence(x) or isa.is_warp_sync(x) or isa.is_warp_sync(x.operation)
               or isa.timing_class(x) in ("barrier", "control") for x in body):
            continue
        if _counted(body, t.pred):
            out.append(pcs)
    return out


def copies(prog: Program, dst: np.ndarray, src: np.ndarray, n_regs: int, folded: np.ndarray,
           rank: np.ndarray, region: np.ndarray) -> dict:
    """The unrolled bodies' static instructions, numbered after the program's NI. Returns origin [NI'] (the program
    pc of every static instruction, the program's own first), dst [NI', ND] / src [NI', NS] (register slots,
    renamed per copy), n_regs (the slots, renamed ones included), folded [NI'], loops {loop number (`loops`):
    (its copies' pcs [UNROLL, n], its own pcs in the program [n])}, and rank / region [NI'] extending the
    program's (`issue_order.ranks`) to the copies: each unrolled body a region of its own, a copy instruction's
    rank the body's first pc plus its place in the body's issue order.

    Copy k (0..UNROLL-1) writes the loop's register slots renamed for k, the last copy the original ones. A read
    of a slot the loop writes reads the same copy's write where the iteration wrote it before, else the copy
    before's (copy 0 the last copy's: the original slots, written by the run's previous body or by the code
    before the loop)."""
    NI = dst.shape[0]
    instrs = [ins for _, ins in prog.instructions()]
    origin, dsts, srcs, fold, ranks, regions = [np.arange(NI)], [dst], [src], [folded], [rank], [region]
    table = {}
    next_pc, slots = NI, n_regs
    for b, own in enumerate(loops(prog)):
        pcs = np.asarray(own)
        n = len(pcs)
        wslots = sorted({int(x) for x in dst[pcs].ravel() if x >= 0})
        name = [{x: slots + k * len(wslots) + i for i, x in enumerate(wslots)} for k in range(UNROLL - 1)]
        name.append({x: x for x in wslots})
        slots += (UNROLL - 1) * len(wslots)
        cd, cs = [], []
        for k in range(UNROLL):
            d, s_ = np.full_like(dst[pcs], -1), np.full_like(src[pcs], -1)
            mine: set = set()  # the slots this copy wrote so far
            for j, pc in enumerate(pcs):
                got = [(name[k] if x in mine else name[(k - 1) % UNROLL]).get(x, x)
                       for x in map(int, src[pc]) if x >= 0]
                s_[j, :len(got)] = got
                put = [name[k][x] for x in map(int, dst[pc]) if x >= 0]
                d[j, :len(put)] = put
                mine |= {int(x) for x in dst[pc] if x >= 0}
            f = folded[pcs].copy()
            if k < UNROLL - 1:
                f[-1] = True  # the unrolled body has one exit test, the last copy's
            cd.append(d)
            cs.append(s_)
            fold.append(f)
            origin.append(pcs)
        dsts += cd
        srcs += cs
        body = np.arange(next_pc, next_pc + UNROLL * n).reshape(UNROLL, n)
        table[b] = (body, pcs)
        ranks.append(next_pc + _body_order([instrs[pc] for pc in pcs], np.concatenate(cd), np.concatenate(cs)))
        regions.append(np.full(UNROLL * n, int(region.max(initial=-1)) + 1 + b))
        next_pc += UNROLL * n
    return {"origin": np.concatenate(origin), "dst": np.concatenate(dsts), "src": np.concatenate(srcs),
            "n_regs": slots, "folded": np.concatenate(fold), "loops": table,
            "rank": np.concatenate(ranks), "region": np.concatenate(regions)}


def _body_order(body: list, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """[UNROLL * n] each instruction of an unrolled body's place in its issue order: its global loads moved up by
    the rule of `jaxsimt.units.loadorder`, over the renamed register slots (dst / src [UNROLL * n, ...]); the
    copies' exit tests, folded, stop nothing."""
    n = len(body)
    items = list(range(UNROLL * n))
    ins = lambda i: body[i % n]  # noqa: E731
    exit_test = lambda i: i % n == n - 1 and i < (UNROLL - 1) * n  # noqa: E731
    rd = lambda i: {int(x) for x in src[i] if x >= 0}  # noqa: E731
    wr = lambda i: {int(x) for x in dst[i] if x >= 0}  # noqa: E731
    stops = lambda i: not exit_test(i) and loadorder.stops(ins(i))  # noqa: E731
    pure = lambda i: exit_test(i) or loadorder.pure(ins(i))  # noqa: E731
    for i in [i for i in items if loadorder.movable(ins(i))]:
        items = loadorder.hoist(items, items.index(i), rd, wr, stops, pure)
    rank = np.empty(UNROLL * n, np.int64)
    rank[items] = np.arange(UNROLL * n)
    return rank


def streams(pcs: np.ndarray, loops_: dict) -> np.ndarray:
    """Per-warp streams pcs [W, L] (-1 padded) with each run of consecutive iterations of an unrolled loop issued
    as ptxas's unrolled body: the run's iterations in groups of UNROLL, the k-th of a group as copy k
    (`copies`); the iterations left over at the run's end as the loop itself (ptxas's remainder)."""
    out = pcs.copy()
    W, L = pcs.shape
    flat = out.reshape(-1)
    for body, own in loops_.values():
        n = len(own)
        starts = np.flatnonzero(pcs.reshape(-1) == own[0])
        if not starts.size:
            continue
        col = starts % L
        prev = np.where(col > 0, pcs.reshape(-1)[np.maximum(starts - 1, 0)], -1)
        first = prev != own[-1]  # an iteration not right after the loop's own branch starts a run
        run = np.cumsum(first) - 1
        index = np.arange(len(starts)) - np.flatnonzero(first)[run]  # the iteration's place in its run
        length = np.bincount(run)[run]
        full = index < (length // UNROLL) * UNROLL
        k = index % UNROLL
        for j in range(n):
            flat[starts[full] + j] = body[k[full], j]
    return out
