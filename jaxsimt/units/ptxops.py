"""Instruction semantics beyond the core ALU: the `ptx.<name>` ops of the instruction table (`jaxsimt.units.isa`)
that only the PTX lowering emits, and the full PTX forms of `setp`, `cvt`, `shfl`, `vote` and the special
registers, which both front ends emit (the DSL in their simple forms).

Every op here reads its operands through the executing block's helper (`ex.read`,
`ex.write`, `ex.active`), so it runs on whole warps like the built-in ops. Rounding is exact where PTX
names a rounding mode: f32 results with .rz/.rm/.rp are computed exactly (or rounded to odd) in f64 and then
rounded to f32 in the requested direction; see docs/ptx.md for the documented deviations (approximate
functions, f64 directed rounding, .ftz).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt.units import alu, fp32, lsu
from jaxsimt import types as T

_U = {8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32, 64: jnp.uint64}
_S = {8: jnp.int8, 16: jnp.int16, 32: jnp.int32, 64: jnp.int64}


def _t(ins, key="type"):
    return T.BY_NAME[ins.attr(key)]


def _ubits(x, bits):
    """Raw bits of x as the unsigned integer of `bits`."""
    if x.dtype == jnp.bool_:
        return x.astype(_U[bits])
    if jnp.dtype(x.dtype).itemsize * 8 == bits:
        return lax.bitcast_convert_type(x, _U[bits])
    return lax.bitcast_convert_type(x, _U[jnp.dtype(x.dtype).itemsize * 8]).astype(_U[bits])


def _from_ubits(u, dt: T.DType):
    return lax.bitcast_convert_type(u.astype(_U[dt.bits]), dt.np_dtype)


# ------------------------------------------------------------------------------------------ control


def guard(ex, ins, pc):
    """A predicated instruction (`@%p op ...`): run the inner instruction with the lanes whose guard holds.
    The instruction stays in its block and is counted once for the warp, as the hardware issues it."""
    p = ex.read(ins.src[0], T.pred)
    if ins.attr("negate"):
        p = ~p
    saved = ex.active
    inner = ins.attr("inner")
    # registers that live only inside this block are written without a lane mask: keep their old
    # values in the lanes whose guard is off (a predicated-off lane never writes its destination)
    olds = {r.index: ex.read(r) for r in inner.dst if not ex.in_state(r)}
    ex.active = saved & p
    try:
        ex.run(inner, pc)
    finally:
        on = ex.active
        ex.active = saved
    for r in inner.dst:
        if r.index in olds and r.index in ex.local:
            ex.local[r.index] = jnp.where(on, ex.local[r.index], jnp.broadcast_to(olds[r.index], on.shape))


def nop(ex, ins, pc):
    """membar / fence / nanosleep / cp.async.commit_group / wait_group: no effect here
    (every memory operation of the emulator is complete when it is issued)."""


# ------------------------------------------------------------------------------------------ integer


def _mulhi(a, b, dt: T.DType):
    bits = dt.bits
    if bits < 64:
        wide = (_S if dt.is_signed else _U)[2 * bits]
        p = a.astype(wide) * b.astype(wide)
        return (p >> bits).astype(dt.np_dtype)
    ua, ub = _ubits(a, 64), _ubits(b, 64)
    m = jnp.uint64(0xFFFFFFFF)
    a0, a1, b0, b1 = ua & m, ua >> 32, ub & m, ub >> 32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> 32) + (p01 & m) + (p10 & m)
    hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32)
    if dt.is_signed:
        hi = hi - jnp.where(a < 0, ub, jnp.uint64(0)) - jnp.where(b < 0, ua, jnp.uint64(0))
    return _from_ubits(hi, dt)


def _wide(x, dt: T.DType):
    return x.astype((_S if dt.is_signed else _U)[2 * dt.bits])


def mul_hi(ex, ins, pc):
    dt = _t(ins)
    a, b = (ex.read(s, dt) for s in ins.src[:2])
    r = _mulhi(a, b, dt)
    if len(ins.src) > 2:  # mad.hi
        r = r + ex.read(ins.src[2], dt)
    ex.write(ins.dst[0], r)


def mul_wide(ex, ins, pc):
    dt = _t(ins)
    a, b = (_wide(ex.read(s, dt), dt) for s in ins.src[:2])
    r = a * b
    if len(ins.src) > 2:  # mad.wide
        wdt = T.BY_NAME[("s" if dt.is_signed else "u") + str(2 * dt.bits)]
        r = r + ex.read(ins.src[2], wdt)
    ex.write(ins.dst[0], r)


def sat_int(ex, ins, pc):
    """add/sub/mad .sat.s32: the exact result clamped to the s32 range."""
    a, b = (ex.read(s, T.s32).astype(jnp.int64) for s in ins.src[:2])
    fn = ins.attr("fn")
    r = {"add": lambda: a + b, "sub": lambda: a - b,
         "mad": lambda: a * b + ex.read(ins.src[2], T.s32).astype(jnp.int64)}[fn]()
    ex.write(ins.dst[0], jnp.clip(r, -2**31, 2**31 - 1).astype(jnp.int32))


def mul24(ex, ins, pc):
    dt = _t(ins)
    a, b = (ex.read(s, dt).astype(jnp.int64) for s in ins.src[:2])
    if dt.is_signed:
        a, b = ((x << 40) >> 40 for x in (a, b))
    else:
        a, b = a & 0xFFFFFF, b & 0xFFFFFF
    p = a * b
    r = (p >> 16) if ins.attr("hi") else p
    r = (r & 0xFFFFFFFF).astype(jnp.uint32)
    if len(ins.src) > 2:
        r = r + ex.read(ins.src[2], T.u32)
    ex.write(ins.dst[0], _from_ubits(r, dt))


def sad(ex, ins, pc):
    dt = _t(ins)
    a, b, c = (ex.read(s, dt) for s in ins.src)
    ex.write(ins.dst[0], c + jnp.where(a > b, a - b, b - a).astype(dt.np_dtype))


def dp4a(ex, ins, pc):
    ta, tb = _t(ins, "atype"), _t(ins, "btype")
    a, b = ex.read(ins.src[0], T.u32), ex.read(ins.src[1], T.u32)
    c = ex.read(ins.src[2], T.s32 if (ta.is_signed or tb.is_signed) else T.u32).astype(jnp.int64)
    n = ins.attr("n")  # 4 (dp4a) or 2 (dp2a)
    hi = ins.attr("hi")
    acc = c
    for i in range(n):
        if n == 4:
            xa = (a >> (8 * i)) & 0xFF
            xa = xa.astype(jnp.int64)
            xa = jnp.where(xa >= 128, xa - 256, xa) if ta.is_signed else xa
            xb = ((b >> (8 * i)) & 0xFF).astype(jnp.int64)
            xb = jnp.where(xb >= 128, xb - 256, xb) if tb.is_signed else xb
        else:
            xa = ((a >> (16 * i)) & 0xFFFF).astype(jnp.int64)
            xa = jnp.where(xa >= 32768, xa - 65536, xa) if ta.is_signed else xa
            k = i + (2 if hi else 0)
            xb = ((b >> (8 * k)) & 0xFF).astype(jnp.int64)
            xb = jnp.where(xb >= 128, xb - 256, xb) if tb.is_signed else xb
        acc = acc + xa * xb
    ex.write(ins.dst[0], (acc & 0xFFFFFFFF).astype(jnp.uint32))


def popc(ex, ins, pc):
    ex.write(ins.dst[0], lax.population_count(ex.read(ins.src[0], _t(ins))).astype(jnp.uint32))


def clz(ex, ins, pc):
    ex.write(ins.dst[0], lax.clz(ex.read(ins.src[0], _t(ins))).astype(jnp.uint32))


def _brev(x, bits):
    x = _ubits(x, bits)
    masks = [(1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
             (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)]
    ut = _U[bits]
    for sh, m in masks:
        if sh >= bits:
            break
        m = ut(m & ((1 << bits) - 1))
        x = ((x >> sh) & m) | ((x & m) << sh)
    return x


def brev(ex, ins, pc):
    dt = _t(ins)
    ex.write(ins.dst[0], _brev(ex.read(ins.src[0], dt), dt.bits))


def _mask(n, bits):
    """Low n bits set (n may be >= bits)."""
    ut = _U[bits]
    full = ut(np.iinfo(np.dtype(ut)).max)
    n = n.astype(ut)
    return jnp.where(n >= bits, full, (ut(1) << jnp.minimum(n, bits - 1)) - ut(1))


def bfe(ex, ins, pc):
    dt = _t(ins)
    bits = dt.bits
    ut = _U[bits]
    u = _ubits(ex.read(ins.src[0], dt), bits)
    pos = (ex.read(ins.src[1], T.u32) & 0xFF).astype(ut)
    ln = (ex.read(ins.src[2], T.u32) & 0xFF).astype(ut)
    shifted = jnp.where(pos >= bits, ut(0), u >> jnp.minimum(pos, bits - 1))
    valid = jnp.where(pos >= bits, ut(0), jnp.minimum(ln, ut(bits) - jnp.minimum(pos, bits)))
    m = _mask(valid, bits)
    field = shifted & m
    if dt.is_signed:
        sb_pos = jnp.minimum(pos + ln - ut(1), ut(bits - 1))
        sbit = ((u >> sb_pos) & ut(1)) == 1
        sbit = sbit & (ln > 0)
        field = jnp.where(sbit, field | ~m, field)
    ex.write(ins.dst[0], _from_ubits(field, dt))


def bfi(ex, ins, pc):
    dt = _t(ins)
    bits = dt.bits
    ut = _U[bits]
    a, b = _ubits(ex.read(ins.src[0], dt), bits), _ubits(ex.read(ins.src[1], dt), bits)
    pos = (ex.read(ins.src[2], T.u32) & 0xFF).astype(ut)
    ln = (ex.read(ins.src[3], T.u32) & 0xFF).astype(ut)
    p = jnp.minimum(pos, bits - 1)
    m = _mask(ln, bits) << p
    r = (b & ~m) | ((a << p) & m)
    ex.write(ins.dst[0], _from_ubits(jnp.where(pos >= bits, b, r), dt))


def bfind(ex, ins, pc):
    dt = _t(ins)
    bits = dt.bits
    x = ex.read(ins.src[0], dt)
    u = _ubits(x, bits)
    if dt.is_signed:
        u = jnp.where(x < 0, ~u, u)
    lz = lax.clz(u).astype(jnp.uint32)
    pos = jnp.uint32(bits - 1) - lz
    if ins.attr("shiftamt"):
        pos = lz
    ex.write(ins.dst[0], jnp.where(u == 0, jnp.uint32(0xFFFFFFFF), pos))


def prmt(ex, ins, pc):
    a, b, c = (ex.read(s, T.u32) for s in ins.src)
    tmp = a.astype(jnp.uint64) | (b.astype(jnp.uint64) << 32)
    r = jnp.zeros(jnp.broadcast_shapes(a.shape, b.shape, c.shape), jnp.uint32)
    for i in range(4):
        sel = (c >> (4 * i)) & 0xF
        byte = ((tmp >> (8 * (sel & 7)).astype(jnp.uint64)) & 0xFF).astype(jnp.uint32)
        byte = jnp.where((sel & 8) != 0, jnp.where((byte & 0x80) != 0, jnp.uint32(0xFF), jnp.uint32(0)), byte)
        r = r | (byte << (8 * i))
    ex.write(ins.dst[0], r)


def lop3(ex, ins, pc):
    a, b, c = (ex.read(s, T.u32) for s in ins.src[:3])
    lut = ins.attr("lut")
    r = jnp.zeros(jnp.broadcast_shapes(a.shape, b.shape, c.shape), jnp.uint32)
    for k in range(8):
        if (lut >> k) & 1:
            r = r | ((a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c))
    ex.write(ins.dst[0], r)


def shf(ex, ins, pc):
    a, b = ex.read(ins.src[0], T.u32).astype(jnp.uint64), ex.read(ins.src[1], T.u32).astype(jnp.uint64)
    c = ex.read(ins.src[2], T.u32)
    n = (c & 31) if ins.attr("mode") == "wrap" else jnp.minimum(c, 32)
    n = n.astype(jnp.uint64)
    v = a | (b << 32)
    if ins.attr("dir") == "l":
        r = ((v << n) >> 32) & 0xFFFFFFFF
    else:
        r = (v >> n) & 0xFFFFFFFF
    ex.write(ins.dst[0], r.astype(jnp.uint32))


def cnot(ex, ins, pc):
    dt = _t(ins)
    x = ex.read(ins.src[0], dt)
    ex.write(ins.dst[0], (x == 0).astype(dt.np_dtype))


# ------------------------------------------------------------------------------------------ floating point


def round_f64_to(x64, dst: T.DType, mode: str):
    """Round f64 values to f32/f16/bf16 with rounding `mode` (rn, rz, rm, rp)."""
    if dst == T.f32:
        return fp32.narrow(x64, mode)
    r = x64.astype(dst.np_dtype)
    if mode in (None, "rn") or dst == T.f64:
        return r
    back = r.astype(jnp.float64)
    fin = ~jnp.isnan(x64)
    # 16-bit floats: step by one in the bit pattern (magnitude), sign-aware
    u = lax.bitcast_convert_type(r, jnp.uint16)
    neg = (u & 0x8000) != 0
    if mode == "rz":
        bad = jnp.abs(back) > jnp.abs(x64)
        u2 = u - 1  # one ulp smaller in magnitude
    elif mode == "rm":
        bad = back > x64
        u2 = jnp.where(neg, u + 1, u - 1)
    else:
        bad = back < x64
        u2 = jnp.where(neg, u - 1, u + 1)
    zero = (u & 0x7FFF) == 0
    if mode == "rm":  # below +0 / -0 is the smallest negative subnormal
        u2 = jnp.where(zero, jnp.uint16(0x8001), u2)
    elif mode == "rp":
        u2 = jnp.where(zero, jnp.uint16(0x0001), u2)
    u = jnp.where(fin & bad, u2.astype(jnp.uint16), u)
    return lax.bitcast_convert_type(u, dst.np_dtype)


def _exact64(fn, args, zero):
    """f32/f16 op computed in f64 exactly or rounded to odd (so a second rounding is correct); the f64
    quotient of two f32/f16 values is never within an f64 rounding of a value of theirs or a midpoint
    unless it is one, so it rounds correctly again."""
    a = [alu.to_f64(x) for x in args]
    if fn == "add":
        return alu._round_to_odd_f64(a[0], a[1])
    if fn == "sub":
        return alu._round_to_odd_f64(a[0], -a[1])
    if fn == "mul":
        return a[0] * a[1]
    if fn in ("fma", "mad"):
        return alu._round_to_odd_f64(a[0] * a[1], a[2])
    if fn == "div":
        return alu.fdiv(a[0], a[1], zero)
    if fn == "sqrt":
        return jnp.sqrt(a[0])
    if fn == "rcp":
        return 1.0 / a[0]
    raise NotImplementedError(fn)


def _relu(r):
    """.relu: negative results become 0, NaN stays."""
    return jnp.where(jnp.isnan(r) | (alu.to_f64(r) > 0), r, jnp.zeros_like(r))  # by value: subnormals stay


def _sat(r):
    """.sat: clamped to [0, 1], NaN becomes 0."""
    return jnp.where(jnp.isnan(r), jnp.zeros_like(r), alu.from_f64(jnp.clip(alu.to_f64(r), 0, 1), r.dtype))


def farith(ex, ins, pc):
    """Float add/sub/mul/fma/div/sqrt/rcp with a rounding mode and/or .sat (clamp to [0, 1], NaN -> 0)."""
    dt = _t(ins)
    fn, rnd = ins.attr("fn"), ins.attr("rnd") or "rn"
    args = [ex.read(s, dt) for s in ins.src]
    if dt == T.f64:
        r = {"add": lambda: args[0] + args[1], "sub": lambda: args[0] - args[1],
             "mul": lambda: alu.guard(args[0] * args[1], ex.zero), "fma": lambda: alu.fma(*args, dt, ex.zero),
             "mad": lambda: alu.fma(*args, dt, ex.zero), "div": lambda: alu.fdiv(args[0], args[1], ex.zero),
             "sqrt": lambda: alu.fsqrt(args[0]), "rcp": lambda: alu.frcp(args[0], ex.zero)}[fn]()
    else:
        r = round_f64_to(_exact64(fn, args, ex.zero), dt, rnd)
    if ins.attr("sat"):
        r = _sat(r)
    if ins.attr("relu"):
        r = _relu(r)
    ex.write(ins.dst[0], r)


def minmax(ex, ins, pc):
    """min/max with .NaN (NaN if either is NaN) and/or .relu."""
    dt = _t(ins)
    a, b = (ex.read(s, dt) for s in ins.src)
    r = (alu.fmin if ins.attr("fn") == "min" else alu.fmax)(a, b, dt)
    if ins.attr("nan"):
        r = jnp.where(jnp.isnan(a) | jnp.isnan(b), jnp.asarray(np.nan, dt.np_dtype), r)
    if ins.attr("relu"):
        r = _relu(r)
    ex.write(ins.dst[0], r)


def copysign(ex, ins, pc):
    dt = _t(ins)
    a, b = (ex.read(s, dt) for s in ins.src)
    ex.write(ins.dst[0], jnp.copysign(b, a))


def testp(ex, ins, pc):
    dt = _t(ins)
    fi = jnp.finfo(dt.np_dtype)
    x = alu.to_f64(ex.read(ins.src[0], dt))  # by value: f32 subnormals are not zero
    ax = jnp.abs(x)
    r = {"finite": lambda: jnp.isfinite(x), "infinite": lambda: jnp.isinf(x), "number": lambda: ~jnp.isnan(x),
         "notanumber": lambda: jnp.isnan(x), "normal": lambda: jnp.isfinite(x) & (ax >= fi.tiny),
         "subnormal": lambda: (ax > 0) & (ax < fi.tiny)}[ins.attr("test")]()
    ex.write(ins.dst[0], r)


def funary(ex, ins, pc):
    """Approximate functions without a core op (tanh), and ex2 on 16-bit floats."""
    dt = _t(ins)
    x = ex.read(ins.src[0], dt)
    f = {"tanh": jnp.tanh, "ex2": jnp.exp2}[ins.attr("fn")]
    ex.write(ins.dst[0], f(x.astype(jnp.float32)).astype(dt.np_dtype))


def cvt(ex, ins, pc):
    """cvt with PTX rounding modes: float->int .rni/.rzi/.rmi/.rpi (default rzi), float->float .rn/.rz/.rm/.rp
    and integral rounding .rni/.rzi/.rmi/.rpi, int->float with .rn/.rz/.rm/.rp (directed modes exact via f64
    for 32-bit integers; 64-bit integers round once to f64 first), .sat (integer destinations clamp, float ones clamp to
    [0, 1]), .relu."""
    src, dst = _t(ins, "type"), _t(ins, "to")
    rnd, sat = ins.attr("rnd"), ins.attr("sat")
    x = ex.read(ins.src[0], src)
    if T.pred in (src, dst):  # the DSL's bool <-> number conversions (C's: nonzero is true, true is 1)
        ex.write(ins.dst[0], alu.cvt(x, src, dst))
        return
    if src.is_float and dst.is_int:
        x64 = alu.to_f64(x)
        f = {"rni": jnp.round, "rzi": jnp.trunc, "rmi": jnp.floor, "rpi": jnp.ceil, None: jnp.trunc}[rnd]
        r = f(x64)  # jnp.round is half-to-even, as .rni
        info = np.iinfo(dst.np_dtype)
        r = jnp.where(jnp.isnan(r), 0.0, r)
        lo, hi = float(info.min), float(info.max)
        big = r >= hi
        r = jnp.clip(r, lo, hi)
        out = r.astype(jnp.int64 if dst.is_signed or dst.bits < 64 else jnp.uint64)
        out = out.astype(dst.np_dtype)
        out = jnp.where(big, jnp.asarray(info.max, dst.np_dtype), out)
        ex.write(ins.dst[0], out)
        return
    if dst.is_float:
        if src.is_float and rnd in ("rni", "rzi", "rmi", "rpi"):
            f = {"rni": jnp.round, "rzi": jnp.trunc, "rmi": jnp.floor, "rpi": jnp.ceil}[rnd]
            r = f(alu.to_f64(x))
            r = round_f64_to(r, dst, "rn")
        elif src.is_int and rnd in (None, "rn"):
            r = alu.cvt(x, src, dst)  # one correctly rounded conversion, 64-bit integers included
        elif src.is_int and src.bits == 64 and dst != T.f64:
            r = round_f64_to(alu.cvt(x, src, T.f64), dst, rnd)
        else:
            x64 = alu.to_f64(x) if src.is_float else alu.cvt(x, src, T.f64)
            r = round_f64_to(x64, dst, rnd)
        if sat:
            r = _sat(r)
        if ins.attr("relu"):
            r = _relu(r)
        ex.write(ins.dst[0], r)
        return
    # integer -> integer
    if sat:
        di, si = np.iinfo(dst.np_dtype), np.iinfo(src.np_dtype)
        lo, hi = max(di.min, si.min), min(di.max, si.max)
        x = jnp.clip(x, np.asarray(lo).astype(src.np_dtype), np.asarray(hi).astype(src.np_dtype))
    ex.write(ins.dst[0], alu.cvt(x, src, dst))


# ------------------------------------------------------------------------------------------ packed halves


def pack(ex, ins, pc):
    """mov.bN d, {a, b, ...}: concatenate the parts' bits, first part in the low bits."""
    dt = _t(ins)
    part_bits = dt.bits // len(ins.src)
    pt = T.UINT_OF_BITS[part_bits]
    r = None
    for k, s in enumerate(ins.src):
        v = ex.read(s, pt).astype(_U[dt.bits]) << (k * part_bits)
        r = v if r is None else r | v
    ex.write(ins.dst[0], _from_ubits(r, dt))


