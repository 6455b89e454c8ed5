"""Branch outputs that are splat constants, shared across a switch's branches (jaxsimt.machine.splats)."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from jaxsimt.machine import splats


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):  # as the machine runs
        yield


def _values(fn, *args):
    return splats.splat_values(jax.make_jaxpr(fn)(*args))


def test_splat_values_finds_constants_through_shaping_and_jitted_helpers():
    def fn(x):
        z = jnp.zeros((3, 4), jnp.int64)
        stacked = jnp.stack([jnp.zeros((4,), jnp.uint32)] * 2)  # stack of broadcasts
        rows = jnp.stack([jnp.int32(7), jnp.int32(7)])  # stack of literals
        kept = jnp.where(x > 0, jnp.float32(2.5), jnp.float32(2.5))  # a jitted helper, both sides one value
        conv = jnp.full((2,), 3, jnp.int32).astype(jnp.float32)
        return z, stacked, rows, kept, conv, x + 1, jnp.where(x > 0, 1.0, 0.0)

    vals = _values(fn, jnp.ones((5,), jnp.float32))
    assert [None if v is None else v.item() for v in vals] == [0, 0, 7, 2.5, 3.0, None, None]
    assert [None if v is None else v.dtype for v in vals][:5] == [np.int64, np.uint32, np.int32, np.float32,
                                                                   np.float32]


def test_splat_values_never_claims_an_input_dependent_or_nan_output():
    def fn(x):
        return x, jnp.zeros_like(x) + x, jnp.full((3,), jnp.nan, jnp.float32), x * 0

    assert _values(fn, jnp.ones((3,), jnp.float32)) == [None, None, None, None]


@pytest.mark.parametrize("value", [np.float32(-0.0), np.float64(1e300), np.uint64(2**64 - 1), np.int8(-5),
                                   np.bool_(True), np.bool_(False), np.float16(-2.0), np.int64(-(2**63))])
def test_filled_arrays_hold_the_exact_bits(value):
    out = jax.jit(lambda z: splats.filled((2, 3), np.asarray(value), z))(jnp.uint32(0))
    expect = np.full((2, 3), value)
    assert out.dtype == expect.dtype
    assert np.asarray(out).tobytes() == expect.tobytes()


def test_shared_branches_compute_what_the_branches_do():
    def br(k):
        def fn(x, y):
            # outputs a branch pads with constants, as the step's branches pad write sets and records
            if k == 0:
                return x + y, jnp.zeros((4, 8), jnp.int64), jnp.uint32(0) * jnp.ones((8,), jnp.uint32)
            if k == 1:
                return jnp.zeros((8,), jnp.float32), x.astype(jnp.int64)[None, :].repeat(4, 0), jnp.full((8,), 5, jnp.uint32)
            return x * y, jnp.full((4, 8), -1, jnp.int64), jnp.full((8,), 5, jnp.uint32)
        return fn

    fns = [br(k) for k in range(3)]

    def plain(i, x, y):
        return lax.switch(i, fns, x, y)

    def shared(i, x, y):
        return lax.switch(i, splats.share(fns, (x, y), jnp.uint32(0) * i.astype(jnp.uint32)), x, y)

    x, y = jnp.arange(8, dtype=jnp.float32), jnp.full((8,), 3.0, jnp.float32)
    for i in range(3):
        a, b = jax.jit(plain)(jnp.int32(i), x, y), jax.jit(shared)(jnp.int32(i), x, y)
        for u, v in zip(a, b):
            assert u.dtype == v.dtype and np.array_equal(np.asarray(u), np.asarray(v))


def test_a_concatenation_of_zeros_of_either_sign_is_no_splat():
    def fn(x):
        return jnp.concatenate([jnp.full((2,), 0.0, jnp.float32), jnp.full((2,), -0.0, jnp.float32)]), x

    assert _values(fn, jnp.ones((2,), jnp.float32)) == [None, None]
