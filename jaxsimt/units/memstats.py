"""Memory counters for a whole wave of warps at once: the coalescer and bank model applied to every warp
that executes a memory instruction in one step.

`jaxsimt.units.coalescing` and `jaxsimt.units.banks` define the counts per warp (exactly, for any pattern). Running
them per warp (vmap) costs a sort per warp; most warps, though, access addresses that do not decrease
from lane to lane (unit strides, broadcasts, tiles), and for those a distinct count is a neighbour
comparison, whatever the distance between lanes. Here the same counts are computed for the whole wave
with that shortcut, taken only when every warp's pattern qualifies (one `lax.cond`); else, for global
accesses, with a 64-bit set of the sectors where every warp's lie within a 64-sector span; else through
the exact per-warp models. All give identical numbers (tests/test_memstats.py).

Shapes: addr [W, L] int64 byte addresses (global) or byte offsets in the block's shared window
(shared); active [W, L] bool; results [W] int32.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxsimt.units import banks, coalescing
from jaxsimt.arch import Arch
from jaxsimt.units.intops import floordiv

def _span_bitmap(keys, active):
    """Per warp: keys relative to the smallest active key, and whether they all fit in 64.

    Returns (bitmap [W] uint64 of the relative keys present, fits [W] bool). Distinct keys = popcount.
    """
    big = jnp.asarray(jnp.iinfo(keys.dtype).max, keys.dtype)
    lo = jnp.min(jnp.where(active, keys, big), axis=1, keepdims=True)
    rel = jnp.where(active, keys - lo, 0)
    fits = jnp.all(rel < 64, axis=1)
    bits = jnp.where(active & (rel < 64), jnp.uint64(1) << rel.astype(jnp.uint64), jnp.uint64(0))
    return lax.reduce(bits, jnp.uint64(0), lax.bitwise_or, (1,)), fits


def _popcount(x):
    return lax.population_count(x).astype(jnp.int32)


SPAN = 64  # keys a 64-bit set holds


def _fields(*flags):
    """Per warp, the count of each [W, L] flag, as one int64 reduction over the lanes (reductions along the
    lane axis dominate these counters' cost): 6 bits a count (a warp has at most 32 lanes). [W] int64 each."""
    packed = sum(f.astype(jnp.int64) << (6 * i) for i, f in enumerate(flags))
    total = jnp.sum(packed, axis=1)
    return [(total >> (6 * i)) & 63 for i in range(len(flags))]


def _global_fast(keys, active, ratio: int):
    """Distinct keys (sectors) and distinct keys // ratio (lines) of each warp's active lanes, by two shortcuts
    that need no sort, and which warps they cover. [W, L] int32 keys >= 0 -> ([W] int32 x 3, covered [W] bool).

    - Runs: where the active lanes are one contiguous range and their keys never decrease (or never increase)
      from lane to lane (strides of any length, broadcasts, rows of a tile however far apart), equal keys are
      neighbours, so a key is new where it differs from the previous lane's.
    - Sets: where the active keys lie within SPAN keys around lane 0's line (permutations, repeats, mixed
      directions in a small window), a 64-bit set of them; its line-aligned start makes each line a group of
      `ratio` bits."""
    W, L = keys.shape
    prev_key = jnp.concatenate([keys[:, :1], keys[:, :-1]], axis=1)
    prev_on = jnp.concatenate([jnp.zeros((W, 1), bool), active[:, :-1]], axis=1)
    both = active & prev_on
    start = active & ~prev_on  # a range of active lanes begins
    new_key = start | (both & (keys != prev_key))
    new_line = start | (both & (floordiv(keys, ratio) != floordiv(prev_key, ratio)))
    ref = floordiv(keys[:, :1], ratio) * ratio - SPAN // 2
    rel = keys - ref
    inside = (rel >= 0) & (rel < SPAN)
    n_key, n_line, up, down, starts, outside = _fields(new_key, new_line, both & (keys < prev_key),
                                                       both & (keys > prev_key), start, active & ~inside)
    bits = jnp.where(active & inside, jnp.uint64(1) << jnp.where(inside, rel, 0).astype(jnp.uint64), jnp.uint64(0))
    key_set = lax.reduce(bits, jnp.uint64(0), lax.bitwise_or, (1,))
    line_set = key_set
    for k in range(1, ratio):  # each line's bits folded onto its first
        line_set = line_set | (key_set >> jnp.uint64(k))
    line_set = line_set & jnp.uint64(sum(1 << j for j in range(0, SPAN, ratio)))
    in_set = outside == 0
    runs = (starts <= 1) & ((up == 0) | (down == 0))
    sectors = jnp.where(in_set, _popcount(key_set), n_key.astype(jnp.int32))
    lines = jnp.where(in_set, _popcount(line_set), n_line.astype(jnp.int32))
    return (starts > 0).astype(jnp.int32), sectors, lines, in_set | runs


def by_sector(arch: Arch, nbytes: int) -> bool:
    """Whether a global access of `nbytes` per lane is counted from its lanes' sectors alone (one request a warp,
    each aligned lane within one sector): its counts then depend on neither its width nor its direction, and
    `global_counts` takes the shortcuts (else the exact per-warp model)."""
    ratio = arch.line_size // arch.sector_size
    return (arch.coalescing == "sectors" and coalescing.request_lanes(arch, nbytes) == arch.warp_size
            and nbytes <= arch.sector_size and arch.warp_size < 64 and SPAN % ratio == 0)


def by_word(arch: Arch, nbytes: int) -> bool:
    """Whether a shared access of `nbytes` per lane is counted from its lanes' bank words alone (one group of
    lanes a warp, each lane within one word, multicast banks): its counts then depend on neither its width
    nor its direction, and `shared_counts` takes the shortcut (else the exact per-warp model)."""
    return (arch.shared_multicast == "multicast" and nbytes <= arch.bank_width and arch.shared_banks == 32
            and banks.group_lanes(arch, nbytes) == arch.warp_size)


def global_counts(arch: Arch, addr, nbytes: int, active, op: str):
    """(requests, sectors, lines), each [W] int32, for one global instruction of every warp."""

    def exact(_):
        c = jax.vmap(lambda a, m: coalescing.coalesce(arch, a, nbytes, m, op))(addr, active)
        return c.requests, c.sectors, c.lines

    if not by_sector(arch, nbytes):
        return exact(None)
    return sector_counts(arch, floordiv(addr, arch.sector_size).astype(jnp.int32), active)  # int32: exact below 64 GiB


def sector_counts(arch: Arch, sec, active):
    """(requests, sectors, lines), each [W] int32, of one global instruction of every warp whose counts follow from
    its lanes' sectors alone (`by_sector`: accesses aligned to their size, at most a sector, so each touches one
    sector). sec [W, L] int32 sector indices. Where every warp's pattern has a shortcut the wave takes it, else
    the sorted sectors of every warp."""
    ratio = arch.line_size // arch.sector_size
    requests, sectors, lines, covered = _global_fast(sec, active, ratio)
    return lax.cond(jnp.all(covered), lambda _: (requests, sectors, lines),
                    lambda _: _global_sorted(sec, active, ratio), None)


def _global_sorted(keys, active, ratio: int):
    """(requests, distinct keys, distinct keys // ratio) of each warp's active lanes, for any pattern: the
    keys sorted along the lanes, where a distinct key is one that differs from its predecessor (and a
    distinct line likewise, since sorting keys sorts their lines). [W, L] int32 keys >= 0 -> [W] int32 x 3."""
    none = jnp.iinfo(jnp.int32).max  # sorts after every key; no access reaches that sector
    k = jnp.sort(jnp.where(active, keys, none), axis=1)
    prev = jnp.concatenate([jnp.full((k.shape[0], 1), -1, jnp.int32), k[:, :-1]], axis=1)
    on = k != none
    n_key, n_line = _fields(on & (k != prev), on & (floordiv(k, ratio) != floordiv(prev, ratio)))  # -1 // ratio is -1
    return jnp.any(active, axis=1).astype(jnp.int32), n_key.astype(jnp.int32), n_line.astype(jnp.int32)


def _bank_exact(arch: Arch, addr, nbytes: int, active):
    """(wavefronts, bank conflicts) [W] int32 of each warp by the exact per-warp bank model."""
    b = jax.vmap(lambda a, m: banks.bank_access(arch, a, nbytes, m))(addr, active)
    return b.wavefronts, b.conflicts


def shared_counts(arch: Arch, addr, nbytes: int, active):
    """(wavefronts, bank conflicts), each [W] int32, for one shared instruction of every warp."""
    if not by_word(arch, nbytes):
        return _bank_exact(arch, addr, nbytes, active)
    return word_counts(arch, floordiv(addr, arch.bank_width).astype(jnp.int32), nbytes, active)


def word_counts(arch: Arch, words, nbytes: int, active):
    """(wavefronts, bank conflicts), each [W] int32, of one shared instruction of every warp whose counts follow
    from its lanes' bank words alone (`by_word`: each lane within one word). words [W, L] int32 word indices
    in the block's shared window; nbytes: the access's width (the exact model's, where the shortcut does not
    cover every warp)."""
    nb = arch.shared_banks
    # Words within a 64-word span: word r and r + 32 (relative to the lowest) share a bank, nothing
    # else does, so the worst bank holds 2 distinct words exactly when both halves of the set overlap.
    word_map, fits = _span_bitmap(words, active)

    def fast(_):
        lo, hi = word_map & jnp.uint64(0xFFFFFFFF), word_map >> jnp.uint64(32)
        any_active = jnp.any(active, axis=1)
        wave = jnp.where(any_active, 1 + ((lo & hi) != 0).astype(jnp.int32), 0)
        distinct = _popcount(word_map)
        return wave, wave - floordiv(distinct + nb - 1, nb)

    # the exact model at each word's first byte: a lane within one word finds the same word there
    return lax.cond(jnp.all(fits), fast, lambda _: _bank_exact(arch, words * arch.bank_width, nbytes, active), None)
