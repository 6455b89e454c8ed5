"""Tensor Core instructions for the DSL: WMMA fragments, PTX-style mma.sync and ldmatrix.

The arithmetic is `jaxsimt.mma` (the fitted H200 hardware model by default); this module adds the DSL
functions that emit the instructions and the machine bodies that run them for whole warps.

Instructions (registered in `jaxsimt.machine.EXTRA_OPS` at import):
* ``tensor.mma``: one mma.sync-class instruction (attrs: shape, itype, mode, na, nb, and for WMMA shapes
  `half`: the n-half of the tile it computes). WMMA m16n16k16 is emitted as two m16n8k16 halves, as the
  H200 runs it (two HMMA.16816). Every one carries ``pipe="tensor"`` and ``flops=2*m*n*k``.
* ``tensor.ldmatrix``: ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 (attrs: num, trans,
  plus the memory attrs of a shared array access).
WMMA fragment loads and stores are not special instructions: each lane loads / stores its fragment
elements with ordinary ``ld`` / ``st`` instructions (our documented fragment layout, docs/mma.md), so
bounds checks, faults and every memory counter are the machine's own.

All three need the whole warp: a warp that runs them with some lanes inactive records a
`WarpSyncError` fault (code errors.WARP_SYNC).
"""
from __future__ import annotations

import builtins
from types import SimpleNamespace
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt import errors, lsu, machine
from jaxsimt.errors import WarpSyncError  # noqa: F401 - re-exported as jaxsimt.WarpSyncError
from jaxsimt import types as T
from jaxsimt.dsl import KernelTraceError, SharedArray, Value, Var, _Array, _builder, _operand, laneid
from jaxsimt.mma import layouts, ops

_IN_TYPES = {"f16": T.f16, "bf16": T.bf16, "tf32": T.f32}
_ACC_TYPES = {"f32": T.f32, "f16": T.f16}


def _itype(dtype, input_type=None) -> str:
    dtype = T.as_dtype(dtype)
    if input_type is not None:
        return input_type
    for name, t in _IN_TYPES.items():
        if t == dtype and name != "tf32":
            return name
    if dtype == T.f32:
        return "tf32"
    raise KernelTraceError(f"{_builder().loc()}: no Tensor Core operand type for {dtype.name}")


# ---------------------------------------------------------------------------------------------
# Machine bodies
# ---------------------------------------------------------------------------------------------


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


def _exec_mma(ex, ins, pc: int):
    """tensor.mma. Optional attrs (the PTX form): `acc` (accumulator type name), `packed_ab` / `packed_cd`
    (16-bit elements packed two per .b32 register); without them every register holds one element of
    its own type (the DSL form)."""
    _require_converged(ex, pc)
    shape, it, mode = ins.attr("shape"), ins.attr("itype"), ins.attr("mode")
    na, nb = ins.attr("na"), ins.attr("nb")
    pab, pcd = bool(ins.attr("packed_ab", False)), bool(ins.attr("packed_cd", False))
    in_t = _IN_TYPES[it]
    acc_name = ins.attr("acc")
    acc_t = _ACC_TYPES[acc_name] if acc_name is not None else ins.src[na + nb].dtype

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


def _exec_ldmatrix(ex, ins, pc: int):
    _require_converged(ex, pc)
    num, trans = ins.attr("num"), ins.attr("trans")
    active = ex.active
    ex.active = active & (jnp.arange(32) < 8 * num)[None, :]  # the lanes that give row addresses
    try:
        name, widx, boff, addr, ok = ex.address(ins, 16, pc)
    finally:
        ex.active = active
    if ex.m.options.arch is not None:
        ex.mem = ex.m.count_memory(ex.mem, pc, "ld", name, addr, 16, ok, ex.item)
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


machine.EXTRA_OPS["tensor.mma"] = _exec_mma
machine.EXTRA_OPS["tensor.ldmatrix"] = _exec_ldmatrix


# ---------------------------------------------------------------------------------------------
# DSL: PTX-style mma.sync and ldmatrix on registers
# ---------------------------------------------------------------------------------------------


