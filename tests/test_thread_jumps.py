"""Jumps into a loop's test are threaded (`program.thread_jumps`): the jumping block also runs the test and ends
in its branch, so a loop takes one machine step a trip. The copies keep their pcs: results, every counter,
every instruction's row and every warp's instruction stream equal the unthreaded run's."""
from __future__ import annotations

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.machine import core as machine_mod
from jaxsimt.timing import trace
from jaxsimt.kernels import gemm
from jaxsimt.machine.core import Machine, Options
from jaxsimt.program import BRANCH
from runs import assert_same_run, launch_fresh, naive_gemm_case


def test_the_loop_body_ends_in_the_loop_test():
    p = gemm.BY_NAME["naive_coalesced"].kernel().program
    opts = Options(trace_steps=0)
    threaded, plain = Machine.prepare(p, opts), Machine.prepare(p, opts, threaded=False)
    # every pc holds the same instruction
    assert [i for _, i in threaded.instructions()] == [i for _, i in plain.instructions()]
    (body,) = [b for b in threaded.blocks if any(i.op == "fma" for i in b.instrs)]
    head = plain.blocks[plain.blocks[body.index].term.target]
    assert body.term.kind == BRANCH and body.term.target == head.term.target and body.term.reconv == head.term.reconv
    assert body.pcs == plain.pc_lists()[body.index] + plain.pc_lists()[head.index]
    assert [i.op for i in body.instrs[-len(head.instrs) - 1:]] == ["bra"] + [i.op for i in head.instrs]
    # the test block stays for the lanes that enter the loop; a program prepared again is prepared afresh
    assert threaded.blocks[head.index].instrs == head.instrs
    assert Machine.prepare(threaded, opts).pc_lists() == threaded.pc_lists()


@js.kernel
def if_then_loop(out: js.Ptr[js.s32]):
    """A loop right after an if: the lanes of both paths meet at the loop's test, which they must run together."""
    t = js.threadIdx.x
    acc = js.var(0)
    with js.if_(t % 3 == 0):
        acc += t
    for i in js.range(t % 4 + 1):
        acc += i
    out[t] = acc


def _if_then_loop():
    return if_then_loop, 1, 64, lambda: [np.zeros(64, np.int32)]


def _launch(name, monkeypatch, threaded: bool, **kw):
    if not threaded:
        monkeypatch.setattr(machine_mod, "thread_jumps", lambda p, **k: p)
    try:
        special = {"naive_gemm": naive_gemm_case, "if_then_loop": _if_then_loop}
        return launch_fresh(special[name]() if name in special else name, **kw)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("name", ["naive_gemm", "if_then_loop", "dsl_matmul_tiled", "dsl_reduce_interleaved", "div_loop",
                                  "gemm_smem_tiled@33x65x17"])
def test_threaded_jumps_count_what_separate_blocks_count(name, monkeypatch):
    threaded = _launch(name, monkeypatch, True, trace=True)
    plain = _launch(name, monkeypatch, False, trace=True)
    if name == "naive_gemm":  # 24 trips of the k loop, one step fewer each
        assert plain.stats["emulator__steps"] - threaded.stats["emulator__steps"] == 24
        _, _, _, a, b, _ = naive_gemm_case()[3]()
        np.testing.assert_allclose(threaded["C"], a @ b, rtol=1e-5)
    if name == "if_then_loop":
        t = np.arange(64)
        np.testing.assert_array_equal(threaded["out"], np.where(t % 3 == 0, t, 0) + (t % 4) * (t % 4 + 1) // 2)
    assert threaded.stats["emulator__steps"] <= plain.stats["emulator__steps"]
    assert_same_run(threaded, plain)
    # the timing model's view: each warp issues the same instructions in the same order
    streams = [trace.streams(r.program, r.trace["block"], r.trace["mask"]) for r in (threaded, plain)]
    np.testing.assert_array_equal(streams[0][0], streams[1][0])
    np.testing.assert_array_equal(streams[0][1], streams[1][1])


CONTINUE_LOOP_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry continue_loop(.param .u64 pout)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [pout];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
    mov.u32 %r4, 0;
    and.b32 %r5, %r1, 3;
    and.b32 %r3, %r1, 1;
    setp.ne.u32 %p1, %r3, 0;
$L_head:
    setp.gt.u32 %p2, %r4, %r5;
    @%p2 bra $L_done;
    add.u32 %r4, %r4, 1;
    @%p1 bra $L_head;
    add.u32 %r2, %r2, %r4;
    bra.uni $L_head;
$L_done:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""


def test_no_jump_is_threaded_into_a_reconvergence_point(monkeypatch):
    """The odd lanes `continue` straight to the loop's test, where the if inside the loop reconverges: the even
    lanes' back edge must not run the test before the odd lanes join them there, so it is not threaded."""
    import jaxsimt.ptx as ptx_api
    from jaxsimt.ptx.lower import _CACHE

    def run(threaded):
        _CACHE.clear()  # a fresh program: machines are kept on it
        if not threaded:
            monkeypatch.setattr(machine_mod, "thread_jumps", lambda p, **k: p)
        try:
            return ptx_api.launch(CONTINUE_LOOP_PTX, "continue_loop", 1, 64, [np.zeros(64, np.uint32)])
        finally:
            monkeypatch.undo()

    a, b = run(True), run(False)
    t = np.arange(64)
    m = t % 4 + 1
    np.testing.assert_array_equal(a.outputs["pout"], np.where(t % 2 == 0, m * (m + 1) // 2, 0))
    assert_same_run(a, b)


def test_its_threads_no_jump():
    """Under ITS lanes that reach a loop's test from the entry and from the back edge may run it together."""
    r = launch_fresh(naive_gemm_case(), mode="its")
    assert not any(b.pcs for b in r.program.blocks)
