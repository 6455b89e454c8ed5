"""PTX parser: every committed nvcc output parses, the AST is exact where it matters, errors are clear."""
import math
import pathlib
import random
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsimt.ptx import (Addr, Imm, Label, NotPred, ParamList, Predicate, PtxError, PtxSyntaxError,
                         PtxUnsupportedError, Reg, RegPair, Sink, SpecialReg, Sym, SymAddr, Vec, check_supported,
                         parse, parse_file)

DATA = pathlib.Path(__file__).parent / "data" / "ptx"
PTX_FILES = sorted(DATA.glob("*.ptx"))
# kept to show how unsupported PTX is refused (tests/test_ptx_suite_gaps.py), not supported on purpose
REFUSED = {"texture_fetch"}


def load(name):
    return parse_file(DATA / name)


def find(fn, prefix, n=0):
    """The n-th instruction of fn whose full name starts with prefix."""
    hits = [i for i in fn.instructions if i.name.startswith(prefix)]
    return hits[n]


# ------------------------------------------------------------------------------------------ committed PTX

def test_inputs_present():
    names = {p.stem for p in PTX_FILES}
    for want in ("saxpy", "vector_add", "matmul_naive", "matmul_tiled", "reduce_shared", "histogram",
                 "warp_reduce", "device_call", "wmma_gemm", "mma_ldmatrix", "switch_unroll", "half_bf16",
                 "math_funcs", "double_prec", "dynamic_shared", "constant_mem", "local_array", "saxpy_sm80"):
        assert want in names
        if not want.endswith("_sm80"):
            assert (DATA / "src" / f"{want}.cu").exists()


