"""The opt-in for XLA's concurrent CUDA graphs: set before JAX's backends start, never an option XLA would not know."""
import os
import subprocess
import sys

from jaxsimt.run import gpu_graphs

_RUN = """
import os, jaxsimt
print(jaxsimt.enable_concurrent_gpu_graphs(), repr(os.environ.get("XLA_FLAGS", "")))
import jax.numpy as jnp
print(int(jnp.ones(3).sum()))
"""


def _run(env_flags=None, code=_RUN):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if env_flags is not None:
        env["XLA_FLAGS"] = env_flags
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split("\n")


def test_importing_jaxsimt_leaves_the_backends_unstarted_and_the_option_is_added():
    lines = _run()
    if gpu_graphs.KNOWN[0] <= gpu_graphs._jaxlib_version() < gpu_graphs.KNOWN[1]:
        assert lines[0] == f"True '--{gpu_graphs.FLAG}=true'"
    else:
        assert lines[0] == "False ''"
    assert lines[1] == "3"  # XLA took the flags it was given


def test_the_users_flags_are_kept():
    lines = _run(f"--{gpu_graphs.FLAG}=false")
    assert lines[0] == f"False '--{gpu_graphs.FLAG}=false'"


def test_too_late_once_a_computation_ran():
    code = "import jax.numpy as jnp; jnp.ones(1).block_until_ready()\n" + _RUN
    lines = _run(code=code)
    assert lines[0] == "False ''"


def test_versions_past_the_known_ones_are_not_taken_for_them(monkeypatch):
    import jaxlib

    for version, known in (("0.12.0rc1", False), ("0.11.0.dev20250101", True), ("0.10", True), ("0.9.9", False)):
        monkeypatch.setattr(jaxlib, "__version__", version)
        assert (gpu_graphs.KNOWN[0] <= gpu_graphs._jaxlib_version() < gpu_graphs.KNOWN[1]) is known, version
