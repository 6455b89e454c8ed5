"""The H200 micro-kernels (jaxsimt/kernels/cuda/micro_{shared,global,divergence}.cu) in the DSL, as a registry.

`REGISTRY` maps each profiled kernel's name (as in `jaxsimt/data/h200/ncu_kernels.csv`) to a `Micro`:
the DSL kernel factory, the fixed launch configuration, a builder of the launch arguments, and a numpy
reference of the outputs. Run one with

    m = REGISTRY["smem_stride_s2"]
    r = jaxsimt.launch(m.factory(), m.grid, m.block, m.args(), arch="h200")
    m.check(r)               # outputs equal the reference
    r.stats["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]   # == the H200's 8

Entries with the same `factory` share one DSL kernel (and, at one block shape, one compiled machine):
their differences are scalar arguments. `smem` is the CUDA launch's shared memory per block (static +
dynamic), for theoretical occupancy; a DSL kernel shared by several patterns sizes its arrays for the
largest.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import divergence as _div
from . import glob as _glob
from . import shared as _sh


@dataclass(frozen=True)
class Micro:
    """One micro-kernel: (kernel factory, grid, block, args builder, reference fn) plus its program and
    the CUDA launch's shared memory per block."""

    name: str
    program: str  # micro_shared | micro_global | micro_divergence
    factory: Callable  # () -> jaxsimt Kernel (cached: the same object every call)
    grid: tuple
    block: tuple
    args: Callable[[], tuple]  # () -> launch arguments (fresh arrays)
    reference: Callable[[tuple], dict]  # launch arguments -> {output name: expected final array}
    smem: int = 0

    @property
    def threads_per_block(self) -> int:
        return int(np.prod(self.block))

    def check(self, result) -> None:
        """Assert the launch's outputs equal the numpy reference (bit for bit)."""
        args = self.args()
        for name, expected in self.reference(args).items():
            np.testing.assert_array_equal(result[name], expected, err_msg=f"{self.name}: output {name!r}")


REGISTRY: dict[str, Micro] = {}


def _add(m: Micro) -> None:
    REGISTRY[m.name] = m


# ---------------------------------------------------------------- micro_shared
def _pattern(name, grid, block, coeffs, out_len, smem):
    n_st, st_w, st_l, st_i, n_ld, ld_w, ld_l, ld_i, out_g, out_i = coeffs

    def args():
        return (np.zeros(out_len, np.float32),) + tuple(coeffs)

    def ref(a):
        return {"out": _sh.pattern_ref(grid, block, *coeffs, out_len)}

    _add(Micro(name, "micro_shared", _sh.pattern_f32, (grid,), (block,), args, ref, smem))


_TOTAL = 2 * 128
for _s in range(1, 34):  # PStride: word warp*32*S + lane*S
    _pattern(f"smem_stride_s{_s}", 2, 128, (1, 32 * _s, _s, 0, 1, 32 * _s, _s, 0, 1, 0), _TOTAL, 4 * 128 * _s)
_pattern("smem_elem_4B_float", 2, 128, (1, 32, 1, 0, 1, 32, 1, 0, 1, 0), _TOTAL, 512)
# struct {float x, y, z} at element tid: 3 scalar stores, 3 scalar loads, out is Vec3[total]
_pattern("smem_struct_vec3", 2, 128, (3, 96, 3, 1, 3, 96, 3, 1, 3, 1), 3 * _TOTAL, 12 * 128)
# struct {float f; int c;}: 2 scalar stores, 2 scalar loads, out is MyType[total]
_pattern("smem_struct_mytype", 2, 128, (2, 64, 2, 1, 2, 64, 2, 1, 2, 1), 2 * _TOTAL, 8 * 128)
# whole struct stored, one member (.x / .f) loaded, out float[total]; __shared__ arrays (static)
_pattern("smem_struct_vec3_x", 2, 128, (3, 96, 3, 1, 1, 96, 3, 0, 1, 0), _TOTAL, 12 * 128)
_pattern("smem_struct_mytype_f", 2, 128, (2, 64, 2, 1, 1, 64, 2, 0, 1, 0), _TOTAL, 8 * 128)
# grid 2, block 1024 as 32x32 (tx = tid % 32, ty = tid / 32), tile[32][P]: st tile[ty][tx]
for _p, _suffix in ((32, ""), (33, "_pad")):
    _pattern(f"smem_tile_row{_suffix}", 2, 1024, (1, _p, 1, 0, 1, _p, 1, 0, 1, 0), 2 * 1024, 4 * 32 * _p)
    _pattern(f"smem_tile_col{_suffix}", 2, 1024, (1, _p, 1, 0, 1, 1, _p, 0, 1, 0), 2 * 1024, 4 * 32 * _p)
_pattern("smem_broadcast", 2, 128, (1, 32, 1, 0, 1, 0, 0, 0, 1, 0), _TOTAL, 512)
# seed 003 Ex. 4: sm[2*tid + i]; its fix: sm[tid + 128*i]; out[i*total + gtid]
_pattern("smem_interleave2", 2, 128, (2, 64, 2, 1, 2, 64, 2, 1, 1, _TOTAL), 2 * _TOTAL, 1024)
_pattern("smem_blocked2", 2, 128, (2, 32, 1, 128, 2, 32, 1, 128, 1, _TOTAL), 2 * _TOTAL, 1024)

