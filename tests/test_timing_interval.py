"""The interval model (`timing.run(..., replay="interval")`: the warps' isolated pass, combined per SM by mean value
analysis) against hand-computed cases and the cycle-by-cycle reference (`replay="exact"`).

With one warp nothing is shared: the model is the exact replay. With many, it is a mean over the warps; the
departures measured on every calibration sample (docs/timing.md, "The interval model") give the bound
INTERVAL_TOLERANCE for the hand-made kernels on the H200's four schedulers."""
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.timing import interval as iv
from jaxsimt.timing import replay as tm
from jaxsimt.timing import trace as tr

from test_timing import ARCH, B, F, STEPS, assert_gradients_match, chain, independent, params
from test_timing_fast import ARCH4, CASES, _trace, assert_batch_is_each_alone

# kernel cycles, interval vs exact, relative: the hand-made cases on four schedulers measured within 1.3%, the 32
# contending warps of test_many_warps_are_held_to_the_issue_rate 2.6% (the 119 calibration samples: mean 0.4-3.6%
# per family, at most 12.8%, docs/timing.md)
INTERVAL_TOLERANCE = 0.05


def _mva_by_hand(D, Z, N, local=None):
    """Mean value analysis in its textbook form (think time Z, residence R = D (1 + Q)), one customer at a time
    (numpy)."""
    local = np.ones(len(D)) if local is None else np.asarray(local)
    q = np.zeros(len(D))
    for n in range(1, N + 1):
        r = np.asarray(D) * (1 + q * local)
        x = n / (Z + r.sum())
        q = x * r
    return x, r


def _wide():
    """32 warps of `independent` in one block."""
    return tr.from_launch(js.launch(independent, 1, 1024, (np.zeros(1024, np.float32), np.float32(0.5)), arch=ARCH,
                                    trace=True))


def test_mva_against_the_recursion_by_hand():
    # one queue, D = 2, Z = 8: X(1) = 1/10; Q(1) = 0.2, R(2) = 2.4, X(2) = 2/10.4; R(3) = 2(1 + 2 * 2.4/10.4)
    # (`mva` takes a customer's time alone, think time plus service: 10)
    x, r = iv.mva(jnp.asarray([2.0]), jnp.float32(10.0), jnp.float32(1), 8, jnp.asarray([1.0]))
    assert float(x) == pytest.approx(0.1) and float(r[0]) == pytest.approx(2.0)
    x, r = iv.mva(jnp.asarray([2.0]), jnp.float32(10.0), jnp.float32(3), 8, jnp.asarray([1.0]))
    assert float(r[0]) == pytest.approx(2.0 * (1 + 2 * 2.4 / 10.4), rel=1e-5)
    assert float(x) == pytest.approx(3 / (8 + float(r[0])), rel=1e-5)
    D, local = [3.0, 1.0, 0.5], [0.25, 1.0, 1.0]
    for n in (1, 5, 17, 64):
        x, r = iv.mva(jnp.asarray(D), jnp.float32(20.0 + sum(D)), jnp.float32(n), 64, jnp.asarray(local))
        xe, re = _mva_by_hand(D, 20.0, n, local)
        assert float(x) == pytest.approx(xe, rel=1e-4) and np.asarray(r) == pytest.approx(re, rel=1e-4)


def test_mva_saturates_at_the_bottleneck():
    # many customers: throughput 1 / (largest demand); a queue of NSCH copies serves NSCH times as many
    x, _ = iv.mva(jnp.asarray([2.0, 0.5]), jnp.float32(12.5), jnp.float32(400), 400, jnp.asarray([1.0, 1.0]))
    assert float(x) == pytest.approx(0.5, rel=1e-2)
    x, _ = iv.mva(jnp.asarray([2.0, 0.5]), jnp.float32(12.5), jnp.float32(400), 400, jnp.asarray([0.25, 1.0]))
    assert float(x) == pytest.approx(2.0, rel=2e-2)


def test_one_warp_is_the_exact_replay():
    # fma -> fma -> fma -> st -> exit with nothing shared: B + 3F + 2 cycles, as test_timing derives
    work = tm.plan(_trace(chain, 1, 32), ARCH, 1, steps=STEPS)
    out = tm.run(work, params(), replay="interval")
    assert float(out["cycles"][0]) == pytest.approx(B + 3 * F + 2)
    assert float(out["stretch"][0]) == pytest.approx(1.0)
    assert float(tm.kernel_cycles(work, params())) == pytest.approx(B + 3 * F + 2)


