"""2D textures: arrays stored tile by tile (a block-linear layout) and fetched through the read-only cache.

Layout: a texture of height x width elements of `dtype` is cut into tiles of `arch.texture_tile` =
(row bytes, rows): TW = row bytes // element size elements wide, TH rows high, stored one tile after
another, tiles row-major, elements row-major inside a tile; the array is padded to whole tiles. With the
default (32 bytes, 4 rows) a tile fills one 128-byte cache line and each tile row one 32-byte sector, so
threads reading a 2D neighbourhood hit lines their neighbours above and below brought in, which a
row-major array (one line = one row segment) does not give.

Fetch: `tex2d(x, y)` with integer texel coordinates, clamped to the texture (cudaAddressModeClamp), point
sampled (no filtering, no normalized coordinates).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxsimt import types as T
from jaxsimt.arch import Arch


def tile_shape(arch: Arch, dtype: T.DType) -> tuple[int, int]:
    """(TW elements, TH rows) of one tile."""
    row_bytes, rows = arch.texture_tile
    if row_bytes % dtype.size:
        raise ValueError(f"texture elements of {dtype.size} bytes do not divide a {row_bytes}-byte tile row")
    return row_bytes // dtype.size, rows


def to_tiled(arch: Arch, image: np.ndarray) -> np.ndarray:
    """The 1D tiled (block-linear) copy of a 2D array [height, width], padded with zeros to whole tiles."""
    if image.ndim != 2:
        raise ValueError(f"a 2D texture needs a 2D array, got shape {image.shape}")
    tw, th = tile_shape(arch, T.as_dtype(image.dtype))
    h, w = image.shape
    hp, wp = -(-h // th) * th, -(-w // tw) * tw
    padded = np.zeros((hp, wp), image.dtype)
    padded[:h, :w] = image
    return np.ascontiguousarray(padded.reshape(hp // th, th, wp // tw, tw).transpose(0, 2, 1, 3)).reshape(-1)


def tiled_index(x, y, width, height, tw: int, th: int):
    """Element index in the tiled layout of texel (x, y), coordinates clamped to the texture."""
    x = jnp.clip(x, 0, width - 1)
    y = jnp.clip(y, 0, height - 1)
    tiles_x = (width + tw - 1) // tw
    return ((y // th) * tiles_x + x // tw) * (tw * th) + (y % th) * tw + x % tw


def tex2d(ex, ins, pc):
    """tex2d dst <- x, y (attrs: array = the texture parameter, type, space global, cache tex)."""
    arch = ex.m.options.target
    t = T.BY_NAME[ins.attr("type")]
    tw, th = tile_shape(arch, t)
    arr = ins.attr("array")
    shape = ex.active.shape
    x = jnp.broadcast_to(ex.read(ins.src[0]), shape).astype(jnp.int64)
    y = jnp.broadcast_to(ex.read(ins.src[1]), shape).astype(jnp.int64)
    dims = ex.dyn.tex[ex.item, arr].astype(jnp.int64)  # [W, 2] each warp's batch item's texture
    width, height = dims[:, 0, None], dims[:, 1, None]
    (v,) = ex.access(ins, pc, raw=tiled_index(x, y, width, height, tw, th))
    ex.write(ins.dst[0], v)
