"""Rungs 1 and 2 of the GEMM ladder: one element of C per thread, no shared memory.

C = A x B, row-major, A is M x K, B is K x N, C is M x N. Copies of `gemm_naive_uncoalesced` and
`gemm_naive_coalesced` in `jaxsimt/kernels/cuda/gemm_ladder.cu` (block (16, 16), one scalar load of A and one of B
per k, `sum += a*b` contracted by nvcc into one FFMA, one guarded scalar store of C).
"""
# No `from __future__ import annotations`: the DSL reads the parameter annotations as objects.

import functools

import jaxsimt as js
from jaxsimt import Ptr, f32, s32

NAIVE_BLOCK = 16  # rungs 1 and 2: block (16, 16)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=None)
def make_naive_uncoalesced():
    """Rung 1, seed 000's first mapping ("the row index i is mapped to threadIdx.x and the column index j
    to threadIdx.y"): consecutive lanes walk down a column of A (stride K) and of C (stride N), so the
    warp's A loads and C stores are not coalesced; "at a fixed k, all threads in the warp require the same
    value b_kj" (here two values: a warp spans two threadIdx.y).

    The block edge is read from blockDim (the launch configuration picks it), as in the CUDA kernel.
    """

    @js.kernel(name="naive_uncoalesced")
    def naive_uncoalesced(M: s32, N: s32, K: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
        row = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
        col = js.blockIdx.y * js.blockDim.y + js.threadIdx.y
        with js.if_((row < M) & (col < N)):
            acc = js.var(0.0, f32)
            for k in js.range(K):
                acc.set(js.fma(A[row * K + k], B[k * N + col], acc))
            C[row * N + col] = acc

    return naive_uncoalesced


@functools.lru_cache(maxsize=None)
def make_naive_coalesced():
    """Rung 2, seed 000's fix ("mapping the column index to threadIdx.x and the row index to threadIdx.y")
    and seed 002's `naive_matrix_multiply`.

    Fix (seed 002 bug): the seed indexes A as `A[row * N + k]` with the loop running to M, i.e. as if A
    were square; A is M x K here, so its row stride is K: `A[row * K + k]`, loop k < K. The sizes are
    kernel arguments instead of the seed's globals (the seed's N x M / M x N become M x K / K x N).
    """

    @js.kernel(name="naive_coalesced")
    def naive_coalesced(M: s32, N: s32, K: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
        row = js.blockIdx.y * js.blockDim.y + js.threadIdx.y
        col = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
        with js.if_((row < M) & (col < N)):
            acc = js.var(0.0, f32)
            for k in js.range(K):
                acc.set(js.fma(A[row * K + k], B[k * N + col], acc))
            C[row * N + col] = acc

    return naive_coalesced


def naive_uncoalesced_launch(M: int, N: int, K: int, block: int = NAIVE_BLOCK):
    """grid (ceil(M/16), ceil(N/16)), block (16, 16): blockIdx.x walks rows."""
    return (_cdiv(M, block), _cdiv(N, block)), (block, block)


def naive_coalesced_launch(M: int, N: int, K: int, block: int = NAIVE_BLOCK):
    """grid (ceil(N/16), ceil(M/16)), block (16, 16): blockIdx.x walks columns."""
    return (_cdiv(N, block), _cdiv(M, block)), (block, block)
