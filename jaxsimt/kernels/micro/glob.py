"""micro_global.cu in the DSL: global-memory loads and stores with known coalescing.

As in `jaxsimt/kernels/cuda/micro_global.cu`: grid 4, block 128 (block 48 for *_partial48), 1 MiB buffers at
256-byte aligned bases; `glob_ld_*` loads in[idx] and stores it, converted to float, to out[gtid];
`glob_st_*` stores make_val(idx) to out[idx] and loads nothing. Each DSL kernel serves the load and the
store kernel of one element type (`load` is a uniform scalar argument, so a warp runs only one side), and
the float kernel takes the index pattern's coefficients as scalar arguments:

    idx = (g & ~31) * w + (((g & 31) * b + c) & m)      g = blockIdx.x * blockDim.x + threadIdx.x

stride S: (w, b, c, m) = (S, S, 0, -1); offset O: (1, 1, O, -1); broadcast: (0, 0, 0, 0);
perm128: (1, 13, 5, 31), i.e. (g & ~31) | ((lane * 13 + 5) & 31).
"""
# No `from __future__ import annotations`: kernel parameter types come from closure variables
# (`Ptr[dtype]`), which string annotations could not resolve.

import functools

import numpy as np

import jaxsimt as js
from jaxsimt import Ptr, f32, s32

from .shared import ELEM_KINDS, elem_values

BUF_BYTES = 1 << 20

# pattern name -> (w, b, c, m)
PATTERNS = {
    **{f"stride{s}": (s, s, 0, -1) for s in (1, 2, 4, 8, 32)},
    **{f"offset{o}": (1, 1, o, -1) for o in (1, 4, 16)},
    "broadcast": (0, 0, 0, 0),
    "perm128": (1, 13, 5, 31),
    "partial48": (1, 1, 0, -1),
}


def pattern_index(g, w, b, c, m):
    """The element index of thread g (numpy or DSL values alike)."""
    return (g & ~31) * w + (((g & 31) * b + c) & m)


@functools.lru_cache(maxsize=None)
def glob_f32():
    """glob_load<float, P> (load != 0) and glob_store<float, P> (load == 0) for every float pattern."""

    @js.kernel(name="glob_f32")
    def glob_f32(inp: Ptr[f32], out: Ptr[f32], load: s32, w: s32, b: s32, c: s32, m: s32):
        g = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
        idx = pattern_index(g, w, b, c, m)
        with js.if_(load != 0):
            out[g] = inp[idx]
        with js.else_():
            out[idx] = idx.astype(f32) + 0.5

    return glob_f32


def to_f(kind: str, comps):
    """micro_global.cu's to_f: the loaded element as one float (numpy)."""
    if kind == "8B_float2":
        return (comps[0] + comps[1]).astype(np.float32)
    if kind == "16B_float4":
        return (((comps[0] + comps[1]) + comps[2]) + comps[3]).astype(np.float32)
    return comps[0].astype(np.float32)


@functools.lru_cache(maxsize=None)
def glob_elem(kind: str):
    """glob_load<T, POffset> / glob_store<T, POffset> with p = 0 (idx = gtid) for char, short, float2,
    double, float4: one 1/2/8/8/16-byte access per thread."""
    dtype, vec = ELEM_KINDS[kind]

    @js.kernel(name=f"glob_elem_{kind}")
    def glob_elem(inp: Ptr[dtype], out_f: Ptr[f32], out: Ptr[dtype], load: s32):
        g = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
        with js.if_(load != 0):
            v = inp.load(g * vec, vec)
            if vec == 1:
                f = v.astype(f32)
            elif vec == 2:
                f = v[0] + v[1]
            else:
                f = ((v[0] + v[1]) + v[2]) + v[3]
            out_f[g] = f
        with js.else_():
            out.store(g * vec, elem_values(kind, g))

    return glob_elem


def input_f32(n: int = BUF_BYTES // 4) -> np.ndarray:
    """Finite, non-zero floats (the values do not change any counter)."""
    i = np.arange(n, dtype=np.uint32)
    h = (i * np.uint32(2654435761)) >> np.uint32(8)
    return (h.astype(np.float32) / np.float32(1 << 24) + np.float32(1.5)).astype(np.float32)


def input_elem(kind: str) -> np.ndarray:
    dtype, vec = ELEM_KINDS[kind]
    n = BUF_BYTES // (dtype.size * vec)
    i = np.arange(n * vec)
    if dtype.is_int:
        return ((i * 37 + 11) % 200 - 100).astype(dtype.np_dtype)
    return (input_f32(n * vec) - np.float32(2.0)).astype(dtype.np_dtype)


def elem_load_ref(kind: str, inp: np.ndarray, total: int) -> np.ndarray:
    _, vec = ELEM_KINDS[kind]
    x = inp[: total * vec].reshape(total, vec)
    return to_f(kind, [x[:, k] for k in range(vec)])