@pytest.mark.parametrize("path", [p for p in PTX_FILES if p.stem not in REFUSED], ids=lambda p: p.stem)
def test_committed_ptx_parses_and_is_supported(path):
    m = parse_file(path)
    assert m.version in ("8.0", "8.1", "8.2", "8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "9.0", "9.1")
    assert m.target[0] in ("sm_80", "sm_90")
    assert m.address_size == 64
    assert m.entries, "every test input has a kernel"
    assert m.file_table[1] == f"src/{path.stem.replace('_sm80', '')}.cu"
    for fn in m.functions:
        assert fn.has_body
        ins = fn.instructions
        assert ins and ins[-1].opcode in ("ret", "exit", "bra")
        assert all(i.known for i in ins)
        assert any(i.loc is not None for i in ins), "-lineinfo attaches .loc lines"
        for i in ins:
            assert i.text.startswith(("@", i.opcode)), i.text
    check_supported(m)


# ------------------------------------------------------------------------------------------ AST spot checks

def test_saxpy_ast():
    m = load("saxpy.ptx")
    assert (m.version, m.target, m.address_size) == ("9.0", ("sm_90",), 64)
    f = m.function("saxpy")
    assert f.is_entry and f.linkage == "visible" and f.return_params == ()
    assert [(p.name, p.dtype) for p in f.params] == [
        ("saxpy_param_0", "u32"), ("saxpy_param_1", "f32"), ("saxpy_param_2", "u64"), ("saxpy_param_3", "u64")]
    assert [(d.dtype, d.name, d.count) for d in f.reg_decls] == [
        ("pred", "%p", 2), ("f32", "%f", 5), ("b32", "%r", 6), ("b64", "%rd", 8)]
    assert f.reg_count("%rd") == 8 and f.reg_decls[0].names == ("%p0", "%p1")

    ld = f.instructions[0]
    assert (ld.opcode, ld.modifiers, ld.types, ld.space, ld.vector) == ("ld", ("param", "u32"), ("u32",), "param", 1)
    assert ld.operands == (Reg("%r2"), Addr(Sym("saxpy_param_0"), 0))
    assert find(f, "mov.u32").operands == (Reg("%r3"), SpecialReg("%ctaid", "x"))
    bra = find(f, "bra")
    assert bra.pred == Predicate("%p1", False) and bra.operands == (Sym("$L__BB0_2"),)
    assert isinstance(f.body[f.labels["$L__BB0_2"]], Label)
    fma = find(f, "fma")
    assert (fma.modifiers, fma.types, fma.space) == (("rn", "f32"), ("f32",), None)
    assert fma.operands == (Reg("%f4"), Reg("%f2"), Reg("%f1"), Reg("%f3"))
    assert fma.loc == (1, 4, 5) and fma.line == 51 and fma.text == "fma.rn.f32 %f4, %f2, %f1, %f3"
    assert find(f, "st.global").operands == (Addr(Reg("%rd7"), 0), Reg("%f4"))
    assert find(f, "ret").loc == (1, 5, 1)
    cvt = find(f, "cvta")
    assert (cvt.modifiers, cvt.space) == (("to", "global", "u64"), "global")


def test_hex_float_immediates_are_exact():
    def f32(bits):
        return struct.unpack("<f", struct.pack("<I", bits))[0]

    m = parse(_PROGRAM.replace("BODY", """
        mov.f32 %f1, 0f3DCCCCCD;
        mov.f32 %f1, 0fBF800000;
        mov.f32 %f1, 0f7FC00001;
        mov.f32 %f1, 0f00000001;
        mov.f64 %fd1, 0d3FB999999999999A;
        mov.f64 %fd1, 0dFFF0000000000000;
        mov.f64 %fd1, 1.5e-3;
        mov.f32 %f1, -0f3F800000;
        """))
    imms = [i.operands[1] for i in m.functions[0].instructions if i.opcode == "mov"]
    assert imms[0] == Imm(f32(0x3DCCCCCD), True, "0f3DCCCCCD", 0x3DCCCCCD, 32)
    assert imms[0].value == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1
    assert imms[1].value == -1.0 and imms[1].bits == 0xBF800000
    assert math.isnan(imms[2].value) and imms[2].bits == 0x7FC00001  # payload kept in bits
    assert imms[3].value == 2.0 ** -149
    assert imms[4].value == 0.1 and imms[4].width == 64
    assert imms[5].value == -math.inf
    assert imms[6].value == 1.5e-3 and imms[6].width == 64
    assert imms[7].value == -1.0 and imms[7].bits == 0xBF800000


def test_integer_immediates_and_expressions():
    m = parse(_PROGRAM.replace("BODY", """
        mov.u32 %r1, 0xFFFFFFFF;
        mov.u32 %r1, -1;
        mov.u32 %r1, 017;
        mov.u32 %r1, 0b101;
        mov.u32 %r1, 10U;
        mov.u32 %r1, (1 << 4) + 3;
        """))
    vals = [i.operands[1].value for i in m.functions[0].instructions if i.opcode == "mov"]
    assert vals == [0xFFFFFFFF, -1, 15, 5, 10, 19]


def test_vectors_predicates_offsets():
    f = load("mma_ldmatrix.ptx").function("mma_ldmatrix")
    ldm = find(f, "ldmatrix")
    assert ldm.opcode == "ldmatrix" and ldm.modifiers == ("sync", "aligned", "m8n8", "x4", "shared", "b16")
    assert ldm.space == "shared" and ldm.types == ("b16",)
    assert ldm.operands[0] == Vec((Reg("%r52"), Reg("%r53"), Reg("%r54"), Reg("%r55")))
    mma = find(f, "mma")
    assert mma.types == ("f32", "f16", "f16", "f32") and "m16n8k16" in mma.modifiers
    assert [len(o.elems) for o in mma.operands] == [4, 4, 2, 4]
    neg = [i for i in f.instructions if any(isinstance(o, Addr) and o.offset < 0 for o in i.operands)]
    assert neg and neg[0].text.endswith("+-128]") and neg[0].operands[1] == Addr(Reg("%rd28"), -128)
    assert [d.name for d in f.var_decls] == ["_ZZ12mma_ldmatrixE2As", "_ZZ12mma_ldmatrixE2Bs"]
    assert f.var_decls[0].space == "shared" and f.var_decls[0].align == 16 and f.var_decls[0].dims == (512,)
    assert any(i.operands[1:] == (Sym("_ZZ12mma_ldmatrixE2As"),) for i in f.instructions if i.opcode == "mov")


def test_warp_ops_and_two_destinations():
    f = load("warp_reduce.ptx").function("warp_reduce")
    shfl = find(f, "shfl.sync.down")
    assert shfl.opcode == "shfl" and shfl.modifiers == ("sync", "down", "b32")
    assert isinstance(shfl.operands[0], RegPair) and shfl.operands[0].second.name.startswith("%p")
    assert len(shfl.operands) == 5
    assert find(f, "vote.sync.ballot").types == ("b32",)
    assert find(f, "vote.sync.any").types == ("pred",)
    atom = find(f, "atom.global.add.f32")
    assert (atom.opcode, atom.space, atom.types) == ("atom", "global", ("f32",))


def test_wmma_compound_opcodes():
    f = load("wmma_gemm.ptx").function("wmma_gemm")
    ld = find(f, "wmma.load.a")
    assert ld.opcode == "wmma.load" and ld.space == "global"
    assert ld.modifiers == ("a", "sync", "aligned", "row", "m16n16k16", "global", "f16")
    assert len(ld.operands[0].elems) == 8 and isinstance(ld.operands[1], Addr)
    assert ld.inlined_at is not None and ld.loc[0] == 2  # inlined from mma.hpp into the kernel's line
    mma = find(f, "wmma.mma")
    assert mma.modifiers[:4] == ("sync", "aligned", "row", "col") and mma.types == ("f32", "f32")
    st_ = find(f, "wmma.store")
    assert st_.opcode == "wmma.store" and st_.modifiers[0] == "d"


def test_calls_and_scopes():
    m = load("device_call.ptx")
    assert [f.name for f in m.functions] == ["_Z4polyfff", "_Z10store_pairPfif", "device_call"]
    poly = m.function("_Z4polyfff")
    assert not poly.is_entry and [p.name for p in poly.return_params] == ["func_retval0"]
    assert find(poly, "st.param").operands[0] == Addr(Sym("func_retval0"), 0)
    k = m.function("device_call")
    c0, c1 = [i for i in k.instructions if i.opcode == "call"]
    assert c0.modifiers == ("uni",)
    assert c0.operands == (ParamList((Sym("retval0$s1"),)), Sym("_Z4polyfff"), ParamList((Sym("param0$s1"),)))
    assert c1.operands[0] == ParamList(()) and len(c1.operands[2].items) == 3
    assert c1.operands[2].items[0] == Sym("param0$s2")  # param0 of the second call sequence is a new name
    params = {d.name: d for d in k.var_decls}
    assert params["param0$s1"].dtype == "b32" and params["param0$s2"].dtype == "b64"
    assert {d.name for d in k.reg_decls if d.count is None} == {"temp_param_reg$s1", "temp_param_reg$s2"}
    assert find(k, "st.param.f32").operands[0] == Addr(Sym("param0$s1"), 0)


def test_inline_asm_scopes_rename_registers():
    f = load("half_bf16.ptx").function("half_bf16")
    movs = [i for i in f.instructions if i.name == "mov.b32" and isinstance(i.operands[0], Vec)]
    a, b = movs[0].operands[0].elems, movs[1].operands[0].elems
    assert a[0].name.startswith("low$s") and a[0] != b[0]
    assert {d.dtype for d in f.reg_decls if d.name.startswith(("low", "high"))} == {"f16"}
    cvt = find(f, "cvt.rn.bf16.f32")
    assert cvt.types == ("bf16", "f32")


def test_variables_and_initializers():
    m = load("constant_mem.ptx")
    g = {v.name: v for v in m.globals}
    c = g["coeffs"]
    assert (c.space, c.dtype, c.align, c.dims) == ("const", "b8", 4, (36,))
    raw = bytes(i.value for i in c.init)
    assert struct.unpack("<9f", raw)[4] == struct.unpack("<f", struct.pack("<f", 0.4))[0]
    assert g["call_count"].init is None and g["call_count"].dtype == "u32"
    assert struct.unpack("<2d", bytes(i.value for i in g["scale"].init)) == (0.5, 2.0)
    d = load("dynamic_shared.ptx").globals[0]
    assert (d.name, d.space, d.extern, d.dims, d.align, d.is_dynamic) == ("s", "shared", True, (None,), 16, True)
    loc = load("local_array.ptx").function("local_array")
    depot = loc.var_decls[0]
    assert depot.space == "local" and depot.dims == (128,) and depot.elements == 128
    assert {d.name for d in loc.reg_decls} >= {"%SP", "%SPL"}
    assert find(loc, "mov.u64").operands == (Reg("%SPL"), Sym("__local_depot0"))


def test_handwritten_forms():
    m = parse(_HANDWRITTEN, "hand.ptx")
    g = {v.name: v for v in m.globals}
    assert g["ptrs"].init == (SymAddr("tab", 8, True), SymAddr("tab", 0, False))
    assert g["kmask"].init[0].value == 0xFFFF00F0
    f = m.function("k")
    assert f.directives == (("maxntid", (128, 1, 1)), ("minnctapersm", (2,)))
    assert f.params[0].align == 8 and f.params[0].dims == (16,) and f.params[0].dtype == "b8"
    assert f.params[1].ptr_space == "global" and f.params[1].ptr_align == 16
    setp = find(f, "setp")
    assert setp.modifiers == ("lt", "and", "s32")
    assert setp.operands == (RegPair(Reg("%p1"), Reg("%p2")), Reg("%r1"), Imm(16, False, "16"), NotPred(Reg("%p3")))
    assert find(f, "bra").pred == Predicate("%p1", True)
    ld = find(f, "ld.shared")
    assert ld.vector == 2 and ld.operands == (Vec((Reg("%f1"), Sink())), Addr(Sym("buf"), -8))
    assert find(f, "st.global").operands[0] == Addr(Reg("%rd1"), 16)
    assert find(f, "mov.u32", 1).operands[1] == SpecialReg("%laneid")
    assert find(f, "ld.global.nc.v4").space == "global" and find(f, "ld.global.nc.v4").vector == 4
    assert find(f, "ld.u32").space == "generic"
    assert find(f, "atom.global.cas").operands[-2:] == (Reg("%r1"), Reg("%r2"))
    assert find(f, "cp.async.wait_group").opcode == "cp.async.wait_group"
    assert find(f, "bar.warp.sync").opcode == "bar.warp.sync"
    ext = m.function("vprintf")
    assert not ext.has_body and ext.linkage == "extern" and len(ext.params) == 2
    check_supported(m)


# ------------------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("body,line,needle", [
    ("add.s32 %r1, %r2, %r3\n    ret;", 12, "missing ';'"),
    ("add.s32 %r1, %r99, %r3;", 12, "undeclared register %r99"),
    ("add.s32 %r1, %r2, %q3;", 12, "undeclared register %q3"),
    ("bra $L_nowhere;", 12, "undefined label $L_nowhere at '$L_nowhere'"),
    (".frob 3;", 12, "unknown directive"),
    ("mov.u32 %r1, 3 # 4;", 12, "unexpected character '#'"),
    ("ld.global.f32 %f1, [%rd1+];", 12, "expected an address offset"),
    ("mov.u32 %r1, {%r2, %r3;", 12, "'}' or ','"),
    ("@%p9 ret;", 12, "undeclared predicate register %p9"),
    ("add..s32 %r1, %r2, %r3;", 12, "unexpected character '.'"),
    ("add.s32 %r1, %r2, [%rd1+4;", 12, "']' to close"),
    ("frob.s32.;", 12, "unexpected character '.'"),
])
def test_syntax_errors_name_file_line_and_text(body, line, needle):
    src = _PROGRAM.replace("BODY", body)
    with pytest.raises(PtxSyntaxError) as e:
        parse(src, "broken.ptx")
    msg = str(e.value)
    assert msg.startswith(f"broken.ptx:{line}: "), msg
    assert needle in msg, msg
    assert e.value.line == line and e.value.filename == "broken.ptx"
    assert body.split("\n")[0].strip()[:12] in msg  # the offending source line is quoted


