"""Batched launches and scale-out: speedup of one batched launch over a loop of launches, and strong
scaling of one large grid over several devices.

batch: `jaxsimt.launch_batch` once versus `jaxsimt.launch` B times, all counters on (each compiled
beforehand: the median of repeats is steady state; compile times are reported apart), for two kernels:
`strided` (the "which of these access patterns is best" question: one block of 128 threads reads
inp[g * stride + offset], (stride, offset) per item) and `histogram` (1024 values per item, 4 blocks of
256 threads, atomics). scaling: the naive coalesced GEMM at N
(a grid of (N/16)^2 blocks in 8 or more waves) on 1, 2, 4, ... devices (`launch(devices=n)`); C and every
counter must equal the 1-device run. On the CPU the devices are host devices of one process
(XLA_FLAGS=--xla_force_host_platform_device_count=8, set in a subprocess): they share the machine's cores.
Table on stdout, JSON in benchmarks/results/batch_<platform>.json (or $OUT when set).

    python benchmarks/bench_batch.py [--batches 1 16 256] [--repeats 3] [--scaling-n 256] [--devices 1 2 4 8]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import jaxsimt as js  # noqa: E402
from jaxsimt import Ptr, f32, s32  # noqa: E402
from jaxsimt.kernels import seeds  # noqa: E402


@js.kernel
def strided(stride: s32, offset: s32, inp: Ptr[f32], out: Ptr[f32]):
    """One access pattern per launch: thread g reads inp[g * stride + offset]."""
    g = js.global_thread_index()
    out[g] = inp[g * stride + offset]


def _case(name, B, rng):
    """(kernel, grid, block, batched args, in_axes, one item's args) of a benchmark case."""
    if name == "strided":
        stride = rng.integers(1, 33, B).astype(np.int32)
        offset = rng.integers(0, 32, B).astype(np.int32)
        inp = rng.random(128 * 32 + 32, np.float32)
        out = np.zeros((B, 128), np.float32)
        return (strided, 1, 128, (stride, offset, inp, out), (0, 0, None, 0),
                lambda i: (stride[i], offset[i], inp, out[i]))
    n, bins = 1024, 16
    data = rng.integers(0, 1000, (B, n)).astype(np.int32)
    hist = np.zeros((B, bins), np.uint32)
    return (seeds.histogram, 4, 256, (n, bins, data, hist), (None, None, 0, 0),
            lambda i: (n, bins, data[i], hist[i]))


def _median(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_batch(batches, repeats, cases=("strided", "histogram")) -> list[dict]:
    rows = []
    for case, B in [(c, B) for c in cases for B in batches]:
        kernel, grid, block, bargs, axes, item = _case(case, B, np.random.default_rng(B))

        def looped():
            return [js.launch(kernel, grid, block, item(i)) for i in range(B)]

        def batched():
            return js.launch_batch(kernel, grid, block, bargs, in_axes=axes)

        t0 = time.perf_counter()
        loop_res = looped()
        loop_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        batch_res = batched()
        batch_first = time.perf_counter() - t0
        same = all(all(np.array_equal(a.outputs[k], b.outputs[k]) for k in a.outputs) and
                   {k: v for k, v in a.stats.items() if k != "emulator__steps"} ==
                   {k: v for k, v in b.stats.items() if k != "emulator__steps"} for a, b in zip(loop_res, batch_res))
        t_loop = _median(looped, repeats)
        t_batch = _median(batched, repeats)
        rows.append({"kernel": case, "batch": B, "looped_s": t_loop, "batched_s": t_batch, "speedup": t_loop / t_batch,
                     "looped_first_s": loop_first, "batched_first_s": batch_first, "equal": bool(same),
                     "launches_per_s_batched": B / t_batch, "launches_per_s_looped": B / t_loop})
    return rows


def bench_scaling(n, device_counts, repeats, blocks_per_wave=None) -> list[dict]:
    from jaxsimt.kernels import gemm

    k = gemm.BY_NAME["naive_coalesced"].kernel()
    grid, block = gemm.BY_NAME["naive_coalesced"].launch_config(n, n, n)
    rng = np.random.default_rng(0)
    A, Bm = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    args = (n, n, n, A, Bm, np.zeros((n, n), np.float32))
    rows, ref = [], None
    for d in device_counts:
        def run():
            return js.launch(k, grid, block, args, devices=d, blocks_per_wave=blocks_per_wave)
        t0 = time.perf_counter()
        r = run()
        first = time.perf_counter() - t0
        if ref is None:
            ref = r
        same = bool(np.array_equal(r["C"], ref["C"]) and r.stats == ref.stats)
        t = _median(run, repeats)
        rows.append({"devices": d, "N": n, "median_s": t, "first_call_s": first, "equal_to_1_device": same,
                     "fma_per_s": n ** 3 / t, "blocks": int(np.prod(grid))})
    for r in rows:
        r["speedup"] = rows[0]["median_s"] / r["median_s"]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="*", default=[1, 16, 256])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scaling-n", type=int, default=256)
    ap.add_argument("--devices", type=int, nargs="*", default=None,
                    help="device counts for the scaling run (default: 1 2 4 8 host devices on the CPU, "
                         "every power of two up to the device count elsewhere)")
    ap.add_argument("--blocks-per-wave", type=int, default=None)
    ap.add_argument("--no-scaling", action="store_true", help="only the batched-vs-looped part")
    ap.add_argument("--scaling-only", action="store_true", help=argparse.SUPPRESS)  # the host-device subprocess
    args = ap.parse_args()
    dev = jax.devices()[0]
    plat = dev.platform

    if args.scaling_only:
        print(json.dumps(bench_scaling(args.scaling_n, args.devices, args.repeats, args.blocks_per_wave)))
        return
    out = {"device": f"{plat}:{dev.device_kind}", "device_count": jax.device_count(), "cpus": os.cpu_count(),
           "python": platform.python_version(), "jax": jax.__version__}
    out["batch"] = bench_batch(args.batches, args.repeats)
    print(f"batched vs looped launches on {plat} ({dev.device_kind}); strided: 1 block x 128 threads per item, "
          f"histogram: 4 blocks x 256 threads per item")
    print(f"{'kernel':>10} {'batch':>6} {'looped s':>10} {'batched s':>10} {'speedup':>8} {'equal':>6} "
          f"{'compile+run s (loop/batch)':>27}")
    for r in out["batch"]:
        print(f"{r['kernel']:>10} {r['batch']:>6} {r['looped_s']:>10.4f} {r['batched_s']:>10.4f} {r['speedup']:>8.1f} "
              f"{str(r['equal']):>6} {r['looped_first_s']:>13.2f} / {r['batched_first_s']:.2f}")

    if args.no_scaling:
        print(f"written {_write(out, plat)}")
        return
    if plat == "cpu":
        counts = args.devices or [1, 2, 4, 8]
        bpw = args.blocks_per_wave or max(1, (args.scaling_n // 16) ** 2 // 8)  # 8 waves
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={max(counts)}",
                   JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
        p = subprocess.run([sys.executable, __file__, "--scaling-only", "--scaling-n", str(args.scaling_n),
                            "--repeats", str(args.repeats), "--blocks-per-wave", str(bpw), "--devices",
                            *map(str, counts)], env=env, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(p.stderr[-3000:])
        out["scaling"] = json.loads(p.stdout.strip().splitlines()[-1])
        out["scaling_note"] = f"{max(counts)} host devices of one process on {os.cpu_count()} CPU cores"
    else:
        n_dev = jax.device_count()
        counts = args.devices or [d for d in (1, 2, 4, 8) if d <= n_dev]
        _write(out, plat)  # the batch figures, should the scaling run fail
        out["scaling"] = bench_scaling(args.scaling_n, counts, args.repeats, args.blocks_per_wave)
    print(f"strong scaling, naive GEMM N={args.scaling_n} ({out['scaling'][0]['blocks']} blocks)")
    print(f"{'devices':>8} {'median s':>10} {'speedup':>8} {'equal':>6} {'first call s':>13}")
    for r in out["scaling"]:
        print(f"{r['devices']:>8} {r['median_s']:>10.3f} {r['speedup']:>8.2f} {str(r['equal_to_1_device']):>6} "
              f"{r['first_call_s']:>13.2f}")
    print(f"written {_write(out, plat)}")


def _write(out: dict, plat: str) -> str:
    dest = os.environ.get("OUT") or os.path.join(HERE, "results")
    os.makedirs(dest, exist_ok=True)
    path = os.path.join(dest, f"batch_{plat}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    return path


if __name__ == "__main__":
    main()
