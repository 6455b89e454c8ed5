"""The f32 GEMM ladder in the DSL: C = A x B, row-major, A is M x K, B is K x N, C is M x N.

Each rung copies its CUDA form in `jaxsimt/kernels/cuda/gemm_ladder.cu` (the header's DEFINITIVE PARAMETERS):
the same threads, the same loads and stores per thread in the same order (with the vector widths nvcc
chose, see `jaxsimt/data/h200/sass/gemm_ladder.sass`), the same shared-memory layout and bounds checks,
so that the emulator's memory counters can be compared with the H200's (`jaxsimt validate`).

`RUNGS` lists them in ladder order; every kernel takes (M: s32, N: s32, K: s32, A, B, C: Ptr[f32]):

    rung = RUNGS[2]                                   # smem_tiled
    grid, block = rung.launch_config(M, N, K)
    r = jaxsimt.launch(rung.kernel(), grid, block, (M, N, K, A, B, C))
    np.testing.assert_array_equal(r["C"], rung.reference(A, B))   # bit for bit

`VALIDATION` maps each rung's name in `ncu_kernels.csv` to its profiled launch (M = N = K = 256) for
`jaxsimt validate`. See docs/gemm-ladder.md.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .naive import make_naive_coalesced, make_naive_uncoalesced, naive_coalesced_launch, naive_uncoalesced_launch
from .reference import fma_f32, gemm_fma_reference, random_operands
from .register_tiled import make_register_tiled, register_tiled_launch
from .tiled import coarsened_launch, make_coarsened, make_smem_tiled, smem_tiled_launch


@dataclass(frozen=True)
class Rung:
    """One rung: its kernel factory (tile parameters as keywords, defaults = the CUDA file's), its launch
    configuration `(M, N, K) -> (grid, block)`, the seed passage it implements, and a numpy reference
    `(A, B) -> C` in the kernel's accumulation order."""

    name: str
    factory: Callable  # (**params) -> jaxsimt Kernel (cached: the same object for the same params)
    launch_config: Callable  # (M, N, K, **params) -> (grid, block)
    seed: str
    reference: Callable  # (A, B) -> C
    params: dict = field(default_factory=dict)  # the CUDA file's tile parameters
    smem: int = 0  # the CUDA kernel's static shared memory per block (bytes)

    def kernel(self, **params):
        return self.factory(**params)


RUNGS: list[Rung] = [
    Rung("naive_uncoalesced", make_naive_uncoalesced, naive_uncoalesced_launch,
         "seed 000: \"suppose we decide that the row index i is mapped to threadIdx.x and the column index j "
         "to threadIdx.y ... consecutive threads of a warp access elements belonging to different rows of the "
         "same column ... poorly coalesced\"", gemm_fma_reference, {}, 0),
    Rung("naive_coalesced", make_naive_coalesced, naive_coalesced_launch,
         "seed 000: \"mapping the column index to threadIdx.x and the row index to threadIdx.y ... consecutive "
         "threads access consecutive elements of B\"; seed 002: naive_matrix_multiply (A's row stride fixed)",
         gemm_fma_reference, {}, 0),
    Rung("smem_tiled", make_smem_tiled, smem_tiled_launch,
         "seed 000: \"we tile the K-dimension ... each block processes K in tiles of size k_c, with the "
         "corresponding panels of A and B staged in shared memory\"; seed 002: matmul_tiled (fixed)",
         gemm_fma_reference, {"T": 16}, 2 * 16 * 16 * 4),
    Rung("coarsened", make_coarsened, coarsened_launch,
         "seed 002: matmul_tiled_and_coarsened, \"Jeder Thread kann dann eine 2x2-Elementmenge anstatt nur "
         "eines Elements berechnen\" (fixed)", gemm_fma_reference, {"T": 32, "COARSEN": 2}, 2 * 32 * 32 * 4),
    Rung("register_tiled", make_register_tiled, register_tiled_launch,
         "seed 000: warp and register tiling, \"each block is partitioned so that each warp handles a tile "
         "... further divided into register microtiles of size M_R x N_R ... updated through the outer "
         "product\"", gemm_fma_reference,
         dict(BM=64, BN=64, BK=8, WM=32, WN=16, MR=4, NR=4), 2 * 8 * 64 * 4),
]


def _wmma_rung() -> Optional[Rung]:
    """Rung 6 from `jaxsimt.kernels.wmma_gemm` when that module exists: its `RUNG` (a `Rung`), or a Rung
    built from its `factory`/`make_kernel`, `launch_config`, `reference` and `SEED`."""
    try:
        mod = importlib.import_module("jaxsimt.kernels.wmma_gemm")
    except ImportError:
        return None
    rung = getattr(mod, "RUNG", None)
    if isinstance(rung, Rung):
        return rung
    factory = getattr(mod, "factory", None) or getattr(mod, "make_kernel", None)
    launch_config = getattr(mod, "launch_config", None)
    reference = getattr(mod, "reference", None)
    if factory is None or launch_config is None or reference is None:
        return None
    return Rung("wmma", factory, launch_config, getattr(mod, "SEED", "seed 000: Tensor Cores (WMMA)"), reference,
                dict(getattr(mod, "PARAMS", {})), int(getattr(mod, "SMEM", 0)))


_w = _wmma_rung()
if _w is not None:
    RUNGS.append(_w)
del _w

BY_NAME: dict[str, Rung] = {r.name: r for r in RUNGS}

PROFILED_SIZE = (256, 256, 256)  # M, N, K of the H200 measurements


@dataclass(frozen=True)
class _Validation:
    """A rung's profiled launch, in the shape `jaxsimt validate` expects (like `kernels.micro.Micro`)."""

    rung: Rung
    size: tuple = PROFILED_SIZE
    seed: int = 3
    program: str = "gemm_ladder"

    @property
    def name(self) -> str:
        return self.rung.name

    def factory(self):
        return self.rung.kernel()

    @property
    def grid(self):
        return self.rung.launch_config(*self.size)[0]

    @property
    def block(self):
        return self.rung.launch_config(*self.size)[1]

    @property
    def smem(self) -> int:
        return self.rung.smem

    def args(self):
        M, N, K = self.size
        A, B, C = random_operands(M, N, K, self.seed)
        return (M, N, K, A, B, C)

    def check(self, result) -> None:
        _, _, _, A, B, _ = self.args()
        np.testing.assert_array_equal(result["C"], self.rung.reference(A, B), err_msg=f"{self.name}: C")


VALIDATION: dict[str, _Validation] = {r.name: _Validation(r) for r in RUNGS if r.name != "wmma"}

__all__ = ["RUNGS", "BY_NAME", "Rung", "VALIDATION", "PROFILED_SIZE", "fma_f32", "gemm_fma_reference",
           "random_operands", "make_naive_uncoalesced", "make_naive_coalesced", "make_smem_tiled",
           "make_coarsened", "make_register_tiled", "naive_uncoalesced_launch", "naive_coalesced_launch",
           "smem_tiled_launch", "coarsened_launch", "register_tiled_launch"]
