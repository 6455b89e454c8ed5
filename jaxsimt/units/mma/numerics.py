"""Tensor Core arithmetic: a bit-level model of one MMA instruction's dot products, and an IEEE reference.

Hardware mode works on integer significands and exponents (uint32/int32 only, with 64-bit sums held as
two uint32 limbs), so it is exact and immune to XLA's fma contraction and to XLA:CPU's flushing of f32
subnormals. IEEE mode is plain f32 arithmetic in a fixed, documented order and is differentiable.

The model (fitted bit-exact on the H200 fixture; after Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS
2021, and the later Ampere/Hopper studies), for one output element d = c + sum_k a_k * b_k:

1. The k products are split into consecutive groups of `group_size` (a "block FMA").
2. In one group, every product a_k * b_k is exact (a 22-bit significand for f16/tf32, 16-bit for bf16).
3. The addends (the group's products and the running accumulator, c for the first group) are aligned to
   the largest nominal exponent among the non-zero ones (a product's nominal exponent is ea + eb, its
   significand lies in [1, 4)); bits below 2^(emax - 23 - extra_bits) are cut off each addend
   (truncation of the magnitude, or two's-complement truncation, i.e. toward -inf).
4. The truncated addends are summed exactly (a few carry bits on the left, never lost).
5. The sum is normalised once and rounded to the accumulator format (f32: `f32_rounding`, round toward
   zero by default; f16 accumulators: `f16_rounding`, round to nearest even by default). That result is
   the accumulator for the next group.

Every free parameter lives in `HardwareParams`, to be fitted against the H200 fixture.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

U32 = jnp.uint32
I32 = jnp.int32

# --- the model's free parameters -------------------------------------------------------------------------
#: products fused per block FMA, per input type, capped at the instruction's k (literature: 4 on V100, 8 on
#: A100 for f16/bf16, 4 for tf32 on A100). Fitted on the H200: one block FMA per instruction, i.e. 16
#: products for m16n8k16, 8 for m16n8k8 (tf32 included); smaller groups miss every random tile
GROUP_SIZE = {"f16": 16, "bf16": 16, "tf32": 8}
#: bits kept below an f32 significand's last bit, relative to the largest addend's exponent (H200: 2)
EXTRA_ALIGN_BITS = 2
#: rounding of the normalised sum into an f32 accumulator: "rz" (truncation) or "rne"
F32_ROUNDING = "rz"
#: rounding into an f16 accumulator
F16_ROUNDING = "rne"
#: how bits cut off during alignment are dropped: "magnitude" (toward zero) or "twos_complement" (toward -inf)
ALIGN_TRUNCATION = "magnitude"
#: how an f32 register is read as a tf32 operand: "truncate" (low 13 bits ignored) or "rna"
TF32_INPUT = "truncate"
#: result when the rounded sum exceeds the format: "inf" always, or "ieee" (largest finite under rz)
OVERFLOW = "inf"
#: sign of a zero result: "positive" (the H200 never writes -0: an exactly zero or underflowed sum is +0,
#: even when every addend is -0) or "ieee" (-0 when every addend is -0, or a negative sum underflows)
ZERO_SIGN = "positive"
#: the NaN the unit writes (NVIDIA's canonical NaNs)
NAN_F32 = 0x7FFFFFFF
NAN_F16 = 0x7FFF


@dataclass(frozen=True)
class HardwareParams:
    """Free parameters of the hardware model; hashable, so it can be a static argument of `jax.jit`."""

    group_f16: int = GROUP_SIZE["f16"]
    group_bf16: int = GROUP_SIZE["bf16"]
    group_tf32: int = GROUP_SIZE["tf32"]
    extra_bits: int = EXTRA_ALIGN_BITS  # 0..6 (aligned addends must fit in 32 bits)
    f32_rounding: str = F32_ROUNDING
    f16_rounding: str = F16_ROUNDING
    align_truncation: str = ALIGN_TRUNCATION
    tf32_input: str = TF32_INPUT
    overflow: str = OVERFLOW
    zero_sign: str = ZERO_SIGN

    def __post_init__(self):
        if not 0 <= self.extra_bits <= 6:
            raise ValueError(f"extra_bits must be in 0..6, got {self.extra_bits}")
        for name in ("f32_rounding", "f16_rounding"):
            if getattr(self, name) not in ("rz", "rne"):
                raise ValueError(f"{name} must be 'rz' or 'rne'")
        if self.align_truncation not in ("magnitude", "twos_complement"):
            raise ValueError("align_truncation must be 'magnitude' or 'twos_complement'")
        if self.tf32_input not in ("truncate", "rna"):
            raise ValueError("tf32_input must be 'truncate' or 'rna'")
        if self.overflow not in ("inf", "ieee"):
            raise ValueError("overflow must be 'inf' or 'ieee'")
        if self.zero_sign not in ("positive", "ieee"):
            raise ValueError("zero_sign must be 'positive' or 'ieee'")

    def group(self, input_type: str) -> int:
        return {"f16": self.group_f16, "bf16": self.group_bf16, "tf32": self.group_tf32}[input_type]

    def replace(self, **kw) -> "HardwareParams":
        return dataclasses.replace(self, **kw)


H200 = HardwareParams()


class Fmt(NamedTuple):
    """A binary floating-point format held in the low bits of a uint32."""

    ebits: int
    fbits: int

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def p(self) -> int:
        return self.fbits + 1


F16, BF16, TF32, F32 = Fmt(5, 10), Fmt(8, 7), Fmt(8, 10), Fmt(8, 23)
INPUT_FMT = {"f16": F16, "bf16": BF16, "tf32": TF32}


# --- small uint32 helpers (shift amounts clamped: XLA's out-of-range shifts are never relied upon) -------
def _u(x):
    return jnp.asarray(x, U32)


def _shl(x, n):
    n = jnp.asarray(n, I32)
    return jnp.where(n >= 32, _u(0), lax.shift_left(x, jnp.clip(n, 0, 31).astype(U32)))


def _shr(x, n):
    n = jnp.asarray(n, I32)
    return jnp.where(n >= 32, _u(0), lax.shift_right_logical(x, jnp.clip(n, 0, 31).astype(U32)))


def _low_mask(n):
    """uint32 mask of the low n bits, n in any int range (<=0: 0, >=32: all)."""
    n = jnp.asarray(n, I32)
    return jnp.where(n >= 32, _u(0xFFFFFFFF), _shl(_u(1), n) - _u(1))


def _shr64(hi, lo, k):
    """(hi:lo) >> k for k >= 0, as two uint32 limbs."""
    lo_small = _shr(lo, k) | jnp.where(k <= 0, _u(0), _shl(hi, 32 - k))
    return (jnp.where(k >= 32, _u(0), _shr(hi, k)),
            jnp.where(k >= 32, _shr(hi, k - 32), lo_small))


def _any_low_bits64(hi, lo, k):
    """Whether any of the low k bits of (hi:lo) is set."""
    return ((lo & _low_mask(k)) | (hi & _low_mask(k - 32))) != 0


# --- decoding ---------------------------------------------------------------------------------------------
class Decoded(NamedTuple):
    sign: jax.Array  # uint32 0/1
    sig: jax.Array  # uint32 integer significand (hidden bit included for normals)
    q: jax.Array  # int32 exponent of the significand's last bit: value = sig * 2^q
    en: jax.Array  # int32 nominal exponent (exponent field, subnormals at emin)
    zero: jax.Array
    inf: jax.Array
    nan: jax.Array


def decode(bits, fmt: Fmt, xp=jnp) -> Decoded:
    """Fields of `fmt` bit patterns; `xp` is jax.numpy (traceable) or numpy (concrete inputs)."""
    bits = xp.asarray(bits).astype(xp.uint32)
    emask = (1 << fmt.ebits) - 1
    ef = ((bits >> fmt.fbits) & emask).astype(xp.int32)
    frac = bits & ((1 << fmt.fbits) - 1)
    special = ef == emask
    sig = xp.where(ef == 0, frac, frac | (1 << fmt.fbits)).astype(xp.uint32)
    en = (xp.maximum(ef, 1) - fmt.bias).astype(xp.int32)
    return Decoded(
        sign=(bits >> (fmt.ebits + fmt.fbits)) & 1,
        sig=xp.where(special, xp.uint32(0), sig).astype(xp.uint32),
        q=(en - fmt.fbits).astype(xp.int32),
        en=en,
        zero=(ef == 0) & (frac == 0),
        inf=special & (frac == 0),
        nan=special & (frac != 0),
    )


def tf32_bits(f32_bits, params: HardwareParams = H200, xp=jnp):
    """An f32 register read as a tf32 operand: 19-bit (1, 8, 10) pattern in a uint32."""
    b = xp.asarray(f32_bits).astype(xp.uint32)
    if params.tf32_input == "rna":
        finite = (b & 0x7F800000) != 0x7F800000
        b = xp.where(finite, b + xp.uint32(0x1000), b)
    return b >> 13


# --- rounding an exact (sign, integer, scale) to a format ---------------------------------------------------
def round_to_format(sign, hi, lo, lsb_exp, fmt: Fmt, rounding: str, overflow: str):
    """Bits of (-1)^sign * (hi:lo) * 2^lsb_exp rounded to `fmt` ("rz" or "rne"); (hi:lo) may be 0."""
    p = fmt.p
    lb = jnp.where(hi != 0, 63 - lax.clz(hi).astype(I32), 31 - lax.clz(lo).astype(I32))
    e_lead = lb + lsb_exp
    quantum = jnp.maximum(e_lead, fmt.emin) - (p - 1)
    k = quantum - lsb_exp  # right shift that lands on the quantum
    _, m_right = _shr64(hi, lo, jnp.maximum(k, 0))
    m = jnp.where(k <= 0, _shl(lo, -k), m_right)
    if rounding == "rne":
        half = _shr64(hi, lo, jnp.maximum(k - 1, 0))[1] & 1
        sticky = _any_low_bits64(hi, lo, k - 1)
        up = (k > 0) & (half == 1) & (sticky | ((m & 1) == 1))
        m = m + up.astype(U32)
    ef = quantum + (p - 2) + fmt.bias  # exponent field before the hidden bit carries in
    all_ones = (1 << fmt.ebits) - 1
    ovf = ef + _shr(m, p - 1).astype(I32) >= all_ones
    inf_bits = all_ones << fmt.fbits
    big = inf_bits - 1 if (overflow == "ieee" and rounding == "rz") else inf_bits
    mag = jnp.where(ovf, _u(big), _shl(jnp.clip(ef, 0, all_ones).astype(U32), fmt.fbits) + m)
    is_zero = (hi == 0) & (lo == 0)
    mag = jnp.where(is_zero, _u(0), mag)
    return (_u(sign) << (fmt.ebits + fmt.fbits)) | mag


# --- one block FMA ------------------------------------------------------------------------------------------
class Products(NamedTuple):
    """The exact products a_j * b_j of one element's dot product, [..., k] each (format independent)."""

    sign: jax.Array  # uint32 0/1
    sig: jax.Array  # uint32 < 2^22
    q: jax.Array  # int32: value = sig * 2^q
    en: jax.Array  # int32 nominal exponent ea + eb (the significand lies in [1, 4) for normal inputs)
    zero: jax.Array
    inf: jax.Array
    nan: jax.Array


