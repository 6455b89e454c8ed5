"""micro_divergence.cu in the DSL: branch divergence patterns inside a warp.

Grid 2, block 128, iters = 4 (a run-time trip count), 32-bit unsigned arithmetic; every thread loads
in[gtid] and stores out[gtid]. The loops are `jaxsimt.range` loops like the CUDA `#pragma unroll 1`
loops. `div_early_return`'s `if (gtid >= n) return;` is a branch to an exit here, where nvcc emits a
predicated `EXIT` (no branch), so the divergent-branch counters differ there by construction.
"""

import functools

import numpy as np

import jaxsimt as js
from jaxsimt import Ptr, s32, u32

KINDS = ("div_none", "div_halfwarp", "div_nested", "div_loop", "div_early_return")


def step_a(x): return x * 1664525 + 1013904223
def step_b(x): return (x ^ (x >> 7)) * 22695477 + 1
def step_c(x): return (x + 0x9E3779B9) ^ (x << 3)
def step_d(x): return x * 69069 + 12345


def _rep(step, x, trips):
    for _ in js.range(trips):
        x.set(step(x))


@functools.lru_cache(maxsize=None)
def divergence(kind: str):
    if kind not in KINDS:
        raise ValueError(f"unknown divergence kernel {kind!r}")

    @js.kernel(name=kind)
    def div(inp: Ptr[u32], out: Ptr[u32], iters: s32, n: s32):
        gtid = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
        lane = js.threadIdx.x & 31
        if kind == "div_early_return":
            with js.if_(gtid >= n):
                js.return_()
        x = js.var(inp[gtid], u32)
        if kind in ("div_none", "div_early_return"):
            _rep(step_a, x, iters)
        elif kind == "div_halfwarp":
            with js.if_(lane < 16):
                _rep(step_a, x, iters)
            with js.else_():
                _rep(step_b, x, iters)
        elif kind == "div_nested":
            with js.if_(lane < 16):
                with js.if_(lane < 8):
                    _rep(step_a, x, iters)
                with js.else_():
                    _rep(step_b, x, iters)
            with js.else_():
                _rep(step_c, x, iters)
            _rep(step_d, x, iters)
        else:  # div_loop
            _rep(step_a, x, lane % 8 + 1)
        out[gtid] = x

    return div


def reference(kind: str, inp: np.ndarray, iters: int, n: int) -> np.ndarray:
    """micro_divergence.cu's host_ref; threads at or above n leave out untouched (0xFFFFFFFF)."""
    total = inp.size
    g = np.arange(total)
    lane = g & 31
    out = np.full(total, 0xFFFFFFFF, np.uint32)
    for t in range(min(n, total)):
        if kind in ("div_none", "div_early_return"):
            steps = [step_a] * iters
        elif kind == "div_halfwarp":
            steps = [step_a if lane[t] < 16 else step_b] * iters
        elif kind == "div_nested":
            steps = [(step_a if lane[t] < 8 else step_b) if lane[t] < 16 else step_c] * iters + [step_d] * iters
        else:
            steps = [step_a] * int(lane[t] % 8 + 1)
        x = int(inp[t])
        for f in steps:
            x = _U32(x)
            x = int(f(x)) & 0xFFFFFFFF
        out[t] = x
    return out


class _U32(int):
    """A Python int whose arithmetic wraps to 32 bits, so the step functions give u32 results."""

    def __new__(cls, v):
        return super().__new__(cls, int(v) & 0xFFFFFFFF)

    def __mul__(self, o): return _U32(int(self) * int(o))
    def __add__(self, o): return _U32(int(self) + int(o))
    def __xor__(self, o): return _U32(int(self) ^ int(o))
    def __rshift__(self, o): return _U32(int(self) >> int(o))
    def __lshift__(self, o): return _U32(int(self) << int(o))


def input_u32(total: int) -> np.ndarray:
    i = np.arange(total, dtype=np.uint64) + 77
    return ((i * 2654435761 + 12345) & 0xFFFFFFFF).astype(np.uint32)
