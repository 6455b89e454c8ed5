"""A first analytical cost model: kernel time from its counters, occupancy and the architecture.

Roofline bounds — instruction issue, FP32 FMA, Tensor Core, shared-memory wavefronts, L1/L2 sectors and
DRAM bytes — each divided by the rate of the unit that serves it, tempered by latency hiding: a kernel whose
SMs hold too few warps to cover the memory latency cannot reach the memory bounds. Everything is a pure
function of arrays, so `jax.grad(predict_seconds)` gives the sensitivity of time to every parameter, and
`vmap` sweeps configurations.

    t = t_launch + max(max(t_issue, t_fma, t_tensor, t_shared, t_l2, t_dram) / hiding(occupancy), t_warp)

Two floors keep a small kernel's time physical: `t_launch` (`Timing.launch_overhead_us`, from the launch to the
first block and from the last block to completion, as in the cycle-level model) and `t_warp`, the least time one
warp needs alone — a warp issues at most one instruction per cycle, and a kernel that reads global memory waits at
least one L2 round trip (`l2_latency`) for its first load. The per-SM units (issue, FP32, Tensor Cores, shared
memory) count only the SMs that hold a block: a grid of fewer blocks than SMs leaves the others idle.

Inputs are the launch's `stats` (the Nsight Compute-named counters) plus a DRAM traffic estimate; the
timing parameters come from `Arch.timing` (`params_of(arch)` turns them into a pytree of floats). These
parameters are starting points, not fitted values; the cycle-level model replaces this one.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt.arch import Arch, get_arch
from jaxsimt.units.banks import METRIC_WAVEFRONTS
from jaxsimt.units.coalescing import METRIC_SECTORS


def params_of(arch: "Arch | str") -> dict:
    """The architecture's timing parameters (plus SM count and schedulers) as a dict of float arrays."""
    arch = get_arch(arch)
    p = {k: jnp.asarray(float(v)) for k, v in dataclasses.asdict(arch.timing).items()}
    p["num_sms"] = jnp.asarray(float(arch.num_sms))
    p["schedulers_per_sm"] = jnp.asarray(float(arch.warp_schedulers_per_sm))
    p["max_warps_per_sm"] = jnp.asarray(float(arch.max_warps_per_sm))
    p["sector_size"] = jnp.asarray(float(arch.sector_size))
    return p


def _num(x):
    """A counter as a float array: plain numbers through float (exact for counts beyond int32), arrays
    (e.g. stats stacked over configurations, under vmap) cast."""
    if isinstance(x, (int, float, np.number)):
        return jnp.asarray(float(x))
    return jnp.asarray(x).astype(jnp.result_type(float))


def loads_plus_stores(stats: Mapping[str, float], metric: str):
    """A per-op counter template (`..._op_{op}.sum`) summed over loads and stores (a float; an array
    when the stats are arrays)."""
    ld, st = stats.get(metric.format(op="ld"), 0), stats.get(metric.format(op="st"), 0)
    if isinstance(ld, (int, float, np.number)) and isinstance(st, (int, float, np.number)):
        return float(ld) + float(st)
    return _num(ld) + _num(st)


def bounds(stats: Mapping[str, float], params: Mapping[str, jax.Array], dram_bytes, fmas) -> dict:
    """Seconds each unit needs for the whole kernel, as if it were the only limit."""
    clock = params["clock_ghz"] * 1e9
    sms = busy_sms(stats, params)
    warp_inst = _num(stats.get("smsp__inst_executed.sum", 0))
    sectors = loads_plus_stores(stats, METRIC_SECTORS)
    wavefronts = loads_plus_stores(stats, METRIC_WAVEFRONTS)
    tensor_flops = _num(stats.get("emulator__tensor_flops", 0))
    return {
        "issue": warp_inst / (params["schedulers_per_sm"] * sms * clock),
        "fma": _num(fmas) / (params["fp32_lanes_per_sm"] * sms * clock),
        "tensor": tensor_flops / jnp.maximum(params["tensor_flops_per_cycle_per_sm"] * sms * clock, 1.0),
        "shared": jnp.asarray(wavefronts) / (sms * clock),
        "l2": jnp.asarray(sectors) * params["sector_size"] / (params["l2_bytes_per_cycle"] * clock),
        "dram": _num(dram_bytes) / (params["dram_gbytes_per_s"] * 1e9),
    }