def test_structural_errors():
    with pytest.raises(PtxSyntaxError, match=r"x\.ptx:6: .*missing '}'"):
        parse(".version 9.0\n.target sm_90\n.entry k()\n{\n ret;\n", "x.ptx")
    with pytest.raises(PtxSyntaxError, match="missing .version"):
        parse(".target sm_90\n", "x.ptx")
    with pytest.raises(PtxSyntaxError, match=r"x\.ptx:2: unterminated /\* comment"):
        parse(".version 9.0\n/* never closed\n", "x.ptx")
    with pytest.raises(PtxSyntaxError, match="duplicate declaration"):
        parse(_PROGRAM.replace("BODY", ".reg .b32 %r<3>;"), "x.ptx")
    assert issubclass(PtxSyntaxError, PtxError) and issubclass(PtxUnsupportedError, PtxError)
    assert issubclass(PtxError, ValueError)


def test_unknown_and_unsupported_opcodes_are_refused_by_name():
    m = parse(_PROGRAM.replace("BODY", "frobnicate.b32 %r1, %r2;"), "u.ptx")
    ins = m.functions[0].instructions[1]
    assert ins.opcode == "frobnicate" and not ins.known
    with pytest.raises(PtxUnsupportedError) as e:
        check_supported(m)
    assert e.value.line == 12 and e.value.opcode == "frobnicate.b32" and "u.ptx:12" in str(e.value)
    m = parse(_PROGRAM.replace("BODY", "tex.1d.v4.f32.s32 {%f1, %f1, %f1, %f1}, [%rd1, {%r1}];"), "u.ptx")
    assert m.functions[0].instructions[0].known
    with pytest.raises(PtxUnsupportedError, match=r"u\.ptx:12: instruction not supported.*tex\.1d"):
        check_supported(m)
    m = parse(_PROGRAM.replace("BODY", "add.f33 %f1, %f1, %f1;"), "u.ptx")
    with pytest.raises(PtxUnsupportedError, match=r"modifier \.f33 of add"):
        check_supported(m)