def unpack(ex, ins, pc):
    """mov.bN {a, b, ...}, s: split the bits of s, first destination from the low bits (None: a sink)."""
    dt = _t(ins)
    u = _ubits(ex.read(ins.src[0], dt), dt.bits)
    n = ins.attr("n")
    part_bits = dt.bits // n
    for k, d in enumerate(ins.dst):
        idx = ins.attr("slots")[k]
        v = (u >> (idx * part_bits)).astype(_U[part_bits])
        ex.write(d, v)


def x2(ex, ins, pc):
    """Packed f16x2 / bf16x2 arithmetic: the op on each 16-bit half (fma/add/sub/mul/min/max/neg/abs)."""
    ht = T.BY_NAME[ins.attr("half")]
    fn, rnd = ins.attr("fn"), ins.attr("rnd") or "rn"
    srcs = [_ubits(ex.read(s, T.u32), 32) for s in ins.src]
    out = jnp.uint32(0)
    for k in range(2):
        parts = [lax.bitcast_convert_type(((s >> (16 * k)) & 0xFFFF).astype(jnp.uint16), ht.np_dtype) for s in srcs]
        if fn in ("neg", "abs"):
            r = -parts[0] if fn == "neg" else jnp.abs(parts[0])
        elif fn in ("min", "max"):
            f = jnp.fmin if fn == "min" else jnp.fmax
            r = f(parts[0], parts[1])
            if ins.attr("nan"):
                r = jnp.where(jnp.isnan(parts[0]) | jnp.isnan(parts[1]), jnp.asarray(np.nan, ht.np_dtype), r)
        else:
            r = round_f64_to(_exact64(fn, parts, ex.zero), ht, rnd)
        if ins.attr("relu"):
            r = _relu(r)
        if ins.attr("sat"):
            r = _sat(r)
        out = out | (lax.bitcast_convert_type(r, jnp.uint16).astype(jnp.uint32) << (16 * k))
    ex.write(ins.dst[0], out)


