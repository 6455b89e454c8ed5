"""XLA's concurrent CUDA graphs for jaxsimt on a GPU: a step's independent kernels run side by side.

A machine step on a GPU is ~85 small kernels run as CUDA graphs, most of them independent reductions over the
warps; XLA runs a graph's kernels one after another unless `--xla_gpu_graph_enable_concurrent_region` is set
(a naive GEMM step at N=2048 on an H200: 0.45 -> 0.36 ms, docs/performance.md). XLA reads the option from
XLA_FLAGS when its GPU backend starts, so it is set in the environment before that. The `jaxsimt` command and
the benchmarks turn it on at start; a library user opts in with `jaxsimt.enable_concurrent_gpu_graphs()`
(importing jaxsimt never changes JAX's configuration). XLA stops a process whose XLA_FLAGS names an option it
does not know, so the option is only added for the jaxlib versions it was measured with.
"""
from __future__ import annotations

import os
import re

FLAG = "xla_gpu_graph_enable_concurrent_region"
# jaxlib versions [first, last) taken to know FLAG: around those it was run with (0.10.2 on a CPU, 0.11.2 on an
# H200); outside them the option is left out rather than risk a process that XLA stops at start
KNOWN = ((0, 10, 0), (0, 12, 0))


def _jaxlib_version() -> tuple:
    """(major, minor, patch) of the installed jaxlib, each part's leading digits ("0.12.0rc1" -> (0, 12, 0))."""
    import jaxlib

    return tuple(int(re.match(r"\d*", p).group() or 0) for p in (jaxlib.__version__.split(".") + ["0"] * 3)[:3])


def _backends_started() -> bool:
    from jax._src import xla_bridge

    started = getattr(xla_bridge, "backends_are_initialized", None)
    return bool(started()) if started is not None else bool(getattr(xla_bridge, "_backends", {}))


def enable_concurrent_gpu_graphs() -> bool:
    """Add `--xla_gpu_graph_enable_concurrent_region=true` to XLA_FLAGS; returns whether the GPU backend will run
    with it. Leaves XLA_FLAGS alone where it already names the option (the user's choice, returned as set), where
    JAX's backends have started (too late: False), or where this jaxlib is not one of KNOWN (False)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FLAG in flags:
        return f"--{FLAG}=true" in flags
    if not KNOWN[0] <= _jaxlib_version() < KNOWN[1] or _backends_started():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} --{FLAG}=true".strip()
    return True
