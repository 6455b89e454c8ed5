"""L1 as tags: which global-load sectors of one SM hit its L1, from the loads' addresses.

The replay needs, per global instruction, the fraction of its sectors served by L1 (`Trace.hit_l1`). Instead
of a footprint estimate, this module runs the traced blocks' loads through a model of the L1 of each SM
that runs them and counts the hits per instruction:

* one L1 per SM, shared by the blocks resident on it (the traced blocks are the busiest SM's queue, or a
  small grid's blocks, one per SM), taken in rounds of `blocks_per_sm` (a round's blocks run together, the
  next round's after them, the cache kept warm between rounds);
* geometry as the read-only path's (`jaxsimt.units.rocache`: the unified L1 left by the shared-memory
  carve-out, `arch.ro_cache_ways`-way set associative, LRU, `arch.line_size` lines of
  `arch.sector_size` sectors), with a hashed set index (`set_index`);
* a warp's load looks up each distinct line its active lanes touch, in the order of the first lane touching
  it; a lookup hits the sectors its line holds and fills the others; within one step of the functional run
  each warp's loads come in program order before the next warp's (`Collector`);
* only loads allocate (L1 is write-through: a store's sectors all go to L2, and the model gives stores no
  hits); loads cached in L2 only (`cache` attribute L2_ONLY: PTX `.cg`, `.cv`, `L1::no_allocate`) miss
  and allocate nothing.

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
L2_ONLY = rocache.L2_ONLY  # the `cache` attribute of loads that neither hit nor fill L1


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
    """The set of a line number (int64 array), hashed so that rows of a matrix a power of two of lines apart
    spread over the sets. With `line % sets`, 128 rows 8 KiB apart fall into 8 of 512 sets and evict each
    other whatever the capacity: polybench gemm's row loads would never hit, where the H200 hits 89% of
    that kernel's sectors (jaxsimt/data/h200/suites_cache/). The hardware's hash is not known; any mixing of
    the upper bits gives that spread."""
    mixed = line.astype(jnp.uint64) * jnp.uint64(_MIX)
    return ((mixed >> jnp.uint64(32)) % jnp.uint64(sets)).astype(jnp.int32)


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


@functools.partial(jax.jit, static_argnums=(0, 2))
def _simulate(cs: rocache.CacheShape, lk: tuple, n_pcs: int):
    S, A = cs.sets, cs.ways

    def one_sm(line, bits, pc, allocate, go):
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
            s_put = jnp.where(on & alloc, s, S)  # out of range: the update is dropped
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

    hits, misses = jax.vmap(one_sm)(*lk)
    return hits.sum(axis=0), misses.sum(axis=0)


def simulate(cs: rocache.CacheShape, lk: "Lookups | list[Lookups]", n_pcs: int) -> tuple[np.ndarray, np.ndarray]:
    """Run each SM's lookups (one `Lookups`, or a list: one per SM) through an L1 of its own, cold at the
    start. Returns (sector hits [n_pcs], sector misses [n_pcs]) int64 per instruction, summed over the SMs.
    Compiled once per cache shape, instruction count and power-of-two numbers of SMs and lookups."""
    sms = [lk] if isinstance(lk, Lookups) else [x for x in lk if len(x.line)]
    if not sms:
        return np.zeros(n_pcs, np.int64), np.zeros(n_pcs, np.int64)
    N, B = _pow2(max(len(x.line) for x in sms)), _pow2(len(sms))

    def stack(field, dt):
        out = np.zeros((B, N), dt)
        for i, x in enumerate(sms):
            out[i, :len(x.line)] = getattr(x, field)
        return out

    go = np.arange(N)[None, :] < np.asarray([len(x.line) for x in sms] + [0] * (B - len(sms)))[:, None]
    with jax.enable_x64(True):  # line numbers and counts are 64-bit
        hits, misses = _simulate(cs, (stack("line", np.int64), stack("bits", np.uint32), stack("pc", np.int32),
                                      stack("allocate", bool), go), n_pcs)
    return np.asarray(hits), np.asarray(misses)


# lookups simulated per round of resident blocks: a loop's hit rate settles long before (the replay itself
# looks at a window of each SM's first instructions), and the stream of a long kernel would take minutes
MAX_LOOKUPS_PER_ROUND = 1 << 20


class Collector:
    """A sink for `jaxsimt.run.addresses.replay` that keeps the global loads of `pcs` ({pc: allocates}) as
    L1 lookups, per SM (`sm_of_block` [wave blocks]: the SM each block of the replayed wave runs on; None:
    one SM), ordered as that SM would see them: its blocks in rounds of `blocks_per_sm` (in wave order), one
    round after the other; within a round step by step (a run of accesses with rising pcs is one step of the
    machine: one basic block), and within a step warp by warp, each warp's loads in program order (a warp
    issues a block's independent loads back to back before the next warp's, as a greedy scheduler does). At
    most MAX_LOOKUPS_PER_ROUND lookups of each round, its first. `lookups()` returns them, one `Lookups` per
    SM."""

    def __init__(self, cs: rocache.CacheShape, pcs: dict, warps_per_block: int, blocks_per_sm: int,
                 sm_of_block=None):
        self.cs, self.pcs, self.wpb, self.R = cs, pcs, warps_per_block, max(int(blocks_per_sm), 1)
        self.sm = None if sm_of_block is None else np.asarray(sm_of_block, np.int64)
        if self.sm is not None:  # each block's rank among the blocks of its SM
            rank = np.zeros(len(self.sm), np.int64)
            for s in np.unique(self.sm):
                rank[self.sm == s] = np.arange(np.sum(self.sm == s))
            self.rank = rank
        self.parts: list = []
        self.step, self.last_pc, self.kept = 0, -1, {}

    def __call__(self, pc, space, addr, ok, nbytes):
        if space != "global" or pc not in self.pcs:
            return
        if pc <= self.last_pc:
            self.step += 1
        self.last_pc = pc
        line, bits, warp = warp_lookups(self.cs, addr, ok, nbytes)
        block = warp // self.wpb
        sm = np.zeros(len(block), np.int64) if self.sm is None else self.sm[block]
        rnd = block // self.R if self.sm is None else self.rank[block] // self.R
        key = sm * (1 << 32) + rnd  # (SM, round)
        keep = np.ones(len(line), bool)
        for k in np.unique(key):  # each round's first lookups only
            mine = key == k
            room = MAX_LOOKUPS_PER_ROUND - self.kept.get(int(k), 0)
            keep &= ~mine | (np.cumsum(mine) <= room)
            self.kept[int(k)] = self.kept.get(int(k), 0) + int(min(mine.sum(), max(room, 0)))
        if keep.any():
            n = int(keep.sum())
            self.parts.append((sm[keep], rnd[keep], np.full(n, self.step, np.int64), warp[keep], line[keep],
                               bits[keep], np.full(n, pc, np.int32), np.full(n, self.pcs[pc], bool)))

    def lookups(self) -> list:
        """[Lookups] of each SM that looked anything up, in SM order."""
        if not self.parts:
            return []
        sm, rnd, step, warp, line, bits, pc, alloc = (np.concatenate(x) for x in zip(*self.parts))
        order = np.lexsort((warp, step, rnd, sm))  # stable: a warp's loads of a step stay in program order
        sm, line, bits, pc, alloc = sm[order], line[order], bits[order], pc[order], alloc[order]
        cuts = np.flatnonzero(np.diff(sm)) + 1
        return [Lookups(*x) for x in zip(*(np.split(a, cuts) for a in (line, bits, pc, alloc)))]


def first_requests(lk: "Lookups | list[Lookups]", n_pcs: int) -> np.ndarray:
    """[n_pcs] int64: per instruction, the sectors its lookups ask for that their SM had never asked for before
    (each `Lookups` one SM's stream, in order): the SM's first requests, which go on to L2 whatever L1 holds
    later. The rest of a load's misses are sectors the SM held and lost."""
    out = np.zeros(n_pcs, np.int64)
    for x in ([lk] if isinstance(lk, Lookups) else lk):
        if not len(x.line):
            continue
        k = np.arange(32, dtype=np.uint32)
        want = ((x.bits[:, None] >> k[None, :]) & 1).astype(bool)  # [N, 32] sectors of each lookup
        n, j = np.nonzero(want)  # lookup-major: the SM's order
        sector = x.line[n] * 32 + j
        _, first = np.unique(sector, return_index=True)
        np.add.at(out, x.pc[n[first]], 1)
    return out


def model(cs: rocache.CacheShape, lk: "Lookups | list[Lookups]", n_pcs: int) -> tuple:
    """`simulate`'s (sector hits, sector misses) and `first_requests`, each [n_pcs] int64: what the timing trace
    takes from the L1 model (`hit_fractions`, `first_share`)."""
    return (*simulate(cs, lk, n_pcs), first_requests(lk, n_pcs))


def first_share(first: np.ndarray, misses: np.ndarray) -> np.ndarray:
    """[NI] float32: the part of each instruction's missing sectors that its SM asked for the first time (1
    where none missed: a load the model saw no miss of asks L2 only for what it never had)."""
    return np.where(misses > 0, first / np.maximum(misses, 1), 1.0).astype(np.float32)


def hit_fractions(hits: np.ndarray, misses: np.ndarray) -> np.ndarray:
    """[NI] float32: the fraction of each instruction's looked-up sectors that hit (0 where none)."""
    total = hits + misses
    return np.where(total > 0, hits / np.maximum(total, 1), 0.0).astype(np.float32)
