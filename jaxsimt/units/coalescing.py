"""Global-memory coalescer: requests, sectors, lines and transactions of one warp instruction.

Pure, jit-able and vmap-able functions over one warp's byte addresses; every number comes from an `Arch`.
`coalesce(arch, addresses, size, active, op)` dispatches statically on `arch.coalescing`:

* ``"sectors"`` (Volta and later; H100/H200): what Nsight Compute counts as
  ``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum`` and
  ``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum``. The lanes are cut into request groups
  (`arch.global_request_lanes`, by access size); every group with an active lane is one request, and its
  sectors are the distinct `sector_size`-byte sectors touched by the bytes of its active lanes (an access
  straddling a sector boundary touches both). **Assumption to be settled by the H200 fixtures:** one
  request per warp instruction for every access size, 8- and 16-byte accesses included (Nsight Compute's
  guidance that a fully coalesced access has 4 sectors per request for 32-bit and 16 for 128-bit elements
  implies it). Should the hardware split 8/16-byte accesses per half/quarter-warp, only
  `global_request_lanes` changes. Loads and stores follow the same rule.
* ``"fermi_lines"`` (compute capability 2.x): loads are cached in L1 in `line_size`-byte lines; a warp
  request is split per half-warp for 8-byte and per quarter-warp for 16-byte accesses (CUDA programming
  guide, cc 2.x), and each request costs one transaction per distinct line. Stores are not cached in L1 and
  are written to L2 in `sector_size`-byte segments: one transaction per distinct segment of each request
  (an assumption; no Fermi hardware is at hand to check it).
* ``"g80_segments"`` (compute capability 1.x): the CUDA programming guide's cc 1.2/1.3 procedure, per
  half-warp: take the segment (32 bytes for 1-byte, 64 for 2-byte, 128 for 4/8/16-byte words) holding the
  lowest-numbered active lane's address, serve every active lane whose address lies in it, shrink a
  128-byte transaction to 64 and a 64-byte one to 32 bytes while only one half is used, repeat until every
  lane is served. Because segments are aligned, that is one transaction per distinct segment, sized by the
  span of bytes it serves. (Real cc 1.0/1.1 parts such as the G80 were stricter: any lane out of sequence
  cost one transaction per lane. The model uses the 1.2/1.3 rule throughout.)

Addresses: any integer dtype. JAX's default config has no 64-bit integers; pass int32/uint32 addresses
(e.g. offsets from a 256-byte aligned base, which keep sector and line alignment) or int64 under
``jax.enable_x64``. Distinctness is exact in the dtype given; uint32 addresses wrap at 4 GiB.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsimt.arch import Arch, get_arch, lanes_per_group
from jaxsimt.units.intops import floordiv, take_along

ACCESS_SIZES = (1, 2, 4, 8, 16)

METRIC_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"
METRIC_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"


class Coalescing(NamedTuple):
    """Cost of one warp's global-memory instruction (a batch under vmap adds leading axes)."""

    requests: jax.Array  # shape=(), int32: request groups with an active lane
    sectors: jax.Array  # shape=(), int32: distinct sectors per request, summed over requests
    lines: jax.Array  # shape=(), int32: distinct lines per request, summed over requests
    transactions: jax.Array  # shape=(), int32: memory transactions under the arch's rule
    transaction_bytes: jax.Array  # shape=(), int32: bytes those transactions move


def request_lanes(arch: Arch, size: int) -> int:
    """Lanes per global-memory request for a `size`-byte access on `arch` (static)."""
    return lanes_per_group(arch, arch.global_request_lanes, size, "global")


def count_distinct(keys: jax.Array, valid: jax.Array) -> jax.Array:
    """Number of distinct values among the valid keys (sort + adjacent difference).

    Invalid keys are replaced by a valid one, so they add no new value. (On XLA:CPU a sort of 64 keys is
    several times faster than a 64 x 64 comparison matrix.)
    keys: [..., N] any integer dtype; valid: [..., N] bool. Returns [...] int32 (0 where nothing is valid).
    """
    first_valid = take_along(keys, jnp.argmax(valid, axis=-1)[..., None], axis=-1)
    filled = jnp.sort(jnp.where(valid, keys, first_valid), axis=-1)
    changes = jnp.sum(filled[..., 1:] != filled[..., :-1], axis=-1)
    return jnp.where(jnp.any(valid, axis=-1), changes + 1, 0).astype(jnp.int32)


def _touched_sectors(addresses: jax.Array, size: int, sector: int) -> jax.Array:
    """Sectors holding the first and last byte of each lane's access: [L] -> [L, 2] (size <= sector)."""
    first = floordiv(addresses, sector)
    last = floordiv(addresses + jnp.asarray(size - 1, addresses.dtype), sector)
    return jnp.stack([first, last], axis=-1)


