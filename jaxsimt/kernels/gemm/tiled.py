"""Rungs 3 and 4 of the GEMM ladder: seed 002's `matmul_tiled` and `matmul_tiled_and_coarsened`, fixed.

Copies of `gemm_smem_tiled` and `gemm_coarsened` in `jaxsimt/kernels/cuda/gemm_ladder.cu`: the same threads, the
same guarded (zero-filling) tile loads in the same order, the same shared-memory layout and the same
guarded stores. The inner k-loop over a tile is unrolled (as nvcc unrolls it), and the A row fragment
`A_shared[r][k..k+3]` is read as one 16-byte vector load, because that is what nvcc emits for it
(`LDS.128` in `jaxsimt/data/h200/sass/gemm_ladder.sass`); the B values are scalar loads (`LDS`).
"""
# No `from __future__ import annotations`: the DSL reads the parameter annotations as objects.

import builtins
import functools

import jaxsimt as js
from jaxsimt import Ptr, f32, s32

TILED_T = 16  # rung 3
COARSE_T, COARSE_K = 32, 2  # rung 4
VEC = 4  # floats per shared vector load of an A row fragment (LDS.128)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def guarded_load(arr, idx, cond):
    """`cond ? arr[idx] : 0.0f`: the load runs only for the lanes where cond holds (a predicated LDG)."""
    v = js.var(0.0, f32)
    with js.if_(cond):
        v.set(arr[idx])
    return v