# ------------------------------------------------------------------------------------------ comparisons


def setp(ex, ins, pc):
    """setp (and set) with an optional .and/.or/.xor combining predicate (`!%p` allowed) and the
    complement destination `%p|%q`. `set` writes 0xFFFFFFFF / 1.0f instead of a predicate."""
    dt = _t(ins)
    a, b = ex.read(ins.src[0], dt), ex.read(ins.src[1], dt)
    r = alu.setp(a, b, ins.attr("cmp"), dt)
    q = ~r
    comb = ins.attr("combine")
    if comb:
        c = ex.read(ins.src[2], T.pred)
        if ins.attr("cneg"):
            c = ~c
        f = {"and": jnp.logical_and, "or": jnp.logical_or, "xor": jnp.logical_xor}[comb]
        r, q = f(r, c), f(q, c)
    out = ins.attr("set")
    if out:
        ot = T.BY_NAME[out]
        one = np.asarray(1.0 if ot.is_float else np.iinfo(ot.np_dtype).max if not ot.is_signed else -1, ot.np_dtype)
        r = jnp.where(r, one, jnp.zeros((), ot.np_dtype))
    ex.write(ins.dst[0], r)
    if len(ins.dst) > 1:
        ex.write(ins.dst[1], q)


# ------------------------------------------------------------------------------------------ warp level


