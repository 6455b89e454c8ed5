"""Shared loads of consecutive elements merged into vector loads, as ptxas does (jaxsimt/ptx/vectorize.py): where
it merges (an aligned address proven by the known-zero-bits data flow, nothing in between that could see the
difference), that results stay bit for bit the same, and that the GEMM ladder's PTX then counts the shared load
instructions and wavefronts the H200 counts."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt import types as T
from jaxsimt.kernels.collection import GEMM_ENTRIES, PTX
from jaxsimt.ptx import vectorize

lower_mod = importlib.import_module("jaxsimt.ptx.lower")

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .f32 %f<40>;
  .reg .f64 %fd<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  .reg .pred %p<3>;
  .shared .align 16 .b8 S[4096];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r3, S;
  // the first 128 words of S hold their index: S[i] = i
  shl.b32 %r9, %r1, 2;
  add.s32 %r10, %r3, %r9;
  cvt.rn.f32.u32 %f30, %r1;
  st.shared.f32 [%r10], %f30;
  add.s32 %r11, %r1, 32;
  cvt.rn.f32.u32 %f31, %r11;
  st.shared.f32 [%r10+128], %f31;
  add.s32 %r11, %r1, 64;
  cvt.rn.f32.u32 %f31, %r11;
  st.shared.f32 [%r10+256], %f31;
  add.s32 %r11, %r1, 96;
  cvt.rn.f32.u32 %f31, %r11;
  st.shared.f32 [%r10+384], %f31;
  bar.sync 0;
"""
TAIL = """  // out[tid * 4 + j] = %f1..%f4
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
  st.global.f32 [%rd3+4], %f2;
  st.global.f32 [%rd3+8], %f3;
  st.global.f32 [%rd3+12], %f4;
  ret;
}
"""


def kernel(address: str, loads: str) -> str:
    """A kernel whose thread t loads four floats from shared memory at an address computed by `address` (into
    %r4) with the loads `loads` (into %f1..%f4) and stores them to out[4t..4t+3]."""
    return HEAD + address + loads + TAIL


FOUR = """  ld.shared.f32 %f1, [%r4];
  ld.shared.f32 %f2, [%r4+4];
  ld.shared.f32 %f3, [%r4+8];
  ld.shared.f32 %f4, [%r4+12];
"""
ALIGNED = "  shl.b32 %r2, %r1, 4;\n  add.s32 %r4, %r3, %r2;\n"  # S + 16 t
PAIRS = "  shl.b32 %r2, %r1, 3;\n  add.s32 %r4, %r3, %r2;\n"  # S + 8 t: 8-byte aligned only
UNALIGNED = "  shl.b32 %r2, %r1, 2;\n  add.s32 %r4, %r3, %r2;\n"  # S + 4 t


def shared_loads(ptx: str, **kw) -> list:
    """The vector width of every shared load of kernel k, in program order."""
    prog = lower_mod.lower(P.parse(ptx), "k", **kw)
    return [i.operation.attr("vec") for b in prog.blocks for i in b.instrs
            if i.operation.attr("space") == "shared" and i.operation.dst]


def run(ptx: str, **kw):
    out = np.zeros(32 * 4, np.float32)
    r = P.launch(ptx, "k", 1, 32, [out], **kw)
    return r.outputs[r.program.params[0].name].view(np.float32), r.stats


def expected(word_of_thread) -> np.ndarray:
    t = np.arange(32)[:, None]
    return (word_of_thread(t) + np.arange(4)[None, :]).astype(np.float32).reshape(-1)


WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
INSTRUCTIONS = "smsp__inst_executed.sum"


@pytest.mark.parametrize("address, widths, words, wavefronts", [
    # lane t reads words 4t..4t+3: one 16-byte load per lane, 512 B: 4 wavefronts (scalar: 4-way conflicts, 4 x 4)
    (ALIGNED, [4], lambda t: 4 * t, (4, 16)),
    # words 2t..2t+3: two 8-byte loads, 256 B each (scalar: 2-way conflicts)
    (PAIRS, [2, 2], lambda t: 2 * t, (4, 8)),
    (UNALIGNED, [1, 1, 1, 1], lambda t: t, (4, 4)),
])
def test_merges_only_what_the_alignment_allows_and_loads_the_same_words(address, widths, words, wavefronts):
    ptx = kernel(address, FOUR)
    assert shared_loads(ptx) == widths
    assert shared_loads(ptx, vectorize_loads=False) == [1, 1, 1, 1]
    got, stats = run(ptx)
    kept, kept_stats = run(ptx, vectorize_loads=False)
    np.testing.assert_array_equal(got, expected(words))
    np.testing.assert_array_equal(kept, got)
    assert kept_stats[INSTRUCTIONS] - stats[INSTRUCTIONS] == 4 - len(widths)
    assert (stats[WAVEFRONTS], kept_stats[WAVEFRONTS]) == wavefronts


