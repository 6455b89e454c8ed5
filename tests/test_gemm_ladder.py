"""The GEMM ladder (jaxsimt.kernels.gemm): results bit for bit against the fma reference, memory counters
derived by hand from the seeds' reasoning, and the counters at M = N = K = 256 against the H200's.

Sizes: (64, 64, 64) and (60, 50, 70) (non-square, no dimension a multiple of any tile: 16, 32, 64, 8)
fall in the same grid bucket and memory size class for every rung, so each rung compiles once for both.
"""
import functools

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.apps import fixtures
from jaxsimt.kernels import gemm
from jaxsimt.kernels.gemm import fma_f32, gemm_fma_reference, random_operands

F32_RUNGS = ["naive_uncoalesced", "naive_coalesced", "smem_tiled", "coarsened", "register_tiled"]
SIZES = [(64, 64, 64), (60, 50, 70)]

RQ_LD, RQ_ST = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
SE_LD, SE_ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
WF_LD, WF_ST = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
BC_LD, BC_ST = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
METRICS = [RQ_LD, RQ_ST, SE_LD, SE_ST, WF_LD, WF_ST, BC_LD, BC_ST]

@functools.lru_cache(maxsize=None)
def _run(name, size, seed=1):
    """Launch one rung once per size (cached for the whole module)."""
    rung = gemm.BY_NAME[name]
    M, N, K = size
    A, B, C = random_operands(M, N, K, seed)
    grid, block = rung.launch_config(M, N, K)
    return js.launch(rung.kernel(), grid, block, (M, N, K, A, B, C)), A, B


# ------------------------------------------------------------------------------------ the reference


def test_fma_f32_rounds_once():
    # exact a*b + c = 1 + 2^-23 + 2^-24 - 2^-60: f64 rounds it to the f32 midpoint 1 + 2^-23 + 2^-24,
    # from which ties-to-even would give 1 + 2^-22; one rounding gives 1 + 2^-23.
    a = np.float32(1 + 2.0**-18)
    b = np.float32((1 - 2.0**-18) * 2.0**-24)
    c = np.float32(1 + 2.0**-23)
    double_rounded = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    assert double_rounded == np.float32(1 + 2.0**-22)
    assert fma_f32(a, b, c) == np.float32(1 + 2.0**-23)
    # the other side: exact sum just above a midpoint whose even neighbour is below
    b2 = np.float32((1 + 2.0**-18) * 2.0**-24)  # a*b2 = 2^-24 (1 + 2^-17 + 2^-36): no tie, plain rounding
    assert fma_f32(a, b2, np.float32(1.0)) == np.float32(1 + 2.0**-23)
    # random operands: equal to the emulator's own fma (round-to-odd in f64, an independent method)
    from jaxsimt.units import alu
    from jaxsimt import types as T
    rng = np.random.default_rng(0)
    x, y, z = (rng.uniform(-1, 1, 4096).astype(np.float32) for _ in range(3))
    z[:1024] *= np.float32(2.0**-20)
    import jax
    with jax.enable_x64(True):
        emu = np.asarray(alu.fma(x, y, z, T.f32))
    np.testing.assert_array_equal(fma_f32(x, y, z), emu)
    assert not np.array_equal(fma_f32(x, y, z), (x * y + z).astype(np.float32))  # mul+add differs


def test_reference_close_to_float64():
    A, B, _ = random_operands(37, 29, 53, 5)
    np.testing.assert_allclose(gemm_fma_reference(A, B), A.astype(np.float64) @ B.astype(np.float64),
                               rtol=0, atol=1e-5)


# ------------------------------------------------------------------------------------ registry


def test_registry_order_and_signature():
    names = [r.name for r in gemm.RUNGS]
    assert names[:5] == F32_RUNGS
    assert names[5:] in ([], ["wmma"])
    for r in gemm.RUNGS[:5]:
        prog = r.kernel().program
        assert [(p.name, p.dtype.name, p.is_pointer) for p in prog.params] == [
            ("M", "s32", False), ("N", "s32", False), ("K", "s32", False),
            ("A", "f32", True), ("B", "f32", True), ("C", "f32", True)]
        assert prog.shared_bytes == r.smem
        assert r.kernel() is r.kernel()  # cached: one compiled machine per launch shape
        assert r.seed and r.reference is gemm_fma_reference


