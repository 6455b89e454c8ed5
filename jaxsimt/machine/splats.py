"""Constant outputs of a step's branches, made once and shared.

The step's `lax.switch` (and the memory stage's conditionals) need every branch to return the same outputs, so a
branch pads what it does not produce with constants: the write set of a register file it never writes, the
access records of a shape it never makes, the taken mask of a block without a branch. XLA:CPU compiles each such
constant array as a kernel of its own in every branch that returns it — about a hundred in a small kernel's wave,
a tenth of its compilation (docs/performance.md). Here a branch's outputs that are one value in every element
("splats") are found in its traced jaxpr, and the branch returns an array made once before the switch instead,
passed in as an operand: a buffer copy, which needs no generated code.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp

# primitives whose result is a splat when every operand that gives it values is one of the same value (the value
# unchanged, or converted for convert_element_type)
_SHAPING = {"broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "concatenate", "stack", "copy",
            "copy_p", "convert_element_type", "rev", "slice", "dynamic_slice", "pad", "select_n"}


def _scalar(x) -> Optional[np.ndarray]:
    """The one value of a concrete array all of whose elements are equal (a 0-d numpy array), else None."""
    try:
        a = np.asarray(x)
    except Exception:  # noqa: BLE001 - a tracer or an extended dtype: not a known constant
        return None
    if a.dtype == object or a.size == 0:
        return None
    first = a.reshape(-1)[:1]
    if a.size > 1 and a.tobytes() != np.repeat(first, a.size).tobytes():  # bits: -0.0 is no 0.0
        return None
    first = first[0]
    if a.dtype.kind == "f" and np.isnan(first):
        return None  # NaN payloads and signs need not agree: no sharing
    return np.asarray(first)


def splat_values(closed: jax_core.ClosedJaxpr) -> list:
    """Per output of `closed`: its value (a 0-d numpy array of the output's dtype) where every element of it is one
    constant whatever the inputs, else None."""
    out = _splats(closed, [None] * len(closed.jaxpr.invars))
    return [None if isinstance(o, jax_core.Literal) and not o.aval.shape else v
            for o, v in zip(closed.jaxpr.outvars, out)]


def _splats(closed: jax_core.ClosedJaxpr, inputs: list) -> list:
    """The splat value of each output of `closed` (None: not known to be one), given its inputs' (`inputs`)."""
    jaxpr = closed.jaxpr
    known: dict = {v: x for v, x in zip(jaxpr.invars, inputs) if x is not None}
    for v, c in zip(jaxpr.constvars, closed.consts):
        x = _scalar(c) if np.size(c) == 1 else None  # a splat needs no large constant: skip the tables
        if x is not None:
            known[v] = x

    def value(a):
        if isinstance(a, jax_core.Literal):
            return _scalar(a.val)
        return known.get(a)

    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in ("jit", "pjit"):  # a jitted helper (jnp.where, jnp.zeros_like ...): look inside
            for o, x in zip(eqn.outvars, _splats(eqn.params["jaxpr"], [value(a) for a in eqn.invars])):
                if x is not None:
                    known[o] = x
            continue
        if name not in _SHAPING or len(eqn.outvars) != 1:
            continue
        # the operands whose values become the result's (not the indices, the predicate)
        arrays = (eqn.invars[:1] if name == "dynamic_slice" else eqn.invars[:2] if name == "pad"
                  else eqn.invars[1:] if name == "select_n" else eqn.invars)
        vals = [value(a) for a in arrays]
        if not vals or any(x is None for x in vals) or any(x.tobytes() != vals[0].tobytes() for x in vals[1:]):
            continue
        dtype = eqn.outvars[0].aval.dtype
        if name != "convert_element_type":
            known[eqn.outvars[0]] = np.asarray(vals[0], dtype)
        elif vals[0] == 0:  # zero converts to zero (and False) in every type
            known[eqn.outvars[0]] = np.zeros((), dtype)
        else:  # as XLA converts it
            with jax.ensure_compile_time_eval():
                known[eqn.outvars[0]] = np.asarray(jnp.asarray(vals[0]).astype(dtype))
    return [value(o) for o in jaxpr.outvars]


def filled(shape: tuple, value: np.ndarray, zero) -> jnp.ndarray:
    """An array of `shape` with every element `value` (a 0-d numpy array: its dtype too), computed from the run-time
    zero `zero` ([] uint32) so that XLA cannot fold it into a constant again (and move it back into every branch)."""
    dtype = value.dtype
    if dtype == np.bool_:
        one = (zero != 0) if not value else (zero == 0)
    else:
        uint = np.dtype(f"uint{8 * dtype.itemsize}")
        bits = jnp.asarray(value.view(uint)) | zero.astype(uint)
        one = bits if dtype == uint else jax.lax.bitcast_convert_type(bits, dtype)
    return jnp.broadcast_to(one, shape)


class Shared:
    """The arrays that replace branches' splat outputs: one per (output, value), made from the run-time zero `zero`
    ([] uint32) where this object is built, outside the branching (branches close over them)."""

    def __init__(self, zero):
        self.zero = zero
        self.arrays: dict = {}

    def get(self, key, shape: tuple, value: np.ndarray):
        """The shared array of `shape` filled with `value`, for the output that `key` names."""
        k = (key, shape, value.dtype.str, value.tobytes())
        if k not in self.arrays:
            self.arrays[k] = filled(shape, value, self.zero)
        return self.arrays[k]

    def replacements(self, closed: jax_core.ClosedJaxpr, out) -> list:
        """Per flat output of `closed` (`out`: its output shapes, a pytree): the shared array that replaces it where
        it is a splat (made here on first use: call while tracing outside the branching), else None."""
        return [None if v is None else self.get(i, tuple(o.shape), v)
                for i, (o, v) in enumerate(zip(jax.tree_util.tree_leaves(out), splat_values(closed)))]


def share(fns: list[Callable], args: tuple, zero) -> list[Callable]:
    """`fns` (functions of `args` with one output structure) with every output that is a splat in a branch taken,
    in that branch, from an array shared by the branches (`Shared`), made here from the run-time zero `zero`."""
    shared = Shared(zero)
    out = []
    for fn in fns:
        closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
        run, tree = jax_core.jaxpr_as_fun(closed), jax.tree_util.tree_structure(shape)
        made = shared.replacements(closed, shape)

        def branch(*a, run=run, tree=tree, made=made):
            outs = run(*jax.tree_util.tree_leaves(a))
            return jax.tree_util.tree_unflatten(tree, [o if m is None else m for o, m in zip(outs, made)])
        out.append(branch)
    return out
