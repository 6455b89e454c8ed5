"""`jaxsimt sweep`: the GEMM ladder over a grid of tile configurations in one call, and the best one.

For each configuration (a rung of `jaxsimt.kernels.gemm` and its tile parameters) the counters of the
full launch come from one emulated block per class of identical blocks (`jaxsimt/kernels/gemm/fast.py`); all
those blocks, of every configuration, run through `jaxsimt.sweep` (one batched launch per kernel shape).
The models then run once over all configurations: occupancy (`occupancy_arrays`) and the analytical
cost model (`cost.predict_seconds`, `cost.bounds`) vmapped over the stacked counters. The winner is the
configuration with the smallest predicted time; `explain` says why, from its counters and bounds.

    jaxsimt sweep [--arch h200] [--size 2048 2048 2048] [--json] [--configs smem_tiled:T=16,...]
"""
from __future__ import annotations

import functools
import json
import time
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt.run.command import command as command_main

# The configurations swept by default: every rung with tiles, at sizes its factory accepts.
DEFAULT_CONFIGS: list[tuple[str, dict]] = [
    ("smem_tiled", {"T": 8}), ("smem_tiled", {"T": 16}), ("smem_tiled", {"T": 32}),
    ("coarsened", {"T": 16, "COARSEN": 2}), ("coarsened", {"T": 32, "COARSEN": 2}),
    ("coarsened", {"T": 32, "COARSEN": 4}), ("coarsened", {"T": 64, "COARSEN": 4}),
    ("register_tiled", {}), ("register_tiled", {"BK": 16}),
    ("register_tiled", {"BM": 128, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "MR": 4, "NR": 8}),
    ("register_tiled", {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "MR": 8, "NR": 8}),
]

_COUNTERS = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "emulator__tensor_flops",
             "launch__grid_size", "launch__block_size", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")


def config_name(rung: str, params: dict) -> str:
    return rung + ("" if not params else "[" + ",".join(f"{k}={v}" for k, v in params.items()) + "]")


def parse_configs(text: str) -> list[tuple[str, dict]]:
    """'smem_tiled:T=16;register_tiled:BM=128,BN=64' -> [(rung, params)]."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        rung, _, rest = item.partition(":")
        params = {k: int(v) for k, v in (kv.split("=") for kv in filter(None, rest.split(",")))}
        out.append((rung, params))
    return out


def emulate(M: int, N: int, K: int, arch: str, configs: Sequence[tuple[str, dict]], progress: "bool | None" = None):
    """Counters of each configuration's full launch: [(stats, per_instruction, grid, block)], from one
    block per class of identical blocks, all blocks of all configurations in one `jaxsimt.sweep`."""
    import jaxsimt as js
    from jaxsimt.kernels import gemm
    from jaxsimt.kernels.gemm import fast

    args = (M, N, K, np.zeros((M, K), np.float32), np.zeros((K, N), np.float32), np.zeros((M, N), np.float32))
    specs, owner, shapes = [], [], []
    for c, (name, params) in enumerate(configs):
        rung = gemm.BY_NAME[name]
        kernel = rung.kernel(**params)
        grid, block = rung.launch_config(M, N, K, **params)
        classes = fast.block_classes(name, M, N, K, grid, fast.tile_map(name, **params))
        shapes.append((grid, block))
        for cta, count in classes:
            specs.append(js.LaunchSpec(kernel, grid, block, args, arch, {"ctas": [cta], "data": False}))
            owner.append((c, count))
    results = js.sweep(specs, progress=progress, description=f"tile sweep {M}x{N}x{K}")
    out = []
    for c, (grid, block) in enumerate(shapes):
        runs = [(r, n) for r, (o, n) in zip(results, owner) if o == c]
        steps = max(r.stats["emulator__steps"] for r, _ in runs)  # the classes ran as one batch
        stats, per_instr = fast.combine([r for r, _ in runs], [n for _, n in runs], grid, steps=steps)
        out.append((stats, per_instr, grid, block))
    return out


@functools.lru_cache(maxsize=None)
def _vmapped_cost():
    """The cost model's time and bounds, vmapped over configurations (params shared), compiled once."""
    from jaxsimt.timing import cost

    return (jax.jit(jax.vmap(cost.predict_seconds, in_axes=(0, None, 0, 0))),
            jax.jit(jax.vmap(cost.bounds, in_axes=(0, None, 0, 0))))