for _kind, (_dt, _vec) in _sh.ELEM_KINDS.items():
    _add(Micro(
        f"smem_elem_{_kind}", "micro_shared", (lambda k=_kind: _sh.elem(k)), (2,), (128,),
        (lambda dt=_dt, v=_vec: (np.zeros(_TOTAL * v, dt.np_dtype),)),
        (lambda a, k=_kind: {"out": _sh.elem_ref(k, _TOTAL)}),
        128 * _dt.size * _vec))


def _reduce_in():
    i = np.arange(1024, dtype=np.uint32)
    return ((i * np.uint32(2654435761)) >> np.uint32(20)).astype(np.float32) % np.float32(16)


for _v in ("interleaved", "interleaved_strided", "sequential"):
    _add(Micro(
        f"smem_reduce_{_v}", "micro_shared", (lambda v=_v: _sh.reduce(v)), (4,), (256,),
        lambda: (_reduce_in(), np.zeros(4, np.float32)),
        lambda a: {"out": _sh.reduce_ref(a[0])}, 1024))


def _transpose_in():
    return (np.arange(64 * 64, dtype=np.float32) * np.float32(0.37) - np.float32(100.0)).astype(np.float32)


for _p, _n in ((32, "naive"), (33, "padded")):
    _add(Micro(
        f"smem_transpose_{_n}", "micro_shared", _sh.transpose, (2, 2), (32, 8),
        (lambda p=_p: (_transpose_in(), np.zeros(64 * 64, np.float32), 64, 64, p)),
        lambda a: {"out": a[0].reshape(64, 64).T.reshape(-1)}, 4 * 32 * _p))

for _a in (0, 1, 32):
    _add(Micro(
        f"smem_pred_active{_a}", "micro_shared", _sh.pred_lanes, (2,), (128,),
        (lambda a=_a: (np.zeros(_TOTAL, np.float32), a)),
        (lambda args, a=_a: {"out": _sh.pred_ref(_TOTAL, a)}), 512))


# ---------------------------------------------------------------- micro_global
def _glob_f32_entry(prefix, pat):
    load = prefix == "glob_ld_"
    w, b, c, m = _glob.PATTERNS[pat]
    block = 48 if pat == "partial48" else 128
    total = 4 * block

    def args():
        return (_glob.input_f32(), np.full(_glob.BUF_BYTES // 4, -1.0, np.float32), int(load), w, b, c, m)

    def ref(a):
        g = np.arange(total)
        idx = _glob.pattern_index(g, w, b, c, m)
        out = a[1].copy()
        if load:
            out[g] = a[0][idx]
        else:
            out[idx] = idx.astype(np.float32) + np.float32(0.5)
        return {"out": out}

    _add(Micro(prefix + pat, "micro_global", _glob.glob_f32, (4,), (block,), args, ref, 0))


def _glob_elem_entry(prefix, kind):
    load = prefix == "glob_ld_"
    dt, vec = _sh.ELEM_KINDS[kind]
    total = 4 * 128

    def args():
        n = _glob.BUF_BYTES // (dt.size * vec)
        return (_glob.input_elem(kind), np.zeros(total, np.float32), np.zeros(n * vec, dt.np_dtype), int(load))

    def ref(a):
        if load:
            return {"out_f": _glob.elem_load_ref(kind, a[0], total), "out": a[2]}
        out = a[2].copy()
        out[: total * vec] = _sh.elem_ref(kind, total)
        return {"out": out, "out_f": a[1]}

    _add(Micro(prefix + "elem_" + kind, "micro_global", (lambda k=kind: _glob.glob_elem(k)), (4,), (128,),
               args, ref, 0))


for _prefix in ("glob_ld_", "glob_st_"):
    for _pat in ("stride1", "stride2", "stride4", "stride8", "stride32", "offset1", "offset4", "offset16"):
        _glob_f32_entry(_prefix, _pat)
    for _kind in ("1B_char", "2B_short", "8B_float2", "8B_double", "16B_float4"):
        _glob_elem_entry(_prefix, _kind)
    for _pat in ("broadcast", "perm128", "partial48"):
        _glob_f32_entry(_prefix, _pat)


# ---------------------------------------------------------------- micro_divergence
for _k in _div.KINDS:
    _n = 200 if _k == "div_early_return" else 256
    _add(Micro(
        _k, "micro_divergence", (lambda k=_k: _div.divergence(k)), (2,), (128,),
        (lambda n=_n: (_div.input_u32(256), np.full(256, 0xFFFFFFFF, np.uint32), 4, n)),
        (lambda a, k=_k: {"out": _div.reference(k, a[0], a[2], a[3])}), 0))


def groups() -> dict[tuple, list[str]]:
    """Registry names grouped by (DSL kernel, block shape): each group is one compiled machine."""
    out: dict[tuple, list[str]] = {}
    for name, m in REGISTRY.items():
        out.setdefault((m.factory().name, m.block), []).append(name)
    return out


__all__ = ["Micro", "REGISTRY", "groups"]
