"""`jaxsimt ladder`: the GEMM ladder report — seed 000's missing summary table.

For each rung (naive uncoalesced, naive coalesced, shared-memory tiling, thread coarsening, warp and
register tiling, Tensor Cores), at any size and on any architecture: the counters an instruction-level
run would give (computed exactly from one emulated block per class of identical blocks, see
`jaxsimt.kernels.gemm.fast`), sectors per request, shared wavefronts per request, occupancy and its
limiter, SIMD efficiency, arithmetic intensity, the predicted time and GFLOP/s, and — where the H200 timings
are committed — the measured time beside the prediction. The prediction is the cycle-level model's
(`jaxsimt.timing.replay`, replaying each rung's PTX trace) where the architecture's timing parameters are
calibrated (the H200), else the analytical model's (`jaxsimt.timing.cost`, always shown beside it).

    jaxsimt ladder [--arch h200] [--size 4096 4096 4096] [--json] [--plot FILE.png] [--html FILE.html]
                   [--rungs a,b] [--cycle-level | --analytical-only] [--timeline FILE.json] [--workers N]
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from jaxsimt.run.command import command


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
    t0 = time.perf_counter()
    row = counters_row(rung, M, N, K, arch)
    if timing:
        with_timing(row, timing_of(rung, M, N, K, arch, int(row["stats"]["active_blocks_per_sm"])))
    row["seconds"] = time.perf_counter() - t0
    return row


def counters_row(rung: LadderRung, M: int, N: int, K: int, arch: str) -> dict:
    """One rung's row without the cycle-level model: counters and the analytical model's prediction."""
    from jaxsimt.timing import cost

    t0 = time.perf_counter()
    stats, per_instr, classes = gemm_stats(rung, M, N, K, arch)
    flops = 2.0 * M * N * K
    fmas = 0.0 if rung.name == "wmma" else M * N * K
    ab = 2 if rung.name == "wmma" else 4
    dram = ab * (M * K + K * N) + 4 * M * N  # compulsory traffic: each input read once, C written once
    pred = cost.predict(stats, arch, dram_bytes=dram, fmas=fmas)
    from jaxsimt.units.banks import METRIC_WAVEFRONTS
    from jaxsimt.units.coalescing import METRIC_REQUESTS, METRIC_SECTORS

    req = cost.loads_plus_stores(stats, METRIC_REQUESTS)
    sec = cost.loads_plus_stores(stats, METRIC_SECTORS)
    wav = cost.loads_plus_stores(stats, METRIC_WAVEFRONTS)
    sreq = _shared_requests(per_instr)
    from jaxsimt.units.occupancy import occupancy as occ_fn
    occ = occ_fn(arch, int(stats["launch__block_size"]), int(stats["launch__registers_per_thread"]),
                 int(stats["launch__shared_mem_per_block_static"]))
    return {
        "cycles": None, "timing": {},
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


def with_timing(row: dict, cyc: dict) -> dict:
    """A row's prediction from the cycle-level model's stats (`timing.summarize`)."""
    M, N, K = row["size"]
    row.update(cycles=cyc.get("cycles"), timing=cyc, predicted_ms=cyc["predicted_ms"],
               gflops=2.0 * M * N * K / (cyc["predicted_ms"] * 1e-3) / 1e9)
    return row


def _cores() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


WORKERS = min(2, _cores())  # rungs emulated at once by `analyse_all`


def analyse_all(todo: list, M: int, N: int, K: int, arch: str, timing: bool = False, step=None,
                keep_replays: bool = False, workers: int = 0) -> "tuple[list, list]":
    """Every rung's row, the cycle-level model's replays of all rungs done as one batch (`timing.run_many`:
    one compilation). step(description): progress (2 steps per rung with timing, 1 without, and 1 for the
    replay); workers: rungs emulated at once (default WORKERS). Returns (rows, replays: per rung (trace, work,
    output) when keep_replays, else [])."""
    from jaxsimt.timing import kscale
    from jaxsimt.timing import replay as tm

    step = step or (lambda *a, **k: None)

    def one(r):
        t0 = time.perf_counter()
        row = counters_row(r, M, N, K, arch)
        step(f"{r.name}: counters done")
        tw = None
        if timing:
            R = int(row["stats"]["active_blocks_per_sm"])
            t, n_ctas = trace_rung(r, M, N, K, arch, R)
            tw = (t, tm.plan(t, arch, R, n_ctas))
            step(f"{r.name}: instruction trace done")
        row["seconds"] = time.perf_counter() - t0
        return row, tw

    # the rungs' emulations are independent: as many at once as there are cores (XLA compiles and runs
    # outside Python's lock), at most WORKERS
    with concurrent.futures.ThreadPoolExecutor(max(1, min(workers or WORKERS, len(todo)))) as pool:
        done = list(pool.map(one, todo))
    rows, traced = [d[0] for d in done], [d[1] for d in done]
    replays = []
    if timing:
        step("the cycle-level model: replaying every rung", advance=0)
        t0 = time.perf_counter()
        params = tm.params_of(arch)
        outs = tm.run_many([w for _, w in traced], params)
        for r, row, (t, w), out in zip(todo, rows, traced, outs):
            if not kscale.window_within(t, out):  # rare: the window outran the short streams
                t, w, out = replay_rung(r, M, N, K, arch, int(row["stats"]["active_blocks_per_sm"]), params,
                                    stream_k=4 * t.meta["stream_k"])
            with_timing(row, tm.summarize(w, out, params, arch))
            if keep_replays:
                replays.append((t, w, out))
        share = (time.perf_counter() - t0) / len(rows)
        for row in rows:
            row["seconds"] += share
        step("replayed")
    return rows, replays


def _traced_launch(rung: LadderRung, M: int, N: int, K: int, arch: str, blocks_per_sm: int, source: str,
                   steps: int, rounds: int = 2):
    """One traced run of the blocks the busiest SM runs first (`rounds` rounds of its resident blocks, see
    `trace_rung`): (LaunchResult, n_ctas)."""
    import jaxsimt as js
    from jaxsimt import errors
    from jaxsimt.timing import kscale
    from jaxsimt import ptx
    from jaxsimt.timing import replay as timing
    from jaxsimt.arch import get_arch
    from jaxsimt.kernels import collection

    a = get_arch(arch)
    grid, block = rung.launch_config(M, N, K)
    g = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    n_ctas = int(np.prod(g))
    ctas = timing.traced_blocks(n_ctas, blocks_per_sm, a.num_sms, rounds=rounds)
    # short runs (K of kscale, small grids): compiling the loops into the machine costs more than it saves
    kw = dict(arch=arch, ctas=ctas.tolist(), data=False, trace=True, blocks_per_wave=len(ctas),
              **({"compile_budget": 0} if K <= kscale.K2 * 4 else {}))
    while True:
        try:
            if source == "ptx":
                r = ptx.launch(collection.ptx_path("gemm_ladder"), collection.GEMM_ENTRIES[rung.name], grid, block,
                               collection.gemm_args(rung.name, M, N, K), max_steps=steps,
                               source_dirs=(collection.CUDA_DIR,), **kw)
            else:
                r = js.launch(rung.kernel(), grid, block, rung.args(M, N, K), max_steps=steps, **kw)
            return r, n_ctas
        except errors.StepBudgetExceeded:
            steps *= 4


# K of the traced streams where K is large (`trace_rung`): streams of a few thousand instructions per warp,
# more than a replay window (timing.WINDOW_MAX steps over 64 resident warps: 1024 each) lets most warps issue
STREAM_K = 512


def _trace_steps(K: int) -> int:
    return 32 * K + 4096  # the traced run's step budget (one compiled machine for every K up to it)


def trace_rung(rung: LadderRung, M: int, N: int, K: int, arch: str, blocks_per_sm: int, source: str = "ptx",
               stream_k: "int | None" = None):
    """The instruction trace of the blocks the busiest SM runs first (two rounds of its resident blocks,
    or every block of a small grid), for the cycle-level model; returns (Trace, number of blocks).

    source "ptx" (default): the rung as nvcc compiled it (`jaxsimt/kernels/ptx/gemm_ladder.ptx`, the program the
    H200 ran), whose instruction stream is within about 1.2-1.4x of the SASS's warp instructions (1.8x for
    wmma); "dsl": the DSL copy, whose memory behaviour is the same but which issues about 2.3x the SASS's
    instructions (no address folding or strength reduction).

    stream_k: where K is large (`kscale.applies`), the rung is traced at K = kscale.K1 and K = stream_k
    (default STREAM_K) instead of K, and the trace at K extrapolated from the two (`kscale`): the same
    streams up to the shorter one's end, every count and stream length exact; the replay must then stay
    within the streams (`kscale.window_within`; `timing_of` checks it and traces longer streams if not)."""
    from jaxsimt.timing import kscale
    from jaxsimt.timing import replay as timing
    from jaxsimt.timing import trace as tr
    from jaxsimt.kernels.gemm import fast

    if source not in ("ptx", "dsl"):
        raise ValueError(f"trace_rung: source must be 'ptx' or 'dsl', not {source!r}")
    tile = fast.TILES[rung.name]

    def footprint(k):
        return (tile.bm * k + k * tile.bn) * tile.ab_bytes + tile.bm * tile.bn * 4

    dram = tile.ab_bytes * (M * K + K * N) + 4 * M * N
    k2 = stream_k or STREAM_K
    if kscale.applies(K, k2):
        steps = _trace_steps(k2)
        try:
            # one round of resident blocks: a replay that stays within the streams' loops (checked) never
            # sees a block end, so never a second round
            (r1, n_ctas), (r2, _) = (_traced_launch(rung, M, N, k, arch, blocks_per_sm, source, steps, rounds=1)
                                     for k in (kscale.K1, k2))
            r2 = dataclasses.replace(r2, per_instruction=kscale.rows_at(r1.per_instruction, r2.per_instruction,
                                                                        kscale.K1, k2, K))
            # the memory fractions from the counts at K (what a trace at K computes)
            t2 = tr.from_launch(r2, footprint_bytes_per_block=footprint(K), dram_bytes=dram, max_len=timing.WINDOW_MAX)
            t1 = tr.from_launch(r1, footprint_bytes_per_block=footprint(kscale.K1), dram_bytes=dram,
                                max_len=timing.WINDOW_MAX)
            t = kscale.trace_at(t1, t2, kscale.K1, k2, K)
        except kscale.NotAffine:
            return trace_rung(rung, M, N, K, arch, blocks_per_sm, source, stream_k=K)
    else:
        r, n_ctas = _traced_launch(rung, M, N, K, arch, blocks_per_sm, source, _trace_steps(K))
        t = tr.from_launch(r, footprint_bytes_per_block=footprint(K), dram_bytes=dram, max_len=timing.WINDOW_MAX)
    t.meta["n_ctas"] = n_ctas
    t.meta["source"] = source
    return t, n_ctas


def gemm_stats(rung: LadderRung, M: int, N: int, K: int, arch: str):
    """`fast.gemm_stats` of a rung (every counter of the full launch, from one block per class), at a large
    K from its counts at two small ones (`kscale`: exact where K is a multiple of kscale.ALIGN_K; the block
    classes are then the same at all three sizes)."""
    from jaxsimt.timing import kscale
    from jaxsimt.kernels.gemm import fast

    def at(k):
        return fast.gemm_stats(rung.name, rung.kernel(), M, N, k, arch=arch, args=rung.args(M, N, k),
                               launch_config=rung.launch_config)

    if kscale.applies(K):
        (s1, p1, c1), (s2, p2, c2) = at(kscale.K1), at(kscale.K2)
        if c1 == c2:
            try:
                return (kscale.stats_at(s1, s2, kscale.K1, kscale.K2, K),
                        kscale.rows_at(p1, p2, kscale.K1, kscale.K2, K), c2)
            except kscale.NotAffine:
                pass
    return at(K)


def replay_rung(rung: LadderRung, M: int, N: int, K: int, arch: str, blocks_per_sm: int, params, policy: str = "gto",
                stream_k: "int | None" = None, max_steps: "int | None" = None):
    """(trace, work, output) of one rung's replay, its streams traced long enough for the replay's window
    (`kscale.window_within`: stream_k x 4 until it holds, or the real K)."""
    from jaxsimt.timing import kscale
    from jaxsimt.timing import replay as timing

    k2 = stream_k or STREAM_K
    while True:
        t, n_ctas = trace_rung(rung, M, N, K, arch, blocks_per_sm, stream_k=k2)
        work = timing.plan(t, arch, blocks_per_sm, n_ctas, max_steps)
        out = timing.run(work, params, policy)
        if kscale.window_within(t, out):
            return t, work, out
        k2 *= 4


def timing_of(rung: LadderRung, M: int, N: int, K: int, arch: str, blocks_per_sm: int, params=None,
              policy: str = "gto") -> dict:
    """The cycle-level model's prediction for one rung: cycles, predicted_ms, stall reasons."""
    from jaxsimt.timing import replay as timing

    params = params if params is not None else timing.params_of(arch)
    t, work, out = replay_rung(rung, M, N, K, arch, blocks_per_sm, params, policy)
    return timing.summarize(work, out, params, arch)


