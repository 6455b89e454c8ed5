"""L1 as tags: which global-load sectors of one SM hit its L1, from the loads' addresses.

The replay needs, per global instruction, the fraction of its sectors served by L1 (`Trace.hit_l1`). Instead
of a footprint estimate, this module runs the loads of the blocks one SM holds through a model of that
SM's L1 and counts the hits per instruction:

* one L1 per SM, shared by the blocks resident on it; the traced blocks stand for one SM's queue, taken in
  rounds of `blocks_per_sm` (the first round's blocks run together, the next round's after them, the cache
  kept warm between rounds);
* geometry as the read-only path's (`jaxsimt.units.rocache`: the unified L1 left by the shared-memory
  carve-out, `arch.ro_cache_ways`-way set associative, LRU, `arch.line_size` lines of
  `arch.sector_size` sectors), with a hashed set index (`set_index`);
* a warp's load looks up each distinct line its active lanes touch, in the order of the first lane touching
  it; warps in the order the functional run executed them (step by step, warp by warp): a lookup hits the
  sectors its line holds and fills the others;
* only loads allocate (L1 is write-through: a store's sectors all go to L2, `store_hit` is 0); loads that
  bypass L1 (`cache` attribute L2_ONLY: PTX `.cg`, `.cv`, `L1::no_allocate`) miss and allocate nothing.

Shapes: N lookups, NI instructions; per lookup a line number (int64), the sectors wanted (uint32 bits) and
the instruction's pc (int32).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsimt.units import rocache

# where the timing model's L1 hits come from: "tags" (this module) or "footprint" (`trace.memory_fractions`)
MODELS = ("tags", "footprint")
# the `cache` attribute of loads that neither hit nor fill L1 (the PTX front end's .cg, .cv, L1::no_allocate)
L2_ONLY = "l2"


class Lookups(NamedTuple):
    """Line lookups in the order the SM's L1 sees them: line [N] int64, bits [N] uint32 sectors wanted,
    pc [N] int32 the load's instruction, allocate [N] bool (False: a bypassing load, always a miss)."""

    line: np.ndarray
    bits: np.ndarray
    pc: np.ndarray
    allocate: np.ndarray


