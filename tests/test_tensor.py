"""DSL Tensor Core instructions (jaxsimt.tensor) and the WMMA GEMM rung: against the H200 fixture's WMMA
tiles, against jaxsimt.units.mma composed tile by tile, PTX-style mma_sync + ldmatrix, and the warp-sync fault."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f16, f32, s32
from jaxsimt.units import mma as M
from jaxsimt.kernels import wmma_gemm
from jaxsimt.units.mma import fixture


@js.kernel(name="wmma_tile")
def wmma_tile(A: Ptr[f16], B: Ptr[f16], C: Ptr[f32], D: Ptr[f32]):
    """One warp per 16x16x16 tile: D = A B + C, all row-major in global memory."""
    t = js.blockIdx.x
    a = js.wmma.fragment("a", "m16n16k16", f16)
    b = js.wmma.fragment("b", "m16n16k16", f16)
    c = js.wmma.fragment("accumulator", "m16n16k16", f32)
    js.wmma.load_matrix_sync(a, A, t * 256, 16)
    js.wmma.load_matrix_sync(b, B, t * 256, 16)
    js.wmma.load_matrix_sync(c, C, t * 256, 16, "row")
    js.wmma.mma_sync(c, a, b, c)
    js.wmma.store_matrix_sync(D, t * 256, c, 16, "row")


@pytest.mark.skipif(not fixture.exists(), reason="no MMA fixture")
def test_wmma_kernel_reproduces_h200_tiles():
    ts = fixture.load()["wmma_m16n16k16_f16_f32"]
    hard = slice(2000, None)
    a, b, c, d = ts.a[hard], ts.b[hard], ts.c[hard], ts.d[hard]
    n = a.shape[0]
    out = np.zeros(n * 256, np.float32)
    res = js.launch(wmma_tile, n, 32, [a.reshape(-1).view(np.float16), b.reshape(-1).view(np.float16),
                                       c.reshape(-1).view(np.float32), out], blocks_per_wave=n, counters=False)
    got = res.outputs["D"].view(np.uint32).reshape(n, 16, 16)
    bad = fixture.mismatched_tiles(fixture.TruthSet(ts.meta, a, b, c, d, ts.category[hard]), got)
    assert not bad.any(), f"{bad.sum()} of {n} hard tiles differ"


def test_wmma_gemm_equals_composed_primitive():
    rng = np.random.default_rng(3)
    m, n, k = 40, 36, 40  # edges: zero fill in A, B and bounds-checked C
    a = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(-6, 6, (m, k))).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c, res = wmma_gemm.run(a, b, blocks_per_wave=4, counters=False)
    # the same arithmetic: per 16x16 tile of C, wmma m16n16k16 in k order from a zero accumulator
    mp, np_, kp = 48, 48, 48
    ap = np.zeros((mp, kp), np.float16); ap[:m, :k] = a
    bp = np.zeros((kp, np_), np.float16); bp[:k, :n] = b
    at = ap.reshape(3, 16, 3, 16).transpose(0, 2, 1, 3)  # [tile row, k step, 16, 16]
    bt = bp.reshape(3, 16, 3, 16).transpose(0, 2, 1, 3)  # [k step, tile col, 16, 16]
    acc = np.zeros((3, 3, 16, 16), np.float32)
    for s in range(3):
        acc = np.asarray(M.mma(at[:, s][:, None], bt[s][None, :], acc, "m16n16k16"))
    want = acc.transpose(0, 2, 1, 3).reshape(mp, np_)[:m, :n]
    assert np.array_equal(c.view(np.uint32), want.view(np.uint32))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


@js.kernel(name="ldmatrix_mma")
def ldmatrix_mma(A: Ptr[f16], B: Ptr[f16], C: Ptr[f32], bidx: Ptr[s32], cidx: Ptr[s32], D: Ptr[f32]):
    """A (16x16) staged in shared memory and read with ldmatrix.x4; B and C fragments from global with
    per-lane element indices (the PTX layouts, computed on the host); mma.sync m16n8k16; D stored back."""
    As = js.shared(256, f16, "As")
    lane = js.laneid()
    for i in range(8):
        As[lane * 8 + i] = A[lane * 8 + i]
    js.syncthreads()
    # lanes 8j..8j+7 give the rows of matrix j: matrices (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15)
    j, r = lane >> 3, lane & 7
    a = js.ldmatrix(As, (r + (j & 1) * 8) * 16 + (j >> 1) * 8, num=4)
    b = [B[bidx[lane * 4 + i]] for i in range(4)]
    c = [C[cidx[lane * 4 + i]] for i in range(4)]
    d = js.mma_sync(a, b, c, "m16n8k16")
    for i in range(4):
        D[cidx[lane * 4 + i]] = d[i]


def test_ldmatrix_and_mma_sync():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    lb, lc = M.fragment_layout("m16n8k16", "b", "f16"), M.fragment_layout("m16n8k16", "c", "f16")
    bidx = (lb[..., 0] * 8 + lb[..., 1]).astype(np.int32).reshape(-1)
    cidx = (lc[..., 0] * 8 + lc[..., 1]).astype(np.int32).reshape(-1)
    out = np.zeros(128, np.float32)
    res = js.launch(ldmatrix_mma, 1, 32, [a.reshape(-1), b.reshape(-1), c.reshape(-1), bidx, cidx, out])
    want = np.asarray(M.mma(a, b, c, "m16n8k16"))
    assert np.array_equal(res.outputs["D"].reshape(16, 8).view(np.uint32), want.view(np.uint32))
    assert res.stats["smsp__inst_executed_pipe_tensor.sum"] == 1
    assert res.stats["emulator__tensor_flops"] == 2 * 16 * 8 * 16


@js.kernel(name="wmma_divergent")
def wmma_divergent(A: Ptr[f16], D: Ptr[f32]):
    n = A[0]
    a = js.wmma.fragment("a", "m16n16k16", f16)
    b = js.wmma.fragment("b", "m16n16k16", f16)
    c = js.wmma.fragment("accumulator", "m16n16k16", f32)
    js.wmma.fill_fragment(a, 1.0)
    js.wmma.fill_fragment(b, 1.0)
    js.wmma.fill_fragment(c, 0.0)
    with js.if_(js.laneid() < n.astype(s32)):  # A[0] = 16: half the warp; 32: all of it
        js.wmma.mma_sync(c, a, b, c)
    js.wmma.store_matrix_sync(D, 0, c, 16, "row")


def test_wmma_counts_and_divergent_fault():
    # converged: two tensor instructions (HMMA.16816 halves), 2 m n k flops
    res = js.launch(wmma_divergent, 1, 32, [np.full(1, 32, np.float16), np.zeros(256, np.float32)])
    assert np.all(res.outputs["D"] == 16)
    assert res.stats["smsp__inst_executed_pipe_tensor.sum"] == 2
    assert res.stats["emulator__tensor_flops"] == 2 * 16 * 16 * 16
    with pytest.raises(js.WarpSyncError, match="wmma_divergent"):
        js.launch(wmma_divergent, 1, 32, [np.full(1, 16, np.float16), np.zeros(256, np.float32)])