def test_launch_configs_match_the_profiled_ones():
    kernels = fixtures.ncu_kernels("h200")
    for r in gemm.RUNGS:
        grid, block = r.launch_config(256, 256, 256)
        k = kernels[r.name]
        assert tuple(grid) + (1,) * (3 - len(grid)) == tuple(k.grid), r.name
        assert tuple(block) + (1,) * (3 - len(block)) == tuple(k.block), r.name


# ------------------------------------------------------------------------------------ results


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", F32_RUNGS)
def test_rung_equals_reference_bit_for_bit(name, size):
    r, A, B = _run(name, size)
    np.testing.assert_array_equal(r["C"], gemm_fma_reference(A, B))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_rungs_agree_with_each_other(size):
    # same per-element accumulation order (k ascending, one fma each) -> identical bits
    outs = [_run(n, size)[0]["C"] for n in F32_RUNGS]
    for n, o in zip(F32_RUNGS[1:], outs[1:]):
        np.testing.assert_array_equal(o, outs[0], err_msg=n)


@pytest.mark.slow
def test_tile_parameters_are_parameters():
    # a non-default tiling still computes the same bits (T = 8 tiles, 4 x 4 coarsening of 16-tiles)
    M, N, K = 24, 20, 13
    A, B, C = random_operands(M, N, K, 9)
    ref = gemm_fma_reference(A, B)
    for rung, params in (("smem_tiled", {"T": 8}), ("coarsened", {"T": 16, "COARSEN": 2})):
        rg = gemm.BY_NAME[rung]
        grid, block = rg.launch_config(M, N, K, **params)
        r = js.launch(rg.kernel(**params), grid, block, (M, N, K, A, B, C))
        np.testing.assert_array_equal(r["C"], ref, err_msg=rung)


# ------------------------------------------------------------------------------------ counters by hand


