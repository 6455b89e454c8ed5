"""`jaxsimt run`: run one PTX kernel with arguments described on the command line.

    jaxsimt run saxpy.ptx --kernel saxpy --grid 4 --block 256 \
        --arg s32:1000 --arg f32:2.5 --arg 'f32[1024]:rand' --arg 'f32[1024]:zeros' --json

One `--arg` per kernel parameter, in order: a scalar `TYPE:VALUE` (`s32:7`, `f32:1.5`, `u64:0`), or an array
`TYPE[N]:INIT` with INIT one of rand (floats uniform in [-1, 1), integers uniform in [0, 1000), from --seed),
zeros, ones, arange, or a path to a .npy file (loaded with allow_pickle=False). Arrays are passed as
pointers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np

from jaxsimt import types as T

_ARRAY = re.compile(r"^(\w+)\[(\d+)\]:(.+)$")


class ArgSpecError(ValueError):
    """An --arg that does not parse."""


def _np_dtype(name: str):
    if name not in T.BY_NAME or name == "pred":
        raise ArgSpecError(f"unknown type {name!r} (use one of {', '.join(t.name for t in T.ALL if t.name != 'pred')})")
    return T.BY_NAME[name].np_dtype


def parse_arg(spec: str, rng: np.random.Generator):
    """One --arg SPEC -> a numpy scalar or array."""
    if spec.endswith(".npy") and os.path.exists(spec):
        return np.load(spec, allow_pickle=False)
    m = _ARRAY.match(spec)
    if m:
        tname, n, init = m.group(1), int(m.group(2)), m.group(3)
        dt = np.dtype(_np_dtype(tname))
        if init == "rand":
            if T.BY_NAME[tname].is_float:
                return rng.uniform(-1.0, 1.0, n).astype(dt)
            return rng.integers(0, 1000, n).astype(dt)
        if init == "zeros":
            return np.zeros(n, dt)
        if init == "ones":
            return np.ones(n, dt)
        if init == "arange":
            return np.arange(n).astype(dt)
        if init.endswith(".npy"):
            a = np.load(init, allow_pickle=False)
            if a.size != n:
                raise ArgSpecError(f"{spec}: the file holds {a.size} elements, not {n}")
            return a.astype(dt).reshape(-1)
        raise ArgSpecError(f"{spec}: unknown initializer {init!r} (rand, zeros, ones, arange or a .npy path)")
    if ":" not in spec:
        raise ArgSpecError(f"{spec!r}: expected TYPE:VALUE, TYPE[N]:INIT or a .npy path")
    tname, val = spec.split(":", 1)
    dt = _np_dtype(tname)
    try:
        v = float(val) if T.BY_NAME[tname].is_float else int(val, 0)
    except ValueError:
        raise ArgSpecError(f"{spec!r}: {val!r} is not a {tname}") from None
    return np.asarray(v).astype(dt)[()]


def _dim3(s: str):
    try:
        v = tuple(int(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected X[,Y[,Z]], got {s!r}") from None
    if not 1 <= len(v) <= 3 or min(v) < 1:
        raise argparse.ArgumentTypeError(f"expected 1 to 3 positive integers, got {s!r}")
    return v


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxsimt run", description="Run a PTX kernel on the emulator.")
    p.add_argument("file", help="PTX file")
    p.add_argument("--kernel", required=True, help="entry name")
    p.add_argument("--grid", type=_dim3, required=True, help="X[,Y[,Z]]")
    p.add_argument("--block", type=_dim3, required=True, help="X[,Y[,Z]]")
    p.add_argument("--arg", action="append", default=[], help="one per kernel parameter, in order")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--arch", default="h200")
    p.add_argument("--save-outputs", metavar="DIR", help="write each array argument as DIR/argN_name.npy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dynamic-smem", type=int, default=0, metavar="BYTES")
    p.add_argument("--regs", type=int, default=None, help="registers per thread for occupancy")
    p.add_argument("--mode", choices=("stack", "its"), default="stack",
                   help="execution mode: stack (reconvergence stack, the default) or its (Independent Thread "
                        "Scheduling, Volta and later; docs/its.md)")
    p.add_argument("--carveout", type=int, default=None, metavar="KB",
                   help="L1/shared split: preferred shared memory per SM in KB (default: the largest allowed)")
    p.add_argument("--no-timing", action="store_true",
                   help="skip the cycle-level timing model (cycles, predicted_ms, stall reasons)")
    return p


def _has_timing(arch: str) -> bool:
    from jaxsimt.arch import get_arch

    try:
        return get_arch(arch).timing is not None
    except ValueError:
        return False


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        argv = argv[1:]
    a = parser().parse_args(argv)
    from jaxsimt import ptx
    from jaxsimt.errors import LaunchConfigError
    from jaxsimt.ptx.errors import PtxError

    rng = np.random.default_rng(a.seed)
    try:
        args = [parse_arg(s, rng) for s in a.arg]
        res = ptx.launch(a.file, a.kernel, a.grid, a.block, args, arch=a.arch.lower(), dynamic_smem=a.dynamic_smem,
                         regs=a.regs, mode=a.mode, timing=not a.no_timing and _has_timing(a.arch),
                         carveout=None if a.carveout is None else a.carveout * 1024)
    except (ArgSpecError, PtxError, TypeError, OSError, LaunchConfigError) as e:
        print(f"jaxsimt run: {e}", file=sys.stderr)
        return 2
    if a.save_outputs:
        os.makedirs(a.save_outputs, exist_ok=True)
        for k, (p, v) in enumerate(zip(res.program.params, res.args)):
            if isinstance(v, np.ndarray) and v.ndim > 0:
                np.save(os.path.join(a.save_outputs, f"arg{k}_{p.name}.npy"), v)
    if a.json:
        print(json.dumps({"kernel": res.kernel, "arch": res.arch, "grid": list(res.grid), "block": list(res.block),
                          "stats": res.stats}))
    else:
        print(f"{res.kernel} on {res.arch}: grid {res.grid}, block {res.block}")
        for k, v in res.stats.items():
            print(f"  {k:<60} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
