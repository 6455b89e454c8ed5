"""Every kernel of jaxsimt/kernels/cuda/*.cu, compiled by nvcc (`jaxsimt/kernels/ptx/regen.sh`: nvcc -arch=sm_90 -O3 -ptx),
runs through `jaxsimt.ptx.launch` with the H200 collection's launch configuration and equals its numpy
reference; the micro-kernels' memory counters equal the H200 fixture exactly; mma_truth's kernels give
the H200's bits on the committed Tensor Core fixture (jaxsimt/data/h200/mma).

The launches are the registry `jaxsimt.kernels.collection.CASES`.
Run `python tests/test_ptx_cuda.py` for the counter agreement table over every micro-kernel.
"""
from __future__ import annotations

import os

import pytest

import jaxsimt.ptx as P
from jaxsimt.apps import conformance
from jaxsimt.kernels.collection import CASES, EXACT, PTX, Case, launch


def counters(case: Case, r):
    from jaxsimt.apps import fixtures
    hw = fixtures.ncu_metrics("h200")[case.name]
    return {m: int(r.stats[m]) for m in EXACT}, {m: int(hw[m]) for m in EXACT}


GOLDEN = conformance.load_golden()


def _params():
    return [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_cuda_kernel_via_ptx(case):
    r, args = launch(case)
    case.check(r, args)
    # every counter equals its golden value (jaxsimt/data/golden_counters.json), whatever the engine's tiers
    assert conformance.differences(r.stats, GOLDEN[case.name]) == [] if case.name in GOLDEN else True
    if case.fixture:
        got, want = counters(case, r)
        assert got == want


def test_registry_covers_every_kernel():
    from jaxsimt.apps import fixtures
    from jaxsimt.kernels.micro import REGISTRY
    names = {c.name for c in CASES}
    assert set(REGISTRY) <= names  # every H200 micro-kernel, with its counters
    assert {c.name for c in CASES if c.fixture} == set(REGISTRY)
    assert set(REGISTRY) <= set(fixtures.ncu_metrics("h200"))
    for prog in ("micro_shared", "micro_global", "micro_divergence", "gemm_ladder", "mma_truth", "occupancy"):
        mod = P.load_module(os.path.join(PTX, prog + ".ptx"))
        used = {c.entry for c in CASES if c.program == prog}
        assert {e.name for e in mod.entries} == used, prog  # every entry of every program is launched


if __name__ == "__main__":  # the agreement table over every micro-kernel (and the outputs' checks)
    ok = 0
    micro = [c for c in CASES if c.fixture]
    for c in micro:
        r, a = launch(c)
        try:
            c.check(r, a)
            out = "ok"
        except AssertionError:
            out = "OUTPUT MISMATCH"
        got, want = counters(c, r)
        diff = {k.split("__")[1][:60]: (got[k], want[k]) for k in EXACT if got[k] != want[k]}
        ok += not diff and out == "ok"
        print(f"{c.name:34s} {out:16s} {'exact' if not diff else diff}", flush=True)
    print(f"{ok} of {len(micro)} micro-kernels: outputs equal the reference and counters equal the H200")
