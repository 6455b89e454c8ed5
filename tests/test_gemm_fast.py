"""The ladder's fast path agrees exactly with the instruction-level kernels: C bit for bit and every
counter (one emulated block per class of identical blocks, weighted by the class sizes)."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.kernels import gemm
from jaxsimt.kernels.gemm import fast

SIZES = [(64, 64, 64), (70, 50, 40)]


def _check(name, M, N, K):
    rung = gemm.BY_NAME[name]
    A, B, C = gemm.random_operands(M, N, K, 5)
    grid, block = rung.launch_config(M, N, K)
    full = js.launch(rung.kernel(), grid, block, (M, N, K, A, B, C))
    stats, per_instr, classes = fast.gemm_stats(name, rung.kernel(), M, N, K, launch_config=rung.launch_config)
    assert len(classes) < grid[0] * grid[1] or grid[0] * grid[1] <= 6
    np.testing.assert_array_equal(fast.gemm_c(name, A, B), full["C"])
    for k, v in full.stats.items():
        if k != "emulator__steps":  # how many steps the emulator itself took
            assert stats[k] == v, k
    assert per_instr == full.per_instruction


@pytest.mark.parametrize("name", ["naive_coalesced", "smem_tiled"])
def test_fast_path_equals_instruction_level(name):
    _check(name, *SIZES[1])


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["naive_uncoalesced", "naive_coalesced", "smem_tiled", "coarsened",
                                  "register_tiled"])
def test_fast_path_equals_instruction_level_all(name, size):
    _check(name, *size)


def test_block_classes_cover_the_grid():
    rung = gemm.BY_NAME["register_tiled"]
    grid, _ = rung.launch_config(4096, 4096, 4096)
    classes = fast.block_classes("register_tiled", 4096, 4096, 4096, grid)
    assert sum(c for _, c in classes) == grid[0] * grid[1]
    assert len(classes) == 1  # 64-float tiles: every block starts on a line boundary
    classes = fast.block_classes("naive_coalesced", 100, 100, 100, gemm.BY_NAME["naive_coalesced"].launch_config(100, 100, 100)[0])
    assert sum(c for _, c in classes) == 49


@pytest.mark.slow
def test_fast_path_wmma():
    from jaxsimt.kernels import wmma_gemm as w
    from jaxsimt.apps.ladder import rungs

    M, N, K = 40, 36, 48
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c, full = w.run(a, b)
    np.testing.assert_array_equal(fast.wmma_c(a, b), c)
    r = next(x for x in rungs() if x.name == "wmma")
    stats, per_instr, _ = fast.gemm_stats("wmma", r.kernel(), M, N, K, args=r.args(M, N, K),
                                          launch_config=r.launch_config)
    for k, v in full.stats.items():
        if k != "emulator__steps":
            assert stats[k] == v, k
