"""The replays split their SMs over several JAX devices (`timing.sm_sharded`) and give what one device gives.

The devices exist only in a subprocess started with XLA_FLAGS=--xla_force_host_platform_device_count=2: the test
process's own JAX configuration is left alone. The launch replays an odd number of SMs, so the SM axis is padded
to the devices and cut back."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent(r"""
    import json
    import jax
    import numpy as np
    from jaxsimt.apps import ladder
    from jaxsimt.timing import replay as tm

    rung = next(r for r in ladder.rungs() if r.name == "smem_tiled")
    t, n_ctas = ladder.trace_rung(rung, 96, 160, 64, "h200", 2)
    w = tm.plan(t, "h200", 2, n_ctas)
    out = {"devices": len(jax.local_devices()), "sms": int(w.queues.shape[0])}
    for replay in tm.REPLAYS:
        r = tm.run(w, tm.params_of("h200"), replay=replay, timeline=False)
        out[replay] = {"cycles": np.asarray(r["cycles"]).tolist(), "issued": np.asarray(r["issued"]).tolist()}
    print(json.dumps(out))
""")


def _run(devices: int) -> dict:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu",
               PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_sms_split_over_two_host_devices_replay_as_on_one():
    one, two = _run(1), _run(2)
    assert one["devices"] == 1 and two["devices"] == 2
    assert one["sms"] == two["sms"] and one["sms"] % 2 == 1  # padded to the devices, cut back
    for replay in ("exact", "fast", "interval"):
        assert two[replay]["issued"] == one[replay]["issued"], replay
        np.testing.assert_allclose(two[replay]["cycles"], one[replay]["cycles"], rtol=1e-6, err_msg=replay)
