"""The special function unit (MUFU) of the H200, bit for bit: `ex2`, `lg2`, `rsqrt`, `rcp`, `sqrt`, `sin`, `cos`,
`tanh` and the divisions ptxas builds on `rcp`.

PTX's `.approx` forms of these run on the multi-function unit, which is not correctly rounded: `ex2.approx.f32`
is a few ulp off exp2, and what it returns depends on the hardware's tables. The model is data, measured on the
H200 over every float32 input (`jaxsimt/data/h200/mufu/README.md`):

* `rcp`, `rsqrt` and `sqrt` depend on the input's mantissa (and, for the roots, the exponent's parity) alone:
  one table of results over [1, 2) (`rcp`) or [1, 4) (the roots), scaled by the exponent;
* `ex2` cuts its input to a sign, an integer and 23 fraction bits (truncated toward zero): one table over the
  fraction for positive inputs, one for negative ones, scaled by 2^±integer;
* `sin` and `cos` read t = x / 2pi (PTX's FMUL.RZ before the unit) as a fraction of a turn, |t| cut to 25
  bits: one table each over [0, 1) turns, odd (sin) or even (cos) in t;
* `tanh` is x below 2^-8 and 1 from 8 on; between, a table per binade over its top 17 to 21 mantissa bits;
* `lg2` adds the exponent to a table of the mantissa's logarithm over [1, 2) and truncates the sum toward zero;
  below 1 the sum is negative and the unit returns its one's complement, which the table over [0.5, 1) holds.

Every table was checked against the H200 on all 2^32 inputs; denormal inputs count as zero and denormal results
become zero (the unit flushes both). The `.ftz`-less PTX forms are what ptxas wraps around the unit (scaling
denormal inputs and results, seen in the SASS): `approx` and `div`.

Tables are uint32 bit patterns passed to the machine as run-time data (`Tables`), never compiled in.
"""
from __future__ import annotations

import functools
import json
import zlib
import os
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt.units import fp32

DATA_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
DATA = os.path.join(DATA_ROOT, "h200", "mufu")  # the H200's tables (`Arch.sfu_tables`)

FLT_MIN = np.float32(fp32.MIN_NORMAL)
# bit patterns as uint32 (the binary32 fields: fp32.SIGN, ABS, INF, MANT, HIDDEN)
_NEG_INF = np.uint32(0xFF800000)
NAN = np.uint32(0x7FFFFFFF)  # the canonical NaN the unit returns


class Tables(NamedTuple):
    """The unit's result tables, [N] uint32 float32 bit patterns each (a [1] placeholder where a program
    uses none of the functions that read it)."""

    ex2_pos: jnp.ndarray  # [2^23] 2^(j / 2^23)
    ex2_neg: jnp.ndarray  # [2^23] 2^(-j / 2^23)
    lg2_pos: jnp.ndarray  # [2^23] lg2 of 1 + j / 2^23
    lg2_neg: jnp.ndarray  # [2^23] lg2 of (1 + j / 2^23) / 2
    rsqrt: jnp.ndarray  # [2^24] rsqrt of 1 + j / 2^23
    sqrt: jnp.ndarray  # [2^24] sqrt of 1 + j / 2^23
    sin: jnp.ndarray  # [2^25] sin of j / 2^25 turns
    cos: jnp.ndarray  # [2^25] cos of j / 2^25 turns
    tanh: jnp.ndarray  # [sum of 2^TANH_BITS] tanh of each binade of TANH_BINADES at its top mantissa bits
    rcp: jnp.ndarray  # [2^23] rcp of 1 + j / 2^23


# which tables each function reads
READS = {"ex2": ("ex2_pos", "ex2_neg"), "lg2": ("lg2_pos", "lg2_neg"), "rsqrt": ("rsqrt",), "rcp": ("rcp",),
         "sqrt": ("sqrt",), "sin": ("sin",), "cos": ("cos",), "tanh": ("tanh",)}


