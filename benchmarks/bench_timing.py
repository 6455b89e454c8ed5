"""Benchmark of the cycle-level timing model: accuracy against the H200 and replay throughput.

Accuracy: every profiled micro-kernel and the GEMM ladder at 256^3 (ncu: busiest-SM active cycles and
kernel time) and at 1024^3 / 2048^3 / 4096^3 (CUDA-event medians), predicted with the architecture's
timing parameters (`jaxsimt.arch.H200.timing`, fitted by `--calibrate` on the training split of
`jaxsimt.apps.calibrate`), reported as MAPE per split and family and, over the ladder, Spearman's rank
correlation of predicted vs measured times per size. Throughput: warp instructions replayed per second
(steady state, median of repeats, compile time apart), on the default JAX device; run as a script it
starts one JAX host device per CPU core and the whole-GPU replays split their SMs over them
(`timing.sm_sharded`). `--replay-speed`: the
exact (cycle-by-cycle) and the fast replay (`timing.run(..., replay="fast")`) and the interval model
(`replay="interval"`) of the ladder's rungs on the whole GPU, their speeds and speed-ups, and the departures of
the fast replay and the interval model from the exact one on every sample.

    PYTHONPATH=$PWD python benchmarks/bench_timing.py [--calibrate] [--cache samples.pkl] [--quick]
    PYTHONPATH=$PWD python benchmarks/bench_timing.py --replay-speed --cache samples/
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import sys
import time

if __name__ == "__main__" and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    # one JAX host device per core, before JAX starts: the whole-GPU replays split their SMs over them
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + f" --xla_force_host_platform_device_count={os.cpu_count()}").strip()

import jax  # noqa: E402
import numpy as np

from jaxsimt.apps import calibrate
from jaxsimt.timing import replay as timing


def samples(cache: str, quick: bool, only_cached: bool = False):
    """Trace the calibration samples, or load them from `cache`: a directory with one pickle per sample
    (missing ones are traced and added, so an interrupted run resumes, unless only_cached) or a single
    pickle file."""
    names = None
    if quick:
        names = {"smem_stride_s1", "smem_stride_s2", "smem_reduce_interleaved", "glob_ld_stride1", "glob_st_stride32",
                 "div_nested"}
    sizes = (256, 1024) if quick else calibrate.LADDER_TRAIN_SIZES + calibrate.LADDER_HELD_OUT_SIZES
    if cache and os.path.isfile(cache):
        with open(cache, "rb") as f:
            s = pickle.load(f)
    elif only_cached:
        s = []
        for name in sorted(os.listdir(cache)):
            with open(os.path.join(cache, name), "rb") as f:
                s.append(pickle.load(f))
    else:
        t0 = time.perf_counter()
        s = []
        if cache:
            os.makedirs(cache, exist_ok=True)
        from jaxsimt.apps import fixtures, ladder
        from jaxsimt.kernels import collection
        hw = fixtures.ncu_metrics("h200")
        todo = [("micro", c.name, 0) for c in collection.CASES if c.fixture and c.name in hw
                and (names is None or c.name in names)]
        todo += [("ladder", r.name, n) for n in sizes for r in ladder.rungs()]
        for kind, name, n in todo:
            path = os.path.join(cache, f"{name}@{n}.pkl" if n else f"{name}.pkl") if cache else ""
            if path and os.path.exists(path):
                with open(path, "rb") as f:
                    s.append(pickle.load(f))
                continue
            got = (calibrate.micro_samples(names={name}) if kind == "micro"
                   else calibrate.ladder_samples((n,), rungs={name}))
            if not got:
                continue
            if path:
                with open(path, "wb") as f:
                    pickle.dump(got[0], f)
            s.append(got[0])
            print(f"traced {name}{'@' + str(n) if n else ''} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    from jaxsimt.apps import fixtures
    lad = fixtures.ladder_ncu("h200")
    for x in s:  # the current split and the ladder's held-out cycles (samples cached before they were measured)
        x.split = calibrate._split(x.family, x.size)
        if x.family == "ladder" and x.size != 256:
            x.cycles = lad.get((x.name, x.size), {}).get("sm__cycles_active.max")
    return calibrate.with_repeat_medians(s)  # the micro-kernels' medians of 16 runs (cached samples: one run)


def analytical_ladder(rows) -> None:
    """Add the analytical model's prediction to every ladder row (`analytical_ms`, `analytical_error`)."""
    from jaxsimt.apps import ladder

    by = {r.name: r for r in ladder.rungs()}
    for r in rows:
        if r["family"] == "ladder":
            n = r["size"]
            a = ladder.analyse(by[r["name"]], n, n, n, "h200")
            r["analytical_ms"] = a["predicted_ms_analytical"]
            r["analytical_error"] = (a["predicted_ms_analytical"] - r["measured_ms"]) / r["measured_ms"]


