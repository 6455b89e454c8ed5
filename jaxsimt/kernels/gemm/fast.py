"""The GEMM ladder at scale: C and every counter of a rung without emulating every block.

C: each f32 rung computes every element as acc = fma(A[i,k], B[k,j], acc) for k ascending, its k loop
padded with zeros to the rung's k-tile (fma(0, 0, acc) is acc except for the sign of a zero sum, which
the padding reproduces). `gemm_c` runs that order as one jit-compiled JAX loop over k for all elements
at once: bit-identical to the instruction-level kernels, and to `reference.gemm_fma_reference`.

Counters: a block's counters depend only on (a) which of its rows and columns fall outside C (bounds
checks) and (b) where its addresses sit relative to 128-byte lines — every access of a block is the
same access of another block translated by the distance between their tile origins, and the memory model
(sectors, lines, banks) is invariant under translations by multiples of 128 bytes. The control flow of
these kernels does not depend on the data. So the blocks fall into a few classes with identical counters;
`gemm_stats` emulates one block per class at the instruction level (`launch(ctas=[b], data=False)`,
with the real M, N, K and layout) and sums the classes weighted by their sizes. At sizes both can run,
the result equals a full launch exactly (tests/test_gemm_fast.py).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxsimt as js

LINE = 128  # bytes; translations by multiples of this leave every memory counter unchanged


@dataclass(frozen=True)
class TileMap:
    """How a rung maps block (bx, by) to its C tile: origin (row0, col0) and size (bm, bn); k_tile: the
    k-loop's tile (zero-padded); element sizes of A/B in bytes."""

    transpose_grid: bool  # True: row from blockIdx.x (naive_uncoalesced)
    bm: int
    bn: int
    k_tile: int
    ab_bytes: int = 4


TILES = {
    "naive_uncoalesced": TileMap(True, 16, 16, 1),
    "naive_coalesced": TileMap(False, 16, 16, 1),
    "smem_tiled": TileMap(False, 16, 16, 16),
    "coarsened": TileMap(False, 32, 32, 32),
    "register_tiled": TileMap(False, 64, 64, 8),
    "wmma": TileMap(False, 32, 32, 16, 2),
}


# ---------------------------------------------------------------------------------------------
# C
# ---------------------------------------------------------------------------------------------


