"""micro_shared.cu in the DSL: shared-memory access patterns with easy-to-count accesses.

Every kernel makes the same shared and global accesses per thread as its CUDA counterpart in
`jaxsimt/kernels/cuda/micro_shared.cu` (same widths, same element indices, same order of stores, barrier, loads),
so the emulator's wavefronts, bank conflicts, requests and sectors must equal the H200's. Kernels that
differ only in index arithmetic share one DSL kernel with the arithmetic's coefficients as scalar
arguments (one compilation covers them). Deliberate differences from the CUDA text, none of which changes
an access: the unrolled `#pragma unroll` loops over a struct's members are `jaxsimt.range` loops (one
static instruction executed N times counts what N instructions count); `MyType`'s int member moves as
32 raw bits through a float access (same width and address); shared arrays are sized for the largest
pattern of their group (the CUDA kernels size dynamic shared memory per launch; the registry records the
CUDA size for occupancy); predicated accesses (`@p st.shared`) are `if_` branches (a warp with no active
lane branches around the access, which the hardware counts as 0 wavefronts too).
"""
# No `from __future__ import annotations`: kernel parameter types come from closure variables
# (`Ptr[dtype]`), which string annotations could not resolve.

import functools

import numpy as np

import jaxsimt as js
from jaxsimt import Ptr, f32, f64, s8, s16, s32

# The generic float pattern: up to 128 threads x stride 33 words (smem_stride_s33).
PATTERN_WORDS = 128 * 33


@functools.lru_cache(maxsize=None)
def pattern_f32():
    """`smem_pattern<float, P>` for every float pattern P: the i-th store of thread tid goes to word
    ``(tid >> 5) * st_w + (tid & 31) * st_l + i * st_i`` (i < n_st), then a barrier, then the i-th load
    reads ``(tid >> 5) * ld_w + (tid & 31) * ld_l + i * ld_i`` (i < n_ld) and is written to
    ``out[gtid * out_g + i * out_i]``. Stored values: ``(gtid * n_st + i) + 0.5``."""

    @js.kernel(name="smem_pattern_f32")
    def smem_pattern_f32(out: Ptr[f32], n_st: s32, st_w: s32, st_l: s32, st_i: s32,
                         n_ld: s32, ld_w: s32, ld_l: s32, ld_i: s32, out_g: s32, out_i: s32):
        sm = js.shared(PATTERN_WORDS, f32, "sm")
        t = js.threadIdx.x
        gtid = js.blockIdx.x * js.blockDim.x + t
        w, lane = t >> 5, t & 31
        st_base = w * st_w + lane * st_l
        for i in js.range(n_st):
            sm[st_base + i * st_i] = (gtid * n_st + i).astype(f32) + 0.5
        js.syncthreads()
        ld_base = w * ld_w + lane * ld_l
        for i in js.range(n_ld):
            out[gtid * out_g + i * out_i] = sm[ld_base + i * ld_i]

    return smem_pattern_f32


def pattern_ref(grid, block, n_st, st_w, st_l, st_i, n_ld, ld_w, ld_l, ld_i, out_g, out_i, out_len):
    """numpy simulation of `pattern_f32` (stores, barrier, loads), block by block."""
    out = np.zeros(out_len, np.float32)
    t = np.arange(block)
    for b in range(grid):
        sm = np.zeros(PATTERN_WORDS, np.float32)
        g = b * block + t
        for i in range(n_st):
            sm[(t >> 5) * st_w + (t & 31) * st_l + i * st_i] = (g * n_st + i).astype(np.float32) + np.float32(0.5)
        for i in range(n_ld):
            out[g * out_g + i * out_i] = sm[(t >> 5) * ld_w + (t & 31) * ld_l + i * ld_i]
    return out


# ---------------------------------------------------------------- one element of another type per thread
# kind -> (element type, vector length, CUDA type, values for element i as a function of i)
ELEM_KINDS = {
    "1B_char": (s8, 1),
    "2B_short": (s16, 1),
    "8B_float2": (f32, 2),
    "8B_double": (f64, 1),
    "16B_float4": (f32, 4),
}


def elem_values(kind: str, i):
    """make_val<T>(i) of micro_shared.cu / micro_global.cu, as DSL values (i a Value) or numpy (i an
    array): a tuple of the vector's components."""
    dsl = isinstance(i, js.Value)
    if kind == "1B_char":
        v = i * 7 + 1
        return (v.astype(s8) if dsl else v.astype(np.int8),)
    if kind == "2B_short":
        v = i * 3 + 1
        return (v.astype(s16) if dsl else v.astype(np.int16),)
    if kind == "8B_double":
        return (i.astype(f64) + 0.25 if dsl else i.astype(np.float64) + 0.25,)
    x = i.astype(f32) if dsl else i.astype(np.float32)
    if kind == "8B_float2":
        a = x + 0.5
        return (a, -a) if dsl else (a, -a)
    return (x, x + 0.25, x + 0.5, x + 0.75)


