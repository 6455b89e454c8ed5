"""The timing model's micro-benchmark fixture (jaxsimt/kernels/cuda/micro_timing.cu on the H200,
jaxsimt/data/h200/timing_micro/) and the fit's use of it: started from the measurements and kept within
calibrate.MEASURED_FACTOR of each."""
import jax.numpy as jnp
import pytest

from jaxsimt.apps import calibrate, fixtures


def test_the_measurements_are_ordered_as_the_hardware_is():
    m = calibrate.measured("h200")
    for k in ("fma_latency", "alu_latency", "sfu_latency", "shared_latency", "l1_latency", "l2_latency",
              "dram_latency", "l2_bytes_per_cycle", "dram_gbytes_per_s"):
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


def test_global_loads_hitting_l1_take_one_data_stage_cycle_per_line():
    """The model's L1 data-stage cost of one global request is its lines (one wavefront each, `Trace.wavefronts`)
    at the shared pipe's measured rate: against the H200's cycles per request for the request shapes of
    kernels/cuda/l1_rate.cu that only L1 bounds (1-32 lines of 1-4 sectors, each pass's addresses set up
    once), within 6%; the lines are the coalescer's count, equal to ncu's data-stage wavefronts."""
    import numpy as np

    from jaxsimt.arch import get_arch
    from jaxsimt.timing import machine
    from jaxsimt.units import coalescing

    h200 = get_arch("h200")
    meas = calibrate.measured("h200")
    p = {"shared_cycles_per_wavefront": jnp.float32(meas["shared_cycles_per_wavefront"]),
         "l1_lines_per_tag_cycle": jnp.float32(h200.timing.l1_lines_per_tag_cycle)}
    rates = fixtures.l1_rates("h200")
    shapes = [s for s in rates if s.startswith("lines_")]
    assert len(shapes) == 9
    for shape in shapes:
        n_lines, spl = (int(x) for x in shape.split("_")[1:])
        lane = np.arange(32)
        # as l1_rate.cu's `lines` kernel
        addr = (lane % n_lines) * h200.line_size + ((lane // n_lines) % spl) * h200.sector_size
        c = coalescing.coalesce("h200", addr, 4, np.ones(32, bool))
        r = rates[shape]
        assert int(c.lines) == round(r["lines"]) == n_lines and int(c.sectors) == round(r["sectors"]), shape
        got = float(machine._data_stage_cycles(jnp.float32(c.lines), p))
        assert got == pytest.approx(r["cycles_per_request"], rel=0.06), shape
        # the tag stage takes up to four lines a cycle (ncu's tag wavefronts), never the bound here
        tag = float(machine._tag_stage_cycles(jnp.float32(1.0), jnp.float32(c.lines), p))
        assert tag == pytest.approx(r["tag_wavefronts"], rel=1e-3) and tag <= got
    # the same pipe as shared accesses: a global line costs what a shared wavefront does
    assert fixtures.timing_micro("h200")["l1_global_cycles_per_line"]["value"] == pytest.approx(
        meas["shared_cycles_per_wavefront"], rel=0.05)


def test_branch_and_shuffle_terms_are_the_sms_own():
    """The branch and shuffle loops (micro_issue.cu "branch", "mio", on an H100: the H200's SM): a one-warp loop
    takes ~31 cycles an iteration whatever its body (1 to 16 FFMAs; its SASS: the body, a uniform counter,
    a compare, one branch), so the branch, not the body, sets it; four schedulers' shuffles go one an SM cycle.
    The committed fit lies within MEASURED_FACTOR of both, as of every other measurement."""
    import gzip

    from jaxsimt.kernels import sass
    from jaxsimt.timing import replay as timing

    rows = fixtures.issue_micro_runs("issue_micro/branch_mio_h100.jsonl")
    one = {r["per_iter"]: r["sm_cycles"] / r["iters"] for r in rows
           if r["group"] == "branch" and r["warps_per_scheduler"] == 1}
    assert sorted(one) == [1, 2, 4, 8, 16] and max(one.values()) / min(one.values()) < 1.01
    with gzip.open(fixtures.path("h200", "issue_micro/micro_issue_h100.sass.gz"), "rt") as f:
        fns = sass.functions(f.read())
    for n in (1, 16):
        ins = fns[f"_Z7br_loopILi{n}EEvPKfPfiPx"]
        lo, hi = max(sass.loops(ins), key=lambda x: x[1] - x[0])
        ops = [op.split(".")[0] for _, op, _ in ins[lo:hi + 1]]
        assert len(ops) == n + 3 and ops.count("FFMA") == n and ops.count("BRA") == 1
    terms = calibrate.issue_terms("h200")
    assert 20 < terms["branch_latency"] < 30
    assert terms["lsu_issue"] == pytest.approx(4.0, rel=0.02)
    p = timing.params_of("h200")
    for r in calibrate.beside_measurements(p, "h200"):
        assert r["within"], r
    assert {"branch_latency", "lsu_issue"} <= {r["param"] for r in calibrate.beside_measurements(p, "h200")}