def _emit_mma_into(emit, dst_regs, a_regs, b_regs, c_regs, shape, it, mode, loc=None, **extra):
    """Emit one tensor.mma through `emit(op, dst, src, loc, **attrs)` (the DSL builder or the PTX lowering)."""
    s = layouts.SHAPES[extra.get("instr_shape", shape)]
    return emit("tensor.mma", list(dst_regs), list(a_regs) + list(b_regs) + list(c_regs), loc, shape=shape,
                itype=it, mode=mode, na=len(a_regs), nb=len(b_regs), pipe="tensor", flops=2 * s.m * s.n * s.k,
                **extra)


def _emit_mma(dst_regs, a_regs, b_regs, c_regs, shape, it, mode, **extra):
    bld = _builder()
    _emit_mma_into(lambda op, dst, src, _loc, **attrs: bld.emit(op, dst, src, **attrs), dst_regs, a_regs, b_regs,
                   c_regs, shape, it, mode, **extra)


def mma_sync(a: Sequence[Value], b: Sequence[Value], c: Sequence[Value], shape: str = "m16n8k16", *,
             input_type: str | None = None, mode: str = "hardware") -> tuple[Value, ...]:
    """mma.sync.aligned.<shape>.row.col: per-lane fragment elements (one Value per element, in the PTX
    ISA's order a0, a1, ...; f16/bf16, or f32 read as tf32) -> the D elements (c's type). Layouts as in
    `jaxsimt.mma.fragment_layout`. `mode`: "hardware" (the H200 model) or "ieee"."""
    if shape not in layouts.MMA_SYNC_SHAPES:
        raise KernelTraceError(f"{_builder().loc()}: mma_sync shape must be one of {layouts.MMA_SYNC_SHAPES}")
    it = _itype(a[0].dtype, input_type)
    acc = c[0].dtype
    for name, frag, want in (("a", a, a[0].dtype), ("b", b, a[0].dtype), ("c", c, acc)):
        n = layouts.fragment_layout(shape, name, it).shape[1]
        if len(frag) != n or any(v.dtype != want for v in frag):
            raise KernelTraceError(f"{_builder().loc()}: {shape} {name} fragment needs {n} {want.name} values")
    bld = _builder()
    d = [bld.reg(acc) for _ in builtins.range(len(c))]
    _emit_mma(d, [v.reg for v in a], [v.reg for v in b], [v.reg for v in c], shape, it, mode)
    return tuple(Value(r) for r in d)


def ldmatrix(array: SharedArray, index, num: int = 4, trans: bool = False) -> tuple[Value, ...]:
    """ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16: lane 8j + r gives (as `index`, an element
    index into the 16-bit shared `array`) the start of row r of matrix j. Returns 2 * num Values: the
    low and high halves of each destination register (fragment element order)."""
    if not isinstance(array, SharedArray) or array.dtype.bits != 16:
        raise KernelTraceError(f"{_builder().loc()}: ldmatrix reads a 16-bit shared array")
    if num not in (1, 2, 4):
        raise KernelTraceError(f"{_builder().loc()}: ldmatrix num must be 1, 2 or 4")
    bld = _builder()
    dst = [bld.reg(array.dtype) for _ in builtins.range(2 * num)]
    bld.emit("tensor.ldmatrix", dst, [_operand(index, None)], num=num, trans=bool(trans),
             **array._attrs(1))
    return tuple(Value(r) for r in dst)


# ---------------------------------------------------------------------------------------------
# DSL: WMMA
# ---------------------------------------------------------------------------------------------
_USES = {"a": "a", "matrix_a": "a", "b": "b", "matrix_b": "b", "accumulator": "c", "c": "c"}