@functools.lru_cache(maxsize=None)
def table(name: str, folder: str = DATA) -> np.ndarray:
    """One table as [N] uint32 (decoded once per process): `name`.zlib holds the first pattern as int32 and the
    differences of consecutive patterns, in the integer type `index.json` names."""
    with open(os.path.join(folder, "index.json")) as f:
        meta = json.load(f)[name]
    with open(os.path.join(folder, name + ".zlib"), "rb") as f:
        raw = zlib.decompress(f.read())
    steps = np.frombuffer(raw[4:], np.dtype(meta["dtype"]))
    if steps.size + 1 != meta["n"]:
        raise ValueError(f"MUFU table {name}: {steps.size + 1} entries, expected {meta['n']}")
    # 64-byte aligned, so that JAX's CPU backend takes the array without copying it
    buf = np.empty(4 * meta["n"] + 64, np.uint8)
    out = buf[(-buf.ctypes.data) % 64:][:4 * meta["n"]].view(np.uint32)
    out[0] = np.frombuffer(raw[:4], np.uint32)[0]
    out[1:] = steps  # sums modulo 2^32: negative steps wrap, as the patterns' differences did
    np.cumsum(out, out=out)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=None)
def _on_device(name: str, folder: str) -> jnp.ndarray:
    return jnp.asarray(table(name, folder))


def for_arch(arch, functions):
    """The `Tables` a program using `functions` reads on `arch` (an `Arch`), or None where it uses none or the
    architecture's unit was not measured (`Arch.sfu_tables` empty: the .approx functions are then XLA's)."""
    functions = tuple(functions)
    if not functions or not arch.sfu_tables:
        return None
    return tables_for(functions, os.path.join(DATA_ROOT, arch.sfu_tables))


@functools.lru_cache(maxsize=None)
def _placeholder() -> jnp.ndarray:
    return jnp.zeros((1,), jnp.uint32)


def tables_for(functions, folder: str = DATA) -> Tables:
    """The `Tables` for a program using `functions` (names of READS); the others are [1] placeholders."""
    need = {t for f in functions for t in READS[f]}
    return Tables(*(_on_device(n, folder) if n in need else _placeholder() for n in Tables._fields))


# ---------------------------------------------------------------------------------------------
# The unit itself (inputs and results as float32 bit patterns, uint32 arrays of any shape)
# ---------------------------------------------------------------------------------------------


def _fields(u):
    return u & fp32.SIGN, (u >> 23) & np.uint32(0xFF), u & fp32.MANT


def _scaled(t, shift, sign=0):
    """Table entry `t` times 2^shift ([...] int32 shift): flushed to zero below the normal range, infinite above."""
    ne = ((t >> 23) & np.uint32(0xFF)).astype(jnp.int32) + shift
    body = (jnp.clip(ne, 0, 255).astype(jnp.uint32) << 23) | (t & fp32.MANT)
    return sign | jnp.where(ne <= 0, jnp.uint32(0), jnp.where(ne >= 255, fp32.INF, body))


def rcp(u, tab: Tables):
    """MUFU.RCP: 1/x from the mantissa's table; +-0 and denormals -> +-inf, +-inf -> +-0."""
    s, e, m = _fields(u)
    r = _scaled(tab.rcp[m], 127 - e.astype(jnp.int32), s)
    return jnp.where(e == 0, s | fp32.INF, jnp.where(e == 255, jnp.where(m != 0, NAN, s), r))


def _root(u, table, sign: int):
    """The entry of a root's table over [1, 4) (index: the exponent's parity, the mantissa) scaled by
    2^(sign * floor(exponent / 2))."""
    _, e, m = _fields(u)
    k = e.astype(jnp.int32) - 127
    odd = k & 1
    return _scaled(table[(odd.astype(jnp.uint32) << 23) | m], sign * ((k - odd) >> 1))


