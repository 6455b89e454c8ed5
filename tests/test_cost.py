"""The analytical cost model: sensible bounds and gradients through every timing parameter."""
import jax
import jax.numpy as jnp
import pytest

from jaxsimt.timing import cost


STATS = {"smsp__inst_executed.sum": 1e7, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4e7,
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 1e6, "occupancy": 1.0}


def test_memory_bound_kernel_is_limited_by_memory():
    p = cost.predict(STATS, "h200", dram_bytes=4e9, fmas=1e6)
    assert p["limiter"] == "dram"
    dram_ms = 4e9 / 4.8e12 * 1e3
    assert p["bound_dram_ms"] == pytest.approx(dram_ms)
    # 64 resident warps almost cover the DRAM latency: the time stays within 5% of the bound
    assert dram_ms <= p["predicted_ms"] <= 1.05 * dram_ms


def test_low_occupancy_slows_memory_bound_kernels():
    fast = cost.predict(STATS, "h200", 4e9, 1e6)["predicted_ms"]
    slow = cost.predict({**STATS, "occupancy": 0.0625}, "h200", 4e9, 1e6)["predicted_ms"]
    assert slow > 2 * fast


def test_gradient_with_respect_to_every_parameter():
    params = cost.params_of("h200")
    g = jax.grad(lambda p: cost.predict_seconds(STATS, p, 4e9, 1e6))(params)
    assert set(g) == set(params)
    assert float(g["dram_gbytes_per_s"]) < 0  # more bandwidth, less time
    assert all(jnp.isfinite(v) for v in g.values())


TINY = {"smsp__inst_executed.sum": 148, "launch__grid_size": 1, "launch__block_size": 32,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 4, "occupancy": 0.5}


def test_a_tiny_kernel_takes_at_least_the_launch_and_one_warps_path():
    # one warp of 148 instructions and one load: the launch overhead, its instructions one per cycle and one L2
    # round trip, not the 1e-7 ms of its instructions spread over all 132 SMs
    t = cost.params_of("h200")
    p = cost.predict(TINY, "h200", dram_bytes=256, fmas=32)
    want_ms = float(t["launch_overhead_us"]) * 1e-3 + (148 + float(t["l2_latency"])) / (float(t["clock_ghz"]) * 1e9) * 1e3
    assert p["predicted_ms"] == pytest.approx(want_ms, rel=1e-5)
    assert p["limiter"] == "launch"
    assert p["warp_floor_ms"] == pytest.approx(want_ms - float(t["launch_overhead_us"]) * 1e-3, rel=1e-5)


def test_per_sm_bounds_count_only_the_sms_that_hold_a_block():
    one_block = dict(STATS, launch__grid_size=1, launch__block_size=1024)
    many = dict(STATS, launch__grid_size=10_000, launch__block_size=1024)
    b1 = cost.bounds(one_block, cost.params_of("h200"), 4e9, 1e6)
    bn = cost.bounds(many, cost.params_of("h200"), 4e9, 1e6)
    assert float(b1["issue"]) == pytest.approx(132 * float(bn["issue"]))
    assert float(b1["dram"]) == pytest.approx(float(bn["dram"]))  # chip-wide units are shared by all SMs
