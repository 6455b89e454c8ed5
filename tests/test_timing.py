"""The cycle-level timing model on hand-computable cases, and its gradients against finite differences.

Every case runs on a one-SM, one-scheduler H200 variant with round numbers for the latencies and every
issue interval 1, so the expected cycles follow from the kernels' instruction lists (see each test)."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f32
from jaxsimt.timing import replay as tm
from jaxsimt.timing import trace as tr
from jaxsimt.arch import get_arch

B, F = 5.0, 7.0  # block launch cycles, FMA latency
ARCH = get_arch("h200").replace(num_sms=1, warp_schedulers_per_sm=1)
STEPS = 256  # one compiled replay shape for every case


def params(**kw):
    p = tm.starting_params(ARCH)
    p.update({k: jnp.float32(v) for k, v in dict(
        block_launch_cycles=B, fma_latency=F, alu_latency=3.0, branch_latency=2.0, barrier_latency=11.0,
        alu_issue=1.0, alu_dispatch_cycles=1.0, fp32_issue=1.0, sfu_issue=1.0, lsu_issue=1.0, control_issue=1.0, l1_latency=40.0,
        l2_latency=40.0, dram_latency=40.0, l2_bytes_per_cycle=1e6, dram_gbytes_per_s=1e9).items()})
    p.update({k: jnp.float32(v) for k, v in kw.items()})
    return p


@js.kernel
def chain(x: Ptr[f32], a: f32):
    b = js.fma(a, a, a)
    c = js.fma(b, b, b)
    d = js.fma(c, c, c)
    x[0] = d


@js.kernel
def independent(x: Ptr[f32], a: f32):
    b = js.fma(a, a, 1.0)
    c = js.fma(a, a, 2.0)
    d = js.fma(a, a, 3.0)
    x[js.threadIdx.x] = b + c + d


@js.kernel
def barrier(x: Ptr[f32], a: f32):
    v = js.var(a)
    with js.if_(js.warpid() == 0):
        v.set(js.fma(v, v, v))
        v.set(js.fma(v, v, v))
        v.set(js.fma(v, v, v))
    js.syncthreads()
    x[js.threadIdx.x] = v


@js.kernel
def staged(x: Ptr[f32]):
    s = js.shared((64,), f32)
    i = js.threadIdx.x
    v = x[i]
    s[i] = v
    js.syncthreads()
    w = s[63 - i]
    x[i] = js.fma(w, w, v)


def run(kernel, grid, block, blocks_per_sm, policy="gto", p=None, args=None):
    args = args if args is not None else (np.zeros(64, np.float32), np.float32(0.5))
    r = js.launch(kernel, grid, block, args, arch=ARCH, trace=True)
    t = tr.from_launch(r)
    stats, work, out = tm.predict(t, ARCH, blocks_per_sm, p or params(), policy, steps=STEPS)
    return stats, t, out


def issues(t, out):
    """(time, traced warp, pc) of every issue of the first simulated SM, in issue order."""
    time, _, _, pc, warp, _, _ = (np.asarray(y[0]) for y in out["timeline"])
    ok = pc >= 0
    return time[ok], warp[ok], pc[ok]


def test_one_warp_of_dependent_instructions_takes_the_sum_of_latencies():
    # fma -> fma -> fma -> st -> exit: each fma waits for the previous one (F), the store for the last
    # fma, exit issues the next cycle and the warp ends one cycle later
    stats, t, out = run(chain, 1, 32, 1)
    assert [tr.CLASS_NAMES[t.cls[pc]] for pc in t.pcs[0][t.pcs[0] >= 0]] == ["fp32"] * 3 + ["global", "control"]
    assert stats["cycles"] == pytest.approx(B + 3 * F + 2)
    assert stats["stall_wait"] == pytest.approx(3 * (F - 1))  # each dependent instruction waits F - 1 cycles


def test_two_independent_warps_hide_each_others_latency():
    one = run(chain, 1, 32, 1)[0]["cycles"]
    two, t, out = run(chain, 1, 64, 1)
    # the second warp's FMAs issue one cycle behind the first's on the same scheduler, their latencies
    # overlap; only the four last issues (st, exit of each warp) compete for the scheduler: two cycles
    # more than one warp, not twice as long
    assert two["cycles"] == pytest.approx(one + 2)
    assert two["stall_not_selected"] > 0


def test_barrier_releases_every_warp_after_the_last_arrival():
    p = params()
    stats, t, out = run(barrier, 1, 64, 1, p=p)
    time, warp, pc = issues(t, out)
    bar = [pc_ for pc_ in range(len(t.cls)) if t.cls[pc_] == tr.BARRIER][0]
    arrive = {w: time[(warp == w) & (pc == bar)][0] for w in (0, 1)}
    after = {w: time[(warp == w) & (time > arrive[w])].min() for w in (0, 1)}
    release = max(arrive.values()) + float(p["barrier_latency"])
    assert arrive[1] < arrive[0]  # warp 1 skipped the three FMAs
    assert after[0] == pytest.approx(release)
    assert after[1] == pytest.approx(release + 1)  # one scheduler: warp 1 issues the next cycle
    assert stats["stall_barrier"] == pytest.approx((release - arrive[0] - 1) + (release - arrive[1] - 1))


def test_occupancy_limits_dispatch_of_more_blocks_than_fit():
    # 4 one-warp blocks on one SM. Two resident: as in the two-warp case blocks 0 and 1 end at B+3F+2
    # and B+3F+4; blocks 2 and 3 start B cycles after their slot frees and take 3F+2 more each.
    two = run(chain, 4, 32, 2)[0]
    assert two["cycles"] == pytest.approx((B + 3 * F + 4) + B + 3 * F + 2)
    # four resident: one round, the FMAs one cycle apart; the 8 last issues (st, exit) take 8 cycles
    four = run(chain, 4, 32, 4)[0]
    assert four["cycles"] == pytest.approx(B + 3 * F + 8)
    assert four["timing__achieved_occupancy"] > two["timing__achieved_occupancy"]


def test_an_sm_starts_one_block_per_dispatch_interval():
    # block_dispatch_cycles D = 100, far longer than one block's 3F + 2 cycles: block k starts at B + kD,
    # whether the four fit at once (4 resident) or the last two wait for a slot (2 resident)
    for resident in (4, 2):
        st = run(chain, 4, 32, resident, p=params(block_dispatch_cycles=100.0))[0]
        assert st["cycles"] == pytest.approx(B + 3 * 100.0 + 3 * F + 2), resident


def test_gto_and_lrr_order_two_warps_differently():
    _, t, out = run(independent, 1, 64, 1, policy="gto")
    _, gto_warps, _ = issues(t, out)
    _, t, out = run(independent, 1, 64, 1, policy="lrr")
    _, lrr_warps, _ = issues(t, out)
    # greedy-then-oldest keeps issuing the oldest warp while it is ready; round-robin alternates
    assert gto_warps[:3].tolist() == [0, 0, 0]
    assert lrr_warps[:4].tolist() == [0, 1, 0, 1]


GRADIENT_PARAMS = dict(l2_latency=200.0, dram_latency=500.0, l1_latency=30.0, shared_latency=23.0,
                       dram_gbytes_per_s=1000.0)


def assert_gradients_match(replay: str, names, at_least: int = 5):
    """jax.grad of the `staged` kernel's cycles through `replay` against central differences, parameter by
    parameter; at least `at_least` of them move the cycles."""
    r = js.launch(staged, 1, 64, (np.arange(64, dtype=np.float32),), arch=ARCH, trace=True)
    work = tm.plan(tr.from_launch(r), ARCH, 1, steps=STEPS)
    p = params(**GRADIENT_PARAMS)
    g = jax.grad(lambda q: tm.kernel_cycles(work, q, replay=replay))(p)
    f = lambda q: float(tm.kernel_cycles(work, q, replay=replay))  # noqa: E731
    nonzero = 0
    for name in names:
        h = 0.25
        fd = (f({**p, name: p[name] + h}) - f({**p, name: p[name] - h})) / (2 * h)
        assert np.isfinite(float(g[name])), name
        assert float(g[name]) == pytest.approx(fd, abs=1e-2), name
        nonzero += abs(fd) > 0
    assert nonzero >= at_least


@pytest.mark.slow  # compiling the reverse pass of the replay takes ~50 s on 2 CPU cores
def test_gradients_match_finite_differences():
    assert_gradients_match("exact", ("fma_latency", "shared_latency", "l1_latency", "l2_latency", "dram_latency",
                                     "barrier_latency", "block_launch_cycles", "alu_latency"))


def test_traces_follow_the_executed_blocks():
    r = js.launch(barrier, 1, 64, (np.zeros(64, np.float32), np.float32(0.5)), arch=ARCH, trace=True)
    t = tr.from_launch(r)
    n_fma = [int(np.sum(t.cls[t.pcs[w][t.pcs[w] >= 0]] == tr.FP32)) for w in range(2)]
    assert n_fma == [3, 0]  # warp 0 ran the guarded FMAs, warp 1 did not
    assert t.length.sum() == r.stats["smsp__inst_executed.sum"]


def test_launch_with_timing_reports_cycles_stalls_and_a_timeline_plot(tmp_path):
    r = js.launch(barrier, 1, 64, (np.zeros(64, np.float32), np.float32(0.5)), arch=ARCH, timing=True)
    s = r.stats
    assert s["cycles"] > 0
    p = tm.params_of(ARCH)
    assert s["predicted_ms"] == pytest.approx(s["cycles"] / (float(p["clock_ghz"]) * 1e6)
                                              + float(p["launch_overhead_us"]) * 1e-3)
    assert s["predicted_ms_analytical"] > 0
    t = r.timing["trace"]
    pcs = t.pcs[t.pcs >= 0]
    assert t.folded.any()  # js.var's moves: the hardware issues no instruction for them
    assert s["stall_barrier"] > 0 and s["stall_selected"] == np.sum(~t.folded[pcs]) < s["smsp__inst_executed.sum"]
    assert 0 < s["timing__achieved_occupancy"] <= 2 / ARCH.max_warps_per_sm
    path = tmp_path / "timeline.png"
    tm.plot_timeline(r.timing["output"], str(path))
    assert path.stat().st_size > 1000


def test_calibration_split_holds_out_a_family_and_the_timed_ladder():
    from jaxsimt.apps import calibrate

    assert calibrate._split("micro_shared", 0) == calibrate._split("micro_divergence", 0) == "train"
    assert calibrate._split("micro_global", 0) == "held_out"
    assert calibrate._split("ladder", 256) == "train"
    assert all(calibrate._split("ladder", n) == "held_out" for n in (1024, 2048, 4096))
    assert calibrate.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert calibrate.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)


def test_ladder_traces_the_ptx_the_hardware_ran():
    """The cycle-level ladder replays nvcc's PTX of the rung: the same blocks and memory behaviour as the
    DSL copy, with far fewer instructions (nearer the SASS the H200 ran, see docs/timing.md)."""
    from jaxsimt.apps import ladder

    rung = {r.name: r for r in ladder.rungs()}["naive_coalesced"]
    n = 64
    t_ptx, n_ptx = ladder.trace_rung(rung, n, n, n, "h200", 8, source="ptx")
    t_dsl, n_dsl = ladder.trace_rung(rung, n, n, n, "h200", 8, source="dsl")
    assert n_ptx == n_dsl == 16 and t_ptx.meta["source"] == "ptx"
    assert t_ptx.n_blocks == t_dsl.n_blocks == 16
    assert t_ptx.length.sum() < 0.7 * t_dsl.length.sum()
    with pytest.raises(ValueError, match="source"):
        ladder.trace_rung(rung, n, n, n, "h200", 8, source="sass")


def test_committed_calibration_report_reproduces_on_held_out_kernels():
    """benchmarks/results/timing_cpu.json (bench_timing.py with the fitted H200 parameters) is what the
    replay gives: two held-out micro-kernels, traced from their PTX here, predict the reported cycles."""
    import json
    import os

    from jaxsimt.apps import calibrate

    h200 = get_arch("h200")
    assert h200.timing_fitted is not None  # the H200 runs with calibrated parameters
    p = tm.params_of("h200")
    assert float(p["l1_latency"]) == pytest.approx(h200.timing_fitted.l1_latency)
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results", "timing_cpu.json")
    with open(path) as f:
        report = json.load(f)
    rows = {r["name"]: r for r in report["rows"] if r["family"] != "ladder"}
    names = {"glob_ld_stride32", "glob_st_stride1"}
    samples = calibrate.micro_samples(names=names)
    assert {s.name for s in samples} == names and all(s.split == "held_out" for s in samples)
    for r in calibrate.evaluate(samples, p):
        want = rows[r["name"]]
        assert r["predicted_cycles"] == pytest.approx(want["predicted_cycles"], rel=1e-3)
        assert r["measured_cycles"] == want["measured_cycles"]


def test_ladder_report_predicts_with_the_calibrated_model_by_default(capsys):
    import json

    from jaxsimt.apps import ladder

    argv = ["--size", "64", "64", "64", "--rungs", "naive_coalesced", "--json"]
    assert ladder.main(argv) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["cycles"] > 0 and row["predicted_ms"] == pytest.approx(row["timing"]["predicted_ms"])
    assert ladder.main(argv + ["--analytical-only"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["cycles"] is None and row["predicted_ms"] == row["predicted_ms_analytical"]
    assert ladder.main(argv + ["--arch", "fermi"]) == 0  # no fitted parameters: the analytical model
    (row,) = json.loads(capsys.readouterr().out)
    assert row["cycles"] is None


def test_registers_written_together_share_one_scoreboard_slot():
    """The register_tiled rung's vector shared loads write four registers at once: one slot each, and the
    replay with a slot per register (group=False) gives the same cycles, exact and interval."""
    from jaxsimt.apps import ladder

    rung = next(r for r in ladder.rungs() if r.name == "register_tiled")
    t, n_ctas = ladder.trace_rung(rung, 128, 128, 64, ARCH, 2)
    vec = [pc for pc, (_, o) in enumerate(t.program.instructions())
           if o.operation.attr("space") == "shared" and len(o.operation.dst) == 4]
    assert vec and all(np.sum(t.dst[pc] >= 0) == 1 for pc in vec)
    cls, dst, src, n_regs = tr.static_tables(t.program, group=False)
    assert n_regs > t.n_regs and all(np.sum(dst[pc] >= 0) == 4 for pc in vec)
    apart = dataclasses.replace(t, dst=dst, src=src, n_regs=n_regs)
    for replay in ("exact", "interval"):
        got = [float(np.max(np.asarray(tm.kernel_cycles(tm.plan(x, ARCH, 2, n_ctas), tm.params_of(ARCH), replay=replay))))
               for x in (t, apart)]
        assert got[0] == got[1], replay
