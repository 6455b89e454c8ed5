"""One kernel launched again with another grid: the machine of the same wave shape and memory size class is
reused, and runs whatever the number of waves (its compiled wave was once fixed to the first launch's block
table and refused the second with a JAX TypeError)."""
import numpy as np

import jaxsimt as js
from jaxsimt import Ptr, f32


@js.kernel
def inc(x: Ptr[f32]):
    i = js.global_thread_index()
    x[i] = x[i] + 1.0


def test_a_second_grid_size_runs_on_the_same_machine():
    a = js.launch(inc, 2, 32, (np.zeros(64, np.float32),), blocks_per_wave=1)
    b = js.launch(inc, 8, 32, (np.zeros(256, np.float32),), blocks_per_wave=1)
    c = js.launch(inc, 2, 32, (np.ones(64, np.float32),), blocks_per_wave=1)
    assert a["x"].tolist() == [1.0] * 64 and b["x"].tolist() == [1.0] * 256 and c["x"].tolist() == [2.0] * 64
    machines = inc.program.__dict__["_machines"]
    assert len(machines) == 1  # one machine, two executables (2 and 8 waves)
    assert len(next(iter(machines.values()))._executables) == 2


def test_numbers_of_waves_of_one_size_class_share_a_compiled_wave():
    @js.kernel
    def twice(x: Ptr[f32]):
        i = js.global_thread_index()
        x[i] = x[i] * 2.0

    for blocks in (5, 6, 7, 8):  # 5 to 8 waves: the block table is padded to 8 waves
        r = js.launch(twice, blocks, 32, (np.ones(blocks * 32, np.float32),), blocks_per_wave=1)
        assert r["x"].tolist() == [2.0] * (blocks * 32)
    (m,) = twice.program.__dict__["_machines"].values()
    assert len(m._executables) == 1


@js.kernel
def axpy(x: Ptr[f32], y: Ptr[f32], a: f32, n: js.s32):
    i = js.global_thread_index()
    with js.if_(i < n):
        y[i] = a * x[i] + y[i]


def test_a_driver_loop_of_changing_grids_scalars_and_budgets_compiles_once_per_size_class():
    """24 launches of one kernel, each with its own grid, array length, scalars and step budget: a compile
    for each new (blocks per wave, memory size) class only, none when the loop runs again."""
    def loop():
        out = []
        for k in range(1, 25):
            n = 23 * k
            x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
            a = np.float32(0.5 * k)
            r = js.launch(axpy, -(-n // 64), 64, [x, y, a, np.int32(n)], max_steps=1000 + k, counters=False)
            np.testing.assert_array_equal(r["y"], a * x + np.float32(1))
            out.append(r.compiles)
        return out

    first = loop()
    machines = axpy.program.__dict__["_machines"].values()
    assert sum(first) == sum(len(m._executables) for m in machines)  # every compile made a new executable
    # one compile per (blocks per wave, memory size class) met: grids of 1..9 blocks run as waves of 1, 2, 4, 8
    # or 16 blocks, arrays of 23..552 floats fill two memory classes
    assert all(len(m._executables) == 1 for m in machines)
    assert sum(first) == len({(m.geo.ctas_per_wave, m.layout.global_words) for m in machines}) <= 10, first
    assert loop() == [0] * 24


def test_shrinking_grids_run_on_the_first_launchs_machine():
    """A driver whose grids shrink (LU, Gaussian elimination) compiles once: a smaller grid runs on the machine
    built for a larger one, its wave padded with finished blocks; a grid far smaller than that wave (more than
    `REUSE_FACTOR` times, and past `REUSE_THREADS` threads) gets a machine of its own."""
    from jaxsimt.run.launch import REUSE_FACTOR, REUSE_THREADS

    @js.kernel
    def scale(x: Ptr[f32], a: f32, n: js.s32):
        i = js.global_thread_index()
        with js.if_(i < n):
            x[i] = x[i] * a

    big = 1024
    x = np.arange(big * 64, dtype=np.float32)
    counts = []
    for blocks in (16, 11, 8, 5, 3, 2, 1):
        n = blocks * 64 - 7
        r = js.launch(scale, blocks, 64, [x, np.float32(2.0), np.int32(n)], counters=False)
        want = x.copy()
        want[:n] *= 2
        np.testing.assert_array_equal(r["x"], want)
        counts.append(r.compiles)
    assert counts == [1, 0, 0, 0, 0, 0, 0]
    assert 16 * 64 <= REUSE_THREADS
    # a grid of 1,024 blocks is larger than any machine so far: a new one; one block after it runs on the
    # smallest machine that holds it (16 blocks), not on the 1,024-block one (past both limits)
    assert 1024 > REUSE_FACTOR and 1024 * 64 > REUSE_THREADS
    assert js.launch(scale, big, 64, [x, np.float32(2.0), np.int32(big * 64)], counters=False).compiles == 1
    r = js.launch(scale, 1, 64, [x, np.float32(2.0), np.int32(64)], counters=False)
    assert r.compiles == 0 and r["x"][:64].tolist() == (x[:64] * 2).tolist()
    assert sorted(m.geo.ctas_per_wave for m in scale.program.__dict__["_machines"].values()) == [16, 1024]


def test_growing_grids_compile_twice_and_a_smaller_memory_reuses_the_machine():
    """Grids that grow one block at a time (Needleman-Wunsch's diagonals) compile for the first and, once it is
    outgrown, for `GROWTH_HEADROOM` times the grid: twice for 1..8 blocks, not once per power of two. A later
    launch with a much smaller memory image (a reduction's pass over its partial sums) runs on the same machine
    while the image it pads to stays within `REUSE_WORDS`."""
    from jaxsimt.run.launch import GROWTH_HEADROOM, REUSE_WORDS

    @js.kernel
    def add1(x: Ptr[f32], n: js.s32):
        i = js.global_thread_index()
        with js.if_(i < n):
            x[i] = x[i] + 1.0

    compiles = []
    for blocks in range(1, 9):
        x = np.arange(blocks * 32, dtype=np.float32)
        r = js.launch(add1, blocks, 32, [x, np.int32(blocks * 32)], counters=False)
        np.testing.assert_array_equal(r["x"], x + 1)
        compiles.append(r.compiles)
    assert GROWTH_HEADROOM >= 4 and compiles == [1, 1, 0, 0, 0, 0, 0, 0]
    big = np.zeros(8 * 32 * 64, np.float32)  # a memory image 64 times the first launches', within REUSE_WORDS
    assert big.size < REUSE_WORDS
    assert js.launch(add1, 8, 32, [big, np.int32(256)], counters=False).compiles == 1
    r = js.launch(add1, 1, 32, [np.ones(32, np.float32), np.int32(32)], counters=False)
    assert r.compiles == 0 and r["x"].tolist() == [2.0] * 32
