"""Float division, square root and reciprocal with PTX's rounding modes are bit-exact for uniform
divisors (an immediate, a kernel parameter) as well as per-lane ones, although XLA:CPU turns division by
a broadcast value into a multiply by its reciprocal. References: numpy's correctly rounded f32/f64
division, and exact rational arithmetic for the directed modes."""
from fractions import Fraction

import jax.numpy as jnp
import numpy as np

import jaxsimt as js
import jaxsimt.ptx as P
from jaxsimt import Ptr, f32, f64
from jaxsimt.units import mufu

N = 1024


def _inputs(dtype=np.float32, seed=0):
    g = np.random.default_rng(seed)
    x = g.uniform(0.5, 4, N) * g.choice([-1, 1], N)
    return x.astype(dtype)


def _directed(x, q_exact, rn, mode):
    """Round the exact values q_exact (Fractions) to f32 in `mode` given the correctly rounded rn."""
    out = rn.copy()
    for i, (q, r) in enumerate(zip(q_exact, rn)):
        fr = Fraction(float(r))
        if fr == q:
            continue
        lo, hi = (np.nextafter(r, np.float32(-np.inf)), r) if fr > q else (r, np.nextafter(r, np.float32(np.inf)))
        if mode == "rm":
            out[i] = lo
        elif mode == "rp":
            out[i] = hi
        else:  # rz: the smaller magnitude
            out[i] = hi if q < 0 else lo
    return out


def _sqrt_directed(x, rn, mode):
    out = rn.copy()
    for i, (v, r) in enumerate(zip(x, rn)):
        sq = Fraction(float(r)) ** 2
        if sq == Fraction(float(v)):
            continue
        above = sq > Fraction(float(v))
        lo, hi = (np.nextafter(r, np.float32(0)), r) if above else (r, np.nextafter(r, np.float32(np.inf)))
        out[i] = hi if mode == "rp" else lo
    return out


def _bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    u = np.uint64 if got.dtype == np.float64 else np.uint32
    bad = int((got.view(u) != want.view(u)).sum())
    assert bad == 0, f"{bad} of {got.size} results differ in their bits"


@js.kernel
def dsl_div(c: f32, cd: f64, x: Ptr[f32], xd: Ptr[f64], y_param: Ptr[f32], y_imm: Ptr[f32], yd_param: Ptr[f64],
            yd_imm: Ptr[f64]):
    i = js.global_thread_index()
    y_param[i] = x[i] / c
    y_imm[i] = x[i] / js.const(3.0, f32)
    yd_param[i] = xd[i] / cd
    yd_imm[i] = xd[i] / js.const(0.1, f64)


def test_dsl_division_by_a_uniform_divisor_is_correctly_rounded():
    x = _inputs()
    xd = _inputs(np.float64, 1)
    c, cd = np.float32(7.3), np.float64(1.7)
    z = np.zeros(N, np.float32)
    r = js.launch(dsl_div, 4, 256, (c, cd, x, xd, z, z, z.astype(np.float64), z.astype(np.float64)))
    _bits_equal(r["y_param"], x / c)
    _bits_equal(r["y_imm"], x / np.float32(3.0))
    _bits_equal(r["yd_param"], xd / cd)
    _bits_equal(r["yd_imm"], xd / np.float64(0.1))


