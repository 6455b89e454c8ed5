"""Warp fragments: which lane holds which matrix element, for mma.sync, ldmatrix and WMMA.

The mma.sync tables follow the PTX ISA, section "Warp-level Matrix Fragments" (9.7.14.5 in recent
editions): "Matrix Fragments for mma.m16n8k4" (.tf32), "Matrix Fragments for mma.m16n8k8" (.f16/.bf16 and
.tf32) and "Matrix Fragments for mma.m16n8k16 with floating point type". Throughout, for a lane id l,
groupID = l >> 2 and threadID_in_group = l % 4, and element i of a fragment is the i-th scalar of the
per-lane vector {a0, a1, ...} (for .f16x2/.bf16x2 registers, element 2r sits in the low half of register r).

WMMA fragments are opaque in CUDA; ours is a documented, simple layout: element j of lane l holds the
tile element of row-major linear index l + 32 * j.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

WARP = 32


class Shape(NamedTuple):
    m: int
    n: int
    k: int


SHAPES = {
    "m16n8k16": Shape(16, 8, 16),
    "m16n8k8": Shape(16, 8, 8),
    "m16n8k4": Shape(16, 8, 4),
    "m16n16k16": Shape(16, 16, 16),
    "m32n8k16": Shape(32, 8, 16),
    "m8n32k16": Shape(8, 32, 16),
    "m16n16k8": Shape(16, 16, 8),
}
MMA_SYNC_SHAPES = ("m16n8k16", "m16n8k8", "m16n8k4")
WMMA_SHAPES = ("m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8")

#: (shape, input type) -> accumulator types that the instruction accepts
SUPPORTED = {
    ("m16n8k16", "f16"): ("f32", "f16"),
    ("m16n8k16", "bf16"): ("f32",),
    ("m16n8k8", "f16"): ("f32", "f16"),
    ("m16n8k8", "bf16"): ("f32",),
    ("m16n8k8", "tf32"): ("f32",),
    ("m16n8k4", "tf32"): ("f32",),
    ("m16n16k16", "f16"): ("f32", "f16"),
    ("m32n8k16", "f16"): ("f32", "f16"),
    ("m8n32k16", "f16"): ("f32", "f16"),
    ("m16n16k16", "bf16"): ("f32",),
    ("m32n8k16", "bf16"): ("f32",),
    ("m8n32k16", "bf16"): ("f32",),
    ("m16n16k8", "tf32"): ("f32",),
}

OPERANDS = ("a", "b", "c", "d")


def operand_shape(shape: str, operand: str) -> tuple[int, int]:
    s = SHAPES[shape]
    return {"a": (s.m, s.k), "b": (s.k, s.n), "c": (s.m, s.n), "d": (s.m, s.n)}[operand]


def _mma_sync_coord(shape: str, operand: str, input_type: str, lane: int, i: int) -> tuple[int, int]:
    """(row, col) of element i held by `lane`, from the PTX ISA fragment tables."""
    group, tig = lane >> 2, lane % 4
    if operand in ("c", "d"):
        # C/D of m16n8k4, m16n8k8, m16n8k16 (f32 c0..c3, or f16x2 pairs {c0,c1},{c2,c3}):
        # row = groupID for c0, c1 and groupID + 8 for c2, c3; col = threadID_in_group * 2 + (i & 0x1)
        return group + 8 * (i >= 2), tig * 2 + (i & 1)
    if shape == "m16n8k16":  # .f16 / .bf16
        if operand == "a":
            # row = groupID for a0, a1, a4, a5, groupID + 8 for a2, a3, a6, a7;
            # col = threadID_in_group * 2 + (i & 0x1) for a0..a3, + 8 for a4..a7
            return group + 8 * ((i >> 1) & 1), tig * 2 + (i & 1) + 8 * (i >= 4)
        # b: row = threadID_in_group * 2 + (i & 0x1) for b0, b1, + 8 for b2, b3; col = groupID
        return tig * 2 + (i & 1) + 8 * (i >= 2), group
    if shape == "m16n8k8" and input_type in ("f16", "bf16"):
        if operand == "a":
            # row = groupID for a0, a1, groupID + 8 for a2, a3; col = threadID_in_group * 2 + (i & 0x1)
            return group + 8 * (i >= 2), tig * 2 + (i & 1)
        # b: row = threadID_in_group * 2 + i for b0, b1; col = groupID
        return tig * 2 + i, group
    if shape == "m16n8k8":  # .tf32
        if operand == "a":
            # row = groupID for a0, a2, groupID + 8 for a1, a3;
            # col = threadID_in_group for a0, a1, threadID_in_group + 4 for a2, a3
            return group + 8 * (i & 1), tig + 4 * (i >= 2)
        # b: row = threadID_in_group for b0, threadID_in_group + 4 for b1; col = groupID
        return tig + 4 * i, group
    if shape == "m16n8k4":  # .tf32
        if operand == "a":
            # row = groupID for a0, groupID + 8 for a1; col = threadID_in_group
            return group + 8 * i, tig
        # b: row = threadID_in_group; col = groupID
        return tig, group
    raise ValueError(f"no mma.sync fragment for {shape} {operand} {input_type}")


@functools.lru_cache(maxsize=None)
def fragment_layout(shape: str, operand: str, input_type: str = "f16") -> np.ndarray:
    """int32 [32, n_elems, 2]: (row, col) of each lane's fragment elements."""
    rows, cols = operand_shape(shape, operand)
    n = rows * cols // WARP
    if shape in WMMA_SHAPES:
        lin = np.arange(WARP)[:, None] + WARP * np.arange(n)[None, :]
        out = np.stack([lin // cols, lin % cols], -1)
    else:
        out = np.array([[_mma_sync_coord(shape, operand, input_type, l, i) for i in range(n)]
                        for l in range(WARP)])
    out = out.astype(np.int32)
    flat = out[..., 0] * cols + out[..., 1]
    assert sorted(flat.ravel().tolist()) == list(range(rows * cols)), (shape, operand)
    out.setflags(write=False)
    return out


def element_owner(shape: str, operand: str, input_type: str = "f16") -> np.ndarray:
    """int32 [rows, cols, 2]: (lane, element index) that holds each tile element (the inverse map)."""
    lay = fragment_layout(shape, operand, input_type)
    rows, cols = operand_shape(shape, operand)
    inv = np.zeros((rows, cols, 2), np.int32)
    lanes, elems = np.meshgrid(np.arange(WARP), np.arange(lay.shape[1]), indexing="ij")
    inv[lay[..., 0], lay[..., 1], 0] = lanes
    inv[lay[..., 0], lay[..., 1], 1] = elems
    return inv


def fragment_from_tile(tile, operand: str, shape: str, input_type: str = "f16"):
    """[..., rows, cols] tile -> [..., 32, n_elems] fragments (what each lane's registers hold)."""
    lay = fragment_layout(shape, operand, input_type)
    return _gather(tile, lay)


def tile_from_fragment(frag, operand: str, shape: str, input_type: str = "f16"):
    """[..., 32, n_elems] fragments -> [..., rows, cols] tile."""
    inv = element_owner(shape, operand, input_type)
    return _gather(frag, inv)


def _gather(x, idx):
    """x[..., idx[..., 0], idx[..., 1]]; concrete inputs are gathered in numpy (no per-shape compile)."""
    if isinstance(x, jax.core.Tracer):
        return x[..., idx[..., 0], idx[..., 1]]
    return jnp.asarray(np.asarray(x)[..., idx[..., 0], idx[..., 1]])


# --- registers: packing b16 pairs as the .f16x2 / .bf16x2 registers hold them -----------------------------
def pack_registers(frag):
    """[..., 32, 2r] f16/bf16 elements -> [..., 32, r] uint32 (element 2j in the low half); 32-bit
    elements pass through as their bits."""
    frag = jnp.asarray(frag)
    if frag.dtype.itemsize == 4:
        return frag.view(jnp.uint32) if frag.dtype != jnp.uint32 else frag
    bits = frag.view(jnp.uint16).astype(jnp.uint32)
    return bits[..., 0::2] | (bits[..., 1::2] << 16)


def unpack_registers(regs, dtype):
    """Inverse of `pack_registers` for an element dtype."""
    regs = jnp.asarray(regs, jnp.uint32)
    dtype = jnp.dtype(dtype)
    if dtype.itemsize == 4:
        return regs.view(dtype)
    lo, hi = (regs & 0xFFFF).astype(jnp.uint16), (regs >> 16).astype(jnp.uint16)
    return jnp.stack([lo, hi], -1).reshape(*regs.shape[:-1], -1).view(dtype)


# --- memory <-> fragments ----------------------------------------------------------------------------------
def element_offsets(rows: int, cols: int, ld: int, layout: str = "row", offset: int = 0) -> np.ndarray:
    """Element offsets of a rows x cols tile in a flat array: row-major (r * ld + c) or column-major
    (c * ld + r) with leading dimension `ld`, starting at `offset`."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if layout == "row":
        if ld < cols:
            raise ValueError(f"row-major ld={ld} < cols={cols}")
        return offset + r * ld + c
    if layout == "col":
        if ld < rows:
            raise ValueError(f"column-major ld={ld} < rows={rows}")
        return offset + c * ld + r
    raise ValueError("layout must be 'row' or 'col'")


def load_tile(mem, rows: int, cols: int, ld: int, layout: str = "row", offset=0):
    """A rows x cols tile from a flat (or any-shaped, flattened) array; `offset` may be traced."""
    idx = element_offsets(rows, cols, ld, layout)
    if not any(isinstance(x, jax.core.Tracer) for x in (mem, offset)):  # numpy: no per-shape compile
        return jnp.asarray(np.asarray(mem).reshape(-1)[idx + int(offset)])
    return jnp.asarray(mem).reshape(-1)[idx + offset]


def store_tile(mem, tile, ld: int, layout: str = "row", offset=0):
    """`mem` (flat view) with the tile written; returns the updated array in mem's shape."""
    rows, cols = tile.shape[-2:]
    idx = element_offsets(rows, cols, ld, layout)
    if not any(isinstance(x, jax.core.Tracer) for x in (mem, tile, offset)):  # numpy: no per-shape compile
        out = np.array(mem)
        out.reshape(-1)[idx + int(offset)] = np.asarray(tile).astype(out.dtype)
        return jnp.asarray(out)
    mem = jnp.asarray(mem)
    flat = mem.reshape(-1).at[idx + offset].set(tile)
    return flat.reshape(mem.shape)


def load_fragment(mem, operand: str, shape: str, input_type: str = "f16", *, ld: int,
                  layout: str = "row", offset=0):
    """The [32, n_elems] fragment of `operand` for a tile stored at `offset` in `mem` with leading
    dimension `ld`, row- or column-major (what each lane reads with its own loads)."""
    rows, cols = operand_shape(shape, operand)
    return fragment_from_tile(load_tile(mem, rows, cols, ld, layout, offset), operand, shape, input_type)


def store_fragment(mem, frag, operand: str, shape: str, input_type: str = "f16", *, ld: int,
                   layout: str = "row", offset=0):
    return store_tile(mem, tile_from_fragment(frag, operand, shape, input_type), ld, layout, offset)


# --- ldmatrix (PTX ISA "Warp-level matrix load instruction: ldmatrix") --------------------------------------
def ldmatrix_source(lane: int, reg: int, half: int, trans: bool = False) -> tuple[int, int, int]:
    """For ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16: the element that `lane` receives in
    the `half` (0 low, 1 high) of destination register `reg`, as (matrix, row, col). Matrix j's eight rows
    are the 16-byte rows whose addresses lanes 8j .. 8j+7 supply (row r from lane 8j + r); col is the b16
    element within that row. Without .trans lane l gets row l / 4, cols 2 (l % 4) + {0, 1}; with .trans the
    8x8 matrix is transposed on the way: lane l gets col l / 4 of rows 2 (l % 4) + {0, 1}."""
    g, t = lane >> 2, lane % 4
    if trans:
        return reg, 2 * t + half, g
    return reg, g, 2 * t + half


def ldmatrix(mem, row_addrs, num: int = 1, trans: bool = False):
    """Emulate ldmatrix over a flat array of b16 elements. `row_addrs`: int [32] element offsets, one per
    lane (only lanes 0..8*num-1 are read: .x1 uses lanes 0-7, .x2 lanes 0-15, .x4 all lanes).
    Returns [32, num, 2] elements: register j of each lane, low half first."""
    if num not in (1, 2, 4):
        raise ValueError("num must be 1, 2 or 4 (.x1, .x2, .x4)")
    mem = jnp.asarray(mem).reshape(-1)
    row_addrs = jnp.asarray(row_addrs)
    src = np.array([[ldmatrix_source(l, j, h, trans) for h in range(2)] for l in range(WARP)
                    for j in range(num)]).reshape(WARP, num, 2, 3)
    addr = row_addrs[8 * src[..., 0] + src[..., 1]] + src[..., 2]
    return mem[addr]
