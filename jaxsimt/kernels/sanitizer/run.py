"""Run a case of the sanitizer corpus (jaxsimt/kernels/sanitizer/cases.py) on jaxsimt.

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


# The corpus's kinds of finding -> the kinds of jaxsimt's findings that are that bug (jaxsimt.machine.sanitizer.KIND)
KINDS = {
    "out_of_bounds": {"out-of-bounds global access", "out-of-bounds shared access", "out-of-bounds local access"},
    "misaligned": {"misaligned access"},
    "wrong_space": {"wrong-space address", "out-of-bounds global access"},
    "race": {"data race", "warp hazard (a race under ITS)"},
    "uninitialized": {"uninitialized read"},
    "barrier_divergence": {"barrier under divergence", "barrier skipped by live threads",
                           "threads wait at different barriers", "barrier never completes",
                           "barrier reached with different thread counts"},
    "warp_sync_mask": {"member mask names lanes that do not execute it"},
}


def _names_array(case: Case, f) -> bool:
    """Whether a finding's array is the case's (PTX parameters are named `<entry>_param_<k>`; shared and
    local variables keep their source name inside nvcc's mangled one)."""
    want = case.expect.array
    got = f.array or f.message
    if want is None:
        return True
    if case.kind == "cuda" and case.expect.space == "global":
        from .table import _param_names  # {index: name} from the source's signature
        names = _param_names(case)
        k = next((i for i, n in names.items() if n == want), None)
        return k is not None and f"_param_{k}" in got
    return want in got


def match(case: Case, findings: list):
    """(the finding of jaxsimt's `findings` that reports the case's planted bug, or None; why not): of the
    case's check and kind, at the planted line (a race: naming both its lines), with the thread and block
    where one thread is at fault, the array, and the byte offset where it is defined."""
    e = case.expect
    mine = [f for f in findings if f.check == case.check and f.kind in KINDS[e.kind]]
    if not mine:
        return None, f"no {case.check} finding of kind {e.kind}"
    lines = set(e.lines or (e.line,))
    at = [f for f in mine if f.line in lines or f.other_line in lines]
    if not at:
        return None, f"no finding at line(s) {sorted(lines)}"
    why = ""
    for f in at:
        if e.kind == "race" and len(lines) == 2 and not {f.line, f.other_line} <= lines:
            why = "the race's other line differs"
        elif e.thread is not None and e.threads == 1 and e.thread not in (f.thread, f.other_thread):
            why = f"thread {f.thread}, not {e.thread}"
        elif e.block is not None and e.block not in (f.block, f.other_block):
            why = f"block {f.block}, not {e.block}"
        elif not _names_array(case, f):
            why = f"array {f.array!r}, not {e.array!r}"
        elif (e.offset is not None and e.threads == 1 and e.kind in ("out_of_bounds", "uninitialized")
              and f.extra.get("offset") != e.offset):
            why = f"offset {f.extra.get('offset')}, not {e.offset}"
        else:
            return f, ""
    return None, why