def rsqrt(u, tab: Tables):
    """MUFU.RSQ: 1/sqrt(x); +-0 and denormals -> +-inf, negative -> NaN, +inf -> 0."""
    s, e, m = _fields(u)
    return jnp.where(e == 0, s | fp32.INF, jnp.where(s != 0, NAN,
                     jnp.where(e == 255, jnp.where(m != 0, NAN, jnp.uint32(0)), _root(u, tab.rsqrt, -1))))


def sqrt(u, tab: Tables):
    """MUFU.SQRT: sqrt(x); +-0 and denormals -> +-0, negative -> NaN, +inf -> +inf."""
    s, e, m = _fields(u)
    return jnp.where(e == 0, s, jnp.where(s != 0, NAN,
                     jnp.where(e == 255, jnp.where(m != 0, NAN, fp32.INF), _root(u, tab.sqrt, 1))))


# 1 / (2 pi) as float32: PTX's sin/cos.approx multiply by it (FMUL.RZ) before the unit, which works in turns
_TURN = 0x3E22F983


def _turns(u):
    """The fraction of a turn the unit reads for sin/cos of float32 bits `u`: t = x * (1 / 2pi) rounded toward zero,
    |t| cut to 25 fraction bits -> ([...] uint32 index into the 2^25-entry tables, [...] uint32 sign bit of t).
    Denormal t reads as zero. All in 32-bit integers (the 48-bit product as 12-bit halves)."""
    s, e, m = _fields(u)
    mx = m | fp32.HIDDEN
    mc = np.uint32((_TURN & 0x7FFFFF) | 0x800000)
    xh, xl = mx >> 12, mx & np.uint32(0xFFF)
    ch, cl = mc >> np.uint32(12), mc & np.uint32(0xFFF)
    mid = xh * cl + xl * ch  # < 2^25
    low = ((mid & np.uint32(0xFFF)) << 12) + xl * cl  # < 2^25
    hi = xh * ch + (mid >> 12) + (low >> 24)  # the product's bits 24..47
    lo = low & np.uint32(0xFFFFFF)
    top = hi >= fp32.HIDDEN  # the product reached 2^47
    mt = jnp.where(top, hi, (hi << 1) | (lo >> 23))  # t's significand, truncated
    et = e.astype(jnp.int32) + ((_TURN >> 23) & 0xFF) - 127 + top.astype(jnp.int32)
    sh = et - 125  # t * 2^25 = mt * 2^sh
    q = jnp.where(sh >= 0, mt << jnp.clip(sh, 0, 31).astype(jnp.uint32),
                  mt >> jnp.clip(-sh, 0, 31).astype(jnp.uint32)) & np.uint32((1 << 25) - 1)
    return jnp.where((e == 0) | (et <= 0), jnp.uint32(0), q), s


def sin(u, tab: Tables):
    """PTX sin.approx.f32 (.ftz or not: ptxas emits the same code): FMUL.RZ by 1/2pi, then MUFU.SIN, odd in t."""
    q, s = _turns(u)
    return jnp.where(_fields(u)[1] == 255, NAN, tab.sin[q] ^ s)


def cos(u, tab: Tables):
    """PTX cos.approx.f32: FMUL.RZ by 1/2pi, then MUFU.COS, even in t."""
    q, _ = _turns(u)
    return jnp.where(_fields(u)[1] == 255, NAN, tab.cos[q])


# tanh: |x| < 2^-8 returns x, |x| >= 8 returns 1, and between, binade by binade (biased exponents 119..129),
# the result depends on the top TANH_BITS mantissa bits only (measured on the H200; odd in x)
TANH_BINADES = range(119, 130)
TANH_BITS = (17, 17, 17, 18, 18, 19, 19, 19, 20, 21, 20)
_TANH_AT = np.concatenate([[0], np.cumsum([1 << b for b in TANH_BITS])]).astype(np.uint32)  # each binade's start


