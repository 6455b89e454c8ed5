"""The reconvergence stack's pops against a reference that pops one entry at a time, as seed 000 describes."""
import numpy as np
from hypothesis import given, settings, strategies as st

from jaxsimt.units import stack

D = 6


def pops_one_at_a_time(pc, rpc, mask, sp, exited):
    """Per warp: while the top entry reached its reconvergence pc or has no live lane, pop it."""
    sp = sp.copy()
    for w in range(len(sp)):
        while sp[w] > 0:
            t = sp[w] - 1
            if pc[w, t] == rpc[w, t] or (int(mask[w, t]) & ~int(exited[w]) & 0xFFFFFFFF) == 0:
                sp[w] -= 1
            else:
                break
    return sp


@st.composite
def stacks(draw):
    W = draw(st.integers(1, 8))
    pcs = st.integers(0, 3)  # few blocks, so entries often sit at their reconvergence pc
    masks = st.sampled_from([0, 1, 0x80000000, 0xFFFF, 0xFFFFFFFF, 0x0F0F0F0F])
    pc = np.array(draw(st.lists(st.lists(pcs, min_size=D, max_size=D), min_size=W, max_size=W)), np.int32)
    rpc = np.array(draw(st.lists(st.lists(pcs, min_size=D, max_size=D), min_size=W, max_size=W)), np.int32)
    mask = np.array(draw(st.lists(st.lists(masks, min_size=D, max_size=D), min_size=W, max_size=W)), np.uint32)
    sp = np.array(draw(st.lists(st.integers(0, D), min_size=W, max_size=W)), np.int32)
    exited = np.array(draw(st.lists(masks, min_size=W, max_size=W)), np.uint32)
    return pc, rpc, mask, sp, exited


@settings(max_examples=200, deadline=None)
@given(stacks())
def test_pops_cascade_like_one_pop_at_a_time(case):
    pc, rpc, mask, sp, exited = case
    got = stack.pop_reconverged(stack.Stack(pc, rpc, mask, sp), exited)
    np.testing.assert_array_equal(np.asarray(got.sp), pops_one_at_a_time(pc, rpc, mask, sp, exited))
    # nothing but the stack pointer moves
    for a, b in ((got.pc, pc), (got.rpc, rpc), (got.mask, mask)):
        np.testing.assert_array_equal(np.asarray(a), b)


def test_a_cascade_of_pops_stops_at_the_first_entry_with_work_left():
    # entries from the bottom: (0 -> exit, live), (2 -> 2, reconverged), (1 -> 3, its lanes exited), top (3 -> 3)
    pc = np.array([[0, 2, 1, 3, 0, 0]], np.int32)
    rpc = np.array([[5, 2, 3, 3, 0, 0]], np.int32)
    mask = np.array([[0xFF, 0xF0, 0x0F, 0xFF, 0, 0]], np.uint32)
    got = stack.pop_reconverged(stack.Stack(pc, rpc, mask, np.array([4], np.int32)), np.array([0x0F], np.uint32))
    assert int(got.sp[0]) == 1
