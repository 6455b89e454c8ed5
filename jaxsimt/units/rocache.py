"""The read-only / texture cache: an L1-like set-associative LRU cache of sectored lines, simulated during
the functional run for the loads that go through it (`ld.global.nc`, DSL `ldg`, and 2D texture fetches).

Model:

* one cache per thread block of the wave, cold when the wave starts (real SMs share one cache among their
  resident blocks and keep it warm from block to block);
* capacity: `arch.ro_cache_bytes`, or where that is 0 the unified L1 left by the shared-memory carve-out
  (`arch.l1_plus_shared_per_sm - carve-out`); `arch.ro_cache_ways`-way set associative, lines of
  `arch.line_size` bytes split into sectors of `arch.sector_size` bytes; set = line number % sets;
* one warp instruction looks up each distinct line its active lanes touch, in lane order of the first lane
  touching it, warps of a block in warp order; a lookup of a present line hits the sectors it holds
  (valid bits) and fills the others; an absent line replaces the least recently used way of its set;
* counted in sectors: hits (requested sectors found valid) and misses (requested sectors not valid).

State (a pytree carried by the machine): tags [C, S, A] int64 line number (-1 empty), valid [C, S, A]
uint32 sector bits, age [C, S, A] int32 time of last use, clock [C] int32; C blocks per wave, S sets,
A ways.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
from jax import lax

from jaxsimt.arch import Arch
from jaxsimt.units.intops import floordiv, mod

# a load's `cache` attribute: "ro" and "tex" go through this cache; L2_ONLY loads (PTX .cg, .cv,
# L1::no_allocate) neither hit nor fill L1 (the timing model's L1, jaxsimt.timing.l1tags)
L2_ONLY = "l2"

METRIC_LDG_HITS = "emulator__ro_cache_sector_hits.sum"
METRIC_LDG_MISSES = "emulator__ro_cache_sector_misses.sum"
METRIC_TEX_HITS = "emulator__tex_cache_sector_hits.sum"
METRIC_TEX_MISSES = "emulator__tex_cache_sector_misses.sum"


@dataclass(frozen=True)
class CacheShape:
    """Static cache geometry."""

    sets: int
    ways: int
    line: int  # bytes
    sector: int  # bytes

    @property
    def bytes(self) -> int:
        return self.sets * self.ways * self.line


def cache_bytes(arch: Arch, shared_per_sm: int) -> int:
    """Capacity of the read-only path of one SM, given the shared-memory carve-out in use (bytes)."""
    return arch.ro_cache_bytes or max(arch.l1_plus_shared_per_sm - int(shared_per_sm), 0)


def shape(arch: Arch, nbytes: int) -> CacheShape:
    lines = max(int(nbytes) // arch.line_size, 1)
    ways = min(arch.ro_cache_ways, lines)
    return CacheShape(lines // ways, ways, arch.line_size, arch.sector_size)


class Cache(NamedTuple):
    tags: jnp.ndarray  # [C, S, A] int64  line number held, -1: empty
    valid: jnp.ndarray  # [C, S, A] uint32  valid sectors of the line
    age: jnp.ndarray  # [C, S, A] int32  clock of the last use (-1: never)
    clock: jnp.ndarray  # [C] int32


def used_by(program) -> bool:
    """Whether any instruction of `program` loads through the read-only/texture path."""
    return any(ins.operation.attr("cache") in ("ro", "tex") for _, ins in program.instructions())


def init(n_blocks: int, cs: CacheShape) -> Cache:
    dims = (n_blocks, cs.sets, cs.ways)
    return Cache(jnp.full(dims, -1, jnp.int64), jnp.zeros(dims, jnp.uint32), jnp.full(dims, -1, jnp.int32),
                 jnp.zeros((n_blocks,), jnp.int32))


def warp_requests(cs: CacheShape, addr, nbytes: int, active):
    """Per lane: (line [W, L] int64, sectors wanted [W, L] uint32, lookup [W, L] bool). A lane looks the line
    up when it is the first active lane of its warp touching that line; its sector bits are the union over
    the lanes touching the line."""
    L = addr.shape[-1]
    line = floordiv(addr, cs.line)
    first_sec = floordiv(mod(addr, cs.line), cs.sector)
    last_sec = floordiv(mod(addr + nbytes - 1, cs.line), cs.sector)
    nsec = cs.line // cs.sector
    k = jnp.arange(nsec, dtype=jnp.int64)
    bits = jnp.sum(jnp.where((k >= first_sec[..., None]) & (k <= last_sec[..., None]),
                             jnp.uint32(1) << k.astype(jnp.uint32), jnp.uint32(0)), axis=-1, dtype=jnp.uint32)
    same = (line[..., :, None] == line[..., None, :]) & active[..., None, :] & active[..., :, None]
    union = lax.reduce(jnp.where(same, bits[..., None, :], jnp.uint32(0)), jnp.uint32(0), lax.bitwise_or, (2,))
    earlier = jnp.arange(L)[None, :] < jnp.arange(L)[:, None]
    lookup = active & ~jnp.any(same & earlier, axis=-1)
    return line, union, lookup


def access(cache: Cache, cs: CacheShape, addr, nbytes: int, active, warps_per_block: int):
    """Look up one load instruction of every warp of the wave (addr [W, L] int64, active [W, L] bool;
    W = blocks x warps_per_block). Returns (new cache, sector hits [C], sector misses [C]), int64 per block."""
    line, want, lookup = warp_requests(cs, addr, nbytes, active)
    C = cache.tags.shape[0]
    # the lookups of each block, warp-major then lane: [R, C]
    seq = [x.reshape(C, -1).T for x in (line, want, lookup)]
    rows = jnp.arange(C)

    def one(carry, x):
        c, hits, misses = carry
        key, bits, go = x
        s = mod(key, cs.sets).astype(jnp.int32)
        tags, valid, age = c.tags[rows, s], c.valid[rows, s], c.age[rows, s]  # [C, A]
        match = tags == key[:, None]
        hit = jnp.any(match, axis=1)
        way = jnp.where(hit, jnp.argmax(match, axis=1), jnp.argmin(age, axis=1))
        old = jnp.where(hit, valid[rows, way], jnp.uint32(0))
        h = lax.population_count(bits & old).astype(jnp.int64)
        mi = lax.population_count(bits & ~old).astype(jnp.int64)
        s_go = jnp.where(go, s, cs.sets)  # out of range: the update is dropped
        c = Cache(c.tags.at[rows, s_go, way].set(key, mode="drop"),
                  c.valid.at[rows, s_go, way].set(old | bits, mode="drop"),
                  c.age.at[rows, s_go, way].set(c.clock, mode="drop"),
                  c.clock + go.astype(jnp.int32))
        return (c, hits + jnp.where(go, h, 0), misses + jnp.where(go, mi, 0)), None

    zero = jnp.zeros((C,), jnp.int64)
    (cache, hits, misses), _ = lax.scan(one, (cache, zero, zero), tuple(seq))
    return cache, hits, misses
