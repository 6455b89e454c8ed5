"""Rung 5 of the GEMM ladder: block, warp and register tiling (seed 000's formulas).

A copy of `gemm_register_tiled` in `jaxsimt/kernels/cuda/gemm_ladder.cu`: block tile BM x BN, k-panel BK staged
in shared memory (A transposed, `As[k][m]`), warps arranged WARPS_M x WARPS_N with a WM x WN warp tile,
an MR x NR register micro-tile per lane updated by outer products. As nvcc compiles it
(`jaxsimt/data/h200/sass/gemm_ladder.sass`), the micro-tile fragments `As[k][m0..m0+3]` and
`Bs[k][n0..n0+3]` are each one 16-byte vector load (`LDS.128`); the panel loads and stores and the C
stores are scalar. nvcc unrolls the loop over the BK k of a panel; here it is a loop (the same loads in
the same order, far fewer instructions to compile).
"""
# No `from __future__ import annotations`: the DSL reads the parameter annotations as objects.

import builtins
import functools

import jaxsimt as js
from jaxsimt import Ptr, f32, s32

DEFAULTS = dict(BM=64, BN=64, BK=8, WM=32, WN=16, MR=4, NR=4)
WARP = 32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _vec(n: int) -> int:
    """Width of the vector loads reading an n-float fragment (16 bytes at most, dividing n)."""
    return 4 if n % 4 == 0 else (2 if n % 2 == 0 else 1)


def threads_per_block(BM, BN, WM, WN, **_) -> int:
    return WARP * (BM // WM) * (BN // WN)


@functools.lru_cache(maxsize=None)
def make_register_tiled(BM: int = 64, BN: int = 64, BK: int = 8, WM: int = 32, WN: int = 16, MR: int = 4,
                        NR: int = 4):
    """Rung 5, seed 000's warp and register tiling. The formulas, with the seed's names:

    - "each block is partitioned so that each warp handles a tile of size" WM x WN; the warp tile's base
      is the block's base plus (warp_row * WM, warp_col * WN), warp_row = warp / WARPS_N,
      warp_col = warp % WARPS_N, WARPS_N = BN / WN;
    - "the warp tile ... is further divided into register microtiles of size" MR x NR, one per lane
      ("(WM/MR)(WN/NR) = W when the warp tile is exactly partitioned into one microtile per thread");
    - "the number of thread microtiles along the column direction of the warp tile is" WN / NR; "using
      the lane index inside the warp (tid mod W), the microtile row and column are"
      micro_row = lane / (WN/NR) and micro_col = lane % (WN/NR); the micro-tile's origin inside the
      block tile is (m0, n0) = (warp_row*WM + micro_row*MR, warp_col*WN + micro_col*NR);
    - "for a fixed k, the thread loads an MR-element fragment of A ... and an NR-element fragment of B
      ... used to update the register-resident output tile through the outer product":
      a[i] = As[k][m0+i], b[j] = Bs[k][n0+j], acc[i][j] += a[i]*b[j] (one FFMA each).

    Panel loads (as the CUDA kernel): element idx = tid + r*THREADS of the BM x BK A panel (row idx/BK,
    col idx%BK), stored transposed `As[k][m]`, and of the BK x BN B panel (row idx/BN, col idx%BN);
    out-of-range elements are zero-filled, the C stores guarded.
    """
    WARPS_M, WARPS_N = BM // WM, BN // WN
    THREADS = WARP * WARPS_M * WARPS_N
    if (WARPS_M * WM, WARPS_N * WN) != (BM, BN) or (WM // MR) * (WN // NR) != WARP:
        raise ValueError("register_tiled: the warp tiles must cover the block tile and hold one MR x NR "
                         "micro-tile per lane")
    if (BM * BK) % THREADS or (BK * BN) % THREADS:
        raise ValueError("register_tiled: the A and B panels must be a whole number of elements per thread")
    MICRO_COLS = WN // NR
    va, vb = _vec(MR), _vec(NR)
    rng = builtins.range
    name = "register_tiled" if dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, MR=MR, NR=NR) == DEFAULTS else \
        f"register_tiled_{BM}x{BN}x{BK}_w{WM}x{WN}_r{MR}x{NR}"

    @js.kernel(name=name)
    def register_tiled(M: s32, N: s32, K: s32, A: Ptr[f32], B: Ptr[f32], C: Ptr[f32]):
        As = js.shared((BK, BM), f32, "As")  # transposed: As[k][m]
        Bs = js.shared((BK, BN), f32, "Bs")
        tid = js.threadIdx.x
        lane, warp = tid & (WARP - 1), tid >> 5
        warp_row, warp_col = warp // WARPS_N, warp % WARPS_N
        micro_row, micro_col = lane // MICRO_COLS, lane % MICRO_COLS
        blockRow, blockCol = js.blockIdx.y * BM, js.blockIdx.x * BN
        m0 = warp_row * WM + micro_row * MR  # micro-tile origin inside the block tile
        n0 = warp_col * WN + micro_col * NR
        acc = [[js.var(0.0, f32) for _ in rng(NR)] for _ in rng(MR)]
        for t in js.range(0, K, BK):
            for r in rng(BM * BK // THREADS):
                idx = tid + r * THREADS
                m, k = idx // BK, idx % BK
                gr, gc = blockRow + m, t + k
                v = js.var(0.0, f32)
                with js.if_((gr < M) & (gc < K)):
                    v.set(A[gr * K + gc])
                As[k, m] = v
            for r in rng(BK * BN // THREADS):
                idx = tid + r * THREADS
                k, n = idx // BN, idx % BN
                gr, gc = t + k, blockCol + n
                v = js.var(0.0, f32)
                with js.if_((gr < K) & (gc < N)):
                    v.set(B[gr * N + gc])
                Bs[k, n] = v
            js.syncthreads()
            for k in js.range(BK):
                a = [x for i in rng(0, MR, va) for x in _as_tuple(As.load((k, m0 + i), va))]
                b = [x for j in rng(0, NR, vb) for x in _as_tuple(Bs.load((k, n0 + j), vb))]
                for i in rng(MR):
                    for j in rng(NR):
                        acc[i][j].set(js.fma(a[i], b[j], acc[i][j]))
            js.syncthreads()
        for i in rng(MR):
            for j in rng(NR):
                r, c = blockRow + m0 + i, blockCol + n0 + j
                with js.if_((r < M) & (c < N)):
                    C[r * N + c] = acc[i][j]

    return register_tiled


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def register_tiled_launch(M: int, N: int, K: int, BM: int = 64, BN: int = 64, WM: int = 32, WN: int = 16,
                          **_):
    """grid (ceil(N/BN), ceil(M/BM)), block (THREADS, 1) with THREADS = 32 * (BM/WM) * (BN/WN) = 256."""
    return (_cdiv(N, BN), _cdiv(M, BM)), (threads_per_block(BM, BN, WM, WN), 1)