# ------------------------------------------------------------------------------------------ robustness

def _big_module(min_lines=5000):
    src = (DATA / "local_array.ptx").read_text()
    head, _, rest = src.partition(".visible .entry local_array(")
    body, _, tail = rest.partition("\n\t.file")
    parts, n = [head], 0
    while sum(p.count("\n") for p in parts) < min_lines:
        parts.append(f".visible .entry local_array_{n}(" + body + "\n")
        n += 1
    return "".join(parts) + "\t.file" + tail


def test_parse_speed_5000_lines():
    src = _big_module()
    assert src.count("\n") >= 5000
    t = time.perf_counter()
    m = parse(src, "big.ptx")
    dt = time.perf_counter() - t
    assert len(m.functions) > 10
    assert dt < 2.0, f"{dt:.2f} s for {src.count(chr(10))} lines"


_FUZZ_SOURCES = [(DATA / n).read_text() for n in ("device_call.ptx", "half_bf16.ptx", "warp_reduce.ptx")]
_FUZZ_SOURCES.append(None)  # filled with the handwritten module below


def _mutate(src: str, ops, rnd: random.Random) -> str:
    lines = src.split("\n")
    for op in ops:
        if not lines:
            break
        i = rnd.randrange(len(lines))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[rnd.randrange(len(lines))])
        elif op == 2:
            j = rnd.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            toks = lines[i].split()
            if not toks:
                continue
            k = rnd.randrange(len(toks))
            if op == 3:
                del toks[k]
            elif op == 4:
                toks.insert(k, toks[rnd.randrange(len(toks))])
            elif op == 5:
                m = rnd.randrange(len(toks))
                toks[k], toks[m] = toks[m], toks[k]
            elif op == 6:
                pos = rnd.randrange(len(toks[k]) + 1)
                junk = "".join(chr(rnd.randrange(256)) for _ in range(rnd.randrange(1, 4)))
                toks[k] = toks[k][:pos] + junk + toks[k][pos:]
            else:
                pos = rnd.randrange(len(toks[k]) + 1)
                toks[k] = toks[k][:pos] + rnd.choice("{}[]();,.:@!%|+-<>=_$\"/*0fx") + toks[k][pos:]
            lines[i] = "\t".join(toks)
    return "\n".join(lines)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(_FUZZ_SOURCES) - 1), ops=st.lists(st.integers(0, 7), min_size=1, max_size=6),
       seed=st.integers(0, 2 ** 32 - 1))
