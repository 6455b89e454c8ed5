"""The instruction table (jaxsimt.units.isa): every op the front ends emit for the shipped kernels is in it, no module
outside it (and the op semantics and front ends) tests op names, and what it says of an op is what the
machine, the ITS machine, the sanitizer and the timing traces use."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import jaxsimt
from jaxsimt.units import isa
from jaxsimt.machine import its, sanitizer
from jaxsimt.timing import trace
from jaxsimt.kernels import collection
from jaxsimt.ptx import load_module, lower
from jaxsimt.ptx import parse

ROOT = os.path.dirname(os.path.abspath(jaxsimt.__file__))


def _ops(prog) -> set:
    out = set()
    for b in prog.blocks:
        for ins in b.all_instrs():
            out |= {ins.op, ins.operation.op}
    return out


def test_every_op_of_the_collection_is_in_the_table():
    seen = set()
    for case in collection.CASES:
        prog = lower(load_module(collection.ptx_path(case.program)), case.entry, case.args(), dynamic_smem=case.dyn)
        seen |= _ops(prog)
    assert seen - set(isa.OPS) == set()
    assert {"ld", "st", "bar", "bra", "ptx.guard", "tensor.mma"} <= seen


def test_every_op_of_the_seed_kernels_is_in_the_table():
    from jaxsimt.apps import conformance
    seen = set()
    for case in conformance._dsl_cases():
        seen |= _ops(case.kernel.program)
    assert seen and seen - set(isa.OPS) == set()


# Modules that may name ops: the table, the semantics it points at, the IR's own copy propagation, and the front
# ends, which emit them.
NAMING_OPS = {"isa.py", "alu.py", "program.py", "dsl.py", "tensor.py"}
OP_TEST = re.compile(r"\.op\s*(==|!=|in\b|not in\b)")


def test_no_module_outside_the_table_tests_op_names():
    hits = []
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in ("data", "__pycache__", "ptx")]
        for f in files:
            if f.endswith(".py") and f not in NAMING_OPS:
                for i, line in enumerate(open(os.path.join(dirpath, f)), 1):
                    if OP_TEST.search(line.split("#")[0]):
                        hits.append(f"{os.path.relpath(os.path.join(dirpath, f), ROOT)}:{i}: {line.strip()}")
    assert hits == []


HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _one(body: str, regs: str = ".reg .b32 %r<8>;\n .reg .pred %p<2>;"):
    prog = lower(parse(HEAD + ".visible .entry k()\n{\n " + regs + "\n " + body + "\n ret;\n}\n"), "k")
    return [ins for b in prog.blocks for ins in b.instrs]


def test_ptx_and_dsl_shuffles_have_one_member_mask():
    (shfl,) = [i for i in _one("shfl.sync.down.b32 %r1, %r2, 8, 31, 0x0000ffff;") if i.operation.op == "shfl"]
    assert isa.member_mask(shfl) == sanitizer.member_mask(shfl) == its.member_mask(shfl) == 0xFFFF


@pytest.mark.parametrize("body,op,mask", [
    ("redux.sync.add.u32 %r1, %r2, 0x0000000f;", "ptx.redux", 0xF),
    ("vote.sync.ballot.b32 %r1, %p1, 0x000000ff;", "vote", 0xFF),
    ("bar.warp.sync 0x00ff00ff;", "warpsync", 0x00FF00FF),
])
def test_warp_synchronous_ops_and_their_masks(body, op, mask):
    ins = [i for i in _one(body) if i.operation.op == op]
    assert ins and isa.is_warp_sync(ins[0]) and isa.member_mask(ins[0]) == mask


def test_timing_classes_come_from_the_table():
    ld_s, = [i for i in _one(".shared .b32 s[4];\n ld.shared.u32 %r1, [s];", ".reg .b32 %r<4>;") if i.op == "ld"]
    assert trace.CLASS_NAMES[trace.timing_class(ld_s)] == isa.timing_class(ld_s) == "shared"
    add_f, = [i for i in _one("add.f32 %f1, %f2, 0f3F800000;", ".reg .f32 %f<4>;") if i.op == "add"]
    assert isa.timing_class(add_f) == "fp32"
    assert isa.READ_OPS == {"ld", "tex2d", "tensor.ldmatrix"} and isa.WRITE_OPS == {"st", "atom"}


def test_an_op_outside_the_table_is_named():
    from jaxsimt.program import Instr
    with pytest.raises(NotImplementedError, match="'frobnicate' .* not in the instruction table"):
        isa.spec(Instr("frobnicate", (), ()))


@jaxsimt.kernel
def _partial_vote(out: jaxsimt.Ptr[jaxsimt.u32]):
    t = jaxsimt.threadIdx.x
    out[t] = jaxsimt.ballot_sync(t > 3, 0x0000FFFF)


def test_dsl_and_ptx_share_one_vote_and_one_sreg():
    """Both front ends emit the table's one `vote` (member mask an operand) and one `sreg` entry."""
    ptx = {i.operation.op: i for i in _one("vote.sync.ballot.b32 %r1, %p1, 0x0000ffff;\n mov.u32 %r2, %lanemask_lt;\n"
                                           " mov.u32 %r3, %tid.x;")}
    dsl = {i.operation.op: i for b in _partial_vote.program.blocks for i in b.instrs}
    for ops in (ptx, dsl):
        assert {"vote", "sreg"} <= set(ops) and not {o for o in ops if o.startswith("ptx.") and o != "ptx.guard"}
        assert isa.member_mask(ops["vote"]) == 0xFFFF
    r = jaxsimt.launch(_partial_vote, 1, 32, (np.zeros(32, np.uint32),))
    assert set(np.asarray(r["out"]).tolist()) == {sum(1 << i for i in range(4, 16))}


