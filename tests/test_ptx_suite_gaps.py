"""PTX the suite corpus needs (tests/data/ptx/src/warp_collectives.cu, compiled by nvcc): redux.sync in its
six operations over full and partial warps, match.any/all.sync (32- and 64-bit), PTX's WARP_SZ constant,
and atom.inc / atom.dec on one contended word, each against numpy."""
import os

import numpy as np
import pytest

import jaxsimt.ptx as P

PTX = os.path.join(os.path.dirname(__file__), "data", "ptx", "warp_collectives.ptx")


def _run(kernel, grid, block, args):
    return P.launch(PTX, kernel, grid, block, args)


def test_redux_all_operations_per_warp():
    g = np.random.default_rng(0)
    u = g.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    s = g.integers(-2**31, 2**31, 64).astype(np.int32)
    r = _run("redux_all", 1, 64, [u, s, np.zeros(16, np.uint32)])
    got = r.outputs["redux_all_param_2"].reshape(2, 8)
    for w in range(2):
        x, y = u[w * 32:(w + 1) * 32], s[w * 32:(w + 1) * 32]
        want = [int(x.astype(np.uint64).sum()) % 2**32, x.min(), x.max(), int(y.min()) % 2**32,
                int(y.max()) % 2**32, np.bitwise_and.reduce(x), np.bitwise_or.reduce(x), np.bitwise_xor.reduce(x)]
        assert got[w].tolist() == [int(v) for v in want]


@pytest.mark.slow
def test_redux_covers_the_active_lanes_only():
    u = np.arange(1, 33, dtype=np.uint32) * 3
    r = _run("redux_partial", 1, 32, [u, np.zeros(32, np.uint32), np.zeros(32, np.uint32)])
    odd = (u & 1).astype(bool)
    out, mask = r.outputs["redux_partial_param_1"], r.outputs["redux_partial_param_2"]
    assert (out[odd] == u[odd].sum()).all() and (out[~odd] == 0).all()
    assert (mask[odd] == sum(1 << i for i in range(32) if odd[i])).all()


@pytest.mark.slow
def test_match_any_and_all():
    v = (np.arange(32) % 5).astype(np.uint32)
    v64 = (np.arange(32) // 8).astype(np.uint64) << np.uint64(40)
    z = [np.zeros(32, np.uint32) for _ in range(2)]
    r = _run("match_sync", 1, 32, [v, v64, z[0], z[1], np.zeros(32, np.int32), np.zeros(32, np.uint32)])
    want_any = [sum(1 << j for j in range(32) if v[j] == v[i]) for i in range(32)]
    want_any64 = [sum(1 << j for j in range(32) if v64[j] == v64[i]) for i in range(32)]
    assert r.outputs["match_sync_param_2"].tolist() == want_any
    assert r.outputs["match_sync_param_5"].tolist() == want_any64
    assert (r.outputs["match_sync_param_3"] == 0).all() and (r.outputs["match_sync_param_4"] == 0).all()
    same = np.full(32, 7, np.uint32)
    r = _run("match_sync", 1, 32, [same, v64, z[0], z[1], np.zeros(32, np.int32), np.zeros(32, np.uint32)])
    assert (r.outputs["match_sync_param_3"] == 0xFFFFFFFF).all() and (r.outputs["match_sync_param_4"] == 1).all()


@pytest.mark.slow
def test_warp_size_constant():
    r = _run("warp_size_lanes", 1, 64, [np.zeros(64, np.uint32)])
    assert r.outputs["warp_size_lanes_param_0"].tolist() == [t % 32 + 3200 for t in range(64)]


@pytest.mark.slow
def test_atomic_inc_dec_wrap_in_thread_order():
    n = 2 * 64
    r = _run("inc_dec", 2, 64, [np.array([3, 2], np.uint32), np.zeros(n, np.uint32)])
    words, old = r.outputs["inc_dec_param_0"], r.outputs["inc_dec_param_1"]
    # inc: ((old >= 5) ? 0 : old + 1) from 3; dec: ((old == 0) | (old > 7)) ? 7 : old - 1 from 2
    assert words.tolist() == [(3 + n) % 6, (2 - n) % 8]
    assert sorted(old.tolist()) == sorted(((3 + k) % 6) for k in range(n))


def test_two_products_into_one_sub_fuse_one():
    """p - q of two plain products: one fma (the first product, in program order) and one rounded
    product; before, both were fused into the same sub and the first product was lost."""
    a = np.random.default_rng(1).uniform(-2, 2, 256).astype(np.float32)
    r = _run("two_products", 1, 32, [a, np.zeros(64, np.float32)])
    o = r.outputs["two_products_param_1"]
    f64 = a.astype(np.float64)
    q = (a[64:96] * a[96:128]).astype(np.float64)  # rounded to f32 by the multiply
    want = (f64[:32] * f64[32:64] - q).astype(np.float32)  # fma: one rounding of the exact a*b - q
    np.testing.assert_array_equal(o[:32], want)
    s = (a[192:224] * a[224:256]).astype(np.float64)
    np.testing.assert_array_equal(o[32:], (f64[128:160] * f64[160:192] + s).astype(np.float32))


def test_texture_fetch_is_refused_by_name_and_line():
    """Rodinia's kmeans and SHOC's spmv read through textures; the corpus reads the same addresses with
    plain loads, and a `tex` instruction is refused naming the instruction and its line."""
    path = os.path.join(os.path.dirname(__file__), "data", "ptx", "texture_fetch.ptx")
    with pytest.raises(P.PtxUnsupportedError, match=r"texture_fetch.ptx:45.*tex\.1d\.v4\.f32\.s32"):
        P.launch(path, "tex_fetch", 1, 32, [np.uint64(1), np.zeros(32, np.float32), np.int32(32)])
