"""Shared-memory bank model: wavefronts and bank conflicts of one warp instruction.

Pure, jit-able and vmap-able functions over one warp's byte addresses; every number comes from an `Arch`.

Model (per warp instruction, `size`-byte access per lane):

* Shared memory is `arch.shared_banks` banks of `arch.bank_width`-byte words; word `w` lives in bank
  `w % shared_banks`. A lane's `size`-byte access touches `max(1, size // bank_width)` consecutive words
  starting at `address // bank_width` (sub-word accesses touch one word; accesses are assumed naturally
  aligned, as the hardware requires: a misaligned address is taken at its word).
* The warp is cut into groups of consecutive lanes (`arch.shared_group_lanes`, by access size). Each group
  that has an active lane is served on its own: Fermi and later serve 1/2/4-byte accesses per warp, 8-byte
  accesses per half-warp and 16-byte accesses per quarter-warp, so a conflict-free 64-bit access costs 2
  wavefronts and a 128-bit one 4; G80 serves every access per half-warp.
* Within a group, `arch.shared_multicast` says how shared words are served:
  - ``"multicast"`` (Fermi and later): all lanes reading one word are served by one read of it, any number
    of words may be multicast at once; the group costs max over banks of the distinct words requested from
    that bank (a group with an active lane costs at least 1).
  - ``"one_broadcast_word"`` (compute capability 1.x, G80): each step serves one *broadcast word* (every
    remaining request inside it) plus one request for each other bank; requests to a non-broadcast word
    are served one per step. The broadcast word is the word of the lowest-numbered remaining request, the
    request served in another bank is its lowest-numbered remaining one. This reproduces the numbers of
    seed 003 on G80: ``char`` arrays indexed by ``threadIdx.x`` conflict 4-way, ``short`` 2-way, one word
    read by all lanes is 1 step, 8-byte accesses 2 steps (two 32-bit requests per lane).

Counters (per instruction; sums over instructions give the Nsight Compute metrics):

* ``wavefronts`` -> ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum``.
* ``conflicts`` -> ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum``, defined here as
  wavefronts minus the conflict-free minimum: per served group ``ceil(distinct words / shared_banks)``
  (that is 1 per group for every access of 16 bytes or less per lane), so it is never negative.
* ``degree``: the "N-way" of the worst group: its wavefronts. Under multicast this is the largest number of
  distinct words requested from one bank by one group.

An access with no active lane costs 0 wavefronts here: to be measured on the hardware (the contract says
the model counts whatever the hardware counts).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsimt.arch import Arch, get_arch, lanes_per_group
from jaxsimt.units.intops import floordiv, mod

ACCESS_SIZES = (1, 2, 4, 8, 16)

METRIC_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"
METRIC_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"


class BankAccess(NamedTuple):
    """Cost of one warp's shared-memory instruction (a batch under vmap adds leading axes)."""

    wavefronts: jax.Array  # shape=(), dtype=int32: cycles of the shared-memory data pipe
    conflicts: jax.Array  # shape=(), dtype=int32: wavefronts minus the conflict-free minimum
    degree: jax.Array  # shape=(), dtype=int32: wavefronts of the worst lane group (N-way conflict)


def group_lanes(arch: Arch, size: int) -> int:
    """Lanes served together for a `size`-byte shared access on `arch` (static)."""
    return lanes_per_group(arch, arch.shared_group_lanes, size, "shared")


