"""The package's conformance suite: the seeds' DSL kernels equal numpy and count their golden values
(jaxsimt/data/golden_counters.json; the PTX collection's are checked in test_ptx_cuda.py), compiled or
interpreted; every case has a golden value; the golden file is well formed."""
from __future__ import annotations

import pytest

from jaxsimt.apps import conformance

GOLDEN = conformance.load_golden()
CASES = conformance.cases()


def test_every_case_has_golden_counters():
    missing = sorted(n for n in CASES if n not in GOLDEN and not n.startswith("pressure<"))
    assert missing == []
    for name, stats in GOLDEN.items():
        assert "emulator__steps" not in stats and "smsp__inst_executed.sum" in stats, name


@pytest.mark.parametrize("name", sorted(n for n, (k, _) in CASES.items() if k == "dsl"))
def test_dsl_kernel_counts_its_golden_values(name):
    assert conformance.differences(conformance.run_case(name), GOLDEN[name]) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_interpreted_counts_the_golden_values(name):
    # every instruction interpreted: the same bits (each case's numpy check) and the same counters
    assert conformance.differences(conformance.run_case(name, compile_budget=0), GOLDEN[name]) == []


def test_differences_names_what_differs():
    assert conformance.differences({"a": 1, "b": 0.5, "emulator__steps": 3}, {"a": 1, "b": 0.5}) == []
    assert conformance.differences({"a": 2}, {"a": 1}) == ["a: 2 != golden 1"]
    assert conformance.differences({}, {"a": 1}) == ["a: None != golden 1"]


# Kernels that never diverge inside a warp (no divergent branch target in their golden counters) run the same
# under Independent Thread Scheduling: the same bits and every counter but the mode's own depth figure.
CONVERGED = sorted(n for n, s in GOLDEN.items() if n in CASES and s.get(
    "smsp__sass_branch_targets_threads_divergent.sum", 0) == 0)
QUICK_ITS = {"gemm_naive_coalesced@64x64x64", "dsl_matmul_tiled"}
MODE_STATS = ("max_stack_depth", "emulator__max_pc_groups")  # the stack's depth, ITS's pc groups


@pytest.mark.parametrize("name", [n if n in QUICK_ITS else pytest.param(n, marks=pytest.mark.slow)
                                  for n in CONVERGED])
def test_converged_kernel_counts_the_same_under_its(name):
    stats = conformance.run_case(name, mode="its")  # the case's numpy check runs inside
    assert stats.get("emulator__max_pc_groups", 1) <= 1
    golden = {k: v for k, v in GOLDEN[name].items() if k not in MODE_STATS}
    assert conformance.differences({k: v for k, v in stats.items() if k not in MODE_STATS}, golden) == []


def test_quick_its_cases_are_converged_cases():
    assert QUICK_ITS <= set(CONVERGED) and len(CONVERGED) >= 100
