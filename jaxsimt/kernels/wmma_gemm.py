"""The GEMM ladder's `wmma` rung (jaxsimt/kernels/cuda/gemm_ladder.cu, rung 6) in the DSL.

C[M, N] = A[M, K] x B[K, N] with A and B half (row-major), f32 accumulation on the Tensor Cores. A block of
128 threads (4 warps as 2 x 2) computes a 32 x 32 tile of C, one 16 x 16 tile per warp. Per k-step of 16
the block stages As[32][16] and Bs[16][32] in shared memory (zero-filled outside A and B), warp (wy, wx)
loads its A fragment from As[wy*16][0] (ld 16) and its B fragment from Bs[0][wx*16] (ld 32) and does one
wmma::mma_sync; the result goes through shared Cs[warp][16][16] and is written with bounds checks. Same
accesses and order as the CUDA kernel; the fragment loads/stores are per-lane loads/stores of the
emulator's documented WMMA fragment layout (docs/mma.md), not the hardware's (unspecified) one.
"""
# No `from __future__ import annotations`: kernel parameter types come from closure variables.
import functools

import jaxsimt as js
from jaxsimt import Ptr, f16, f32, s32

BM = BN = 32
THREADS = 128


@functools.lru_cache(maxsize=None)
def gemm_wmma(mode: str = "hardware"):
    """The DSL kernel (grid (ceil(N/32), ceil(M/32)), block 128); `mode` "hardware" or "ieee"."""

    @js.kernel(name="gemm_wmma")
    def gemm_wmma(A: Ptr[f16], B: Ptr[f16], C: Ptr[f32], M: s32, N: s32, K: s32):
        As = js.shared((BM, 16), f16, "As")
        Bs = js.shared((16, BN), f16, "Bs")
        Cs = js.shared((4, 16, 16), f32, "Cs")
        tid = js.threadIdx.x
        lane, warp = tid & 31, tid >> 5
        wy, wx = warp // 2, warp % 2
        block_row, block_col = js.blockIdx.y * BM, js.blockIdx.x * BN
        a = js.wmma.fragment("a", "m16n16k16", f16)
        b = js.wmma.fragment("b", "m16n16k16", f16)
        c = js.wmma.fragment("accumulator", "m16n16k16", f32)
        js.wmma.fill_fragment(c, 0.0)
        for t in js.range(0, K, 16):
            for r in range(BM * 16 // THREADS):
                idx = tid + r * THREADS
                m, k = idx // 16, idx % 16
                gr, gc = block_row + m, t + k
                v = js.var(0.0, f16)
                with js.if_((gr < M) & (gc < K)):
                    v.set(A[gr * K + gc])
                As[m, k] = v
            for r in range(16 * BN // THREADS):
                idx = tid + r * THREADS
                k, n = idx // BN, idx % BN
                gr, gc = t + k, block_col + n
                v = js.var(0.0, f16)
                with js.if_((gr < K) & (gc < N)):
                    v.set(B[gr * N + gc])
                Bs[k, n] = v
            js.syncthreads()
            js.wmma.load_matrix_sync(a, As, wy * 16 * 16, 16)
            js.wmma.load_matrix_sync(b, Bs, wx * 16, BN)
            js.wmma.mma_sync(c, a, b, c, mode=mode)
            js.syncthreads()
        js.wmma.store_matrix_sync(Cs, warp * 256, c, 16, "row")
        for i in js.range(lane, 256, 32):
            r, cc = i // 16, i % 16
            gr, gc = block_row + wy * 16 + r, block_col + wx * 16 + cc
            with js.if_((gr < M) & (gc < N)):
                C[gr * N + gc] = Cs[warp, r, cc]

    return gemm_wmma


def run(a, b, mode: str = "hardware", **launch_kw):
    """C = A x B with the DSL kernel; a [M, K], b [K, N] float16 arrays. Returns (C float32, result)."""
    import numpy as np

    a, b = np.ascontiguousarray(a, np.float16), np.ascontiguousarray(b, np.float16)
    (M, K), (_, N) = a.shape, b.shape
    c = np.zeros(M * N, np.float32)
    res = js.launch(gemm_wmma(mode), ((N + BN - 1) // BN, (M + BM - 1) // BM), THREADS,
                    [a.reshape(-1), b.reshape(-1), c, M, N, K], **launch_kw)
    return np.asarray(res.outputs["C"]).reshape(M, N), res
