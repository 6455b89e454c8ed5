"""Compiling so that floating point rounds as each instruction says.

XLA may keep a value in more precision than its type (`xla_allow_excess_precision`, on by default). On a GPU it
then drops a narrowing conversion followed by a widening one (f64 -> f32 -> f64 becomes the f64 value), which skips
the rounding that every f32 instruction computed exactly in f64 relies on (directed rounding, fma chains): measured
on an H200, `div.rz.f32` was wrong in half the lanes and a constant-memory polynomial (an fma chain) in 649 of
1,024. Every compiled machine is compiled with it off.
"""
from __future__ import annotations

import jax

COMPILER_OPTIONS = {"xla_allow_excess_precision": False}


def jit(fn, **kwargs):
    """`jax.jit(fn, **kwargs)` compiled with `COMPILER_OPTIONS`."""
    return jax.jit(fn, compiler_options=COMPILER_OPTIONS, **kwargs)
