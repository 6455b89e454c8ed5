"""Tensor Core instructions for the DSL: WMMA fragments, PTX-style mma.sync and ldmatrix.

The arithmetic is `jaxsimt.units.mma` (the fitted H200 hardware model by default); this module adds the DSL
functions that emit the instructions (their machine bodies, for whole warps, are `jaxsimt.units.mma.execute`).

Instructions (in the instruction table, `jaxsimt.units.isa`):
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

from jaxsimt.errors import WarpSyncError  # noqa: F401 - re-exported as jaxsimt.WarpSyncError
from jaxsimt import types as T
from jaxsimt.dsl import KernelTraceError, SharedArray, Value, Var, _Array, _builder, _operand, laneid
from jaxsimt.units.mma import layouts
from jaxsimt.units.mma.execute import IN_TYPES as _IN_TYPES


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
    `jaxsimt.units.mma.fragment_layout`. `mode`: "hardware" (the H200 model) or "ieee"."""
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
