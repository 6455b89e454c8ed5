"""The arithmetic/logic unit: semantics of the non-memory instructions over lane arrays.

Every function takes operand arrays (any common shape, e.g. [warps, lanes], or scalars that broadcast)
already in the instruction's type and returns the result array. Floating point is explicit: `mul` then
`add` round twice and `fma` rounds once, whatever XLA's fusion does (see `guard`), and `fma` is computed
exactly in f64 with round-to-odd so the final rounding to f32/f16/bf16 is correct. f32 keeps subnormals on
every backend (`fp32`: XLA:CPU would flush them).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt import types as T
from jaxsimt.units import fp32
from jaxsimt.types import DType

_BITS_UINT = {16: jnp.uint16, 32: jnp.uint32, 64: jnp.uint64}


def guard(x, zero):
    """Return x unchanged, routed through an integer xor with a run-time zero.

    XLA contracts a float multiply feeding an add into one fused multiply-add under jit (one rounding
    instead of two). Passing the product through an integer op whose operand XLA cannot see is zero
    keeps the product rounded, as PTX's separate mul.rn and add.rn are.
    """
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    ut = _BITS_UINT[jnp.finfo(x.dtype).bits]
    return lax.bitcast_convert_type(lax.bitcast_convert_type(x, ut) ^ zero.astype(ut), x.dtype)


def _round_to_odd_f64(p, c):
    """p + c (f64) rounded to odd: exact sum when representable, else the neighbour with an odd last bit.

    Round-to-odd at 53 bits followed by round-to-nearest at <= 25 bits equals one correct rounding.
    """
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)  # TwoSum: p + c == s + err exactly
    bits = lax.bitcast_convert_type(s, jnp.int64)
    even = (bits & 1) == 0
    # moving the magnitude up or down by one ulp toward the exact value
    toward = jnp.where((err > 0) == (s > 0), 1, -1).astype(jnp.int64)
    bits = jnp.where((err != 0) & even & jnp.isfinite(s) & (s != 0), bits + toward, bits)
    return lax.bitcast_convert_type(bits, jnp.float64)


def _fma_f64(a, b, c, zero):
    """a * b + c in f64 with one rounding, from f64 operations alone (XLA:CPU does not fuse a*b+c
    reliably): the exact product p + e (Dekker's split), p + c = s + t exactly (TwoSum), then
    s + RO(t + e), where rounding t + e to odd makes the last rounding correct. The run-time zero keeps
    XLA from simplifying a*b - p. Products or sums beyond ~2^996 in magnitude, and subnormals
    (flushed on XLA:CPU), are outside its exact range."""
    split = 134217729.0  # 2^27 + 1: halves of 26 significant bits
    def halves(x):
        g = guard(x * split, zero)
        hi = g - (g - x)
        return hi, x - hi
    p = guard(a * b, zero)
    ah, al = halves(a)
    bh, bl = halves(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    r = s + _round_to_odd_f64(t, e)
    # infinities, NaNs and zero products: the plain result (the error terms are meaningless there)
    plain = a * b + c
    return jnp.where(jnp.isfinite(r) & (p != 0), r, plain)


def fma(a, b, c, dtype: DType, zero=None):
    if not dtype.is_float:
        return a * b + c
    if dtype == T.f64:
        if zero is None:
            return a * b + c
        return _fma_f64(a, b, c, zero)
    a64, b64, c64 = (to_f64(x) for x in (a, b, c))
    p = a64 * b64  # exact: 2 x 24 significant bits fit in 53
    return from_f64(_round_to_odd_f64(p, c64), dtype.np_dtype)


def to_f64(x):
    """Float values as f64, exactly (f32 subnormals included)."""
    x = jnp.asarray(x)
    return fp32.widen(x) if x.dtype == jnp.float32 else x.astype(jnp.float64)


def from_f64(y, dtype):
    """f64 values rounded to nearest in float `dtype` (f32 subnormal results included)."""
    return fp32.narrow(y) if np.dtype(dtype) == np.float32 else y.astype(dtype)


def _shift_amount(b, bits):
    return jnp.minimum(b.astype(jnp.uint32), jnp.uint32(bits))


def shl(a, b, dtype: DType):
    n = _shift_amount(b, dtype.bits)
    r = lax.shift_left(a, jnp.minimum(n, dtype.bits - 1).astype(a.dtype))
    return jnp.where(n >= dtype.bits, jnp.zeros_like(a), r)


def shr(a, b, dtype: DType):
    n = _shift_amount(b, dtype.bits)
    amt = jnp.minimum(n, dtype.bits - 1).astype(a.dtype)
    if dtype.is_signed:
        return lax.shift_right_arithmetic(a, amt)  # >= bits: sign fill, as PTX shr.s
    r = lax.shift_right_logical(a, amt)
    return jnp.where(n >= dtype.bits, jnp.zeros_like(a), r)


def fdiv(a, b, zero):
    """Correctly rounded float a / b (broadcast shapes). XLA:CPU divides by a broadcast value (an
    immediate, a kernel parameter: any divisor uniform over the lanes) by multiplying with its
    reciprocal, which rounds twice (also a divisor broadcast along one axis only), and it sinks
    elementwise ops through broadcasts; xor-ing the divisor's bits with (sum of every axis's iota) * zero
    (zero at run time) makes it an array XLA cannot see is a broadcast along any axis."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if _narrow_float(b.dtype):
        # XLA:GPU divides f32 approximately (up to 2 ulp); the f64 quotient rounded once to f32 (or f16,
        # bf16) is the correctly rounded one (53 >= 2 x 24 + 2 bits), on every backend
        return from_f64(fdiv(to_f64(a), to_f64(b), zero), b.dtype)
    shape = jnp.broadcast_shapes(a.shape, b.shape)
    if not shape:
        return a / b
    b = jnp.broadcast_to(b, shape)
    ut = _BITS_UINT[jnp.finfo(b.dtype).bits]
    hide = sum(lax.broadcasted_iota(ut, shape, d) for d in range(len(shape))) * zero.astype(ut)
    return a / lax.bitcast_convert_type(lax.bitcast_convert_type(b, ut) ^ hide, b.dtype)