def accuracy(rows) -> dict:
    out = {}
    for split in ("train", "held_out"):
        sub = [r for r in rows if r["split"] == split]
        out[split] = {"n": len(sub), "mape_ms": calibrate.mape(sub), "mape_cycles": calibrate.mape(sub, "cycles_error")}
        for fam in sorted({r["family"] for r in sub}):
            f = [r for r in sub if r["family"] == fam]
            out[split][fam] = {"n": len(f), "mape_ms": calibrate.mape(f), "mape_cycles": calibrate.mape(f, "cycles_error")}
    lad = [r for r in rows if r["family"] == "ladder"]
    out["ladder"] = {"mape_ms": calibrate.mape(lad)}
    if lad and "analytical_error" in lad[0]:
        out["ladder"]["analytical_mape_ms"] = calibrate.mape(lad, "analytical_error")
    for n in sorted({r["size"] for r in lad}):
        f = [r for r in lad if r["size"] == n]
        meas = [r["measured_ms"] for r in f]
        pred = [r["predicted_ms"] for r in f]
        out["ladder"][str(n)] = {
            "mape_ms": calibrate.mape(f), "spearman": calibrate.spearman(pred, meas),
            **({"analytical_mape_ms": calibrate.mape(f, "analytical_error"),
                "analytical_spearman": calibrate.spearman([r["analytical_ms"] for r in f], meas)}
               if "analytical_error" in f[0] else {}),
            "order_right": [r["name"] for r in sorted(f, key=lambda r: r["predicted_ms"])]
            == [r["name"] for r in sorted(f, key=lambda r: r["measured_ms"])],
            "rungs": {r["name"]: {"measured_ms": r["measured_ms"], "predicted_ms": r["predicted_ms"],
                                  "analytical_ms": r.get("analytical_ms")} for r in f}}
    return out


def throughput_all(s_all, params, repeats: int = 5) -> list:
    """Throughput on two ladder replays: the longest one-SM replay (a sequential scan) and the one with the
    most simulated SMs (vmapped: what fills a device)."""
    lad = [s for s in s_all if s.family == "ladder"] or s_all
    one = max(lad, key=lambda s: (s.work.queues.shape[0] == 1, s.work.shape.steps * s.work.shape.warp_slots))
    many = max(lad, key=lambda s: (s.work.queues.shape[0], s.work.shape.steps))
    return [throughput(x, params, repeats) for x in ([one] if one is many else [one, many])]


def throughput(s, params, repeats: int = 5) -> dict:
    """Warp instructions replayed per second on one sample's replay (steady state) and its compile time."""
    w = s.work
    args = (params, w.kernel, jax.numpy.asarray(w.queues), jax.numpy.asarray(w.n_queue), jax.numpy.asarray(w.share),
            jax.numpy.asarray(w.total), jax.numpy.int32(1))
    t0 = time.perf_counter()
    compiled = timing.replay.lower(*args, shape=w.shape, n_regs=w.n_regs).compile()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = compiled(*args)
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t0)
    issued = int(np.asarray(out["issued"]).sum())
    med = float(np.median(times))
    return {"sample": f"{s.name}@{s.size}", "steps": w.shape.steps, "warp_slots": w.shape.warp_slots,
            "sms": int(w.queues.shape[0]), "warp_instructions": issued, "median_s": med,
            "warp_instructions_per_s": issued / med, "compile_s": compile_s, "device": str(jax.devices()[0])}