def hand_counters(name, M, N, K):
    """Counters of one rung as the H200 counts them, derived from the access patterns, for M, N, K
    multiples of the rung's tiles (and K >= 8, so rows of A are at least a sector apart).

    Sectors are 32 bytes; a warp is 32 consecutive threads; a 16 x 16 block's warp is 2 rows of 16
    threads (threadIdx.y = 2w, 2w+1). Shared memory: 32 banks of 4 bytes, one wavefront per conflict-free
    access; a 16-byte load (LDS.128) is served per quarter-warp (8 lanes x 16 B = one wavefront), except
    that the two quarter-warps of a half-warp reading the same words share one wavefront.
    """
    c = dict.fromkeys(METRICS, 0)
    if name in ("naive_uncoalesced", "naive_coalesced"):
        warps = M * N // 32
        c[RQ_LD] = warps * K * 2  # one load of A and one of B per k
        c[RQ_ST] = warps
        if name == "naive_uncoalesced":
            # seed 000: "consecutive threads within the warp access elements belonging to different rows
            # of A": 16 rows (threadIdx.x) -> 16 sectors; B[k][col] with col = threadIdx.y: 2 adjacent
            # floats -> 1 sector ("all threads in the warp require the same value b_kj", here 2 values).
            c[SE_LD] = warps * K * (16 + 1)
            c[SE_ST] = warps * 16  # C walked down a column: 16 rows, each pair of columns in one sector
        else:
            # seed 000: "all threads in the warp use the same element a_ik" (per row: 2 rows -> 2 sectors)
            # and "consecutive threads access consecutive elements of B" (16 floats = 64 B -> 2 sectors)
            c[SE_LD] = warps * K * (2 + 2)
            c[SE_ST] = warps * 4  # 2 rows x 64 B
        return c
    if name == "smem_tiled":  # T = 16: 8 warps per block, each 2 rows x 16 threads
        warps, tiles = M * N // 32, K // 16
        c[RQ_LD] = warps * tiles * 2
        c[SE_LD] = c[RQ_LD] * 4  # 2 rows x 64 B
        c[RQ_ST], c[SE_ST] = warps, warps * 4
        c[WF_ST] = warps * tiles * 2  # A_shared[ty][tx], B_shared[ty][tx]: 32 consecutive words
        # per tile: 16 scalar B_shared[k][tx] (16 words, each read by 2 lanes: 1 wavefront) and
        # 4 LDS.128 of A_shared[ty][k..k+3] (2 addresses: 2 wavefronts)
        c[WF_LD] = warps * tiles * (16 * 1 + 4 * 2)
        return c
    if name == "coarsened":  # T = 32, 16 x 16 threads, each 2 x 2 elements with stride 16
        warps, tiles = M * N // 128, K // 32
        c[RQ_LD] = warps * tiles * 8  # (wr, wc) in 2 x 2: one A and one B load each
        c[SE_LD] = c[RQ_LD] * 4
        c[RQ_ST] = warps * 4
        c[SE_ST] = c[RQ_ST] * 4
        # 8 stores per tile; rows ty and ty+1 are 32 words apart: the same 16 banks -> 2-way
        c[WF_ST] = warps * tiles * 8 * 2
        c[BC_ST] = warps * tiles * 8
        # per tile: 32 k x 2 scalar B loads (1 wavefront) + 8 groups of 4 k x 2 LDS.128 (2 addresses)
        c[WF_LD] = warps * tiles * (32 * 2 * 1 + 8 * 2 * 2)
        return c
    if name == "register_tiled":  # 64 x 64 x 8, 8 warps, 4 x 4 micro-tiles
        warps, tiles = M * N // 512, K // 8
        c[RQ_LD] = warps * tiles * 4  # 2 elements of the A panel and 2 of the B panel per thread
        c[SE_LD] = c[RQ_LD] * 4  # A: 4 rows x 8 floats (4 x 32 B); B: 32 consecutive floats
        c[RQ_ST] = warps * 16
        c[SE_ST] = c[RQ_ST] * 16  # 8 micro rows x 4 lanes 16 B apart (64 B -> 2 sectors)
        # As[k][m] (transposed): lanes l and l+8 differ by one m, lanes l..l+7 by one k (64 words apart,
        # the same bank): 4 banks x 8 words -> 8-way; Bs[k][n]: 32 consecutive words -> 1
        c[WF_ST] = warps * tiles * (2 * 8 + 2 * 1)
        c[BC_ST] = warps * tiles * (2 * 7)
        # per k: LDS.128 As[k][m0..] (lane/4: 8 addresses, every quarter-warp different -> 4) and
        # LDS.128 Bs[k][n0..] (lane%4: the same 4 addresses in every quarter-warp -> 2)
        c[WF_LD] = warps * tiles * 8 * (4 + 2)
        return c
    raise KeyError(name)


@pytest.mark.parametrize("name", F32_RUNGS)
def test_hand_counters_equal_h200(name):
    hw = fixtures.ncu_metrics("h200")[name]
    got = hand_counters(name, 256, 256, 256)
    assert {m: int(hw[m]) for m in METRICS} == got


@pytest.mark.parametrize("name", F32_RUNGS)
def test_emulator_counters_equal_hand_counters_64(name):
    r, _, _ = _run(name, (64, 64, 64))
    assert {m: r.stats[m] for m in METRICS} == hand_counters(name, 64, 64, 64)


# ------------------------------------------------------------------------------------ H200 at 256^3


@pytest.mark.slow
@pytest.mark.parametrize("name", F32_RUNGS)
def test_counters_equal_h200_at_256(name):
    r, A, B = _run(name, gemm.PROFILED_SIZE, seed=3)
    np.testing.assert_array_equal(r["C"], gemm_fma_reference(A, B))
    hw = fixtures.ncu_metrics("h200")[name]
    assert {m: r.stats[m] for m in METRICS} == {m: int(hw[m]) for m in METRICS}