def measured_ms(arch: str, M: int, N: int, K: int) -> dict:
    """Measured times (ms) of the committed hardware timings for this size, by variant (may be empty)."""
    if arch != "h200" or not (M == N == K):
        return {}
    try:
        from jaxsimt.apps import fixtures
        table = fixtures.timings(arch)
    except Exception:  # noqa: BLE001 - no fixture for this arch
        return {}
    return {variant: float(rec["median_ms"]) for (variant, size), rec in table.items()
            if size == M and rec.get("median_ms") is not None}


def _source_fingerprint() -> str:
    """A hash of the code and data that a ladder row depends on (the package, the kernel library, JAX's
    version): a cached row is reused only by the same code."""
    import hashlib
    import os

    import jax

    import jaxsimt
    from jaxsimt import kernels

    h = hashlib.sha1(jax.__version__.encode())
    roots = {os.path.dirname(jaxsimt.__file__), os.path.dirname(kernels.__file__)}
    for root in sorted(roots):
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".ptx", ".json", ".csv")):
                    with open(os.path.join(d, f), "rb") as fh:
                        h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()


def _cache_path(key: dict) -> "str | None":
    import hashlib
    import os

    from jaxsimt.run.compile_cache import default_dir

    digest = hashlib.sha1(json.dumps({**key, "source": _source_fingerprint()}, sort_keys=True).encode()).hexdigest()
    return os.path.join(os.path.dirname(default_dir()), "ladder", f"{digest[:24]}.json")


