"""`jaxsimt.ptx.launch` takes the arguments real host code passes: one buffer for two parameters,
`(array, offset)` pointers into a buffer, `constants=` for module variables (cudaMemcpyToSymbol) and
bool arrays."""
import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt.errors import LaunchConfigError

_HEAD = """
.version 8.0
.target sm_90
.address_size 64
"""

_COPY_ADD = _HEAD + """
.visible .entry copy_add(.param .u64 px, .param .u64 py)
{
    .reg .f32 %f<4>;
    .reg .b64 %rd<6>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [py];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.rn.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd5], %f2;
    ld.global.f32 %f3, [%rd4];
    add.rn.f32 %f2, %f2, %f3;
    st.global.f32 [%rd5], %f2;
    ret;
}
"""  # y[i] = x[i] + 1; y[i] += x[i]   (x reloaded after the store)


def test_aliased_pointer_arguments_are_one_buffer():
    x = np.arange(32, dtype=np.float32)
    r = P.launch(_COPY_ADD, "copy_add", 1, 32, [x, x])
    np.testing.assert_array_equal(r["px"], 2 * x + 2)  # aliased: the reload sees the store
    assert r["px"] is r["py"]
    np.testing.assert_array_equal(x, np.arange(32))  # the argument itself is not written
    r = P.launch(_COPY_ADD, "copy_add", 1, 32, [x, x.copy()])
    np.testing.assert_array_equal(r["py"], 2 * x + 1)


def test_offset_pointers_into_one_buffer():
    buf = np.arange(40, dtype=np.float32)
    r = P.launch(_COPY_ADD, "copy_add", 1, 32, [(buf, 0), (buf, 8)])  # y = x + 8 elements, overlapping
    want = buf.copy()
    want[8:40] = buf[0:32] + 1
    # each lane reloads x[i] after every lane's store of the step: x[i] is y[i - 8] for i >= 8
    reload = np.where(np.arange(32) >= 8, want[np.arange(32)], buf[np.arange(32)])
    want[8:40] += reload
    np.testing.assert_array_equal(r["px"], want)
    assert r["py"] is r["px"]
    r = P.launch(_COPY_ADD, "copy_add", 1, 32, [np.arange(32, dtype=np.float32), (buf, 8)])
    np.testing.assert_array_equal(r["py"][:8], buf[:8])  # the buffer before the pointer is untouched
    np.testing.assert_array_equal(r["py"][8:], 2 * np.arange(32) + 1)


def test_offset_pointer_out_of_its_buffer_is_refused_or_faults():
    buf = np.zeros(40, np.float32)
    with pytest.raises(LaunchConfigError):
        P.launch(_COPY_ADD, "copy_add", 1, 32, [buf, (buf, 41)])
    with pytest.raises(Exception, match="(?i)out of bounds|bounds"):
        P.launch(_COPY_ADD, "copy_add", 1, 32, [np.zeros(32, np.float32), (buf, 9)])  # 9 + 32 > 40


_CONST = _HEAD + """
.const .align 4 .b8 coef[16];
.global .align 4 .u32 counter;
.visible .entry poly(.param .u64 py)
{
    .reg .f32 %f<4>;
    .reg .b64 %rd<5>;
    .reg .b32 %r<4>;
    ld.param.u64 %rd1, [py];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    mul.wide.u32 %rd2, %r2, 4;
    mov.u64 %rd3, coef;
    add.s64 %rd3, %rd3, %rd2;
    ld.const.f32 %f1, [%rd3];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd4, %rd1, %rd4;
    st.global.f32 [%rd4], %f1;
    ld.global.u32 %r3, [counter];
    st.global.u32 [%rd4+128], %r3;
    ret;
}
"""


def test_constants_fill_module_variables():
    coef = np.array([0.5, -1.25, 0.75, 0.125], np.float32)
    y = np.zeros(64, np.float32)
    r = P.launch(_CONST, "poly", 1, 32, [y], constants={"coef": coef, "counter": np.uint32(7)})
    np.testing.assert_array_equal(r["py"][:32], np.tile(coef, 8))
    np.testing.assert_array_equal(r["py"][32:].view(np.uint32), np.full(32, 7))
    r = P.launch(_CONST, "poly", 1, 32, [y], constants={"coef": coef[:2]})  # fewer bytes: the rest stays 0
    np.testing.assert_array_equal(r["py"][:4], [0.5, -1.25, 0, 0])
    with pytest.raises(LaunchConfigError, match="coef"):
        P.launch(_CONST, "poly", 1, 32, [y], constants={"coef": np.zeros(5, np.float32)})
    with pytest.raises(LaunchConfigError, match="nope"):
        P.launch(_CONST, "poly", 1, 32, [y], constants={"nope": coef})


_BOOL = _HEAD + """
.visible .entry mark(.param .u64 pf, .param .u64 pout, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b16 %rs<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [pf];
    ld.param.u64 %rd2, [pout];
    ld.param.u32 %r2, [n];
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvt.u64.u32 %rd3, %r1;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u8 %rs1, [%rd4];
    setp.eq.s16 %p2, %rs1, 0;
    selp.u16 %rs2, 1, 0, %p2;
    add.s64 %rd5, %rd2, %rd3;
    st.global.u8 [%rd5], %rs2;
    st.global.u8 [%rd2+99], %rs2;
DONE:
    ret;
}
"""  # out[i] = !flag[i]; out[99] = !flag[tid] (a bool stored by every thread)


def test_bool_arrays():
    flags = np.arange(64) % 3 == 0
    out = np.zeros(100, np.bool_)
    r = P.launch(_BOOL, "mark", 2, 64, [flags, out, np.uint32(64)])
    assert r["pout"].dtype == np.bool_ and r["pout"].shape == (100,)
    np.testing.assert_array_equal(r["pout"][:64], ~flags)
    assert r["pout"][99] == ~flags[63]  # the last writer in (warp, lane) order: thread 63
