"""The constant cache: what one warp's load from constant memory (`__constant__`, PTX `ld.const`) costs.

Rule (seed 003: constant values are broadcast to all threads of a warp): the lanes of a warp that read
one address are served together by one access (a broadcast); distinct addresses are served one after
another. So a warp instruction with at least one active lane is one request costing as many accesses as
it has distinct addresses: 1 when every lane reads the same element, 32 when all lanes read different
ones. Hits and misses of the constant cache are not modelled (every access counts the same).

Shapes: addr [W, L] int64 byte addresses, active [W, L] bool; results [W] int32.
"""
from __future__ import annotations

import jax.numpy as jnp

METRIC_REQUESTS = "emulator__const_requests.sum"
METRIC_ACCESSES = "emulator__const_accesses.sum"


def distinct_per_warp(keys, active):
    """[W] int32: distinct values of `keys` [W, L] among the active lanes of each warp."""
    L = keys.shape[-1]
    same = (keys[..., :, None] == keys[..., None, :]) & active[..., None, :]
    earlier = jnp.arange(L)[None, :] < jnp.arange(L)[:, None]  # [lane, other]: other comes first
    first = active & ~jnp.any(same & earlier, axis=-1)
    return jnp.sum(first, axis=-1, dtype=jnp.int32)


def const_counts(addr, active):
    """(requests, accesses), each [W] int32, for one constant-memory load of every warp."""
    return jnp.any(active, axis=-1).astype(jnp.int32), distinct_per_warp(addr, active)