def _sectors_and_lines(addresses, size, active, arch: Arch, lanes):
    """Distinct sectors and lines touched by each request group, summed over groups: two int32 scalars.

    One sort serves both: sectors sorted ascending are also sorted by line (a line is a whole number of
    sectors), so distinct lines are the changes of sector // (line_size // sector_size).
    """
    keys = _touched_sectors(addresses, size, arch.sector_size).reshape(-1, lanes * 2)
    valid = jnp.repeat(active, 2).reshape(-1, lanes * 2)
    first_valid = take_along(keys, jnp.argmax(valid, axis=-1)[..., None], axis=-1)
    sectors = jnp.sort(jnp.where(valid, keys, first_valid), axis=-1)
    lines = floordiv(sectors, arch.line_size // arch.sector_size)
    any_active = jnp.any(valid, axis=-1)

    def distinct(sorted_keys):
        changes = jnp.sum(sorted_keys[..., 1:] != sorted_keys[..., :-1], axis=-1)
        return jnp.sum(jnp.where(any_active, changes + 1, 0)).astype(jnp.int32)

    return distinct(sectors), distinct(lines)


def _requests(active: jax.Array, lanes: int) -> jax.Array:
    """Request groups of `lanes` lanes with an active lane: [L] bool -> int32 scalar."""
    return jnp.sum(jnp.any(active.reshape(-1, lanes), axis=-1)).astype(jnp.int32)


def _g80_half_warp(addresses: jax.Array, size: int, active: jax.Array, segment: int):
    """Transactions and bytes of one half-warp under the cc 1.2/1.3 segment rule.

    addresses: [H] any integer dtype; active: [H] bool. Returns (transactions, bytes), int32 scalars.
    """
    seg_bytes = jnp.asarray(segment, addresses.dtype)
    seg = floordiv(addresses, segment)
    lo = (addresses - seg * seg_bytes).astype(jnp.int32)  # first byte within the segment
    hi = jnp.minimum(lo + (size - 1), segment - 1)  # last byte within the segment
    n = addresses.shape[0]
    same = (seg[:, None] == seg[None, :]) & active[None, :] & active[:, None]
    leader = active & ~jnp.any(same & (jnp.arange(n)[None, :] < jnp.arange(n)[:, None]), axis=1)
    span_lo = jnp.min(jnp.where(same, lo[None, :], segment), axis=1)
    span_hi = jnp.max(jnp.where(same, hi[None, :], -1), axis=1)
    # smallest aligned window (segment, segment/2, ..., 32 bytes) holding the served span
    size_bytes = jnp.full((n,), segment, jnp.int32)
    window = segment // 2
    while window >= 32:  # static loop over at most two halvings
        fits = floordiv(span_lo, window) == floordiv(span_hi, window)
        size_bytes = jnp.where(fits, window, size_bytes)
        window //= 2
    transactions = jnp.sum(leader).astype(jnp.int32)
    total = jnp.sum(jnp.where(leader, size_bytes, 0)).astype(jnp.int32)
    return transactions, total


def _g80_segments(arch: Arch, addresses, size, active, lanes):
    segment = dict(arch.g80_segment_bytes)[size]
    t, b = jax.vmap(lambda a, m: _g80_half_warp(a, size, m, segment))(
        addresses.reshape(-1, lanes), active.reshape(-1, lanes)
    )
    return jnp.sum(t).astype(jnp.int32), jnp.sum(b).astype(jnp.int32)


def coalesce(
    arch: "Arch | str", addresses: jax.Array, size: int, active: jax.Array, op: str = "ld"
) -> Coalescing:
    """Requests, sectors, lines and transactions of one warp's global-memory access.

    arch: static `Arch` (or its name). addresses: [warp_size] byte addresses, any integer dtype.
    size: static access size in bytes, one of 1, 2, 4, 8, 16 (aligned or not). active: [warp_size] bool.
    op: static, "ld" or "st" (only the Fermi rule tells them apart). Inactive lanes never count; an
    instruction with no active lane costs nothing. Returns a `Coalescing` of int32 scalars; jit-able
    (arch, size, op static) and vmap-able over a batch of (addresses, active).
    """
    arch = get_arch(arch)
    if op not in ("ld", "st"):
        raise ValueError(f"op must be 'ld' or 'st', got {op!r}")
    lanes = request_lanes(arch, size)
    addresses = jnp.asarray(addresses)
    active = jnp.asarray(active, bool)
    requests = _requests(active, lanes)
    sectors, lines = _sectors_and_lines(addresses, size, active, arch, lanes)

    if arch.coalescing == "sectors":
        transactions, granule = sectors, arch.sector_size
        total = transactions * granule
    elif arch.coalescing == "fermi_lines":
        if op == "ld":
            transactions, granule = lines, arch.line_size
        else:
            transactions, granule = sectors, arch.sector_size
        total = transactions * granule
    elif arch.coalescing == "g80_segments":
        transactions, total = _g80_segments(arch, addresses, size, active, lanes)
    else:
        raise ValueError(f"unknown coalescing rule {arch.coalescing!r}")
    return Coalescing(
        requests=requests,
        sectors=sectors,
        lines=lines,
        transactions=transactions,
        transaction_bytes=total.astype(jnp.int32),
    )


def counters(result: Coalescing, op: str = "ld") -> dict[str, jax.Array]:
    """Nsight Compute names for a `Coalescing` (op: "ld" or "st"). Values keep their shapes."""
    if op not in ("ld", "st"):
        raise ValueError(f"op must be 'ld' or 'st', got {op!r}")
    return {
        METRIC_REQUESTS.format(op=op): result.requests,
        METRIC_SECTORS.format(op=op): result.sectors,
    }
