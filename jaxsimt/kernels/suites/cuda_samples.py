"""Host drivers for jaxsimt/kernels/suites/cuda_samples.cu (after NVIDIA's CUDA samples): each case launches its
kernels as the sample's host code does, on small inputs, and returns (outputs, numpy reference)."""
from __future__ import annotations

import numpy as np

from . import rand, randint

PTX = "cuda_samples.ptx"
U32, I32, F32 = np.uint32, np.int32, np.float32


def vector_add(be):
    n = 1000
    a, b = rand(1, n), rand(2, n)
    ba, bb, bc = be.array(a), be.array(b), be.array(np.zeros(n, F32))
    be.launch("vectorAdd", (n + 255) // 256, 256, [ba, bb, bc, I32(n)])
    return {"C": be.get(bc)}, {"C": a + b}


def _matrix_mul(be, bs):
    n = 64
    a, b = rand(3, (n, n)), rand(4, (n, n))
    bc, ba, bb = be.array(np.zeros(n * n, F32)), be.array(a.reshape(-1)), be.array(b.reshape(-1))
    be.launch(f"matrixMul_bs{bs}", (n // bs, n // bs), (bs, bs), [bc, ba, bb, I32(n), I32(n)])
    return {"C": be.get(bc)}, {"C": (a.astype(np.float64) @ b).astype(F32).reshape(-1)}


def transpose(be):
    """The transpose sample's kernels in turn on one 64 x 64 matrix (tiles 32 x 32, blocks 32 x 8)."""
    w = h = 64
    x = rand(5, (h, w))
    bi = be.array(x.reshape(-1))
    out, ref = {}, {}
    for name in ("copySharedMem", "transposeNaive", "transposeCoalesced", "transposeNoBankConflicts"):
        bo = be.array(np.zeros(w * h, F32))
        be.launch(name, (w // 32, h // 32), (32, 8), [bo, bi, I32(w), I32(h)])
        out[name] = be.get(bo)
        ref[name] = (x if name == "copySharedMem" else x.T).reshape(-1)
    return out, ref


def _block_sums(x, per_block):
    return x.reshape(-1, per_block).sum(axis=1, dtype=np.int64).astype(I32)


def reduction(be):
    """reduce0..reduce6 of the reduction sample on 4096 ints (256 threads, one partial sum per block)."""
    n = 4096
    x = randint(6, n, -1000, 1000)
    bx = be.array(x)
    out, ref = {}, {}
    for name, grid, per in (("reduce0", 16, 256), ("reduce1", 16, 256), ("reduce2", 16, 256), ("reduce3", 8, 512),
                            ("reduce4", 8, 512), ("reduce5_256", 8, 512)):
        bo = be.array(np.zeros(grid, I32))
        be.launch(name, grid, 256, [bx, bo, U32(n)], smem=256 * 4)
        out[name], ref[name] = be.get(bo), _block_sums(x, per)
    # reduce6: 4 blocks of 128 threads, grid-stride over n (a power of two) and over n = 3000
    for name, m in (("reduce6_128_pow2", n), ("reduce6_128", 3000)):
        bo = be.array(np.zeros(4, I32))
        be.launch(name, 4, 128, [bx, bo, U32(m)], smem=128 * 4)
        out[name] = be.get(bo)
        idx = np.arange(m)
        blk = (idx // 256) % 4 if name.endswith("pow2") else (idx // 128) % 4
        ref[name] = np.bincount(blk, weights=x[:m].astype(np.float64), minlength=4).astype(I32)
    return out, ref


def reduction_shfl(be):
    """reduce7 (warp shuffles under the active mask): 4 blocks of 256 over 3000 floats."""
    n = 3000
    x = rand(7, n)
    bx, bo = be.array(x), be.array(np.zeros(4, F32))
    be.launch("reduce7_shfl", 4, 256, [bx, bo, U32(n)], smem=8 * 4)
    blk = (np.arange(n) // 256) % 4
    return {"sums": be.get(bo)}, {"sums": np.bincount(blk, weights=x, minlength=4).astype(F32)}


def reduction_cg(be):
    """cg::reduce over 32-thread tiles (redux.sync): 4 blocks of 128 over 2500 ints."""
    n = 2500
    x = randint(8, n, -1000, 1000)
    bx, bo = be.array(x), be.array(np.zeros(4, I32))
    be.launch("reduce_cg", 4, 128, [bx, bo, U32(n)])
    blk = (np.arange(n) // 128) % 4
    return {"sums": be.get(bo)}, {"sums": np.bincount(blk, weights=x, minlength=4).astype(I32)}


def shfl_scan(be):
    """The shfl_scan sample: 32 blocks of 256 scanned, the 32 block totals scanned by one warp, added back."""
    n, bs = 8192, 256
    x = randint(9, n, 0, 100)
    grid = n // bs
    bd, bp = be.array(x), be.array(np.zeros(grid, I32))
    be.launch("shfl_scan_test", grid, bs, [bd, I32(32), bp], smem=(bs // 32) * 4)
    be.launch("shfl_scan_test", 1, grid, [bp, I32(32), np.uint64(0)], smem=(grid // 32) * 4)
    be.launch("uniform_add", grid - 1, bs, [be.at(bd, bs), bp, I32(n)])
    return {"data": be.get(bd)}, {"data": np.cumsum(x).astype(I32)}


def histogram256(be):
    """histogram256: 8 partial histograms (blocks of 6 warps, per-warp shared sub-histograms), merged."""
    words, parts = 4096, 8
    d = np.random.default_rng(10).integers(0, 2**32, words, dtype=np.uint64).astype(U32)
    bd, bp, bh = be.array(d), be.array(np.zeros(parts * 256, U32)), be.array(np.zeros(256, U32))
    be.launch("histogram256Kernel", parts, 192, [bp, bd, U32(words)])
    be.launch("mergeHistogram256Kernel", 256, 256, [bh, bp, U32(parts)])
    return {"hist": be.get(bh)}, {"hist": np.bincount(d.view(np.uint8), minlength=256).astype(U32)}


def _keys(seed, n):
    return np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint64).astype(U32)


def bitonic_shared(be):
    """bitonicSort for arrays that fit in shared memory: 2 arrays of 1024 pairs, one launch."""
    n, batch = 1024, 2
    k, v = _keys(11, n * batch), np.arange(n * batch, dtype=U32)
    bk, bv = be.array(k), be.array(v)
    be.launch("bitonicSortShared", batch * n // 1024, 512, [bk, bv, bk, bv, U32(n), U32(1)])
    keys = be.get(bk)
    return {"keys": keys}, {"keys": np.sort(k.reshape(batch, n), axis=1).reshape(-1)}


def bitonic(be):
    """bitonicSort of 4096 pairs: shared sorts of 1024, then global and shared merges (6 launches)."""
    n, lim = 4096, 1024
    k, v = _keys(12, n), np.arange(n, dtype=U32)
    sk, sv = be.array(k), be.array(v)
    dk, dv = be.array(np.zeros(n, U32)), be.array(np.zeros(n, U32))
    blocks, threads = n // lim, lim // 2
    be.launch("bitonicSortShared1", blocks, threads, [dk, dv, sk, sv])
    size = 2 * lim
    while size <= n:
        stride = size // 2
        while stride > 0:
            if stride >= lim:
                be.launch("bitonicMergeGlobal", n // 512, 256, [dk, dv, dk, dv, U32(n), U32(size), U32(stride), U32(1)])
            else:
                be.launch("bitonicMergeShared", blocks, threads, [dk, dv, dk, dv, U32(n), U32(size), U32(1)])
                break
            stride >>= 1
        size <<= 1
    keys, vals = be.get(dk), be.get(dv)
    return {"keys": keys, "vals": vals}, {"keys": np.sort(k), "vals": np.argsort(k, kind="stable").astype(U32)}


def convolution_separable(be):
    """Rows then columns of a 128 x 64 image with a 17-tap filter in __constant__ c_Kernel."""
    w, h, r = 128, 64, 8
    img, kern = rand(13, (h, w)), rand(14, 2 * r + 1, 0, 1)
    be.set_constant("c_Kernel", kern)
    bi, bt, bo = be.array(img.reshape(-1)), be.array(np.zeros(w * h, F32)), be.array(np.zeros(w * h, F32))
    be.launch("convolutionRowsKernel", (w // (8 * 16), h // 4), (16, 4), [bt, bi, I32(w), I32(h), I32(w)])
    be.launch("convolutionColumnsKernel", (w // 16, h // (8 * 8)), (16, 8), [bo, bt, I32(w), I32(h), I32(w)])
    k64, x = kern.astype(np.float64), img.astype(np.float64)
    pad = np.pad(x, ((0, 0), (r, r)))
    rows = sum(k64[r - j] * pad[:, r + j:r + j + w] for j in range(-r, r + 1))
    pad = np.pad(rows, ((r, r), (0, 0)))
    cols = sum(k64[r - j] * pad[r + j:r + j + h, :] for j in range(-r, r + 1))
    return {"rows": be.get(bt), "out": be.get(bo)}, {"rows": rows.astype(F32).reshape(-1),
                                                     "out": cols.astype(F32).reshape(-1)}


def atomic_intrinsics(be):
    """simpleAtomicIntrinsics: 4 blocks of 64 threads, each atomic once per thread."""
    blocks, threads = 4, 64
    init = np.array([0, 0, -5, 1 << 30, 0, 0, -1, 0, 0xFF], I32)
    bo = be.array(init)
    be.launch("atomicIntrinsics", blocks, threads, [bo])
    t = np.arange(blocks * threads)
    n = t.size
    and_v = np.int64(-1)
    for v in 2 * t + 7:
        and_v &= v
    xor_v = 0xFF
    for v in t:
        xor_v ^= int(v)
    want = np.array([10 * n, -10 * n, t.max(), 0, n % 18, (138 - n % 138) % 138, and_v, 0xFFFFFFFF, xor_v],
                    np.int64).astype(np.uint32).view(I32)
    return {"odata": be.get(bo)}, {"odata": want}


def vote(be):
    """simpleVoteIntrinsics: any and all over a pattern of 4 warps, then the any/all flags of 2 warps."""
    warp, groups = 32, 4
    n = warp * groups
    pattern = np.zeros(n, U32)
    pattern[:warp // 2] = 0  # warp 0: none set
    pattern[warp:2 * warp] = 1  # warp 1: all set
    pattern[2 * warp + 3] = 1  # warp 2: one set
    pattern[3 * warp:3 * warp + 20] = 7  # warp 3: 20 of 32 set
    bi, b1, b2 = be.array(pattern), be.array(np.zeros(n, U32)), be.array(np.zeros(n, U32))
    be.launch("VoteAnyKernel1", 1, n, [bi, b1, I32(n)])
    be.launch("VoteAllKernel2", 1, n, [bi, b2, I32(n)])
    info = be.array(np.zeros(3 * 2 * warp, np.bool_))
    be.launch("VoteAnyKernel3", 1, 2 * warp, [info, I32(warp)])
    w = pattern.reshape(groups, warp) != 0
    anyv = np.repeat(w.any(axis=1), warp).astype(U32)
    allv = np.repeat(w.all(axis=1), warp).astype(U32)
    tx = np.arange(2 * warp)
    cond = tx >= warp * 3 // 2
    ref_info = np.stack([np.repeat(cond.reshape(2, warp).any(axis=1), warp), cond,
                         np.repeat(cond.reshape(2, warp).all(axis=1), warp)], axis=1).reshape(-1)
    return {"any": be.get(b1), "all": be.get(b2), "info": be.get(info)}, {"any": anyv, "all": allv, "info": ref_info}


def scalar_prod(be):
    """scalarProd: 8 dot products of 1024 elements, grid 4 x 256 threads (blocks loop over vectors)."""
    vn, en = 8, 1024
    a, b = rand(15, vn * en), rand(16, vn * en)
    bc, ba, bb = be.array(np.zeros(vn, F32)), be.array(a), be.array(b)
    be.launch("scalarProdGPU", 4, 256, [bc, ba, bb, I32(vn), I32(en)])
    ref = (a.astype(np.float64) * b).reshape(vn, en).sum(axis=1).astype(F32)
    return {"C": be.get(bc)}, {"C": ref}


def black_scholes(be):
    """BlackScholes: 1024 options, two per thread (float2), grid 4 x 128."""
    n, r, v = 1024, 0.02, 0.30
    g = np.random.default_rng(17)
    s, x, t = (g.uniform(lo, hi, n).astype(F32) for lo, hi in ((5, 30), (1, 100), (0.25, 10)))
    bcall, bput = be.array(np.zeros(n, F32)), be.array(np.zeros(n, F32))
    bs, bx, bt = be.array(s), be.array(x), be.array(t)
    be.launch("BlackScholesGPU", (n // 2 + 127) // 128, 128, [bcall, bput, bs, bx, bt, F32(r), F32(v), I32(n)])
    s64, x64, t64 = s.astype(np.float64), x.astype(np.float64), t.astype(np.float64)

    def cnd(d):
        k = 1 / (1 + 0.2316419 * np.abs(d))
        c = 0.39894228040143267 * np.exp(-0.5 * d * d) * (
            k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))))
        return np.where(d > 0, 1 - c, c)

    d1 = (np.log(s64 / x64) + (r + 0.5 * v * v) * t64) / (v * np.sqrt(t64))
    d2 = d1 - v * np.sqrt(t64)
    e = np.exp(-r * t64)
    call = s64 * cnd(d1) - x64 * e * cnd(d2)
    put = x64 * e * (1 - cnd(d2)) - s64 * (1 - cnd(d1))
    return {"call": be.get(bcall), "put": be.get(bput)}, {"call": call.astype(F32), "put": put.astype(F32)}


def cg_tiles(be):
    """simpleCooperativeGroups: 2 blocks of 64, tiles of 16 threads sum their ranks (0 + ... + 15 = 120)."""
    bo = be.array(np.full(128, -7, I32))
    be.launch("cgkernel", 2, 64, [bo], smem=64 * 4)
    want = np.full(128, -7, I32)
    for b in range(2):
        want[b * 64:b * 64 + 4] = 120
    return {"out": be.get(bo)}, {"out": want}


def warp_aggregated_atomics(be):
    """warpAggregatedAtomicsCG's filter: positive elements of 4096 compacted (8 blocks of 256, grid-stride);
    the order of the output depends on the hardware's atomics, so the host sorts it."""
    n = 4096
    src = randint(18, n, -500, 500)
    bd, bn, bs = be.array(np.zeros(n, I32)), be.array(np.zeros(1, I32)), be.array(src)
    be.launch("filter_arr", 8, 256, [bd, bn, bs, I32(n)])
    count = int(be.get(bn)[0])
    kept = np.sort(be.get(bd)[:count])
    pos = src[src > 0]
    return {"count": np.array([count], I32), "kept": kept}, {"count": np.array([pos.size], I32), "kept": np.sort(pos)}


def _fwt_gpu(be, buf, m, log2n):
    n = 1 << log2n
    grid = ((1 << log2n) // (4 * 256), m)
    while log2n > 11:
        be.launch("fwtBatch2Kernel", grid, 256, [buf, buf, I32(n // 4)])
        log2n, n, m = log2n - 2, n >> 2, m << 2
    be.launch("fwtBatch1Kernel", m, n // 4, [buf, buf, I32(log2n)], smem=n * 4)


def _fwt_ref(x):
    x = x.astype(np.float64).copy()
    h = 1
    while h < x.size:
        x = x.reshape(-1, 2, h)
        x = np.stack([x[:, 0] + x[:, 1], x[:, 0] - x[:, 1]], axis=1).reshape(-1)
        h *= 2
    return x


def fast_walsh_transform(be):
    """fastWalshTransform: dyadic convolution of 4096 samples with a 4096-tap kernel by two transforms,
    a pointwise product and a third transform (7 launches)."""
    log2n = 12
    n = 1 << log2n
    d, k = rand(19, n), rand(20, n)
    bd, bk = be.array(d), be.array(k)
    _fwt_gpu(be, bd, 1, log2n)
    _fwt_gpu(be, bk, 1, log2n)
    be.launch("modulateKernel", 4, 256, [bd, bk, I32(n)])
    _fwt_gpu(be, bd, 1, log2n)
    ref = _fwt_ref(_fwt_ref(d) * _fwt_ref(k) / n)
    return {"data": be.get(bd)}, {"data": ref.astype(F32)}


CASE_FUNCS = {
    "vectorAdd": vector_add,
    "matrixMul_bs16": lambda be: _matrix_mul(be, 16),
    "matrixMul_bs32": lambda be: _matrix_mul(be, 32),
    "transpose": transpose,
    "reduction": reduction,
    "reduction_shfl": reduction_shfl,
    "reduction_cg": reduction_cg,
    "shfl_scan": shfl_scan,
    "histogram256": histogram256,
    "bitonic_shared": bitonic_shared,
    "bitonic": bitonic,
    "convolutionSeparable": convolution_separable,
    "simpleAtomicIntrinsics": atomic_intrinsics,
    "simpleVoteIntrinsics": vote,
    "scalarProd": scalar_prod,
    "BlackScholes": black_scholes,
    "simpleCooperativeGroups": cg_tiles,
    "warpAggregatedAtomicsCG": warp_aggregated_atomics,
    "fastWalshTransform": fast_walsh_transform,
}
CASES = tuple(CASE_FUNCS)
TOLERANCE = {"matrixMul_bs16": 1e-5, "matrixMul_bs32": 1e-5, "reduction_shfl": 1e-5, "convolutionSeparable": 1e-5,
             "scalarProd": 1e-5, "BlackScholes": 1e-4, "fastWalshTransform": 1e-5}


def run(be, case):
    """(outputs, reference) of `case` on backend `be`."""
    return CASE_FUNCS[case](be)
