"""Theoretical occupancy against the H200: every configuration of occupancy_sweep.csv.

Each row is what `cudaOccupancyMaxActiveBlocksPerMultiprocessor` returned on the H200 for one kernel
(its actual registers per thread from `cudaFuncGetAttributes`), block size and dynamic shared memory.
`smem` is the kernel's own shared memory (static + dynamic); the model adds the 1 KB reservation.
"""
import jax
import numpy as np
import pytest

from jaxsimt.apps import fixtures
from jaxsimt.units.occupancy import occupancy, occupancy_arrays

SWEEP = fixtures.occupancy_sweep("h200")
N = len(SWEEP["kernel"])


def _row(i):
    return {k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in SWEEP.items()}


def _ids():
    return [f"{SWEEP['kernel'][i]}-t{SWEEP['threads_per_block'][i]}-smem{SWEEP['dyn_smem'][i]}"
            for i in range(N)]


def test_sweep_is_complete():
    assert N == 640
    assert set(SWEEP["status"]) == {"ok"}
    # the sweep spans the register, shared-memory and warp limits, and the kernels' own block limits
    assert len(set(SWEEP["num_regs"])) == 8
    assert (SWEEP["blocks_per_sm"] == 0).any() and (SWEEP["blocks_per_sm"] == 32).any()


@pytest.mark.parametrize("i", range(N), ids=_ids())
def test_every_row(i):
    r = _row(i)
    got = occupancy("h200", r["threads_per_block"], r["num_regs"], r["static_smem"] + r["dyn_smem"])
    assert got["active_blocks_per_sm"] == r["blocks_per_sm"], got
    assert got["active_warps_per_sm"] == r["active_warps_per_sm"], got


def test_vectorised_sweep_matches_every_row():
    """The jit/vmap path over all 640 rows at once gives the same answers."""
    f = jax.jit(lambda t, r, s: occupancy_arrays("h200", t, r, s))
    got = f(SWEEP["threads_per_block"].astype(np.int32), SWEEP["num_regs"].astype(np.int32),
            (SWEEP["static_smem"] + SWEEP["dyn_smem"]).astype(np.int32))
    np.testing.assert_array_equal(np.asarray(got["active_blocks_per_sm"]), SWEEP["blocks_per_sm"])
    np.testing.assert_array_equal(np.asarray(got["active_warps_per_sm"]), SWEEP["active_warps_per_sm"])


def test_launch_bound_rows_are_register_limited():
    """Rows above a kernel's own block limit (`cudaFuncAttributes.maxThreadsPerBlock`, which ptxas lowers
    for register-heavy kernels) are 0 on the hardware; the register limit alone already gives 0 there,
    since that attribute is derived from the registers (e.g. 72 registers x 1024 threads > 65536)."""
    over = SWEEP["threads_per_block"] > SWEEP["attr_max_threads_per_block"]
    assert over.sum() == 80 and (SWEEP["blocks_per_sm"][over] == 0).all()
    for i in np.flatnonzero(over):
        r = _row(i)
        assert occupancy("h200", r["threads_per_block"], r["num_regs"], r["dyn_smem"])["blocks_limit_registers"] == 0


def test_device_props_agree_with_arch():
    from jaxsimt.arch import get_arch

    p, a = fixtures.device_props("h200"), get_arch("h200")
    assert p["multiProcessorCount"] == a.num_sms
    assert p["sharedMemPerMultiprocessor"] == a.shared_mem_per_sm
    assert p["sharedMemPerBlock"] == a.shared_mem_per_block
    assert p["sharedMemPerBlockOptin"] == a.shared_mem_per_block_optin
    assert p["reservedSharedMemPerBlock"] == a.reserved_shared_mem_per_block
    assert p["regsPerMultiprocessor"] == a.registers_per_sm
    assert p["regsPerBlock"] == a.max_registers_per_block
    assert p["maxThreadsPerMultiProcessor"] == a.max_threads_per_sm
    assert p["maxBlocksPerMultiProcessor"] == a.max_blocks_per_sm
    assert p["maxThreadsPerBlock"] == a.max_threads_per_block
    assert p["warpSize"] == a.warp_size


def test_missing_fixture_is_a_clear_error():
    with pytest.raises(fixtures.FixtureNotFound, match="no hardware fixture"):
        fixtures.path("g80", "occupancy_sweep.csv")
    with pytest.raises(FileNotFoundError):
        fixtures.ncu_metrics("fermi")