def sreg(ex, ins, pc):
    """Special registers the machine does not provide: lane masks, %nwarpid, shared-memory sizes;
    clocks and timers read as the emulator's step counter (documented deviation)."""
    m = ex.m
    name = ins.attr("name")
    lane = m.lane_u32[None, :]
    shape = ex.active.shape
    if name.startswith("lanemask_"):
        kind = name[len("lanemask_"):]
        one = jnp.uint32(1)
        eq = one << lane
        lt = eq - one
        v = {"eq": eq, "lt": lt, "le": lt | eq, "gt": ~(lt | eq), "ge": ~lt}[kind]
    elif name == "nwarpid":
        v = jnp.uint32(m.geo.warps_per_block)
    elif name in ("dynamic_smem_size", "total_smem_size", "aggr_smem_size"):
        v = jnp.uint32(ins.attr("value"))
    elif name == "warp_size":
        v = jnp.uint32(m.geo.warp_size)
    elif name in ("smid", "gridid", "nsmid"):
        v = jnp.uint32(0)
    else:
        v = jnp.uint32(0)
    ex.write(ins.dst[0], jnp.broadcast_to(v, shape))


def activemask(ex, ins, pc):
    ex.write(ins.dst[0], jnp.broadcast_to(ex.m.pack(ex.active)[:, None], ex.active.shape))