def test_a_store_between_the_loads_keeps_them():
    loads = FOUR.replace("  ld.shared.f32 %f3,", "  st.shared.f32 [%r10+1024], %f30;\n  ld.shared.f32 %f3,")
    # the pairs on either side of the store are merged, no group spans it
    assert shared_loads(kernel(ALIGNED, loads)) == [2, 2]


def test_a_result_register_read_before_its_load_keeps_the_group():
    # %f3 is read (its old value) before its own load: loading it early would change what the add reads
    loads = ("  mov.f32 %f3, 0f40000000;\n  ld.shared.f32 %f1, [%r4];\n  ld.shared.f32 %f2, [%r4+4];\n"
             "  add.f32 %f20, %f3, %f3;\n  ld.shared.f32 %f3, [%r4+8];\n  ld.shared.f32 %f4, [%r4+12];\n"
             "  add.f32 %f4, %f4, %f20;\n  sub.f32 %f4, %f4, %f20;\n")
    ptx = kernel(ALIGNED, loads)
    assert shared_loads(ptx) == [2, 2]
    got, _ = run(ptx)
    np.testing.assert_array_equal(got, run(ptx, vectorize_loads=False)[0])


def test_an_address_register_written_between_the_loads_keeps_them():
    loads = ("  ld.shared.f32 %f1, [%r4];\n  ld.shared.f32 %f2, [%r4+4];\n  add.s32 %r4, %r4, 0;\n"
             "  ld.shared.f32 %f3, [%r4+8];\n  ld.shared.f32 %f4, [%r4+12];\n")
    assert shared_loads(kernel(ALIGNED, loads)) == [2, 2]


def test_predicated_loads_are_not_merged():
    loads = "  setp.lt.u32 %p1, %r1, 64;\n" + "".join("  @%p1 " + ln.strip() + "\n" for ln in FOUR.splitlines())
    assert shared_loads(kernel(ALIGNED, loads)) == [1, 1, 1, 1]


def test_loads_out_of_order_and_interleaved_are_merged_at_the_first():
    loads = ("  ld.shared.f32 %f3, [%r4+8];\n  mul.f32 %f20, %f3, %f3;\n  ld.shared.f32 %f1, [%r4];\n"
             "  ld.shared.f32 %f4, [%r4+12];\n  ld.shared.f32 %f2, [%r4+4];\n")
    ptx = kernel(ALIGNED, loads)
    assert shared_loads(ptx) == [4]
    np.testing.assert_array_equal(run(ptx)[0], expected(lambda t: 4 * t))


def test_known_low_zeros_hold_for_every_lane():
    """The data flow's known zero low bits of address arithmetic, against the values the lanes compute."""
    exprs = {  # register: its definition (tid in %r1)
        "%r5": "mul.lo.s32 %r5, %r1, 48;",
        "%r6": "mad.lo.s32 %r6, %r1, 24, %r5;",
        "%r7": "shl.b32 %r7, %r6, 2;",
        "%r8": "and.b32 %r8, %r1, -16;",
        "%r12": "add.s32 %r12, %r7, 80;",
        "%r13": "or.b32 %r13, %r12, %r8;",
    }
    body = "\n".join("  " + e for e in exprs.values())
    stores = "\n".join(f"  st.global.u32 [%rd3+{4 * k}], {r};" for k, r in enumerate(exprs))
    ptx = (HEAD + body + "\n  mul.wide.u32 %rd2, %r1, 32;\n  add.s64 %rd3, %rd1, %rd2;\n" + stores
           + "\n  ret;\n}\n")
    prog = lower_mod.lower(P.parse(ptx), "k")
    zeros = vectorize.known_low_zeros([[None, b.instrs, None] for b in prog.blocks])
    out = np.zeros(32 * 8, np.uint32)
    r = P.launch(ptx, "k", 1, 32, [out])
    vals = r.outputs[r.program.params[0].name].view(np.uint32).reshape(32, 8)
    written = [i.operation.src[1] for b in prog.blocks for i in b.instrs
               if i.operation.attr("space") == "global" and i.operation.src[1:]]
    predicted = [zeros[reg.index] for reg in written]
    # 48 t: 4; 24 t + 48 t: min(3, 4); << 2: 5; & -16: 4; + 80 (16 * 5): min(5, 4); | : min(4, 4)
    assert predicted == [4, 3, 5, 4, 4, 4]
    for k, z in enumerate(predicted):
        v = vals[:, k].astype(np.int64)
        assert np.all(v % (1 << z) == 0), (k, z, v)


# ---------------------------------------------------------------------- the GEMM ladder's PTX against the H200

