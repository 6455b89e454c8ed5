"""f32 arithmetic keeps subnormal operands and results on every backend (jaxsimt.units.fp32), as a GPU's
instructions without .ftz do, although XLA:CPU flushes them in its own f32 and f64 arithmetic. References:
numpy's f32 arithmetic (which keeps subnormals) and exact rational arithmetic for fma and the directed
roundings."""
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxsimt.ptx as P
from jaxsimt.units import fp32

# bit patterns weighted toward the subnormal range and just above it, where flushing would show
_SMALL = st.integers(0, 2 ** 25 - 1)  # exponent fields 0..3
_ANY = st.integers(0, 2 ** 32 - 1)
_BITS = st.one_of(_SMALL, _SMALL.map(lambda u: u | 0x80000000), _ANY)
_ARRAYS = st.lists(_BITS, min_size=1, max_size=64).map(lambda v: np.array(v, np.uint32).view(np.float32))


def _equal(got, want):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(hex(int(g)), hex(int(w))) for g, w in zip(got.view(np.uint32)[~same],
                                                                    want.view(np.uint32)[~same])][:5]


def _x64(fn, *args):
    with jax.enable_x64(True):  # as the machine runs
        return np.asarray(jax.jit(fn)(*args))


def _round(q: Fraction, mode="rn") -> np.float32:
    """The f32 nearest the exact value q (ties to even), or q rounded toward zero / -inf / +inf."""
    with np.errstate(over="ignore"):  # just below the largest finite value, r may round up to infinity
        r = np.float32(float(q))  # within one ulp of the answer
        cands = [np.nextafter(r, np.float32(-np.inf)), r, np.nextafter(r, np.float32(np.inf))]
    cands = [c for c in cands if np.isfinite(c)]
    if mode == "rn":
        return min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(np.float32(c).view(np.uint32)) & 1))
    below = max((c for c in cands if Fraction(float(c)) <= q), key=lambda c: Fraction(float(c)))
    above = min((c for c in cands if Fraction(float(c)) >= q), key=lambda c: Fraction(float(c)))
    if mode == "rm":
        return below
    if mode == "rp":
        return above
    return below if q >= 0 else above


@settings(max_examples=60, deadline=None)
@given(_ARRAYS, _ARRAYS)
def test_add_sub_mul_min_max_compare_equal_numpy_with_subnormals(a, b):
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    with np.errstate(all="ignore"):
        _equal(_x64(fp32.add, a, b), a + b)
        _equal(_x64(fp32.sub, a, b), a - b)
        _equal(_x64(fp32.mul, a, b), a * b)
        zeros = (a == 0) & (b == 0)  # minNum leaves min(+0, -0) open (numpy returns the first operand)
        _equal(_x64(fp32.fmin, a, b)[~zeros], np.fmin(a, b)[~zeros])
        _equal(_x64(fp32.fmax, a, b)[~zeros], np.fmax(a, b)[~zeros])
        assert (_x64(lambda p, q: fp32.widen(p) < fp32.widen(q), a, b) == (a < b)).all()
        _equal(_x64(lambda p: fp32.narrow(fp32.widen(p)), a), a)
        assert (_x64(fp32.widen, a).view(np.uint64) == a.astype(np.float64).view(np.uint64)).all()


@settings(max_examples=40, deadline=None)
@given(_ARRAYS, _ARRAYS, st.sampled_from(["rn", "rz", "rm", "rp"]))
def test_narrow_rounds_products_in_every_mode(a, b, mode):
    """A product of two f32 (exact in f64) rounded to f32, subnormal results included."""
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    fin = np.isfinite(a) & np.isfinite(b)
    a, b = a[fin], b[fin]
    if not len(a):
        return
    exact = a.astype(np.float64) * b.astype(np.float64)
    # beyond the largest finite value: overflow rules, checked apart below
    ok = np.abs(exact) < float(np.finfo(np.float32).max)
    a, b, exact = a[ok], b[ok], exact[ok]
    got = _x64(lambda p, q: fp32.narrow(p.astype(jnp.float64) * q.astype(jnp.float64), mode),
               a.astype(np.float64), b.astype(np.float64))
    want = np.array([_round(Fraction(float(x)) * Fraction(float(y)), mode) for x, y in zip(a, b)], np.float32)
    with np.errstate(over="ignore"):
        want = np.where(exact == 0, exact.astype(np.float32), want)  # a Fraction has no signed zero
    _equal(got, want)


