"""Which L1 misses wait for DRAM (`jaxsimt.timing.trace.dram_waits`): by hand, on launches, and against the H200's
Parboil sgemm, whose blocks all read each row of A at once."""
from __future__ import annotations

import numpy as np
import pytest

import jaxsimt
from jaxsimt.arch import get_arch
from jaxsimt.timing import trace as tr
from jaxsimt.units import isa

ARCH = get_arch("h200")
G, A = tr.GLOBAL, tr.ALU


def test_one_wave_first_requests_wait_for_dram():
    """One wave: every first request waits (the sector is cold or on its way for another SM); misses of
    sectors the SM held and lost are L2 hits. Here 100 misses of which 40 first requests, all sectors
    shared by 10 SMs."""
    w = tr.dram_waits(np.array([G, A]), np.array([100.0, 0.0]), np.array([0.4, 1.0]), np.array([0.04, 0.0]),
                      dram_sectors=4.0, waves=1.0)
    assert w.tolist() == pytest.approx([0.4, 0.0])


def test_later_waves_find_shared_sectors_in_l2():
    """Four waves, each distinct sector asked for first by 10 SMs: the first wave's first requests wait for
    DRAM, a later wave's only one in 10 of them: 0.25 + 0.75 / 10 of the first requests."""
    w = tr.dram_waits(np.array([G]), np.array([100.0]), np.array([1.0]), np.array([0.1]), dram_sectors=10.0,
                      waves=4.0)
    assert w.tolist() == pytest.approx([0.25 + 0.75 / 10])


def test_unshared_sectors_all_come_from_dram():
    """A stream (each sector asked for by one SM, once): every miss waits for DRAM in every wave; and the wait is
    never below the DRAM traffic's share."""
    w = tr.dram_waits(np.array([G, G]), np.array([50.0, 50.0]), np.array([1.0, 0.0]), np.array([0.5, 0.5]),
                      dram_sectors=50.0, waves=7.0)
    assert w.tolist() == pytest.approx([1.0, 0.5])


@jaxsimt.kernel
def _row_sum(a: jaxsimt.Ptr[jaxsimt.f32], out: jaxsimt.Ptr[jaxsimt.f32], n: jaxsimt.s32):
    """Every block sums the same n x 32 matrix by rows, a thread per column: all blocks read every row (and
    write the same 32 sums)."""
    t = jaxsimt.threadIdx.x
    s = jaxsimt.var(0.0)
    for r in jaxsimt.range(n):
        s += a[r * 32 + t]
    out[t] = s


@pytest.mark.parametrize("waves", [1, 4])
def test_launch_dram_wait(waves):
    """launch(timing=True): one wave of blocks that all read the same rows waits for DRAM on every load; in four
    waves the later three find the rows in L2 (the H200 runs 32 of these one-warp blocks per SM), so a quarter
    of the loads' misses wait, and a little more for the new sectors."""
    n = 64
    blocks = ARCH.num_sms * 32 * waves
    a = np.ones(n * 32, np.float32)
    r = jaxsimt.launch(_row_sum, blocks, 32, (a, np.zeros(32, np.float32), np.int32(n)), arch="h200", timing=True)
    assert r.stats["active_blocks_per_sm"] == 32
    t = r.timing["trace"]
    g = t.cls == G
    load = g & np.asarray([isa.memory(o) == "read" for _, o in t.program.instructions()])
    assert load.sum() == 1 and t.hit_l1[load] < 1
    assert t.dram_wait[load] == pytest.approx(1 / waves, abs=0.01)
    assert (t.dram_wait[g] >= t.to_dram[g]).all()