def _load_rows(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _store_rows(path: str, rows) -> None:
    import os
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(rows, f, default=float)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache folder only costs the next command a recomputation


SIZE_LIMIT = 1 << 15


def write_timeline(path: str, todo: list, replays: list, arch: str, M: int, N: int, K: int) -> None:
    """The rungs' replays as one trace-event file (`jaxsimt.timing.timeline`): per rung its busiest simulated SM."""
    from jaxsimt.timing import timeline
    from jaxsimt.timing import replay as tm

    clock = float(tm.params_of(arch)["clock_ghz"])
    evs, dropped = [], 0
    per_rung = timeline.MAX_EVENTS // max(len(replays), 1)
    for i, (r, (t, w, out)) in enumerate(zip(todo, replays)):
        busiest = int(np.argmax(np.asarray(out["cycles"])))
        e, d = timeline.events(out, clock, t.program, label=f"{r.name}: ", pid0=i, sms=[busiest], sm_ids=w.sms,
                               max_events=per_rung, origin=t.origins())
        evs += e
        dropped += d
    timeline.write(path, timeline.document(evs, dropped, kernel="gemm ladder", arch=arch, size=[M, N, K]))



@command("ladder")
def main(argv=None) -> int:
    from jaxsimt.run.command import ArgumentParser, add_arch, check_output_file
    from jaxsimt.errors import UsageError
    from jaxsimt.kernels import gemm

    names = [r.name for r in gemm.RUNGS] + ([] if "wmma" in gemm.BY_NAME else ["wmma"])
    ap = ArgumentParser(prog="jaxsimt ladder", description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    add_arch(ap)
    ap.add_argument("--size", type=int, nargs=3, default=[4096, 4096, 4096], metavar=("M", "N", "K"),
                    help="GEMM size: C[M, N] = A[M, K] B[K, N]")
    ap.add_argument("--rungs", default="", metavar="A,B",
                    help=f"comma-separated subset of: {', '.join(names)} (default: all)")
    ap.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                    help="print the rows as JSON instead of the table, or with FILE write them there as well as "
                         "printing the table (one computation for both)")
    ap.add_argument("--plot", default="", metavar="FILE.png", help="write a chart of the ladder to this PNG file")
    ap.add_argument("--html", default="", metavar="FILE.html",
                    help="write the ladder's table and chart to this self-contained HTML file")
    # predicted_ms is the best model available (CONTRACTS.md): the cycle-level model where the architecture's
    # timing parameters are calibrated against hardware (Arch.timing_fitted: the H200), else the analytical
    # model, whose uncalibrated cycle-level alternative is no better (docs/timing.md).
    ap.add_argument("--cycle-level", action="store_true",
                    help="run the cycle-level timing model even without calibrated parameters for --arch")
    ap.add_argument("--analytical-only", action="store_true",
                    help="skip the cycle-level model (faster: no instruction traces); predicted_ms is the analytical one")
    ap.add_argument("--timeline", default="", metavar="FILE.json",
                    help="write each rung's issue timeline (the cycle-level model's busiest SM) to FILE.json in the "
                         "Chrome / Perfetto trace-event format: one process per rung, a track per scheduler and warp")
    ap.add_argument("--workers", type=int, default=0, metavar="N",
                    help=f"rungs emulated at once (default: {WORKERS}, the smaller of 2 and the cores this process "
                         "may use)")
    ap.add_argument("--recompute", action="store_true",
                    help="compute again rows that an earlier command computed with the same code (kept in "
                         "$XDG_CACHE_HOME/jaxsimt/ladder)")
    args = ap.parse_args(argv)
    M, N, K = args.size
    for name, v in zip("MNK", (M, N, K)):
        if not 1 <= v <= SIZE_LIMIT:
            raise UsageError(f"--size {M} {N} {K}: {name} = {v} must be from 1 to {SIZE_LIMIT}")
    wanted = [r for r in args.rungs.split(",") if r.strip()]
    unknown = [r for r in wanted if r not in names]
    if unknown:
        raise UsageError(f"--rungs: unknown rung {unknown[0]!r} (one of {', '.join(names)})")
    if args.workers < 0:
        raise UsageError(f"--workers {args.workers}: must be at least 1 (or 0: the default)")
    if args.cycle_level and args.analytical_only:
        raise UsageError("--cycle-level and --analytical-only exclude each other")
    to_file = args.json not in (None, "-")
    if to_file:
        check_output_file(args.json, "--json")
    if args.plot:
        check_output_file(args.plot, "--plot")
    if args.html:
        check_output_file(args.html, "--html")
    from jaxsimt.arch import get_arch

    cycle_level = (args.cycle_level or get_arch(args.arch).timing_fitted is not None) and not args.analytical_only

    if args.timeline:
        if not cycle_level:
            raise UsageError("--timeline needs the cycle-level model (not with --analytical-only; --cycle-level "
                             "for an architecture without calibrated timing parameters)")
        check_output_file(args.timeline, "--timeline")

    from rich.console import Console

    console = Console(stderr=args.json == "-", width=min(Console().width, TABLE_WIDTH) if Console().is_terminal
                      else TABLE_WIDTH)
    todo = [r for r in rungs() if not wanted or r.name in wanted]
    cache = _cache_path({"arch": args.arch, "size": [M, N, K], "rungs": [r.name for r in todo],
                         "cycle_level": cycle_level})
    rows = None if args.recompute or args.timeline else _load_rows(cache)
    if rows is None:
        from jaxsimt.run.progress import task_progress

        n_steps = len(todo) * (2 if cycle_level else 1) + (1 if cycle_level else 0)
        with task_progress(n_steps, False if args.json is not None else None,
                           f"emulating the ladder at {M}x{N}x{K}") as bar:
            def step(description: str = "", advance: int = 1) -> None:
                if bar is not None:
                    bar.advance(advance, f"ladder {M}x{N}x{K}: {description}" if description else None)

            rows, replays = analyse_all(todo, M, N, K, args.arch, timing=cycle_level, step=step,
                                        keep_replays=bool(args.timeline), workers=args.workers)
        rows = json.loads(json.dumps(rows, default=float))  # the same plain numbers whether computed or cached
        _store_rows(cache, rows)
        if args.timeline:
            write_timeline(args.timeline, todo, replays, args.arch, M, N, K)
    meas = measured_ms(args.arch, M, N, K)
    for row in rows:
        row["measured_ms"] = meas.get(row["variant"])
    if args.json == "-":
        print(json.dumps(rows, indent=1, default=float))
    else:
        if to_file:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(rows, f, indent=1, default=float)
        print_table(rows, M, N, K, args.arch, cycle_level, console)
    if args.plot:
        _plot(rows, args.plot, M, N, K, args.arch)
    if args.html:
        from jaxsimt.apps.html_report import write_ladder

        write_ladder(rows, args.html, M, N, K, args.arch)
    return 0


TABLE_WIDTH = 120


def _n(x: float, digits: int = 3) -> str:
    """A number in full (no truncation): fixed point, with thousands separators for large values."""
    if x is None:
        return ""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if 0 < abs(x) < 10 ** -digits:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}f}"


