"""Integer division, remainder and gathers as the machine's per-step arithmetic needs them, cheap to compile.

`x // d` and `x % d` on a JAX integer array follow Python's sign rules, which XLA builds from a division and
about a dozen fix-up operations; the memory models divide addresses by sector, line, word and bank sizes (all
powers of two) at every memory instruction of every kernel. For a power-of-two divisor an arithmetic shift right
is floor division and a mask is the remainder of floor division, negative values included (two's complement),
so `floordiv` and `mod` give the same values as `//` and `%` in one operation. Likewise `take_along` skips the
wrapping of negative indices and the out-of-bounds fill that `jnp.take_along_axis` adds, for indices the caller
keeps in range. On the CPU these cut a small kernel's machine by about a fifth of its instructions and its XLA
compile time with them (docs/performance.md).
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax
import numpy as np


def _log2(x, d) -> int | None:
    """log2 of d where x is an integer array and d a static positive power of two that x's type holds, else
    None (a traced or other divisor: the general operator)."""
    dt = jnp.result_type(x)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not jnp.issubdtype(dt, jnp.integer):
        return None
    d = int(d)
    return d.bit_length() - 1 if 0 < d <= jnp.iinfo(dt).max and d & (d - 1) == 0 else None


def floordiv(x, d, nonneg: bool = False):
    """x // d (floor division, as Python and NumPy round) for an integer array x and divisor d. nonneg: the
    caller knows x >= 0 and d > 0, where truncating division is floor division (one operation for a traced d)."""
    k = _log2(x, d)
    if k is None:
        return lax.div(*_common(x, d)) if nonneg else x // d
    return x >> k if k else x


def mod(x, d, nonneg: bool = False):
    """x % d (the remainder of floor division: the divisor's sign) for an integer array x and divisor d. nonneg:
    as `floordiv`."""
    k = _log2(x, d)
    if k is None:
        return lax.rem(*_common(x, d)) if nonneg else x % d
    return x & ((1 << k) - 1)


def _common(x, d):
    """x and d as arrays of one type (x's, or the wider where d is a wider array), as lax's binary ops want."""
    dt = jnp.promote_types(jnp.result_type(x), jnp.result_type(d)) if hasattr(d, "dtype") else jnp.result_type(x)
    return jnp.asarray(x, dt), jnp.asarray(d, dt)


def take_along(a, idx, axis: int):
    """`jnp.take_along_axis(a, idx, axis)` for indices the caller keeps within [0, a.shape[axis])."""
    return jnp.take_along_axis(a, idx, axis=axis, mode="promise_in_bounds")