def lane_words(arch: Arch, addresses: jax.Array, size: int) -> jax.Array:
    """Bank words touched by each lane.

    addresses: [L] byte addresses (any integer dtype). Returns [L, k] words of the same dtype, where
    k = max(1, size // bank_width).
    """
    k = max(1, size // arch.bank_width)
    addresses = jnp.asarray(addresses)
    word0 = floordiv(addresses, arch.bank_width)
    return word0[:, None] + jnp.arange(k, dtype=addresses.dtype)[None, :]


def _earlier_same(keys: jax.Array, valid: jax.Array) -> jax.Array:
    """[E] bool: entry e has an earlier valid entry with the same key (E x E comparison matrix)."""
    n = keys.shape[0]
    same = (keys[:, None] == keys[None, :]) & valid[None, :]
    earlier = jnp.arange(n)[None, :] < jnp.arange(n)[:, None]
    return jnp.any(same & earlier, axis=1)


def _multicast_group(words: jax.Array, banks: jax.Array, valid: jax.Array, num_banks: int) -> jax.Array:
    """Wavefronts of one group when any number of words may be multicast.

    words, banks, valid: [E]. Returns int32 scalar: max over banks of distinct words in that bank.
    """
    first = valid & ~_earlier_same(words, valid)
    per_bank = jnp.sum(first[:, None] & (banks[:, None] == jnp.arange(num_banks)[None, :]), axis=0)
    return jnp.max(per_bank).astype(jnp.int32)


def _broadcast_word_group(words: jax.Array, banks: jax.Array, valid: jax.Array) -> jax.Array:
    """Steps of one group under the compute-capability-1.x rule (one broadcast word per step).

    words, banks, valid: [E] requests in lane order. Returns int32 scalar (0 when nothing is valid).
    """

    def cond(carry):
        remaining, _ = carry  # remaining: [E] bool, requests not yet served
        return jnp.any(remaining)

    def step(carry):
        remaining, steps = carry  # steps: shape=(), int32
        leader = jnp.argmax(remaining)
        broadcast_word, broadcast_bank = words[leader], banks[leader]
        first_in_bank = remaining & ~_earlier_same(banks, remaining)
        served = remaining & ((words == broadcast_word) | (first_in_bank & (banks != broadcast_bank)))
        return remaining & ~served, steps + 1

    _, steps = lax.while_loop(cond, step, (valid, jnp.int32(0)))
    return steps


def _same_word_set(w0, v0, w1, v1) -> jax.Array:
    """Both groups have an active lane and request exactly the same set of words. [E] each -> bool."""
    in1 = jnp.any((w0[:, None] == w1[None, :]) & v1[None, :], axis=1)
    in0 = jnp.any((w1[:, None] == w0[None, :]) & v0[None, :], axis=1)
    return jnp.any(v0) & jnp.any(v1) & jnp.all(in1 | ~v0) & jnp.all(in0 | ~v1)


def _min_wavefronts(words: jax.Array, valid: jax.Array, num_banks: int) -> jax.Array:
    """Conflict-free minimum of one group: ceil(distinct words / banks). [E] -> int32 scalar."""
    distinct = jnp.sum(valid & ~_earlier_same(words, valid)).astype(jnp.int32)
    return floordiv(distinct + num_banks - 1, num_banks)


def bank_access(arch: "Arch | str", addresses: jax.Array, size: int, active: jax.Array) -> BankAccess:
    """Wavefronts, conflicts and conflict degree of one warp's shared-memory access.

    arch: static `Arch` (or its name). addresses: [warp_size] byte addresses in shared memory, any integer
    dtype. size: static access size in bytes, one of 1, 2, 4, 8, 16. active: [warp_size] bool.
    Loads and stores follow the same rule (writes to one word by several lanes are served as one).
    An access with no active lane returns 0 wavefronts: to be measured on the hardware.
    Returns a `BankAccess` of int32 scalars. jit-able (arch and size static) and vmap-able over a batch of
    (addresses, active).
    """
    arch = get_arch(arch)
    lanes = group_lanes(arch, size)
    words = lane_words(arch, addresses, size)  # [L, k]
    k = words.shape[1]
    valid = jnp.broadcast_to(jnp.asarray(active, bool)[:, None], words.shape)
    banks = mod(words, arch.shared_banks).astype(jnp.int32)
    n_groups = arch.warp_size // lanes
    g_words = words.reshape(n_groups, lanes * k)
    g_banks = banks.reshape(n_groups, lanes * k)
    g_valid = valid.reshape(n_groups, lanes * k)

    if arch.shared_multicast == "multicast":
        per_group = jax.vmap(lambda w, b, v: _multicast_group(w, b, v, arch.shared_banks))
    elif arch.shared_multicast == "one_broadcast_word":
        per_group = jax.vmap(_broadcast_word_group)
    else:
        raise ValueError(f"unknown shared_multicast rule {arch.shared_multicast!r}")
    waves = per_group(g_words, g_banks, g_valid)  # [n_groups]
    minimum = jax.vmap(lambda w, v: _min_wavefronts(w, v, arch.shared_banks))(g_words, g_valid)
    if size in arch.shared_pair_identical_groups and n_groups % 2 == 0:
        # the second group of a pair asking for exactly the first one's words rides along for free
        same = jax.vmap(_same_word_set)(g_words[0::2], g_valid[0::2], g_words[1::2], g_valid[1::2])
        free = jnp.zeros((n_groups,), bool).at[1::2].set(same)
        waves = jnp.where(free, 0, waves)
        minimum = jnp.where(free, 0, minimum)
    wavefronts = jnp.sum(waves).astype(jnp.int32)
    return BankAccess(
        wavefronts=wavefronts,
        conflicts=(wavefronts - jnp.sum(minimum)).astype(jnp.int32),
        degree=jnp.max(waves).astype(jnp.int32),
    )


def counters(result: BankAccess, op: str = "ld") -> dict[str, jax.Array]:
    """Nsight Compute names for a `BankAccess` (op: "ld" or "st"). Values keep their shapes."""
    if op not in ("ld", "st"):
        raise ValueError(f"op must be 'ld' or 'st', got {op!r}")
    return {
        METRIC_WAVEFRONTS.format(op=op): result.wavefronts,
        METRIC_CONFLICTS.format(op=op): result.conflicts,
    }
