"""Stores narrower than the memory word are exact per byte whatever the collisions: the last writer in
(warp, lane) order of a step wins each byte, bytes nobody writes keep their value, across warps and steps.
Property tests against a numpy byte-array reference, and the flag-store kernels that exposed summing."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxsimt as js
import jaxsimt.ptx as P
from jaxsimt import Ptr, s32
from jaxsimt.units import lsu
from jaxsimt import types as T

N_WORDS = 6
_TYPES = {1: T.u8, 2: T.u16, 4: T.u32, 8: T.u64}
_NP = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _reference(mem_bytes, steps):
    """Apply each step's lanes in flat (warp, lane) order: the later writer of a byte wins."""
    mem = mem_bytes.copy()
    for addr, active, vals, es, vec in steps:
        for w in range(addr.shape[0]):
            for l in range(addr.shape[1]):
                if active[w, l]:
                    raw = np.asarray(vals[:, w, l], _NP[es]).tobytes()
                    mem[addr[w, l]:addr[w, l] + es * vec] = np.frombuffer(raw, np.uint8)
    return mem


@st.composite
def _step(draw, warps, lanes):
    es = draw(st.sampled_from([1, 2, 4, 8]))
    vec = draw(st.sampled_from([v for v in (1, 2, 4) if es * v <= 16]))
    nbytes = es * vec
    slots = N_WORDS * 4 // nbytes
    # few slots so lanes and warps collide often
    addr = np.array(draw(st.lists(st.integers(0, min(slots - 1, 3)), min_size=warps * lanes,
                                  max_size=warps * lanes)), np.int64).reshape(warps, lanes) * nbytes
    active = np.array(draw(st.lists(st.booleans(), min_size=warps * lanes, max_size=warps * lanes)),
                      bool).reshape(warps, lanes)
    seed = draw(st.integers(0, 2**31 - 1))
    vals = np.random.default_rng(seed).integers(0, 2 ** (8 * es), (vec, warps, lanes), dtype=np.uint64)
    return addr, active, vals.astype(_NP[es]), es, vec


@st.composite
def _case(draw):
    warps = draw(st.integers(1, 4))
    lanes = draw(st.sampled_from([1, 3, 8]))
    steps = draw(st.lists(_step(warps, lanes), min_size=1, max_size=3))
    init = np.frombuffer(draw(st.binary(min_size=N_WORDS * 4, max_size=N_WORDS * 4)), np.uint8)
    return init, steps


_W, _L = 4, 8  # fixed padded shape (padding lanes inactive): one compile per width, not per example


@functools.lru_cache(maxsize=None)
def _jitted_store(es):
    def f(words, addr, active, vals):
        widx, boff = lsu.split_address(addr)
        return lsu.store(words, widx, boff, active, list(vals), _TYPES[es])
    return jax.jit(f)


def _pad(x, fill):
    out = np.full(x.shape[:-2] + (_W, _L), fill, x.dtype)
    out[..., :x.shape[-2], :x.shape[-1]] = x
    return out


@settings(max_examples=60, deadline=None)
@given(_case())
def test_stores_match_byte_reference(case):
    init, steps = case
    with jax.enable_x64(True):
        words = jnp.asarray(init.view(np.uint32))
        for addr, active, vals, es, vec in steps:
            words = _jitted_store(es)(words, _pad(addr, 0), _pad(active, False), _pad(vals, 0))
        got = np.asarray(words).view(np.uint8)
    np.testing.assert_array_equal(got, _reference(init, steps))


@js.kernel
def set_flag(flag: Ptr[js.u8]):
    flag[0] = js.const(1, js.u8)


@js.kernel
def clear_flag(n: s32, flag: Ptr[js.u8]):
    with js.if_(js.global_thread_index() < n):
        flag[1] = js.const(0, js.u8)


def test_many_warps_storing_true_to_one_flag_leave_one():
    r = js.launch(set_flag, 2, 256, (np.zeros(4, np.uint8),))
    np.testing.assert_array_equal(r["flag"], [1, 0, 0, 0])


def test_three_warps_storing_zero_leave_zero_and_the_neighbour():
    flag = np.array([5, 1, 7, 9], np.uint8)
    r = js.launch(clear_flag, 1, 96, (96, flag))
    np.testing.assert_array_equal(r["flag"], [5, 0, 7, 9])


_PTX_FLAG = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry set_bool(.param .u64 p, .param .u16 v)
{
    .reg .b16 %rs<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    ld.param.u16 %rs1, [v];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u8 [%rd2+1], %rs1;
    ret;
}
"""


def test_ptx_bool_store_from_512_threads():
    flag = np.array([5, 0, 7, 9], np.uint8)
    r = P.launch(_PTX_FLAG, "set_bool", 2, 256, [flag, np.uint16(1)])
    np.testing.assert_array_equal(r.outputs["p"], [5, 1, 7, 9])
    flag = np.array([5, 1, 7, 9], np.uint8)
    r = P.launch(_PTX_FLAG, "set_bool", 3, 32, [flag, np.uint16(0)])
    np.testing.assert_array_equal(r.outputs["p"], [5, 0, 7, 9])


@pytest.mark.parametrize("n", [64, 100_000])  # small and large memories
def test_full_word_stores_keep_the_last_writer_of_each_word_across_warps(n):
    # duplicate word stores in one step are decided before the scatter, so no backend's scatter order
    # can change which lane's value lands
    rng = np.random.default_rng(n)
    for _ in range(10):
        widx = rng.integers(0, 40, (4, 32))
        act = rng.random((4, 32)) < 0.7
        got = np.asarray(lsu._last_writers(jnp.asarray(widx), jnp.asarray(act), n))
        last = {int(widx.flat[f]): f for f in range(widx.size) if act.flat[f]}
        want = np.zeros(widx.size, bool)
        want[list(last.values())] = True
        np.testing.assert_array_equal(got.reshape(-1), want)
