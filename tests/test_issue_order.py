"""The timing model's issue order (jaxsimt.timing.issue_order): global loads behind if-converted bounds checks
issue together, as in the H200's SASS of the GEMM ladder, and the order keeps every dependence."""
from __future__ import annotations

import importlib
import os
import re

import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt.kernels.collection import GEMM_ENTRIES, PTX
from jaxsimt.program import reads, writes
from jaxsimt.timing import issue_order
from jaxsimt.timing import trace as tr
from jaxsimt.units import isa

lower_mod = importlib.import_module("jaxsimt.ptx.lower")
# the repository's file: the SASS listings are not installed with the package
SASS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jaxsimt", "data", "h200", "sass",
                    "gemm_ladder.sass")


def _sass_loads_before_first_store(kernel: str) -> int:
    """LDGs of the kernel's SASS before its first STS (the first tile's loads the hardware has in flight at once)."""
    ops, on = [], False
    for line in open(SASS):
        m = re.search(r"Function : (\S+)", line)
        if m:
            on = m.group(1) == kernel
        elif on:
            m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
            if m:
                ops.append(m.group(1))
    return ops[:ops.index("STS")].count("LDG")


def _static_order(prog):
    """The program's pcs in the order a warp that runs every block issues them, and the program's instructions."""
    folded = tr.folded_mask(prog)
    rank, region = issue_order.ranks(prog, folded)
    return sorted(range(len(rank)), key=lambda pc: (region[pc], rank[pc])), [i for _, i in prog.instructions()]


@pytest.mark.parametrize("rung", ["smem_tiled", "coarsened", "register_tiled", "wmma"])
def test_tile_loads_issue_together_as_in_the_sass(rung):
    """Each tiled rung's PTX alternates a bounds-checked ld.global and its st.shared; ptxas if-converts the checks
    and issues several LDGs before the first STS (2, 6, 4 and 4). The model's order has at least as many; the
    PTX's has one."""
    prog = lower_mod.lower(P.load_module(f"{PTX}/gemm_ladder.ptx"), GEMM_ENTRIES[rung])
    order, ins = _static_order(prog)

    def before_first_store(seq):
        kinds = [("ld" if isa.memory(ins[pc]) == "read" and ins[pc].operation.attr("space") == "global" else
                  "st" if isa.memory(ins[pc]) == "write" and ins[pc].operation.attr("space") == "shared" else "")
                 for pc in seq]
        return kinds[:kinds.index("st")].count("ld")

    sass = _sass_loads_before_first_store(GEMM_ENTRIES[rung])
    assert sass >= 2
    assert before_first_store(range(len(ins))) == 1
    assert before_first_store(order) >= sass


@pytest.mark.parametrize("rung", sorted(GEMM_ENTRIES))
def test_order_keeps_every_dependence(rung):
    """In the static issue order every instruction still comes after the last instruction before it in the
    program that writes a register it reads, and no two accesses outside the shared space change order."""
    prog = lower_mod.lower(P.load_module(f"{PTX}/gemm_ladder.ptx"), GEMM_ENTRIES[rung])
    order, ins = _static_order(prog)
    _, region, = issue_order.ranks(prog, tr.folded_mask(prog))
    pos = {pc: k for k, pc in enumerate(order)}
    for pc in range(len(ins)):
        for q in range(pc - 1, -1, -1):
            if region[q] != region[pc]:
                break
            if writes(ins[q]) & reads(ins[pc]):
                assert pos[q] < pos[pc], (pc, q)
                break
    far = [pc for pc in range(len(ins)) if isa.memory(ins[pc]) and ins[pc].operation.attr("space") != "shared"]
    assert [pos[pc] for pc in far] == sorted(pos[pc] for pc in far)


def test_reorder_sorts_each_run_and_nothing_across_runs():
    """Streams: a run through a region sorts by rank; a loop's next iteration (pcs falling) and another region
    start new runs; padding stays at the end."""
    rank = np.array([0, 2, 1, 3, 4])
    region = np.array([0, 0, 0, 0, 1])
    pcs = np.array([[0, 1, 2, 0, 1, 2, 3, 4, -1, -1],
                    [1, 2, 4, 2, -1, -1, -1, -1, -1, -1]], np.int32)
    out = issue_order.reorder(pcs, rank, region)
    assert out.tolist() == [[0, 2, 1, 0, 2, 1, 3, 4, -1, -1], [2, 1, 4, 2, -1, -1, -1, -1, -1, -1]]