def models(arch: str, stats: list[dict], M: int, N: int, K: int) -> dict:
    """Occupancy and the analytical cost model over all configurations at once (one vmapped call each).

    Returns arrays [C]: predicted_s, bounds_s {unit: [C]}, occupancy, active_blocks_per_sm, limiter."""
    from jaxsimt.timing import cost
    from jaxsimt.units.banks import METRIC_WAVEFRONTS
    from jaxsimt.units.coalescing import METRIC_SECTORS
    from jaxsimt.units.occupancy import occupancy_arrays

    def col(key):
        return np.asarray([float(s.get(key, 0)) for s in stats])

    occ = occupancy_arrays(arch, col("launch__block_size").astype(np.int32),
                           col("launch__registers_per_thread").astype(np.int32),
                           col("launch__shared_mem_per_block_static").astype(np.int32))
    keys = list(_COUNTERS) + [m.format(op=op) for m in (METRIC_SECTORS, METRIC_WAVEFRONTS) for op in ("ld", "st")]
    stacked = {k: jnp.asarray(col(k), jnp.float32) for k in keys}
    stacked["occupancy"] = occ["occupancy"]
    params = cost.params_of(arch)
    C = len(stats)
    dram = jnp.full((C,), 4.0 * (M * K + K * N + M * N))
    fmas = jnp.full((C,), float(M) * N * K)
    predict, bounds = _vmapped_cost()
    return {"predicted_s": np.asarray(predict(stacked, params, dram, fmas)),
            "bounds_s": {k: np.asarray(v) for k, v in bounds(stacked, params, dram, fmas).items()},
            "occupancy": np.asarray(occ["occupancy"]), "active_blocks_per_sm": np.asarray(occ["active_blocks_per_sm"]),
            "limiter": np.asarray(occ["limiter"])}


def pattern_sweep(arch: str, addresses, size: int = 4, active=None) -> dict:
    """The memory models over many warp access patterns in one vmapped call each: addresses [P, L]
    byte addresses (global) or shared-memory offsets (shared), active [P, L] (default all). Returns
    [P] int32 arrays: global requests, sectors, lines; shared wavefronts, bank conflicts. For questions
    such as "which stride or padding of a tile's rows is conflict-free" without emulating a kernel."""
    from jaxsimt.units import banks, coalescing

    addresses = jnp.asarray(addresses)
    active = jnp.ones(addresses.shape, bool) if active is None else jnp.asarray(active, bool)
    g = jax.jit(jax.vmap(lambda a, m: coalescing.coalesce(arch, a, size, m)))(addresses, active)
    b = jax.jit(jax.vmap(lambda a, m: banks.bank_access(arch, a, size, m)))(addresses, active)
    return {"requests": np.asarray(g.requests), "sectors": np.asarray(g.sectors), "lines": np.asarray(g.lines),
            "wavefronts": np.asarray(b.wavefronts), "bank_conflicts": np.asarray(b.conflicts)}