def whole_gpu(work, num_sms: int):
    """The work with the busiest simulated SM's queue on every SM of the chip (each with its share of L2 and
    DRAM bandwidth): a whole-GPU replay, as the hardware runs a grid whose blocks behave alike; its window as
    `timing.plan` gives a replay of that many SMs (`timing.window_cap`)."""
    import dataclasses

    steps = min(work.shape.steps, timing.window_cap(num_sms))
    return dataclasses.replace(work, queues=np.tile(work.queues[:1], (num_sms, 1)),
                               n_queue=np.tile(work.n_queue[:1], num_sms), share=np.full(num_sms, 1.0 / num_sms, np.float32),
                               total=np.tile(work.total[:1], num_sms), sms=np.arange(num_sms),
                               shape=dataclasses.replace(work.shape, steps=steps, inner=min(work.shape.inner, steps)))


def replay_speed(s, params, repeats: int = 3, num_sms: int = 132) -> dict:
    """Warp instructions per second of the exact and the fast replay and of the interval model, one sample on the
    whole GPU (every SM replayed): compile time apart, steady state as the median of `repeats` runs; the kernel
    cycles of each and their relative difference from the exact replay's."""
    import dataclasses

    from jaxsimt.timing import interval

    jnp = jax.numpy
    w = whole_gpu(s.work, num_sms)
    # the SMs split over the host's devices (one per core: `main`), as `timing.run` does
    args = (params, w.kernel, *timing.sm_sharded(w.queues, w.n_queue, w.share, w.total), jnp.int32(1))
    row = {"sample": f"{s.name}@{s.size}", "sms": num_sms, "window": w.shape.steps, "warp_slots": w.shape.warp_slots,
           "devices": len(jax.local_devices())}
    cut = lambda out: jax.tree.map(lambda x: x[:num_sms], out)  # noqa: E731  (the padding `sm_sharded` may add)
    for name in timing.REPLAYS:
        steps = {"exact": w.shape.steps, "fast": timing.fast_steps(w), "interval": interval.steps(w)}[name]
        fn = {"exact": timing.replay, "fast": timing.replay_fast, "interval": interval.replay_interval}[name]
        extra = () if name == "exact" else (jnp.int32(w.shape.steps),)
        # the interval model as `kernel_cycles` and the calibration run it: cycles and stalls, no issue timeline
        kw = {"widths": interval.operand_widths(w.kernel), "timeline": False} if name == "interval" else {}
        while True:  # the steps cover the window (`timing._covering`)
            shape = (interval.shape_with(w.shape, steps) if name == "interval"
                     else dataclasses.replace(w.shape, steps=steps))
            t0 = time.perf_counter()
            compiled = fn.lower(*args, *extra, shape=shape, n_regs=w.n_regs, **kw).compile()
            compile_s = time.perf_counter() - t0
            out = cut(compiled(*args, *extra))
            jax.block_until_ready(out)
            short = ~np.asarray(out["finished"]) & (np.asarray(out["issued"]) < np.minimum(w.shape.steps, w.total))
            if name == "exact" or steps >= w.shape.steps or not short.any():
                break
            steps = min(2 * steps, w.shape.steps)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = compiled(*args, *extra)
            jax.block_until_ready(out)
            times.append(time.perf_counter() - t0)
        out = cut(out)
        issued = int(np.asarray(out["issued"]).sum())
        med = float(np.median(times))
        row[name] = {"steps": steps, "compile_s": compile_s, "median_s": med, "times_s": times,
                     "warp_instructions": issued, "warp_instructions_per_s": issued / med,
                     "kernel_cycles": float(np.max(np.asarray(out["cycles"])))}
    for name in timing.REPLAYS[1:]:
        row[f"speedup_{name}"] = row[name]["warp_instructions_per_s"] / row["exact"]["warp_instructions_per_s"]
        row[f"cycles_rel_diff_{name}"] = row[name]["kernel_cycles"] / row["exact"]["kernel_cycles"] - 1.0
    return row


