"""Memory counters for a whole wave of warps at once: the coalescer and bank model applied to every warp
that executes a memory instruction in one step.

`jaxsimt.coalescing` and `jaxsimt.banks` define the counts per warp (exactly, for any pattern). Running
them per warp (vmap) costs a sort per warp; most warps, though, access addresses that do not decrease
from lane to lane (unit strides, broadcasts, tiles), and for those a distinct count is a neighbour
comparison. Here the same counts are computed for the whole wave with that shortcut, taken only when
every warp's pattern qualifies (one `lax.cond`), else through the exact per-warp models; both give
identical numbers (tested).

Shapes: addr [W, L] int64 byte addresses (global) or byte offsets in the block's shared window
(shared); active [W, L] bool; results [W] int32.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxsimt import banks, coalescing
from jaxsimt.arch import Arch

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


def global_counts(arch: Arch, addr, nbytes: int, active, op: str):
    """(requests, sectors, lines), each [W] int32, for one global instruction of every warp."""

    def exact(_):
        c = jax.vmap(lambda a, m: coalescing.coalesce(arch, a, nbytes, m, op))(addr, active)
        return c.requests, c.sectors, c.lines

    fast_ok = (arch.coalescing == "sectors" and coalescing.request_lanes(arch, nbytes) == arch.warp_size
               and nbytes <= arch.sector_size)
    if not fast_ok:
        return exact(None)
    # Accesses are aligned to their size (<= a sector), so each touches exactly one sector. When every
    # warp's sectors lie within a 64-sector span, a 64-bit set of them counts the distinct ones.
    sec = (addr // arch.sector_size).astype(jnp.int32)  # int32: cheaper, and exact below 64 GiB
    sec_map, fits = _span_bitmap(sec, active)
    line_map, _ = _span_bitmap(sec // (arch.line_size // arch.sector_size), active)

    def fast(_):
        req = jnp.any(active, axis=1).astype(jnp.int32)
        return req, _popcount(sec_map), _popcount(line_map)

    return lax.cond(jnp.all(fits), fast, exact, None)


def shared_counts(arch: Arch, addr, nbytes: int, active):
    """(wavefronts, bank conflicts), each [W] int32, for one shared instruction of every warp."""

    def exact(_):
        b = jax.vmap(lambda a, m: banks.bank_access(arch, a, nbytes, m))(addr, active)
        return b.wavefronts, b.conflicts

    nb = arch.shared_banks
    fast_ok = (arch.shared_multicast == "multicast" and nbytes <= arch.bank_width and nb == 32
               and banks.group_lanes(arch, nbytes) == arch.warp_size)
    if not fast_ok:
        return exact(None)
    # Words within a 64-word span: word r and r + 32 (relative to the lowest) share a bank, nothing
    # else does, so the worst bank holds 2 distinct words exactly when both halves of the set overlap.
    word_map, fits = _span_bitmap((addr // arch.bank_width).astype(jnp.int32), active)

    def fast(_):
        lo, hi = word_map & jnp.uint64(0xFFFFFFFF), word_map >> jnp.uint64(32)
        any_active = jnp.any(active, axis=1)
        wave = jnp.where(any_active, 1 + ((lo & hi) != 0).astype(jnp.int32), 0)
        distinct = _popcount(word_map)
        return wave, wave - (distinct + nb - 1) // nb

    return lax.cond(jnp.all(fits), fast, exact, None)