def _narrow_float(dt) -> bool:
    return jnp.issubdtype(dt, jnp.floating) and jnp.finfo(dt).bits < 64


def fsqrt(a):
    """Correctly rounded square root: through f64 for narrower floats (XLA:GPU's f32 sqrt is off by up to
    1 ulp; the f64 root rounded once is exact, as for division)."""
    a = jnp.asarray(a)
    return from_f64(jnp.sqrt(to_f64(a)), a.dtype) if _narrow_float(a.dtype) else jnp.sqrt(a)


def frcp(a, zero):
    """Correctly rounded reciprocal 1 / a."""
    a = jnp.asarray(a)
    return fdiv(jnp.ones_like(a), a, zero)


def div(a, b, dtype: DType, zero=None):
    if dtype.is_float:
        return fdiv(a, b, jnp.uint32(0) if zero is None else zero)
    # C / PTX: truncate toward zero; division by zero gives all ones (unsigned) / -1, as the hardware
    safe = jnp.where(b == 0, jnp.ones_like(b), b)
    q = lax.div(a, safe)
    return jnp.where(b == 0, jnp.full_like(a, -1 if dtype.is_signed else np.iinfo(a.dtype).max), q)


def rem(a, b, dtype: DType):
    if dtype.is_float:
        return lax.rem(a, b)
    safe = jnp.where(b == 0, jnp.ones_like(b), b)
    return jnp.where(b == 0, a, lax.rem(a, safe))


def fmin(a, b, dtype: DType):
    if dtype == T.f32:
        return fp32.fmin(a, b)
    return jnp.fmin(a, b) if dtype.is_float else jnp.minimum(a, b)


def fmax(a, b, dtype: DType):
    if dtype == T.f32:
        return fp32.fmax(a, b)
    return jnp.fmax(a, b) if dtype.is_float else jnp.maximum(a, b)


_CMP = {  # name -> (comparison, true when unordered)
    "eq": ("eq", False), "ne": ("ne", False), "lt": ("lt", False), "le": ("le", False),
    "gt": ("gt", False), "ge": ("ge", False), "equ": ("eq", True), "neu": ("ne", True),
    "ltu": ("lt", True), "leu": ("le", True), "gtu": ("gt", True), "geu": ("ge", True),
    "lo": ("lt", False), "ls": ("le", False), "hi": ("gt", False), "hs": ("ge", False),
}
_CMP_FN = {"eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
           "gt": jnp.greater, "ge": jnp.greater_equal}


