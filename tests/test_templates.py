"""The interpreter tier (`jaxsimt.machine.templates`): interpreted blocks give the same bits and the same counters
as compiled ones, in both execution modes; a long straight-line kernel becomes a handful of templates
(so its compile time does not grow with its length); the tier plan compiles loops first."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxsimt as js
from jaxsimt.apps import conformance
from jaxsimt.machine import templates
from jaxsimt.kernels import collection, its as its_kernels, seeds
from jaxsimt.run.launch import _program_of
from jaxsimt.machine.core import Geometry, Layout, Machine, Options
from jaxsimt.ptx.lower import lower
from jaxsimt.ptx.run import load_module
from runs import assert_same_run


@pytest.mark.parametrize("name", ["dsl_reduce_interleaved", "dsl_histogram", "div_nested", "smem_stride_s33"])
def test_interpreted_equals_compiled(name):
    kind, case = conformance.cases()[name]
    if kind == "ptx":
        (a, _), (b, _) = collection.launch(case, compile_budget=None), collection.launch(case, compile_budget=0)
    else:
        args = case.args()
        a = js.launch(case.kernel, case.grid, case.block, args, compile_budget=None)
        b = js.launch(case.kernel, case.grid, case.block, args, compile_budget=0)
        case.check(b, args)
    assert all(blk.interpret for blk in b.program.blocks if blk.instrs)
    assert b.stats["emulator__steps"] > a.stats["emulator__steps"]
    assert_same_run(a, b)


def test_interpreted_equals_compiled_under_its():
    for k, args in ((its_kernels.loop_tail, [np.zeros(32, np.int32)]),
                    (its_kernels.spin_lock, [np.zeros(1, np.int32), np.zeros(1, np.int32)])):
        a = js.launch(k, 1, 32, args, mode="its", compile_budget=None)
        b = js.launch(k, 1, 32, args, mode="its", compile_budget=0)
        assert_same_run(a, b)


def test_immediates_of_every_type_convert_as_compiled():
    # PTX immediates read as other types (a float literal as f64 and f16, a negative integer as u64, hex
    # floats) go through the interpreter's conversion table.
    ptx = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry imms(.param .u64 out)
{
    .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<4>; .reg .f64 %fd<4>; .reg .b16 %h<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    add.f64 %fd1, 0d3FB999999999999A, 0d3FC999999999999A;
    cvt.rn.f32.f64 %f1, %fd1;
    add.f32 %f2, %f1, 0f3DCCCCCD;
    mov.b32 %r2, %f2;
    add.s64 %rd5, %rd3, -3;
    xor.b64 %rd6, %rd5, 0xFFFFFFFFFFFFFFFF;
    cvt.u32.u64 %r3, %rd6;
    add.s32 %r4, %r3, %r2;
    st.global.u32 [%rd4], %r4;
    st.global.f64 [%rd4+256], %fd1;
    ret;
}
"""
    out = np.zeros(64, np.uint64)
    a = js.ptx.launch(ptx, "imms", 1, 32, [out], compile_budget=None)
    b = js.ptx.launch(ptx, "imms", 1, 32, [out], compile_budget=0)
    assert_same_run(a, b)
    f1 = np.float32(0.1 + 0.2)
    r2 = (f1 + np.float32(0.1)).view(np.uint32)
    r3 = (~(np.arange(32, dtype=np.uint64) * 8 - np.uint64(3))) & np.uint64(0xFFFFFFFF)
    want = (r3 + np.uint64(r2)) & np.uint64(0xFFFFFFFF)
    got = b["out"][:32] & np.uint64(0xFFFFFFFF)
    np.testing.assert_array_equal(got, want)


_SPECIAL = [0, 1, -1, 2049, 2 ** 24 + 1, 2 ** 31, 2 ** 53 + 1, 2 ** 63, 2 ** 64 - 1, -2 ** 63, 300, 65504,
            0.0, -0.0, 0.1, 1.5, -2.5, 65504.0, 65520.0, 1e39, 3.4e38, 2.0 ** 63, float("inf"), float("-inf"),
            float("nan"), 1e-8, 5.96e-8, True, False]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from(_SPECIAL), st.integers(-2 ** 64, 2 ** 64), st.floats(width=64),
                 st.floats(width=32), st.floats(width=16), st.booleans()))
