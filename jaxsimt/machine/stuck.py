"""What a run that stops without finishing reports: the step budget (a livelock: which warps still run,
the pcs the last steps cycled through, the likely cause) and, under ITS, a deadlock (which lanes wait at
which barrier or warp sync). Both read `Machine.run_wave`'s last result and are turned into the text of
the launch's exception."""
from __future__ import annotations

import os

import numpy as np

from jaxsimt.units import isa
from jaxsimt.machine import its
from jaxsimt.machine.core import Machine


def _is_atomic(ins) -> bool:
    return isa.memory(ins) == "atomic"


def stuck_report(m: Machine, geo, grid, wave: int, where, cta_table) -> str:
    """The tail of a step-budget error: the unfinished warps (block, warp, pcs), the instructions the
    last steps cycled through, and the likely cause. `where` is `run_wave`'s last result: (pc [W] top of
    stack, or [W, L] per-lane pcs under ITS; -1 finished), (stack depth or pc groups [W]), recent blocks,
    steps; `cta_table` [waves * ctas_per_wave]: item * blocks + block id of every block slot."""
    if where is None:
        return "; raise max_steps= if the kernel is just long"
    pcs, depth, recent, steps = (np.asarray(x) for x in where)
    its_mode = pcs.ndim == 2
    stuck = np.nonzero((pcs >= 0).any(axis=1) if its_mode else pcs >= 0)[0]
    n, R = int(steps), len(recent)
    cycle = sorted({int(recent[i % R]) for i in range(max(0, n - R), n)} - {-1})
    instrs = m.program.instructions()

    cyc_pcs = sorted({pc for b in cycle for pc in m.pcs[b]})
    ranges, start = [], None
    for i, pc in enumerate(cyc_pcs):
        start = pc if start is None else start
        if i + 1 == len(cyc_pcs) or cyc_pcs[i + 1] != pc + 1:
            ranges.append(f"{start}" if start == pc else f"{start}-{pc}")
            start = None
    lines = []
    for pc in cyc_pcs:
        loc = instrs[pc][1].loc
        if loc is not None and loc.line:
            s = f"{os.path.basename(loc.file)}:{loc.line}" + (f" `{loc.text.strip()}`" if loc.text.strip() else "")
            if s not in lines:
                lines.append(s)
    wpb, cpw = geo.warps_per_block, geo.ctas_per_wave
    gx, gy, _ = grid
    who = []
    for w in (int(v) for v in stuck[:4]):
        n_ctas = grid[0] * grid[1] * grid[2]
        item, cta = divmod(int(cta_table[wave * cpw + w // wpb]), n_ctas)
        blk = (cta % gx, (cta // gx) % gy, cta // (gx * gy))
        if geo.items > 1:
            blk = f"{blk} of batch item {item}"
        if its_mode:
            at = sorted({m.first_pcs[int(b)] for b in pcs[w] if b >= 0})
            who.append(f"warp {w % wpb} of block {blk} (pc groups at pcs {', '.join(map(str, at))})")
        else:
            who.append(f"warp {w % wpb} of block {blk} (stack depth {int(depth[w])}, running at pc "
                       f"{m.first_pcs[int(pcs[w])]})")
    more = f" and {len(stuck) - 4} more warps" if len(stuck) > 4 else ""
    msg = f"; still running: {'; '.join(who)}{more}"
    if ranges:
        msg += f"; the last {min(n, R)} steps cycled through pcs {', '.join(ranges)}"
        if lines:
            msg += f" ({'; '.join(lines[:6])})"
    atomics = any(_is_atomic(instrs[pc][1]) for pc in cyc_pcs)
    diverged = (not its_mode) and bool(np.any(depth[stuck] > 1)) if len(stuck) else False
    # warps whose running block is not in the cycle: ready but never scheduled (or waiting at a barrier)
    starved = [] if its_mode else [int(w) % wpb for w in stuck if int(pcs[w]) not in cycle]
    if starved and atomics:
        cause = (f"likely cause: warps spin (on a lock?) while warp(s) {', '.join(map(str, starved[:4]))} of their "
                 f"block stand elsewhere (the lock's holder?): either the budget ran out while a contended lock "
                 f"was being passed on (raise max_steps; waiting warps are aged, so the holder does get steps) "
                 f"or the holder waits for something the spinning warps never do (e.g. a barrier)")
    elif diverged and atomics:
        cause = ("likely cause: an intra-warp lock (spin lock): lanes of one warp spin on a lock held by another "
                 "lane of the same warp, which under stack-based reconvergence cannot run until the spinning "
                 "lanes leave their loop (a livelock). Launch with mode='its' (Independent Thread Scheduling, "
                 "Volta and later) or release the lock inside the loop that acquires it")
    elif diverged:
        cause = ("likely cause: diverged lanes of one warp wait for each other (e.g. on a flag in memory), which "
                 "the reconvergence stack cannot interleave; mode='its' (Volta and later) can. Otherwise raise "
                 "max_steps= if the kernel is just long")
    else:
        cause = ("likely cause: a loop whose exit condition never holds (a runaway loop, or waiting for something "
                 "no thread will do); raise max_steps= if the kernel is just long")
    return f"{msg}. {cause}"


def deadlock_report(m: Machine, geo, grid, wave: int, where, cta_table) -> str:
    """The tail of an ITS deadlock error: for each stuck warp, which lanes wait where (at a warp-synchronous
    block for missing member lanes, or at bar.sync for the rest of the thread block)."""
    if where is None or not isinstance(m, its.ItsMachine):
        return ""
    pcs = np.asarray(where[0])
    if pcs.ndim != 2:
        return ""
    wpb, cpw = geo.warps_per_block, geo.ctas_per_wave
    n_ctas = grid[0] * grid[1] * grid[2]
    gx, gy, _ = grid
    parts = []
    for w in np.nonzero((pcs >= 0).any(axis=1))[0][:4]:
        item, cta = divmod(int(cta_table[wave * cpw + int(w) // wpb]), n_ctas)
        blk = (cta % gx, (cta // gx) % gy, cta // (gx * gy))
        bits = lambda sel: int(sum(1 << int(k) for k in np.nonzero(sel)[0]))  # noqa: E731
        live = bits(pcs[w] >= 0)
        groups = []
        for b in sorted({int(v) for v in pcs[w] if v >= 0}):
            lanes = bits(pcs[w] == b)
            pc0 = m.first_pcs[b]
            if b in m.sync:
                ins = m.program.blocks[b].instrs[0]
                loc = f" ({ins.loc})" if ins.loc else ""
                groups.append(f"lanes {lanes:#010x} wait at the warp-synchronous {ins.op} at pc {pc0}{loc} for "
                              f"member lanes {m.sync[b] & live & ~lanes:#010x}")
            else:
                groups.append(f"lanes {lanes:#010x} wait at bar.sync (continuing at pc {pc0})")
        parts.append(f"warp {int(w) % wpb} of block {blk}: " + "; ".join(groups))
    return " — " + " | ".join(parts)
