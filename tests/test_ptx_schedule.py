"""Global loads moved up their blocks with their address arithmetic, as ptxas's scheduler does
(jaxsimt/ptx/schedule.py): what a load moves past and what stops it, and that results, instruction counts and
memory counters stay the same on real programs."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt.ptx import schedule

lower_mod = importlib.import_module("jaxsimt.ptx.lower")

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 in)
{
  .reg .f32 %f<40>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  .reg .pred %p<3>;
  .shared .align 16 .b8 S[512];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [in];
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.s64 %rd5, %rd1, %rd3;
  cvt.rn.f32.u32 %f1, %r1;
  setp.lt.u32 %p1, %r1, 16;
"""
TAIL = """  st.global.f32 [%rd5], %f9;
  ret;
}
"""
# %rd4 = &in[tid], %rd5 = &out[tid], %f1 = tid, %p1 = tid < 16; a body leaves its result in %f9
WORK = "  mul.lo.s32 %r2, %r1, %r1;\n  add.s32 %r3, %r2, %r1;\n  cvt.rn.f32.s32 %f3, %r3;\n"  # independent work
LOAD = "  ld.global.f32 %f4, [%rd4];\n"
USE = "  add.f32 %f9, %f4, %f3;\n"


def kernel(body: str) -> str:
    return HEAD + body + TAIL


def order(ptx: str, **kw) -> list:
    """The PTX text of the lowered instructions of kernel k, in their order (an instruction lowered to several
    once)."""
    prog = lower_mod.lower(P.parse(ptx), "k", **kw)
    out = []
    for b in prog.blocks:
        for ins in list(b.instrs) + ([b.term.instr] if b.term.instr is not None else []):
            t = ins.loc.text.strip().rstrip(";")
            if not out or out[-1] != t:
                out.append(t)
    return out


def before(seq: list, a: str, b: str) -> bool:
    return seq.index(a) < seq.index(b)


def run(ptx: str, **kw):
    out = np.zeros(64, np.float32)
    inp = (np.arange(64, dtype=np.float32) * 0.5 + 1.0)
    r = P.launch(ptx, "k", 1, 32, [out, inp], **kw)
    return r.outputs[r.program.params[0].name].view(np.float32).copy(), r.stats


def same_results(ptx: str):
    got, stats = run(ptx)
    kept, kept_stats = run(ptx, schedule_loads=False)
    np.testing.assert_array_equal(got, kept)
    assert stats == kept_stats  # every counter, the register estimate too (from the PTX's order)
    return got


LD = "ld.global.f32 %f4, [%rd4]"
MUL = "mul.lo.s32 %r2, %r1, %r1"


def test_a_load_moves_above_independent_work():
    ptx = kernel(WORK + LOAD + USE)
    assert not before(order(ptx, schedule_loads=False), LD, MUL)
    assert before(order(ptx), LD, MUL)
    got = same_results(ptx)
    t = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(got[:32], (t * 0.5 + 1.0) + (t * t + t))


@pytest.mark.parametrize("stop", [
    "st.global.f32 [%rd5+128], %f1",  # a store that may alias it
    "st.f32 [%rd5+128], %f1",  # generic: may alias too
    "atom.global.add.f32 %f5, [%rd5+128], %f1",
    "ld.global.f32 %f6, [%rd4+4]",  # another global load: loads keep their order
    "membar.gl",  # a fence
    "fence.sc.gpu",
    "bar.warp.sync -1",  # warp-synchronous
    "shfl.sync.idx.b32 %r5, %r1, 0, 31, -1",
    "mov.f32 %f6, %f4",  # reads its result
    "mov.f32 %f4, 0f3F800000",  # writes its result
    "@%p1 add.s64 %rd4, %rd4, 4",  # writes its address; predicated, it cannot move with it
])
def test_a_load_stops_below(stop):
    ptx = kernel(WORK + "  " + stop + ";\n" + "  add.f32 %f8, %f1, %f1;\n" + LOAD + USE)
    seq = order(ptx)
    # it moved past the work between the stop and itself, not past the stop (which a load moves up itself)
    assert before(seq, LD, "add.f32 %f8, %f1, %f1")
    assert before(seq, stop, LD)
    assert before(seq, MUL, stop) or stop.startswith("ld.global")


def test_a_barrier_ends_the_block_a_load_moves_in():
    ptx = kernel(WORK + "  bar.sync 0;\n  add.f32 %f8, %f1, %f1;\n" + LOAD + USE)
    seq = order(ptx)
    assert before(seq, "bar.sync 0", LD) and before(seq, LD, "add.f32 %f8, %f1, %f1")
    same_results(ptx)


def test_shared_stores_and_loads_are_crossed():
    body = ("  mov.u32 %r6, S;\n  st.shared.f32 [%r6], %f1;\n  ld.shared.f32 %f7, [%r6+4];\n" + WORK + LOAD
            + "  add.f32 %f9, %f4, %f3;\n  add.f32 %f9, %f9, %f7;\n")
    ptx = kernel(body)
    seq = order(ptx)
    assert before(seq, LD, "st.shared.f32 [%r6], %f1")
    same_results(ptx)


