"""Fragment layouts against the PTX ISA's mma.sync fragment tables, round trips, ldmatrix, WMMA."""
import numpy as np
import jax.numpy as jnp
import pytest

from jaxsimt.units import mma as M


# The PTX ISA tables ("Matrix Fragments for mma.m16n8k16 with floating point type", "... mma.m16n8k8",
# "... mma.m16n8k4"), written from the ISA's wording, one rule per table.
def ptx_rule(shape, operand, itype, lane, i):
    g, t = lane // 4, lane % 4
    if operand in "cd":
        return (g if i in (0, 1) else g + 8), t * 2 + (i & 1)
    if shape == "m16n8k16":
        if operand == "a":
            row = g if i in (0, 1, 4, 5) else g + 8
            col = t * 2 + (i & 1) if i < 4 else t * 2 + 8 + (i & 1)
            return row, col
        return (t * 2 + (i & 1) if i < 2 else t * 2 + 8 + (i & 1)), g
    if shape == "m16n8k8" and itype != "tf32":
        if operand == "a":
            return (g if i < 2 else g + 8), t * 2 + (i & 1)
        return t * 2 + i, g
    if shape == "m16n8k8":
        if operand == "a":
            return (g if i in (0, 2) else g + 8), (t if i < 2 else t + 4)
        return (t if i == 0 else t + 4), g
    if shape == "m16n8k4":
        if operand == "a":
            return (g if i == 0 else g + 8), t
        return t, g


CASES = [("m16n8k16", "f16", {"a": 8, "b": 4, "c": 4}), ("m16n8k16", "bf16", {"a": 8, "b": 4, "c": 4}),
         ("m16n8k8", "f16", {"a": 4, "b": 2, "c": 4}), ("m16n8k8", "bf16", {"a": 4, "b": 2, "c": 4}),
         ("m16n8k8", "tf32", {"a": 4, "b": 2, "c": 4}), ("m16n8k4", "tf32", {"a": 2, "b": 1, "c": 4})]


@pytest.mark.parametrize("shape,itype,counts", CASES)
def test_fragment_tables(shape, itype, counts):
    for op in "abcd":
        lay = M.fragment_layout(shape, op, itype)
        n = counts["c" if op == "d" else op]
        assert lay.shape == (32, n, 2)
        for lane in range(32):
            for i in range(n):
                assert tuple(lay[lane, i]) == ptx_rule(shape, op, itype, lane, i), (op, lane, i)


