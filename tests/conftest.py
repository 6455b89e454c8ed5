"""Session-wide settings of the test suite."""
import os

# Commands run in-process (`jaxsimt run ...`) turn on JAX's persistent compilation cache in the per-user
# folder; the suite's parallel workers would then write one cache folder at once (JAX's cache writes are
# not safe across processes: a worker crashed in `put_executable_and_time`). Tests of the cache itself
# unset this with monkeypatch.
os.environ.setdefault("JAXSIMT_NO_COMPILE_CACHE", "1")
