"""Tensor Core MMA: fragment layouts (mma.sync, ldmatrix, WMMA) and a bit-level model of its arithmetic.

See docs/mma.md. Public entry points:
  mma(a, b, c, shape, mode)            whole tiles, batched over leading axes
  mma_sync(a_frag, b_frag, c_frag, ...) per-lane fragments [32, n]
  fragment_from_tile / tile_from_fragment / fragment_layout / load_fragment / ldmatrix
  load_matrix_sync / store_matrix_sync / fill_fragment (WMMA)
"""
from jaxsimt.units.mma.layouts import (
    MMA_SYNC_SHAPES,
    SHAPES,
    SUPPORTED,
    WMMA_SHAPES,
    element_owner,
    fragment_from_tile,
    fragment_layout,
    ldmatrix,
    ldmatrix_source,
    load_fragment,
    load_tile,
    operand_shape,
    pack_registers,
    store_fragment,
    store_tile,
    tile_from_fragment,
    unpack_registers,
)
from jaxsimt.units.mma.numerics import H200, HardwareParams, mma_bits
from jaxsimt.units.mma.ops import (
    fill_fragment,
    infer_input_type,
    load_matrix_sync,
    mma,
    mma_sync,
    store_matrix_sync,
)

__all__ = [
    "H200", "HardwareParams", "MMA_SYNC_SHAPES", "SHAPES", "SUPPORTED", "WMMA_SHAPES", "element_owner",
    "fill_fragment", "fragment_from_tile", "fragment_layout", "infer_input_type", "ldmatrix",
    "ldmatrix_source", "load_fragment", "load_matrix_sync", "load_tile", "mma", "mma_bits", "mma_sync",
    "operand_shape", "pack_registers", "store_fragment", "store_matrix_sync", "store_tile",
    "tile_from_fragment", "unpack_registers",
]
