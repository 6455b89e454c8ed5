"""The machine bodies of the Tensor Core instructions (`tensor.mma`, `tensor.ldmatrix`; the instruction
table `jaxsimt.units.isa` names them): for whole warps, through the executing block's helper (`ex.read`,
`ex.write`, `ex.active`, `ex.address`). The arithmetic is `jaxsimt.units.mma.ops`; the DSL functions that emit
the instructions are `jaxsimt.tensor`."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt import errors
from jaxsimt.units import lsu
from jaxsimt import types as T
from jaxsimt.units.mma import layouts, ops

IN_TYPES = {"f16": T.f16, "bf16": T.bf16, "tf32": T.f32}  # Tensor Core operand types by PTX name
ACC_TYPES = {"f32": T.f32, "f16": T.f16}


def _require_converged(ex, pc: int):
    """Fault (WARP_SYNC) for lanes missing from a warp that executes a warp-synchronous instruction."""
    live = jnp.any(ex.active, axis=1, keepdims=True)
    ex.record_fault(errors.WARP_SYNC, pc, live & ~ex.active, 0)


def _frag(ex, regs, dtype=None) -> jax.Array:
    """[W, 32, n] fragment from n registers (read as `dtype` when given)."""
    return jnp.stack([jnp.broadcast_to(ex.read(r, dtype), ex.active.shape) for r in regs], axis=-1)


def _elements(ex, regs, dtype, packed: bool, n: int) -> jax.Array:
    """[W, 32, n] fragment elements of type `dtype` from registers: one element per register, or
    (`packed`, PTX's .f16x2 / .bf16x2 .b32 registers) two 16-bit elements per register, element 2j in
    the low half of register j. The first n elements are the fragment (WMMA fragments in PTX
    registers may hold more: the rest are copies)."""
    if not packed:
        return _frag(ex, regs, dtype)[..., :n]
    u = _frag(ex, regs, T.u32)
    halves = jnp.stack([u & 0xFFFF, u >> 16], axis=-1).reshape(u.shape[:-1] + (2 * len(regs),))
    return jax.lax.bitcast_convert_type(halves[..., :n].astype(jnp.uint16), dtype.np_dtype)


def _write_elements(ex, regs, frag, packed: bool):
    """Inverse of `_elements`: fragment elements into registers; with `packed`, the registers beyond
    the fragment's elements get copies of the first ones (cyclically)."""
    n = frag.shape[-1]
    if not packed:
        for j, r in enumerate(regs):
            ex.write(r, frag[..., j % n])
        return
    h = jax.lax.bitcast_convert_type(frag, jnp.uint16).astype(jnp.uint32)
    for j, r in enumerate(regs):
        lo, hi = h[..., (2 * j) % n], h[..., (2 * j + 1) % n]
        ex.write(r, lo | (hi << 16))


def mma(ex, ins, pc: int):
    """tensor.mma. Optional attrs (the PTX form): `acc` (accumulator type name), `packed_ab` / `packed_cd`
    (16-bit elements packed two per .b32 register); without them every register holds one element of
    its own type (the DSL form)."""
    _require_converged(ex, pc)
    shape, it, mode = ins.attr("shape"), ins.attr("itype"), ins.attr("mode")
    na, nb = ins.attr("na"), ins.attr("nb")
    pab, pcd = bool(ins.attr("packed_ab", False)), bool(ins.attr("packed_cd", False))
    in_t = IN_TYPES[it]
    acc_name = ins.attr("acc")
    acc_t = ACC_TYPES[acc_name] if acc_name is not None else ins.src[na + nb].dtype

    def n_of(operand):
        return layouts.fragment_layout(shape, operand, it).shape[1]

    a = layouts.tile_from_fragment(_elements(ex, ins.src[:na], in_t, pab, n_of("a")), "a", shape, it)
    b = layouts.tile_from_fragment(_elements(ex, ins.src[na:na + nb], in_t, pab, n_of("b")), "b", shape, it)
    c = layouts.tile_from_fragment(_elements(ex, ins.src[na + nb:], acc_t, pcd, n_of("c")), "c", shape, it)
    half = ins.attr("half")
    if half is None:
        d = ops.mma(a, b, c, shape, mode, input_type=it)
        fd = layouts.fragment_from_tile(d, "d", shape, it)
    else:  # one n-half of a WMMA tile: the other half of d keeps its registers' values
        n = ins.attr("n_half")
        cols = slice(half * n, (half + 1) * n)
        sub = ops.mma(a, b[..., cols], c[..., cols], ins.attr("instr_shape"), mode, input_type=it)
        old = layouts.tile_from_fragment(_elements(ex, ins.dst, acc_t, pcd, n_of("d")), "d", shape, it)
        fd = layouts.fragment_from_tile(old.at[..., cols].set(sub), "d", shape, it)
    _write_elements(ex, ins.dst, fd, pcd)


def _ldmatrix_table(num: int, trans: bool) -> np.ndarray:
    """int [32, num, 2, 2]: (providing lane, b16 element of its 16-byte row) per destination element."""
    src = np.array([[[layouts.ldmatrix_source(l, j, h, trans) for h in range(2)] for j in range(num)]
                    for l in range(32)])
    return np.stack([8 * src[..., 0] + src[..., 1], src[..., 2]], axis=-1)


def ldmatrix(ex, ins, pc: int):
    _require_converged(ex, pc)
    num, trans = ins.attr("num"), ins.attr("trans")
    active = ex.active
    ex.active = active & (jnp.arange(32) < 8 * num)[None, :]  # the lanes that give row addresses
    try:
        name, widx, boff, addr, ok = ex.address(ins, 16, pc)
    finally:
        ex.active = active
    if ex.m.options.arch is not None:
        ex.count(pc, "ld", name, addr, 16, ok)
    words = jnp.stack(lsu.load(getattr(ex, name), widx, boff, ok, T.u32, 4), axis=-1)  # [W, 32, 4]
    halves = jnp.stack([words & 0xFFFF, words >> 16], axis=-1).reshape(words.shape[:2] + (8,))
    tab = _ldmatrix_table(num, trans)
    vals = halves[:, tab[..., 0], tab[..., 1]].astype(jnp.uint16)  # [W, 32, num, 2]
    if ins.attr("packed", False):  # PTX: destination register j holds matrix j's two b16 elements
        v32 = vals.astype(jnp.uint32)
        for j, r in enumerate(ins.dst):
            ex.write(r, v32[..., j, 0] | (v32[..., j, 1] << 16))
        return
    t = T.BY_NAME[ins.attr("type")]
    for j, r in enumerate(ins.dst):
        ex.write(r, jax.lax.bitcast_convert_type(vals[..., j // 2, j % 2], t.np_dtype))