def test_loads_keep_their_order():
    body = ("  ld.global.f32 %f6, [%rd4+4];\n" + WORK + LOAD
            + "  add.f32 %f9, %f4, %f3;\n  add.f32 %f9, %f9, %f6;\n")
    ptx = kernel(body)
    seq = order(ptx)
    assert seq.index("ld.global.f32 %f6, [%rd4+4]") + 1 == seq.index(LD)
    same_results(ptx)


@pytest.mark.parametrize("load", [
    "@%p1 ld.global.f32 %f4, [%rd4]",  # predicated
    "ld.volatile.global.f32 %f4, [%rd4]",  # ordered
    "ld.f32 %f4, [%rd4]",  # generic
])
def test_loads_that_stay(load):
    ptx = kernel("  mov.f32 %f4, 0f00000000;\n" + WORK + "  " + load + ";\n" + USE)
    seq = order(ptx)
    assert seq.index(load) == seq.index("cvt.rn.f32.s32 %f3, %r3") + 1
    same_results(ptx)


def test_address_arithmetic_moves_with_the_load():
    # &in[2 tid + 1], computed just before the load (the slice: mad, mul.wide, add)
    body = (WORK + "  mad.lo.s32 %r5, %r1, 2, 1;\n  mul.wide.u32 %rd7, %r5, 4;\n  add.s64 %rd6, %rd2, %rd7;\n"
            "  ld.global.f32 %f4, [%rd6];\n" + USE)
    ptx = kernel(body)
    ld = "ld.global.f32 %f4, [%rd6]"
    assert not before(order(ptx, schedule_loads=False), ld, MUL)
    seq = order(ptx)
    k = seq.index("mad.lo.s32 %r5, %r1, 2, 1")
    assert seq[k:k + 4] == ["mad.lo.s32 %r5, %r1, 2, 1", "mul.wide.u32 %rd7, %r5, 4", "add.s64 %rd6, %rd2, %rd7", ld]
    assert before(seq, ld, MUL)
    got = same_results(ptx)
    t = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(got[:32], ((2 * t + 1) * 0.5 + 1.0) + (t * t + t))


def test_address_arithmetic_stays_where_it_cannot_move():
    # the slice's input comes from a shared load (not a plain operation): the group lands below it
    body = ("  mov.u32 %r6, S;\n  cvt.rzi.u32.f32 %r7, %f1;\n  st.shared.u32 [%r6], %r7;\n" + WORK
            + "  ld.shared.u32 %r5, [%r6];\n  add.f32 %f8, %f1, %f1;\n  mul.wide.u32 %rd7, %r5, 4;\n"
            "  add.s64 %rd6, %rd2, %rd7;\n  ld.global.f32 %f4, [%rd6];\n" + USE)
    ptx = kernel(body)
    seq = order(ptx)
    ld = "ld.global.f32 %f4, [%rd6]"
    assert seq.index("ld.shared.u32 %r5, [%r6]") + 3 == seq.index(ld)
    assert before(seq, ld, "add.f32 %f8, %f1, %f1")
    same_results(ptx)
    # the slice redefines an address register whose old value an instruction above reads: it stops there
    body = ("  add.s64 %rd6, %rd4, 0;\n" + WORK + "  cvt.u32.u64 %r8, %rd6;\n  add.s64 %rd6, %rd4, 4;\n"
            "  add.f32 %f8, %f1, %f1;\n  ld.global.f32 %f4, [%rd6];\n  add.f32 %f9, %f4, %f3;\n"
            "  cvt.rn.f32.u32 %f10, %r8;\n  add.f32 %f9, %f9, %f10;\n")
    seq = order(kernel(body))
    k = seq.index("cvt.u32.u64 %r8, %rd6")
    assert seq[k + 1:k + 3] == ["add.s64 %rd6, %rd4, 4", ld]
    assert before(seq, ld, "add.f32 %f8, %f1, %f1")
    same_results(kernel(body))
    # an instruction the load crossed reads an address register (the slice's value): the slice moves all the same
    body = (WORK + "  add.s64 %rd6, %rd4, 4;\n  cvt.u32.u64 %r8, %rd6;\n  add.f32 %f8, %f1, %f1;\n"
            "  ld.global.f32 %f4, [%rd6];\n  add.f32 %f9, %f4, %f3;\n  cvt.rn.f32.u32 %f10, %r8;\n"
            "  add.f32 %f9, %f9, %f10;\n")
    seq = order(kernel(body))
    k = seq.index("add.s64 %rd6, %rd4, 4")
    assert seq[k + 1] == ld and before(seq, ld, MUL)
    same_results(kernel(body))


# ---------------------------------------------------------------------- real programs: the same with and without

@pytest.mark.parametrize("suite, case", [("cuda_samples", "scalarProd"), ("cuda_samples", "transpose"),
                                         pytest.param("rodinia", "nw", marks=pytest.mark.slow)])
def test_real_programs_give_the_same_results_and_counters(suite, case):
    from jaxsimt.kernels.suites import harness as H
    on = H.run(suite, case)
    off = H.run(suite, case, schedule_loads=False)
    assert on.outputs.keys() == off.outputs.keys()
    for k in on.outputs:
        np.testing.assert_array_equal(on.outputs[k], off.outputs[k])
    assert all(on.reference_ok.values())
    assert [k for k, _ in on.launches] == [k for k, _ in off.launches]
    for (_, a), (_, b) in zip(on.launches, off.launches):
        assert a == b  # every counter: instructions, requests, sectors, wavefronts, L1 hits
