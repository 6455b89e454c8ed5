"""The replay window (`timing.window_steps`): sized by the resident warps and each warp's way into its
outermost loop, so that the second half of the window, whose rate is extrapolated to the whole queue, is
past every warp's first pass through that loop; and works of several windows replayed as one batch."""
import types

import jax.numpy as jnp
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f32
from jaxsimt.timing import replay as tm
from jaxsimt.timing import trace as tr

from test_timing import ARCH, params


def _streams(*rows):
    """A trace-like object of the given per-warp pc streams (-1 padded)."""
    L = max(len(r) for r in rows)
    pcs = np.full((len(rows), L), -1, np.int32)
    for i, r in enumerate(rows):
        pcs[i, :len(r)] = r
    return types.SimpleNamespace(pcs=pcs, length=np.asarray([len(r) for r in rows]))


def test_warmup_is_the_prologue_and_two_passes_of_the_outermost_loop():
    prologue = list(range(5))  # pcs 0-4
    inner = [7, 8, 9] * 4  # an inner loop: back edge 9 -> 7 (spans 2 pcs)
    body = [5, 6] + inner + [10, 11]  # the outer loop: back edge 11 -> 5 (spans 6 pcs)
    stream = prologue + body * 6 + [12, 13]
    # the second jump 11 -> 5 lands at position 5 + 2 * len(body): that many instructions and its target
    assert tm.warmup(_streams(stream)) == len(prologue) + 2 * len(body) + 1
    # the longest warp's way in counts: a warp whose inner loop runs longer needs more
    body2 = [5, 6] + [7, 8, 9] * 6 + [10, 11]
    assert tm.warmup(_streams(stream, prologue + body2 * 6)) == len(prologue) + 2 * len(body2) + 1


def test_warmup_without_a_loop_is_zero_and_of_a_loop_run_once_the_whole_stream():
    assert tm.warmup(_streams(list(range(40)))) == 0
    once = [0, 1, 2, 3, 1, 4, 5]  # one jump 3 -> 1: the loop's second pass never comes
    assert tm.warmup(_streams(once)) == len(once)


def test_the_window_is_a_power_of_two_within_its_bounds_and_the_budget():
    t = _streams([0, 1] + [2, 3, 4, 5] * 300)  # warmup 2 + 2 * 4 + 1 = 11
    assert tm.window_steps(t, 4) == tm.WINDOW_MIN
    big = _streams([0] + list(range(1, 401)) * 3)  # warmup 1 + 800 + 1
    assert tm.window_steps(big, 64) == tm.WINDOW_MAX  # 2 * 64 * 802 steps, capped
    assert tm.window_steps(big, 16) == 32768  # 2 * 16 * 802 = 25664, the next power of two
    assert tm.window_steps(big, 64, n_sms=128) == tm.WINDOW_BUDGET // 128
    assert tm.window_steps(big, 64, n_sms=10 ** 6) == tm.WINDOW_MIN  # never below the smallest window


@js.kernel
def looped(x: Ptr[f32], a: f32, n: js.s32):
    acc = js.var(a)
    for k in js.range(n):
        acc.set(js.fma(acc, acc, x[(js.threadIdx.x + k) % 64]))
    x[js.threadIdx.x] = acc


def _work(steps: int, n: int = 40):
    r = js.launch(looped, 4, 64, (np.arange(64, dtype=np.float32), np.float32(0.5), np.int32(n)), arch=ARCH,
                  trace=True)
    return tm.plan(tr.from_launch(r), ARCH, 2, steps=steps)


def test_works_of_different_windows_replay_as_one_batch_each_with_its_own_window():
    p = params()
    works = [_work(256), _work(512)]
    assert works[0].total.max() > 512  # both extrapolate
    alone = [tm.run(w, p) for w in works]
    batch = tm.run_many(works, p)
    for w, a, b in zip(works, alone, batch):
        assert int(np.asarray(b["issued"]).max()) == w.shape.steps
        assert float(jnp.max(b["cycles"])) == pytest.approx(float(jnp.max(a["cycles"])), rel=1e-6)
    # the windows differ, and so do their extrapolations: the batch did not replay both over the longer one
    assert float(jnp.max(batch[0]["cycles"])) != pytest.approx(float(jnp.max(batch[1]["cycles"])), rel=1e-6)


def test_plan_sizes_the_window_from_the_trace_unless_told():
    r = js.launch(looped, 4, 64, (np.arange(64, dtype=np.float32), np.float32(0.5), np.int32(2000)), arch=ARCH,
                  trace=True)
    t = tr.from_launch(r)
    w = tm.plan(t, ARCH, 2)
    assert w.shape.steps == min(tm.window_steps(t, 2 * 2, 1), tm._pow2(int(w.total.max())))
    assert tm.plan(t, ARCH, 2, max_steps=1024).shape.steps == 1024
    assert tm.plan(t, ARCH, 2, steps=512).shape.steps == 512


def test_the_ladder_profiled_at_its_timed_sizes():
    """The held-out ladder's Nsight Compute fixture (`ladder_ncu/`): every rung at every timed size, its
    busiest SM's cycles over its duration at the SM clock ncu saw, and that clock the H200's 1.98 GHz but
    for the Tensor Core rung (about 1.8 GHz while it runs)."""
    from jaxsimt.apps import fixtures

    lad = fixtures.ladder_ncu("h200")
    times = fixtures.timings("h200")
    for (rung, n), m in lad.items():
        ghz = m["sm__cycles_elapsed.avg.per_second"] / 1e9
        # (within 5%: the duration also holds the launch, a few microseconds of the shortest rungs)
        assert m["sm__cycles_active.max"] / m["gpu__time_duration.sum"] == pytest.approx(ghz, rel=0.05), (rung, n)
        assert ghz == pytest.approx(1.8 if rung == "wmma" else 1.98, rel=0.02), (rung, n)
        # the profiled launch took the CUDA-event time of the timed ones
        assert m["gpu__time_duration.sum"] * 1e-6 == pytest.approx(times[(rung, n)]["median_ms"], rel=0.03)
        assert sum(v for k, v in m.items() if "stalled_selected" in k) == pytest.approx(1.0)
    assert {n for _, n in lad} == {1024, 2048, 4096} and len(lad) == 18


@pytest.mark.slow  # traces two rungs at 1024^3 and replays them over up to 131072 steps: ~2 min on 2 cores
def test_the_sized_window_is_steady_where_the_shortest_window_is_not():
    """Doubling the sized window moves the prediction by under 5% (its second half is steady state), where
    the shortest window (WINDOW_MIN) is off by more than 20% for coarsened: 64 resident warps, about 320
    instructions per warp and k-tile."""
    from jaxsimt.apps import ladder

    by = {r.name: r for r in ladder.rungs()}
    p = tm.params_of("h200")
    n = 1024
    for name in ("coarsened", "smem_tiled"):
        R = int(ladder.analyse(by[name], n, n, n, "h200")["stats"]["active_blocks_per_sm"])
        _, w, out = ladder.replay_rung(by[name], n, n, n, "h200", R, p)
        sized = float(np.max(out["cycles"]))
        _, _, out2 = ladder.replay_rung(by[name], n, n, n, "h200", R, p, max_steps=2 * w.shape.steps)
        assert float(np.max(out2["cycles"])) == pytest.approx(sized, rel=0.05), name
        if name == "coarsened":
            _, _, short = ladder.replay_rung(by[name], n, n, n, "h200", R, p, max_steps=tm.WINDOW_MIN)
            assert abs(float(np.max(short["cycles"])) / sized - 1) > 0.2
