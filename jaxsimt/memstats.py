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

_NEG = jnp.iinfo(jnp.int32).min


def _first_occurrences_sorted(keys, active):
    """For keys non-decreasing over active lanes: (is first active lane of its key [W, L], monotonic [W])."""
    big_neg = jnp.asarray(jnp.iinfo(keys.dtype).min, keys.dtype)
    k = jnp.where(active, keys, big_neg)
    run_max = lax.cummax(k, axis=1)
    prev = jnp.concatenate([jnp.full((k.shape[0], 1), big_neg, keys.dtype), run_max[:, :-1]], axis=1)
    monotonic = jnp.all(~active | (keys >= prev), axis=1)
    first = active & (keys != prev)
    return first, monotonic


def global_counts(arch: Arch, addr, nbytes: int, active, op: str):
    """(requests, sectors, lines), each [W] int32, for one global instruction of every warp."""

    def exact(_):
        c = jax.vmap(lambda a, m: coalescing.coalesce(arch, a, nbytes, m, op))(addr, active)
        return c.requests, c.sectors, c.lines

    fast_ok = (arch.coalescing == "sectors" and coalescing.request_lanes(arch, nbytes) == arch.warp_size
               and nbytes <= arch.sector_size)
    if not fast_ok:
        return exact(None)
    # Accesses are aligned to their size (<= a sector), so each touches exactly one sector.
    sec = addr // arch.sector_size
    first_s, mono = _first_occurrences_sorted(sec, active)
    line = addr // arch.line_size
    first_l, _ = _first_occurrences_sorted(line, active)

    def fast(_):
        req = jnp.any(active, axis=1).astype(jnp.int32)
        return req, jnp.sum(first_s, axis=1, dtype=jnp.int32), jnp.sum(first_l, axis=1, dtype=jnp.int32)

    return lax.cond(jnp.all(mono), fast, exact, None)


def shared_counts(arch: Arch, addr, nbytes: int, active):
    """(wavefronts, bank conflicts), each [W] int32, for one shared instruction of every warp."""

    def exact(_):
        b = jax.vmap(lambda a, m: banks.bank_access(arch, a, nbytes, m))(addr, active)
        return b.wavefronts, b.conflicts

    fast_ok = (arch.shared_multicast == "multicast" and nbytes <= arch.bank_width
               and banks.group_lanes(arch, nbytes) == arch.warp_size)
    if not fast_ok:
        return exact(None)
    word = addr // arch.bank_width
    first, mono = _first_occurrences_sorted(word, active)

    def fast(_):
        W = addr.shape[0]
        nb = arch.shared_banks
        bank = (word % nb).astype(jnp.int32)
        per_bank = jnp.zeros((W * nb,), jnp.int32).at[
            (jnp.arange(W, dtype=jnp.int32)[:, None] * nb + bank).reshape(-1)].add(first.reshape(-1).astype(jnp.int32))
        wave = jnp.max(per_bank.reshape(W, nb), axis=1)
        distinct = jnp.sum(first, axis=1, dtype=jnp.int32)
        ideal = (distinct + nb - 1) // nb
        return wave, wave - ideal

    return lax.cond(jnp.all(mono), fast, exact, None)
