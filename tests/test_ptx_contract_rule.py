"""The mul + add contraction rule (jaxsimt/ptx/contract.py) against ptxas itself: tests/data/contract/contract_probes.ptx
holds one small kernel per case of the rule (readers that are all adds, a reader that is not, predicated
readers, operands written in between, joins, readers past a branch or in a loop, two products in one add,
f64), and contract_probes.sass is what `ptxas -arch=sm_90 -O3` (CUDA 13.0, the H200's) made of it. For every
kernel, the muls jaxsimt leaves and the fmas it makes are the SASS's FMUL/DMUL and FFMA/DFMA, and where the
SASS keeps a product of two loaded values it is the same product. One launch checks the fused values bit for
bit against exact arithmetic rounded once."""
import collections
import os
import re
from fractions import Fraction

import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt.ptx.lower import lower

DATA = os.path.join(os.path.dirname(__file__), "data", "contract")
PROBES = os.path.join(DATA, "contract_probes.ptx")
_INS = re.compile(r"\s*/\*[0-9a-f]+\*/ (?:@!?P\w+ )?([A-Z0-9_.]+)\s*([^;]*);")
_LDG = re.compile(r"R(\d+), desc\[UR\d+\]\[R\d+\.64(?:\+0x([0-9a-f]+))?\]")


def _sass() -> dict:
    """{kernel: [(opcode, operand text)]} of contract_probes.sass."""
    out, cur = {}, None
    with open(os.path.join(DATA, "contract_probes.sass")) as f:
        for line in f:
            m = re.match(r"\s*Function : (\w+)", line)
            if m:
                cur = out.setdefault(m.group(1), [])
                continue
            m = _INS.match(line)
            if m and cur is not None:
                cur.append((m.group(1), m.group(2)))
    return out


SASS = _sass()
MODULE = P.load_module(PROBES)
KERNELS = [f.name for f in MODULE.entries]


_LOADED = {f"f{k}" for k in range(1, 7)}  # %f1..%f6: every probe's loaded values


def _sass_counts(kernel):
    c = collections.Counter(op.split(".")[0] for op, _ in SASS[kernel])
    return c["FMUL"] + c["DMUL"], c["FFMA"] + c["DFMA"]


def _sass_products(kernel):
    """The FMULs of two loaded values, as {PTX register loaded, ...} (loads of a[8i + k] go to %f(k+1))."""
    held, out = {}, []
    for op, args in SASS[kernel]:
        regs = re.findall(r"\bR(\d+)", args)
        if op.startswith("LDG"):
            m = _LDG.match(args)
            held[m.group(1)] = f"f{int(m.group(2) or '0', 16) // 4 + 1}"
            continue
        srcs = [re.fullmatch(r"R(\d+)(?:\.reuse)?", a.strip()) for a in args.split(",")[1:]]
        if op == "FMUL" and all(m and held.get(m.group(1)) in _LOADED for m in srcs):
            out.append(frozenset(held[m.group(1)] for m in srcs))
        if regs:
            held.pop(regs[0], None)  # the destination now holds something else
    return sorted(out, key=sorted)


def _ops(kernel, contract=True):
    prog = lower(MODULE, kernel, contract=contract)
    return [i.operation for b in prog.blocks for i in b.instrs]


def test_probes_cover_every_kernel_of_the_sass():
    assert sorted(SASS) == sorted(KERNELS) and len(KERNELS) >= 40


# kernels with a div.rn.f32, whose expansion (Newton steps, a called slow path) has FFMAs of its own: compared by
# the product kept and the fmas made, not by counts of the SASS
DIVIDES = [k for k in KERNELS if k.startswith("div_")]


@pytest.mark.parametrize("kernel", [k for k in KERNELS if k not in DIVIDES])
def test_contraction_matches_ptxas(kernel):
    ops = _ops(kernel)
    got = (sum(o.op == "mul" for o in ops), sum(o.op == "fma" for o in ops))
    assert got == _sass_counts(kernel), f"jaxsimt (mul, fma) {got}, ptxas (FMUL/DMUL, FFMA/DFMA) {_sass_counts(kernel)}"


@pytest.mark.parametrize("kernel", [k for k in KERNELS if _sass_products(k)])
def test_the_product_kept_is_the_one_ptxas_keeps(kernel):
    kept = sorted((frozenset(s.name for s in o.src) for o in _ops(kernel)
                   if o.op == "mul" and all(getattr(s, "name", None) in _LOADED for s in o.src)), key=sorted)
    assert kept == _sass_products(kernel)


