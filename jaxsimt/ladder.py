"""`jaxsimt ladder`: the GEMM ladder report — seed 000's missing summary table.

For each rung (naive uncoalesced, naive coalesced, shared-memory tiling, thread coarsening, warp and
register tiling, Tensor Cores), at any size and on any architecture: the counters an instruction-level
run would give (computed exactly from one emulated block per class of identical blocks, see
`jaxsimt.kernels.gemm.fast`), sectors per request, shared wavefronts per request, occupancy and its
limiter, SIMD efficiency, arithmetic intensity, the predicted time and GFLOP/s, and — where the H200 timings
are committed — the measured time beside the prediction. The prediction is the cycle-level model's
(`jaxsimt.timing`, replaying each rung's PTX trace) where the architecture's timing parameters are
calibrated (the H200), else the analytical model's (`jaxsimt.cost`, always shown beside it).

    jaxsimt ladder [--arch h200] [--size 4096 4096 4096] [--json] [--plot FILE.png] [--rungs a,b]
                   [--cycle-level | --analytical-only]
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class LadderRung:
    name: str
    kernel: Callable  # () -> kernel
    launch_config: Callable  # (M, N, K) -> (grid, block)
    args: Callable  # (M, N, K) -> launch arguments (arrays only give the layout)
    why: str  # what this rung changes, in one line


def rungs() -> list[LadderRung]:
    from jaxsimt.kernels import gemm

    why = {
        "naive_uncoalesced": "row from threadIdx.x: lanes walk down columns of A and C (strided, uncoalesced)",
        "naive_coalesced": "column from threadIdx.x: B and C rows coalesce, A is broadcast to a half-warp",
        "smem_tiled": "T x T tiles staged in shared memory: each global element reused T times",
        "coarsened": "each thread computes 2 x 2 outputs: fewer loads and instructions per FMA",
        "register_tiled": "warp tiles and 4 x 4 register micro-tiles fed by outer products from shared memory",
        "wmma": "Tensor Cores: one warp-wide m16n16k16 MMA per 16 of k (f16 inputs, f32 accumulate)",
    }
    out = []
    for r in gemm.RUNGS:
        if r.name == "wmma":
            continue

        def f32_args(M, N, K):
            return (M, N, K, np.zeros((M, K), np.float32), np.zeros((K, N), np.float32),
                    np.zeros((M, N), np.float32))

        out.append(LadderRung(r.name, r.kernel, r.launch_config, f32_args, why.get(r.name, "")))
    try:
        from jaxsimt.kernels import wmma_gemm as w
    except ImportError:
        return out
    out.append(LadderRung(
        "wmma", lambda: w.gemm_wmma("hardware"),
        lambda M, N, K: (((N + w.BN - 1) // w.BN, (M + w.BM - 1) // w.BM), (w.THREADS, 1)),
        lambda M, N, K: (np.zeros(M * K, np.float16), np.zeros(K * N, np.float16), np.zeros(M * N, np.float32),
                         M, N, K),
        why["wmma"]))
    return out


def _shared_requests(per_instruction) -> int:
    return sum(r["warp_exec"] for r in per_instruction if r.get("space") == "shared")


def analyse(rung: LadderRung, M: int, N: int, K: int, arch: str, timing: bool = False) -> dict:
    """One rung's row: counters, the analytical model and (timing=True) the cycle-level model, whose
    prediction is then `predicted_ms` (the analytical one stays as `predicted_ms_analytical`)."""
    from jaxsimt import cost
    from jaxsimt.kernels.gemm import fast

    t0 = time.perf_counter()
    stats, per_instr, classes = fast.gemm_stats(rung.name, rung.kernel(), M, N, K, arch=arch,
                                                args=rung.args(M, N, K), launch_config=rung.launch_config)
    flops = 2.0 * M * N * K
    fmas = 0.0 if rung.name == "wmma" else M * N * K
    ab = 2 if rung.name == "wmma" else 4
    dram = ab * (M * K + K * N) + 4 * M * N  # compulsory traffic: each input read once, C written once
    pred = cost.predict(stats, arch, dram_bytes=dram, fmas=fmas)
    from jaxsimt.banks import METRIC_WAVEFRONTS
    from jaxsimt.coalescing import METRIC_REQUESTS, METRIC_SECTORS

    req = cost.loads_plus_stores(stats, METRIC_REQUESTS)
    sec = cost.loads_plus_stores(stats, METRIC_SECTORS)
    wav = cost.loads_plus_stores(stats, METRIC_WAVEFRONTS)
    sreq = _shared_requests(per_instr)
    from jaxsimt.occupancy import occupancy as occ_fn
    occ = occ_fn(arch, int(stats["launch__block_size"]), int(stats["launch__registers_per_thread"]),
                 int(stats["launch__shared_mem_per_block_static"]))
    cyc = {}
    if timing:
        cyc = timing_of(rung, M, N, K, arch, int(stats["active_blocks_per_sm"]))
        pred = {**pred, "predicted_ms": cyc["predicted_ms"]}
    return {
        "cycles": cyc.get("cycles"), "timing": cyc,
        "variant": rung.name, "why": rung.why, "size": [M, N, K], "arch": arch,
        "predicted_ms": pred["predicted_ms"], "predicted_ms_analytical": pred["predicted_ms_analytical"],
        "limiter": pred["limiter"], "gflops": flops / (pred["predicted_ms"] * 1e-3) / 1e9,
        "sectors_per_request": sec / req if req else 0.0,
        "shared_wavefronts_per_request": wav / sreq if sreq else 0.0,
        "occupancy": stats["occupancy"], "occupancy_limiter": occ["limiter"],
        "simd_efficiency": stats["simd_efficiency"],
        "arithmetic_intensity": flops / (sec * 32) if sec else float("inf"),
        "block_classes": len(classes), "seconds": time.perf_counter() - t0,
        "stats": stats, "bounds_ms": {k[6:-3]: v for k, v in pred.items() if k.startswith("bound_")},
    }


def trace_rung(rung: LadderRung, M: int, N: int, K: int, arch: str, blocks_per_sm: int, source: str = "ptx"):
    """The instruction trace of the blocks the busiest SM runs first (two rounds of its resident blocks,
    or every block of a small grid), for the cycle-level model; returns (Trace, number of blocks).

    source "ptx" (default): the rung as nvcc compiled it (`kernels/ptx/gemm_ladder.ptx`, the program the
    H200 ran), whose instruction stream is within about 1.2-1.4x of the SASS's warp instructions (1.8x for
    wmma); "dsl": the DSL copy, whose memory behaviour is the same but which issues about 2.3x the SASS's
    instructions (no address folding or strength reduction)."""
    import jaxsimt as js
    from jaxsimt import errors
    from jaxsimt import ptx
    from jaxsimt import timing
    from jaxsimt import trace as tr
    from jaxsimt.arch import get_arch
    from jaxsimt.kernels import collection
    from jaxsimt.kernels.gemm import fast

    if source not in ("ptx", "dsl"):
        raise ValueError(f"trace_rung: source must be 'ptx' or 'dsl', not {source!r}")
    a = get_arch(arch)
    grid, block = rung.launch_config(M, N, K)
    g = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    n_ctas = int(np.prod(g))
    ctas = timing.traced_blocks(n_ctas, blocks_per_sm, a.num_sms)
    steps = 16 * K + 4096
    kw = dict(arch=arch, ctas=ctas.tolist(), data=False, trace=True, blocks_per_wave=len(ctas))
    while True:
        try:
            if source == "ptx":
                r = ptx.launch(collection.ptx_path("gemm_ladder"), collection.GEMM_ENTRIES[rung.name], grid, block,
                               collection.gemm_args(rung.name, M, N, K), max_steps=steps, **kw)
            else:
                r = js.launch(rung.kernel(), grid, block, rung.args(M, N, K), max_steps=steps, **kw)
            break
        except errors.StepBudgetExceeded:
            steps *= 4
    tile = fast.TILES[rung.name]
    footprint = (tile.bm * K + K * tile.bn) * tile.ab_bytes + tile.bm * tile.bn * 4
    dram = tile.ab_bytes * (M * K + K * N) + 4 * M * N
    t = tr.from_launch(r, footprint_bytes_per_block=footprint, dram_bytes=dram, max_len=timing.MAX_STEPS)
    t.meta["n_ctas"] = n_ctas
    t.meta["source"] = source
    return t, n_ctas


def timing_of(rung: LadderRung, M: int, N: int, K: int, arch: str, blocks_per_sm: int, params=None,
              policy: str = "gto") -> dict:
    """The cycle-level model's prediction for one rung: cycles, predicted_ms, stall reasons."""
    from jaxsimt import timing

    t, n_ctas = trace_rung(rung, M, N, K, arch, blocks_per_sm)
    params = params if params is not None else timing.params_of(arch)
    work = timing.plan(t, arch, blocks_per_sm, n_ctas)
    return timing.summarize(work, timing.run(work, params, policy), params, arch)


