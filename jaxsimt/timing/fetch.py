"""Instruction fetch: the floor a kernel's code size sets on how fast a scheduler issues.

A scheduler issues from its instruction caches. While the code it runs round and round fits the first
level (`Arch.icache_bytes[0]`), fetch keeps up with one instruction a cycle; a loop larger than that streams
from the second level, and one larger than both from L2, and the scheduler then issues at most one
instruction every `Arch.icache_miss_cpi[level][w]` cycles, w the warps per scheduler running the code
(they share the lines fetched). Both are H200 measurements (`kernels/cuda/micro_issue.cu`, "icache": loops of
2 to 512 KiB of SASS with 1 to 8 warps per scheduler; docs/timing.md "Instruction fetch").

The code that streams is an instruction's innermost loop (a backward branch to a block at or before it, and
every block between), or the whole kernel for instructions in no loop; its size is its issued instructions
times `Arch.instruction_bytes`. PTX instructions stand for SASS ones (ptxas emits 0.7-0.85 as many in the
ladder's loops), so a loop near a capacity may be placed one level too far.
"""
from __future__ import annotations

import numpy as np

from jaxsimt.arch import Arch
from jaxsimt.program import Program


def loop_ranges(program: Program) -> list[tuple[int, int]]:
    """[(first pc, last pc)] of every loop: from the first pc of a backward branch's or jump's target block to
    the branch."""
    pcl = program.pc_lists()
    first = [p[0] if p else None for p in pcl]
    out = []
    for b, pcs in zip(program.blocks, pcl):
        t = b.term
        if t.instr is not None and 0 <= t.target <= b.index and pcs and first[t.target] is not None:
            out.append((first[t.target], pcs[-1]))
    return out


def code_bytes(program: Program, arch: Arch, issued: np.ndarray) -> np.ndarray:
    """[NI] bytes of the code each instruction's scheduler streams: its innermost loop's issued
    instructions, or the whole kernel's outside loops, times `instruction_bytes`."""
    n = len(issued)
    size = np.cumsum(np.concatenate([[0], np.asarray(issued, np.int64)]))
    out = np.full(n, size[-1], np.int64)
    span = np.full(n, n + 1, np.int64)
    for lo, hi in loop_ranges(program):
        inside = np.zeros(n, bool)
        inside[lo:hi + 1] = True
        narrower = inside & (hi - lo < span)
        out[narrower] = size[hi + 1] - size[lo]
        span[narrower] = hi - lo
    return out * arch.instruction_bytes


def fetch_cycles(program: Program, arch: Arch, warps_per_scheduler: float,
                 issued: "np.ndarray | None" = None) -> np.ndarray:
    """[NI] float: the fewest cycles per issue instruction fetch allows each static instruction (1 while its
    code fits the first-level cache). issued [NI] bool: the instructions the hardware issues (default all)."""
    n = len(program.instructions())
    issued = np.ones(n, bool) if issued is None else np.asarray(issued, bool)
    out = np.ones(n, np.float64)
    if not arch.icache_bytes:
        return out
    code = code_bytes(program, arch, issued)
    level = np.searchsorted(np.asarray(arch.icache_bytes), code, side="left")  # 0: fits the first level
    warps = np.asarray(arch.icache_warps, np.float64)
    for lv, cpi in enumerate(arch.icache_miss_cpi, start=1):
        # between the warp counts measured: linear; beyond: the nearest
        out[level == lv] = float(np.interp(warps_per_scheduler, warps, np.asarray(cpi, np.float64)))
    return out