def test_immediate_bits_equal_jax_conversion(value):
    # the exact numpy path must give the bits JAX's conversion gives, for every dtype (x64 on, as the machine
    # is built)
    import jax

    with jax.enable_x64(True):
        got = templates._imm_bits.__wrapped__(type(value), value)
        for i, dt in enumerate(templates.DTYPES):
            v = templates._through_jax(value, dt.np_dtype)
            want = 0 if v is None else np.frombuffer(v.tobytes() + b"\0" * (8 - v.nbytes), np.uint64)[0]
            assert got[i] == want, (value, dt.name)


def _machine(case_name, budget):
    case = collection.by_name()[case_name]
    prog = lower(load_module(collection.ptx_path(case.program)), case.entry, case.args(), dynamic_smem=case.dyn)
    geo = Geometry(block=(64, 1, 1), warp_size=32, ctas_per_wave=1, depth=4)
    return Machine(prog, geo, Layout(global_words=1024, shared_words=1), Options(trace_steps=0,
                                                                                    compile_budget=budget))


def test_a_long_straight_kernel_becomes_few_templates():
    # pressure<256,255>: one straight-line block of 1,541 instructions per warp. Compiled whole, XLA takes
    # minutes; interpreted, its instructions share a few dozen templates, whatever the kernel's length.
    m = _machine("pressure<256,255>", templates.COMPILE_BUDGET)
    n = sum(len(b.instrs) for b in m.program.blocks)
    assert n > 1500
    assert len(m.compiled) <= 2 and len(m.templates) <= 40
    small = _machine("pressure<64,32>", templates.COMPILE_BUDGET)
    assert len(m.templates) <= len(small.templates) + 8  # 4x the instructions, hardly more templates


def test_plan_compiles_loops_first_within_the_budget():
    prog = _program_of(seeds.naive_matrix_multiply)
    n = sum(len(b.instrs) for b in prog.blocks)
    assert templates.plan(prog, None) is prog and templates.plan(prog, n) is prog
    depth = templates.loop_depth(prog.blocks, prog.exit_index)
    loop = [b for b in prog.blocks if depth[b.index] > 0 and len(b.instrs) > 1]  # one-instruction blocks: templates
    budget = sum(len(b.instrs) for b in loop)
    assert 0 < budget < n
    p = templates.plan(prog, budget)
    compiled = [b for b in p.blocks if not b.interpret]
    assert sum(len(b.instrs) for b in compiled) == budget and all(len(b.instrs) > 1 for b in compiled if b.instrs)
    assert all(len(b.instrs) <= 1 for b in p.blocks if b.interpret)
    assert [i for _, i in p.instructions()] == [i for _, i in prog.instructions()]  # same pcs
    N, M = 20, 12
    rng = np.random.default_rng(0)
    A, B = rng.random((N, M), np.float32), rng.random((M, N), np.float32)
    args = (N, M, A, B, np.zeros((N, N), np.float32))
    a = js.launch(seeds.naive_matrix_multiply, (2, 2), (16, 16), args, compile_budget=None)
    b = js.launch(seeds.naive_matrix_multiply, (2, 2), (16, 16), args, compile_budget=budget)
    assert_same_run(a, b)


