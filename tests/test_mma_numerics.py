"""Tensor Core arithmetic: ieee mode against numpy, the hardware model against hand results and an exact
rational re-statement of the model."""
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsimt.units import mma as M
from jaxsimt.units.mma import numerics as N

F16, BF16 = jnp.float16, jnp.bfloat16
# the only parameter sets besides the fitted one (each set is one more compilation of the model)
OTHER = M.H200.replace(extra_bits=1, zero_sign="ieee")
AMPERE_LIKE = M.H200.replace(group_f16=8, extra_bits=0, f32_rounding="rne")


def f32_bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


# --- ieee mode ---------------------------------------------------------------------------------------------
def numpy_ieee(a, b, c):
    """Documented order: d = (((c + a0 b0) + a1 b1) + ...), products and sums f32 round-to-nearest."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    d = np.array(c, np.float32)
    for j in range(a.shape[-1]):
        d = (d + (a[..., :, j, None] * b[..., None, j, :]).astype(np.float32)).astype(np.float32)
    return d


@pytest.mark.parametrize("shape,dtype", [("m16n8k16", F16), ("m16n8k16", BF16), ("m16n8k8", F16),
                                         ("m16n16k16", F16)])
def test_ieee_matches_numpy(shape, dtype):
    s = M.SHAPES[shape]
    rng = np.random.default_rng(7)
    a = jnp.asarray(rng.standard_normal((4, s.m, s.k)), dtype)
    b = jnp.asarray(rng.standard_normal((4, s.k, s.n)), dtype)
    c = jnp.asarray(rng.standard_normal((4, s.m, s.n)), jnp.float32)
    d = M.mma(a, b, c, shape, mode="ieee")
    assert np.array_equal(f32_bits(d), f32_bits(numpy_ieee(a, b, c)))


def test_ieee_tf32_and_f16_accumulator():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = M.mma(a, b, c, "m16n8k8", mode="ieee", input_type="tf32")
    trunc = lambda x: (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    assert np.array_equal(f32_bits(d), f32_bits(numpy_ieee(trunc(a), trunc(b), c)))
    a16 = rng.standard_normal((16, 16)).astype(np.float16)
    b16 = rng.standard_normal((16, 8)).astype(np.float16)
    c16 = rng.standard_normal((16, 8)).astype(np.float16)
    d16 = M.mma(a16, b16, c16, mode="ieee")
    assert d16.dtype == jnp.float16
    assert np.array_equal(np.asarray(d16), numpy_ieee(a16, b16, c16).astype(np.float16))


def test_grad_through_ieee_and_hardware():
    rng = np.random.default_rng(9)
    a = jnp.asarray(rng.standard_normal((16, 16)), F16)
    b = jnp.asarray(rng.standard_normal((16, 8)), F16)
    c = jnp.asarray(rng.standard_normal((16, 8)), jnp.float32)

    @jax.jit  # one compilation for both modes
    def grads(a, b, c):
        return [jax.grad(lambda a, b, c: M.mma(a, b, c, mode=mode).sum(), argnums=(0, 1, 2))(a, b, c)
                for mode in ("ieee", "hardware")]

    for ga, gb, gc in grads(a, b, c):
        assert all(np.isfinite(np.asarray(g, np.float32)).all() for g in (ga, gb, gc))
        np.testing.assert_allclose(np.asarray(ga, np.float32),
                                   np.broadcast_to(np.asarray(b, np.float32).sum(1), (16, 16)), rtol=1e-2)
        assert np.array_equal(gc, np.ones((16, 8), np.float32))


def test_vmap_and_jit_agree_with_batch():
    # the eager call runs the numpy-fed kernel; the jitted vmaps trace the same model (one compilation)
    rng = np.random.default_rng(10)
    a = jnp.asarray(rng.standard_normal((3, 16, 16)), F16)
    b = jnp.asarray(rng.standard_normal((3, 16, 8)), F16)
    c = jnp.asarray(rng.standard_normal((3, 16, 8)), jnp.float32)
    batched = M.mma(a, b, c)

    @jax.jit
    def traced(a, b, c):
        vmapped = jax.vmap(lambda a, b, c: M.mma(a, b, c))(a, b, c)
        frag = jax.vmap(lambda a, b, c: M.mma_sync(a, b, c))(
            M.fragment_from_tile(a, "a", "m16n8k16"), M.fragment_from_tile(b, "b", "m16n8k16"),
            M.fragment_from_tile(c, "c", "m16n8k16"))
        return vmapped, M.tile_from_fragment(frag, "d", "m16n8k16")

    for x in traced(a, b, c):
        assert np.array_equal(f32_bits(x), f32_bits(batched))


# --- hardware mode: hand cases -----------------------------------------------------------------------------
def one_product_tile(c_val, a_val, b_val, k=16, dtype=F16):
    a = np.zeros((16, k), np.float32)
    b = np.zeros((k, 8), np.float32)
    a[0, 0], b[0, 0] = a_val, b_val
    c = np.zeros((16, 8), np.float32)
    c[0, 0] = c_val
    return jnp.asarray(a, dtype), jnp.asarray(b, dtype), jnp.asarray(c)


def test_small_integers_exact():
    rng = np.random.default_rng(11)
    for dtype in (F16, BF16):
        a = jnp.asarray(rng.integers(-8, 9, (2, 16, 16)), dtype)
        b = jnp.asarray(rng.integers(-8, 9, (2, 16, 8)), dtype)
        c = jnp.asarray(rng.integers(-99, 99, (2, 16, 8)), jnp.float32)
        exact = np.einsum("bmk,bkn->bmn", np.asarray(a, np.float64), np.asarray(b, np.float64)) + np.asarray(c)
        assert np.array_equal(np.asarray(M.mma(a, b, c)), exact)


def test_cancellation_truncates_where_rn_rounds_up():
    # 1 - 2^-25: round-to-nearest-even gives 1.0 (a tie), truncation after exact alignment gives 1 - 2^-24
    a, b, c = one_product_tile(1.0, 2.0 ** -12, -(2.0 ** -13))
    hw = np.asarray(M.mma(a, b, c))[0, 0]
    ie = np.asarray(M.mma(a, b, c, mode="ieee"))[0, 0]
    assert ie == np.float32(1.0)
    assert hw == np.float32(1 - 2.0 ** -24)
    assert np.asarray(M.mma(a, b, c, params=AMPERE_LIKE))[0, 0] == 1.0


def test_large_c_truncates_small_product():
    # c = 2^24, p = 1.5: exact 2^24 + 1.5; RN -> 2^24 + 2, RZ -> 2^24
    a, b, c = one_product_tile(2.0 ** 24, 1.5, 1.0)
    assert np.asarray(M.mma(a, b, c))[0, 0] == 2.0 ** 24
    assert np.asarray(M.mma(a, b, c, mode="ieee"))[0, 0] == 2.0 ** 24 + 2


def test_extra_bits_and_grouping():
    # 1 + 16 * 2^-25: each product is 2^-25, below an f32 ulp of 1 but inside 3 extra bits
    a = jnp.full((16, 16), 2.0 ** -12, F16)
    b = jnp.full((16, 8), 2.0 ** -13, F16)
    c = jnp.ones((16, 8), jnp.float32)
    assert np.asarray(M.mma(a, b, c))[0, 0] == np.float32(1 + 2.0 ** -21)
    assert np.asarray(M.mma(a, b, c, mode="ieee"))[0, 0] == 1.0
    # one extra bit: 2^-25 falls below the window (2^-24) and is cut
    assert np.asarray(M.mma(a, b, c, params=OTHER))[0, 0] == 1.0
    # groups of 8 without extra bits (rounding to nearest): each block cuts its products again
    assert np.asarray(M.mma(a, b, c, params=AMPERE_LIKE))[0, 0] == 1.0


def test_specials_and_signed_zeros():
    a, b, c = one_product_tile(-0.0, -0.0, 0.0)
    a = a.at[:].set(-0.0)
    b = b.at[:].set(0.0)
    c = c.at[:].set(-0.0)
    d = np.asarray(M.mma(a, b, c))
    assert not np.any(np.signbit(d)) and np.all(d == 0)  # every addend is -0: the H200 still writes +0
    d = np.asarray(M.mma(a, b, c, params=OTHER))
    assert np.all(np.signbit(d)) and np.all(d == 0)
    d = np.asarray(M.mma(a, b, jnp.zeros_like(c)))
    assert not np.any(np.signbit(d))
    a, b, c = one_product_tile(1.0, np.inf, 0.0)
    d = np.asarray(M.mma(a, b, c))
    assert np.isnan(d[0, 0]) and f32_bits(d)[0, 0] == N.NAN_F32  # inf * 0 in the same dot product
    a, b, c = one_product_tile(1.0, np.inf, 2.0)
    assert np.asarray(M.mma(a, b, c))[0, 0] == np.inf


# --- hardware mode: exact rational re-statement of the model ----------------------------------------------
def _nominal_exp(v: Fraction, emin: int) -> int:
    return max(math.floor(math.log2(abs(v))) if v else emin, emin)


def _round(v: Fraction, p: int, emin: int, mode: str) -> Fraction:
    if v == 0:
        return v
    e = max(_exp2_floor(abs(v)), emin)
    q = Fraction(2) ** (e - p + 1)
    n = abs(v) / q
    m = math.floor(n)
    if mode == "rne" and (n - m > Fraction(1, 2) or (n - m == Fraction(1, 2) and m % 2)):
        m += 1
    return math.copysign(1, v) * m * q


def _exp2_floor(x: Fraction) -> int:
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


def reference_element(a_row, b_col, c, itype, params, acc="f32"):
    emin_in = {"f16": -14, "bf16": -126, "tf32": -126}[itype]
    p_out, emin_out = (24, -126) if acc == "f32" else (11, -14)
    g = params.group(itype)
    accv = Fraction(float(c))
    for j in range(0, len(a_row), g):
        terms = [(Fraction(float(x)) * Fraction(float(y)),
                  _nominal_exp(Fraction(float(x)), emin_in) + _nominal_exp(Fraction(float(y)), emin_in))
                 for x, y in zip(a_row[j:j + g], b_col[j:j + g]) if x != 0 and y != 0]
        if accv != 0:
            terms.append((accv, _nominal_exp(accv, emin_out)))
        if not terms:
            accv = Fraction(0)
            continue
        unit = Fraction(2) ** (max(e for _, e in terms) - 23 - params.extra_bits)
        total = sum(math.trunc(v / unit) * unit for v, _ in terms)
        rounding = params.f32_rounding if acc == "f32" else params.f16_rounding
        accv = _round(total, p_out, emin_out, rounding)
    return float(accv)


@pytest.mark.parametrize("itype,shape,params", [
    ("f16", "m16n8k16", M.H200), ("bf16", "m16n8k16", M.H200), ("tf32", "m16n8k8", M.H200),
    ("f16", "m16n8k16", AMPERE_LIKE),
])
def test_hardware_matches_rational_model(itype, shape, params):
    s = M.SHAPES[shape]
    rng = np.random.default_rng(12)
    dtype = {"f16": F16, "bf16": BF16, "tf32": jnp.float32}[itype]
    scale = 2.0 ** rng.integers(-12, 12, (2, s.m, s.k))
    a = np.asarray(jnp.asarray(rng.standard_normal((2, s.m, s.k)) * scale, dtype))
    b = np.asarray(jnp.asarray(rng.standard_normal((2, s.k, s.n)), dtype))
    c = (rng.standard_normal((2, s.m, s.n)) * 2.0 ** rng.integers(-20, 20, (2, s.m, s.n))).astype(np.float32)
    if itype == "tf32":
        a = (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
        b = (b.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    d = np.asarray(M.mma(a, b, c, shape, input_type=itype, params=params))
    for t in range(2):
        for i in range(0, s.m, 3):
            for j in range(s.n):
                want = reference_element(a[t, i].astype(np.float64), b[t, :, j].astype(np.float64),
                                         c[t, i, j], itype, params)
                assert d[t, i, j] == np.float32(want), (t, i, j)
