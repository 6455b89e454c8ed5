"""Lowering of PTX entries onto Programs: blocks, parameters, predication, calls, variables, refusals; and
the bit-level semantics of the PTX-only instructions (one launch of a hand-written kernel)."""
import os

import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt.program import BARRIER, BRANCH, EXIT
from jaxsimt.ptx.lower import lower

PTX = os.path.join(os.path.dirname(__file__), "data", "ptx")


def mod(name):
    return P.load_module(os.path.join(PTX, name + ".ptx"))


HEAD = ".version 9.0\n.target sm_90\n.address_size 64\n"


def test_saxpy_structure_and_source_lines():
    prog = lower(mod("saxpy"), "saxpy", [7, 1.0, np.zeros(4, np.float32), np.zeros(4, np.float32)])
    assert [p.is_pointer for p in prog.params] == [False, False, True, True]
    assert prog.params[2].dtype.name == "f32"
    kinds = [b.term.kind for b in prog.blocks]
    assert kinds[0] == BRANCH and EXIT in kinds
    ins = [i for _, i in prog.instructions()]
    assert ins[0].op == "param"
    fma = next(i for i in ins if i.op == "fma")
    assert fma.loc.file.endswith("saxpy.cu") and "y[i] = a * x[i] + y[i]" in fma.loc.text


def test_without_args_u64_params_are_byte_pointers():
    prog = lower(mod("saxpy"), "saxpy")
    assert [p.is_pointer for p in prog.params] == [False, False, True, True]
    assert prog.params[2].dtype.name == "u8"


def test_barriers_shared_layout_and_calls():
    prog = lower(mod("matmul_tiled"), "matmul_tiled")
    assert sum(b.term.kind == BARRIER for b in prog.blocks) == 2
    assert [(d.offset, d.nbytes) for d in prog.shared] == [(0, 1024), (1024, 1024)]
    dc = lower(mod("device_call"), "device_call")
    assert not any(i.op == "call" for _, i in dc.instructions())


def test_dynamic_shared_sized_at_launch():
    prog = lower(mod("dynamic_shared"), "dynamic_shared", dynamic_smem=2048)
    assert prog.shared_bytes == 2048 and prog.shared[0].nbytes == 2048


def test_const_global_hidden_arrays_local_memory():
    prog = lower(mod("constant_mem"), "constant_mem")
    assert [(h.name, h.kind) for h in prog.ptx_hidden] == [("coeffs", "const"), ("call_count", "global"),
                                                          ("scale", "global")]
    assert np.frombuffer(prog.ptx_hidden[0].data, np.float32)[4] == np.float32(0.4)
    loc = lower(mod("local_array"), "local_array")
    assert loc.ptx_hidden == [] and loc.ptx_local_bytes == 128
    accesses = [i for b in loc.blocks for i in b.all_instrs() if i.op in ("ld", "st") and i.attr("space") == "local"]
    assert accesses and all(i.attr("array") is None for i in accesses)


def test_tensor_instructions_lowered_onto_tensor_ops():
    prog = lower(mod("wmma_gemm"), "wmma_gemm")
    ops = [i.op for b in prog.blocks for i in b.all_instrs()]
    assert "tensor.mma" in ops
    prog = lower(mod("mma_ldmatrix"), "mma_ldmatrix")
    ops = [i.op for b in prog.blocks for i in b.all_instrs()]
    assert ops.count("tensor.ldmatrix") == 2 and ops.count("tensor.mma") == 1


def test_recursion_refused():
    text = HEAD + """
.func (.param .b32 r) f(.param .b32 a)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [a];
    {
    .param .b32 p0;
    st.param.b32 [p0+0], %r1;
    .param .b32 rv;
    call.uni (rv), f, (p0);
    ld.param.b32 %r2, [rv+0];
    }
    st.param.b32 [r+0], %r2;
    ret;
}
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<3>;
    mov.u32 %r1, 1;
    {
    .param .b32 p0;
    st.param.b32 [p0+0], %r1;
    .param .b32 rv;
    call.uni (rv), f, (p0);
    ld.param.b32 %r2, [rv+0];
    }
    ret;
}
"""
    with pytest.raises(P.PtxUnsupportedError, match="recursive call of f"):
        lower(P.parse(text), "k")


def test_barrier_forms_refused_by_name():
    for line, why in (("bar.red.popc.u32 %r1, 0, %p1;", "bar.red"), ("@%p1 bar.sync 1, 64;", "not predicated"),
                      ("bar.sync %r1, 64;", "not a constant"), ("bar.sync 16;", "out of range"),
                      ("bar.arrive 1;", "needs a thread count")):
        text = (HEAD + ".visible .entry k()\n{\n .reg .b32 %r<3>;\n .reg .pred %p<2>;\n add.u32 %r1, %r2, 1;\n "
                + line + "\n ret;\n}\n")
        with pytest.raises(P.PtxUnsupportedError, match=why):
            lower(P.parse(text), "k")