def busy_sms(stats: Mapping[str, float], params: Mapping[str, jax.Array]):
    """SMs that hold at least one block: min(blocks, SMs); all SMs when the grid size is not in the stats."""
    blocks = _num(stats.get("launch__grid_size", 0))
    return jnp.where(blocks > 0, jnp.minimum(blocks, params["num_sms"]), params["num_sms"])


def warp_floor(stats: Mapping[str, float], params: Mapping[str, jax.Array]):
    """Seconds one warp needs on its own: its instructions issued one per cycle, plus one L2 round trip when the
    kernel loads from global memory (0 when the grid and block sizes are not in the stats)."""
    from jaxsimt.units.coalescing import METRIC_REQUESTS

    blocks = _num(stats.get("launch__grid_size", 0))
    threads = _num(stats.get("launch__block_size", 0))
    warps = blocks * jnp.ceil(threads / 32.0)
    per_warp = jnp.where(warps > 0, _num(stats.get("smsp__inst_executed.sum", 0)) / jnp.maximum(warps, 1.0), 0.0)
    loads = _num(stats.get(METRIC_REQUESTS.format(op="ld"), 0))
    cycles = per_warp + jnp.where((loads > 0) & (warps > 0), params["l2_latency"], 0.0)
    return cycles / (params["clock_ghz"] * 1e9)


def hiding(occupancy, params: Mapping[str, jax.Array], memory_fraction):
    """Fraction of peak reachable with the resident warps: Little's law — to keep the memory pipes busy
    an SM needs about latency x issue rate warps in flight; fewer warps leave the pipes idle."""
    warps = occupancy * params["max_warps_per_sm"]
    needed = params["dram_latency"] * params["schedulers_per_sm"] / 32.0 * memory_fraction + 1.0
    return jnp.clip(warps / needed, 0.05, 1.0)


def predict_seconds(stats: Mapping[str, float], params: Mapping[str, jax.Array], dram_bytes, fmas) -> jax.Array:
    """Predicted kernel time in seconds (differentiable in `params`)."""
    b = bounds(stats, params, dram_bytes, fmas)
    t = jnp.max(jnp.stack(list(b.values())))
    mem = jnp.maximum(b["l2"], b["dram"])
    mem_fraction = jnp.clip(mem / jnp.maximum(t, 1e-30), 0.0, 1.0)
    busy = t / hiding(_num(stats.get("occupancy", 1.0)), params, mem_fraction)
    return params["launch_overhead_us"] * 1e-6 + jnp.maximum(busy, warp_floor(stats, params))


def predict(stats: Mapping[str, float], arch: "Arch | str", dram_bytes, fmas) -> dict:
    """Predicted time (ms), the bound that limits it and every bound, as plain Python numbers."""
    params = params_of(arch)
    b = bounds(stats, params, dram_bytes, fmas)
    t = float(predict_seconds(stats, params, dram_bytes, fmas))
    limiter = max(b, key=lambda k: float(b[k]))
    floor = float(warp_floor(stats, params))
    launch = float(params["launch_overhead_us"]) * 1e-6
    busy = t - launch  # the larger of the throughput time and the one-warp floor
    if floor >= busy > 0 and floor > max(float(v) for v in b.values()):
        limiter = "latency"  # one warp's own instructions and its first load take longer than any throughput bound
    if launch > busy:
        limiter = "launch"  # a small kernel: most of its time is the launch itself
    return {"predicted_ms_analytical": t * 1e3, "predicted_ms": t * 1e3, "limiter": limiter,
            **{f"bound_{k}_ms": float(v) * 1e3 for k, v in b.items()}, "launch_overhead_ms": float(
                params["launch_overhead_us"]) * 1e-3, "warp_floor_ms": floor * 1e3}