def measured_ms(arch: str, M: int, N: int, K: int) -> dict:
    """Measured times (ms) of the committed hardware timings for this size, by variant (may be empty)."""
    if arch != "h200" or not (M == N == K):
        return {}
    try:
        from jaxsimt import fixtures
        table = fixtures.timings(arch)
    except Exception:  # noqa: BLE001 - no fixture for this arch
        return {}
    return {variant: float(rec["median_ms"]) for (variant, size), rec in table.items()
            if size == M and rec.get("median_ms") is not None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="jaxsimt ladder", description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="h200")
    ap.add_argument("--size", type=int, nargs=3, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    ap.add_argument("--rungs", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--plot", default="", help="write a chart of the ladder to this PNG file")
    # predicted_ms is the best model available (CONTRACTS.md): the cycle-level model where the architecture's
    # timing parameters are calibrated against hardware (Arch.timing_fitted: the H200), else the analytical
    # model, whose uncalibrated cycle-level alternative is no better (docs/timing.md).
    ap.add_argument("--cycle-level", action="store_true",
                    help="run the cycle-level timing model even without calibrated parameters for --arch")
    ap.add_argument("--analytical-only", action="store_true",
                    help="skip the cycle-level model (faster: no instruction traces); predicted_ms is the analytical one")
    args = ap.parse_args(argv)
    M, N, K = args.size
    from jaxsimt.arch import get_arch

    cycle_level = (args.cycle_level or get_arch(args.arch).timing_fitted is not None) and not args.analytical_only

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    console = Console(stderr=args.json, width=max(Console().width, 160))
    todo = [r for r in rungs() if not args.rungs or r.name in args.rungs.split(",")]
    rows = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"emulating the ladder at {M}x{N}x{K}", total=len(todo))
        for r in todo:
            progress.update(task, description=f"{r.name}")
            rows.append(analyse(r, M, N, K, args.arch, timing=cycle_level))
            progress.advance(task)
    meas = measured_ms(args.arch, M, N, K)
    for row in rows:
        row["measured_ms"] = meas.get(row["variant"])
    if args.json:
        print(json.dumps(rows, indent=1, default=float))
    else:
        model = "the calibrated cycle-level model" if cycle_level else "the analytical model"
        t = Table(title=f"GEMM ladder, {M}x{N}x{K} f32 on {args.arch} (predicted by {model})")
        for c in ("variant", "pred. ms", "analyt. ms", "GFLOP/s", "measured ms", "top stall", "limiter", "sect/req", "wavef/req",
                  "occupancy", "SIMD eff", "FLOP/B(L2)", "DSL warp inst"):
            t.add_column(c, justify="left" if c in ("variant", "limiter") else "right")
        for row in rows:
            m = row["measured_ms"]
            t.add_row(row["variant"], f"{row['predicted_ms']:.3f}", f"{row['predicted_ms_analytical']:.3f}",
                      f"{row['gflops']:,.0f}", "" if m is None else f"{m:.3f}", _top_stall(row["timing"]),
                      row["limiter"], f"{row['sectors_per_request']:.2f}",
                      f"{row['shared_wavefronts_per_request']:.2f}",
                      f"{row['occupancy']:.2f} ({row['occupancy_limiter']})", f"{row['simd_efficiency']:.3f}",
                      f"{row['arithmetic_intensity']:.2f}", f"{row['stats']['smsp__inst_executed.sum']:,}")
        console.print(t)
        if cycle_level:
            console.print("Counters: the DSL kernels' (exact, one block per class). pred. ms: the cycle-level model "
                          "replaying each rung's PTX as nvcc compiled it (docs/timing.md).")
        for row in rows:
            console.print(f"[bold]{row['variant']}[/bold]: {row['why']}")
    if args.plot:
        _plot(rows, args.plot, M, N, K, args.arch)
    return 0


def _top_stall(st: dict) -> str:
    """The stall reason with the most warp-cycles per issued instruction (Nsight Compute's name)."""
    per = {k[6:-10]: v for k, v in st.items() if k.startswith("stall_") and k.endswith("_per_issue")
           and k != "stall_selected_per_issue"}
    if not per:
        return ""
    k = max(per, key=per.get)
    return f"{k} {per[k]:.1f}"


def _plot(rows, path: str, M, N, K, arch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["variant"] for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.bar(x - 0.2, [r["gflops"] for r in rows], 0.4, label="predicted")
    meas = [2.0 * M * N * K / (r["measured_ms"] * 1e-3) / 1e9 if r.get("measured_ms") else 0 for r in rows]
    if any(meas):
        ax.bar(x + 0.2, meas, 0.4, label="measured")
    ax.set_xticks(x, names, rotation=20)
    ax.set_ylabel("GFLOP/s")
    ax.set_yscale("log")
    ax.set_title(f"GEMM ladder {M}x{N}x{K} on {arch}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