def test_predicated_instruction_is_guarded_in_its_block():
    text = HEAD + """.visible .entry k(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 5;
    mov.u32 %r2, 7;
    @%p1 add.s32 %r2, %r1, 100;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    @!%p1 st.global.u32 [%rd3], %r2;
    @%p1 st.global.u32 [%rd3], %r2;
    ret;
}
"""
    prog = lower(P.parse(text), "k", [np.zeros(32, np.uint32)])
    assert len(prog.blocks) == 1
    assert sum(i.op == "ptx.guard" for _, i in prog.instructions()) == 3
    r = P.launch(text, "k", 1, 32, [np.zeros(32, np.uint32)])
    t = np.arange(32)
    np.testing.assert_array_equal(r.outputs["out"], np.where(t < 5, t + 100, 7))


SEM = HEAD + """.visible .entry sem(.param .u64 inp, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<6>;
    ld.param.u64 %rd1, [inp];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r2, [%rd4];
    mul.lo.u32 %r30, %r1, 64;
    cvt.u64.u32 %rd5, %r30;
    add.s64 %rd6, %rd2, %rd5;
    popc.b32 %r3, %r2;
    clz.b32 %r4, %r2;
    brev.b32 %r5, %r2;
    bfe.u32 %r6, %r2, 4, 8;
    bfe.s32 %r7, %r2, 20, 12;
    bfi.b32 %r8, %r1, %r2, 8, 5;
    prmt.b32 %r9, %r2, %r1, 0x7531;
    lop3.b32 %r10, %r2, %r1, 0xF0F0F0F0, 0x96;
    mul.hi.u32 %r11, %r2, 0x9E3779B9;
    mul.hi.s32 %r12, %r2, -7;
    shf.l.wrap.b32 %r13, %r1, %r2, 7;
    sad.u32 %r14, %r2, 12345, 1;
    mul24.lo.s32 %r15, %r2, %r1;
    bfind.u32 %r16, %r2;
    dp4a.u32.u32 %r17, %r2, 0x01020304, 5;
    cvt.rn.f32.u32 %f1, %r2;
    cvt.rz.f32.u32 %f2, %r2;
    cvt.rm.f32.s32 %f3, %r2;
    setp.gt.u32 %p1, %r2, 0x80000000;
    setp.lt.and.u32 %p2|%p3, %r1, 16, %p1;
    selp.u32 %r18, 1, 0, %p2;
    selp.u32 %r19, 1, 0, %p3;
    st.global.v4.u32 [%rd6], {%r3, %r4, %r5, %r6};
    st.global.v4.u32 [%rd6+16], {%r7, %r8, %r9, %r10};
    st.global.v4.u32 [%rd6+32], {%r11, %r12, %r13, %r14};
    st.global.v4.u32 [%rd6+48], {%r15, %r16, %r17, %r18};
    ret;
}
"""


def _ref(x, t):
    u = int(x)
    s = u - (1 << 32) if u >= 1 << 31 else u
    m32 = 0xFFFFFFFF

    def bfe_s(v, pos, ln):
        f = (v >> pos) & ((1 << ln) - 1)
        return (f - (1 << ln) if f >> (ln - 1) else f) & m32

    by = [(u >> (8 * k)) & 0xFF for k in range(4)] + [(t >> (8 * k)) & 0xFF for k in range(4)]
    prmt = sum(by[(0x7531 >> (4 * k)) & 7] << (8 * k) for k in range(4))
    lop = (u ^ t ^ 0xF0F0F0F0) & m32
    a24 = ((u & 0xFFFFFF) ^ 0x800000) - 0x800000
    dp = sum(((u >> (8 * k)) & 0xFF) * ((0x01020304 >> (8 * k)) & 0xFF) for k in range(4)) + 5
    p1 = u > 0x80000000
    return [bin(u).count("1"), 32 - u.bit_length(), int(f"{u:032b}"[::-1], 2), (u >> 4) & 0xFF,
            bfe_s(u, 20, 12), (u & ~(0x1F << 8) | ((t & 0x1F) << 8)) & m32, prmt, lop,
            (u * 0x9E3779B9) >> 32, ((s * -7) >> 32) & m32, (((u << 32 | t) << 7) >> 32) & m32,
            abs(u - 12345) + 1, (a24 * t) & m32, u.bit_length() - 1 if u else m32, dp & m32,
            int((t < 16) and p1)]


def test_integer_bit_semantics():
    x = np.random.default_rng(0).integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    x[0], x[1] = 0, 0xFFFFFFFF
    out = np.zeros(32 * 16, np.uint32)
    r = P.launch(SEM, "sem", 1, 32, [x, out])
    got = r.outputs["out"].reshape(32, 16)
    ref = np.array([_ref(x[t], t) for t in range(32)], np.uint64).astype(np.uint32)
    np.testing.assert_array_equal(got, ref)


def test_cuda_compile():
    from jaxsimt import cuda
    try:
        cuda.find_nvcc()
    except cuda.NvccNotFoundError:
        pytest.skip("no nvcc")
    ptx = cuda.compile('extern "C" __global__ void k(int* a) { a[threadIdx.x] = __popc(threadIdx.x); }')
    m = P.parse(ptx)
    assert [e.name for e in m.entries] == ["k"]
    r = P.launch(ptx, "k", 1, 32, [np.zeros(32, np.int32)])
    np.testing.assert_array_equal(r.outputs["k_param_0"], [bin(i).count("1") for i in range(32)])
    with pytest.raises(cuda.CompileError):
        cuda.compile("this is not CUDA")
