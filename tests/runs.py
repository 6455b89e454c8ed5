"""Running one kernel two ways and comparing the runs: what the tests of the machine's program passes share
(merged straight runs, threaded jumps, the interpreter tier)."""
from __future__ import annotations

import numpy as np

import jaxsimt as js
from jaxsimt.apps import conformance
from jaxsimt.kernels import gemm


def naive_gemm_case(n: int = 24):
    """The ladder's coalesced naive GEMM on n x n matrices in 2 x 2 blocks of 16 x 16:
    (kernel, grid, block, a function making the arguments)."""
    rng = np.random.default_rng(5)
    a, b = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    return (gemm.BY_NAME["naive_coalesced"].kernel(), (2, 2), (16, 16),
            lambda: [n, n, n, a, b, np.zeros((n, n), np.float32)])


def launch_fresh(case, **kw):
    """Launch on a machine built now, not one an earlier launch left on the program (which a pass monkeypatched
    since would not have made). `case`: a conformance case's name (its outputs checked against numpy) or
    (kernel, grid, block, a function making the arguments)."""
    check = None
    if isinstance(case, str):
        kind, c = conformance.cases()[case]
        if kind == "ptx":
            from jaxsimt.kernels import collection
            from jaxsimt.ptx.lower import _CACHE

            _CACHE.clear()  # a fresh program: machines are kept on it
            return collection.launch(c, **kw)[0]
        kernel, grid, block, make, check = c.kernel, c.grid, c.block, c.args, c.check
    else:
        kernel, grid, block, make = case
    kernel.program.__dict__.pop("_machines", None)
    args = make()
    r = js.launch(kernel, grid, block, args, **kw)
    if check is not None:
        check(r, args)
    return r


def assert_same_run(a, b):
    """Two launch results agree bit for bit: every output, every counter but the engine's, every instruction's row."""
    assert set(a.outputs) == set(b.outputs)
    for k in a.outputs:
        np.testing.assert_array_equal(np.asarray(a.outputs[k]).view(np.uint8), np.asarray(b.outputs[k]).view(np.uint8))
    assert conformance.differences(a.stats, b.stats) == []
    assert a.per_instruction == b.per_instruction
