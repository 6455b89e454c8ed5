"""Register types of the machine: pred, signed/unsigned integers and floats, as PTX names them."""
from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class DType:
    """A register / memory element type.

    name: the PTX spelling (pred, s32, u64, f16, bf16, f32, ...); kind: 'pred', 's', 'u', 'b' or 'f';
    bits: width; np_dtype: the numpy/JAX dtype holding one value.
    """

    name: str
    kind: str
    bits: int
    np_dtype: np.dtype

    @property
    def size(self) -> int:
        """Bytes per element in memory (pred counts as 1)."""
        return max(self.bits // 8, 1)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.kind == "s"

    @property
    def is_int(self) -> bool:
        return self.kind in ("s", "u", "b")

    def __repr__(self) -> str:
        return self.name


def _d(name, kind, bits, np_dtype):
    return DType(name, kind, bits, np.dtype(np_dtype))


pred = _d("pred", "pred", 1, np.bool_)
s8 = _d("s8", "s", 8, np.int8)
s16 = _d("s16", "s", 16, np.int16)
s32 = _d("s32", "s", 32, np.int32)
s64 = _d("s64", "s", 64, np.int64)
u8 = _d("u8", "u", 8, np.uint8)
u16 = _d("u16", "u", 16, np.uint16)
u32 = _d("u32", "u", 32, np.uint32)
u64 = _d("u64", "u", 64, np.uint64)
b8 = _d("b8", "b", 8, np.uint8)
b16 = _d("b16", "b", 16, np.uint16)
b32 = _d("b32", "b", 32, np.uint32)
b64 = _d("b64", "b", 64, np.uint64)
f16 = _d("f16", "f", 16, jnp.float16)
bf16 = _d("bf16", "f", 16, jnp.bfloat16)
f32 = _d("f32", "f", 32, np.float32)
f64 = _d("f64", "f", 64, np.float64)

ALL = (pred, s8, s16, s32, s64, u8, u16, u32, u64, b8, b16, b32, b64, f16, bf16, f32, f64)
BY_NAME = {t.name: t for t in ALL}

# Unsigned integer of the same width: the raw-bits view used by memory.
UINT_OF_BITS = {8: u8, 16: u16, 32: u32, 64: u64}


def as_dtype(x) -> DType:
    """Accept a DType, a PTX type name, or a numpy/JAX dtype."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in BY_NAME:
        return BY_NAME[x]
    npd = np.dtype(x)
    for t in (pred, s8, s16, s32, s64, u8, u16, u32, u64, f16, bf16, f32, f64):
        if t.np_dtype == npd:
            return t
    raise TypeError(f"no jaxsimt type for {x!r}")