def replay_speed_all(s_all, params, repeats: int = 3) -> dict:
    """`replay_speed` of the ladder's rungs at its largest size, and the departure of the fast replay and the
    interval model from the exact replay on every sample: the tables of docs/timing.md."""
    lad = [s for s in s_all if s.family == "ladder"]
    n = max(s.size for s in lad)
    rows = [replay_speed(s, params, repeats) for s in sorted(lad, key=lambda s: s.name) if s.size == n]
    print(f"{'sample':<24} {'SMs':>4} {'exact wi/s':>11} {'fast wi/s':>11} {'interval wi/s':>13} {'fast':>7} "
          f"{'interval':>8} {'compile e/f/i (s)':>18} {'cycles fast/exact-1':>19} {'interval/exact-1':>16}")
    for r in rows:
        print(f"{r['sample']:<24} {r['sms']:>4} {r['exact']['warp_instructions_per_s']:>11.3g} "
              f"{r['fast']['warp_instructions_per_s']:>11.3g} {r['interval']['warp_instructions_per_s']:>13.3g} "
              f"{r['speedup_fast']:>6.1f}x {r['speedup_interval']:>7.1f}x "
              f"{r['exact']['compile_s']:>6.1f}/{r['fast']['compile_s']:.1f}/{r['interval']['compile_s']:.1f} "
              f"{100 * r['cycles_rel_diff_fast']:>18.2f}% {100 * r['cycles_rel_diff_interval']:>15.2f}%")
    # the departures from the exact replay, kernel cycles of every sample (batched replays)
    both = {r: calibrate.evaluate(s_all, params, replay=r) for r in timing.REPLAYS}
    dep = {}
    for name in timing.REPLAYS[1:]:
        dep[name] = [{"name": e["name"], "family": e["family"], "size": e["size"],
                      "exact_cycles": e["predicted_cycles"], f"{name}_cycles": f["predicted_cycles"],
                      "rel_diff": f["predicted_cycles"] / e["predicted_cycles"] - 1.0}
                     for e, f in zip(both["exact"], both[name])]
        worst = max(dep[name], key=lambda d: abs(d["rel_diff"]))
        print(f"{name} vs exact kernel cycles over {len(dep[name])} samples: max |rel. diff.| "
              f"{100 * abs(worst['rel_diff']):.2f}% ({worst['name']}@{worst['size']}), "
              f"mean {100 * float(np.mean([abs(d['rel_diff']) for d in dep[name]])):.3f}%")
    return {"platform": platform.platform(), "jax": jax.__version__, "device": str(jax.devices()[0]),
            "cpu_count": os.cpu_count(), "load_average": os.getloadavg(), "repeats": repeats, "rows": rows,
            "departures": dep["fast"], "departures_interval": dep["interval"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate", action="store_true", help="fit the parameters on the training split first")
    # the defaults are what fitted the committed H200 values (jaxsimt.arch.H200.timing_fitted)
    ap.add_argument("--steps", type=int, default=30, help="Adam steps of the calibration")
    ap.add_argument("--lr", type=float, default=0.1, help="Adam learning rate (log-scale parameters)")
    ap.add_argument("--cache", default="", help="directory of traced samples, one pickle each (reused when present,"
                    " missing ones traced and added), or one pickle file")
    ap.add_argument("--starting", action="store_true", help="evaluate the starting (uncalibrated) parameters")
    ap.add_argument("--from-measured", action="store_true",
                    help="with --calibrate: start from the micro-benchmark measurements (jaxsimt/data/h200/timing_micro) "
                         "and keep each measured parameter within calibrate.MEASURED_FACTOR of its measurement")
    ap.add_argument("--quick", action="store_true", help="a few kernels only (smoke test)")
    ap.add_argument("--throughput-only", action="store_true")
    ap.add_argument("--replay", choices=timing.REPLAYS, default="exact",
                    help="the replay the fit and the accuracy figures use (timing.run's replay)")
    ap.add_argument("--replay-speed", action="store_true",
                    help="only the replays' speed on the whole GPU (exact, fast, interval; the ladder's largest size; needs"
                         " --cache), into benchmarks/results/timing_replay_<device>.json")
    ap.add_argument("--out", default="")
    ap.add_argument("--suites-cache", default="", metavar="DIR",
                    help="also fit on the suite corpus's training suites (calibrate.SUITES_TRAIN) and report every "
                         "program: their samples as bench_timing_suites.py traces them into DIR (missing ones traced)")
    ap.add_argument("--sample", default="", metavar="RUNG@SIZE",
                    help="throughput only: trace just this ladder rung (e.g. naive_coalesced@1024)")
    a = ap.parse_args(argv)
    if a.sample:
        rung, size = a.sample.split("@")
        s = calibrate.ladder_samples((int(size),), rungs={rung})
        a.throughput_only = True
    else:
        s = samples(a.cache, a.quick, only_cached=(a.throughput_only or a.replay_speed) and bool(a.cache))
    if a.suites_cache:
        import bench_timing_suites
        from jaxsimt.kernels import suites as S
        got, _ = bench_timing_suites.load([f"{x}.{c}" for x, c in S.programs()], a.suites_cache)
        s = list(s) + [smp for smp, _ in got.values()]
    params = timing.starting_params("h200") if a.starting else timing.params_of("h200")
    if a.replay_speed:
        kind = "gpu" if jax.devices()[0].platform == "gpu" else "cpu"
        path = a.out or os.path.join(os.path.dirname(__file__), "results", f"timing_replay_{kind}.json")
        result = replay_speed_all(s, params)
        with open(path, "w") as f:
            json.dump(result, f, indent=1, default=float)
        print(f"wrote {path}")
        return 0
    result = {"platform": platform.platform(), "jax": jax.__version__, "device": str(jax.devices()[0]),
              "replay": a.replay}
    if not a.throughput_only:
        if a.calibrate:
            def save(step, p):  # the parameters so far, beside the results (a long fit can be stopped)
                if a.out:
                    with open(a.out + ".partial", "w") as f:
                        json.dump({"step": step, "params": {k: float(v) for k, v in p.items()}}, f, indent=1)

            params, hist = calibrate.fit(s, steps=a.steps, lr=a.lr, log=lambda m: print(m, file=sys.stderr),
                                         from_measured=a.from_measured, replay=a.replay, on_step=save)
            result["calibration"] = {"history": hist, "fitted": {k: float(v) for k, v in params.items()},
                                     "timing_literal": calibrate.timing_literal(params)}
            print(calibrate.timing_literal(params), file=sys.stderr)
        result["beside_measurements"] = calibrate.beside_measurements(params)
        print(f"{'parameter':<24} {'measured':>10} {'model':>10} {'ratio':>6}")
        for r in result["beside_measurements"]:
            print(f"{r['param']:<24} {r['measured']:>10.4g} {r['fitted']:>10.4g} {r['ratio']:>6.2f}"
                  f"{'' if r['within'] else '  (outside 1/1.5..1.5)'}")
        rows = calibrate.evaluate(s, params, replay=a.replay)
        analytical_ladder(rows)
        result["accuracy"] = accuracy(rows)
        result["rows"] = rows
        acc = result["accuracy"]
        print(f"{'split':<10} {'family':<18} {'n':>4} {'MAPE ms':>9} {'MAPE cycles':>12}")
        for split in ("train", "held_out"):
            for fam, v in acc[split].items():
                if isinstance(v, dict):
                    print(f"{split:<10} {fam:<18} {v['n']:>4} {v['mape_ms']:>8.1f}% {v['mape_cycles']:>11.1f}%")
            print(f"{split:<10} {'all':<18} {acc[split]['n']:>4} {acc[split]['mape_ms']:>8.1f}% "
                  f"{acc[split]['mape_cycles']:>11.1f}%")
        for n, v in acc["ladder"].items():
            if isinstance(v, dict):
                print(f"ladder {n}: MAPE {v['mape_ms']:.1f}%  Spearman {v['spearman']:.3f}  order right: "
                      f"{v['order_right']}   (analytical model: MAPE {v.get('analytical_mape_ms', float('nan')):.1f}%"
                      f"  Spearman {v.get('analytical_spearman', float('nan')):.3f})")
                for name, r in v["rungs"].items():
                    print(f"    {name:<18} measured {r['measured_ms']:9.4f} ms  cycle-level {r['predicted_ms']:9.4f} ms"
                          f"  analytical {r['analytical_ms'] or float('nan'):9.4f} ms")
    result["throughput"] = throughput_all(s, params)
    for tp in result["throughput"]:
        print(f"replay: {tp['warp_instructions_per_s']:.3g} warp instructions/s ({tp['sample']}, {tp['sms']} SM(s), "
              f"{tp['steps']} steps, median {tp['median_s']:.3f} s; compile {tp['compile_s']:.1f} s) on {tp['device']}")
    kind = "gpu" if jax.devices()[0].platform == "gpu" else "cpu"
    path = a.out or os.path.join(os.path.dirname(__file__), "results", f"timing_{kind}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1, default=float)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