def warp_lookups(cs: rocache.CacheShape, addr: np.ndarray, ok: np.ndarray, nbytes: int):
    """One load of W warps (addr [W, L] int64 byte addresses, ok [W, L] active lanes, nbytes per lane) as
    lookups, warp by warp, each warp's lines in the order of their first lane: (line [n] int64, bits [n]
    uint32, warp [n] int64)."""
    line = addr // cs.line
    first = (addr % cs.line) // cs.sector
    last = ((addr + nbytes - 1) % cs.line) // cs.sector
    k = np.arange(cs.line // cs.sector)
    bits = np.bitwise_or.reduce(np.where((k >= first[..., None]) & (k <= last[..., None]),
                                         np.uint32(1) << k.astype(np.uint32), np.uint32(0)), axis=-1)
    same = (line[:, :, None] == line[:, None, :]) & ok[:, :, None] & ok[:, None, :]  # [W, L, L]
    union = np.bitwise_or.reduce(np.where(same, bits[:, None, :], np.uint32(0)), axis=-1)
    earlier = np.tril(np.ones((line.shape[1], line.shape[1]), bool), -1)  # [i, j]: lane j before lane i
    lead = ok & ~np.any(same & earlier[None], axis=-1)  # the first active lane of its line
    w, lane = np.nonzero(lead)  # row-major: warp by warp, lane by lane
    return line[w, lane], union[w, lane].astype(np.uint32), w.astype(np.int64)


# Fibonacci hashing's multiplier (2^64 / golden ratio): the set index mixes every bit of the line number
_MIX = 0x9E3779B97F4A7C15


def set_index(line, sets: int):
    """The set of a line number (int64 array): hashed, as GPU L1s hash their index, so that rows of a matrix
    a power of two of lines apart spread over the sets instead of sharing a few (with `line % sets`, 128
    rows 8 KiB apart fall into 8 of 512 sets and evict each other whatever the capacity)."""
    mixed = line.astype(jnp.uint64) * jnp.uint64(_MIX)
    return ((mixed >> jnp.uint64(32)) % jnp.uint64(sets)).astype(jnp.int32)


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


@functools.partial(jax.jit, static_argnums=(0, 2))
def _simulate(cs: rocache.CacheShape, lk: tuple, n_pcs: int):
    line, bits, pc, allocate, go = lk
    S, A = cs.sets, cs.ways

    def one(c, x):
        tags, valid, age, clock, hits, misses = c
        key, want, p, alloc, on = x
        s = set_index(key, S)
        match = tags[s] == key
        hit = jnp.any(match) & alloc
        way = jnp.where(hit, jnp.argmax(match), jnp.argmin(age[s]))
        old = jnp.where(hit, valid[s, way], jnp.uint32(0))
        h = lax.population_count(want & old).astype(jnp.int64)
        m = lax.population_count(want & ~old).astype(jnp.int64)
        put = on & alloc
        s_put = jnp.where(put, s, S)  # out of range: the update is dropped
        tags = tags.at[s_put, way].set(key, mode="drop")
        valid = valid.at[s_put, way].set(old | want, mode="drop")
        age = age.at[s_put, way].set(clock, mode="drop")
        hits = hits.at[jnp.where(on, p, n_pcs)].add(h, mode="drop")
        misses = misses.at[jnp.where(on, p, n_pcs)].add(m, mode="drop")
        return (tags, valid, age, clock + 1, hits, misses), None

    zero = jnp.zeros(n_pcs, jnp.int64)
    init = (jnp.full((S, A), -1, jnp.int64), jnp.zeros((S, A), jnp.uint32), jnp.full((S, A), -1, jnp.int32),
            jnp.int32(0), zero, zero)
    (_, _, _, _, hits, misses), _ = lax.scan(one, init, (line, bits, pc, allocate, go))
    return hits, misses


def simulate(cs: rocache.CacheShape, lk: Lookups, n_pcs: int) -> tuple[np.ndarray, np.ndarray]:
    """Run the lookups through one L1 (cold at the start). Returns (sector hits [n_pcs], sector misses
    [n_pcs]) int64 per instruction. Compiled once per cache shape, instruction count and power-of-two
    number of lookups."""
    n = len(lk.line)
    if n == 0:
        return np.zeros(n_pcs, np.int64), np.zeros(n_pcs, np.int64)
    N = _pow2(n)
    pad = lambda a, dt: np.concatenate([np.asarray(a, dt), np.zeros(N - n, dt)])  # noqa: E731
    go = np.arange(N) < n
    with jax.enable_x64(True):  # line numbers and counts are 64-bit
        hits, misses = _simulate(cs, (pad(lk.line, np.int64), pad(lk.bits, np.uint32), pad(lk.pc, np.int32),
                                      pad(lk.allocate, bool), go), n_pcs)
    return np.asarray(hits), np.asarray(misses)


# lookups simulated per round of resident blocks: a loop's hit rate settles long before (the replay itself
# looks at a window of each SM's first instructions), and the stream of a long kernel would take minutes
MAX_LOOKUPS_PER_ROUND = 1 << 20


class Collector:
    """A sink for `jaxsimt.run.addresses.replay` that keeps the global loads of `pcs` ({pc: allocates}) as
    L1 lookups, ordered as one SM would see them: the replayed wave's blocks in rounds of `blocks_per_sm`
    (wave-local block index // blocks_per_sm), one round after the other; within a round step by step (a
    run of accesses with rising pcs is one step of the machine: one basic block), and within a step warp by
    warp, each warp's loads in program order (a warp issues a block's independent loads back to back before
    the next warp's, as a greedy scheduler does). At most MAX_LOOKUPS_PER_ROUND lookups of each round, its
    first. `lookups()` returns them."""

    def __init__(self, cs: rocache.CacheShape, pcs: dict, warps_per_block: int, blocks_per_sm: int):
        self.cs, self.pcs, self.wpb, self.R = cs, pcs, warps_per_block, max(int(blocks_per_sm), 1)
        self.parts: list = []
        self.step, self.last_pc, self.kept = 0, -1, {}

    def __call__(self, pc, space, addr, ok, nbytes):
        if space != "global" or pc not in self.pcs:
            return
        if pc <= self.last_pc:
            self.step += 1
        self.last_pc = pc
        line, bits, warp = warp_lookups(self.cs, addr, ok, nbytes)
        rnd = warp // self.wpb // self.R
        keep = np.ones(len(line), bool)
        for r in np.unique(rnd):  # each round's first lookups only
            mine = rnd == r
            room = MAX_LOOKUPS_PER_ROUND - self.kept.get(int(r), 0)
            keep &= ~mine | (np.cumsum(mine) <= room)
            self.kept[int(r)] = self.kept.get(int(r), 0) + int(min(mine.sum(), max(room, 0)))
        if keep.any():
            n = int(keep.sum())
            self.parts.append((rnd[keep].astype(np.int32), np.full(n, self.step, np.int64), warp[keep].astype(np.int32),
                               line[keep], bits[keep], np.full(n, pc, np.int32), np.full(n, self.pcs[pc], bool)))

    def lookups(self) -> Lookups:
        if not self.parts:
            return Lookups(np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int32), np.zeros(0, bool))
        rnd, step, warp, line, bits, pc, alloc = (np.concatenate(x) for x in zip(*self.parts))
        order = np.lexsort((warp, step, rnd))  # stable: a warp's loads of a step stay in program order
        return Lookups(line[order], bits[order], pc[order], alloc[order])


def hit_fractions(hits: np.ndarray, misses: np.ndarray) -> np.ndarray:
    """[NI] float32: the fraction of each instruction's looked-up sectors that hit (0 where none)."""
    total = hits + misses
    return np.where(total > 0, hits / np.maximum(total, 1), 0.0).astype(np.float32)
