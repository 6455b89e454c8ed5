"""The ladder's fast path against `jnp.matmul` on the same device.

For each size N it times (median of repeats, after a warm-up that includes compilation):
- `fast`: the f32 rungs' C in their exact accumulation order (`jaxsimt.kernels.gemm.fast.gemm_c`'s JAX
  loop: one fma per k, k ascending, for all N^2 elements at once; bit-identical to the instruction-level
  kernels),
- `matmul`: `jnp.matmul(A, B, precision=HIGHEST)` (f32, the library's own blocked order),
and prints the ratio fast / matmul; the counters of the fast path (one emulated block per class) are
timed separately with --counters. Results are printed as a table and written as JSON
(benchmarks/results/fast_path_<platform>.json).

    python benchmarks/bench_fast_path.py [--sizes 1024 2048 4096] [--repeats 3] [--counters]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np


def _time(fn, repeats):
    out = fn()  # warm-up: compile and run once
    jax.block_until_ready(out)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--counters", action="store_true", help="also time the counters of the register-tiled rung")
    args = ap.parse_args()

    from jaxsimt.kernels.gemm import fast

    dev = jax.devices()[0]
    native = fast.native_fma()
    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(n)
        A = rng.standard_normal((n, n)).astype(np.float32)
        B = rng.standard_normal((n, n)).astype(np.float32)
        At, Bd = jax.device_put(np.ascontiguousarray(A.T)), jax.device_put(B)
        Ad = jax.device_put(A)
        with jax.enable_x64(True):
            t_fast, c_fast = _time(lambda: fast._sequential_fma(At, Bd, native), args.repeats)
        mm = jax.jit(lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST))
        t_mm, c_mm = _time(lambda: mm(Ad, Bd), args.repeats)
        err = float(np.max(np.abs(np.asarray(c_fast) - np.asarray(c_mm))) / np.max(np.abs(np.asarray(c_mm))))
        row = {"N": n, "fast_s": t_fast, "matmul_s": t_mm, "ratio": t_fast / t_mm, "max_rel_diff": err,
               "native_fma": native}
        if args.counters:
            from jaxsimt.kernels import gemm
            r = gemm.BY_NAME["register_tiled"]
            t0 = time.perf_counter()
            fast.gemm_stats("register_tiled", r.kernel(), n, n, n, launch_config=r.launch_config)
            row["counters_s"] = time.perf_counter() - t0
        rows.append(row)
        print(f"N={n}: fast {t_fast:.3f} s, matmul {t_mm:.4f} s, ratio {t_fast / t_mm:.1f}x", flush=True)
    print(f"\nfast path vs jnp.matmul on {dev.platform} ({dev.device_kind}); native fma: {native}")
    print(f"{'N':>6} {'fast s':>10} {'matmul s':>10} {'ratio':>8} {'counters s':>11}")
    for r in rows:
        print(f"{r['N']:>6} {r['fast_s']:>10.4f} {r['matmul_s']:>10.4f} {r['ratio']:>8.1f} "
              f"{r.get('counters_s', float('nan')):>11.1f}")
    out_dir = os.environ.get("OUT") or os.path.join(os.path.dirname(__file__), "results")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"fast_path_{dev.platform}.json")
    with open(path, "w") as f:
        json.dump({"device": f"{dev.platform}:{dev.device_kind}", "rows": rows}, f, indent=1)
    print(f"written {path}")


if __name__ == "__main__":
    main()
