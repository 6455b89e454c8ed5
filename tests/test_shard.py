"""A launch sharded over 8 host devices equals the single-device run exactly, atomics included.

The devices exist only in a subprocess started with XLA_FLAGS=--xla_force_host_platform_device_count=8:
the test process's own JAX configuration is left alone."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent(r"""
    import json, sys
    import jax
    import numpy as np
    import jaxsimt as js
    from jaxsimt.kernels import seeds

    assert jax.device_count() == 8, jax.devices()
    out = {}

    def same(a, b):
        outs = all(np.array_equal(a.outputs[k], b.outputs[k]) for k in b.outputs)
        return {"outputs": bool(outs), "stats": a.stats == b.stats, "per_instruction": a.per_instruction == b.per_instruction}

    rng = np.random.default_rng(0)
    n, bins = 5000, 7  # 20 blocks in 10 waves of 2: uneven over 8 devices (some run an empty wave)
    data = rng.integers(0, 1000, n).astype(np.int32)
    args = (n, bins, data, np.zeros(bins, np.uint32))
    one = js.launch(seeds.histogram, 20, 256, args, blocks_per_wave=2)
    eight = js.launch(seeds.histogram, 20, 256, args, blocks_per_wave=2, devices=8)
    out["histogram"] = same(eight, one)
    out["histogram_ref"] = bool(np.array_equal(eight["hist"], np.bincount(data % bins, minlength=bins)))

    # shared memory, barriers and float stores; a batch sharded over the devices
    x = rng.random((3, 64 * 6), np.float32)
    o = np.zeros((3, 6), np.float32)
    b1 = js.launch_batch(seeds.reduce_interleaved, 6, 64, (x, o), blocks_per_wave=2)
    b8 = js.launch_batch(seeds.reduce_interleaved, 6, 64, (x, o), blocks_per_wave=2, devices=8)
    out["batch"] = [same(p, q) for p, q in zip(b8, b1)]

    # a fault on a later device is reported as in the single-device run
    bad = (n, 6, data, np.zeros(5, np.uint32))
    msgs = []
    for dev in (None, 8):
        try:
            js.launch(seeds.histogram, 20, 256, bad, blocks_per_wave=2, devices=dev)
            msgs.append(None)
        except js.MemoryFault as e:
            msgs.append(str(e))
    out["fault"] = msgs
    print(json.dumps(out))
""")


@pytest.mark.slow  # a fresh process compiling four machines: about a minute on 2 cores
def test_sharded_over_8_host_devices_equals_single_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
               PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["histogram"] == {"outputs": True, "stats": True, "per_instruction": True}
    assert out["histogram_ref"]
    assert out["batch"] == [{"outputs": True, "stats": True, "per_instruction": True}] * 3
    single, sharded = out["fault"]
    assert single is not None and single == sharded


def test_unmergeable_atomics_are_refused_before_running():
    """Float atomic adds (or min/max/exch/cas) from several devices do not merge by word deltas."""
    import numpy as np

    import jaxsimt as js
    from jaxsimt import Ptr, f32

    @js.kernel
    def fsum(x: Ptr[f32], total: Ptr[f32]):
        total.atomic_add(0, x[js.global_thread_index()])

    with pytest.raises(js.LaunchConfigError, match="fsum.*add.f32.*one device"):
        js.launch(fsum, 1, 32, (np.ones(32, np.float32), np.zeros(1, np.float32)), devices=1)
