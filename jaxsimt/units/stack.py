"""The per-warp reconvergence (divergence) stack of seed 000.

Each warp owns `depth` entries of (pc, reconvergence pc, active mask) and a stack pointer `sp` (number of
valid entries; the top entry, index sp-1, is what runs). PCs are basic-block indices; the kernel's exit is
the pseudo-block `exit_pc`. Masks are uint32 bitmasks over the warp's 32 lanes. All functions update the
warps selected by `sel` [W] and leave the others untouched; shapes are [W] or [W, depth].

The rules, as seed 000 and GPGPU-Sim's simt_stack implement them:
- initial entry: (entry block, exit, all valid lanes);
- uniform branch: the top entry's pc moves; nothing is pushed;
- divergent branch: the top entry becomes the reconvergence entry (pc := reconvergence pc), then
  (target, taken lanes) and (fall-through, not-taken lanes) are pushed, each with the branch's
  reconvergence pc, so the fall-through path (an if's body, when the branch jumps over it) runs first. A path that starts at the reconvergence pc itself is
  not pushed. When the top entry already reconverges at the same pc (a divergent loop exit, iteration
  after iteration) it is reused for the continuing path instead of growing the stack;
- after any pc update, while the top entry's pc equals its reconvergence pc — or none of its lanes is
  still alive — it pops (pops cascade).
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxsimt.units.intops import take_along


class Stack(NamedTuple):
    pc: jnp.ndarray  # [W, D] int32  block index of each entry
    rpc: jnp.ndarray  # [W, D] int32  reconvergence block of each entry
    mask: jnp.ndarray  # [W, D] uint32  active lanes of each entry
    sp: jnp.ndarray  # [W] int32  number of valid entries (0: warp finished)


def init(valid_mask, depth: int, entry_pc: int, exit_pc: int) -> Stack:
    """One entry per warp with a non-empty mask: (entry, exit, valid lanes)."""
    W = valid_mask.shape[0]
    pc = jnp.full((W, depth), exit_pc, jnp.int32).at[:, 0].set(entry_pc)
    rpc = jnp.full((W, depth), exit_pc, jnp.int32)
    mask = jnp.zeros((W, depth), jnp.uint32).at[:, 0].set(valid_mask)
    sp = (valid_mask != 0).astype(jnp.int32)
    return Stack(pc, rpc, mask, sp)


def _top_index(st: Stack):
    return jnp.maximum(st.sp - 1, 0)


def top(st: Stack):
    """(pc, rpc, mask) of each warp's top entry, [W] each (meaningless where sp == 0)."""
    t = _top_index(st)[:, None]
    take = lambda a: take_along(a, t, axis=1)[:, 0]  # noqa: E731
    return take(st.pc), take(st.rpc), take(st.mask)


def branch(st: Stack, sel, taken, not_taken, target, fallthrough, reconv):
    """Apply a conditional branch of the selected warps. taken/not_taken: [W] uint32 lane masks;
    target, fallthrough, reconv: block indices (scalars, possibly traced). A warp whose lanes all go one way
    moves its top entry there (a jump, a barrier or an exit is a branch that every lane takes).

    Every entry a warp changes is worked out per warp first, then written in one pass over each of pc, rpc
    and mask [W, D]: the top entry's new pc (the uniform target, or the reconvergence pc of a fresh
    divergence), then the two pushed paths, later writes winning.

    Returns (stack, divergent [W] bool, overflow [W] bool).
    """
    D = st.pc.shape[1]
    t = _top_index(st)
    _, top_rpc, _ = top(st)
    div = sel & (taken != 0) & (not_taken != 0)
    reuse = div & (top_rpc == reconv)
    fresh = div & ~reuse
    # A fresh divergence turns the top entry into the reconvergence entry; a divergent loop exit that already
    # reconverges there reuses it for the continuing path. Push (target, taken) then (fall-through, not
    # taken): the fall-through path (an if's body, when the branch jumps over it) is on top and runs first.
    # A path starting at reconv is not pushed.
    base = jnp.where(reuse, st.sp - 1, st.sp)
    push_t = jnp.asarray(target != reconv, jnp.int32)
    push_f = jnp.asarray(fallthrough != reconv, jnp.int32)
    full = lambda v, dt=jnp.int32: jnp.broadcast_to(jnp.asarray(v).astype(dt), sel.shape)  # noqa: E731
    top_pc = jnp.where(fresh, full(reconv), jnp.where(not_taken == 0, full(target), full(fallthrough)))
    writes = [  # (slot [W], on [W], pc, rpc or None, mask or None): None leaves the entry's field
        (t, (sel & ~div) | fresh, top_pc, None, None),
        (base, div & (push_t == 1), full(target), full(reconv), taken),
        (base + push_t, div & (push_f == 1), full(fallthrough), full(reconv), not_taken),
    ]
    slots = jnp.arange(D)[None, :]
    pc, rpc, mask = st.pc, st.rpc, st.mask
    for slot, on, p, r, m in writes:
        hit = (slots == slot[:, None]) & on[:, None]
        pc = jnp.where(hit, p[:, None], pc)
        if r is not None:
            rpc = jnp.where(hit, r[:, None], rpc)
            mask = jnp.where(hit, m.astype(mask.dtype)[:, None], mask)
    new_sp = jnp.where(div, base + push_t + push_f, st.sp)
    overflow = div & (new_sp > D)
    return Stack(pc, rpc, mask, jnp.minimum(new_sp, D)), div, overflow


def pop_reconverged(st: Stack, exited) -> Stack:
    """Pop, for every warp, top entries that reached their reconvergence pc or have no live lane.

    Pops cascade: the new top is the highest entry below the old one that needs no pop, so the stack pointer
    follows in one pass over [W, D] (a loop of pops would cost a host round trip per iteration on a GPU)."""
    D = st.pc.shape[1]
    stays = (st.pc != st.rpc) & ((st.mask & ~exited[:, None]) != 0)
    below_sp = jnp.arange(D, dtype=jnp.int32)[None, :] < st.sp[:, None]
    height = jnp.where(stays & below_sp, jnp.arange(1, D + 1, dtype=jnp.int32)[None, :], 0)
    return st._replace(sp=jnp.max(height, axis=1).astype(st.sp.dtype))
