"""32-bit shared and local addresses wrap modulo 2^32 before the bounds check, as the hardware's 32-bit
address arithmetic does (a Rodinia-style `[%r+4]` with %r = base - 4 reads byte base)."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.ptx import launch

HEAD = """
.version 8.0
.target sm_90
.address_size 64
"""

SHARED = HEAD + """
.visible .entry wrap(.param .u64 pout, .param .u32 pk)
{
    .reg .b32 %r<10>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b8 buf[64];
    ld.param.u64 %rd1, [pout];
    ld.param.u32 %r9, [pk];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    cvt.rn.f32.u32 %f1, %r1;
    st.shared.f32 [%r4], %f1;
    bar.sync 0;
    mov.u32 %r5, 8;
    ld.shared.f32 %f2, [%r5+-4];
    sub.s32 %r6, %r4, %r9;
    ld.shared.f32 %f3, [%r6+4];
    add.f32 %f2, %f2, %f3;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.f32 [%rd2], %f2;
    ret;
}
"""

LOCAL = HEAD + """
.visible .entry wrap_local(.param .u64 pout)
{
    .reg .b32 %r<10>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    .local .align 4 .b8 frame[16];
    ld.param.u64 %rd1, [pout];
    mov.u32 %r1, %tid.x;
    cvt.rn.f32.u32 %f1, %r1;
    mov.u32 %r2, frame;
    st.local.f32 [%r2], %f1;
    add.s32 %r3, %r2, -8;
    ld.local.f32 %f2, [%r3+8];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.f32 [%rd2], %f2;
    ret;
}
"""


def test_negative_offset_from_a_32_bit_shared_address():
    # [%r5+-4] with %r5 = 8 is byte 4; [%r6+4] with %r6 = &buf[t] - 4 wraps below 0 for t = 0 and back
    out = launch(SHARED, "wrap", 1, 16, (np.zeros(16, np.float32), 4))["pout"]
    np.testing.assert_array_equal(out, np.arange(16) + 1.0)


def test_wrapped_address_still_out_of_bounds_faults_at_the_wrapped_address():
    # the address derives from `buf` (jaxsimt.ptx.provenance): reported as buf's byte 0xfffffffc
    with pytest.raises(js.MemoryFault, match=r"out-of-bounds shared load of 'buf' at byte offset 4294967292 "):
        launch(SHARED, "wrap", 1, 16, (np.zeros(16, np.float32), 8))


def test_negative_offset_from_a_32_bit_local_address():
    out = launch(LOCAL, "wrap_local", 1, 32, (np.zeros(32, np.float32),))["pout"]
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32))
