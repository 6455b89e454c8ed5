"""IEEE binary32 arithmetic with subnormals, the same on every backend.

A GPU's f32 instructions without `.ftz` keep subnormal operands and results (below 2^-126 in magnitude, down
to 2^-149). XLA:CPU runs with the x86 flags that treat subnormal operands as zero and flush subnormal results
to zero (DAZ/FTZ, set by its runtime whatever the compiler flags), in f32 and f64 alike, conversions and
comparisons included. So f32 values here travel as f64 between exact conversions built from integer
operations, which those flags do not touch:

* `widen` reads an f32 as the f64 of the same value (a subnormal from its significand bits);
* the f64 operation is exact or rounds once at 53 bits, which a second rounding to f32 cannot spoil
  (53 >= 2 x 24 + 2 for +, -, x, /, sqrt);
* `narrow` rounds an f64 to f32, to nearest even or in a directed mode, subnormal results from the
  scaled value's integer part.

Every f64 value in between is normal (f32 operands are at least 2^-149, their products 2^-298), so the
flags never act. Arrays of any shape; f64 subnormals themselves are outside this module (they flush on
XLA:CPU). The f64 steps need `jax_enable_x64`, as the machine runs; without it they are f32 and XLA:CPU flushes
as before.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

MIN_NORMAL = 2.0 ** -126  # the smallest normal binary32
MIN_SUBNORMAL = 2.0 ** -149  # binary32's subnormal step
# bit patterns as uint32 (a Python int above 2^31 does not fit JAX's default int32)
SIGN = np.uint32(0x80000000)
ABS = np.uint32(0x7FFFFFFF)  # all but the sign
INF = np.uint32(0x7F800000)  # the exponent field
MANT = np.uint32(0x007FFFFF)  # the significand field
HIDDEN = np.uint32(0x00800000)  # the implicit leading bit of a normal number


def bits(x):
    """float32 [...] -> its uint32 bit patterns."""
    return lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.uint32)


def from_bits(u):
    """uint32 bit patterns [...] -> float32."""
    return lax.bitcast_convert_type(u, jnp.float32)


def flush(x):
    """float32 [...] with subnormals replaced by zeros of their sign (PTX's .ftz), from the bits."""
    u = bits(x)
    return from_bits(jnp.where((u & INF) == 0, u & SIGN, u))


def _wide():
    """float64, or float32 where x64 is off (then XLA:CPU flushes as it would anyway)."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def widen(x):
    """float32 [...] -> float64 [...] of the same values, subnormals included."""
    u = bits(x)
    mag = u & ABS
    tiny = mag.astype(_wide()) * MIN_SUBNORMAL  # a subnormal's value: significand x 2^-149, exact
    tiny = jnp.where((u & SIGN) != 0, -tiny, tiny)
    return jnp.where(mag < HIDDEN, tiny, jnp.asarray(x, jnp.float32).astype(_wide()))


def _step(r, up):
    """The float32 neighbour of r toward +inf (up) or -inf, from its bits (subnormals, zeros and the
    largest finite value included; r finite)."""
    u = bits(r)
    neg = (u & SIGN) != 0
    zero = (u & ABS) == 0
    away = up != neg  # moving away from zero grows the magnitude by one unit in the last place
    stepped = jnp.where(away, u + 1, u - 1)
    at_zero = jnp.where(up, np.uint32(1), SIGN | np.uint32(1))
    return from_bits(jnp.where(zero, at_zero, stepped))


def narrow(y, mode: str | None = "rn"):
    """float64 [...] -> float32 [...] rounded in `mode` (rn: to nearest even; rz, rm, rp: toward zero, -inf,
    +inf), subnormal results included."""
    y = jnp.asarray(y).astype(_wide())
    a = jnp.abs(y)
    small = a < MIN_NORMAL
    scaled = a * 2.0 ** 149  # exact: a power of two on a normal f64; below 2^23 where small
    if mode in (None, "rn"):
        m = jnp.round(scaled)  # half to even
    elif mode == "rz":
        m = jnp.floor(scaled)
    else:  # rm / rp: away from zero when the direction points away from zero
        neg = y < 0
        m = jnp.where(neg == (mode == "rm"), jnp.ceil(scaled), jnp.floor(scaled))
    sign = jnp.where(jnp.signbit(y), SIGN, np.uint32(0))
    sub = from_bits(sign | jnp.where(small, m, 0.0).astype(jnp.uint32))
    r = y.astype(jnp.float32)
    if mode not in (None, "rn"):
        back = widen(r)
        fin = jnp.isfinite(y)  # an infinite r from a finite y steps back to the largest finite value
        if mode == "rz":
            r = jnp.where(fin & (jnp.abs(back) > a), _step(r, y < 0), r)
        elif mode == "rm":
            r = jnp.where(fin & (back > y), _step(r, False), r)
        else:
            r = jnp.where(fin & (back < y), _step(r, True), r)
    return jnp.where(small, sub, r)


def add(a, b):
    return narrow(widen(a) + widen(b))


def sub(a, b):
    return narrow(widen(a) - widen(b))


def mul(a, b):
    return narrow(widen(a) * widen(b))  # the f64 product of two f32 values is exact


def fmin(a, b):
    """IEEE minNum on float32 values: the smaller, the number where one is NaN, -0 below +0."""
    return _pick(a, b, jnp.fmin)


def fmax(a, b):
    return _pick(a, b, jnp.fmax)


def _pick(a, b, f):
    a, b = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    return narrow(f(widen(a), widen(b)))  # exact: the result is one of the operands
