"""The cycle-level timing model on a launch (`launch(..., timing=True)`): trace a representative set of the
launch's blocks with one more functional run, replay them (`jaxsimt.timing.replay`), and add the predictions to the
launch's stats. It sits with the launch, above the model: it launches, and the model does not."""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from jaxsimt import types as T
from jaxsimt.timing import cost, l1tags
from jaxsimt.timing import trace as tr
from jaxsimt.arch import Arch, get_arch
from jaxsimt.program import Program, Reg
from jaxsimt.run import addresses
from jaxsimt.run.launch import launch
from jaxsimt.timing.replay import params_of, plan, run, summarize, traced_blocks
from jaxsimt.units import isa, occupancy, rocache

# ptxas makes an atomic whose old value is never read a reduction (RED), and a warp's reduction whose active
# lanes all name one address with an associative operation one operation by one lane (VOTE + POPC / REDUX
# before it: H200 SASS, jaxsimt/data/h200/timing_micro/atomics_log.txt); every other atomic reaches the L2
# as one operation per active lane.
AGGREGATED_OPS = frozenset({"add", "min", "max", "and", "or", "xor"})


def for_launch(kernel, grid, block, args, arch: "Arch | str", stats: dict, *, regs=None, local_bytes: int = 0,
               mode: str = "stack",
               params: Optional[dict] = None, policy: str = "gto", max_steps: Optional[int] = None,
               footprint_bytes_per_block=None, dram_bytes=None, replay: str = "exact", l1: str = "tags",
               result=None):
    """Trace a representative set of the launch's blocks (one more functional run, counters on) and replay
    them, with L1 hits from `l1` (one of `l1tags.MODELS`). `result`: the launch's LaunchResult, whose inputs
    let that run also hand the addresses of the L1 model's loads and of the global atomics to the host (an
    address probe; else, or under ITS, one more run of the traced blocks gives them). Returns (stats: cycles,
    predicted_ms, achieved occupancy, stall_*; the Trace; the Work; the per-SM output)."""
    arch = get_arch(arch)
    n_ctas = int(stats["launch__grid_size"])
    R = max(int(stats["active_blocks_per_sm"]), 1)
    ctas = traced_blocks(n_ctas, R, arch.num_sms)
    prog = result.program if result is not None else None
    loads = global_loads(prog) if prog is not None and l1 == "tags" else {}
    agg = _global_atomics(prog) if prog is not None else {}
    r = None
    if (loads or agg) and mode == "stack":
        cs, lookups = _l1_collector(result, ctas, R, arch, stats, loads)
        atomics = AtomicTally(agg, -(-int(np.prod(block)) // arch.warp_size), arch.sector_size)
        r = addresses.replay(result, ctas, lambda *a: (lookups(*a), atomics(*a)), pcs=frozenset(loads) | set(agg),
                             trace=True)
    if r is None:
        r = launch(kernel, grid, block, args, arch, regs=regs, trace=True, ctas=ctas.tolist(),
                   blocks_per_wave=len(ctas), local_bytes=local_bytes, **({"mode": mode} if mode != "stack" else {}))
        agg = _global_atomics(r.program)
        loads = global_loads(r.program) if l1 == "tags" else {}
        hits, misses, first = l1_model(r, ctas, R, arch, stats) if loads else (None, None, None)
        hot = atomic_hot_ops(r, ctas, n_ctas, arch, agg) if agg else 0.0
    else:
        hits, misses, first = l1tags.model(cs, lookups.lookups(), len(prog.instructions())) if loads else (None,) * 3
        hot = atomics.hot_ops(n_ctas, len(ctas))
    t = tr.from_launch(r, footprint_bytes_per_block, dram_bytes,
                       hit_l1=None if hits is None else l1tags.hit_fractions(hits, misses),
                       first_share=None if hits is None else l1tags.first_share(first, misses))
    t.meta["n_ctas"] = n_ctas
    if hits is not None:
        t.meta["l1_sector_hits"], t.meta["l1_sector_lookups"] = int(hits.sum()), int((hits + misses).sum())
    params = params if params is not None else params_of(arch)
    work = plan(t, arch, R, n_ctas, max_steps)
    if agg:
        work = dataclasses.replace(work, atomic_ops=hot)
    out = run(work, params, policy, replay)
    st = summarize(work, out, params, arch)
    st[L1_HIT_RATE] = l1_hit_rate(t, r)
    return st, t, work, out


def global_loads(prog: Program) -> dict:
    """{pc: whether it may hit and fill L1 (not an L2-only load)} of the program's global (and generic) loads."""
    return {pc: ins.operation.attr("cache") != l1tags.L2_ONLY for pc, (_, ins) in enumerate(prog.instructions())
            if isa.memory(ins) == "read" and ins.operation.attr("space", "global") in ("global", "generic")}


L1_HIT_RATE = "timing__l1_global_load_hit_rate"  # the model's share of global-load sectors that hit L1


def l1_hit_rate(t: tr.Trace, result) -> float:
    """The share of the traced run's global-load sectors the trace's L1 model makes hits (`Trace.hit_l1`, each
    load weighted by its sectors), to set beside Nsight Compute's
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum / l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum."""
    if "l1_sector_lookups" in t.meta:
        return t.meta["l1_sector_hits"] / max(t.meta["l1_sector_lookups"], 1)
    loads = list(global_loads(result.program))
    sectors = np.asarray([float(result.per_instruction[pc].get("sectors", 0)) for pc in loads])
    return float((t.hit_l1[loads] * sectors).sum() / sectors.sum()) if sectors.sum() > 0 else 0.0


def l1_hits(result, ctas, blocks_per_sm: int, arch: "Arch | str", stats: dict) -> tuple:
    """(sector hits [NI], sector misses [NI]) of the launch's global loads on the L1s of the SMs that run blocks
    `ctas` (block i on SM i mod num_sms: the busiest SM's queue, or a small grid's blocks on SMs of their
    own), replayed on an address probe, `blocks_per_sm` at a time on each SM, each L1 what the shared-memory
    carve-out leaves (`l1_carveout`)."""
    return l1_model(result, ctas, blocks_per_sm, arch, stats, first=False)


def l1_model(result, ctas, blocks_per_sm: int, arch: "Arch | str", stats: dict, first: bool = True) -> tuple:
    """`l1_hits` and, with `first`, third, the sectors [NI] of each load its SM asks for the first time
    (`l1tags.first_requests`)."""
    arch = get_arch(arch)
    loads = global_loads(result.program)
    cs, sink = _l1_collector(result, ctas, blocks_per_sm, arch, stats, loads)
    n = len(result.program.instructions())
    if not loads or addresses.replay(result, ctas, sink, pcs=frozenset(loads)) is None:
        return (np.zeros(n, np.int64),) * (3 if first else 2)
    return l1tags.model(cs, sink.lookups(), n) if first else l1tags.simulate(cs, sink.lookups(), n)


def _l1_collector(result, ctas, blocks_per_sm: int, arch: Arch, stats: dict, loads: dict) -> tuple:
    """(the L1's geometry: what the shared-memory carve-out leaves, `l1_carveout`; an `l1tags.Collector` of
    the loads `loads` of blocks `ctas`, block i on SM i mod num_sms)."""
    cs = rocache.shape(arch, rocache.cache_bytes(arch, l1_carveout(result, arch, stats)))
    wpb = -(-int(np.prod(result.block)) // arch.warp_size)
    return cs, l1tags.Collector(cs, loads, wpb, blocks_per_sm, np.asarray(ctas) % arch.num_sms)


def l1_carveout(result, arch: Arch, stats: dict) -> int:
    """Shared-memory bytes per SM beside the L1: the launch's own carve-out where it asked for one, else the
    smallest allowed carve-out that holds its resident blocks' shared memory (reservation included), so
    that the rest is L1. (The H200's driver measured a little more: 32 KB for kernels without shared memory,
    64 KB where 8 blocks need 24 KB; jaxsimt/data/h200/suites_cache/ladder_*.csv.)"""
    if (result.inputs or {}).get("carveout") is not None:
        return int(stats["launch__shared_mem_config_size"])
    smem = int(stats.get("launch__shared_mem_per_block_static", 0))  # the program's, dynamic bytes included
    per_block = int(occupancy.shared_memory_limit(arch, np.int32(smem), None, np)[1])
    return int(occupancy.align_carveout(arch, max(int(stats["active_blocks_per_sm"]), 1) * per_block, np))


def _global_atomics(prog: Program) -> dict:
    """{pc: whether ptxas aggregates it (AGGREGATED_OPS, old value never read)} of the global atomics."""
    insts = prog.instructions()
    read = {r.index for _, ins in insts for r in ins.operation.src if isinstance(r, Reg)}
    out = {}
    for pc, (_, ins) in enumerate(insts):
        op = ins.operation
        if isa.memory(ins) == "atomic" and op.attr("space", "global") in ("global", "generic"):
            out[pc] = (op.attr("aop") in AGGREGATED_OPS and not T.BY_NAME[op.attr("type")].is_float
                       and not any(d.index in read for d in op.dst))
    return out


def atomic_hot_ops(result, ctas, n_ctas: int, arch: "Arch | str", agg: Optional[dict] = None) -> float:
    """L2 operations of the launch's global atomics on their busiest sector, over the whole grid: counted on
    blocks `ctas` (the traced ones, replayed on an address probe) and scaled to the grid for a sector more
    than one of them touches (a counter the grid shares); a sector one block alone touches stays as counted.
    A warp's aggregated atomic (AGGREGATED_OPS, one address) is one operation, any other one per lane. agg: the
    program's `_global_atomics` where the caller has it."""
    arch = get_arch(arch)
    agg = _global_atomics(result.program) if agg is None else agg
    tally = AtomicTally(agg, -(-int(np.prod(result.block)) // arch.warp_size), arch.sector_size)
    if addresses.replay(result, ctas, tally, pcs=frozenset(agg)) is None:
        return 0.0
    return tally.hot_ops(n_ctas, len(ctas))


class AtomicTally:
    """A sink for `addresses.replay` that counts the L2 operations of the global atomics `agg` ({pc: whether
    ptxas aggregates it}) per sector and the (wave-local) blocks issuing them; `hot_ops` is the busiest
    sector's count over the grid (see `atomic_hot_ops`)."""

    def __init__(self, agg: dict, warps_per_block: int, sector_size: int):
        self.agg, self.wpb, self.sector = agg, warps_per_block, sector_size
        self.sectors: list = []  # one entry per operation: its sector and the block issuing it
        self.blocks: list = []

    def __call__(self, pc, space, addr, ok, nbytes):
        if space != "global" or pc not in self.agg:
            return
        keep = ok
        if self.agg[pc]:  # a warp whose active lanes name one address: its first active lane's operation only
            first = ok.argmax(axis=1)
            lead = addr[np.arange(len(addr)), first]
            uniform = ok.any(axis=1) & np.all(~ok | (addr == lead[:, None]), axis=1)
            keep = ok & ~(uniform[:, None] & (np.arange(ok.shape[1]) != first[:, None]))
        self.sectors.append(addr[keep] // self.sector)
        self.blocks.append(np.nonzero(keep)[0] // self.wpb)

    def hot_ops(self, n_ctas: int, n_traced: int) -> float:
        """Operations on the busiest sector over the grid: a sector more than one traced block touches is a
        counter the grid shares (scaled from the `n_traced` blocks to `n_ctas`), one a single block touches
        stays as counted."""
        if not self.sectors:
            return 0.0
        sec, blk = np.concatenate(self.sectors), np.concatenate(self.blocks)
        _, ops = np.unique(sec, return_counts=True)
        touched = np.unique(np.stack([sec, blk]), axis=1)[0]  # each (sector, block) pair once: its sector
        n_blocks = np.unique(touched, return_counts=True)[1]  # blocks touching each sector, in the same order
        scale = n_ctas / max(n_traced, 1)
        return float(np.max(np.where(n_blocks > 1, ops * scale, ops)))


def analytical_stats(result, arch: "Arch | str", dram_bytes: Optional[float] = None) -> dict:
    """The analytical model's prediction for a launch result (`predicted_ms_analytical`)."""
    fmas = sum(r["thread_exec"] for r in result.per_instruction if r["op"] in ("fma", "mad"))
    if dram_bytes is None:
        dram_bytes = tr.array_bytes(result)
    return {"predicted_ms_analytical": cost.predict(result.stats, arch, dram_bytes, fmas)["predicted_ms_analytical"]}


def attach(result, kernel, args, *, regs=None, local_bytes: int = 0, **kw) -> dict:
    """Add the timing stats to a launch result's stats; returns {'trace', 'work', 'output', 'params'}."""
    arch = get_arch(result.arch)
    params = kw.pop("params", None) or params_of(arch)
    st, t, work, out = for_launch(kernel, result.grid, result.block, args, arch, result.stats, regs=regs,
                                  local_bytes=local_bytes, params=params, result=result, **kw)
    result.stats.update(analytical_stats(result, arch))
    result.stats.update(st)
    return {"trace": t, "work": work, "output": out, "params": params}
