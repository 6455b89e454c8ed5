"""Run a case of the sanitizer corpus (kernels/sanitizer/cases.py) on jaxsimt.

    from jaxsimt.kernels.sanitizer import cases, run
    r = run.launch(cases.BY_NAME["ok_tree_reduce"])      # a LaunchResult
    run.outputs(case, r)                                  # {parameter index: final contents}
    run.check_reference(case, r)                          # {parameter index: matches the numpy reference}
"""
from __future__ import annotations

import functools

import numpy as np

from .cases import Case


@functools.lru_cache(maxsize=None)
def dsl_kernel(entry: str):
    from . import dsl_kernels
    return getattr(dsl_kernels, entry)


def launch(case: Case, args=None, **launch_kwargs):
    """Launch `case` on jaxsimt (`args`: the case's arguments, built by `case.args()` when None); keywords
    go to `jaxsimt.launch` (e.g. `mode`, `arch`). A CUDA case runs from its committed PTX."""
    args = case.args() if args is None else args
    if case.kind == "cuda":
        import jaxsimt.ptx
        return jaxsimt.ptx.launch(case.ptx_path, case.entry, case.grid, case.block, args, **launch_kwargs)
    import jaxsimt
    return jaxsimt.launch(dsl_kernel(case.entry), case.grid, case.block, args, **launch_kwargs)


def outputs(case: Case, result) -> dict:
    """{parameter index: final contents} of the case's array parameters."""
    return {i: np.asarray(v) for i, v in enumerate(result.args[:len(case.args())]) if isinstance(v, np.ndarray)}


def check_reference(case: Case, result, args=None) -> dict:
    """{parameter index: whether its final contents equal `case.reference`'s}: exact for integers, within
    1e-6 relative for floats (the references of float reductions are sums of small integers: exact)."""
    args = case.args() if args is None else args
    out = outputs(case, result)
    ok = {}
    for i, want in case.reference(args).items():
        got = out[i]
        if np.asarray(want).dtype.kind == "f":
            ok[i] = got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-6, atol=1e-6))
        else:
            ok[i] = got.shape == want.shape and bool(np.array_equal(got, want))
    return ok