@jaxsimt.kernel
def _shfl_cmp_cvt(x: jaxsimt.Ptr[jaxsimt.s32], out: jaxsimt.Ptr[jaxsimt.f32]):
    t = jaxsimt.threadIdx.x
    v = jaxsimt.shfl_down_sync(x[t], 1, width=16)
    out[t] = jaxsimt.where(v < 7, v.astype(jaxsimt.f32), 0.5)


def test_dsl_and_ptx_share_one_shfl_setp_and_cvt():
    """One entry each, in the ISA's operand form: the DSL's shuffle width travels packed into `c`, as in nvcc's
    code for `__shfl_down_sync(0xffffffff, v, 1, 16)`, and the same attributes reach the semantics."""
    ptx = {i.operation.op: i for i in _one(
        "shfl.sync.down.b32 %r1, %r2, 1, 4127, -1;\n setp.lt.s32 %p1, %r1, 7;\n"
        " cvt.rn.f32.s32 %f1, %r1;", ".reg .b32 %r<8>;\n .reg .pred %p<2>;\n .reg .f32 %f<2>;")}
    dsl = {i.operation.op: i for b in _shfl_cmp_cvt.program.blocks for i in b.instrs}
    assert 4127 == (16 << 8) | 31
    for ops in (ptx, dsl):
        assert {"shfl", "setp", "cvt"} <= set(ops) and not {o for o in ops if o.startswith("ptx.") and o != "ptx.guard"}
        assert ops["shfl"].src[2].value == 4127 and ops["shfl"].attr("mode") == "down"
        assert isa.member_mask(ops["shfl"]) == 0xFFFFFFFF and isa.timing_class(ops["shfl"]) == "shuffle"
        assert ops["setp"].attr("cmp") == "lt" and ops["cvt"].attr("to") == "f32"
    x = np.array([(i * 5) % 11 for i in range(32)], np.int32)
    out = np.asarray(jaxsimt.launch(_shfl_cmp_cvt, 1, 32, (x, np.zeros(32, np.float32)))["out"])
    src = np.array([i + 1 if (i % 16) < 15 else i for i in range(32)])
    v = x[src]
    np.testing.assert_array_equal(out, np.where(v < 7, v.astype(np.float32), 0.5))


def test_no_ptx_op_duplicates_a_shared_one():
    """The lowering's own `ptx.<name>` ops are only those the DSL has no form of."""
    assert {n[4:] for n in isa.OPS if n.startswith("ptx.")} & set(isa.OPS) == set()


CVT_PTX = HEAD + """
.visible .entry cvt64(.param .u64 px, .param .u64 pout)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.s64 %rd5, [%rd4];
    cvt.rn.f32.s64 %f1, %rd5;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.f32 [%rd7], %f1;
    ret;
}
"""


@jaxsimt.kernel
def _cvt64(x: jaxsimt.Ptr[jaxsimt.s64], out: jaxsimt.Ptr[jaxsimt.f32]):
    t = jaxsimt.threadIdx.x
    out[t] = x[t].astype(jaxsimt.f32)


def test_a_64_bit_integer_converts_to_f32_with_one_rounding():
    """2^60 + 2^36 + 1 lies just above the midpoint of two f32 values: rounding once gives the upper one, rounding
    through f64 first (which drops the 1) a tie that goes to the even, lower one. Both front ends, as numpy."""
    from jaxsimt.ptx import launch as ptx_launch
    x = np.array([2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**62 - 1, -5, 0, 2**63 - 1, -2**63, 123456789], np.int64)
    x = np.resize(x, 32)
    want = x.astype(np.float32)
    assert want[0] == np.float32(2**60 + 2**37)
    dsl = jaxsimt.launch(_cvt64, 1, 32, (x, np.zeros(32, np.float32)))["out"]
    ptx = ptx_launch(CVT_PTX, "cvt64", 1, 32, (x, np.zeros(32, np.float32)))["pout"]
    np.testing.assert_array_equal(np.asarray(dsl), want)
    np.testing.assert_array_equal(np.asarray(ptx), want)
