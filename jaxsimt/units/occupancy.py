"""Theoretical occupancy: resident blocks and warps per SM, as the CUDA occupancy calculator computes them.

Follows the algorithm of `cudaOccupancyMaxActiveBlocksPerMultiprocessor` (NVIDIA's `cuda_occupancy.h`),
with every number from an `Arch`; compute capability 1.x/2.x (which that header no longer covers) follow
the older occupancy-calculator spreadsheet. Four limits, each a number of blocks per SM; the result is
their minimum:

* warps: ``(max_threads_per_sm // warp_size) // ceil(threads / warp_size)``; 0 when the block is larger
  than `max_threads_per_block`.
* blocks: `max_blocks_per_sm`.
* registers, per warp (`register_alloc_per == "warp"`, cc 2.x and later): a warp holds
  ``roundup(regs * warp_size, register_alloc_unit)`` registers; the SM holds
  ``floor(registers_per_sm / that)`` warps rounded down to a multiple of `warp_alloc_granularity` (on
  Hopper: registers are split among the 4 sub-partitions); blocks = those warps // warps per block. A block
  fits at all only when its registers, with its warps rounded up to the granularity, fit
  `max_registers_per_block`, and `regs <= max_registers_per_thread`. Per block (cc 1.x, G80): a block holds
  ``roundup(roundup(warps, warp_alloc_granularity) * regs * warp_size, register_alloc_unit)`` registers
  and blocks = ``registers_per_sm // that`` (seed 003: 256 threads x 10 registers -> 3 blocks, 11 -> 2).
  Zero registers put no limit.
* shared memory: a block holds ``roundup(smem + reserved_shared_mem_per_block, shared_mem_alloc_unit)``
  bytes and fits at all only within ``shared_mem_per_block_optin + reserved`` (a kernel asking for more
  than the default per-block limit must have opted in to launch). The SM's shared memory is the carve-out:
  the preference (`carveout`, bytes; default the largest) rounded up to an allowed size
  (`shared_carveouts_kb`); if one block does not fit in it, the smallest allowed carve-out that holds one
  block is used instead. Blocks = carve-out // per-block allocation (no limit when that is 0).

`limiter` names the first limit, in the order warps, blocks, registers, shared_memory, that equals the
result (ties favour the hardware ceilings: lowering a resource would not raise occupancy). Block barriers
(Hopper) and partitioned global caching (Pascal) are not modelled.
"""
from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt.arch import Arch, get_arch

LIMITERS = ("warps", "blocks", "registers", "shared_memory")
UNLIMITED = 2**31 - 1  # what a limit that does not apply reports (the header's INT_MAX)


def _round_up(x: jax.Array, unit: int) -> jax.Array:
    return (x + (unit - 1)) // unit * unit


def _ceil_div(x: jax.Array, y) -> jax.Array:
    return (x + (y - 1)) // y


# Every rule below takes `xp`, the array module (jax.numpy under jit/vmap, numpy for one configuration):
# the arithmetic is identical, and the scalar path needs no compilation.


