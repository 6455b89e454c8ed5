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
from jax import lax


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
    take = lambda a: jnp.take_along_axis(a, t, axis=1)[:, 0]  # noqa: E731
    return take(st.pc), take(st.rpc), take(st.mask)


def _set_slot(a, slot, value, where):
    """a[w, slot[w]] = value[w] for warps where `where` holds."""
    D = a.shape[1]
    hit = (jnp.arange(D)[None, :] == slot[:, None]) & where[:, None]
    return jnp.where(hit, jnp.asarray(value).astype(a.dtype)[:, None], a)


def set_top_pc(st: Stack, sel, new_pc) -> Stack:
    new_pc = jnp.broadcast_to(jnp.asarray(new_pc, jnp.int32), sel.shape)
    return st._replace(pc=_set_slot(st.pc, _top_index(st), new_pc, sel))


def branch(st: Stack, sel, taken, not_taken, target, fallthrough, reconv):
    """Apply a conditional branch of the selected warps. taken/not_taken: [W] uint32 lane masks;
    target, fallthrough, reconv: block indices (scalars, possibly traced).

    Returns (stack, divergent [W] bool, overflow [W] bool).
    """
    D = st.pc.shape[1]
    div = sel & (taken != 0) & (not_taken != 0)
    uni_taken = sel & (not_taken == 0)
    uni_fall = sel & (taken == 0) & ~uni_taken
    st = set_top_pc(st, uni_taken, target)
    st = set_top_pc(st, uni_fall, fallthrough)

    _, top_rpc, _ = top(st)
    reuse = div & (top_rpc == reconv)
    fresh = div & ~reuse
    # A fresh divergence turns the top entry into the reconvergence entry.
    st = set_top_pc(st, fresh, reconv)
    base = jnp.where(reuse, st.sp - 1, st.sp)
    # Push (target, taken) then (fall-through, not taken): the fall-through path (an if's body, when
    # the branch jumps over it) is on top and runs first. A path starting at reconv is not pushed.
    push_t = jnp.asarray(target != reconv, jnp.int32)
    push_f = jnp.asarray(fallthrough != reconv, jnp.int32)
    full = lambda v: jnp.broadcast_to(jnp.asarray(v, jnp.int32), sel.shape)  # noqa: E731
    pc, rpc, mask = st.pc, st.rpc, st.mask
    for slot, p, m, on in ((base, target, taken, push_t), (base + push_t, fallthrough, not_taken, push_f)):
        w = div & (on == 1)
        pc = _set_slot(pc, slot, full(p), w)
        rpc = _set_slot(rpc, slot, full(reconv), w)
        mask = _set_slot(mask, slot, m, w)
    new_sp = jnp.where(div, base + push_t + push_f, st.sp)
    overflow = div & (new_sp > D)
    return Stack(pc, rpc, mask, jnp.minimum(new_sp, D)), div, overflow


def pop_reconverged(st: Stack, exited) -> Stack:
    """Pop, for every warp, top entries that reached their reconvergence pc or have no live lane."""

    def needs_pop(s):
        pc, rpc, mask = top(s)
        return (s.sp > 0) & ((pc == rpc) | ((mask & ~exited) == 0))

    def body(s):
        return s._replace(sp=s.sp - needs_pop(s).astype(jnp.int32))

    return lax.while_loop(lambda s: jnp.any(needs_pop(s)), body, st)