def test_many_warps_are_held_to_the_issue_rate():
    # 32 warps of independent FMAs on one scheduler: alone each takes ~B + 3 + F + a few cycles, together they
    # issue one instruction per cycle, so the kernel takes at least their instructions in cycles
    t = _wide()
    work = tm.plan(t, ARCH, 1, steps=STEPS)
    out = tm.run(work, params(), replay="interval")
    issued = int(np.sum(np.asarray(t.length)))  # folded instructions included; the issue slots are fewer
    folded = int(sum(np.asarray(t.folded)[pc] for row, n in zip(t.pcs, t.length) for pc in row[:n]))
    assert float(out["cycles"][0]) >= B + issued - folded
    assert float(out["stretch"][0]) > 2.0
    exact = float(tm.kernel_cycles(work, params()))
    assert float(out["cycles"][0]) == pytest.approx(exact, rel=INTERVAL_TOLERANCE)


def test_four_schedulers_within_the_tolerance():
    p = tm.params_of("h200")
    works = [tm.plan(_trace(k, g, b), ARCH4, R, steps=STEPS) for k, g, b, R in CASES]
    both = [[tm.summarize(w, o, p, ARCH4) for w, o in zip(works, tm.run_many(works, p, replay=r))]
            for r in ("exact", "interval")]
    dep = []
    for exact, inter in zip(*both):
        dep.append(inter["cycles"] / exact["cycles"] - 1.0)
        assert inter["stall_selected"] == exact["stall_selected"]  # the same instructions issued
    assert max(abs(d) for d in dep) <= INTERVAL_TOLERANCE, dep


def test_a_batch_is_each_alone():
    assert_batch_is_each_alone("interval", 3)


def test_the_interval_model_has_gradients():
    assert_gradients_match("interval", ("fma_latency", "shared_latency", "l1_latency", "dram_latency",
                                        "barrier_latency", "block_launch_cycles", "alu_dispatch_cycles",
                                        "dram_gbytes_per_s"))


def test_a_launch_chooses_the_interval_model():
    args = (np.zeros(1024, np.float32), np.float32(0.5))
    r = js.launch(independent, 1, 1024, args, arch=ARCH, timing=True, replay="interval")
    exact = js.launch(independent, 1, 1024, args, arch=ARCH, timing=True)
    assert r.stats["cycles"] == pytest.approx(exact.stats["cycles"], rel=INTERVAL_TOLERANCE)
    assert r.stats["stall_selected"] == exact.stats["stall_selected"]
    with pytest.raises(js.errors.ArgumentError, match="kernel independent: replay='cycle' is not a replay"):
        js.launch(independent, 1, 1024, args, arch=ARCH, timing=True, replay="cycle")


def test_without_the_timeline_the_same_results():
    t = _wide()
    w = tm.plan(t, ARCH, 1, steps=STEPS)
    full, bare = (tm.run(w, params(), replay="interval", timeline=x) for x in (True, False))
    assert "timeline" in full and "timeline" not in bare
    for key in ("cycles", "stall", "issued", "warp_cycles"):
        np.testing.assert_array_equal(np.asarray(full[key]), np.asarray(bare[key]), err_msg=key)


def _wmma_work():
    from jaxsimt.apps import ladder

    rung = next(r for r in ladder.rungs() if r.name == "wmma")
    t, n_ctas = ladder.trace_rung(rung, 128, 128, 64, ARCH, 4)
    return tm.plan(t, ARCH, 4, n_ctas)


def test_wide_instructions_read_for_a_few_warps_a_step(monkeypatch):
    """The WMMA rung's mma reads 24 register groups: `operand_widths` marks it wide, and reading its operands for
    every warp (WIDE_SHARE 1) gives the single-width replay's cycles exactly; with the default share the warps
    that wait for a later step move the window's halves a little."""
    w = _wmma_work()
    widths = iv.operand_widths(w.kernel)
    assert widths[0] == 24 and widths[2:] == (3, 1)
    args = (tm.params_of(ARCH), w.kernel, jnp.asarray(w.queues), jnp.asarray(w.n_queue), jnp.asarray(w.share),
            jnp.asarray(w.total), jnp.int32(1), jnp.int32(w.shape.steps))
    shape = iv.shape_with(w.shape, w.shape.steps)

    def cycles(ws):
        out = iv.replay_sms_interval(*args, shape=shape, n_regs=w.n_regs, widths=ws, timeline=False)
        return float(np.max(np.asarray(out["cycles"])))

    one = cycles(widths[:2])
    assert cycles(widths) == pytest.approx(one, rel=0.03)
    monkeypatch.setattr(iv, "WIDE_SHARE", 1)
    assert cycles(widths) == one