def vote(ex, ins, pc):
    """vote.sync with a register or immediate membermask: all / any / uni / ballot."""
    m = ex.m
    p = ex.read(ins.src[0], T.pred)
    if ins.attr("negate"):
        p = ~p
    mm = jnp.broadcast_to(ex.read(ins.src[1], T.u32), ex.active.shape)
    member = ((mm >> m.lane_u32[None, :]) & 1).astype(bool)
    part = ex.active & member
    mode = ins.attr("mode")
    if mode == "ballot":
        r = m.pack(p & part)[:, None]
    elif mode == "all":
        r = jnp.all(p | ~part, axis=1, keepdims=True)
    elif mode == "any":
        r = jnp.any(p & part, axis=1, keepdims=True)
    else:  # uni
        r = jnp.all(p | ~part, axis=1, keepdims=True) | ~jnp.any(p & part, axis=1, keepdims=True)
    ex.write(ins.dst[0], jnp.broadcast_to(r, ex.active.shape))


def _participants(ex, mask_src):
    """[warps, lanes] bool: the active lanes named in the membermask operand."""
    mm = jnp.broadcast_to(ex.read(mask_src, T.u32), ex.active.shape)
    return ex.active & ((mm >> ex.m.lane_u32[None, :]) & 1).astype(bool)


