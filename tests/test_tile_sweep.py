"""The tile sweep: the vmapped models equal the per-configuration ones; the sweep's counters equal the
ladder's fast path configuration by configuration; the winner is the fastest predicted."""
import jax
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.timing import cost
from jaxsimt.units.banks import METRIC_WAVEFRONTS
from jaxsimt.units.coalescing import METRIC_SECTORS
from jaxsimt.units.occupancy import occupancy
from jaxsimt.apps import tile_sweep as ts


def _stats(rng, threads, regs, smem):
    s = {"launch__block_size": threads, "launch__registers_per_thread": regs,
         "launch__shared_mem_per_block_static": smem,
         "smsp__inst_executed.sum": int(rng.integers(1e6, 1e9)),
         "smsp__thread_inst_executed.sum": int(rng.integers(1e7, 1e10))}
    for m in (METRIC_SECTORS, METRIC_WAVEFRONTS):
        for op in ("ld", "st"):
            s[m.format(op=op)] = int(rng.integers(0, 1e8))
    return s


@pytest.mark.parametrize("arch", ["h200", "fermi"])
def test_vmapped_models_equal_one_configuration_at_a_time(arch):
    rng = np.random.default_rng(0)
    shapes = [(256, 32, 2048), (64, 40, 512), (1024, 24, 32768), (128, 128, 0), (512, 64, 8192)]
    stats = [_stats(rng, *s) for s in shapes]
    M, N, K = 1024, 512, 256
    got = ts.models(arch, stats, M, N, K)
    for c, (s, (threads, regs, smem)) in enumerate(zip(stats, shapes)):
        occ = occupancy(arch, threads, regs, smem)
        assert got["active_blocks_per_sm"][c] == occ["active_blocks_per_sm"]
        one = dict(s, occupancy=occ["occupancy"])
        want = float(cost.predict_seconds(one, cost.params_of(arch), 4.0 * (M * K + K * N + M * N), float(M) * N * K))
        assert got["predicted_s"][c] == pytest.approx(want, rel=1e-6)


def test_parse_configs():
    assert ts.parse_configs("smem_tiled:T=8; register_tiled:BM=128,BN=64;naive_coalesced") == [
        ("smem_tiled", {"T": 8}), ("register_tiled", {"BM": 128, "BN": 64}), ("naive_coalesced", {})]


@pytest.mark.slow  # compiles three kernels
def test_sweep_counters_equal_the_fast_path_and_the_best_is_fastest():
    from jaxsimt.kernels import gemm
    from jaxsimt.kernels.gemm import fast

    M, N, K = 48, 40, 24  # partial tiles: several classes of blocks per configuration
    configs = [("smem_tiled", {"T": 8}), ("coarsened", {"T": 16, "COARSEN": 2}), ("register_tiled", {})]
    rows = ts.tile_sweep(M, N, K, "h200", configs, progress=False)
    assert [r["config"] for r in rows] == ["smem_tiled[T=8]", "coarsened[T=16,COARSEN=2]", "register_tiled"]
    n_classes = []
    for (name, params), row in zip(configs, rows):  # against a full launch of every block
        rung = gemm.BY_NAME[name]
        grid, block = rung.launch_config(M, N, K, **params)
        want = js.launch(rung.kernel(**params), grid, block, (M, N, K, np.zeros((M, K), np.float32),
                         np.zeros((K, N), np.float32), np.zeros((M, N), np.float32)), data=False).stats
        n_classes.append(len(fast.block_classes(name, M, N, K, grid, fast.tile_map(name, **params))))
        got = row["stats"]
        assert {k: v for k, v in got.items() if k != "emulator__steps"} == \
               {k: v for k, v in want.items() if k != "emulator__steps"}, name
    assert max(n_classes) > 1  # partial tiles: several classes of blocks, summed
    assert [r["best"] for r in rows].count(True) == 1
    best = next(r for r in rows if r["best"])
    assert best["predicted_ms"] == min(r["predicted_ms"] for r in rows)


def test_pattern_sweep_equals_one_pattern_at_a_time():
    """The coalescer and bank model vmapped over access patterns (strides and row paddings)."""
    from jaxsimt.units import banks, coalescing

    lanes = np.arange(32)
    pats = np.stack([lanes * s * 4 for s in range(1, 34)] + [(lanes % 8) * (32 + pad) * 4 for pad in range(4)])
    got = ts.pattern_sweep("h200", pats, 4)
    on = np.ones(32, bool)
    one_c = jax.jit(lambda a: coalescing.coalesce("h200", a, 4, on))  # one pattern per call
    one_b = jax.jit(lambda a: banks.bank_access("h200", a, 4, on))
    for p, addr in enumerate(pats):
        c, b = one_c(addr), one_b(addr)
        assert (got["sectors"][p], got["requests"][p]) == (int(c.sectors), int(c.requests))
        assert (got["wavefronts"][p], got["bank_conflicts"][p]) == (int(b.wavefronts), int(b.conflicts))
    assert got["bank_conflicts"][1] > 0 and got["bank_conflicts"][0] == 0  # stride 2 conflicts, stride 1 not