@pytest.mark.parametrize("rung", ["smem_tiled", "coarsened", "register_tiled"])
def test_ladder_ptx_counts_the_h200s_shared_wavefronts(rung):
    """nvcc's PTX of the shared-memory rungs at 64^3 counts the memory counters derived by hand from the access
    patterns (`test_gemm_ladder.hand_counters`, which equal the H200's at 256^3): with the PTX's scalar loads
    the shared load wavefronts were more (As[ty][k..k+3] as four loads: smem_tiled 16 + 4 x 4 per tile where the
    H200 serves 16 + 4 x 2)."""
    from test_gemm_ladder import METRICS, hand_counters
    from jaxsimt.kernels.collection import CASES, launch
    r, _ = launch(next(c for c in CASES if c.name == f"gemm_{rung}@64x64x64"))
    assert {m: int(r.stats[m]) for m in METRICS} == hand_counters(rung, 64, 64, 64)


LADDER = {  # rung: shared load instructions the H200 executes at 256^3 (ncu smsp__inst_executed_op_shared_ld.sum)
    "smem_tiled": 655360, "coarsened": 327680, "register_tiled": 65536}


@pytest.mark.parametrize("rung", sorted(LADDER))
def test_ladder_ptx_merges_the_loads_ptxas_merged(rung):
    """The static shape of each rung's inner loop after the merge gives the H200's count of shared load
    instructions at 256^3: per warp, the loop's loads per k times K."""
    mod = P.load_module(f"{PTX}/gemm_ladder.ptx")
    prog = lower_mod.lower(mod, GEMM_ENTRIES[rung])
    widths = [i.operation.attr("vec") for b in prog.blocks for i in b.instrs
              if i.operation.attr("space") == "shared" and i.operation.dst]
    # each rung's k loop holds all its shared loads: instructions per k-step, the k-steps its body covers
    covers = {"smem_tiled": 16, "coarsened": 4, "register_tiled": 8}[rung]
    warps = {"smem_tiled": 256 * 256 // 32, "coarsened": 256 * 256 // 128, "register_tiled": 256 * 256 // 512}[rung]
    per_k = len(widths) / covers
    assert warps * per_k * 256 == LADDER[rung]


def test_volatile_loads_are_not_merged():
    loads = FOUR.replace("ld.shared.f32", "ld.volatile.shared.f32")
    assert shared_loads(kernel(ALIGNED, loads)) == [1, 1, 1, 1]


# ---------------------------------------------------------------------- every kernel with SASS: where ptxas merged

SASS_OF = {  # PTX module -> the SASS ptxas made of it (cuobjdump, committed with the H200 fixtures)
    "kernels/ptx/micro_shared.ptx": "data/h200/sass/micro_shared.sass",
    "kernels/ptx/gemm_ladder.ptx": "data/h200/sass/gemm_ladder.sass",
    "kernels/ptx/real_cuda.ptx": "data/h200/real_cuda/real_cuda.sass",
    **{f"kernels/suites/{s}.ptx": f"data/h200/suites/sass/{s}.sass.gz"
       for s in ("cuda_samples", "rodinia", "polybench", "parboil", "shoc")},
}


def _sass_wide_loads(path: str) -> dict:
    """{kernel: LDS.64 and LDS.128 instructions in its SASS}."""
    import gzip
    import re
    text = gzip.open(path, "rt").read() if path.endswith(".gz") else open(path).read()
    out, fn = {}, None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            fn = m.group(1)
            out[fn] = 0
        elif fn and re.search(r"\bLDS\.(64|128)\b", line):
            out[fn] += 1
    return out


def test_merges_where_ptxas_merged_across_every_kernel_with_sass():
    """Over the micro-kernels, the GEMM ladder, the real-CUDA programs and the suite corpus (142 kernels): a
    kernel gets vector loads from the merge exactly when its SASS has LDS.64/LDS.128 that its PTX's own wide
    shared loads (`ld.shared.v2/.v4`, 64-bit types) do not account for."""
    import os
    # the repository's files: the SASS listings are not installed with the package
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jaxsimt")
    merged, wide = set(), set()
    n = 0
    for ptx, sass in SASS_OF.items():
        mod = P.load_module(os.path.join(root, ptx))
        in_sass = _sass_wide_loads(os.path.join(root, sass))
        for e in mod.entries:
            n += 1
            on = lower_mod.lower(mod, e.name)
            off = lower_mod.lower(mod, e.name, vectorize_loads=False)
            loads = lambda p: [i.operation for b in p.blocks for i in b.instrs  # noqa: E731
                               if i.operation.attr("space") == "shared" and i.operation.dst
                               and i.operation.attr("vec") is not None]
            own_wide = sum(1 for o in loads(off) if o.attr("vec") > 1 or T.BY_NAME[o.attr("type")].size >= 8)
            if len(loads(on)) < len(loads(off)):
                merged.add(e.name)
            if in_sass.get(e.name, 0) and not own_wide:
                wide.add(e.name)
    assert n >= 140
    assert merged == wide, (sorted(merged - wide), sorted(wide - merged))
    assert {"_Z15gemm_smem_tiledPKfS0_Pfiii", "matrixMul_bs16", "lud_internal", "bitonicSortShared1",
            "mysgemmNT"} <= merged