def tanh(u, tab: Tables):
    """MUFU.TANH (PTX tanh.approx.f32): x itself below 2^-8 (denormals included), +-1 from 8 on, a table entry
    per binade between; NaN -> NaN."""
    s, e, m = _fields(u)
    k = jnp.clip(e.astype(jnp.int32) - TANH_BINADES[0], 0, len(TANH_BITS) - 1)
    drop = jnp.asarray(np.array([23 - b for b in TANH_BITS], np.uint32))[k]
    r = tab.tanh[jnp.asarray(_TANH_AT[:-1])[k] + (m >> drop)] | s
    one = s | np.uint32(0x3F800000)
    return jnp.where(e < TANH_BINADES[0], u, jnp.where(e <= TANH_BINADES[-1], r,
                     jnp.where((e == 255) & (m != 0), NAN, one)))


def ex2(u, tab: Tables):
    """MUFU.EX2: 2^x with |x| cut to 23 fraction bits toward zero; denormal inputs count as zero."""
    s, e, m = _fields(u)
    a = lax.bitcast_convert_type(jnp.where(e == 0, jnp.uint32(0), u & fp32.ABS), jnp.float32)
    a = jnp.minimum(a, jnp.float32(255.0))  # beyond, every result is 0 or inf; keeps the fixed point in int32
    q = (a * jnp.float32(2.0 ** 23)).astype(jnp.int32)  # exact scaling, truncated toward zero
    n, j = q >> 23, (q & 0x7FFFFF).astype(jnp.uint32)
    r = jnp.where(s != 0, _scaled(tab.ex2_neg[j], -n), _scaled(tab.ex2_pos[j], n))
    return jnp.where((e == 255) & (m != 0), NAN, r)


def _int_plus_fraction_rz(K, t):
    """K + t truncated toward zero to float32 bits: K [...] int32 in 1..255, t [...] uint32 bits of a float in
    [0, 1). The sum stays below the power of two above K, so its exponent is K's; all in 32-bit integers."""
    er = 31 - lax.clz(K)  # floor(log2 K)
    te = ((t >> 23) & np.uint32(0xFF)).astype(jnp.int32)
    M = jnp.where(te == 0, jnp.uint32(0), (t & fp32.MANT) | fp32.HIDDEN)  # t's significand (0: t is zero)
    sh = 127 - te + er  # t's significand to K's fixed point, 23 - er fraction bits
    frac = jnp.where(sh >= 24, jnp.uint32(0), M >> jnp.clip(sh, 0, 23).astype(jnp.uint32))
    S = (K.astype(jnp.uint32) << (23 - er).astype(jnp.uint32)) + frac
    return ((er + 127).astype(jnp.uint32) << 23) | (S & fp32.MANT)


def lg2(u, tab: Tables):
    """MUFU.LG2: exponent + lg2(mantissa) truncated toward zero, from x >= 1's table and, below 1 (a negative
    sum, returned as its one's complement), from [0.5, 1)'s; 0 and denormals -> -inf, negative -> NaN."""
    s, e, m = _fields(u)
    k = e.astype(jnp.int32) - 127
    tp = tab.lg2_pos[m]
    tn = tab.lg2_neg[m]  # negative: lg2 of [0.5, 1)
    up = _int_plus_fraction_rz(jnp.clip(k, 1, 255), tp)  # k >= 1
    down = fp32.SIGN | _int_plus_fraction_rz(jnp.clip(-k - 1, 1, 255), tn & fp32.ABS)  # k <= -2: |k| - 1 + |tn|
    r = jnp.where(k == 0, tp, jnp.where(k == -1, tn, jnp.where(k > 0, up, down)))
    special = jnp.where((e == 255) & (m == 0) & (s == 0), fp32.INF, NAN)  # +inf; else NaN
    return jnp.where(e == 0, _NEG_INF, jnp.where((s != 0) | (e == 255), special, r))


UNIT = {"ex2": ex2, "lg2": lg2, "rsqrt": rsqrt, "rcp": rcp, "sqrt": sqrt, "sin": sin, "cos": cos, "tanh": tanh}
# forms ptxas builds identically with and without .ftz (the multiply before the unit keeps denormals either way;
# tanh has no .ftz form)
SAME_WITHOUT_FTZ = frozenset({"sin", "cos", "tanh"})