class Fragment:
    """A WMMA fragment: `n = rows * cols / 32` registers per lane; element j of lane l is the tile
    element of row-major index l + 32 j (docs/mma.md)."""

    def __init__(self, use: str, shape: str, dtype):
        if shape not in layouts.WMMA_SHAPES:
            raise KernelTraceError(f"{_builder().loc()}: WMMA shape must be one of {layouts.WMMA_SHAPES}")
        if use not in _USES:
            raise KernelTraceError(f"{_builder().loc()}: fragment use must be 'a', 'b' or 'accumulator'")
        self.use, self.operand, self.shape, self.dtype = use, _USES[use], shape, T.as_dtype(dtype)
        self.rows, self.cols = layouts.operand_shape(shape, self.operand)
        bld = _builder()
        self.regs = [bld.reg(self.dtype, f"frag_{self.operand}") for _ in builtins.range(self.rows * self.cols // 32)]

    @property
    def values(self) -> tuple[Value, ...]:
        return tuple(Var(r) for r in self.regs)


def fragment(use: str, shape: str = "m16n16k16", dtype=T.f16) -> Fragment:
    return Fragment(use, shape, dtype)


def fill_fragment(frag: Fragment, value) -> None:
    bld = _builder()
    for r in frag.regs:
        bld.emit("mov", [r], [_operand(value, frag.dtype)], type=frag.dtype.name)


def _element_indices(frag: Fragment, index, ld, layout: str):
    """Element indices (into the array) of this lane's fragment elements: lane l's element j is tile
    element l + 32 j (row-major), i.e. row l // cols + j * 32 // cols, column l % cols (cols divides 32
    for every WMMA shape), so one per-lane base plus a step per element."""
    if layout not in ("row", "col"):
        raise KernelTraceError(f"{_builder().loc()}: layout must be 'row' or 'col'")
    lane = laneid()
    r0, c0 = lane // frag.cols, lane % frag.cols
    dr = 32 // frag.cols
    base = index + (r0 * ld + c0 if layout == "row" else c0 * ld + r0)
    step = dr * ld if layout == "row" else dr
    return [base if j == 0 else base + j * step for j in builtins.range(len(frag.regs))]


def load_matrix_sync(frag: Fragment, array: _Array, index, ld, layout: str | None = None) -> None:
    """wmma::load_matrix_sync(frag, &array[index], ld[, layout]): each lane loads its fragment elements
    with ordinary loads (bounds-checked and counted). `layout` ("row" / "col") is required for the
    accumulator, as in CUDA; for a and b it defaults to "row"."""
    if layout is None:
        if frag.operand == "c":
            raise KernelTraceError(f"{_builder().loc()}: loading an accumulator needs layout='row' or 'col'")
        layout = "row"
    if array.dtype != frag.dtype:
        raise KernelTraceError(f"{_builder().loc()}: {array.dtype.name} array into a {frag.dtype.name} fragment")
    bld = _builder()
    for r, idx in zip(frag.regs, _element_indices(frag, index, ld, layout)):
        bld.emit("ld", [r], [_operand(idx, None)], **array._attrs(1))


def store_matrix_sync(array: _Array, index, frag: Fragment, ld, layout: str = "row") -> None:
    """wmma::store_matrix_sync(&array[index], frag, ld, layout): per-lane stores of the fragment."""
    if array.dtype != frag.dtype:
        raise KernelTraceError(f"{_builder().loc()}: {frag.dtype.name} fragment into a {array.dtype.name} array")
    bld = _builder()
    for r, idx in zip(frag.regs, _element_indices(frag, index, ld, layout)):
        bld.emit("st", [], [_operand(idx, None), r], **array._attrs(1))


def wmma_mma_sync(d: Fragment, a: Fragment, b: Fragment, c: Fragment, *, mode: str = "hardware") -> None:
    """wmma::mma_sync(d, a, b, c). m16n16k16 is emitted as two m16n8k16 instructions (the n-halves), as
    the H200 executes it; the other WMMA shapes as one instruction."""
    if (a.operand, b.operand, c.operand, d.operand) != ("a", "b", "c", "c"):
        raise KernelTraceError(f"{_builder().loc()}: wmma.mma_sync(d, a, b, c) takes accumulator, a, b, accumulator")
    if len({a.shape, b.shape, c.shape, d.shape}) != 1 or a.dtype != b.dtype:
        raise KernelTraceError(f"{_builder().loc()}: fragments of different shapes or input types")
    it = _itype(a.dtype)
    if a.shape == "m16n16k16":
        for half in (0, 1):
            _emit_mma(d.regs, a.regs, b.regs, c.regs, a.shape, it, mode, half=half, n_half=8,
                      instr_shape="m16n8k16")
    else:
        _emit_mma(d.regs, a.regs, b.regs, c.regs, a.shape, it, mode)


wmma = SimpleNamespace(fragment=fragment, fill_fragment=fill_fragment, load_matrix_sync=load_matrix_sync,
                       store_matrix_sync=store_matrix_sync, mma_sync=wmma_mma_sync, Fragment=Fragment)
