"""Warp-level MMA: whole-tile `mma`, fragment-form `mma_sync`, and the WMMA load/store/fill functions.

`mma(a, b, c, shape=..., mode=...)` takes tiles a [..., m, k], b [..., k, n], c [..., m, n] and returns d
with c's dtype. The input type comes from a's dtype (float16 -> f16, bfloat16 -> bf16); float32 inputs
need `input_type="tf32"`. The accumulator type comes from c's dtype (float32, or float16 for f16 inputs).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxsimt.units.mma import layouts, numerics
from jaxsimt.units.mma.numerics import H200, HardwareParams

MODES = ("hardware", "ieee")
_INPUT_DTYPES = {"f16": jnp.float16, "bf16": jnp.bfloat16, "tf32": jnp.float32}
_ACC_DTYPES = {"f32": jnp.float32, "f16": jnp.float16}


def infer_input_type(dtype, input_type: str | None = None) -> str:
    dtype = jnp.dtype(dtype)
    if input_type is not None:
        if input_type not in _INPUT_DTYPES:
            raise ValueError(f"input_type must be one of {tuple(_INPUT_DTYPES)}, got {input_type!r}")
        if dtype != jnp.dtype(_INPUT_DTYPES[input_type]):
            raise TypeError(f"input_type {input_type!r} needs {jnp.dtype(_INPUT_DTYPES[input_type])} "
                            f"operands, got {dtype}")
        return input_type
    if dtype == jnp.float16:
        return "f16"
    if dtype == jnp.bfloat16:
        return "bf16"
    if dtype == jnp.float32:
        raise TypeError("float32 operands are only accepted as tf32: pass input_type='tf32'")
    raise TypeError(f"unsupported MMA operand dtype {dtype}")


def _acc_type(dtype) -> str:
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float32:
        return "f32"
    if dtype == jnp.float16:
        return "f16"
    raise TypeError(f"unsupported accumulator dtype {dtype}")


def _check(shape: str, input_type: str, acc: str, a, b, c, mode: str):
    if shape not in layouts.SHAPES:
        raise ValueError(f"unknown shape {shape!r}; known: {tuple(layouts.SHAPES)}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    accs = layouts.SUPPORTED.get((shape, input_type))
    if accs is None or acc not in accs:
        raise ValueError(f"{shape} has no {input_type} -> {acc} form")
    for name, x in (("a", a), ("b", b), ("c", c)):
        want = layouts.operand_shape(shape, name)
        if tuple(x.shape[-2:]) != want:
            raise ValueError(f"{name} must end in {want} for {shape}, got {x.shape}")


def _bits(x):
    x = jnp.asarray(x)
    return jax.lax.bitcast_convert_type(x, jnp.uint16 if x.dtype.itemsize == 2 else jnp.uint32
                                        ).astype(jnp.uint32)


def _from_bits(bits, dtype):
    dtype = jnp.dtype(dtype)
    if dtype.itemsize == 2:
        return jax.lax.bitcast_convert_type(bits.astype(jnp.uint16), dtype)
    return jax.lax.bitcast_convert_type(bits, dtype)


def _linear_tangent(a, b, c, da, db, dc):
    f32 = jnp.float32
    a, b, da, db = (x.astype(f32) for x in (a, b, da, db))
    return (jnp.matmul(da, b, precision="highest") + jnp.matmul(a, db, precision="highest")
            + dc.astype(f32))


@functools.partial(jax.custom_jvp, nondiff_argnums=(3, 4))
def _mma_hardware(a, b, c, input_type, params):
    d = numerics.mma_bits(_bits(a), _bits(b), _bits(c), input_type, _acc_type(c.dtype), params)
    return _from_bits(d, c.dtype)


@_mma_hardware.defjvp
def _mma_hardware_jvp(input_type, params, primals, tangents):
    # the hardware's rounding is piecewise constant; its derivative is taken as the exact product's
    a, b, c = primals
    da, db, dc = tangents
    d = _mma_hardware(a, b, c, input_type, params)
    return d, _linear_tangent(a, b, c, da, db, dc).astype(c.dtype)


def _mma_ieee(a, b, c, input_type, params):
    f32 = jnp.float32
    if input_type == "tf32":
        bits = _bits(a), _bits(b)
        a, b = (_from_bits(numerics.tf32_bits(x, params) << 13, f32) for x in bits)
    return numerics.mma_ieee_f32(a.astype(f32), b.astype(f32), c.astype(f32)).astype(c.dtype)


@functools.partial(jax.jit, static_argnames=("shape", "mode", "input_type", "params"))
def _mma_jit(a, b, c, *, shape, mode, input_type, params):
    impl = _mma_hardware if mode == "hardware" else _mma_ieee
    return impl(a, b, c, input_type, params)


def mma(a, b, c, shape: str = "m16n8k16", mode: str = "hardware", *, input_type: str | None = None,
        params: HardwareParams = H200):
    """D = A x B + C for one instruction's tiles, batched over any leading axes (which broadcast).

    a: [..., m, k] float16 / bfloat16 (or float32 with input_type="tf32"); b: [..., k, n] same dtype;
    c: [..., m, n] float32 (or float16 with f16 inputs). mode "hardware": the bit-level Tensor Core model
    with `params`; "ieee": f32 products and round-to-nearest sums in k order (differentiable).
    """
    a, b, c = jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)
    it = infer_input_type(a.dtype, input_type)
    if b.dtype != a.dtype:
        raise TypeError(f"a and b must share a dtype, got {a.dtype} and {b.dtype}")
    _check(shape, it, _acc_type(c.dtype), a, b, c, mode)
    if mode == "hardware":  # not under one jit: on concrete inputs all shapes share compiled kernels
        return _mma_hardware(a, b, c, it, params)
    return _mma_jit(a, b, c, shape=shape, mode=mode, input_type=it, params=params)


def mma_sync(a_frag, b_frag, c_frag, shape: str = "m16n8k16", mode: str = "hardware", *,
             input_type: str | None = None, params: HardwareParams = H200):
    """mma.sync (or wmma::mma_sync for WMMA shapes) on per-lane fragments [..., 32, n_elems]; returns
    the D fragment [..., 32, n_elems] in the layout of `fragment_layout(shape, "d")`."""
    a_frag, b_frag, c_frag = jnp.asarray(a_frag), jnp.asarray(b_frag), jnp.asarray(c_frag)
    it = infer_input_type(a_frag.dtype, input_type)
    tiles = [layouts.tile_from_fragment(f, op, shape, it)
             for f, op in ((a_frag, "a"), (b_frag, "b"), (c_frag, "c"))]
    d = mma(*tiles, shape=shape, mode=mode, input_type=it, params=params)
    return layouts.fragment_from_tile(d, "d", shape, it)


# --- WMMA ----------------------------------------------------------------------------------------------------
_USES = {"matrix_a": "a", "matrix_b": "b", "accumulator": "c", "a": "a", "b": "b", "c": "c", "d": "d"}


def load_matrix_sync(mem, use: str, shape: str = "m16n16k16", *, ld: int, layout: str = "row",
                     offset=0, input_type: str = "f16"):
    """wmma::load_matrix_sync: the fragment of a tile stored in `mem` with leading dimension `ld`
    (layout "row" = mem_row_major / row_major, "col" = col_major). Fragments use our documented layout:
    element j of lane l is the tile element of row-major index l + 32 j."""
    return layouts.load_fragment(mem, _USES[use], shape, input_type, ld=ld, layout=layout, offset=offset)


def store_matrix_sync(mem, frag, shape: str = "m16n16k16", *, ld: int, layout: str = "row", offset=0):
    """wmma::store_matrix_sync of an accumulator fragment; returns the updated `mem`."""
    return layouts.store_fragment(mem, frag, "d", shape, ld=ld, layout=layout, offset=offset)


def fill_fragment(use: str, shape: str, value, dtype):
    """wmma::fill_fragment: a [32, n_elems] fragment filled with `value`."""
    rows, cols = layouts.operand_shape(shape, _USES[use])
    return jnp.full((layouts.WARP, rows * cols // layouts.WARP), value, dtype)
