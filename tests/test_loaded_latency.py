"""A global request waits for the slowest of its lines: its latency rises with the lines it misses.

Against the H200's pointer chases (kernels/cuda/micro_issue.cu "loaded", data/h200/issue_micro): each of the
first 1, 4 or 32 lanes of a warp follows its own random cycle of 128-byte lines, in L2 (8 MiB) or in DRAM
(1 GiB), with 1 to 32 warps per SM."""
import numpy as np
import pytest

from jaxsimt import ptx
from jaxsimt.apps import calibrate, fixtures
from jaxsimt.arch import get_arch
from jaxsimt.timing import machine
from jaxsimt.timing import replay as timing
from jaxsimt.timing import trace as tr

H200 = get_arch("h200")


def _step_cycles(level: str) -> dict:
    """{(lanes, warps per SM): cycles per chase step} of one level's runs."""
    return {(r["lanes"], r["warps_per_sm"]): r["sm_cycles"] / r["iters"] for r in fixtures.issue_micro("h200")
            if r["group"] == "loaded" and r["level"] == level}


def test_the_rise_follows_the_lines_of_a_request_not_the_lines_in_flight():
    """The same 4,224 lines in flight on the chip (one a warp, 32 warps an SM; or 32 a warp, one warp an
    SM): the 32-line requests take far longer, at both levels."""
    for level, at_least in (("l2", 1.15), ("dram", 1.5)):
        c = _step_cycles(level)
        assert c[(32, 1)] > at_least * c[(1, 32)], level
        assert c[(1, 1)] < c[(4, 1)] * 1.15 and c[(4, 1)] < c[(32, 1)], level


def test_adjacent_lines_rise_less_from_dram_and_alike_in_l2():
    """The span runs (an H100 80GB HBM3, data/h200/issue_micro/span_h100.jsonl): 32 lines a request against one
    line, the same instructions. In L2 the rise does not depend on where the lines are; from DRAM it grows
    with their span, adjacent lines rising about half as much as random ones."""
    c = {(r["level"], r["lanes"], r["stride_lines"], r["warps_per_sm"]): r["sm_cycles"] / r["iters"]
         for r in fixtures.issue_micro_runs("issue_micro/span_h100.jsonl")}
    strides = (1, 2, 4, 8, 16, 64, 512, 0)  # 0: random lines
    rise = {lv: [c[(lv, 32, s, 4)] - c[(lv, 1, 1, 4)] for s in strides] for lv in ("l2", "dram")}
    assert max(rise["l2"]) - min(rise["l2"]) < 0.1 * min(rise["l2"])
    assert all(a <= b + 10 for a, b in zip(rise["dram"], rise["dram"][1:]))  # grows with the span
    assert 0.4 < rise["dram"][0] / rise["dram"][-1] < 0.65
    loaded = {(r["level"], r["lanes"]): r["sm_cycles"] / r["iters"]
              for r in fixtures.issue_micro_runs("issue_micro/loaded_h100.jsonl") if r["warps_per_sm"] == 1}
    for (level, lanes), h100 in loaded.items():  # the two chips' chases agree: the H100's runs speak for both
        if level == "dram":
            assert h100 == pytest.approx(_step_cycles(level)[(lanes, 1)], rel=0.05)


def test_the_measured_rise():
    """Per doubling of a request's random lines, beyond the L1TEX and bandwidth stages: a few cycles in L2
    (near and far slices), tens more from DRAM; off in the committed parameters (Timing's comment says why)."""
    got = calibrate.loaded_terms("h200")
    assert 3.0 < got["l2_latency_per_doubling"] < 15.0
    assert 60.0 < got["dram_latency_per_doubling"] < 120.0
    assert H200.timing.l2_latency_per_doubling == H200.timing_fitted.dram_latency_per_doubling == 0.0