_HEAD = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 px, .param .u64 py, .param .{t} c)
{{
    .reg .{t} %f<16>;
    .reg .b64 %rd<8>;
    .reg .b32 %r<3>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [py];
    ld.param.{t} %f2, [c];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.s32 %r1, %r2, 256, %r1;
    mul.wide.s32 %rd5, %r1, {s};
    add.s64 %rd6, %rd3, %rd5;
    ld.global.{t} %f1, [%rd6];
    mul.wide.s32 %rd5, %r1, {s8};
    add.s64 %rd7, %rd4, %rd5;
{body}
    ret;
}}
"""


def _ptx(t, ops):
    """A kernel computing `ops` (PTX lines writing %f3.. from %f1 = x[i], %f2 = the parameter c) and
    storing result k at y[i * len(ops) + k]."""
    s = 4 if t == "f32" else 8
    body = []
    for k, op in enumerate(ops):
        body.append("    " + op.format(d=f"%f{3 + k}"))
        body.append(f"    st.global.{t} [%rd7+{k * s}], %f{3 + k};")
    return _HEAD.format(t=t, s=s, s8=s * len(ops), body="\n".join(body))


_F32_OPS = [
    "div.rn.f32 {d}, %f1, 0f40400000;",  # x / 3.0 (immediate)
    "div.rn.f32 {d}, %f1, %f2;",  # x / c (parameter)
    "div.full.f32 {d}, %f1, %f2;",  # the special function unit's (jaxsimt.units.mufu, tests/test_mufu.py)
    "div.rz.f32 {d}, %f1, %f2;",
    "div.rm.f32 {d}, %f1, 0f3DCCCCCD;",  # x / 0.1f
    "div.rp.f32 {d}, %f1, %f2;",
    "rcp.rn.f32 {d}, %f1;",
    "rcp.rz.f32 {d}, %f1;",
    "abs.f32 {d}, %f1;",
]


def test_ptx_f32_division_sqrt_rcp_rounding_modes_bit_exact():
    x = _inputs(seed=2)
    c = np.float32(7.3)
    ops = _F32_OPS + ["sqrt.rn.f32 {d}, %f11;", "sqrt.rz.f32 {d}, %f11;"]
    ops = [o.replace("%f11", f"%f{3 + _F32_OPS.index('abs.f32 {d}, %f1;')}") for o in ops]
    text = _ptx("f32", ops)
    y = np.zeros(N * len(ops), np.float32)
    r = P.launch(text, "k", 4, 256, [x, y, c])
    out = r.outputs["py"].reshape(N, len(ops)).T
    three, tenth = np.float32(3.0), np.float32(0.1)
    fx = [Fraction(float(v)) for v in x]
    exact_c = [v / Fraction(float(c)) for v in fx]
    _bits_equal(out[0], x / three)
    _bits_equal(out[1], x / c)
    unit = mufu.div(jnp.asarray(x), jnp.full(N, c), mufu.tables_for(["rcp"]), True, False)
    _bits_equal(out[2], np.asarray(unit))
    assert np.all(np.abs(out[2].astype(np.float64) / (x.astype(np.float64) / c) - 1) < 2 ** -22)  # ~2 ulp
    _bits_equal(out[3], _directed(x, exact_c, x / c, "rz"))
    _bits_equal(out[4], _directed(x, [v / Fraction(float(tenth)) for v in fx], x / tenth, "rm"))
    _bits_equal(out[5], _directed(x, exact_c, x / c, "rp"))
    _bits_equal(out[6], np.float32(1) / x)
    _bits_equal(out[7], _directed(x, [1 / v for v in fx], np.float32(1) / x, "rz"))
    ax = np.abs(x)
    _bits_equal(out[9], np.sqrt(ax))
    _bits_equal(out[10], _sqrt_directed(ax, np.sqrt(ax), "rz"))


def test_ptx_f64_division_by_immediate_and_parameter_bit_exact():
    x = _inputs(np.float64, 3)
    c = np.float64(7.3)
    ops = ["div.rn.f64 {d}, %f1, 0d4008000000000000;",  # x / 3.0
           "div.rn.f64 {d}, %f1, %f2;",
           "rcp.rn.f64 {d}, %f1;"]
    y = np.zeros(N * len(ops), np.float64)
    r = P.launch(_ptx("f64", ops), "k", 4, 256, [x, y, c])
    out = r.outputs["py"].reshape(N, len(ops)).T
    _bits_equal(out[0], x / 3.0)
    _bits_equal(out[1], x / c)
    _bits_equal(out[2], 1.0 / x)
