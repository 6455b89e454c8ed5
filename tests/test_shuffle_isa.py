"""Warp shuffles against a scalar model of the PTX ISA's shfl.sync pseudo-code: every mode, every CUDA
width (1..32) and every offset 0..33, in the DSL (`js.shfl*_sync(..., width)`) and in PTX (raw `c`
operands, CUDA's and others)."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, s32
from jaxsimt.ptx import launch as ptx_launch

MODES = ("up", "down", "bfly", "idx")
WIDTHS = (1, 2, 4, 8, 16, 32)
OFFSETS = tuple(range(34))  # 32 and 33: only b's low 5 bits count


def isa_shfl(a, mode, b, c):
    """The ISA pseudo-code, one lane at a time: a [32]; returns (d [32], p [32] bool)."""
    d, p = np.empty_like(a), np.zeros(32, bool)
    bval, cval, mask = b & 31, c & 31, (c >> 8) & 31
    for lane in range(32):
        max_lane = (lane & mask) | (cval & ~mask & 31)
        min_lane = lane & mask
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~mask & 31)
            ok = j <= max_lane
        d[lane], p[lane] = a[j if ok else lane], ok
    return d, p


def cuda_c(mode, width):
    """The `c` that CUDA's __shfl*_sync passes for `width`."""
    return ((32 - width) << 8) | (0 if mode == "up" else 31)


def _dsl_kernel(fn):
    @js.kernel
    def shuffle(x: Ptr[s32], out: Ptr[s32]):
        blk = js.blockIdx.x
        g = blk * 32 + js.threadIdx.x
        width = js.var(1)
        for k in range(1, len(WIDTHS)):  # width = 1 << (blk % 6), built from selects
            width.set(js.where(blk % len(WIDTHS) == k, 1 << k, width))
        out[g] = fn(x[g], blk // len(WIDTHS), width)
    return shuffle


DSL = {"up": js.shfl_up_sync, "down": js.shfl_down_sync, "bfly": js.shfl_xor_sync, "idx": js.shfl_sync}


def _cases():
    return [(w, b) for b in OFFSETS for w in WIDTHS]  # block k: width WIDTHS[k % 6], offset k // 6


@pytest.mark.parametrize("mode", MODES)
def test_dsl_shuffles_match_the_isa(mode):
    cases = _cases()
    x = (np.arange(32 * len(cases)) * 7 + 3).astype(np.int32)
    r = js.launch(_dsl_kernel(DSL[mode]), len(cases), 32, (x, np.zeros_like(x)))
    for k, (w, b) in enumerate(cases):
        want, _ = isa_shfl(x[32 * k:32 * k + 32], mode, b, cuda_c(mode, w))
        np.testing.assert_array_equal(r["out"][32 * k:32 * k + 32], want, err_msg=f"{mode} width={w} b={b}")


def test_xor_across_a_segment_reads_the_lower_half():
    """__shfl_xor_sync(v, 8, 8) in lanes 8-15 returns lanes 0-7 (bfly tests j <= maxLane only)."""
    @js.kernel
    def k(x: Ptr[s32], out: Ptr[s32]):
        t = js.threadIdx.x
        out[t] = js.shfl_xor_sync(x[t], 8, width=8)

    x = np.arange(32, dtype=np.int32) + 100
    out = js.launch(k, 1, 32, (x, np.zeros_like(x)))["out"]
    np.testing.assert_array_equal(out[8:16], x[0:8])
    np.testing.assert_array_equal(out[0:8], x[0:8])  # lane ^ 8 = 8..15 > maxLane 7: own value


PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry shfl_all(.param .u64 px, .param .u64 pb, .param .u64 pc, .param .u64 pout, .param .u64 ppred)
{
    .reg .pred %p<5>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<20>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u64 %rd4, [pout];
    ld.param.u64 %rd5, [ppred];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mad.lo.u32 %r3, %r1, 32, %r2;
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd1, %rd6;
    ld.global.u32 %r4, [%rd7];
    mul.wide.u32 %rd8, %r1, 4;
    add.s64 %rd9, %rd2, %rd8;
    ld.global.u32 %r5, [%rd9];
    add.s64 %rd10, %rd3, %rd8;
    ld.global.u32 %r6, [%rd10];
    shfl.sync.up.b32 %r7|%p1, %r4, %r5, %r6, -1;
    shfl.sync.down.b32 %r8|%p2, %r4, %r5, %r6, -1;
    shfl.sync.bfly.b32 %r9|%p3, %r4, %r5, %r6, -1;
    shfl.sync.idx.b32 %r10|%p4, %r4, %r5, %r6, -1;
    mul.wide.u32 %rd11, %r3, 16;
    add.s64 %rd12, %rd4, %rd11;
    st.global.u32 [%rd12], %r7;
    st.global.u32 [%rd12+4], %r8;
    st.global.u32 [%rd12+8], %r9;
    st.global.u32 [%rd12+12], %r10;
    selp.u32 %r11, 1, 0, %p1;
    selp.u32 %r12, 1, 0, %p2;
    selp.u32 %r13, 1, 0, %p3;
    selp.u32 %r14, 1, 0, %p4;
    add.s64 %rd13, %rd5, %rd11;
    st.global.u32 [%rd13], %r11;
    st.global.u32 [%rd13+4], %r12;
    st.global.u32 [%rd13+8], %r13;
    st.global.u32 [%rd13+12], %r14;
    ret;
}
"""


def test_ptx_shuffles_match_the_isa():
    rng = np.random.default_rng(0)
    # CUDA's controls for every width (up's and the others'), then arbitrary clamp/segment-mask pairs
    cs = sorted({cuda_c(m, w) for m in ("up", "down") for w in WIDTHS})
    cs += [int(v) for v in rng.integers(0, 1 << 13, 8)]
    cases = [(b, c) for c in cs for b in OFFSETS]
    x = rng.integers(-2**31, 2**31, 32 * len(cases)).astype(np.int64).astype(np.uint32)
    bs = np.array([b for b, _ in cases], np.uint32)
    cv = np.array([c for _, c in cases], np.uint32)
    n = 32 * len(cases)
    r = ptx_launch(PTX, "shfl_all", len(cases), 32,
                   (x, bs, cv, np.zeros(4 * n, np.uint32), np.zeros(4 * n, np.uint32)))
    out, pred = r["pout"].reshape(n, 4), r["ppred"].reshape(n, 4)
    for k, (b, c) in enumerate(cases):
        for mi, mode in enumerate(MODES):
            want, wp = isa_shfl(x[32 * k:32 * k + 32], mode, b, c)
            np.testing.assert_array_equal(out[32 * k:32 * k + 32, mi], want, err_msg=f"{mode} b={b} c={c:#x}")
            np.testing.assert_array_equal(pred[32 * k:32 * k + 32, mi], wp, err_msg=f"{mode} b={b} c={c:#x}")