def test_global_latency_adds_the_rise_per_doubling_of_missed_lines():
    p = dict(machine.params_of("h200"), l2_latency_per_doubling=np.float32(7.0),
             dram_latency_per_doubling=np.float32(80.0))
    s2, sd = float(p["l2_latency_per_doubling"]), float(p["dram_latency_per_doubling"])
    lat = lambda hit, dram, req, lines: float(machine._global_latency(  # noqa: E731
        np.float32(hit), np.float32(dram), np.float32(req), np.float32(lines), p))
    l1, l2, dr = float(p["l1_latency"]), float(p["l2_latency"]), float(p["dram_latency"])
    assert lat(1.0, 0.0, 1, 32) == pytest.approx(l1)  # hits wait for no line of L2's
    assert lat(0.0, 0.0, 1, 1) == pytest.approx(l2)
    assert lat(0.0, 1.0, 1, 1) == pytest.approx(dr)
    assert lat(0.0, 0.0, 1, 32) == pytest.approx(l2 + 5 * s2, rel=1e-5)
    assert lat(0.0, 1.0, 1, 32) == pytest.approx(dr + 5 * (s2 + sd), rel=1e-5)
    assert lat(0.0, 1.0, 2, 64) == pytest.approx(lat(0.0, 1.0, 1, 32))  # per request
    assert lat(0.5, 1.0, 1, 32) == pytest.approx(l1 + 0.5 * (dr - l1) + 4 * (s2 + sd), rel=1e-5)


def _chase(steps: int) -> str:
    """PTX: the first `lanes` lanes of one warp each follow a cycle of line indices (one u64 a 128-byte line)."""
    return (".version 8.0\n.target sm_90\n.address_size 64\n"
            ".visible .entry chase(.param .u64 p, .param .u64 q, .param .u32 lanes)\n{\n"
            ".reg .b32 %r<4>;\n.reg .b64 %rd<10>;\n.reg .pred %p<3>;\n"
            "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\nld.param.u32 %r2, [lanes];\n"
            "mov.u32 %r1, %tid.x;\nsetp.ge.u32 %p2, %r1, %r2;\ncvt.u64.u32 %rd3, %r1;\n"
            "mul.lo.u64 %rd3, %rd3, 977;\nmov.u32 %r3, 0;\n@%p2 bra $L_done;\n$L_loop:\n"
            "shl.b64 %rd4, %rd3, 7;\nadd.s64 %rd5, %rd2, %rd4;\nld.global.cg.u64 %rd3, [%rd5];\n"
            f"add.s32 %r3, %r3, 1;\nsetp.lt.s32 %p1, %r3, {steps};\n@%p1 bra $L_loop;\n$L_done:\n"
            "ld.param.u64 %rd6, [q];\ncvta.to.global.u64 %rd7, %rd6;\nmul.wide.u32 %rd8, %r1, 8;\n"
            "add.s64 %rd9, %rd7, %rd8;\nst.global.u64 [%rd9], %rd3;\nret;\n}\n")


@pytest.mark.parametrize("lanes", [1, 4, 32])
def test_the_replay_of_a_dram_chase_takes_the_h200s_cycles(lanes):
    """One warp chasing random lines no cache holds, replayed with the measured parameters and the measured
    rise: each step within 10% of the H200's (one warp an SM), the two address instructions a step included."""
    n, steps = 1 << 15, 32
    order = np.random.default_rng(0).permutation(n)
    buf = np.zeros(n * 16, np.uint64)
    buf[order * 16] = order[(np.arange(n) + 1) % n]
    r = ptx.launch(_chase(steps), "chase", 1, 32, [buf, np.zeros(32, np.uint64), np.uint32(lanes)], trace=True)
    # every line the chase touches is its first: from DRAM, none in L1
    t = tr.from_launch(r, hit_l1=np.zeros(len(tr.static_tables(r.program)[0])))
    t.dram_wait[:] = np.where(t.cls == tr.GLOBAL, 1.0, 0.0)
    t.to_dram[:] = t.dram_wait
    params, _ = calibrate.measured_start("h200")
    params.update({k: np.float32(v) for k, v in calibrate.loaded_terms("h200").items()})
    work = timing.plan(t, H200, blocks_per_sm=1)
    step = lambda p: float(np.max(np.asarray(timing.run(work, p, timeline=False)["cycles"]))) / steps  # noqa: E731
    h200 = _step_cycles("dram")[(lanes, 1)]
    assert step(params) == pytest.approx(h200, rel=0.1)
    if lanes == 32:  # without the rise, the L1TEX and bandwidth stages alone: far too fast
        flat = dict(params, l2_latency_per_doubling=np.float32(0.0), dram_latency_per_doubling=np.float32(0.0))
        assert step(flat) < 0.7 * h200
