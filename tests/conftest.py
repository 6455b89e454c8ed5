"""Session-wide settings of the test suite."""
import os

# Commands run in-process (`jaxsimt run ...`) turn on JAX's persistent compilation cache in the per-user
# folder; the suite's parallel workers would then write one cache folder at once (JAX's cache writes are
# not safe across processes: a worker crashed in `put_executable_and_time`). Tests of the cache itself
# unset this with monkeypatch.
os.environ.setdefault("JAXSIMT_NO_COMPILE_CACHE", "1")

import gc

import pytest


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_machines():
    """After each test module, drop the compiled machines its kernels keep (`Program._machines`) and JAX's
    caches: a worker that holds every machine of the suite runs out of LLVM's code memory (XLA then fails to
    allocate, or crashes, compiling the next one)."""
    yield
    import jax

    from jaxsimt.program import Program

    for o in gc.get_objects():
        if isinstance(o, Program) and "_machines" in o.__dict__:
            o.__dict__["_machines"].clear()
    jax.clear_caches()
