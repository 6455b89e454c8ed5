"""jaxsimt.units.intops: the shifts, masks and truncating divisions give exactly what `//`, `%` and
`jnp.take_along_axis` give, for every integer type, sign and divisor they are used with."""
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsimt.units.intops import floordiv, mod, take_along

DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
DIVISORS = (1, 2, 4, 8, 32, 64, 128, 256, 4096, 3, 6, 48)


def _values(dt):
    info = np.iinfo(dt)
    return st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=40).map(
        lambda v: np.array(v, dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("d", DIVISORS)
def test_edges(dt, d):
    info = np.iinfo(dt)
    vals = [int(info.min), int(info.min) + 1, -d - 1, -d, -d + 1, -1, 0, 1, d - 1, d, d + 1,
            int(info.max) - 1, int(info.max)]
    x = jnp.asarray(np.array([v for v in vals if info.min <= v <= info.max], dt))
    for got, want in ((floordiv(x, d), x // d), (mod(x, d), x % d)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda dt: st.tuples(_values(dt), st.sampled_from(DIVISORS))))
def test_random(case):
    x, d = case
    x = jnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(floordiv(x, d)), np.asarray(x // d))
    np.testing.assert_array_equal(np.asarray(mod(x, d)), np.asarray(x % d))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=40), st.integers(1, 2**31 - 1))
def test_nonneg_traced_divisor(xs, d):
    """A divisor only known at run time, for the non-negative values the machine divides (block ids)."""
    x = jnp.asarray(np.array(xs, np.int32))
    dd = jnp.int32(d)
    np.testing.assert_array_equal(np.asarray(floordiv(x, dd, nonneg=True)), np.array(xs) // d)
    np.testing.assert_array_equal(np.asarray(mod(x, dd, nonneg=True)), np.array(xs) % d)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 20), st.integers(0, 2**16), st.integers(0, 1))
def test_take_along(rows, cols, seed, axis):
    rng = np.random.default_rng(seed)
    a = rng.integers(-1000, 1000, (rows, cols)).astype(np.int32)
    n = a.shape[axis]
    idx = rng.integers(0, n, (rows, 1) if axis == 1 else (1, cols)).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(take_along(jnp.asarray(a), jnp.asarray(idx), axis)),
                                  np.take_along_axis(a, idx, axis))
