"""Straight runs of blocks run as one machine step (`program.merge_straight`): the same instructions in the
same order, the same results and counters instruction by instruction, fewer steps."""
from __future__ import annotations

import numpy as np
import pytest

from jaxsimt.apps import conformance
from jaxsimt.machine import core as machine_mod
from jaxsimt.kernels import gemm
from jaxsimt.program import BRANCH, merge_straight
from runs import assert_same_run, launch_fresh, naive_gemm_case


def _flat(p):
    return [ins for b in p.blocks for ins in b.all_instrs()]


def test_a_loop_body_and_its_increment_become_one_block():
    p = gemm.BY_NAME["naive_coalesced"].kernel().program
    m = merge_straight(p)
    assert _flat(m) == _flat(p)  # the same instructions at the same pcs
    assert len(m.blocks) == len(p.blocks) - 1
    # every instruction still names the front end's block it came from
    assert [b.origin_of(j) for b in m.blocks for j in range(len(b.all_instrs()))] == \
        [b.index for b in p.blocks for _ in b.all_instrs()]
    # the loop's body (its two loads and the fma) and its increment, which jumps back to the test
    (body,) = [b for b in m.blocks if any(i.op == "fma" for i in b.instrs)]
    assert body.instrs[-1].op == "add" and body.term.kind == "jump" and body.term.target < body.index


def test_nothing_is_merged_into_a_block_other_paths_reach():
    """A block with another predecessor, or where a branch reconverges, starts a block of its own."""
    for name, (kind, case) in conformance.cases().items():
        if kind != "dsl":
            continue
        p = case.kernel.program
        m = merge_straight(p)
        assert _flat(m) == _flat(p), name
        starts = {b.origin_of(0) for b in m.blocks}
        exit_ = p.exit_index
        for b in p.blocks:
            if b.term.kind == BRANCH:
                assert b.term.reconv in starts | {exit_}, name
            for s in b.term.successors(exit_):
                if s != exit_ and s != b.index + 1:
                    assert s in starts, name  # a jump or branch target begins a block


@pytest.mark.parametrize("name", ["naive_gemm", "dsl_reduce_interleaved", "div_nested"])
def test_merged_blocks_count_what_separate_blocks_count(name, monkeypatch):
    """Results, every counter and every instruction's row equal with and without merging; the naive GEMM's
    loop (body, then increment) takes one step a trip fewer."""
    case = naive_gemm_case() if name == "naive_gemm" else name
    merged = launch_fresh(case)
    monkeypatch.setattr(machine_mod, "merge_straight", lambda p: p)
    apart = launch_fresh(case)
    if name == "naive_gemm":  # 24 trips of the k loop, one step fewer each
        assert apart.stats["emulator__steps"] - merged.stats["emulator__steps"] == 24
        _, _, _, a, b, _ = case[3]()
        np.testing.assert_allclose(merged["C"], a @ b, rtol=1e-5)
    assert merged.stats["emulator__steps"] <= apart.stats["emulator__steps"]
    assert_same_run(merged, apart)
