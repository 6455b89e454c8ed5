"""Global atomics in the timing model: operations on one L2 sector serialize, so a kernel takes at least its
busiest sector's operations times `atomic_cycles_per_op` (measured on the H200). The counts are derived by
hand: a warp whose lanes all add to one word without reading the old value is one operation (ptxas
aggregates it), an exchange is one per lane; a sector more than one traced block touches is shared by the
grid."""
import numpy as np

import jaxsimt as js
from jaxsimt import Ptr, s32
from jaxsimt.arch import H200
from jaxsimt.run import launch_timing

BLOCKS, THREADS = 264, 128  # 2 blocks per SM: the traced blocks stand for the grid
WARPS = BLOCKS * THREADS // 32


@js.kernel
def add_one_word(c: Ptr[s32]):
    c.atomic_add(0, 1)  # old value unread: one operation per warp


@js.kernel
def exch_one_word(c: Ptr[s32]):
    c.atomic_exch(0, 1)  # one operation per lane


@js.kernel
def add_own_sector(c: Ptr[s32]):
    c.atomic_add(js.blockIdx.x * 8, 1)  # each block its own 32-byte sector


@js.kernel
def ticket(c: Ptr[s32], out: Ptr[s32]):
    out[js.global_thread_index()] = c.atomic_add(0, 1)  # old value read: one operation per lane


def _timed(kernel, *args):
    return js.launch(kernel, BLOCKS, THREADS, args, arch="h200", timing=True)


def test_aggregated_and_per_lane_atomics_on_one_word():
    c = np.zeros(64, np.int32)
    agg = _timed(add_one_word, c)
    per_lane = _timed(exch_one_word, c)
    ticket_r = _timed(ticket, c, np.zeros(BLOCKS * THREADS, np.int32))
    assert agg.stats["timing__atomic_sector_ops"] == WARPS
    assert per_lane.stats["timing__atomic_sector_ops"] == WARPS * 32
    assert ticket_r.stats["timing__atomic_sector_ops"] == WARPS * 32
    per_op = H200.timing.atomic_cycles_per_op
    # the serialized sector bounds the kernel: thousands of operations one after another
    assert per_lane.stats["cycles"] >= WARPS * 32 * per_op
    assert per_lane.stats["cycles"] > 8 * agg.stats["cycles"]


def test_a_sector_of_one_block_is_not_scaled_to_the_grid():
    r = _timed(add_own_sector, np.zeros(BLOCKS * 8, np.int32))
    assert r.stats["timing__atomic_sector_ops"] == THREADS // 32


def test_kernels_without_atomics_have_no_atomic_term():
    @js.kernel
    def copy(x: Ptr[s32], y: Ptr[s32]):
        i = js.global_thread_index()
        y[i] = x[i]

    r = _timed(copy, np.arange(BLOCKS * THREADS, dtype=np.int32), np.zeros(BLOCKS * THREADS, np.int32))
    assert r.stats["timing__atomic_sector_ops"] == 0


def test_which_atomics_ptxas_aggregates():
    """An integer add whose old value nobody reads is aggregated; one whose old value is read is not."""
    prog = js.launch(add_one_word, 1, 32, (np.zeros(8, np.int32),)).program
    assert list(launch_timing._global_atomics(prog).values()) == [True]
    prog = js.launch(ticket, 1, 32, (np.zeros(8, np.int32), np.zeros(32, np.int32))).program
    assert list(launch_timing._global_atomics(prog).values()) == [False]


def test_the_parameter_is_its_h200_measurement():
    """atomic_cycles_per_op is the H200 micro-benchmark's rate (every lane of 4,224 warps incrementing one
    word, not aggregated: REDG.E.INC per lane in the SASS), not a fitted value; other sectors and the
    aggregated add were measured beside it."""
    from jaxsimt.apps import fixtures

    m = fixtures.timing_micro("h200")
    row = m["atomic_same_word_inc_lanes32"]
    assert row["param"] == "atomic_cycles_per_op"
    assert abs(H200.timing.atomic_cycles_per_op / row["value"] - 1) < 0.01
    assert abs(H200.timing_fitted.atomic_cycles_per_op / row["value"] - 1) < 0.01
    # words of one sector serialize like one word; an aggregated add is one operation per warp
    assert abs(m["atomic_words8_stride4B"]["value"] / (32 * row["value"]) - 1) < 0.05
    assert abs(m["atomic_same_word_add_aggregated"]["value"] / row["value"] - 1) < 0.15
