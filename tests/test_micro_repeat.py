"""The repeated profiles of the micro-kernels (jaxsimt/data/h200/micro_repeat/) and their use as the timing
model's ground truth: every profiled micro-kernel is there, 16 warm runs and 8 cold ones each, and the
calibration samples take the warm medians."""
import numpy as np
import pytest

from jaxsimt.apps import calibrate, fixtures

CYC = "sm__cycles_active.max"


def test_every_micro_kernel_repeated():
    warm, cold = fixtures.micro_repeat("h200"), fixtures.micro_repeat("h200", "cold")
    names = {k for p in ("micro_global", "micro_shared", "micro_divergence") for k in fixtures.kernels_of(p)}
    assert names and names <= set(warm) and names <= set(cold)
    for k in names:
        assert len(warm[k][CYC]) == 16 and len(cold[k][CYC]) == 8
        assert all(v > 0 for v in warm[k][CYC])
        clock = np.asarray(warm[k]["sm__cycles_elapsed.avg.per_second"])
        assert np.all((clock > 1.0e9) & (clock < 2.1e9))  # Hz, at most the H200's 1.98 GHz boost


def test_one_run_is_a_noisy_target():
    """A single run is off its kernel's median by several percent on average (docs/timing.md): the reason
    the medians are the ground truth."""
    warm = fixtures.micro_repeat("h200")
    dev = [abs(v - np.median(r[CYC])) / np.median(r[CYC]) for r in warm.values() for v in r[CYC]]
    assert 0.05 < np.mean(dev) < 0.25


def test_calibration_samples_take_the_warm_medians():
    warm = fixtures.micro_repeat("h200")
    micro = calibrate.Sample("glob_ld_stride8", "micro_global", 0, "held_out", None, 1.0, 1.0)
    ladder = calibrate.Sample("coarsened", "ladder", 1024, "held_out", None, 5.0, 6.0)
    unknown = calibrate.Sample("not_profiled", "micro_shared", 0, "train", None, 7.0, 8.0)
    got = calibrate.with_repeat_medians([micro, ladder, unknown])
    assert got[0].cycles == np.median(warm["glob_ld_stride8"][CYC])
    assert got[0].ms == np.median(warm["glob_ld_stride8"]["gpu__time_duration.sum"]) * 1e-6
    assert (got[1].cycles, got[1].ms, got[2].cycles, got[2].ms) == (5.0, 6.0, 7.0, 8.0)


def test_tensor_kernels_run_at_the_measured_tensor_clock():
    """The H200's clock with mma.sync in the loop (tensor_clock/), whatever the tensor pipe's share, is the
    architecture's tensor_clock_ghz; without mma it is clock_ghz. predicted_ms converts at the one that applies."""
    import csv
    import io

    from jaxsimt import get_arch
    from jaxsimt.timing import replay as tm

    rows = list(csv.DictReader(io.StringIO(fixtures.path("h200", "tensor_clock/tensor_clock.csv").read_text())))
    clock = {(int(r["mmas"]), int(r["ffmas"]), int(r["iters"])): float(r["value"]) / 1e9 for r in rows
             if r["metric"] == "sm__cycles_elapsed.avg.per_second"}
    t = get_arch("h200").timing
    with_mma = [c for (m, _, n), c in clock.items() if m > 0 and n >= 400]
    without = [c for (m, _, n), c in clock.items() if m == 0 and n >= 400]
    assert len(with_mma) >= 8 and max(with_mma) - min(with_mma) < 0.01
    assert abs(np.median(with_mma) - t.tensor_clock_ghz) < 0.002
    assert all(abs(c - t.clock_ghz) < 0.01 for c in without)
    p = tm.params_of("h200")
    cycles = 1.0e6
    assert float(tm.predicted_ms(cycles, p, True)) == pytest.approx(cycles / (t.tensor_clock_ghz * 1e6)
                                                                   + float(p["launch_overhead_us"]) * 1e-3, rel=1e-5)
    assert float(tm.predicted_ms(cycles, p)) < float(tm.predicted_ms(cycles, p, True))
