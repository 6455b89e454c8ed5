"""The cycle-level timing model on a launch (`launch(..., timing=True)`): trace a representative set of the
launch's blocks with one more functional run, replay them (`jaxsimt.timing.replay`), and add the predictions to the
launch's stats. It sits with the launch, above the model: it launches, and the model does not."""
from __future__ import annotations

from typing import Optional

import numpy as np

from jaxsimt.timing import cost
from jaxsimt.timing import trace as tr
from jaxsimt.arch import Arch, get_arch
from jaxsimt.run.launch import launch
from jaxsimt.timing.replay import MAX_STEPS, params_of, plan, run, summarize, traced_blocks


def for_launch(kernel, grid, block, args, arch: "Arch | str", stats: dict, *, regs=None, local_bytes: int = 0,
               mode: str = "stack",
               params: Optional[dict] = None, policy: str = "gto", max_steps: int = MAX_STEPS,
               footprint_bytes_per_block=None, dram_bytes=None, replay: str = "exact"):
    """Trace a representative set of the launch's blocks (one more functional run, counters on) and replay
    them. Returns (stats: cycles, predicted_ms, achieved occupancy, stall_*; the Trace; the Work; the
    per-SM output)."""
    arch = get_arch(arch)
    n_ctas = int(stats["launch__grid_size"])
    R = max(int(stats["active_blocks_per_sm"]), 1)
    ctas = traced_blocks(n_ctas, R, arch.num_sms)
    r = launch(kernel, grid, block, args, arch, regs=regs, trace=True, ctas=ctas.tolist(),
               blocks_per_wave=len(ctas), local_bytes=local_bytes, **({"mode": mode} if mode != "stack" else {}))
    t = tr.from_launch(r, footprint_bytes_per_block, dram_bytes)
    t.meta["n_ctas"] = n_ctas
    params = params if params is not None else params_of(arch)
    work = plan(t, arch, R, n_ctas, max_steps)
    out = run(work, params, policy, replay)
    return summarize(work, out, params, arch), t, work, out


def analytical_stats(result, arch: "Arch | str", dram_bytes: Optional[float] = None) -> dict:
    """The analytical model's prediction for a launch result (`predicted_ms_analytical`)."""
    fmas = sum(r["thread_exec"] for r in result.per_instruction if r["op"] in ("fma", "mad"))
    if dram_bytes is None:
        dram_bytes = sum(float(np.asarray(a).nbytes) for p, a in zip(result.program.params, result.args)
                         if p.is_pointer and a is not None)
    return {"predicted_ms_analytical": cost.predict(result.stats, arch, dram_bytes, fmas)["predicted_ms_analytical"]}


def attach(result, kernel, args, *, regs=None, local_bytes: int = 0, **kw) -> dict:
    """Add the timing stats to a launch result's stats; returns {'trace', 'work', 'output', 'params'}."""
    arch = get_arch(result.arch)
    params = kw.pop("params", None) or params_of(arch)
    st, t, work, out = for_launch(kernel, result.grid, result.block, args, arch, result.stats, regs=regs,
                                  local_bytes=local_bytes, params=params, **kw)
    result.stats.update(analytical_stats(result, arch))
    result.stats.update(st)
    return {"trace": t, "work": work, "output": out, "params": params}