@pytest.mark.parametrize("shape", list(M.SHAPES))
def test_round_trip(shape):
    for op in "abcd":
        rows, cols = M.operand_shape(shape, op)
        tile = jnp.arange(3 * rows * cols, dtype=jnp.float32).reshape(3, rows, cols)
        for itype in ("f16", "tf32"):
            frag = M.fragment_from_tile(tile, op, shape, itype)
            assert frag.shape == (3, 32, rows * cols // 32)
            assert np.array_equal(M.tile_from_fragment(frag, op, shape, itype), tile)


def test_load_fragment_row_and_col_major():
    rng = np.random.default_rng(1)
    tile = rng.standard_normal((16, 16)).astype(np.float16)
    ld = 24
    row_mem = np.zeros(16 * ld + 5, np.float16)
    col_mem = np.zeros(16 * ld + 5, np.float16)
    for r in range(16):
        for c in range(16):
            row_mem[5 + r * ld + c] = tile[r, c]
            col_mem[5 + c * ld + r] = tile[r, c]
    want = M.fragment_from_tile(tile, "a", "m16n8k16")
    assert np.array_equal(M.load_fragment(row_mem, "a", "m16n8k16", ld=ld, offset=5), want)
    assert np.array_equal(M.load_fragment(col_mem, "a", "m16n8k16", ld=ld, layout="col", offset=5), want)
    out = M.store_fragment(np.zeros_like(row_mem), want, "a", "m16n8k16", ld=ld, offset=5)
    assert np.array_equal(out, row_mem)


def test_pack_registers_low_half_first():
    frag = jnp.asarray(np.arange(32 * 8).reshape(32, 8).astype(np.float16))
    regs = M.pack_registers(frag)
    assert regs.shape == (32, 4) and regs.dtype == jnp.uint32
    bits = np.asarray(frag).view(np.uint16)
    assert int(regs[3, 1]) == int(bits[3, 2]) | (int(bits[3, 3]) << 16)
    assert np.array_equal(M.unpack_registers(regs, jnp.float16), frag)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(num, trans):
    # num 8x8 b16 matrices; matrix j's row r lives at a scattered address supplied by lane 8j + r
    rng = np.random.default_rng(num)
    mats = rng.integers(0, 60000, (num, 8, 8)).astype(np.uint16)
    mem = np.zeros(4096, np.uint16)
    addrs = np.zeros(32, np.int32)
    bases = rng.permutation(4096 // 8 - 1)[:32] * 8
    for j in range(num):
        for r in range(8):
            addrs[8 * j + r] = bases[8 * j + r]
            mem[bases[8 * j + r]: bases[8 * j + r] + 8] = mats[j, r]
    out = np.asarray(M.ldmatrix(mem, addrs, num, trans))
    assert out.shape == (32, num, 2)
    for lane in range(32):
        for j in range(num):
            for h in range(2):
                # PTX: without .trans lane l receives row l/4, elements 2(l%4), 2(l%4)+1 of matrix j
                m = mats[j].T if trans else mats[j]
                assert out[lane, j, h] == m[lane // 4, 2 * (lane % 4) + h]


def test_ldmatrix_x4_feeds_mma_a_fragment():
    # the classic use: ldmatrix.x4 of a 16x16 f16 A tile gives exactly the m16n8k16 A fragment when lanes
    # 0-15 address rows 0-15 of columns 0-7 and lanes 16-31 rows 0-15 of columns 8-15
    tile = np.arange(256, dtype=np.uint16).reshape(16, 16)
    lane = np.arange(32)
    addrs = (lane % 16) * 16 + (lane // 16) * 8
    out = np.asarray(M.ldmatrix(tile.reshape(-1), addrs, 4)).reshape(32, 8)
    assert np.array_equal(out, np.asarray(M.fragment_from_tile(tile, "a", "m16n8k16")))


@pytest.mark.parametrize("shape", M.WMMA_SHAPES)
def test_wmma_load_store_round_trip(shape):
    s = M.SHAPES[shape]
    itype = "tf32" if shape == "m16n16k8" else "f16"
    for use, (rows, cols) in (("matrix_a", (s.m, s.k)), ("matrix_b", (s.k, s.n)), ("accumulator", (s.m, s.n))):
        for layout in ("row", "col"):
            ld = (cols if layout == "row" else rows) + 3
            mem = np.arange(ld * max(rows, cols), dtype=np.float32)
            frag = M.load_matrix_sync(mem, use, shape, ld=ld, layout=layout, input_type=itype)
            assert frag.shape == (32, rows * cols // 32)
            if use == "accumulator":
                back = M.store_matrix_sync(np.zeros_like(mem), frag, shape, ld=ld, layout=layout)
                touched = np.asarray(back) != 0
                assert np.array_equal(np.asarray(back)[touched], mem[touched])
                assert touched.sum() == rows * cols - (mem[0] == 0)


def test_wmma_mma_sync_matches_tiles():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    fa = M.load_matrix_sync(a.reshape(-1), "matrix_a", ld=16)
    fb = M.load_matrix_sync(b.reshape(-1), "matrix_b", ld=16)
    fc = M.load_matrix_sync(c.reshape(-1), "accumulator", ld=16)
    fd = M.mma_sync(fa, fb, fc, "m16n16k16")
    d = M.store_matrix_sync(np.zeros(256, np.float32), fd, ld=16).reshape(16, 16)
    assert np.array_equal(d, M.mma(a, b, c, "m16n16k16"))
    # the same per-element arithmetic as two m16n8k16 instructions
    left = M.mma(a, b[:, :8], c[:, :8])
    assert np.array_equal(np.asarray(d)[:, :8], left)
