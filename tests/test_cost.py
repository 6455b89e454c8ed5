"""The analytical cost model: sensible bounds and gradients through every timing parameter."""
import jax
import jax.numpy as jnp
import pytest

from jaxsimt import cost


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