@functools.lru_cache(maxsize=None)
def elem(kind: str):
    """`smem_pattern<T, PUnit>`: one T per thread stored at element tid, loaded back, written to
    out[gtid]; float2/float4 as one v2/v4 access, char/short as one 1/2-byte access."""
    dtype, vec = ELEM_KINDS[kind]

    @js.kernel(name=f"smem_elem_{kind}")
    def smem_elem(out: Ptr[dtype]):
        sm = js.shared(128 * vec, dtype, "sm")
        t = js.threadIdx.x
        gtid = js.blockIdx.x * js.blockDim.x + t
        sm.store(t * vec, elem_values(kind, gtid))
        js.syncthreads()
        out.store(gtid * vec, sm.load(t * vec, vec))

    return smem_elem


def elem_ref(kind: str, total: int):
    vals = elem_values(kind, np.arange(total))
    return np.stack(vals, axis=1).reshape(-1) if len(vals) > 1 else vals[0]


# ---------------------------------------------------------------- reductions (seed 003), grid 4, block 256
@functools.lru_cache(maxsize=None)
def reduce(variant: str):
    """smem_reduce_interleaved (`tid % (2*s) == 0`), _interleaved_strided (`index = 2*s*tid`) and
    _sequential (`tid < s`, s halving); each 1 global load and 1 shared store per thread first, thread
    0 stores the block's sum."""

    @js.kernel(name=f"smem_reduce_{variant}")
    def smem_reduce(inp: Ptr[f32], out: Ptr[f32]):
        sdata = js.shared(256, f32, "sdata")
        t = js.threadIdx.x
        sdata[t] = inp[js.blockIdx.x * js.blockDim.x + t]
        js.syncthreads()
        if variant == "sequential":
            s = js.var(js.blockDim.x >> 1)
            for _ in js.while_(lambda: s > 0):
                with js.if_(t < s):
                    sdata[t] = sdata[t] + sdata[t + s]
                js.syncthreads()
                s.set(s >> 1)
        else:
            s = js.var(1)
            for _ in js.while_(lambda: s < js.blockDim.x):
                if variant == "interleaved":
                    with js.if_(t % (2 * s) == 0):
                        sdata[t] = sdata[t] + sdata[t + s]
                else:
                    index = 2 * s * t
                    with js.if_(index < js.blockDim.x):
                        sdata[index] = sdata[index] + sdata[index + s]
                js.syncthreads()
                s.set(s << 1)
        with js.if_(t == 0):
            out[js.blockIdx.x] = sdata[0]

    return smem_reduce


def reduce_ref(inp: np.ndarray, block: int = 256):
    # small integers: every summation order is exact
    return inp.reshape(-1, block).sum(axis=1, dtype=np.float32)


# ---------------------------------------------------------------- transpose, grid (2,2), block (32,8)
TILE = 32


@functools.lru_cache(maxsize=None)
def transpose():
    """smem_transpose<PITCH>: 64x64 floats through a float[32][PITCH] tile (PITCH 32: naive, 33: padded);
    the pitch is a scalar argument, the tile sized for 33."""

    @js.kernel(name="smem_transpose")
    def smem_transpose(inp: Ptr[f32], out: Ptr[f32], width: s32, height: s32, pitch: s32):
        tile = js.shared(TILE * 33, f32, "tile")
        tx, ty = js.threadIdx.x, js.threadIdx.y
        bx, by = js.blockIdx.x, js.blockIdx.y
        x = bx * TILE + tx
        y = by * TILE + ty
        for j in js.range(0, TILE, 8):
            with js.if_((x < width) & (y + j < height)):
                tile[(ty + j) * pitch + tx] = inp[(y + j) * width + x]
        js.syncthreads()
        x2 = by * TILE + tx
        y2 = bx * TILE + ty
        for j in js.range(0, TILE, 8):
            with js.if_((x2 < height) & (y2 + j < width)):
                out[(y2 + j) * height + x2] = tile[tx * pitch + ty + j]

    return smem_transpose


# ---------------------------------------------------------------- predicated accesses, lanes < active
@functools.lru_cache(maxsize=None)
def pred_lanes():
    """smem_pred_lanes: a store and a load of word tid by the lanes below `active` (0, 1 or 32), others
    keep -1; every thread writes out[gtid]."""

    @js.kernel(name="smem_pred_lanes")
    def smem_pred_lanes(out: Ptr[f32], active: s32):
        sm = js.shared(128, f32, "sm")
        t = js.threadIdx.x
        lane = t & 31
        gtid = js.blockIdx.x * js.blockDim.x + t
        v = js.var(-1.0, f32)
        with js.if_(lane < active):
            sm[t] = gtid.astype(f32) + 0.5
        js.syncthreads()
        with js.if_(lane < active):
            v.set(sm[t])
        out[gtid] = v

    return smem_pred_lanes


def pred_ref(total: int, active: int):
    g = np.arange(total)
    return np.where((g & 31) < active, g.astype(np.float32) + np.float32(0.5), np.float32(-1.0)).astype(np.float32)