@pytest.mark.parametrize("kernel", DIVIDES)
def test_a_division_ends_the_stretch_a_product_fuses_in(kernel):
    """ptxas splits its basic block at a div.rn.f32 (fast path, branch to a slow path): a product of two loaded
    values computed before the division and added after it keeps its FMUL; one with a parameter is fused
    across, as across a branch; products and adds on one side are fused."""
    ops = _ops(kernel)
    kept = sorted((frozenset(s.name for s in o.src) for o in ops
                   if o.op == "mul" and all(getattr(s, "name", None) in _LOADED for s in o.src)), key=sorted)
    assert kept == _sass_products(kernel)
    assert sum(o.op == "fma" for o in ops) == (0 if kept else 1)


def test_no_contract_keeps_every_mul():
    for kernel in ("two_adds", "other_block_imm_and_here", "loop_reg_param", "two_products_tie"):
        ops = _ops(kernel, contract=False)
        plain = sum(1 for line in _body(kernel) if re.match(r"\s*mul\.f(32|64)\b", line))
        assert sum(o.op == "mul" for o in ops) == plain and not any(o.op == "fma" for o in ops)


def _body(kernel):
    with open(PROBES) as f:
        text = f.read()
    start = text.index(f".entry {kernel}(")
    return text[start:text.index("\n}", start)].splitlines()


# ------------------------------------------------------------------------------------------ the values
N = 128

_VALUES = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 py, .param .f32 pf)
{
    .reg .pred %p<3>;
    .reg .f32 %f<30>;
    .reg .b64 %rd<8>;
    .reg .b32 %r<3>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [py];
    ld.param.f32 %f20, [pf];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    mul.wide.u32 %rd5, %r1, 32;
    add.s64 %rd5, %rd2, %rd5;
    ld.global.f32 %f1, [%rd4];
    ld.global.f32 %f2, [%rd4+4];
    ld.global.f32 %f3, [%rd4+8];
    ld.global.f32 %f4, [%rd4+12];
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    // one product, three readers: a*b + c, a*b - d, and (even threads only) d - a*b
    mul.f32 %f10, %f1, %f2;
    add.f32 %f11, %f10, %f3;
    sub.f32 %f12, %f10, %f4;
    mov.f32 %f13, %f4;
    @%p1 sub.f32 %f13, %f4, %f10;
    // the product's operand a is written before its reader: a*b + c with the old a
    mul.f32 %f14, %f1, %f2;
    ld.global.f32 %f1, [%rd4+8];
    add.f32 %f15, %f14, %f4;
    // a*pf read past a branch (odd threads): a*pf + c
    mul.f32 %f16, %f3, %f20;
    mov.f32 %f17, %f4;
    @%p1 bra SKIP;
    add.f32 %f17, %f16, %f2;
SKIP:
    st.global.f32 [%rd5], %f11;
    st.global.f32 [%rd5+4], %f12;
    st.global.f32 [%rd5+8], %f13;
    st.global.f32 [%rd5+12], %f15;
    st.global.f32 [%rd5+16], %f17;
    ret;
}
"""


def _round(q):
    """The exact rational q rounded to f32, to nearest even."""
    r = np.float32(float(q))
    best = r
    for c in (np.nextafter(r, np.float32(-np.inf)), np.nextafter(r, np.float32(np.inf))):
        dc, db = abs(Fraction(float(c)) - q), abs(Fraction(float(best)) - q)
        if dc < db or (dc == db and int(np.asarray(c).view(np.uint32)) % 2 == 0):
            best = c
    return best


def test_fused_products_round_once():
    g = np.random.default_rng(7)
    x = g.uniform(-1, 1, (N, 4)).astype(np.float32)
    pf = np.float32(0.7071)
    y = np.zeros((N, 8), np.float32)
    out = P.launch(_VALUES, "k", 1, N, [x.ravel(), y.ravel(), pf])["py"].reshape(N, 8)
    a, b, c, d = ([Fraction(float(v)) for v in x[:, k]] for k in range(4))
    even = np.arange(N) % 2 == 0
    want = np.zeros((N, 5), np.float32)
    for i in range(N):
        p = a[i] * b[i]
        want[i] = [_round(p + c[i]), _round(p - d[i]), _round(d[i] - p) if even[i] else x[i, 3], _round(p + d[i]),
                   x[i, 3] if even[i] else _round(c[i] * Fraction(float(pf)) + b[i])]
    np.testing.assert_array_equal(out[:, :5].view(np.uint32), want.view(np.uint32))
    twice = (x[:, 0] * x[:, 1]) + x[:, 2]  # numpy: product rounded, then the sum
    assert (out[:, 0].view(np.uint32) != twice.view(np.uint32)).any()  # the inputs do tell one rounding from two
