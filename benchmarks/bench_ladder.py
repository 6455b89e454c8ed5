"""The main job's speed: `jaxsimt ladder` from a fresh cache (a first run after install), and the cycle-level
replay on the ladder's rungs: each rung replayed alone (`timing.run`: one compilation per replay shape)
against all of them as one vmapped batch (`timing.run_many`: one compilation).

    PYTHONPATH=$PWD python benchmarks/bench_ladder.py [--size 4096] [--repeats 3] [--no-wall] [--out FILE]

Prints a table; writes JSON (default benchmarks/results/ladder_<cpu|gpu>.json). Times are medians of
`--repeats` runs after compiling; compile times are reported apart. Warp instructions are those the window
issued (the replay extrapolates the rest, see docs/timing.md).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt.apps import ladder
from jaxsimt.timing import replay as timing


def ladder_wall(size: int) -> dict:
    """`jaxsimt ladder --size N N N` in a new process with an empty cache folder: wall seconds."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "jaxsimt.cli", "ladder", "--size", str(size), str(size), str(size),
                            "--json", os.path.join(out, "rows.json")], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(p.stderr[-2000:])
    return {"size": size, "wall_s": wall}


def _median(f, repeats: int) -> "tuple[float, object]":
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(f())
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def replays(size: int, repeats: int, arch: str = "h200") -> dict:
    """Reference (one rung at a time) against batched replays of every rung at size^3."""
    todo = ladder.rungs()
    works = []
    for r in todo:
        row = ladder.counters_row(r, size, size, size, arch)
        R = int(row["stats"]["active_blocks_per_sm"])
        t, n_ctas = ladder.trace_rung(r, size, size, size, arch, R)
        works.append((r.name, timing.plan(t, arch, R, n_ctas)))
    params = timing.params_of(arch)
    pol = jnp.int32(timing.POLICIES.index("gto"))
    ref = []
    for name, w in works:
        args = (params, w.kernel, jnp.asarray(w.queues), jnp.asarray(w.n_queue), jnp.asarray(w.share),
                jnp.asarray(w.total), pol)
        t0 = time.perf_counter()
        compiled = timing.replay.lower(*args, shape=w.shape, n_regs=w.n_regs).compile()
        c = time.perf_counter() - t0
        med, out = _median(lambda: compiled(*args), repeats)
        ref.append({"rung": name, "compile_s": c, "median_s": med,
                    "warp_instructions": int(np.asarray(out["issued"]).sum()),
                    "cycles": float(np.max(np.asarray(out["cycles"])))})
    shape, n_regs, kern, q, nq, sh, to, caps = timing.stack([w for _, w in works])
    t0 = time.perf_counter()
    compiled = timing._replay_batch.lower(params, kern, q, nq, sh, to, pol, caps, shape=shape, n_regs=n_regs).compile()
    c = time.perf_counter() - t0
    med, out = _median(lambda: compiled(params, kern, q, nq, sh, to, pol, caps), repeats)
    issued = int(np.asarray(out["issued"]).sum())
    cyc = [float(np.max(np.asarray(out["cycles"][b][:w.queues.shape[0]]))) for b, (_, w) in enumerate(works)]
    return {"size": size, "reference": ref,
            "batched": {"compile_s": c, "median_s": med, "warp_instructions": issued, "cycles": cyc,
                        "same_cycles_as_reference": all(abs(a - r["cycles"]) <= 1e-6 * r["cycles"]
                                                        for a, r in zip(cyc, ref))}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-wall", action="store_true", help="skip the fresh-process `jaxsimt ladder` timing")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    res = {"platform": platform.platform(), "jax": jax.__version__, "device": str(jax.devices()[0]),
           "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}
    if not a.no_wall:
        res["ladder"] = ladder_wall(a.size)
        print(f"jaxsimt ladder --size {a.size}^3, first run (empty cache): {res['ladder']['wall_s']:.1f} s "
              f"on {res['cores']} core(s)")
    rp = res["replays"] = replays(a.size, a.repeats)
    print(f"{'replay':<24} {'compile s':>9} {'run s':>8} {'warp inst':>10} {'warp inst/s':>12}")
    tot_c = tot_s = tot_i = 0
    for r in rp["reference"]:
        print(f"{r['rung']:<24} {r['compile_s']:>9.2f} {r['median_s']:>8.3f} {r['warp_instructions']:>10} "
              f"{r['warp_instructions'] / r['median_s']:>12.3g}")
        tot_c, tot_s, tot_i = tot_c + r["compile_s"], tot_s + r["median_s"], tot_i + r["warp_instructions"]
    b = rp["batched"]
    print(f"{'one at a time (sum)':<24} {tot_c:>9.2f} {tot_s:>8.3f} {tot_i:>10} {tot_i / tot_s:>12.3g}")
    print(f"{'batched (run_many)':<24} {b['compile_s']:>9.2f} {b['median_s']:>8.3f} {b['warp_instructions']:>10} "
          f"{b['warp_instructions'] / b['median_s']:>12.3g}")
    print(f"batched / one at a time: run {tot_s / b['median_s']:.2f}x, compile {tot_c / b['compile_s']:.2f}x; "
          f"same cycles: {b['same_cycles_as_reference']}")
    kind = "gpu" if jax.devices()[0].platform == "gpu" else "cpu"
    path = a.out or os.path.join(os.path.dirname(__file__), "results", f"ladder_{kind}.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=float)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
