"""Every kernel the project ships runs clean under all of the sanitizer's checks (no finding) and still gives
its reference result: the GEMM ladder, the seeds' kernels, the ITS kernels (a spin lock whose critical
section is ordered by its atomics), the micro-kernels and, in the slow suite, the H200 collection's PTX and
the benchmark suites' programs. Kernels that are wrong on purpose are the exception and are checked to be
reported: `warp_sum` without `__syncwarp` is a hazard under independent thread scheduling."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import errors
from jaxsimt.machine import sanitizer
from jaxsimt.kernels import its as K
from jaxsimt.kernels import micro, seeds
from jaxsimt.kernels.gemm import RUNGS, random_operands

ALL = dict(check="all", collect=True)


# Shipped kernels that race on purpose: {name: why}. Their findings must be exactly that race.
RACY_BY_DESIGN = {"glob_st_broadcast": "the store-coalescing micro-kernel's broadcast pattern: every thread of "
                                       "the grid stores to out[0] (what the H200 counts for one address)"}


def _clean(r, name: str = ""):
    if name in RACY_BY_DESIGN:
        assert r.findings and {(f.check, f.kind) for f in r.findings} <= {
            ("racecheck", "data race"), ("racecheck", sanitizer.KIND[errors.FaultCode.WARP_HAZARD])}, name
        return
    assert r.findings == [], "\n".join(f.message for f in r.findings)


@pytest.mark.parametrize("rung", [r for r in RUNGS if r.name != "wmma"], ids=lambda r: r.name)
@pytest.mark.slow
def test_gemm_ladder_is_clean(rung):
    M = N = K_ = 64
    A, B, C = random_operands(M, N, K_, 1)
    grid, block = rung.launch_config(M, N, K_)
    r = js.launch(rung.kernel(), grid, block, (M, N, K_, A, B, C), **ALL)
    _clean(r)
    np.testing.assert_array_equal(r["C"], rung.reference(A, B))


@pytest.mark.slow
def test_seed_kernels_are_clean():
    n = 1000
    x, y = np.linspace(-1, 1, n, dtype=np.float32), np.ones(n, np.float32)
    r = js.launch(seeds.saxpy, 4, 256, (n, np.float32(2.0), x, y), **ALL)
    _clean(r)
    np.testing.assert_allclose(r["y"], 2 * x + 1, rtol=1e-6)
    A, B = np.ones((32, 48), np.float32), np.ones((48, 32), np.float32)
    r = js.launch(seeds.naive_matrix_multiply, (2, 2), (16, 16), (32, 48, A, B, np.zeros((32, 32), np.float32)),
                  **ALL)
    _clean(r)
    assert (r["C"] == 48).all()


def _spin_args():
    return [np.zeros(1, np.int32), np.zeros(1, np.int32)]


def test_spin_lock_under_its_is_clean():
    r = js.launch(K.spin_lock, 1, 32, _spin_args(), mode="its", **ALL)
    _clean(r)
    assert r["counter"][0] == 32


def _warp_sum_args(sync: int):
    rng = np.random.default_rng(0)
    lens = rng.integers(0, 5, 64).astype(np.int32)
    x = rng.integers(0, 100, 64 * 32).astype(np.int32)
    return [lens, x, np.zeros(2, np.int32), sync]


@pytest.mark.parametrize("mode", [pytest.param("stack", marks=pytest.mark.slow), "its"])
def test_warp_sum_needs_syncwarp(mode):
    r = js.launch(K.warp_sum, 1, 64, _warp_sum_args(1), mode=mode, **ALL)
    _clean(r)
    r = js.launch(K.warp_sum, 1, 64, _warp_sum_args(0), mode=mode, **ALL)
    hazard = sanitizer.KIND[errors.FaultCode.WARP_HAZARD]
    assert any(f.kind == hazard for f in r.findings)
    # under ITS a lane may also read its neighbour's partial sum before the neighbour wrote it
    allowed = {hazard, "uninitialized read"} if mode == "its" else {hazard}
    assert {f.kind for f in r.findings} <= allowed


@pytest.mark.slow
def test_loop_tail_is_clean_in_both_modes():
    for mode in ("stack", "its"):
        r = js.launch(K.loop_tail, 1, 64, [np.zeros(64, np.int32)], mode=mode, **ALL)
        _clean(r)
        np.testing.assert_array_equal(r["out"], 3 * (np.arange(64) % 4) + 7)


def _micro_names(slow: bool):
    names = sorted(micro.REGISTRY)
    quick = names[:: max(1, len(names) // 4)]
    return [n for n in names if n not in quick] if slow else quick


def _run_micro(name):
    m = micro.REGISTRY[name]
    r = js.launch(m.factory(), m.grid, m.block, m.args(), **ALL)
    _clean(r, name)
    m.check(r)


@pytest.mark.parametrize("name", _micro_names(False))
@pytest.mark.slow
def test_micro_kernels_are_clean(name):
    _run_micro(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", _micro_names(True))
def test_all_micro_kernels_are_clean(name):
    _run_micro(name)


def _collection():
    from jaxsimt.kernels import collection

    return collection.CASES


@pytest.mark.slow
@pytest.mark.parametrize("case", _collection(), ids=lambda c: c.name)
def test_h200_collection_is_clean(case):
    import jax

    from jaxsimt.kernels import collection

    r, args = collection.launch(case, **ALL)
    _clean(r, case.name)
    case.check(r, args)
    # one process compiling every case's checked machine runs out of LLVM's code memory: free them
    jax.clear_caches()


def _suite_programs():
    from jaxsimt.kernels import suites

    return suites.programs()


@pytest.mark.slow
@pytest.mark.parametrize("suite,case", _suite_programs())
def test_suite_programs_are_clean(suite, case):
    from jaxsimt.kernels import suites as S
    from jaxsimt.kernels.real_cuda import JaxsimtBackend
    from jaxsimt.kernels.suites import harness

    be = JaxsimtBackend(S.ptx_path(suite), regs_of=harness.registers(suite), **ALL)
    S.module(suite).run(be, case)
    if (suite, case) in SUITE_RACES:  # the published kernel's own race, kept as it is written there
        kinds = {f.kind for f in be.findings}
        races = {"data race", sanitizer.KIND[errors.FaultCode.WARP_HAZARD]}
        assert SUITE_RACES[(suite, case)] in kinds and kinds <= races, "\n".join(f.message for f in be.findings)
        return
    assert be.findings == [], "\n".join(f.message for f in be.findings)


# Suite programs whose kernels race as the published ones do: {(suite, case): the finding's kind}.
SUITE_RACES = {
    # Rodinia's BFS: threads of different blocks write g_cost[id] of a shared neighbour without atomics (a
    # race whose writers store one value, known as benign in the literature)
    ("rodinia", "bfs"): "data race",
    # SHOC's reduction and CSR-vector SpMV: the last warp's steps through shared memory without __syncwarp
    # (pre-Volta warp-synchronous code: a race under independent thread scheduling)
    ("shoc", "reduction"): sanitizer.KIND[errors.FaultCode.WARP_HAZARD],
    ("shoc", "spmv"): sanitizer.KIND[errors.FaultCode.WARP_HAZARD],
}