def _wrap_name(name: str, width: int = 11) -> str:
    """A snake_case name broken after underscores into lines of at most `width` characters where it can be."""
    lines, cur = [], ""
    for part in name.split("_"):
        piece = part if not cur else "_" + part
        if cur and len(cur) + len(piece) > width:
            lines.append(cur + "_")
            cur = part
        else:
            cur += piece
    return "\n".join(lines + [cur])


_LIMIT = {"registers": "regs", "shared_memory": "smem", "warps": "warps", "blocks": "blks"}  # short, in the table


def print_table(rows, M, N, K, arch, cycle_level, console) -> None:
    """The ladder as a table of at most TABLE_WIDTH columns: names wrap (after underscores), numbers never do.
    The analytical and stall columns appear only where they add something (the cycle-level model ran)."""
    from rich import box
    from rich.table import Table

    model = "the calibrated cycle-level model" if cycle_level else "the analytical model"
    # (header, width, is text, cell)
    columns = [
        ("variant", 11, True, lambda r: _wrap_name(r["variant"])),
        ("pred.\nms", 8, False, lambda r: _n(r["predicted_ms"])),
        ("analyt.\nms", 8, False, lambda r: _n(r["predicted_ms_analytical"])),
        ("meas.\nms", 8, False, lambda r: _n(r["measured_ms"])),
        ("GFLOP/s", 7, False, lambda r: f"{r['gflops']:,.0f}"),
        ("top stall\n(cyc/inst)", 10, True, lambda r: _top_stall(r["timing"] or {})),
        ("limiter", 7, True, lambda r: r["limiter"]),
        ("sectors\n/req.", 7, False, lambda r: _n(r["sectors_per_request"], 2)),
        ("shared\nwavef.\n/req.", 6, False, lambda r: _n(r["shared_wavefronts_per_request"], 2)),
        ("occu-\npancy", 5, True, lambda r: f"{r['occupancy']:.2f}\n{_LIMIT.get(r['occupancy_limiter'], r['occupancy_limiter'])}"),
        ("SIMD\neffic.", 6, False, lambda r: _n(r["simd_efficiency"])),
        ("FLOP/B\n(L2)", 7, False, lambda r: _n(r["arithmetic_intensity"], 2)),
        ("warp inst\n(DSL, M)", 9, False, lambda r: _n(r["stats"]["smsp__inst_executed.sum"] / 1e6, 2)),
    ]
    if not cycle_level:  # predicted is the analytical model's, and there are no stall reasons
        columns = [c for c in columns if not c[0].startswith(("analyt.", "top stall"))]
    cells = [[c[3](r) for c in columns] for r in rows]
    width = min(console.width, TABLE_WIDTH)

    def table(keep: list, title: str):
        t = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False,
                  show_edge=False, title_justify="left")
        for k in keep:
            head, w, text, _ = columns[k]
            widest = max(len(x) for lines in [head] + [row[k] for row in cells] for x in lines.splitlines())
            t.add_column(head, justify="left" if text else "right", no_wrap=not text, overflow="fold",
                         min_width=min(w, widest) if text else widest, max_width=w if text else None)
        for row in cells:
            t.add_row(*(row[k] for k in keep))
        return t

    def fits(keep: list) -> bool:
        return console.measure(table(keep, ""), options=console.options.update(max_width=10_000)).minimum <= width

    # Columns go into as few tables as fit the width (each with the variant first): rich would otherwise crop
    # the last columns of a table that cannot fit, numbers included.
    title = f"GEMM ladder, {M}x{N}x{K} on {arch} (predicted by {model})"
    todo = list(range(1, len(columns)))
    while todo:
        keep = [0]
        while todo and fits(keep + [todo[0]]):
            keep.append(todo.pop(0))
        if len(keep) == 1:  # a single column wider than the console: print it anyway
            keep.append(todo.pop(0))
        console.print(table(keep, title))
        title = "(continued)"
    if cycle_level:
        console.print("Counters: the DSL kernels' (exact, one block per class). pred.: the cycle-level model "
                      "replaying each rung's PTX as nvcc compiled it (docs/timing.md); analyt.: the analytical "
                      "model (jaxsimt.timing.cost); meas.: the H200 measurement.")
    for row in rows:
        console.print(f"[bold]{row['variant']}[/bold]: {row['why']}")


def _top_stall(st: dict) -> str:
    """The stall reason with the most warp-cycles per issued instruction (Nsight Compute's name)."""
    per = {k[6:-10]: v for k, v in st.items() if k.startswith("stall_") and k.endswith("_per_issue")
           and k != "stall_selected_per_issue"}
    if not per:
        return ""
    k = max(per, key=per.get)
    return f"{_wrap_name(k, 10)}\n{per[k]:.1f}"


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