def test_narrow_overflow_follows_the_rounding_direction():
    big = np.array([1e39, -1e39], np.float64)
    fmax = np.finfo(np.float32).max
    assert list(_x64(lambda y: fp32.narrow(y, "rn"), big)) == [np.inf, -np.inf]
    assert list(_x64(lambda y: fp32.narrow(y, "rz"), big)) == [fmax, -fmax]
    assert list(_x64(lambda y: fp32.narrow(y, "rm"), big)) == [fmax, -np.inf]
    assert list(_x64(lambda y: fp32.narrow(y, "rp"), big)) == [np.inf, -fmax]
    tiny = np.array([2.0 ** -160, -(2.0 ** -160)], np.float64)
    step = np.float32(2.0 ** -149)
    _equal(_x64(lambda y: fp32.narrow(y, "rp"), tiny), [step, -0.0])
    _equal(_x64(lambda y: fp32.narrow(y, "rm"), tiny), [0.0, -step])


# one thread per input pair: %f1 = a[i], %f2 = b[i], %f3 = c[i]; result k to y[i * 16 + k]
_KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 py)
{
    .reg .pred %p<3>;
    .reg .b32 %r<6>;
    .reg .f32 %f<24>;
    .reg .f64 %fd<3>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u64 %rd4, [py];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd1, %rd5;
    add.s64 %rd7, %rd2, %rd5;
    add.s64 %rd8, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    ld.global.f32 %f2, [%rd7];
    ld.global.f32 %f3, [%rd8];
    mul.wide.u32 %rd9, %r1, 64;
    add.s64 %rd10, %rd4, %rd9;
    add.f32 %f4, %f1, %f2;
    sub.f32 %f5, %f1, %f2;
    mul.f32 %f6, %f1, %f2;
    fma.rn.f32 %f7, %f1, %f2, %f3;
    min.f32 %f8, %f1, %f2;
    max.f32 %f9, %f1, %f2;
    setp.lt.f32 %p1, %f1, %f2;
    selp.f32 %f10, 0f3F800000, 0f00000000, %p1;
    cvt.f64.f32 %fd1, %f1;
    mul.f64 %fd2, %fd1, 0d3FE0000000000000;
    cvt.rn.f32.f64 %f11, %fd2;
    testp.subnormal.f32 %p2, %f1;
    selp.f32 %f12, 0f3F800000, 0f00000000, %p2;
    mul.rz.f32 %f13, %f1, %f2;
    add.rp.f32 %f14, %f1, %f2;
    cvt.rpi.f32.f32 %f15, %f1;
    div.rn.f32 %f16, %f1, %f3;
    sqrt.rn.f32 %f17, %f1;
    mul.f32 %f18, %f1, 0f3F000000;
    st.global.v4.f32 [%rd10], {%f4, %f5, %f6, %f7};
    st.global.v4.f32 [%rd10+16], {%f8, %f9, %f10, %f11};
    st.global.v4.f32 [%rd10+32], {%f12, %f13, %f14, %f15};
    st.global.v4.f32 [%rd10+48], {%f16, %f17, %f18, %f18};
    ret;
}
"""


def test_ptx_f32_instructions_keep_subnormals():
    """A PTX kernel's f32 instructions without .ftz on subnormal operands and results, each against numpy or
    exact rational arithmetic."""
    g = np.random.default_rng(7)
    n = 128
    sub = lambda: (g.integers(1, 2 ** 23, n).astype(np.uint32) | (g.integers(0, 2, n).astype(np.uint32) << 31)  # noqa: E731
                   ).view(np.float32)
    a, b = sub(), sub()
    a[:8] = np.float32(2.0 ** -126) * np.float32(1.5)  # normal operands whose half is subnormal
    c = (g.uniform(0.5, 2, n) * g.choice([-1, 1], n)).astype(np.float32)
    c[::3] = sub()[::3]  # fma and division with a subnormal addend / divisor
    y = np.zeros(n * 16, np.float32)
    out = P.launch(_KERNEL, "k", 1, n, [a, b, c, y]).outputs["py"].reshape(n, 16).T
    with np.errstate(all="ignore"):
        _equal(out[0], a + b)
        _equal(out[1], a - b)
        _equal(out[2], a * b)
        _equal(out[3], [_round(Fraction(float(x)) * Fraction(float(v)) + Fraction(float(z)))
                        for x, v, z in zip(a, b, c)])
        _equal(out[4], np.fmin(a, b))
        _equal(out[5], np.fmax(a, b))
        _equal(out[6], (a < b).astype(np.float32))
        _equal(out[7], (a.astype(np.float64) * 0.5).astype(np.float32))
        _equal(out[8], ((np.abs(a) > 0) & (np.abs(a) < np.float32(2.0 ** -126))).astype(np.float32))
        _equal(out[9], [_round(Fraction(float(x)) * Fraction(float(v)), "rz") for x, v in zip(a, b)])
        _equal(out[10], [_round(Fraction(float(x)) + Fraction(float(v)), "rp") for x, v in zip(a, b)])
        _equal(out[11], np.ceil(a))
        _equal(out[12], a / c)
        _equal(out[13], np.sqrt(a))
        _equal(out[14], a * np.float32(0.5))
    assert np.count_nonzero(out[0]) > n // 2 and np.count_nonzero(out[8]) > n // 2  # not flushed


def _ftz(x):
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.copysign(np.float32(0), x), x).astype(np.float32)


def test_ptx_ftz_flushes_operands_and_results():
    """.ftz: subnormal f32 operands read as zeros of their sign and subnormal results become them, also for
    a mul and add that ptxas fuses (FFMA.FTZ)."""
    body = """
    add.ftz.f32 %f4, %f1, %f2;
    mul.ftz.f32 %f5, %f1, %f3;
    fma.rn.ftz.f32 %f6, %f1, %f3, %f2;
    min.ftz.f32 %f7, %f1, %f2;
    setp.lt.ftz.f32 %p1, %f1, %f2;
    selp.f32 %f8, 0f3F800000, 0f00000000, %p1;
    cvt.ftz.f64.f32 %fd1, %f1;
    cvt.rn.f32.f64 %f9, %fd1;
    mul.ftz.f32 %f10, %f1, %f3;
    add.ftz.f32 %f11, %f10, %f2;
    sub.f32 %f12, %f1, %f2;
    st.global.v4.f32 [%rd10], {%f4, %f5, %f6, %f7};
    st.global.v4.f32 [%rd10+16], {%f8, %f9, %f11, %f12};
    st.global.v4.f32 [%rd10+32], {%f12, %f12, %f12, %f12};
    st.global.v4.f32 [%rd10+48], {%f12, %f12, %f12, %f12};
    ret;
}
"""
    text = _KERNEL[:_KERNEL.index("    add.f32 %f4")] + body.lstrip("\n")
    g = np.random.default_rng(3)
    n = 128
    mant = g.integers(1, 2 ** 23, n).astype(np.uint32) | (g.integers(0, 2, n).astype(np.uint32) << 31)
    a, b = mant.view(np.float32), np.roll(mant, 1).view(np.float32)
    a[: n // 4] = np.float32(2.0 ** -120) * g.uniform(1, 2, n // 4).astype(np.float32)  # normal a: products small
    c = np.full(n, np.float32(2.0 ** -10), np.float32)
    y = np.zeros(n * 16, np.float32)
    out = P.launch(text, "k", 1, n, [a, b, c, y]).outputs["py"].reshape(n, 16).T
    fa, fb = _ftz(a), _ftz(b)
    with np.errstate(all="ignore"):
        _equal(out[0], _ftz(fa + fb))
        _equal(out[1], _ftz(fa * c))
        fused = np.array([_round(Fraction(float(x)) * Fraction(float(z)) + Fraction(float(v)))
                          for x, z, v in zip(fa, c, fb)], np.float32)
        zero = fa.astype(np.float64) * c + fb  # exact here; a Fraction has no signed zero
        _equal(out[2], _ftz(np.where(zero == 0, zero.astype(np.float32), fused)))
        _equal(out[3][fa != fb], _ftz(np.fmin(fa, fb))[fa != fb])
        _equal(out[4], (fa < fb).astype(np.float32))
        _equal(out[5], fa)
        _equal(out[6], out[2])  # the fused pair flushes as fma.ftz does
        _equal(out[7], a - b)  # without .ftz, subnormals kept
    assert np.count_nonzero(out[1][: n // 4]) == 0 and np.count_nonzero(out[7]) > n // 2
