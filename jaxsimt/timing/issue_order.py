"""The order a warp issues its instructions in: ptxas's scheduling of global loads, carried across the branches it
if-converts.

The PTX front end moves each global load up its basic block as ptxas does (`jaxsimt.ptx.schedule`). A load behind
a bounds check (`s[k] = i < n ? a[i] : 0`) sits in a block of its own, after a branch over at most
`trace.IF_CONVERT_MAX` instructions that ptxas turns into predicated instructions (`trace.folded_mask`), and the
checks of an unrolled loop follow each other. ptxas then schedules their predicated loads together: the H200's
SASS of the GEMM ladder's register_tiled issues four LDGs, then four STSs, where its PTX alternates ld.global
and st.shared, each pair behind a branch of its own (jaxsimt/data/h200/sass/gemm_ladder.sass). In PTX order a
warp would wait for each load before the next one: four latencies where the hardware pays one.

So the replay issues a region's instructions in the order of `ranks`: a region is a run of blocks that follow
each other in the program, each entered only from the one before (falling through, or jumping over it by an
if-converted branch); in a region with such a branch each global load moves up by the rule of
`jaxsimt.units.loadorder`, taking along the branches that guard it and the instructions computing its address
and their predicates. The functional run is not changed, only the order the timing model issues in.
"""
from __future__ import annotations

import numpy as np

from jaxsimt.program import BRANCH, FALL, Program, reads, writes
from jaxsimt.units import loadorder


def regions(prog: Program, folded: np.ndarray) -> tuple[np.ndarray, list, dict]:
    """(region [NI] int: the region of each instruction; the pc lists of the regions that hold an if-converted
    branch (`folded` at a block's branch); {pc of such a branch: the pcs it jumps over}). Every instruction a
    region of its own, and none listed, where blocks share instructions (threaded jumps)."""
    pcl = prog.pc_lists()
    NI = len(prog.instructions())
    if any(b.pcs for b in prog.blocks):
        return np.arange(NI), [], {}
    first = prog.first_pcs()
    branch_pc = [pcs[-1] if b.term.instr is not None and pcs else -1 for b, pcs in zip(prog.blocks, pcl)]
    converted = {p: range(p + 1, first[b.term.target]) for b, p in zip(prog.blocks, branch_pc)
                 if b.term.kind == BRANCH and p >= 0 and folded[p]}
    # blocks entered other than from the block before them (a branch's or a jump's target, not an if-converted one's)
    entered = {b.term.target for b, p in zip(prog.blocks, branch_pc) if b.term.kind != FALL and p not in converted}
    region = np.zeros(NI, np.int64)
    groups: list = []
    for i, (b, pcs) in enumerate(zip(prog.blocks, pcl)):
        prev = prog.blocks[i - 1].term if i else None
        joins = prev is not None and i not in entered and (
            (prev.kind == FALL and prev.target == i) or (branch_pc[i - 1] in converted and prev.fallthrough == i))
        if not joins:
            groups.append([])
        region[list(pcs)] = len(groups) - 1
        groups[-1].extend(pcs)
    return region, [g for g in groups if any(pc in converted for pc in g)], converted


def ranks(prog: Program, folded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank [NI] int, region [NI] int): each instruction's place in its region's issue order (its pc where nothing
    moved), and its region. Within a region the instructions a warp runs issue in the order of their ranks."""
    instrs = [ins for _, ins in prog.instructions()]
    region, todo, converted = regions(prog, folded)
    rank = np.arange(len(instrs))
    # an if-converted branch orders the instructions it jumps over: they read what it writes (a register of its
    # own, numbered below the program's), as predicated instructions read their predicate; and, as predicated
    # instructions, they read their destinations (lanes whose predicate fails keep the old values)
    guard: dict = {}
    for pc, over in converted.items():
        for q in over:
            guard.setdefault(q, set()).add(-1 - pc)

    def rd(pc):
        return reads(instrs[pc]) | (guard[pc] | writes(instrs[pc]) if pc in guard else set())

    def wr(pc):
        return writes(instrs[pc]) | ({-1 - pc} if pc in converted else set())

    def stops(pc):
        return pc not in converted and loadorder.stops(instrs[pc])

    def pure(pc):  # an instruction an if-converted branch jumps over is predicated: it moves with its predicate
        return pc in converted or loadorder.pure(instrs[pc])

    for pcs in todo:
        body = list(pcs)
        for pc in [p for p in pcs if loadorder.movable(instrs[p])]:
            body = loadorder.hoist(body, body.index(pc), rd, wr, stops, pure)
        where = {pc: k for k, pc in enumerate(body)}
        rank[pcs] = pcs[0] + np.asarray([where[pc] for pc in pcs])
    return rank, region


def reorder(pcs: np.ndarray, rank: np.ndarray, region: np.ndarray) -> np.ndarray:
    """Per-warp streams pcs [W, L] (-1 padded) in issue order: each run of a warp's stream through one region (its
    pcs rising; a loop's next iteration starts a new run) sorted by rank."""
    valid = pcs >= 0
    safe = np.where(valid, pcs, 0)
    reg = np.where(valid, region[safe], -1)
    key = np.where(valid, rank[safe], 0)
    prev_reg = np.pad(reg, ((0, 0), (1, 0)), constant_values=-2)[:, :-1]
    prev_pc = np.pad(pcs, ((0, 0), (1, 0)), constant_values=np.iinfo(np.int32).max)[:, :-1]
    run = np.cumsum(((reg != prev_reg) | (pcs <= prev_pc)).ravel())
    order = np.lexsort((key.ravel(), run))
    return pcs.ravel()[order].reshape(pcs.shape)
