"""Launches the hardware refuses are refused before anything runs, with the kernel, the quantity asked for
and the limit in the message: registers (allocated per warp, as the occupancy calculator counts them),
the `.local` frame; the default step budget stops a runaway loop within seconds."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f32
from jaxsimt.occupancy import occupancy


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