def warps_limit(arch: Arch, threads, xp=jnp):
    """Blocks per SM allowed by the warp slots. threads: [...] int32 -> [...] int32."""
    warps = _ceil_div(threads, arch.warp_size)
    max_warps = arch.max_threads_per_sm // arch.warp_size
    ok = (threads > 0) & (threads <= arch.max_threads_per_block)
    return xp.where(ok, max_warps // xp.maximum(warps, 1), 0).astype(xp.int32)


def registers_limit(arch: Arch, threads, regs, xp=jnp):
    """Blocks per SM allowed by the register file, and registers allocated per block.

    threads, regs: [...] int32. Returns ([...] int32 blocks, [...] int32 registers per block).
    """
    warps = xp.maximum(_ceil_div(threads, arch.warp_size), 1)
    gran = arch.warp_alloc_granularity
    if arch.register_alloc_per == "warp":
        per_warp = _round_up(regs * arch.warp_size, arch.register_alloc_unit)
        per_block = per_warp * warps
        assumed = per_warp * _round_up(warps, gran)  # the launch check rounds warps to the granularity
        sm_warps = arch.registers_per_sm // xp.maximum(per_warp, 1) // gran * gran
        blocks = sm_warps // warps
        fits = (assumed <= arch.max_registers_per_block) & (per_block <= arch.max_registers_per_block)
    elif arch.register_alloc_per == "block":
        per_block = _round_up(_round_up(warps, gran) * regs * arch.warp_size, arch.register_alloc_unit)
        blocks = arch.registers_per_sm // xp.maximum(per_block, 1)
        fits = per_block <= arch.max_registers_per_block
    else:
        raise ValueError(f"unknown register_alloc_per {arch.register_alloc_per!r}")
    fits = fits & (regs <= arch.max_registers_per_thread) & (regs >= 0)
    blocks = xp.where(regs == 0, UNLIMITED, blocks)
    return xp.where(fits, blocks, 0).astype(xp.int32), per_block.astype(xp.int32)


def align_carveout(arch: Arch, size, xp=jnp):
    """Smallest allowed carve-out (bytes) holding `size` bytes; the largest when none does. [...] int32."""
    allowed = xp.asarray(sorted(arch.shared_carveouts_kb), xp.int32) * 1024
    fits = allowed >= xp.asarray(size, xp.int32)[..., None]
    return xp.min(xp.where(fits, allowed, allowed[-1]), axis=-1).astype(xp.int32)


def shared_memory_limit(arch: Arch, smem, carveout=None, xp=jnp):
    """Blocks per SM allowed by shared memory.

    smem: [...] int32, the kernel's own bytes per block (static + dynamic). carveout: [...] int32 preferred
    shared memory per SM in bytes, or None for the largest. Returns ([...] blocks, [...] bytes allocated per
    block, [...] shared memory per SM used), all int32.
    """
    reserved = arch.reserved_shared_mem_per_block
    per_block = _round_up(smem + reserved, arch.shared_mem_alloc_unit)
    if carveout is None:
        carveout = arch.max_shared_carveout
    preferred = align_carveout(arch, xp.asarray(carveout, xp.int32), xp)
    per_sm = xp.where(preferred >= per_block, preferred, align_carveout(arch, per_block, xp))
    blocks = xp.where(per_block > 0, per_sm // xp.maximum(per_block, 1), UNLIMITED)
    fits = (smem >= 0) & (per_block <= arch.shared_mem_per_block_optin + reserved)
    return xp.where(fits, blocks, 0).astype(xp.int32), per_block.astype(xp.int32), per_sm


def _occupancy(xp, arch: Arch, threads, regs, smem, carveout) -> dict:
    threads = xp.asarray(threads, xp.int32)
    regs = xp.asarray(regs, xp.int32)
    smem = xp.asarray(smem, xp.int32)
    threads, regs, smem = xp.broadcast_arrays(threads, regs, smem)
    by_warps = warps_limit(arch, threads, xp)
    by_blocks = xp.full(threads.shape, arch.max_blocks_per_sm, xp.int32)
    by_regs, regs_alloc = registers_limit(arch, threads, regs, xp)
    by_smem, smem_alloc, smem_sm = shared_memory_limit(arch, smem, carveout, xp)
    limits = xp.stack([by_warps, by_blocks, by_regs, by_smem], axis=-1)
    blocks = xp.min(limits, axis=-1)
    warps = (blocks * _ceil_div(threads, arch.warp_size)).astype(xp.int32)
    max_warps = arch.max_threads_per_sm // arch.warp_size
    return {
        "active_blocks_per_sm": blocks,
        "active_warps_per_sm": warps,
        "occupancy": warps.astype(xp.float32) / max_warps,
        "limiter": xp.argmax(limits == blocks[..., None], axis=-1).astype(xp.int32),
        "blocks_limit_warps": by_warps,
        "blocks_limit_blocks": by_blocks,
        "blocks_limit_registers": by_regs,
        "blocks_limit_shared_memory": by_smem,
        "registers_per_block": regs_alloc,
        "shared_mem_per_block": smem_alloc,
        "shared_mem_per_sm": xp.broadcast_to(smem_sm, threads.shape).astype(xp.int32),
    }


def occupancy_arrays(
    arch: "Arch | str",
    threads_per_block: jax.Array,
    regs_per_thread: jax.Array,
    smem_per_block: jax.Array,
    carveout: "jax.Array | None" = None,
) -> dict[str, jax.Array]:
    """Theoretical occupancy over arrays (arch static; the numeric arguments broadcast together).

    threads_per_block, regs_per_thread, smem_per_block (bytes), carveout (bytes or None): [...] int.
    Returns a dict of [...] arrays: active_blocks_per_sm, active_warps_per_sm (int32), occupancy (float32,
    active warps / max warps per SM), limiter (int32 index into LIMITERS), blocks_limit_{warps, blocks,
    registers, shared_memory} (int32; UNLIMITED where a limit does not apply), registers_per_block,
    shared_mem_per_block (allocated, int32) and shared_mem_per_sm (the carve-out used, int32).
    jit-able and vmap-able.
    """
    return _occupancy(jnp, get_arch(arch), threads_per_block, regs_per_thread, smem_per_block, carveout)


def occupancy(
    arch: "Arch | str",
    threads_per_block: int,
    regs_per_thread: int,
    smem_per_block: int = 0,
    carveout: "int | None" = None,
) -> dict:
    """Theoretical occupancy of one launch configuration, as plain Python numbers.

    Returns active_blocks_per_sm, active_warps_per_sm, max_warps_per_sm (int), occupancy (float),
    limiter (one of LIMITERS), limiters (every limit equal to the result), blocks_limit_{warps, blocks,
    registers, shared_memory}, registers_per_block, shared_mem_per_block, shared_mem_per_sm (int).
    """
    arch = get_arch(arch)
    if threads_per_block <= 0:
        raise ValueError(f"threads_per_block must be positive, got {threads_per_block}")
    if regs_per_thread < 0 or smem_per_block < 0:
        raise ValueError("regs_per_thread and smem_per_block must not be negative")
    raw = _occupancy(np, arch, threads_per_block, regs_per_thread, smem_per_block, carveout)
    out: dict = {key: value.item() for key, value in raw.items()}
    out["occupancy"] = out["active_warps_per_sm"] / (arch.max_threads_per_sm // arch.warp_size)
    out["limiter"] = LIMITERS[out["limiter"]]
    out["limiters"] = [name for name in LIMITERS if out[f"blocks_limit_{name}"] == out["active_blocks_per_sm"]]
    out["max_warps_per_sm"] = arch.max_threads_per_sm // arch.warp_size
    out["arch"] = arch.name
    return out
