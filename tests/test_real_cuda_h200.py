"""The real-CUDA corpus (jaxsimt/kernels/cuda/real_cuda.cu: bool-flag BFS, uniform division, Gaussian elimination
that ptxas contracts, aliased and offset pointers, a __constant__ table) run from its committed PTX equals
the outputs of the same PTX on an H200 (jaxsimt/data/h200/real_cuda/real_cuda.npz) bit for bit."""
import os

import numpy as np
import pytest

import jaxsimt
from jaxsimt.kernels import real_cuda

_SLOW = {"bfs", "gauss_f32"}  # many launches each


def _fixture(case):
    path = os.path.join(os.path.dirname(jaxsimt.__file__), "data", "h200", "real_cuda", "real_cuda.npz")
    with np.load(path) as f:
        return {k: f[k] for k in f.files if k.startswith(case + ".")}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in _SLOW else c
                                  for c in real_cuda.CASES])
def test_case_equals_h200_bit_for_bit(case):
    out = {f"{case}.{k}": v for k, v in real_cuda.run(real_cuda.JaxsimtBackend(), case).items()}
    want = _fixture(case)
    assert want, f"no fixture outputs for {case}"
    agree = real_cuda.agreement(want, out)
    bad = {k: v for k, v in agree.items() if v[0] != v[1]}
    assert not bad, f"bit-equal elements (of all) where they differ: {bad}"


def test_contraction_is_what_makes_elimination_agree():
    """Without ptxas's fusion the elimination step differs from the H200 (two roundings)."""
    out = real_cuda.run(real_cuda.JaxsimtBackend(contract=False), "gauss_step_f32")
    agree = real_cuda.agreement(_fixture("gauss_step_f32"), {f"gauss_step_f32.{k}": v for k, v in out.items()})
    ok, n = agree["gauss_step_f32.a"]
    assert ok < n
