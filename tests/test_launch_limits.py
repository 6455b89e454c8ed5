"""Launches the hardware refuses are refused before anything runs, with the kernel, the quantity asked for
and the limit in the message: registers (allocated per warp, as the occupancy calculator counts them),
the `.local` frame; the default step budget stops a runaway loop (benchmarks/bench_runaway.py times it)."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f32
from jaxsimt.units.occupancy import occupancy


@js.kernel
def fill(x: Ptr[f32]):
    x[js.threadIdx.x] = 1.0


@pytest.mark.parametrize("arch,threads,regs", [("h200", 992, 66), ("h200", 800, 80), ("h200", 1024, 65),
                                               ("fermi", 1024, 33), ("g80", 512, 17)])
def test_registers_allocated_per_warp_are_refused_as_the_hardware_does(arch, threads, regs):
    # within the per-thread ceiling, and regs x threads alone would fit on the warp-allocating chips
    assert occupancy(arch, threads, regs, 0)["active_blocks_per_sm"] == 0
    x = np.zeros(threads, np.float32)
    with pytest.raises(js.LaunchConfigError) as e:
        js.launch(fill, 1, threads, (x,), arch=arch, regs=regs)
    msg = str(e.value)
    assert "kernel fill" in msg and f"{regs} registers per thread x {threads} threads" in msg
    assert arch in msg


def test_register_refusal_names_the_allocation():
    x = np.zeros(992, np.float32)
    with pytest.raises(js.LaunchConfigError, match=r"need 73728 registers per block \(32 warps x 2304.*more "
                                                   r"than the 65536 that h200 allows"):
        js.launch(fill, 1, 992, (x,), regs=66)


@pytest.mark.parametrize("arch,threads,regs", [("h200", 1024, 64), ("h200", 992, 64), ("fermi", 512, 63),
                                               ("g80", 256, 32)])
def test_registers_that_fit_run(arch, threads, regs):
    assert occupancy(arch, threads, regs, 0)["active_blocks_per_sm"] >= 1
    r = js.launch(fill, 1, threads, (np.zeros(threads, np.float32),), arch=arch, regs=regs)
    assert r["x"].sum() == threads


@pytest.mark.parametrize("regs", [-1, 2.5, "64", True])
def test_bad_register_counts(regs):
    with pytest.raises(js.LaunchConfigError, match="kernel fill: regs must be a non-negative integer"):
        js.launch(fill, 1, 32, (np.zeros(32, np.float32),), regs=regs)


def test_local_frame_beyond_the_per_thread_limit_is_refused():
    x = np.zeros(32, np.float32)
    with pytest.raises(js.LaunchConfigError, match=r"kernel fill: a local memory frame of 524289 bytes per thread "
                                                   r".*exceeds the 524288 bytes per thread that h200 allows"):
        js.launch(fill, 1, 32, (x,), local_bytes=512 * 1024 + 1)
    with pytest.raises(js.LaunchConfigError, match=r"exceeds the 16384 bytes per thread that g80 allows"):
        js.launch(fill, 1, 32, (x,), local_bytes=16 * 1024 + 4, arch="g80")
    for bad in (-4, 1.5, "64"):
        with pytest.raises(js.LaunchConfigError, match="kernel fill: local_bytes must be a non-negative integer"):
            js.launch(fill, 1, 32, (x,), local_bytes=bad)
    assert js.launch(fill, 1, 32, (x,), local_bytes=512 * 1024)["x"].sum() == 32  # the limit itself fits


BIG_LOCAL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry big_frame(.param .u64 pout)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .local .align 4 .b8 frame[1073741824];
    mov.u64 %rd1, frame;
    mov.u32 %r1, 7;
    st.local.u32 [%rd1], %r1;
    ret;
}
"""


def test_ptx_local_frame_beyond_the_limit_is_refused_before_any_allocation():
    from jaxsimt.ptx import launch as ptx_launch
    with pytest.raises(js.LaunchConfigError, match=r"kernel big_frame: a local memory frame of 1073741824 bytes"):
        ptx_launch(BIG_LOCAL, "big_frame", 1, 256, (np.zeros(1, np.float32),))


def test_large_local_frames_run_in_smaller_waves(monkeypatch):
    import importlib
    launch_mod = importlib.import_module("jaxsimt.run.launch")
    x = np.zeros(8 * 64, np.float32)

    @js.kernel
    def fill_all(x: Ptr[f32]):
        x[js.global_thread_index()] = 1.0

    whole = js.launch(fill_all, 8, 64, (x,), local_bytes=4096)
    monkeypatch.setattr(launch_mod, "LOCAL_BYTES_PER_WAVE", 2 * 64 * 4096)  # two blocks' frames per wave
    split = js.launch(fill_all, 8, 64, (x,), local_bytes=4096)
    assert split["x"].sum() == whole["x"].sum() == 8 * 64
    assert split.stats["emulator__steps"] == 4 * whole.stats["emulator__steps"]  # four waves instead of one


@js.kernel
def runaway(out: Ptr[js.s32]):
    i = js.var(0)
    for _ in js.while_(lambda: i >= 0):  # never false
        i.set(i + 1)
        with js.if_(i > 1 << 30):
            i.set(0)
    out[js.global_thread_index()] = i


def test_default_step_budget_stops_a_runaway_loop_of_256_threads():
    from jaxsimt.run.launch import MIN_STEPS, default_max_steps, program_size
    size = program_size(runaway.program)
    budget = default_max_steps(runaway.program, 8)
    assert budget == max(MIN_STEPS, size * (4096 + min(8, size)))
    assert default_max_steps(runaway.program, 16384) == max(MIN_STEPS, size * (4096 + size))  # one per instruction
    with pytest.raises(js.StepBudgetExceeded) as e:
        js.launch(runaway, 1, 256, (np.zeros(256, np.int32),))
    msg = str(e.value)
    assert f"kernel runaway: exceeded the step budget of {budget} steps (the default: {size} instructions x " \
           f"(4096 + {min(8, size)}: the wave's 8 warps, at most one per instruction), at least {MIN_STEPS}; " \
           f"max_steps= sets another)" in msg
    with pytest.raises(js.StepBudgetExceeded, match="exceeded the step budget of 300 steps in wave 0"):
        js.launch(runaway, 1, 256, (np.zeros(256, np.int32),), max_steps=300)  # the user's budget wins


@pytest.mark.parametrize("bad", [0, -5, 2.0, "100", True])
def test_bad_step_budgets(bad):
    with pytest.raises(js.LaunchConfigError, match="kernel fill: max_steps must be a positive integer"):
        js.launch(fill, 1, 32, (np.zeros(32, np.float32),), max_steps=bad)