def tile_sweep(M: int, N: int, K: int, arch: str = "h200", configs: Optional[Sequence[tuple[str, dict]]] = None,
               progress: "bool | None" = None) -> list[dict]:
    """One row per configuration, in the order given (default `DEFAULT_CONFIGS`), with its counters,
    occupancy, predicted time, the bound that limits it and `best` (True for the fastest)."""
    from jaxsimt.units.banks import METRIC_CONFLICTS, METRIC_WAVEFRONTS
    from jaxsimt.units.coalescing import METRIC_REQUESTS, METRIC_SECTORS
    from jaxsimt.timing.cost import loads_plus_stores
    from jaxsimt.units.occupancy import LIMITERS

    configs = list(DEFAULT_CONFIGS if configs is None else configs)
    t0 = time.perf_counter()
    emulated = emulate(M, N, K, arch, configs, progress)
    t_emulate = time.perf_counter() - t0
    stats = [e[0] for e in emulated]
    t1 = time.perf_counter()
    mod = models(arch, stats, M, N, K)
    t_models = time.perf_counter() - t1
    best = int(np.argmin(mod["predicted_s"]))
    rows = []
    for c, ((name, params), (st, per_instr, grid, block)) in enumerate(zip(configs, emulated)):
        req, sec = loads_plus_stores(st, METRIC_REQUESTS), loads_plus_stores(st, METRIC_SECTORS)
        shared_req = sum(r["warp_exec"] for r in per_instr if r.get("space") == "shared")
        bounds_ms = {k: float(v[c]) * 1e3 for k, v in mod["bounds_s"].items()}
        t = float(mod["predicted_s"][c])
        rows.append({
            "config": config_name(name, params), "rung": name, "params": params, "grid": list(grid),
            "block": list(block), "predicted_ms": t * 1e3, "gflops": 2.0 * M * N * K / t / 1e9,
            "limiter": max(bounds_ms, key=bounds_ms.get), "bounds_ms": bounds_ms,
            "warp_instructions": int(st["smsp__inst_executed.sum"]),
            "global_sectors": int(sec), "sectors_per_request": sec / req if req else 0.0,
            "shared_wavefronts_per_request": loads_plus_stores(st, METRIC_WAVEFRONTS) / shared_req if shared_req else 0.0,
            "bank_conflicts": int(loads_plus_stores(st, METRIC_CONFLICTS)),
            "registers_per_thread": int(st["launch__registers_per_thread"]),
            "shared_bytes": int(st["launch__shared_mem_per_block_static"]),
            "occupancy": float(mod["occupancy"][c]), "active_blocks_per_sm": int(mod["active_blocks_per_sm"][c]),
            "occupancy_limiter": LIMITERS[int(mod["limiter"][c])], "best": c == best,
            "stats": st,
        })
    for r in rows:
        r["timing_s"] = {"emulate": t_emulate, "models": t_models}
    return rows


def explain(rows: list[dict]) -> str:
    """Why the best configuration wins: its limiting bound, and the counters that set it, beside the
    runner-up's and the slowest's."""
    order = sorted(rows, key=lambda r: r["predicted_ms"])
    b, second, worst = order[0], order[1] if len(order) > 1 else order[0], order[-1]

    def line(r):
        return (f"{r['config']}: {r['predicted_ms']:.4g} ms, limited by {r['limiter']} "
                f"({r['bounds_ms'][r['limiter']]:.4g} ms); {r['warp_instructions']:,} warp instructions, "
                f"{r['global_sectors']:,} global sectors ({r['sectors_per_request']:.2f}/request), "
                f"{r['shared_wavefronts_per_request']:.2f} shared wavefronts/request, {r['bank_conflicts']:,} "
                f"bank conflicts, occupancy {r['occupancy']:.2f} ({r['active_blocks_per_sm']} blocks/SM, "
                f"limited by {r['occupancy_limiter']})")

    return "\n".join([f"best    {line(b)}", f"second  {line(second)}", f"slowest {line(worst)}"])


