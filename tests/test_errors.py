"""Every run-time and launch error is a clear exception naming the kernel, the source line, the block
and the thread."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f32, s32


@js.kernel
def off_by_one(n: s32, x: Ptr[f32], y: Ptr[f32]):
    i = js.global_thread_index()
    with js.if_(i <= n):  # the classic bug: <= instead of <
        y[i] = x[i]


def test_out_of_bounds_global_load_names_line_block_thread():
    x = np.zeros(64, np.float32)
    with pytest.raises(js.MemoryFault) as e:
        js.launch(off_by_one, 1, 128, (64, x, x.copy()))
    msg = str(e.value)
    assert "kernel off_by_one" in msg
    assert "out-of-bounds global load of 'x'" in msg
    assert "byte offset 256" in msg and "array is 256 bytes" in msg
    assert "y[i] = x[i]" in msg  # the source line
    assert "block (0, 0, 0), thread (64, 0, 0)" in msg and "warp 2, lane 0" in msg


@js.kernel
def shared_overrun(out: Ptr[f32]):
    s = js.shared(32, f32, "tile")
    t = js.threadIdx.x
    s[t] = 1.0  # 64 threads, 32 slots
    out[t] = s[t]


def test_out_of_bounds_shared_store():
    with pytest.raises(js.MemoryFault, match=r"out-of-bounds shared store of 'tile'.*thread \(32, 0, 0\)"):
        js.launch(shared_overrun, 1, 64, (np.zeros(64, np.float32),))


@js.kernel
def misaligned(x: Ptr[f32], out: Ptr[f32]):
    t = js.threadIdx.x
    v = x.load(t * 2 + 1, n=2)  # a float2 load must be 8-byte aligned
    out[t] = v[0]


def test_misaligned_vector_access():
    with pytest.raises(js.MemoryFault, match="misaligned"):
        js.launch(misaligned, 1, 32, (np.zeros(128, np.float32), np.zeros(32, np.float32)))


@js.kernel
def divergent_barrier(out: Ptr[s32]):
    t = js.threadIdx.x
    with js.if_(t < 16):
        js.syncthreads()
    out[t] = t


def test_divergent_syncthreads_is_reported_not_hung():
    with pytest.raises(js.DivergentBarrierError) as e:
        js.launch(divergent_barrier, 1, 64, (np.zeros(64, np.int32),))
    msg = str(e.value)
    assert "kernel divergent_barrier" in msg and "js.syncthreads()" in msg
    assert "thread (16, 0, 0)" in msg


@js.kernel
def early_exit_then_barrier(n: s32, out: Ptr[s32]):
    t = js.threadIdx.x
    with js.if_(t >= n):
        js.return_()
    js.syncthreads()  # exited threads do not hold the barrier
    out[t] = t


def test_barrier_after_early_return_is_fine():
    r = js.launch(early_exit_then_barrier, 1, 64, (40, np.full(64, -1, np.int32)))
    np.testing.assert_array_equal(r["out"][:40], np.arange(40))
    assert (r["out"][40:] == -1).all()


@js.kernel
def deep(out: Ptr[s32]):
    t = js.threadIdx.x
    v = js.var(0)
    with js.if_(t % 2 == 0):
        with js.if_(t % 4 == 0):
            with js.if_(t % 8 == 0):
                v.set(3)
    out[t] = v


def test_stack_overflow():
    with pytest.raises(js.StackOverflowError, match=r"kernel deep: reconvergence stack overflow \(depth 3\)"):
        js.launch(deep, 1, 32, (np.zeros(32, np.int32),), stack_depth=3)
    r = js.launch(deep, 1, 32, (np.zeros(32, np.int32),), stack_depth=8)
    assert r.stats["max_stack_depth"] <= 8


@js.kernel
def deeper(out: Ptr[s32]):
    t = js.threadIdx.x
    v = js.var(0)
    with js.if_(t % 2 == 0):
        with js.if_(t % 4 == 0):
            with js.if_(t % 8 == 0):
                with js.if_(t % 16 == 0):
                    v.set(4)
                with js.else_():
                    v.set(3)
            with js.else_():
                v.set(2)
    out[t] = v


def test_stack_grows_where_a_kernel_nests_deeper():
    """Stacks start at STACK_START entries; a kernel that overflows them runs again on deeper ones (up to the
    launch's stack_depth) and keeps them, with the same results and counters as a launch that allows just the
    depth the kernel reaches."""
    from jaxsimt.run.launch import STACK_START, stack_depth_for
    prog = deeper.program
    assert stack_depth_for(prog, 16, "stack") == STACK_START
    r = js.launch(deeper, 1, 32, (np.zeros(32, np.int32),))
    t = np.arange(32)
    np.testing.assert_array_equal(r["out"], np.select([t % 16 == 0, t % 8 == 0, t % 4 == 0], [4, 3, 2], 0))
    assert r.stats["max_stack_depth"] > STACK_START
    assert stack_depth_for(prog, 16, "stack") == 16 and stack_depth_for(prog, 8, "stack") == 8
    again = js.launch(deeper, 1, 32, (np.zeros(32, np.int32),))
    assert again.compiles == 0  # the grown machine is kept
    full = js.launch(js.kernel(deeper.fn, name="deeper_full"), 1, 32, (np.zeros(32, np.int32),),
                     stack_depth=r.stats["max_stack_depth"])
    assert {k: v for k, v in r.stats.items() if k != "emulator__compiles"} == \
        {k: v for k, v in full.stats.items() if k != "emulator__compiles"}


@js.kernel
def runaway(out: Ptr[s32]):
    i = js.var(0)
    for _ in js.while_(lambda: i >= 0):  # never false
        i.set(i + 0)
    out[0] = i


def test_step_budget():
    with pytest.raises(js.StepBudgetExceeded, match="kernel runaway: exceeded the step budget of 500 steps"):
        js.launch(runaway, 1, 32, (np.zeros(1, np.int32),), max_steps=500)


def test_launch_config_errors_before_running():
    x = np.zeros(4096, np.float32)
    with pytest.raises(js.LaunchConfigError, match="2048 threads per block exceed the h200 limit of 1024"):
        js.launch(off_by_one, 1, 2048, (64, x, x))
    with pytest.raises(js.LaunchConfigError, match="exceed the g80 limit of 512"):
        js.launch(off_by_one, 1, 1024, (64, x, x), arch="g80")

    @js.kernel
    def big_smem(out: Ptr[f32]):
        s = js.shared(20000, f32, "big")  # 80 KB of static shared memory
        s[js.threadIdx.x] = 0.0

    with pytest.raises(js.LaunchConfigError, match="80000 bytes of static shared memory"):
        js.launch(big_smem, 1, 32, (x,))
    with pytest.raises(js.LaunchConfigError, match="registers"):
        js.launch(off_by_one, 1, 1024, (64, x, x), regs=128)


def test_trace_errors_name_the_line():
    @js.kernel
    def mixed(x: Ptr[f32], n: s32):
        x[0] = x[0] + n  # f32 + s32 without a conversion

    with pytest.raises(js.KernelTraceError, match=r"test_errors.py:\d+: .*x\[0\] = x\[0\] \+ n"):
        mixed.program