_REDUX = {"add": (jnp.add, 0), "and": (jnp.bitwise_and, -1), "or": (jnp.bitwise_or, 0),
          "xor": (jnp.bitwise_xor, 0), "min": (jnp.minimum, None), "max": (jnp.maximum, None)}


def redux(ex, ins, pc):
    """redux.sync: the reduction over the participating lanes (active and in the membermask) of a
    32-bit integer, the same value in every participating lane (add wraps modulo 2^32)."""
    dt = _t(ins)
    np_dt = np.int32 if dt.is_signed else np.uint32
    a = jnp.broadcast_to(ex.read(ins.src[0], dt), ex.active.shape).astype(np_dt)
    part = _participants(ex, ins.src[1])
    fn, ident = _REDUX[ins.attr("fn")]
    if ident is None:
        info = np.iinfo(np_dt)
        ident = info.max if ins.attr("fn") == "min" else info.min
    v = jnp.where(part, a, jnp.asarray(ident).astype(np_dt))
    r = lax.reduce(v, jnp.asarray(ident).astype(np_dt), fn, (1,))
    ex.write(ins.dst[0], jnp.broadcast_to(r[:, None], ex.active.shape))


def match(ex, ins, pc):
    """match.any.sync: the membermask-restricted mask of lanes holding this lane's value; match.all.sync:
    the participating lanes' mask if they all hold one value (p true), else 0 (p false)."""
    m = ex.m
    dt = _t(ins)
    a = jnp.broadcast_to(_ubits(ex.read(ins.src[0], dt), dt.bits), ex.active.shape)
    part = _participants(ex, ins.src[1])
    same = (a[:, :, None] == a[:, None, :]) & part[:, None, :]  # [warps, lane, other lane]
    lanes = m.lane_u32[None, None, :]
    eq_mask = jnp.sum(jnp.where(same, jnp.uint32(1) << lanes, jnp.uint32(0)), axis=2, dtype=jnp.uint32)
    if ins.attr("mode") == "any":
        ex.write(ins.dst[0], eq_mask)
        return
    all_mask = m.pack(part)[:, None]
    uniform = jnp.broadcast_to(eq_mask == all_mask, ex.active.shape) | ~part
    ok = jnp.all(uniform, axis=1, keepdims=True)
    ex.write(ins.dst[0], jnp.where(ok, jnp.broadcast_to(all_mask, ex.active.shape), jnp.uint32(0)))
    if len(ins.dst) > 1:
        ex.write(ins.dst[1], jnp.broadcast_to(ok, ex.active.shape))


def shfl(ex, ins, pc):
    """shfl.sync.{up,down,bfly,idx}.b32 d[|p], a, b, c, membermask exactly as the PTX ISA defines it:
    c packs the clamp value (bits 0-4) and the segment mask (bits 8-12). A lane whose source is out of
    its segment keeps its own value and gets p = false."""
    shape = ex.active.shape
    a = jnp.broadcast_to(ex.read(ins.src[0]), shape)  # PTX's are .b32; a DSL 64-bit value moves whole, as CUDA's pair
    d, ok = lsu.warp_shuffle_isa(a, ins.attr("mode"), ex.read(ins.src[1], T.u32), ex.read(ins.src[2], T.u32),
                                 ex.m.lane[None, :])
    ex.write(ins.dst[0], d)
    if len(ins.dst) > 1:
        ex.write(ins.dst[1], ok)


_ = jax