def setp(a, b, cmp: str, dtype: DType):
    """PTX setp: eq..ge are ordered for floats (false when either is NaN), the *u forms unordered (true
    when either is NaN), num/nan test for NaN; lo/ls/hi/hs are the unsigned spellings."""
    if not dtype.is_float:
        if cmp in ("num", "nan"):
            return jnp.full(jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b)), cmp == "num")
        return _CMP_FN[_CMP[cmp][0]](a, b)
    nan = jnp.isnan(a) | jnp.isnan(b)
    if cmp == "num":
        return ~nan
    if cmp == "nan":
        return nan
    base, unordered = _CMP[cmp]
    if dtype == T.f32:
        a, b = fp32.widen(a), fp32.widen(b)  # by value: subnormals are not zero
    r = _CMP_FN[base](a, b)
    return (r | nan) if unordered else (r & ~nan)


def cvt(a, src: DType, dst: DType):
    """Conversion as C casts do it: float->int truncates toward zero and saturates (NaN -> 0), as
    PTX cvt.rzi; int->float and float->float round to nearest even; int->int wraps."""
    if dst == T.pred:
        return a != 0
    if src == T.pred:
        return a.astype(dst.np_dtype)
    if src.is_float and dst.is_int:
        info = np.iinfo(dst.np_dtype)
        t = jnp.trunc(to_f64(a))
        t = jnp.clip(t, float(info.min), float(info.max))
        t = jnp.where(jnp.isnan(t), 0.0, t)
        return t.astype(dst.np_dtype)
    if src.is_float and dst == T.f64:
        return to_f64(a)
    if src == T.f64 and dst == T.f32:
        return from_f64(a, dst.np_dtype)
    return a.astype(dst.np_dtype)


def unary_float(op: str, a, dtype: DType):
    f = {"sqrt": fsqrt, "rsqrt": lambda x: 1 / jnp.sqrt(x), "rcp": lambda x: frcp(x, jnp.uint32(0)),
         "ex2": jnp.exp2, "lg2": jnp.log2, "sin": jnp.sin, "cos": jnp.cos}[op]
    return f(a)


def execute(op: str, ins, args, dtype: DType, zero):
    """Result of ALU instruction `op` on operand arrays `args` (all of type `dtype`)."""
    if op == "mov":
        return args[0]
    if dtype == T.f32 and op in ("add", "sub", "mul", "mad"):
        if op == "mad":  # the product rounded, then the sum
            return fp32.add(fp32.mul(args[0], args[1]), args[2])
        return {"add": fp32.add, "sub": fp32.sub, "mul": fp32.mul}[op](args[0], args[1])
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":
        return guard(args[0] * args[1], zero)
    if op == "mad":
        return args[0] * args[1] + args[2]
    if op == "fma":
        return fma(*args, dtype, zero)
    if op == "div":
        return div(args[0], args[1], dtype, zero)
    if op == "rem":
        return rem(args[0], args[1], dtype)
    if op == "neg":
        return -args[0]
    if op == "abs":
        return jnp.abs(args[0])
    if op == "min":
        return fmin(args[0], args[1], dtype)
    if op == "max":
        return fmax(args[0], args[1], dtype)
    if op in ("and", "or", "xor"):
        f = {"and": jnp.bitwise_and, "or": jnp.bitwise_or, "xor": jnp.bitwise_xor}[op]
        return f(args[0], args[1])
    if op == "not":
        return ~args[0]
    if op == "shl":
        return shl(args[0], args[1], dtype)
    if op == "shr":
        return shr(args[0], args[1], dtype)
    if op == "selp":
        return jnp.where(args[2], args[0], args[1])
    if op in ("sqrt", "rsqrt", "rcp", "ex2", "lg2", "sin", "cos"):
        return unary_float(op, args[0], dtype)
    raise NotImplementedError(op)


ALU_OPS = frozenset("mov add sub mul mad fma div rem neg abs min max and or xor not shl shr selp "
                    "sqrt rsqrt rcp ex2 lg2 sin cos".split())