def products(pa: Decoded, pb: Decoded) -> Products:
    nan = pa.nan | pb.nan | (pa.inf & pb.zero) | (pa.zero & pb.inf)
    return Products(sign=pa.sign ^ pb.sign, sig=pa.sig * pb.sig, q=pa.q + pb.q, en=pa.en + pb.en,
                    zero=pa.zero | pb.zero, inf=(pa.inf | pb.inf) & ~nan, nan=nan)


def _pad_products(p: Products, width: int, xp) -> Products:
    """Pad the last axis to `width` with neutral addends (-0: no effect on the sum, its exponent or sign)."""
    extra = width - p.sig.shape[-1]
    if extra <= 0:
        return p
    fill = {"sign": 1, "sig": 0, "q": 0, "en": 0, "zero": True, "inf": False, "nan": False}
    return Products(*(xp.concatenate([f, xp.full(f.shape[:-1] + (extra,), fill[n], f.dtype)], -1)
                      for n, f in zip(Products._fields, p)))


def fused_group(acc: Decoded, acc_fmt: Fmt, p: Products, params: HardwareParams):
    """acc + sum_g p[..., g] as one block FMA; returns the accumulator's new bits."""
    x = params.extra_bits
    # specials
    pos_inf = jnp.any(p.inf & (p.sign == 0), -1) | (acc.inf & (acc.sign == 0))
    neg_inf = jnp.any(p.inf & (p.sign == 1), -1) | (acc.inf & (acc.sign == 1))
    nan = jnp.any(p.nan, -1) | acc.nan | (pos_inf & neg_inf)
    # all addends along one axis: products then the accumulator
    sign = jnp.concatenate([p.sign, acc.sign[..., None]], -1)
    sig = jnp.concatenate([p.sig, acc.sig[..., None]], -1)
    q = jnp.concatenate([p.q, acc.q[..., None]], -1)
    en = jnp.concatenate([p.en, acc.en[..., None]], -1)
    zero = jnp.concatenate([p.zero, acc.zero[..., None]], -1)
    # alignment to the largest nominal exponent, truncation beyond the adder's width
    e_max = jnp.max(jnp.where(zero, jnp.iinfo(np.int32).min // 2, en), -1)
    lsb = e_max - 23 - x  # weight of the adder's last bit
    sh = q - lsb[..., None]
    m = jnp.where(sh >= 0, _shl(sig, sh), _shr(sig, -sh))
    if params.align_truncation == "twos_complement":
        lost = jnp.where(sh >= 0, False, (sig & _low_mask(-sh)) != 0)
        m = m + (lost & (sign == 1)).astype(U32)
    m = jnp.where(zero, _u(0), m)
    # exact sum: positive and negative parts, each summed as 16-bit limbs (no uint32 overflow for up to
    # 2^16 addends) and recombined into 64-bit (two-limb) integers
    def limb_sum(mask):
        mm = jnp.where(mask, m, _u(0))
        s_lo = jnp.sum(mm & 0xFFFF, -1, dtype=U32)
        s_hi = jnp.sum(mm >> 16, -1, dtype=U32)
        lo = s_lo + (s_hi << 16)
        return (s_hi >> 16) + (lo < s_lo).astype(U32), lo

    ph, pl = limb_sum(sign == 0)
    nh, nl = limb_sum(sign == 1)
    neg = (nh > ph) | ((nh == ph) & (nl > pl))
    ah, al, bh, bl = (jnp.where(neg, nh, ph), jnp.where(neg, nl, pl),
                      jnp.where(neg, ph, nh), jnp.where(neg, pl, nl))
    rl = al - bl
    rh = ah - bh - (al < bl).astype(U32)
    rounding = params.f32_rounding if acc_fmt == F32 else params.f16_rounding
    out = round_to_format(neg.astype(U32), rh, rl, lsb, acc_fmt, rounding, params.overflow)
    # the sign of a zero result (exactly zero, or underflowed): see `zero_sign`
    sign_pos = acc_fmt.ebits + acc_fmt.fbits
    if params.zero_sign == "positive":
        out = jnp.where((out & _u((1 << sign_pos) - 1)) == 0, _u(0), out)
    else:
        all_neg_zero = jnp.all(zero & (sign == 1), -1)
        out = jnp.where((rh == 0) & (rl == 0), jnp.where(all_neg_zero, _u(1 << sign_pos), _u(0)), out)
    inf_bits = ((1 << acc_fmt.ebits) - 1) << acc_fmt.fbits
    nan_bits = NAN_F32 if acc_fmt == F32 else NAN_F16
    out = jnp.where(pos_inf, _u(inf_bits), out)
    out = jnp.where(neg_inf, _u(inf_bits | (1 << sign_pos)), out)
    return jnp.where(nan, _u(nan_bits), out)


#: products per block-FMA call: groups are padded to this width so that every form shares one compiled
#: kernel per accumulator format
_WIDTH = 16
#: element counts the kernel is compiled for on concrete inputs (a small and a large bucket)
_BUCKETS = (2048, 65536)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _block_fma(acc_bits, p: Products, acc_fmt: Fmt, params: HardwareParams):
    return fused_group(decode(acc_bits, acc_fmt), acc_fmt, p, params)


def mma_bits(a_bits, b_bits, c_bits, input_type: str, acc_type: str,
             params: HardwareParams = H200):
    """Hardware-mode D for bit patterns: a [..., m, k], b [..., k, n], c [..., m, n] (uint32 holding
    f16/bf16 bits, or f32 bits for tf32; c holds f32 or f16 bits). Returns D bits (uint32).

    Traceable (under jit, vmap, grad). On concrete inputs the products are formed in numpy and the block
    FMAs run in fixed-size chunks, so every shape and input type shares one compiled kernel per
    accumulator format."""
    in_fmt = INPUT_FMT[input_type]
    acc_fmt = F32 if acc_type == "f32" else F16
    traced = any(isinstance(x, jax.core.Tracer) for x in (a_bits, b_bits, c_bits))
    xp = jnp if traced else np
    a_bits, b_bits, c_bits = (xp.asarray(x).astype(xp.uint32) for x in (a_bits, b_bits, c_bits))
    if input_type == "tf32":
        a_bits, b_bits = tf32_bits(a_bits, params, xp), tf32_bits(b_bits, params, xp)
    m, k = a_bits.shape[-2:]
    n = b_bits.shape[-1]
    batch = jnp.broadcast_shapes(a_bits.shape[:-2], b_bits.shape[:-2], c_bits.shape[:-2])
    g = min(params.group(input_type), k)
    if k % g:
        raise ValueError(f"group size {g} does not divide k={k}")
    # one row per output element: [E, k] operands, [E] accumulators
    a_el = xp.broadcast_to(a_bits[..., :, None, :], batch + (m, n, k)).reshape(-1, k)
    b_el = xp.broadcast_to(xp.swapaxes(b_bits, -1, -2)[..., None, :, :], batch + (m, n, k)).reshape(-1, k)
    acc = xp.broadcast_to(c_bits, batch + (m, n)).reshape(-1)
    prod = products(decode(a_el, in_fmt, xp), decode(b_el, in_fmt, xp))
    width = max(g, _WIDTH)
    for j in range(0, k, g):
        pg = _pad_products(Products(*(f[:, j:j + g] for f in prod)), width, xp)
        acc = _block_fma(acc, pg, acc_fmt, params) if traced else _chunked(acc, pg, acc_fmt, params)
    return jnp.asarray(acc).reshape(batch + (m, n))


def _chunked(acc, p: Products, acc_fmt: Fmt, params: HardwareParams):
    """Run the block FMA on concrete element arrays, in chunks padded to a bucket size."""
    size = acc.shape[0]
    bucket = _BUCKETS[0] if size <= _BUCKETS[0] else _BUCKETS[1]
    out = []
    for s in range(0, size, bucket):
        e = min(bucket, size - s)
        pad = bucket - e
        chunk = [np.pad(f[s:s + e], [(0, pad)] + [(0, 0)] * (f.ndim - 1)) for f in (acc,) + tuple(p)]
        out.append(np.asarray(_block_fma(chunk[0], Products(*chunk[1:]), acc_fmt, params))[:e])
    return np.concatenate(out) if out else np.zeros(0, np.uint32)


# --- IEEE reference ------------------------------------------------------------------------------------------
def mma_ieee_f32(a32, b32, c32):
    """d = (((c + p_0) + p_1) + ... + p_{k-1}) with p_j = a[:, j] * b[j, :], every operation an f32
    round-to-nearest-even operation (the products of f16/bf16/tf32 values are exact in f32 in the normal
    range, so fma contraction cannot change the result; XLA:CPU flushes f32 subnormals)."""
    d = c32
    for j in range(a32.shape[-1]):
        d = d + a32[..., :, j, None] * b32[..., None, j, :]
    return d
