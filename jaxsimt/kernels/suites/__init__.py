"""The public-suite corpus: kernels written for jaxsimt after named kernels of NVIDIA's CUDA samples, Rodinia,
PolyBench/GPU, Parboil and SHOC (`jaxsimt/kernels/suites/<suite>.cu`, PTX `jaxsimt/kernels/suites/<suite>.ptx` compiled by
nvcc), each with a host driver in Python (`jaxsimt/kernels/suites/<suite>.py`) that launches it as the original
host code does, and a numpy reference.

A driver module provides `PTX` (the PTX file's name beside it), `CASES` (case names in order) and
`run(backend, case, size=None, reference=True) -> (outputs, reference)`: both {name: numpy array};
`reference` holds what numpy computes for the same inputs (None when `reference` is false),
`TOLERANCE` {case: relative tolerance} where float rounding differs from numpy's (0, exact, otherwise).
Backends are those of `jaxsimt.kernels.real_cuda` (jaxsimt) and `jaxsimt/kernels/cuda/run_real_cuda.py` (CuPy on
a GPU): array, at, launch(name, grid, block, args, smem=0), get, set_constant. numpy only at import: the
GPU side loads these files by path.

Sizes. Each case's driver takes its problem size as keyword arguments whose defaults are the small size
of the committed fixtures (`size=None`: those defaults, the same inputs, launches and outputs bit for
bit). `TIMING` {case: {argument: value}} is the size at which the case runs long enough on an H200 to be
timed (jaxsimt/kernels/suites/time_gpu.py): grown as the original benchmark grows it (elements, matrix side,
grid), with the same launch structure; a case missing from `TIMING` has a fixed size (the sample's own).
`TIMING_NO_REFERENCE` names the cases whose numpy reference at timing size takes too long for the
collection (Python loops, or arrays of many GiB): the timing run skips their reference check.
"""
from __future__ import annotations

import importlib
import os
import re

import numpy as np

SUITES = ("cuda_samples", "rodinia", "polybench", "parboil", "shoc")
HERE = os.path.dirname(os.path.abspath(__file__))


def module(suite: str):
    """The driver module of `suite` (imported as part of this package)."""
    if suite not in SUITES:
        raise KeyError(f"no suite {suite!r}; suites: {', '.join(SUITES)}")
    return importlib.import_module(f"{__name__}.{suite}")


def ptx_path(suite: str) -> str:
    return os.path.join(HERE, f"{suite}.ptx")


def ptxas_registers(suite: str) -> dict:
    """{kernel: registers per thread} from ptxas's report of the suite's PTX (jaxsimt/kernels/suites/<suite>.ptxas.txt,
    written by regen.sh with the ptxas of the CUDA that compiled the PTX)."""
    out, name = {}, None
    with open(os.path.join(HERE, f"{suite}.ptxas.txt")) as f:
        for line in f:
            m = re.search(r"Compiling entry function '([^']+)'", line)
            if m:
                name = m.group(1)
            m = re.search(r"Used (\d+) registers", line)
            if m and name:
                out[name] = int(m.group(1))
    return out


def run_case(case_funcs: dict, be, case: str, size=None, reference=True):
    """(outputs, reference) of `case`: its driver `case_funcs[case]` run on backend `be` at `size` (None: the
    default size, else the driver's keyword arguments), the numpy reference computed only if `reference`
    (drivers return it as a function, so that a run that skips it does not pay for it)."""
    out, ref = case_funcs[case](be, **(size or {}))
    return out, (ref() if reference else None)


def programs() -> list:
    """Every (suite, case) of the corpus, in order."""
    return [(s, c) for s in SUITES for c in module(s).CASES]


def rand(seed: int, shape, lo=-1.0, hi=1.0, dtype=np.float32) -> np.ndarray:
    """Uniform floats in [lo, hi) from `seed` (the corpus's inputs: never zeros)."""
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def randint(seed: int, shape, lo=0, hi=1000, dtype=np.int32) -> np.ndarray:
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)


def close(got, want, rtol: float) -> bool:
    """got equals want exactly (rtol 0) or within rtol of the largest |want| element-wise."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if rtol == 0 or want.dtype.kind in "biu":
        return bool(np.array_equal(got, want))
    scale = max(float(np.max(np.abs(want.astype(np.float64)))), 1e-30)
    return bool(np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= rtol * scale))
