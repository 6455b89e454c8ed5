"""Every kernel of kernels/cuda/*.cu, compiled by nvcc (`kernels/ptx/regen.sh`: nvcc -arch=sm_90 -O3 -ptx),
runs through `jaxsimt.ptx.launch` with the H200 collection's launch configuration and equals its numpy
reference; the micro-kernels' memory counters equal the H200 fixture exactly; mma_truth's kernels give
the H200's bits on the committed Tensor Core fixture (jaxsimt/data/h200/mma).

The registry `CASES` is the single list of launches. Cases that share a PTX entry, block shape, argument
sizes and dynamic shared memory share one compiled machine (the smem_stride family runs with the largest
stride's dynamic shared memory: the counters depend only on the addresses, which start at 0 either way).
Run `python tests/test_ptx_cuda.py` for the counter agreement table over every micro-kernel.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import jaxsimt.ptx as P

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PTX = os.path.join(ROOT, "kernels", "ptx")
sys.path.insert(0, ROOT)

EXACT = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")


@dataclass
class Case:
    name: str  # the H200 registry name (fixture kernel) or a descriptive one
    program: str  # kernels/ptx/<program>.ptx
    entry: str
    grid: tuple
    block: tuple
    args: Callable[[], list]
    check: Callable  # (result, args) -> None, asserts
    dyn: int = 0
    fixture: bool = False  # compare the memory counters with the H200's
    slow: bool = False
    kw: dict = field(default_factory=dict)


CASES: list[Case] = []


def add(*a, **k):
    CASES.append(Case(*a, **k))


def _u32(x):
    return np.asarray(x, np.uint64) & 0xFFFFFFFF


def hash32(i):
    x = _u32(i)
    x ^= x >> 16
    x = _u32(x * 0x7FEB352D)
    x ^= x >> 15
    x = _u32(x * 0x846CA68B)
    x ^= x >> 16
    return x.astype(np.uint32)


def hash_float(i, seed):
    h = hash32(_u32(np.asarray(i, np.uint64) * 2654435761 + seed))
    return ((h >> 16).astype(np.int64) - 32768).astype(np.float32) / np.float32(32768.0)


# ---------------------------------------------------------------------------------------- make_val<T>
_STRUCT = {"MyType": np.dtype([("f", "<f4"), ("c", "<i4")])}
# T -> (mangled name, numpy element dtype of the array passed, components per element, size in bytes)
TYPES = {"float": ("f", np.float32, 1, 4), "char": ("a", np.int8, 1, 1), "short": ("s", np.int16, 1, 2),
         "double": ("d", np.float64, 1, 8), "float2": ("6float2", np.float32, 2, 8),
         "float4": ("6float4", np.float32, 4, 16), "Vec3": ("4Vec3", np.float32, 3, 12),
         "MyType": ("6MyType", np.float32, 2, 8)}


def make_val(T, i) -> np.ndarray:
    """make_val<T>(i) of micro_shared.cu / micro_global.cu: bytes [len(i), sizeof(T)]."""
    i = np.asarray(i, np.int64)
    f = np.float32
    if T == "float":
        v = i.astype(f) + f(0.5)
    elif T == "char":
        v = ((i * 7 + 1) & 0xFF).astype(np.uint8).view(np.int8)
    elif T == "short":
        v = ((i * 3 + 1) & 0xFFFF).astype(np.uint16).view(np.int16)
    elif T == "double":
        v = i.astype(np.float64) + 0.25
    elif T == "float2":
        x = i.astype(f) + f(0.5)
        v = np.stack([x, -x], 1)
    elif T == "float4":
        x = i.astype(f)
        v = np.stack([x, x + f(0.25), x + f(0.5), x + f(0.75)], 1)
    elif T == "Vec3":
        x = i.astype(f)
        v = np.stack([x, f(2) * x, f(3) * x], 1)
    else:
        v = np.zeros(i.shape, _STRUCT["MyType"])
        v["f"], v["c"] = i.astype(f) + f(0.5), (i * 3).astype(np.int32)
    return np.ascontiguousarray(v).view(np.uint8).reshape(i.size, -1)


def bytes_of(a):
    return np.ascontiguousarray(a).view(np.uint8).reshape(-1)


# ---------------------------------------------------------------------------------------- micro_shared
# pattern -> (NST, NLD, BLOCK, st(tid, i, p), ld(tid, i, p), elems(p))
PATTERNS = {
    "PStride": (1, 1, 128, lambda t, i, p: (t >> 5) * 32 * p + (t & 31) * p, None, lambda p: 128 * p),
    "PUnit": (1, 1, 128, lambda t, i, p: t, None, lambda p: 128),
    "PBroadcast": (1, 1, 128, lambda t, i, p: t, lambda t, i, p: 0 * t, lambda p: 128),
    "PTileRow": (1, 1, 1024, lambda t, i, p: (t >> 5) * p + (t & 31), None, lambda p: 32 * p),
    "PTileCol": (1, 1, 1024, lambda t, i, p: (t >> 5) * p + (t & 31), lambda t, i, p: (t & 31) * p + (t >> 5),
                 lambda p: 32 * p),
    "PInterleave2": (2, 2, 128, lambda t, i, p: 2 * t + i, None, lambda p: 256),
    "PBlocked2": (2, 2, 128, lambda t, i, p: t + i * 128, None, lambda p: 256),
}


def pattern_case(name, T, pat, p, slow=False, dyn=None):
    nst, nld, block, st, ld, elems = PATTERNS[pat]
    ld = ld or st
    mangled, npdt, comps, size = TYPES[T]
    grid, total = 2, 2 * block
    entry = f"_Z12smem_patternI{mangled}{len(pat)}{pat}EvPT_i"

    def args():
        return [np.zeros(nld * total * comps, npdt), p]

    def check(r, a):
        out = np.zeros((nld * total, size), np.uint8)
        t = np.arange(block)
        for b in range(grid):
            src = np.full(elems(p), -1, np.int64)
            for i in range(nst):
                src[st(t, i, p)] = (b * block + t) * nst + i
            for i in range(nld):
                out[i * total + b * block + t] = make_val(T, src[ld(t, i, p)])
        np.testing.assert_array_equal(bytes_of(r.outputs[r.program.params[0].name]), out.reshape(-1))

    add(name, "micro_shared", entry, (grid,), (block,), args, check, dyn if dyn is not None else elems(p) * size,
        fixture=True, slow=slow)


for _s in range(1, 34):
    pattern_case(f"smem_stride_s{_s}", "float", "PStride", _s, slow=_s not in (1, 2, 32, 33), dyn=33 * 512)
for _k, _T in (("1B_char", "char"), ("2B_short", "short"), ("4B_float", "float"), ("8B_float2", "float2"),
               ("8B_double", "double"), ("16B_float4", "float4")):
    pattern_case(f"smem_elem_{_k}", _T, "PUnit", 0, slow=True)
pattern_case("smem_struct_vec3", "Vec3", "PUnit", 0, slow=True)
pattern_case("smem_struct_mytype", "MyType", "PUnit", 0, slow=True)
for _p, _suf in ((32, ""), (33, "_pad")):
    pattern_case(f"smem_tile_row{_suf}", "float", "PTileRow", _p, slow=True, dyn=4224)
    pattern_case(f"smem_tile_col{_suf}", "float", "PTileCol", _p, slow=True, dyn=4224)
pattern_case("smem_broadcast", "float", "PBroadcast", 0, slow=True)
pattern_case("smem_interleave2", "float", "PInterleave2", 0, slow=True)
pattern_case("smem_blocked2", "float", "PBlocked2", 0, slow=True)


def _member(name, entry, ref):
    add(name, "micro_shared", entry, (2,), (128,), lambda: [np.zeros(256, np.float32)],
        lambda r, a: np.testing.assert_array_equal(r.outputs[r.program.params[0].name], ref(np.arange(256))),
        fixture=True, slow=True)


_member("smem_struct_vec3_x", "_Z18smem_struct_vec3_xPf", lambda g: g.astype(np.float32))
_member("smem_struct_mytype_f", "_Z20smem_struct_mytype_fPf", lambda g: g.astype(np.float32) + np.float32(0.5))

for _v, _e in (("interleaved", "_Z23smem_reduce_interleavedPKfPf"),
               ("interleaved_strided", "_Z31smem_reduce_interleaved_stridedPKfPf"),
               ("sequential", "_Z22smem_reduce_sequentialPKfPf")):
    add(f"smem_reduce_{_v}", "micro_shared", _e, (4,), (256,),
        lambda: [(hash32(np.arange(1024)) % 16).astype(np.float32), np.zeros(4, np.float32)],
        lambda r, a: np.testing.assert_array_equal(r.outputs[r.program.params[1].name],
                                                   a[0].reshape(4, 256).sum(1, dtype=np.float32)),
        fixture=True, slow=True)

for _p, _n in ((32, "naive"), (33, "padded")):
    add(f"smem_transpose_{_n}", "micro_shared", f"_Z14smem_transposeILi{_p}EEvPKfPfii", (2, 2), (32, 8),
        lambda: [hash_float(np.arange(4096), 11), np.zeros(4096, np.float32), 64, 64],
        lambda r, a: np.testing.assert_array_equal(r.outputs[r.program.params[1].name],
                                                   a[0].reshape(64, 64).T.reshape(-1)),
        fixture=True, slow=True)

for _a in (0, 1, 32):
    add(f"smem_pred_active{_a}", "micro_shared", "_Z15smem_pred_lanesPfi", (2,), (128,),
        (lambda a=_a: [np.zeros(256, np.float32), a]),
        (lambda r, args, a=_a: np.testing.assert_array_equal(
            r.outputs[r.program.params[0].name],
            np.where((np.arange(256) & 31) < a, np.arange(256, dtype=np.float32) + np.float32(0.5), np.float32(-1)))),
        fixture=True, slow=_a == 1)

# ---------------------------------------------------------------------------------------- micro_global
BUF = 1 << 20
GIDX = {"PStride": lambda g, p: g * p, "POffset": lambda g, p: g + p, "PBroadcast": lambda g, p: 0 * g,
        "PPerm128": lambda g, p: (g & ~31) | (((g & 31) * 13 + 5) & 31)}


def to_f(T, x):
    f = np.float32
    if T == "float2":
        return (x[:, 0] + x[:, 1]).astype(f)
    if T == "float4":
        return (((x[:, 0] + x[:, 1]) + x[:, 2]) + x[:, 3]).astype(f)
    return x.reshape(-1).astype(f)


def glob_case(suffix, T, pat, p, block=128, slow=False):
    mangled, npdt, comps, size = TYPES[T]
    total = 4 * block
    g = np.arange(total)
    idx = GIDX[pat](g, p)
    tail = f"{mangled}{len(pat)}{pat}EvPT_"
    inp = (hash_float(np.arange(BUF // 4), 5) + np.float32(1.5)).view(npdt)

    def ld_check(r, a):
        x = a[0].reshape(-1, comps)[idx]
        np.testing.assert_array_equal(r.outputs[r.program.params[1].name], to_f(T, x))

    add("glob_ld_" + suffix, "micro_global", f"_Z9glob_loadI{tail}Pfi", (4,), (block,),
        lambda: [inp.copy(), np.zeros(total, np.float32), p], ld_check, fixture=True, slow=slow)

    def st_check(r, a):
        want = np.full((BUF // size, size), 0xFF, np.uint8)
        want[idx] = make_val(T, idx)
        np.testing.assert_array_equal(bytes_of(r.outputs[r.program.params[0].name]), want.reshape(-1))

    add("glob_st_" + suffix, "micro_global", f"_Z10glob_storeI{tail}i", (4,), (block,),
        lambda: [np.full(BUF, 0xFF, np.uint8).view(npdt), p], st_check, fixture=True, slow=slow)


for _s in (1, 2, 4, 8, 32):
    glob_case(f"stride{_s}", "float", "PStride", _s, slow=_s not in (1, 32))
for _o in (1, 4, 16):
    glob_case(f"offset{_o}", "float", "POffset", _o, slow=True)
for _k, _T in (("1B_char", "char"), ("2B_short", "short"), ("8B_float2", "float2"), ("8B_double", "double"),
               ("16B_float4", "float4")):
    glob_case(f"elem_{_k}", _T, "POffset", 0, slow=True)
glob_case("broadcast", "float", "PBroadcast", 0, slow=True)
glob_case("perm128", "float", "PPerm128", 0, slow=True)
glob_case("partial48", "float", "POffset", 0, block=48, slow=True)

# ---------------------------------------------------------------------------------------- micro_divergence
from kernels.micro import divergence as _div  # noqa: E402

for _k, _e in (("div_none", "_Z8div_nonePKjPjii"), ("div_halfwarp", "_Z12div_halfwarpPKjPjii"),
               ("div_nested", "_Z10div_nestedPKjPjii"), ("div_loop", "_Z8div_loopPKjPjii"),
               ("div_early_return", "_Z16div_early_returnPKjPjii")):
    _n = 200 if _k == "div_early_return" else 256
    add(_k, "micro_divergence", _e, (2,), (128,),
        (lambda n=_n: [hash32(np.arange(256) + 77), np.full(256, 0xFFFFFFFF, np.uint32), 4, n]),
        (lambda r, a, k=_k: np.testing.assert_array_equal(r.outputs[r.program.params[1].name],
                                                          _div.reference(k, a[0], a[2], a[3]))),
        fixture=True, slow=_k != "div_nested")

# ---------------------------------------------------------------------------------------- gemm_ladder
_GEMM = {"naive_uncoalesced": "_Z22gemm_naive_uncoalescedPKfS0_Pfiii",
         "naive_coalesced": "_Z20gemm_naive_coalescedPKfS0_Pfiii", "smem_tiled": "_Z15gemm_smem_tiledPKfS0_Pfiii",
         "coarsened": "_Z14gemm_coarsenedPKfS0_Pfiii", "register_tiled": "_Z19gemm_register_tiledPKfS0_Pfiii",
         "wmma": "_Z9gemm_wmmaPK6__halfS1_Pfiii"}
_CHECKS = {c["kernel"]: c for c in json.load(open(os.path.join(ROOT, "jaxsimt", "data", "h200", "checks.json")))}


def gemm_case(rung, M, N, K, slow):
    cfg = _CHECKS[f"{rung}@{M}x{N}x{K}"]
    half = rung == "wmma"

    def args():
        rng = np.random.default_rng(M * 7 + N * 3 + K)
        A = rng.uniform(-1, 1, (M, K)).astype(np.float16 if half else np.float32)
        B = rng.uniform(-1, 1, (K, N)).astype(np.float16 if half else np.float32)
        return [A, B, np.zeros((M, N), np.float32), M, N, K]

    def check(r, a):
        ref = a[0].astype(np.float64) @ a[1].astype(np.float64)
        np.testing.assert_allclose(r.outputs[r.program.params[2].name], ref, rtol=1e-5, atol=1e-5 * K)

    add(f"gemm_{rung}@{M}x{N}x{K}", "gemm_ladder", _GEMM[rung], tuple(cfg["grid"]), tuple(cfg["block"]), args,
        check, slow=slow)


for _r in _GEMM:
    gemm_case(_r, 33, 65, 17, slow=_r != "wmma")
    gemm_case(_r, 64, 64, 64, slow=True)

# ---------------------------------------------------------------------------------------- mma_truth
_MMA = {  # fixture config -> (kernel KIND, bf16 flag)
    "m16n8k16_f16_f32": (0, 0), "m16n8k16_bf16_f32": (0, 1), "m16n8k16_f16_f16": (1, 0),
    "m16n8k8_f16_f32": (2, 0), "m16n8k8_bf16_f32": (2, 1), "m16n8k8_tf32_f32": (3, 0),
    "wmma_m16n16k16_f16_f32": (4, 0)}
_TRUTH: dict = {}


def truth():
    if not _TRUTH:
        from jaxsimt.mma import fixture
        _TRUTH.update(fixture.load())
    return _TRUTH


def mma_case(cfg, subset, slow):
    kind, bf = _MMA[cfg]

    def pick():
        ts = truth()[cfg]
        n = ts.a.shape[0]
        return np.arange(n) if subset is None else np.r_[0:subset // 2, n - subset // 2:n]

    def args():
        ts, sel = truth()[cfg], pick()
        return [ts.a[sel].reshape(-1), ts.b[sel].reshape(-1), ts.c[sel].reshape(-1), np.zeros_like(ts.d[sel]).reshape(-1),
                len(sel), bf]

    def check(r, a):
        from jaxsimt.mma import fixture
        ts, sel = truth()[cfg], pick()
        sub = fixture.TruthSet(ts.meta, ts.a[sel], ts.b[sel], ts.c[sel], ts.d[sel], ts.category[sel])
        got = r.outputs[r.program.params[3].name].reshape(ts.d[sel].shape)
        bad = fixture.mismatched_tiles(sub, got)
        assert not bad.any(), f"{cfg}: {int(bad.sum())} of {len(sel)} tiles differ from the H200"

    ntiles = 2240 if subset is None else subset
    add(f"mma_truth_{cfg}" + ("_all" if subset is None else ""), "mma_truth",
        f"_Z10mma_kernelILi{kind}EEvPKvS1_S1_Pvii", (-(-ntiles * 32 // 128),), (128,), args, check, slow=slow)


for _c in _MMA:
    mma_case(_c, 16, slow=_c != "m16n8k16_f16_f32")
    mma_case(_c, None, slow=True)

# ---------------------------------------------------------------------------------------- occupancy
for _N, _R in ((5, None), (64, 32), (64, 40), (96, 64), (128, 72), (256, 128), (256, 168), (256, 255)):
    _e = f"_Z8pressureILi{_N}EEvPf" if _R is None else f"_Z15pressure_cappedILi{_N}ELi{_R}EEvPf"

    def _pressure_check(r, a, N=_N):
        v = a[0][:N * 64].reshape(N, 64).astype(np.float64)
        s = np.zeros(64)
        for j in (1, 2):
            for i in range(N):
                s += v[i] * v[(i * j + 7) % N]
        np.testing.assert_allclose(r.outputs[r.program.params[0].name][:64], s, rtol=1e-4, atol=1e-5)

    add(f"pressure<{_N}{'' if _R is None else f',{_R}'}>", "occupancy", _e, (1,), (64,),
        (lambda N=_N: [np.random.default_rng(N).uniform(-1, 1, N * 64).astype(np.float32)]), _pressure_check,
        slow=_N != 5)


# ---------------------------------------------------------------------------------------- running
def launch(case: Case):
    args = case.args()
    r = P.launch(os.path.join(PTX, case.program + ".ptx"), case.entry, case.grid, case.block, args,
                 dynamic_smem=case.dyn, **case.kw)
    return r, args


def counters(case: Case, r):
    from jaxsimt import fixtures
    hw = fixtures.ncu_metrics("h200")[case.name]
    return {m: int(r.stats[m]) for m in EXACT}, {m: int(hw[m]) for m in EXACT}


def _params():
    return [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_cuda_kernel_via_ptx(case):
    r, args = launch(case)
    case.check(r, args)
    if case.fixture:
        got, want = counters(case, r)
        assert got == want


def test_registry_covers_every_kernel():
    from jaxsimt import fixtures
    from kernels.micro import REGISTRY
    names = {c.name for c in CASES}
    assert set(REGISTRY) <= names  # every H200 micro-kernel, with its counters
    assert {c.name for c in CASES if c.fixture} == set(REGISTRY)
    assert set(REGISTRY) <= set(fixtures.ncu_metrics("h200"))
    for prog in ("micro_shared", "micro_global", "micro_divergence", "gemm_ladder", "mma_truth", "occupancy"):
        mod = P.load_module(os.path.join(PTX, prog + ".ptx"))
        used = {c.entry for c in CASES if c.program == prog}
        assert {e.name for e in mod.entries} == used, prog  # every entry of every program is launched


if __name__ == "__main__":  # the agreement table over every micro-kernel (and the outputs' checks)
    ok = 0
    micro = [c for c in CASES if c.fixture]
    for c in micro:
        r, a = launch(c)
        try:
            c.check(r, a)
            out = "ok"
        except AssertionError:
            out = "OUTPUT MISMATCH"
        got, want = counters(c, r)
        diff = {k.split("__")[1][:60]: (got[k], want[k]) for k in EXACT if got[k] != want[k]}
        ok += not diff and out == "ok"
        print(f"{c.name:34s} {out:16s} {'exact' if not diff else diff}", flush=True)
    print(f"{ok} of {len(micro)} micro-kernels: outputs equal the reference and counters equal the H200")
