"""The timing model's micro-benchmark fixture (jaxsimt/kernels/cuda/micro_timing.cu on the H200,
jaxsimt/data/h200/timing_micro/) and the fit's use of it: started from the measurements and kept within
calibrate.MEASURED_FACTOR of each."""
import jax.numpy as jnp
import pytest

from jaxsimt.apps import calibrate, fixtures


def test_the_measurements_are_ordered_as_the_hardware_is():
    m = calibrate.measured("h200")
    for k in ("fma_latency", "alu_latency", "sfu_latency", "shared_latency", "l1_latency", "l2_latency",
              "dram_latency", "l1_sectors_per_cycle", "l2_bytes_per_cycle", "dram_gbytes_per_s"):
        assert k in m and m[k] > 0, k
    assert m["fma_latency"] < m["shared_latency"] < m["l1_latency"] < m["l2_latency"] < m["dram_latency"]
    raw = fixtures.timing_micro("h200")
    assert raw["sms"]["value"] == 132
    # a dependent chain is one SASS instruction per link: the SASS of the chains says so
    sass = fixtures.path("h200", "timing_micro/micro_timing.sass").read_text()
    assert "lat_ffma" in sass and "FFMA" in sass


def test_a_fit_from_the_measurements_stays_within_the_band():
    base, factor = calibrate.measured_start("h200")
    meas = calibrate.measured("h200")
    for sign in (1.0, -1.0):
        th = {k: jnp.float32(sign * 50.0) for k in calibrate.FIT}  # far past any bound
        p = calibrate.constrained(base, th, factor)
        for k, v in meas.items():
            lo, hi = v / calibrate.MEASURED_FACTOR, v * calibrate.MEASURED_FACTOR
            assert lo * (1 - 1e-5) <= float(p[k]) <= hi * (1 + 1e-5), k
    rows = calibrate.beside_measurements({k: base[k] for k in base}, "h200")
    assert rows and all(r["ratio"] == pytest.approx(1.0) and r["within"] for r in rows)


def test_held_parameters_are_their_measurements():
    """The committed H200 parameters hold `calibrate.HELD` at the micro-benchmarks' values: the shared pipe's
    rate and the block dispatch interval (the slope of an SM's active cycles over empty blocks, ~143)."""
    from jaxsimt.timing import replay as timing

    meas, p = calibrate.measured("h200"), timing.params_of("h200")
    assert 120 < meas["block_dispatch_cycles"] < 170
    for k in calibrate.HELD:
        assert float(p[k]) == pytest.approx(meas[k], rel=2e-3), k
