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
