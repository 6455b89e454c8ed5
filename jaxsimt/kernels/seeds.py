"""The seeds' small kernels in the jaxsimt DSL (the GEMM ladder lives in `jaxsimt.kernels.gemm`).

Seed 002's kernels have bugs; each is fixed minimally and the fix is written beside the kernel. The same
fixed kernels exist as CUDA C++ in `jaxsimt/kernels/cuda/` so every form has the same access pattern.
"""
from __future__ import annotations

import jaxsimt as js
from jaxsimt import Ptr, f32, s32, u32


@js.kernel
def saxpy(n: s32, a: f32, x: Ptr[f32], y: Ptr[f32]):
    """y = a*x + y, one element per thread (seed 000's global linear thread index)."""
    i = js.global_thread_index()
    with js.if_(i < n):
        y[i] = a * x[i] + y[i]


@js.kernel
def naive_matrix_multiply(N: s32, M: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
    """Seed 002's naive kernel: C (N x N) = A (N x M) x B (M x N), one element of C per thread.

    Fix: the seed indexes A as `A[row * N + k]`, i.e. as if A were square; A is N x M, so its row stride
    is M: `A[row * M + k]`. `sum += A*B` is a multiply then an add (two roundings), as nvcc emits for
    `-fmad=false`; the ladder's kernels use an explicit fma.
    """
    row = js.blockIdx.y * js.blockDim.y + js.threadIdx.y
    col = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
    with js.if_((row < N) & (col < N)):
        acc = js.var(0.0, f32)
        for k in js.range(M):
            acc += A[row * M + k] * B[k * N + col]
        C[row * N + col] = acc


def make_matmul_tiled(T: int = 16):
    """Seed 002's `matmul_tiled` with T x T tiles and T x T threads per block.

    Fixes: the seed writes `B_shared[tx][ty]` but reads `B_shared[k][tx]`; the tile must be stored as
    `B_shared[ty][tx] = B[(t + ty) * N + col]`. The seed mixes `T` and `TILE`; both are T here. As in the
    seed, M and N must be multiples of T (no bounds checks); A is N x M and B is M x N.
    """

    @js.kernel(name=f"matmul_tiled_T{T}")
    def matmul_tiled(N: s32, M: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
        A_shared = js.shared((T, T), f32, "A_shared")
        B_shared = js.shared((T, T), f32, "B_shared")
        tx, ty = js.threadIdx.x, js.threadIdx.y
        row = js.blockIdx.y * T + ty
        col = js.blockIdx.x * T + tx
        acc = js.var(0.0, f32)
        for t in js.range(0, M, T):
            A_shared[ty, tx] = A[row * M + t + tx]
            B_shared[ty, tx] = B[(t + ty) * N + col]
            js.syncthreads()
            for k in js.range(T):
                acc += A_shared[ty, k] * B_shared[k, tx]
            js.syncthreads()
        C[row * N + col] = acc

    return matmul_tiled


matmul_tiled = make_matmul_tiled(16)


@js.kernel
def reduce_sequential(inp: Ptr[f32], out: Ptr[f32]):
    """Block sum with sequential addressing (seed 003's conflict-free reduction); blockDim.x a power of
    two and the shared array sized for 1024 threads."""
    sdata = js.shared(1024, f32, "sdata")
    t = js.threadIdx.x
    i = js.blockIdx.x * js.blockDim.x + t
    sdata[t] = inp[i]
    js.syncthreads()
    s = js.var(js.blockDim.x >> 1)
    for _ in js.while_(lambda: s > 0):
        with js.if_(t < s):
            sdata[t] = sdata[t] + sdata[t + s]
        js.syncthreads()
        s.set(s >> 1)
    with js.if_(t == 0):
        out[js.blockIdx.x] = sdata[0]


@js.kernel
def reduce_interleaved(inp: Ptr[f32], out: Ptr[f32]):
    """Block sum with interleaved addressing (`index = 2*s*tid`), the bank-conflicted variant seed 003
    restructures."""
    sdata = js.shared(1024, f32, "sdata")
    t = js.threadIdx.x
    i = js.blockIdx.x * js.blockDim.x + t
    sdata[t] = inp[i]
    js.syncthreads()
    s = js.var(1)
    for _ in js.while_(lambda: s < js.blockDim.x):
        index = 2 * s * t
        with js.if_(index < js.blockDim.x):
            sdata[index] = sdata[index] + sdata[index + s]
        js.syncthreads()
        s.set(s << 1)
    with js.if_(t == 0):
        out[js.blockIdx.x] = sdata[0]


@js.kernel
def histogram(n: s32, bins: s32, data: Ptr[s32], hist: Ptr[u32]):
    """hist[data[i] % bins] += 1 with atomics (seed 003: "think histogram")."""
    i = js.global_thread_index()
    with js.if_(i < n):
        hist.atomic_add(data[i] % bins, js.const(1, u32))