def _native_fma_is_exact() -> bool:
    """XLA fuses a*b+c into one FMA under jit on this backend (then it is the fastest exact fma)."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    c = -(a.astype(np.float64) * b).astype(np.float32) + c * np.float32(1e-3)  # cancellation
    from jaxsimt.kernels.gemm.reference import fma_f32

    got = np.asarray(jax.jit(lambda x, y, z: x * y + z)(a, b, c))
    return bool(np.array_equal(got, fma_f32(a, b, c)))


@functools.lru_cache(maxsize=None)
def native_fma() -> bool:
    """Whether the plain a*b+c of a jitted function is an exact FMA here (checked once)."""
    return _native_fma_is_exact()


def _exact_fma(a, b, c):  # round-to-odd through f64 (needs 64-bit types)
    from jaxsimt import f32
    from jaxsimt.units import alu
    return alu.fma(a, b, c, f32)


@functools.partial(jax.jit, static_argnames=("native", "unroll"))
def _sequential_fma(At, B, native: bool, unroll: int = 8):
    """C[i, j] = fma over k ascending of At[k, i] * B[k, j]; At [K, M], B [K, N] f32."""
    fma = (lambda a, b, c: a * b + c) if native else _exact_fma
    K = At.shape[0]
    acc = jnp.zeros((At.shape[1], B.shape[1]), jnp.float32)

    def step(k, acc):
        return fma(At[k][:, None], B[k][None, :], acc)

    def body(i, acc):
        for u in range(unroll):  # unrolled: XLA fuses the chain, reading acc once per `unroll` steps
            acc = step(i * unroll + u, acc)
        return acc

    acc = lax.fori_loop(0, K // unroll, body, acc)
    return lax.fori_loop(K // unroll * unroll, K, step, acc)


def gemm_c(rung: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C of an f32 rung, bit-identical to its instruction-level run."""
    tm = TILES[rung]
    if rung == "wmma":
        raise ValueError("the wmma rung's C is the Tensor Core primitive's: use wmma_c")
    K = A.shape[1]
    kp = -(-K // tm.k_tile) * tm.k_tile
    At = np.zeros((kp, A.shape[0]), np.float32)
    At[:K] = A.T
    Bp = np.zeros((kp, B.shape[1]), np.float32)
    Bp[:K] = B
    native = native_fma()
    with jax.enable_x64(True):
        return np.asarray(_sequential_fma(jnp.asarray(At), jnp.asarray(Bp), native))


def wmma_c(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C of the wmma rung: one m16n16k16 Tensor Core step per 16 of k, in k order, for every 16x16 tile."""
    from jaxsimt.units import mma as M

    m, k = A.shape
    n = B.shape[1]
    mp, np_, kp = (-(-x // 16) * 16 for x in (m, n, k))
    a = np.zeros((mp, kp), np.float16)
    a[:m, :k] = A
    b = np.zeros((kp, np_), np.float16)
    b[:k, :n] = B
    at = a.reshape(mp // 16, 16, kp // 16, 16).transpose(2, 0, 1, 3)  # [kt, mt, 16, 16]
    bt = b.reshape(kp // 16, 16, np_ // 16, 16).transpose(0, 2, 1, 3)  # [kt, nt, 16, 16]
    c = np.zeros((mp // 16, np_ // 16, 16, 16), np.float32)
    for kt in range(kp // 16):
        aa = np.broadcast_to(at[kt][:, None], c.shape[:2] + (16, 16))
        bb = np.broadcast_to(bt[kt][None, :], c.shape[:2] + (16, 16))
        c = np.asarray(M.mma(aa, bb, c, shape="m16n16k16", mode="hardware"))
    return c.transpose(0, 2, 1, 3).reshape(mp, np_)[:m, :n]


# ---------------------------------------------------------------------------------------------
# Counters
# ---------------------------------------------------------------------------------------------


def tile_map(rung: str, **params) -> TileMap:
    """The TileMap of a rung built with tile parameters `params` (the factory's keywords; none: the
    CUDA file's)."""
    tm = TILES[rung]
    if rung in ("smem_tiled", "coarsened") and "T" in params:
        return dataclasses.replace(tm, bm=params["T"], bn=params["T"], k_tile=params["T"])
    if rung == "register_tiled":
        return dataclasses.replace(tm, bm=params.get("BM", tm.bm), bn=params.get("BN", tm.bn),
                                   k_tile=params.get("BK", tm.k_tile))
    return tm


def block_classes(rung: str, M: int, N: int, K: int, grid, tm: TileMap = None) -> list[tuple[int, int]]:
    """[(representative linear block id, number of blocks)] for the classes of identical blocks
    (`tm`: the rung's tile map when built with other tile parameters, see `tile_map`)."""
    tm = tm or TILES[rung]
    gx, gy = grid[0], grid[1]
    by, bx = np.meshgrid(np.arange(gy, dtype=np.int64), np.arange(gx, dtype=np.int64), indexing="ij")
    row0, col0 = (bx, by) if tm.transpose_grid else (by, bx)
    row0, col0 = row0 * tm.bm, col0 * tm.bn
    key = np.stack([
        row0 + tm.bm > M,  # partial rows
        col0 + tm.bn > N,  # partial columns
        (row0 * K * tm.ab_bytes) % LINE,  # A tile origin within a line
        (col0 * tm.ab_bytes) % LINE,  # B tile origin
        ((row0 * N + col0) * 4) % LINE,  # C tile origin
    ], axis=-1).reshape(-1, 5).astype(np.int64)
    ids = (bx + by * gx).reshape(-1)
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    return [(int(ids[f]), int(c)) for f, c in zip(first, counts)]


_RATIO_OR_MAX = {"simd_efficiency", "max_stack_depth", "occupancy", "sm__maximum_warps_per_active_cycle_pct"}


def gemm_stats(rung, kernel, M: int, N: int, K: int, arch="h200", args=None, launch_config=None):
    """All counters of a full launch of `kernel` (a rung named `rung`), from one block per class.

    args: the launch arguments (arrays only give the layout; their contents are not read); default
    (M, N, K, A, B, C) with f32 zeros. Returns (stats, per_instruction, classes)."""
    grid, block = launch_config(M, N, K)
    if args is None:
        args = (M, N, K, np.zeros((M, K), np.float32), np.zeros((K, N), np.float32), np.zeros((M, N), np.float32))
    classes = block_classes(rung, M, N, K, grid)
    runs = [js.launch(kernel, grid, block, args, arch=arch, ctas=[cta], data=False) for cta, _ in classes]
    stats, per_instr = combine(runs, [count for _, count in classes], grid)
    return stats, per_instr, classes


# per-instruction columns that add up over blocks (the rest describe the instruction)
_SUMMED_COLUMNS = ("warp_exec", "thread_exec", "divergent", "requests", "sectors", "lines", "wavefronts",
                   "bank_conflicts", "bytes")


def combine(runs, counts, grid, steps=None):
    """The full launch's (stats, per_instruction) from one run per class of identical blocks (`runs`:
    LaunchResults of one block each, `counts`: blocks per class). `steps`: the emulator's steps when the
    classes ran as one batch (default: the sum of the runs')."""
    total: dict = {}
    per_instr = None
    depth = 0
    for r, count in zip(runs, counts):
        for k, v in r.stats.items():
            if k in _RATIO_OR_MAX or k.startswith(("launch__", "active_")):
                continue
            # emulator__steps: the steps actually emulated (one block per class), not scaled
            total[k] = total.get(k, 0) + v * (1 if k == "emulator__steps" else count)
        depth = max(depth, r.stats["max_stack_depth"])
        rows = [{k: (v * count if k in _SUMMED_COLUMNS else v) for k, v in row.items()} for row in r.per_instruction]
        if per_instr is None:
            per_instr = rows
        else:
            for acc, row in zip(per_instr, rows):
                for k in _SUMMED_COLUMNS:
                    if k in row:
                        acc[k] += row[k]
        static = {k: v for k, v in r.stats.items() if k.startswith(("launch__", "active_")) or k in (
            "occupancy", "sm__maximum_warps_per_active_cycle_pct")}
    stats = {}
    order = list(r.stats)  # keep a full launch's key order
    total.update(static)
    total["max_stack_depth"] = depth
    w = total.get("smsp__inst_executed.sum", 0)
    total["simd_efficiency"] = float(total.get("smsp__thread_inst_executed.sum", 0) / (w * 32)) if w else 0.0
    total["launch__grid_size"] = int(np.prod(grid))
    if steps is not None:
        total["emulator__steps"] = steps
    for k in order:
        stats[k] = total[k]
    return stats, per_instr
