"""The fast replay (`timing.run(..., replay="fast")`: every warp scheduler of an SM that can issue in an
interval issues in one step) against the cycle-by-cycle reference (`replay="exact"`).

On one scheduler the two replays are the same machine stepped the same way: every stat must agree. On the
H200's four schedulers the fast one may order two schedulers' issues within one interval differently; the
departures measured on every calibration sample (119 micro-kernels and ladder rungs, docs/timing.md) give
the bound FAST_TOLERANCE."""
import functools

import jax.numpy as jnp
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.timing import replay as tm
from jaxsimt.timing import trace as tr
from jaxsimt.arch import get_arch

from test_timing import ARCH, STEPS, assert_gradients_match, barrier, chain, independent, params, staged

# kernel cycles, fast vs exact, relative. Measured on the 119 calibration samples with the fitted H200
# parameters (docs/timing.md, "The fast replay"): every micro-kernel equal, the ladder's rungs within
# 6.4e-3 (coarsened at 2048^3), mean 2.4e-4; a little over twice the largest bounds it here
FAST_TOLERANCE = 0.015
ARCH4 = get_arch("h200").replace(num_sms=1)  # the H200's four schedulers on one SM

CASES = [(chain, 1, 32, 1), (chain, 1, 64, 1), (barrier, 1, 64, 1), (chain, 4, 32, 2), (chain, 4, 32, 4),
         (independent, 1, 64, 1), (staged, 1, 64, 1), (staged, 2, 64, 2), (barrier, 4, 128, 2)]


@functools.lru_cache(maxsize=None)
def _trace(kernel, grid, block, arch=ARCH):
    """The case's trace (the functional run does not depend on the number of schedulers: one trace serves
    both variants)."""
    args = (np.arange(64, dtype=np.float32),) if kernel is staged else (np.zeros(128, np.float32), np.float32(0.5))
    return tr.from_launch(js.launch(kernel, grid, block, args, arch=arch, trace=True))


def _both(arch, p, policy="gto"):
    """Every case's stats from the exact and the fast replay (each as one batch: one compilation)."""
    works = [tm.plan(_trace(k, g, b), arch, R, steps=STEPS) for k, g, b, R in CASES]
    return [[tm.summarize(w, o, p, arch) for w, o in zip(works, tm.run_many(works, p, policy, replay=r))]
            for r in ("exact", "fast")]


@pytest.mark.parametrize("policy", [pytest.param("gto", marks=pytest.mark.slow), "lrr"])
def test_one_scheduler_the_fast_replay_is_the_exact_one(policy):
    for case, exact, fast in zip(CASES, *_both(ARCH, params(block_dispatch_cycles=3.0), policy)):
        for k, v in exact.items():
            assert fast[k] == pytest.approx(v, rel=1e-5, abs=1e-3), (case[0].__name__, case[1:], k)


def test_four_schedulers_within_the_tolerance():
    dep = []
    for exact, fast in zip(*_both(ARCH4, tm.params_of("h200"))):
        dep.append(fast["cycles"] / exact["cycles"] - 1.0)
        assert fast["stall_selected"] == exact["stall_selected"]  # the same instructions issued
    assert max(abs(d) for d in dep) <= FAST_TOLERANCE, dep


@pytest.mark.slow  # tracing two rungs and compiling their replays: ~30 s on 2 CPU cores
def test_ladder_rungs_within_the_tolerance():
    """Two rungs of the ladder, traced from their PTX at 128^3 (the blocks of the busiest SM),
    replayed both ways with the fitted H200 parameters."""
    from jaxsimt.apps import ladder

    by = {r.name: r for r in ladder.rungs()}
    p = tm.params_of("h200")
    for name in ("naive_coalesced", "smem_tiled"):
        t, n_ctas = ladder.trace_rung(by[name], 128, 128, 128, "h200", 4)
        work = tm.plan(t, "h200", 4, n_ctas)
        exact, fast = (float(tm.kernel_cycles(work, p, replay=r)) for r in ("exact", "fast"))
        assert fast == pytest.approx(exact, rel=FAST_TOLERANCE), name


def assert_batch_is_each_alone(replay: str, n_cases: int):
    """`run_many` of the first n_cases CASES through `replay` gives each the cycles `kernel_cycles` gives it alone."""
    p = params()
    works = [tm.plan(_trace(k, g, b), ARCH, R, steps=STEPS) for k, g, b, R in CASES[:n_cases]]
    alone = [float(tm.kernel_cycles(w, p, replay=replay)) for w in works]
    batch = [float(jnp.max(o["cycles"])) for o in tm.run_many(works, p, replay=replay)]
    assert batch == pytest.approx(alone)
    return works, p


def test_a_batch_of_fast_replays_is_each_replay_alone():
    works, p = assert_batch_is_each_alone("fast", 2)
    with pytest.raises(ValueError, match="replay"):
        tm.run(works[0], p, replay="approximate")


def test_the_fast_replay_has_gradients_in_the_latencies_it_uses():
    assert_gradients_match("fast", ("fma_latency", "shared_latency", "l1_latency", "l2_latency", "dram_latency",
                                    "barrier_latency", "block_launch_cycles", "alu_latency", "dram_gbytes_per_s"))
