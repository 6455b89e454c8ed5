"""The GEMM ladder at a large K from two runs at small K (`jaxsimt.timing.kscale`): exact, checked against runs at
the real K (counters, traces, the replay's window), and refused where a count is not affine in K."""
import numpy as np
import pytest

from jaxsimt.timing import kscale, replay as timing
from jaxsimt.apps import ladder
from jaxsimt.kernels.gemm import fast

RUNGS = {r.name: r for r in ladder.rungs()}


def test_affine_is_exact_on_integers_and_refuses_what_is_not_affine():
    assert kscale.affine(10, 18, 64, 128, 1024) == 10 + 8 * 15
    np.testing.assert_array_equal(kscale.affine(np.array([3, 5]), np.array([5, 9]), 64, 128, 256), [9, 17])
    with pytest.raises(kscale.NotAffine, match="not affine"):
        kscale.affine(3, 4, 64, 128, 96)  # 3.5 at K=96: no whole count
    assert kscale.applies(4096) and kscale.applies(192)
    assert not kscale.applies(kscale.K2) and not kscale.applies(1000)  # too small; not a multiple of ALIGN_K


def test_counters_at_large_k_equal_a_run_at_that_k():
    rung = RUNGS["naive_coalesced"]
    M = N = 32
    K = 320
    got, rows, classes = ladder.gemm_stats(rung, M, N, K, "h200")
    want, want_rows, want_classes = fast.gemm_stats(rung.name, rung.kernel(), M, N, K, arch="h200",
                                                    args=rung.args(M, N, K), launch_config=rung.launch_config)
    assert classes == want_classes
    assert {k: v for k, v in got.items() if k != "emulator__steps"} == \
        {k: v for k, v in want.items() if k != "emulator__steps"}
    assert got["emulator__steps"] < want["emulator__steps"]  # the two short runs emulate fewer steps
    assert rows == want_rows


@pytest.mark.slow  # three traced runs per rung (~20 s each on 2 CPU cores)
@pytest.mark.parametrize("name", ["naive_uncoalesced", "register_tiled", "wmma"])
def test_extrapolated_trace_replays_as_the_trace_at_that_k(name):
    rung = RUNGS[name]
    M = N = 256
    K = 1024
    R = int(ladder.counters_row(rung, 64, 64, 64, "h200")["stats"]["active_blocks_per_sm"])
    full, _ = ladder.trace_rung(rung, M, N, K, "h200", R, stream_k=K)
    ext, _ = ladder.trace_rung(rung, M, N, K, "h200", R)
    assert ext.meta["stream_k"] == ladder.STREAM_K and "stream_k" not in full.meta
    np.testing.assert_array_equal(ext.length, full.length[:len(ext.length)])
    n = ext.meta["stream_length"]
    for w in range(len(n)):  # the shared prefix is the full stream's
        np.testing.assert_array_equal(ext.pcs[w, :n[w]], full.pcs[w, :n[w]])
    for f in ("requests", "sectors", "wavefronts", "hit_l1", "to_dram"):
        np.testing.assert_allclose(getattr(ext, f), getattr(full, f), rtol=1e-6, err_msg=f)
    # one round of blocks traced instead of two: where the replay's window stays inside the loop it is the
    # same replay; where it does not (a grid this small can finish inside the window: wmma here), the ladder
    # traces longer streams until it does, or the real K
    p = timing.params_of("h200")
    o_full = timing.run(timing.plan(full, "h200", R, full.meta["n_ctas"]), p)
    o_ext = timing.run(timing.plan(ext, "h200", R, ext.meta["n_ctas"]), p)
    if kscale.window_within(ext, o_ext):
        assert float(np.max(o_ext["cycles"])) == pytest.approx(float(np.max(o_full["cycles"])), rel=1e-6)
    got = ladder.timing_of(rung, M, N, K, "h200", R)["cycles"]
    assert got == pytest.approx(float(np.max(o_full["cycles"])), rel=1e-6)


def test_a_window_past_the_shared_prefix_is_detected():
    class T:  # two traced warps whose K2 streams share 5 and 3 instructions with the full ones
        meta = {"stream_length": np.array([5, 3])}
        length = np.array([50, 30])

    warp = np.array([[0, 1, 0, 1, 0, 0, 0, 0]])
    past = {"timeline": (None, None, None, np.array([[0, 1, 2, 3, 4, 5, 6, -1]]), warp)}
    assert not kscale.window_within(T, past)  # warp 0 issued 5: the 5th is past the shared prefix
    inside = {"timeline": (None, None, None, np.array([[0, 1, 2, 3, -1, -1, -1, -1]]), warp)}
    assert kscale.window_within(T, inside)  # two issues each
