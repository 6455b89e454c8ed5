"""The unified (generic) address space: generic loads, stores and atomics resolve to shared, local or
global memory at run time, and `cvta` converts addresses between a state space and the generic space.

Layout of the generic space (from the `Arch`; compute capability 1.x has none):

* the shared window [generic_shared_base, + generic_window_bytes): byte offset (address - base) in the
  shared memory of the executing thread's own block;
* the local window [generic_local_base, + generic_window_bytes): byte offset in the thread's own local
  memory;
* every other address is a global address (global and constant arrays keep their addresses: the global
  window is the identity).

`cvta.shared` adds the shared window's base to a shared offset, `cvta.to.shared` subtracts it (likewise
for local); `cvta.global`/`cvta.const` leave the address unchanged.
"""
from __future__ import annotations

import jax.numpy as jnp

from jaxsimt import errors


def windows(target):
    """((space, base), ...) of the windows that are not the identity."""
    return (("shared", target.generic_shared_base), ("local", target.generic_local_base))


def _check(ex, ins, what):
    target = ex.m.options.target
    if target is None or not target.generic_window_bytes:
        name = target.name if target is not None else "this machine"
        raise errors.LaunchConfigError(f"kernel {ex.m.program.name}: {what} at {ins.loc} needs a unified "
                                       f"address space, which {name} does not have")
    return target


def access(ex, ins, pc, target) -> list:
    """A generic memory instruction: each lane's access goes to the memory its address's window names."""
    a = jnp.broadcast_to(ex.read(ins.src[0]), ex.active.shape).astype(jnp.int64)
    full = a + ex.offset(ins)
    size = target.generic_window_bytes
    parts, rest = [], ex.active
    for space, base in windows(target):
        inside = (full >= base) & (full < base + size)
        parts.append((space, inside, a - base))
        rest = rest & ~inside
    out = ex.access(ins, pc, "global", a, rest)
    for space, inside, raw in parts:
        vals = ex.access(ins, pc, space, raw, ex.active & inside)
        out = [jnp.where(inside, v, o) for v, o in zip(vals, out)]
    return out


def cvta(ex, ins, pc):
    """cvta: attrs space (shared/local/global/const) and to (True: generic -> space)."""
    space = ins.attr("space")
    v = jnp.broadcast_to(ex.read(ins.src[0]), ex.active.shape).astype(jnp.uint64)
    if space in ("shared", "local"):
        target = _check(ex, ins, "cvta")
        base = jnp.uint64(dict(windows(target))[space])
        v = v - base if ins.attr("to") else v + base
    ex.write(ins.dst[0], v)


def isspacep(ex, ins, pc):
    """isspacep.space p, a: whether generic address a lies in the window of `space`."""
    space = ins.attr("space")
    target = _check(ex, ins, "isspacep")
    a = jnp.broadcast_to(ex.read(ins.src[0]), ex.active.shape).astype(jnp.int64)
    inside = {s: (a >= b) & (a < b + target.generic_window_bytes) for s, b in windows(target)}
    if space in inside:
        p = inside[space]
    else:  # global (const and param addresses are global here too)
        p = ~inside["shared"] & ~inside["local"]
    ex.write(ins.dst[0], p)