ARRAYS_PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry arrays(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 4 .b32 s1[32];
    .shared .align 4 .b32 s2[32];
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u32 %r5, [pn];
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd7, %r1, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    mov.u32 %r2, s1;
    mov.u32 %r3, s2;
    shl.b32 %r4, %r1, 2;
    add.s32 %r6, %r2, %r4;
    add.s32 %r7, %r3, %r4;
    st.shared.u32 [%r6], %r1;
    st.shared.u32 [%r7], %r5;
    bar.sync 0;
    xor.b32 %r8, %r4, 4;
    add.s32 %r9, %r2, %r8;
    add.s32 %r10, %r3, %r8;
    ld.shared.u32 %r11, [%r9];
    ld.shared.u32 %r12, [%r10];
    st.global.u32 [%rd8], %r11;
    st.global.u32 [%rd9], %r12;
    add.s32 %r13, %r11, %r12;
    st.global.u32 [%rd10+OFFSET], %r13;
    ret;
}
"""


def _arrays(offset: int, budget):
    from jaxsimt.ptx import launch as ptx_launch
    a, b, c = (np.zeros(32, np.uint32) for _ in range(3))
    return ptx_launch(ARRAYS_PTX.replace("OFFSET", str(offset)), "arrays", 1, 32, (a, b, c, np.uint32(7)),
                      compile_budget=budget)


def test_a_small_program_compiles_whole_unless_its_code_shares_templates():
    # Within 3x the budget a program compiles whole, except where the code the tiers would interpret is mostly
    # repeats of a few shapes: an unrolled line of multiply-adds (one template for a dozen instructions) is
    # interpreted; the naive GEMM's mostly distinct instructions stay compiled.
    @js.kernel
    def horner(x: js.Ptr[js.f32], y: js.Ptr[js.f32], n: js.s32):
        i = js.global_thread_index()
        with js.if_(i < n):
            v = x[i]
            acc = js.var(0.0, js.f32)
            for k in range(24):  # unrolled at trace time
                acc.set(acc * v + float(k + 1))
            y[i] = acc

    budget = templates.COMPILE_BUDGET
    line = _program_of(horner)
    n = sum(len(b.instrs) for b in line.blocks)
    assert n <= templates.WHOLE_PROGRAM_FACTOR * budget
    p = templates.plan(line, budget)
    interpreted = [b for b in p.blocks if b.interpret]
    shapes = {templates.template_of(b)[0] for b in interpreted}
    assert p is not line and len(shapes) <= templates.SHARED_TEMPLATES * sum(len(b.instrs) for b in interpreted)
    gemm = _program_of(seeds.naive_matrix_multiply)
    assert sum(len(b.instrs) for b in gemm.blocks) <= templates.WHOLE_PROGRAM_FACTOR * budget
    assert templates.plan(gemm, budget) is gemm
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    a = js.launch(horner, 2, 64, (x, np.zeros_like(x), 100), compile_budget=None)
    b = js.launch(horner, 2, 64, (x, np.zeros_like(x), 100))
    expected = np.zeros_like(x)
    for k in range(24):
        expected = expected * x + np.float32(k + 1)
    np.testing.assert_array_equal(b["y"], expected)
    assert b.stats["emulator__steps"] > a.stats["emulator__steps"]  # one step per interpreted instruction
    assert_same_run(a, b)


def test_accesses_to_different_arrays_share_a_template_and_keep_their_own_bounds():
    """Interpreted, the stores to three parameters' arrays are one memory-stage template, and those to two shared
    variables another (the array is an operand, looked up at run time); each access is still checked against
    its own array: c[t + 64] lands in no array, c[t - 64] inside b, and both fault as out of c's bounds."""
    compiled, interpreted = _arrays(0, None), _arrays(0, 0)
    assert_same_run(compiled, interpreted)
    t = np.arange(32, dtype=np.uint32)
    np.testing.assert_array_equal(interpreted["pa"], t ^ 1)
    np.testing.assert_array_equal(interpreted["pc"], (t ^ 1) + 7)
    np.testing.assert_array_equal(interpreted["pb"], np.full(32, 7))
    prog = interpreted.program
    assert all(b.interpret for b in prog.blocks if b.instrs)
    keys = {str(templates.template_of(b)[0]) for b in prog.blocks if b.instrs and b.instrs[-1].op == "st"}
    assert len(keys) == 2, keys  # one global store template, one shared
    for off in (256, -256):
        for budget in (None, 0):
            with pytest.raises(Exception, match="out-of-bounds global store of .pc. at byte offset -?256 "):
                _arrays(off, budget)