# ---------------------------------------------------------------------------------------------
# The PTX forms: ptxas's code around the unit (float32 values in and out)
# ---------------------------------------------------------------------------------------------


def _up24(x):
    """x * 2^24 for denormal float32 x, from its bits: exact where a backend treats denormal operands as zero
    (XLA:CPU)."""
    m = (fp32.bits(x) & fp32.MANT).astype(jnp.float32)
    return jnp.copysign(m * jnp.float32(2.0 ** -125), x)


# what undoes ptxas's scaling of a denormal input by 2^24 on the unit's result
_UNSCALE = {"lg2": lambda r: r + jnp.float32(-24.0), "sqrt": lambda r: r * jnp.float32(2.0 ** -12),
            "rsqrt": lambda r: r * jnp.float32(4096.0)}


def approx(fn: str, x, tab: Tables, ftz: bool):
    """PTX `<fn>.approx[.ftz].f32` of float32 values `x` (fn: a name of UNIT): the bare unit with .ftz (and for
    SAME_WITHOUT_FTZ); without it, ptxas's scaling of denormal inputs (by 2^24, undone on the result), for rcp
    also of huge ones, and for ex2 below -126 the square of 2^(x/2)."""
    unit = UNIT[fn]
    if ftz or fn in SAME_WITHOUT_FTZ:
        return fp32.from_bits(unit(fp32.bits(x), tab))
    x = x.astype(jnp.float32)
    if fn == "ex2":
        small = x < jnp.float32(-126.0)
        r = fp32.from_bits(unit(fp32.bits(jnp.where(small, x * jnp.float32(0.5), x)), tab))
        return jnp.where(small, fp32.mul(r, r), r)  # a subnormal square kept on every backend
    if fn == "rcp":
        big, tiny = jnp.abs(x) > jnp.float32(2.0 ** 126), jnp.abs(x) < FLT_MIN
        s = jnp.where(big, jnp.float32(0.25), jnp.where(tiny, jnp.float32(2.0 ** 24), jnp.float32(1.0)))
        return fp32.mul(s, fp32.from_bits(unit(fp32.bits(jnp.where(tiny, _up24(x), x * s)), tab)))
    tiny = jnp.abs(x) < FLT_MIN
    r = fp32.from_bits(unit(fp32.bits(jnp.where(tiny, _up24(x), x)), tab))
    return jnp.where(tiny, _UNSCALE[fn](r), r)


def div(a, b, tab: Tables, full: bool, ftz: bool):
    """PTX `div.approx[.ftz].f32` / `div.full[.ftz].f32` of float32 `a / b`: a times the unit's 1/b, with
    ptxas's scaling of both operands by 1/4 where |b| > 2^126 (.full) and by 2^24 where b is denormal (without
    .ftz); .ftz flushes denormal operands and products."""
    a, b = a.astype(jnp.float32), b.astype(jnp.float32)
    mul = (lambda p, q: fp32.flush(fp32.flush(p) * fp32.flush(q))) if ftz else fp32.mul  # noqa: E731
    if ftz:
        b = fp32.flush(b)
    if full:
        big = jnp.abs(b) > jnp.float32(2.0 ** 126)
        a, b = jnp.where(big, mul(a, jnp.float32(0.25)), a), jnp.where(big, mul(b, jnp.float32(0.25)), b)
    if not ftz:
        tiny = jnp.abs(b) < FLT_MIN
        a = jnp.where(tiny, jnp.where(jnp.abs(a) < FLT_MIN, _up24(a), a * jnp.float32(2.0 ** 24)), a)
        b = jnp.where(tiny, _up24(b), b)
    q = mul(fp32.from_bits(rcp(fp32.bits(b), tab)), a)
    return jnp.where(jnp.isnan(q), fp32.from_bits(NAN), q)  # the GPU's FMUL returns the canonical NaN, not an operand's
