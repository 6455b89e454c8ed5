"""Conformance: every shipped kernel equals its numpy reference, and its counters equal the golden values
committed in `jaxsimt/data/golden_counters.json`.

The golden values pin what the machine counts (every stat of `LaunchResult.stats` but the engine's own
`emulator__steps`), so that a change to how the machine executes — its tiers, its step, its scheduling —
is checked to change no number a user reads. Cases are the H200 collection's PTX launches
(`jaxsimt.kernels.collection`) and the seeds' DSL kernels with their references.

    python -m jaxsimt.apps.conformance                 # check every case that has a golden value
    python -m jaxsimt.apps.conformance --write NAME... # (re)compute and store golden values
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "golden_counters.json")
# The engine's own figure: how many machine steps a launch took depends on how the machine runs it.
ENGINE_STATS = ("emulator__steps",)


@dataclass
class DslCase:
    """A DSL kernel launch with a numpy check of its outputs."""

    name: str
    kernel: Callable
    grid: tuple
    block: tuple
    args: Callable[[], tuple]
    check: Callable  # (result, args) -> None, asserts
    slow: bool = False


def _dsl_cases() -> list[DslCase]:
    from jaxsimt.kernels import seeds

    rng = lambda s: np.random.default_rng(s)  # noqa: E731
    out = []

    def saxpy_args():
        x = rng(1).uniform(-1, 1, 1000).astype(np.float32)
        return 1000, np.float32(1.5), x, rng(2).uniform(-1, 1, 1000).astype(np.float32)

    def saxpy_check(r, a):
        want = (np.float32(1.5) * a[2] + a[3]).astype(np.float32)
        np.testing.assert_allclose(r["y"], want, rtol=1e-6)

    out.append(DslCase("dsl_saxpy", seeds.saxpy, (8,), (128,), saxpy_args, saxpy_check))

    def mm_args(N=40, M=24):
        return (N, M, rng(3).uniform(-1, 1, (N, M)).astype(np.float32),
                rng(4).uniform(-1, 1, (M, N)).astype(np.float32), np.zeros((N, N), np.float32))

    def mm_check(r, a):
        np.testing.assert_allclose(r["C"], a[2].astype(np.float64) @ a[3], rtol=1e-4, atol=1e-5)

    out.append(DslCase("dsl_naive_matmul", seeds.naive_matrix_multiply, (3, 3), (16, 16), mm_args, mm_check))
    out.append(DslCase("dsl_matmul_tiled", seeds.matmul_tiled, (2, 2), (16, 16),
                       lambda: mm_args(32, 32), mm_check))

    def red_args():
        return rng(5).uniform(-1, 1, 4 * 128).astype(np.float32), np.zeros(4, np.float32)

    def red_check(r, a):
        np.testing.assert_allclose(r["out"], a[0].reshape(4, 128).sum(axis=1), rtol=1e-4, atol=1e-5)

    out.append(DslCase("dsl_reduce_sequential", seeds.reduce_sequential, (4,), (128,), red_args, red_check))
    out.append(DslCase("dsl_reduce_interleaved", seeds.reduce_interleaved, (4,), (128,), red_args, red_check))

    def hist_args():
        return 1000, 7, rng(6).integers(0, 1000, 1000).astype(np.int32), np.zeros(7, np.uint32)

    def hist_check(r, a):
        np.testing.assert_array_equal(r["hist"], np.bincount(a[2] % 7, minlength=7).astype(np.uint32))

    out.append(DslCase("dsl_histogram", seeds.histogram, (4,), (256,), hist_args, hist_check))
    return out


def cases() -> dict:
    """name -> (kind, case): kind "ptx" (a `collection.Case`) or "dsl" (a `DslCase`)."""
    from jaxsimt.kernels import collection

    out = {c.name: ("ptx", c) for c in collection.CASES}
    out.update({c.name: ("dsl", c) for c in _dsl_cases()})
    return out


def run_case(name: str, **launch_kw):
    """Launch one case, check its outputs against numpy, and return its stats (without ENGINE_STATS)."""
    import jaxsimt
    from jaxsimt.kernels import collection

    kind, case = cases()[name]
    if kind == "ptx":
        r, args = collection.launch(case, **launch_kw)
    else:
        args = case.args()
        r = jaxsimt.launch(case.kernel, case.grid, case.block, args, **launch_kw)
    case.check(r, args)
    return {k: v for k, v in r.stats.items() if k not in ENGINE_STATS}


def load_golden(path: str = GOLDEN) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def _plain(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float(v)


def differences(stats: dict, golden: dict) -> list[str]:
    """Names of stats whose values differ from the golden ones (ints exactly, floats to 1e-9 relative),
    with both values."""
    out = []
    for k in sorted(set(stats) | set(golden)):
        if k in ENGINE_STATS:
            continue
        a, b = stats.get(k), golden.get(k)
        if a is None or b is None:
            out.append(f"{k}: {a!r} != golden {b!r}")
        elif isinstance(b, int) and not isinstance(b, bool):
            if int(a) != b:
                out.append(f"{k}: {a!r} != golden {b!r}")
        elif not np.isclose(float(a), float(b), rtol=1e-9, atol=0.0, equal_nan=True):
            out.append(f"{k}: {a!r} != golden {b!r}")
    return out


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jaxsimt.apps.conformance", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="cases (default: every case with a golden value)")
    ap.add_argument("--write", action="store_true", help="compute and store golden values for NAMES")
    ap.add_argument("--quick", action="store_true", help="only the cases the quick test suite runs")
    a = ap.parse_args(argv)
    all_cases = cases()
    golden = load_golden()
    names = a.names or (sorted(all_cases) if a.write else sorted(golden))
    if a.quick:
        names = [n for n in names if not all_cases[n][1].slow]
    bad = 0
    for n in names:
        stats = run_case(n)
        if a.write:
            golden[n] = {k: _plain(v) for k, v in sorted(stats.items())}
            with open(GOLDEN, "w") as f:
                json.dump(golden, f, indent=0, sort_keys=True)
            print(f"{n}: written", flush=True)
        else:
            diff = differences(stats, golden.get(n, {}))
            bad += bool(diff)
            print(f"{n}: {'ok' if not diff else 'DIFFERS: ' + '; '.join(diff)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