@functools.lru_cache(maxsize=None)
def make_smem_tiled(T: int = TILED_T):
    """Rung 3: seed 002's `matmul_tiled` (seed 000: "we tile the K-dimension and operate on smaller
    panels ... each block processes K in tiles of size k_c, with the corresponding panels of A and B
    staged in shared memory"; here k_c = T). Block (T, T), one element of C per thread.

    Fixes of the seed's kernel (the same as in the CUDA form):
      1. the seed stores `B_shared[tx][ty] = B[(t + ty) * N + col]` but reads `B_shared[k][tx]`; the tile
         is stored `B_shared[ty][tx]` (row t+ty of B's panel lands in shared row ty), matching the read;
      2. the seed mixes `T` (tile and block edge) and `TILE` (inner loop bound); one T is used for both;
      3. the seed assumes M, N, K multiples of T ("no bound check"); out-of-range tile elements are
         zero-filled and the C store is guarded, so any size works;
      (the seed's A row stride M is its inner dimension, K here: `A[row * K + t + tx]`.)
    """
    if T % VEC:
        raise ValueError(f"smem_tiled: T={T} must be a multiple of {VEC} (vector loads of A rows)")

    @js.kernel(name="smem_tiled" if T == TILED_T else f"smem_tiled_T{T}")
    def smem_tiled(M: s32, N: s32, K: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
        A_shared = js.shared((T, T), f32, "A_shared")
        B_shared = js.shared((T, T), f32, "B_shared")
        tx, ty = js.threadIdx.x, js.threadIdx.y
        row = js.blockIdx.y * T + ty
        col = js.blockIdx.x * T + tx
        acc = js.var(0.0, f32)
        for t in js.range(0, K, T):
            A_shared[ty, tx] = guarded_load(A, row * K + t + tx, (row < M) & (t + tx < K))
            B_shared[ty, tx] = guarded_load(B, (t + ty) * N + col, (t + ty < K) & (col < N))
            js.syncthreads()
            for k0 in js.range(0, T, VEC):
                a = A_shared.load((ty, k0), VEC)
                for kk in builtins.range(VEC):
                    acc.set(js.fma(a[kk], B_shared[k0 + kk, tx], acc))
            js.syncthreads()
        with js.if_((row < M) & (col < N)):
            C[row * N + col] = acc

    return smem_tiled


@functools.lru_cache(maxsize=None)
def make_coarsened(T: int = COARSE_T, COARSEN: int = COARSE_K):
    """Rung 4: seed 002's `matmul_tiled_and_coarsened` ("Jeder Thread kann dann eine 2x2-Elementmenge
    anstatt nur eines Elements berechnen. Mit K=2 und T als Vielfaches von K ist dies moeglich"): a block
    of (T/K) x (T/K) threads computes a T x T tile of C, each thread a K x K set with stride T/K.
    K is called COARSEN here (K is the inner GEMM dimension).

    Fixes of the seed's kernel (the same as in the CUDA form):
      1. `_global__` typo -> `__global__` (nothing to do in the DSL);
      2. rowBase/colBase were `blockIdx * T * K + t{y,x}`; a block covers a T x T tile of C, so
         rowBase = blockIdx.y * T + ty and colBase = blockIdx.x * T + tx;
      3. undefined names: `row`/`col` in the loads and `acc` vs `accumulators`; the accumulators are
         named acc and zero-initialised (the seed left them uninitialised);
      4. a (T/K)^2 block cannot load a T x T tile with one element per thread; each thread loads the
         K x K elements (ty + wr*T/K, tx + wc*T/K) of each tile, A then B for each (wr, wc);
      5. the B tile is stored `B_shared[row][col]` (as in rung 3's fix), matching the `B_shared[k][..]` read;
      6. the k-loop stepped by TILE while loading T-wide tiles: it steps by T; the write-out loops ran to T
         instead of K (the coarsening factor): they run to K and are bounds-checked, like the loads.
    """
    S = T // COARSEN
    if S * COARSEN != T or T % VEC:
        raise ValueError(f"coarsened: T={T} must be a multiple of COARSEN={COARSEN} and of {VEC}")
    rng = builtins.range

    @js.kernel(name="coarsened" if (T, COARSEN) == (COARSE_T, COARSE_K) else f"coarsened_T{T}_K{COARSEN}")
    def coarsened(M: s32, N: s32, K: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
        A_shared = js.shared((T, T), f32, "A_shared")
        B_shared = js.shared((T, T), f32, "B_shared")
        tx, ty = js.threadIdx.x, js.threadIdx.y
        rowBase = js.blockIdx.y * T + ty
        colBase = js.blockIdx.x * T + tx
        acc = [[js.var(0.0, f32) for _ in rng(COARSEN)] for _ in rng(COARSEN)]
        for t in js.range(0, K, T):
            for wr in rng(COARSEN):
                for wc in rng(COARSEN):
                    ar, ac = rowBase + wr * S, t + tx + wc * S
                    A_shared[ty + wr * S, tx + wc * S] = guarded_load(A, ar * K + ac, (ar < M) & (ac < K))
                    br, bc = t + ty + wr * S, colBase + wc * S
                    B_shared[ty + wr * S, tx + wc * S] = guarded_load(B, br * N + bc, (br < K) & (bc < N))
            js.syncthreads()
            for k0 in js.range(0, T, VEC):
                a = [A_shared.load((ty + wr * S, k0), VEC) for wr in rng(COARSEN)]
                for kk in rng(VEC):
                    b = [B_shared[k0 + kk, tx + wc * S] for wc in rng(COARSEN)]
                    for wr in rng(COARSEN):
                        for wc in rng(COARSEN):
                            acc[wr][wc].set(js.fma(a[wr][kk], b[wc], acc[wr][wc]))
            js.syncthreads()
        for wr in rng(COARSEN):
            for wc in rng(COARSEN):
                r, c = rowBase + wr * S, colBase + wc * S
                with js.if_((r < M) & (c < N)):
                    C[r * N + c] = acc[wr][wc]

    return coarsened


def smem_tiled_launch(M: int, N: int, K: int, T: int = TILED_T):
    """grid (ceil(N/T), ceil(M/T)), block (T, T)."""
    return (_cdiv(N, T), _cdiv(M, T)), (T, T)


def coarsened_launch(M: int, N: int, K: int, T: int = COARSE_T, COARSEN: int = COARSE_K):
    """grid (ceil(N/T), ceil(M/T)), block (T/COARSEN, T/COARSEN)."""
    return (_cdiv(N, T), _cdiv(M, T)), (T // COARSEN, T // COARSEN)