def render(rows: list[dict], M: int, N: int, K: int, arch: str, console) -> None:
    """Print the sweep's table (fastest first), the explanation and the timings with rich."""
    from rich.table import Table

    t = Table(title=f"GEMM tile sweep, {M}x{N}x{K} f32 on {arch} (analytical model)")
    for c in ("config", "pred. ms", "GFLOP/s", "limiter", "warp inst", "sect/req", "wavef/req", "conflicts",
              "regs", "occupancy"):
        t.add_column(c, justify="left" if c in ("config", "limiter") else "right")
    for r in sorted(rows, key=lambda r: r["predicted_ms"]):
        t.add_row(("* " if r["best"] else "") + r["config"], f"{r['predicted_ms']:.3f}", f"{r['gflops']:,.0f}",
                  r["limiter"], f"{r['warp_instructions']:,}", f"{r['sectors_per_request']:.2f}",
                  f"{r['shared_wavefronts_per_request']:.2f}", f"{r['bank_conflicts']:,}",
                  str(r["registers_per_thread"]), f"{r['occupancy']:.2f} ({r['occupancy_limiter']})")
    console.print(t)
    console.print(explain(rows))
    tm = rows[0]["timing_s"]
    console.print(f"{len(rows)} configurations: emulation {tm['emulate']:.1f} s, models {tm['models']:.2f} s")


def check_size(M: int, N: int, K: int, limit: int = 1 << 16) -> None:
    """--size M N K: positive, and small enough that the counters stay exact and the run ends."""
    from jaxsimt.errors import UsageError

    for name, v in zip("MNK", (M, N, K)):
        if not 1 <= v <= limit:
            raise UsageError(f"--size {M} {N} {K}: {name} = {v} must be from 1 to {limit}")


def check_configs(configs: Sequence[tuple[str, dict]], M: int, N: int, K: int) -> None:
    """Every configuration names a rung and parameters its kernel factory accepts (checked before any emulation)."""
    import inspect

    from jaxsimt.errors import UsageError
    from jaxsimt.kernels import gemm

    for name, params in configs:
        rung = gemm.BY_NAME.get(name)
        if rung is None:
            raise UsageError(f"--configs: unknown rung {name!r} (one of {', '.join(gemm.BY_NAME)})")
        accepted = [p for p in inspect.signature(rung.factory).parameters]
        unknown = [k for k in params if k not in accepted]
        if unknown:
            raise UsageError(f"--configs {config_name(name, params)}: {name} takes no parameter {unknown[0]!r} "
                             f"(it takes {', '.join(accepted) or 'none'})")
        try:
            rung.kernel(**params)
            rung.launch_config(M, N, K, **params)
        except (TypeError, ValueError, AssertionError, ZeroDivisionError) as e:
            raise UsageError(f"--configs {config_name(name, params)}: not a valid configuration: {e}") from None


@command_main("sweep")
def main(argv=None) -> int:
    from jaxsimt.run.command import ArgumentParser, add_arch
    from jaxsimt.errors import UsageError

    ap = ArgumentParser(prog="jaxsimt sweep", description=__doc__.splitlines()[0])
    add_arch(ap)
    ap.add_argument("--size", type=int, nargs=3, default=[2048, 2048, 2048], metavar=("M", "N", "K"),
                    help="GEMM size: C[M, N] = A[M, K] B[K, N]")
    ap.add_argument("--configs", default="", metavar="'RUNG:K=V,K=V;RUNG:...'",
                    help="configurations to sweep, e.g. 'smem_tiled:T=16;register_tiled:BM=128,BN=64' (default: "
                         "the built-in grid of " + str(len(DEFAULT_CONFIGS)) + " configurations)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    M, N, K = args.size
    check_size(M, N, K)
    try:
        configs = parse_configs(args.configs)
    except ValueError:
        raise UsageError(f"--configs {args.configs!r}: expected 'RUNG:K=V,K=V;RUNG:...' with whole-number "
                         f"values") from None
    check_configs(configs or DEFAULT_CONFIGS, M, N, K)
    from rich.console import Console

    console = Console(stderr=args.json, width=max(Console().width, 160))
    rows = tile_sweep(M, N, K, args.arch, configs or None, progress=False if args.json else None)
    if args.json:
        print(json.dumps(rows, indent=1, default=float))
        return 0
    render(rows, M, N, K, args.arch, console)
    return 0