def test_fuzz_mutated_ptx_raises_only_ptx_errors(which, ops, seed):
    src = _FUZZ_SOURCES[which] if _FUZZ_SOURCES[which] is not None else _HANDWRITTEN
    mutated = _mutate(src, ops, random.Random(seed))
    try:
        m = parse(mutated, "fuzz.ptx")
        check_supported(m)
    except PtxError as e:
        assert "fuzz.ptx" in str(e)


# ------------------------------------------------------------------------------------------ sources

_PROGRAM = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<3>;
    .reg .f64 %fd<2>;
    ld.param.u64 %rd1, [k_param_0];
    BODY
    ret;
}
"""

_HANDWRITTEN = r"""
.version 8.5
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 8 .u64 ptrs[2] = {generic(tab)+8, tab};
.global .align 4 .f32 tab[4] = {0f3F800000, 1.5, -2, 0d3FF0000000000000};
.const .align 4 .b32 kmask = 0xFFFF0000 | 0x00F0;
/* a block comment
   over two lines */
.visible .entry k(
    .param .align 8 .b8 k_param_0[16],
    .param .u64 .ptr .global .align 16 k_param_1
) .maxntid 128, 1, 1 .minnctapersm 2
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b8 buf[4096];
    mov.u32 %r1, %tid.x;
    setp.lt.and.s32 %p1|%p2, %r1, 16, !%p3;
    @!%p1 bra $L1;
    ld.shared.v2.f32 {%f1, _}, [buf+-8];
    mov.f32 %f2, 0fBF800000;
    st.global.v2.f32 [%rd1+16], {%f1, %f2};
    ld.global.nc.v4.f32 {%f3, %f4, %f5, %f6}, [%rd1];
    ld.u32 %r2, [%rd2];
    atom.global.cas.b32 %r3, [%rd1], %r1, %r2;
    cp.async.wait_group 0;
    bar.warp.sync -1;
    selp.b32 %r4, 1, 0, %p2;
$L1:
    mov.u32 %r3, %laneid;
    ret;
}
"""


def test_docs_list_every_supported_opcode():
    from jaxsimt.ptx import SUPPORTED_OPCODES
    doc = (pathlib.Path(__file__).parent.parent / "docs" / "ptx.md").read_text()
    for op in SUPPORTED_OPCODES:
        assert f"| `{op}` |" in doc, op
