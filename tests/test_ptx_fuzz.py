"""Mutated real PTX either raises a PtxError with a line or lowers (and, for a few, runs or faults with a
jaxsimt error); one focused test per check that replaced a crash or a silent acceptance."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsimt.apps import ptx_fuzz as fuzz
from jaxsimt.ptx import PtxError, PtxInvalidError, PtxUnsupportedError, lower, parse

SOURCES = fuzz.source_texts()


def _check_outcome(text, entry):
    res, info = fuzz.outcome(text, entry, "mut.ptx")
    assert res != "crash", f"{info} escaped the PTX front end"
    if res == "ptx_error":
        assert info > 0, "a PtxError without a line"
    return res


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(SOURCES) - 1), seed=st.integers(0, 2**31), edits=st.integers(1, 3))
def test_mutants_raise_ptx_errors_with_a_line_or_lower(which, seed, edits):
    prog, entry, text = SOURCES[which]
    for _, mut in fuzz.mutants(text, seed, 3, edits):
        _check_outcome(mut, entry)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(SOURCES) - 1), seed=st.integers(0, 2**31), edits=st.integers(1, 4))
def test_mutants_raise_ptx_errors_with_a_line_or_lower_long(which, seed, edits):
    prog, entry, text = SOURCES[which]
    for _, mut in fuzz.mutants(text, seed, 10, edits):
        _check_outcome(mut, entry)


def test_fixed_seed_survey_has_no_crash():
    r = fuzz.survey(150, seed=3)
    assert r["total"] == 150
    assert not r["crashes"], [c[:4] for c in r["crashes"]]
    assert r["counts"].get("ptx_error (no line)", 0) == 0


def test_mutants_are_deterministic():
    _, _, text = SOURCES[0]
    assert list(fuzz.mutants(text, 5, 20, 2)) == list(fuzz.mutants(text, 5, 20, 2))


def _run_check(text, entry):
    res, info = fuzz.run_outcome(text, entry, max_steps=500)
    assert res in ("ok", "fault", "ptx_error"), info


def test_a_few_lowered_mutants_run_or_fault_with_jaxsimt_errors():
    # one mutant of the smallest kernel that lowers: its launch ends normally or with a jaxsimt error
    prog, entry, text = SOURCES[0]
    mut = next(m for _, m in fuzz.mutants(text, 11, 30) if fuzz.outcome(m, entry)[0] == "ok")
    _run_check(mut, entry)


@pytest.mark.slow
def test_lowered_mutants_run_or_fault_with_jaxsimt_errors_long():
    for si, (prog, entry, text) in enumerate(SOURCES):
        if prog in ("mma_truth", "gemm_ladder"):
            continue
        k = 0
        for _, mut in fuzz.mutants(text, 100 + si, 30, 2):
            if k < 3 and fuzz.outcome(mut, entry)[0] == "ok":
                _run_check(mut, entry)
                k += 1


# ------------------------------------------------------------------ one test per crash class fixed

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _kernel(body, params=".param .u64 k_p0, .param .u32 k_p1", regs=None):
    regs = regs or (".reg .pred %p<4>;\n.reg .b16 %rs<4>;\n.reg .b32 %r<8>;\n.reg .f32 %f<4>;\n"
                    ".reg .b64 %rd<8>;\n")
    return HEAD + f".visible .entry k({params})\n{{\n{regs}{body}\nret;\n}}\n"


def _refused(body, *words, **kw):
    text = _kernel(body, **kw)
    with pytest.raises(PtxError) as e:
        lower(parse(text, "bad.ptx"), "k")
    msg = str(e.value)
    assert "bad.ptx:" in msg and e.value.line > 0, msg
    for w in words:
        assert w in msg, msg
    return e.value


@pytest.mark.parametrize("body, words", [
    ("mov.u32 %r1;", ("mov.u32", "takes 2 operands, got 1")),            # IndexError in mov
    ("ld.global.u32 [%rd1];", ("ld.global.u32", "got 1")),               # IndexError in memory
    ("st.global.f32 %f1;", ("st.global.f32", "got 1")),
    ("ld.param.u32 [k_p1];", ("ld.param.u32", "got 1")),                 # IndexError in param_access
    ("setp.ge.s32 %p1, %r1;", ("setp.ge.s32", "takes 3 operands, got 2")),  # IndexError in setp
    ("mul.wide.s32 %rd1, %r1;", ("mul.wide.s32", "got 2")),              # IndexError in an operand helper
    ("cvta.to.global.u64 %rd1;", ("cvta", "got 1")),                     # IndexError in lower_op
    ("add.s32 %r1, %r2, %r3, %r4;", ("add.s32", "takes 3 operands, got 4")),  # extra operands ignored
    ("selp.s64 %rd1, %rd2, %rd3;", ("selp.s64", "got 3")),
])
def test_operand_counts(body, words):
    assert isinstance(_refused(body, *words), PtxInvalidError)


def test_branch_without_target():
    _refused("@%p1 bra ;")


def test_setp_without_comparison_is_refused_not_stopiteration():
    _refused("setp.s32 %p1, %r1, %r2;", "needs a comparison")


def test_float_membermask_is_refused_not_overflow():
    _refused("bar.warp.sync 0dFFF0000000000000;", "64-bit float immediate", ".b32")


@pytest.mark.parametrize("body, words", [
    ("mov.u32 %p1, %r1;", ("operand 1 (destination)", "%p1 (.pred)", "32-bit")),
    ("mov.u32 %r1, %rd1;", ("operand 2", "%rd1 (.b64)")),
    ("add.f32 %f1, %p1, %f2;", ("%p1 (.pred)",)),
    ("add.s32 %r1, %f1, %r2;", ("%f1 (.f32)",)),
    ("setp.eq.s32 %r1, %r2, %r3;", ("predicate destination", "%r1 (.b32)")),
    ("selp.b32 %r1, %r2, %r3, %r4;", ("predicate", "%r4 (.b32)")),
    ("mul.wide.s32 %r1, %r2, 4;", ("%r1 (.b32)", "s64")),
])
def test_register_class_and_width(body, words):
    _refused(body, *words)


def test_wider_registers_in_ld_st_cvt_are_valid():
    text = _kernel("ld.param.u32 %rd1, [k_p1];\nld.global.u8 %r1, [%rd1];\ncvt.u16.u8 %rs1, %r1;")
    lower(parse(text, "ok.ptx"), "k")


def test_32bit_register_as_a_64bit_global_address():
    _refused("ld.global.u32 %r1, [%r2];", ".global address register must be a 64-bit", "%r2 (.b32)")


def test_32bit_shared_address_is_valid():
    text = _kernel("ld.shared.u32 %r1, [%r2];", regs=".reg .b32 %r<4>;\n").replace(
        "{\n", "{\n.shared .align 4 .b8 sm[64];\n", 1)
    lower(parse(text, "ok.ptx"), "k")


@pytest.mark.parametrize("body, words", [
    ("add.b64 %rd1, %rd2, %rd3;", ("type .b64 not allowed",)),
    ("add.u32.s32 %r1, %r2, %r3;", ("takes 1 type suffix",)),
    ("cvt.u32 %r1, %r2;", ("takes 2 type suffixes",)),
    ("mul.u32 %r1, %r2, %r3;", ("needs .lo, .hi or .wide",)),
    ("mul.wide.f32 %f1, %f2, %f3;", (".wide needs one of the types",)),
    ("add %r1, %r2, %r3;", ("takes 1 type suffix, got none",)),
])
def test_type_suffixes(body, words):
    _refused(body, *words)


def test_bad_type_suffix_not_supported():
    e = _refused("add.f33 %f1, %f2, %f3;")
    assert isinstance(e, PtxUnsupportedError)


def test_unknown_atomic_type_is_refused_not_keyerror():
    _refused("atom.global.cas.f16x2 %r1, [%rd1], %r2, %r3;", "f16x2")


def test_pred_kernel_parameter():
    e = _refused("", "parameter k_p1 of type .pred", params=".param .u64 k_p0, .param .pred k_p1")
    assert e.line == 4


def test_zero_size_shared_array():
    text = _kernel("").replace("{\n", "{\n.shared .align 4 .b8 zz[0];\n", 1)
    with pytest.raises(PtxInvalidError, match=r"bad.ptx:6: array zz of .shared has a zero dimension"):
        lower(parse(text, "bad.ptx"), "k")


def test_entry_without_body():
    text = HEAD + ".visible .entry k(.param .u64 k_p0);\n"
    with pytest.raises(PtxInvalidError, match=r"bad.ptx:4: kernel k \(.entry\) has no body"):
        lower(parse(text, "bad.ptx"), "k")


def test_messages_name_file_line_instruction_expected_and_given():
    e = _refused("mov.u32 %p1, %r1;")
    assert str(e) == ("bad.ptx:11: mov.u32: operand 1 (destination) must be a 32-bit .u32-compatible register, "
                      "got %p1 (.pred): 'mov.u32 %p1, %r1'")


def test_every_entry_of_the_kernel_library_lowers():
    # nvcc's own output passes every check (the slow suites run them); here the fuzz sources
    for prog, entry, text in SOURCES:
        lower(parse(text, prog + ".ptx"), entry)


@pytest.mark.slow
def test_a_valid_kernel_still_runs():
    prog, entry, text = SOURCES[0]
    res, info = fuzz.run_outcome(text, entry)
    assert res == "ok", info
