"""The memory counters of a step: what each global, shared and constant access costs (requests, sectors,
lines, wavefronts, bank conflicts, bytes), added to the per-instruction counters.

Two ways to run them, with the same numbers:

- inline: each access is counted where it executes, fused with its block's code (the fastest steady state,
  but every memory instruction of a kernel compiles its own copy of the coalescer and bank model);
- as a stage after the step's block: an access leaves a record (its shape, pc, addresses and lanes), the
  block's records of one shape are counted together, and the counting code compiles once per access shape
  whatever the kernel's length (`Records`, `count_records`).

Shapes: W warps, L lanes, I batch items, NI instructions, K records of one shape.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxsimt.units import constcache, memstats, rocache
from jaxsimt.units.intops import floordiv
from jaxsimt.arch import Arch

# Per-instruction memory counters (columns of a machine's State.mem, [I, NI, N_MEM])
MEM_REQUESTS, MEM_SECTORS, MEM_LINES, MEM_WAVEFRONTS, MEM_CONFLICTS, MEM_BYTES = range(6)
# constant cache (requests, serialized accesses) and read-only/texture cache (sector hits, misses)
MEM_CONST_REQUESTS, MEM_CONST_ACCESSES, MEM_CACHE_HITS, MEM_CACHE_MISSES = range(6, 10)
N_MEM = 10
MEM_COLUMNS = ("requests", "sectors", "lines", "wavefronts", "bank_conflicts", "bytes", "const_requests",
               "const_accesses", "cache_hits", "cache_misses")


RO = "ro"  # the name in the Shape of a load's lookup in the read-only (texture) cache


class Shape(NamedTuple):
    """What decides how an access is counted (static): the direction the memory model counts ("ld", "st", or
    ANY_DIRECTION for the shapes loads and stores share: `counting_shape`),
    the memory ("gmem" or "smem"; RO: the lookup of a read-only load in its block's cache, one shape for
    every width, since the lookups' order decides the hits), the bytes per lane (0 for RO), and whether it
    goes through the constant cache."""

    direction: str
    name: str
    nbytes: int
    const: bool


ANY_DIRECTION = "ldst"  # the direction of a shape that loads and stores of several widths share (`counting_shape`)


def counting_shape(arch: Arch, shape: Shape) -> Shape:
    """The shape an access is counted under in the counter stage. Loads and stores whose counts come from their
    lanes' sectors (global) or bank words (shared) alone (`memstats.by_sector`, `by_word`) give the same counts
    whatever their direction and width, so they share one shape, (ANY_DIRECTION, memory, the smallest such
    width, not const): the stage then compiles that memory's model once per kernel instead of once per
    direction and width. Its records carry their own widths, for the bytes column. Any other access keeps
    its shape."""
    if shape.const or shape.name == RO:
        return shape
    fits = memstats.by_sector if shape.name == "gmem" else memstats.by_word
    if not fits(arch, shape.nbytes):
        return shape
    table = arch.global_request_lanes if shape.name == "gmem" else arch.shared_group_lanes
    return Shape(ANY_DIRECTION, shape.name, min(n for n, _ in table if fits(arch, n)), False)


def sized(shape: Shape) -> bool:
    """Whether records of `shape` carry each access's bytes per lane (`Records.nbytes`): the shapes that
    several widths share."""
    return shape.name == RO or shape.direction == ANY_DIRECTION


def keyed(arch: Arch, shape: Shape) -> bool:
    """Whether records of `shape` carry each lane's sector (global) or bank word (shared) as int32 rather than its
    byte address: the shapes whose counts depend on nothing else (`memstats.by_sector`, `by_word`). A step's
    records are written out by its block and read back by the counter stage, and the keys are half the bytes
    of the addresses."""
    if shape.const or shape.name == RO:
        return False
    fits = memstats.by_sector if shape.name == "gmem" else memstats.by_word
    return fits(arch, shape.nbytes)


def record_addr(arch: Arch, shape: Shape, addr):
    """What a record of `shape` holds for the byte addresses `addr` (any shape, int): their int32 keys where the
    shape is `keyed` (sector of a global byte address, bank word of a shared offset), else the int64 addresses."""
    if not keyed(arch, shape):
        return jnp.asarray(addr, jnp.int64)
    unit = arch.sector_size if shape.name == "gmem" else arch.bank_width
    # int32: exact below 64 GiB of global memory (sectors) and for any shared window (words)
    return floordiv(jnp.asarray(addr, jnp.int64), unit).astype(jnp.int32)


def counts(arch: Arch, shape: Shape, addr, ok, nbytes=None) -> tuple:
    """(columns, [rows]) of one access shape: the counter columns it feeds and, per column, the count of each
    warp [W] (addr [W, L] as `record_addr` holds it: int32 keys where the shape is `keyed`, else int64 byte
    addresses, or offsets in the block's shared window; ok [W, L] the lanes that access; nbytes [W] each warp's
    bytes per lane where the shape has no one width, else None)."""
    if shape.const:
        rows = list(constcache.const_counts(addr, ok))
        cols = [MEM_CONST_REQUESTS, MEM_CONST_ACCESSES]
    elif shape.name == "gmem":
        rows = list(memstats.sector_counts(arch, addr, ok) if keyed(arch, shape) else
                    memstats.global_counts(arch, addr, shape.nbytes, ok, shape.direction))
        cols = [MEM_REQUESTS, MEM_SECTORS, MEM_LINES]
    else:
        rows = list(memstats.word_counts(arch, addr, shape.nbytes, ok) if keyed(arch, shape) else
                    memstats.shared_counts(arch, addr, shape.nbytes, ok))
        cols = [MEM_WAVEFRONTS, MEM_CONFLICTS]
    width = shape.nbytes if nbytes is None else nbytes
    return cols + [MEM_BYTES], rows + [jnp.sum(ok, axis=-1) * width]


def tally(x, item, items: int):
    """[..., W] per-warp counts -> [..., I] int64 sums per batch item (`item` [W]: each warp's item)."""
    x = x.astype(jnp.int64)
    if items == 1:
        return jnp.sum(x, axis=-1, keepdims=True)
    moved = jnp.moveaxis(x, -1, 0)
    return jnp.moveaxis(jax.ops.segment_sum(moved, item, num_segments=items), 0, -1)


def count_inline(arch: Arch, mem, pc, shape: Shape, addr, ok, item):
    """mem [I, NI, N_MEM] with one access of every warp of the step counted at instruction pc: the counter
    stage's count of one record."""
    return count_records(arch, mem, shape, pack(arch, shape, [(pc, addr, ok, shape.nbytes)], 1, ok.shape), item)


def count_cached(mem, cache, cs, pc, addr, nbytes, ok, item, warps_per_block: int):
    """(mem, cache) after one read-only load of every warp of the step looked up in its block's cache
    (`rocache.access`; nbytes may be a traced value), its sector hits and misses counted at pc."""
    cache, hits, misses = rocache.access(cache, cs, addr, nbytes, ok, warps_per_block)
    block_item = item[::warps_per_block]  # [C] each block's batch item
    add = jnp.stack([tally(hits, block_item, mem.shape[0]), tally(misses, block_item, mem.shape[0])], axis=-1)
    return mem.at[:, pc, jnp.asarray([MEM_CACHE_HITS, MEM_CACHE_MISSES])].add(add), cache


OFF = -(2 ** 31)  # a keyed record's key of a lane that does not access (a key is at least -2^31 / 32 + ...)


class Records(NamedTuple):
    """A step's accesses of one shape, K slots: pcs [K] int32, addr [K, W, L] (int32 keys where the shape is
    `keyed`, OFF where the lane does not access; else int64 byte addresses: `record_addr`), ok [K, W, L] bool
    the lanes that access where the shape is not keyed, else None (`lanes`; a slot that no access filled has no
    lane); nbytes [K] int32 bytes per lane where the shape has no one width (RO, and shapes several widths
    share), else None. Keyed records carry their lanes in their keys: a step's records leave its block's
    branch, and one array is half the writes of two."""

    pcs: jnp.ndarray
    addr: jnp.ndarray
    ok: jnp.ndarray
    nbytes: Optional[jnp.ndarray] = None


def lanes(rec: Records):
    """[K, W, L] bool: the lanes of each record that access."""
    return rec.addr != OFF if rec.ok is None else rec.ok


def fill(arch: Arch, shape: Shape, field: int):
    """The value of `Records` field number `field` (pcs, addr, ok, nbytes) in a slot that no access filled."""
    return OFF if field == 1 and keyed(arch, shape) else 0


def pack(arch: Arch, shape: Shape, found: list, capacity: int, lanes_shape: tuple) -> Records:
    """Records of `shape` from the (pc, addr, ok, nbytes) a block left, in order (addr: byte addresses, held as
    `record_addr` says), padded to `capacity` slots (with their sizes where the shape is `sized`)."""
    pad = capacity - len(found)
    if pad < 0:
        raise AssertionError(f"{len(found)} accesses of one shape, more than the {capacity} counted")
    pcs = [jnp.asarray(p, jnp.int32) for p, _, _, _ in found] + [jnp.int32(0)] * pad
    nbytes = [jnp.asarray(n, jnp.int32) for _, _, _, n in found] + [jnp.int32(0)] * pad
    nb = jnp.stack(nbytes) if sized(shape) else None
    if keyed(arch, shape):
        addr = [jnp.where(o, record_addr(arch, shape, a), OFF) for _, a, o, _ in found]
        addr = [jnp.broadcast_to(a, lanes_shape) for a in addr] + [jnp.full(lanes_shape, OFF, jnp.int32)] * pad
        return Records(jnp.stack(pcs), jnp.stack(addr), None, nb)
    addr = [jnp.broadcast_to(record_addr(arch, shape, a), lanes_shape) for _, a, _, _ in found]
    ok = [jnp.broadcast_to(o, lanes_shape) for _, _, o, _ in found]
    addr += [jnp.zeros(lanes_shape, jnp.int64)] * pad
    ok += [jnp.zeros(lanes_shape, bool)] * pad
    return Records(jnp.stack(pcs), jnp.stack(addr), jnp.stack(ok), nb)


def count_cache_records(mem, cache, cs, rec: Records, item, warps_per_block: int):
    """(mem, cache) after the step's read-only loads (`Records` of the RO shape) looked up one after the
    other, in the order they ran, each counted at its pc (slots without lanes skipped)."""

    def one(carry, k):
        def look(c):
            return count_cached(*c, cs, rec.pcs[k], rec.addr[k], rec.nbytes[k], rec.ok[k], item, warps_per_block)

        return jax.lax.cond(jnp.any(rec.ok[k]), look, lambda c: c, carry), None

    (mem, cache), _ = jax.lax.scan(one, (mem, cache), jnp.arange(rec.ok.shape[0]))
    return mem, cache


def count_records(arch: Arch, mem, shape: Shape, rec: Records, item):
    """mem [I, NI, N_MEM] with every record of one shape counted at its pc: the K slots' warps counted as
    one wave of K x W warps (slots without lanes count nothing)."""
    K, W, L = rec.addr.shape
    nbytes = None if rec.nbytes is None else jnp.repeat(rec.nbytes, W)
    cols, rows = counts(arch, shape, rec.addr.reshape(K * W, L), lanes(rec).reshape(K * W, L), nbytes)
    # one reduction for every column at once (each is a loop XLA compiles on its own)
    add = jnp.moveaxis(tally(jnp.stack(rows).reshape(len(rows), K, W), item, mem.shape[0]), 0, -1)  # [K, I, C]
    return mem.at[:, rec.pcs[:, None], jnp.asarray(cols)[None, :]].add(jnp.moveaxis(add, 1, 0))


def concat(a, b):
    """Two `Records` of one shape as one (either may be None)."""
    if a is None or b is None:
        return a if b is None else b
    return Records(*(None if x is None else jnp.concatenate([x, y]) for x, y in zip(a, b)))
