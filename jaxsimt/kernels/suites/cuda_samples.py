"""Host drivers for jaxsimt/kernels/suites/cuda_samples.cu (after NVIDIA's CUDA samples): each case launches its
kernels as the sample's host code does, on small inputs by default (its keyword arguments: the size), and
returns (outputs, numpy reference as a function)."""
from __future__ import annotations

import numpy as np

from . import rand, randint, run_case

PTX = "cuda_samples.ptx"
U32, I32, F32 = np.uint32, np.int32, np.float32


def vector_add(be, n=1000):
    a, b = rand(1, n), rand(2, n)
    ba, bb, bc = be.array(a), be.array(b), be.array(np.zeros(n, F32))
    be.launch("vectorAdd", (n + 255) // 256, 256, [ba, bb, bc, I32(n)])
    return {"C": be.get(bc)}, lambda: {"C": a + b}


def _matrix_mul(be, bs, n=64):
    """C = A B of two n x n matrices (n a multiple of the tile side bs)."""
    a, b = rand(3, (n, n)), rand(4, (n, n))
    bc, ba, bb = be.array(np.zeros(n * n, F32)), be.array(a.reshape(-1)), be.array(b.reshape(-1))
    be.launch(f"matrixMul_bs{bs}", (n // bs, n // bs), (bs, bs), [bc, ba, bb, I32(n), I32(n)])
    return {"C": be.get(bc)}, lambda: {"C": (a.astype(np.float64) @ b).astype(F32).reshape(-1)}


_TRANSPOSE_KERNELS = ("copySharedMem", "transposeNaive", "transposeCoalesced", "transposeNoBankConflicts")


def transpose(be, side=64):
    """The transpose sample's kernels in turn on one side x side matrix (tiles 32 x 32, blocks 32 x 8)."""
    w = h = side
    x = rand(5, (h, w))
    bi = be.array(x.reshape(-1))
    out = {}
    for name in _TRANSPOSE_KERNELS:
        bo = be.array(np.zeros(w * h, F32))
        be.launch(name, (w // 32, h // 32), (32, 8), [bo, bi, I32(w), I32(h)])
        out[name] = be.get(bo)
    return out, lambda: {name: (x if name == "copySharedMem" else x.T).reshape(-1) for name in _TRANSPOSE_KERNELS}


def _block_sums(x, per_block):
    return x.reshape(-1, per_block).sum(axis=1, dtype=np.int64).astype(I32)


# (kernel, elements each thread adds while loading) of the reduction ladder's first six steps
_REDUCE_LADDER = (("reduce0", 1), ("reduce1", 1), ("reduce2", 1), ("reduce3", 2), ("reduce4", 2), ("reduce5_256", 2))


def reduction(be, n=4096, n_odd=3000, blocks6=4):
    """reduce0..reduce6 of the reduction sample on n ints (256 threads, one partial sum per block; reduce0-2
    one element per thread, reduce3-5 two), then reduce6 (blocks6 blocks of 128 threads, grid-stride) over
    all n (a power of two) and over the first n_odd (not a power of two)."""
    x = randint(6, n, -1000, 1000)
    bx = be.array(x)
    out = {}
    for name, per_thread in _REDUCE_LADDER:
        grid = n // (256 * per_thread)
        bo = be.array(np.zeros(grid, I32))
        be.launch(name, grid, 256, [bx, bo, U32(n)], smem=256 * 4)
        out[name] = be.get(bo)
    for name, m in (("reduce6_128_pow2", n), ("reduce6_128", n_odd)):
        bo = be.array(np.zeros(blocks6, I32))
        be.launch(name, blocks6, 128, [bx, bo, U32(m)], smem=128 * 4)
        out[name] = be.get(bo)

    def reference():
        ref = {name: _block_sums(x, 256 * per_thread) for name, per_thread in _REDUCE_LADDER}
        for name, m in (("reduce6_128_pow2", n), ("reduce6_128", n_odd)):
            idx = np.arange(m)
            blk = (idx // 256) % blocks6 if name.endswith("pow2") else (idx // 128) % blocks6
            ref[name] = np.bincount(blk, weights=x[:m].astype(np.float64), minlength=blocks6).astype(I32)
        return ref
    return out, reference


def reduction_shfl(be, n=3000, blocks=4):
    """reduce7 (warp shuffles under the active mask): blocks of 256 grid-striding over n floats."""
    x = rand(7, n)
    bx, bo = be.array(x), be.array(np.zeros(blocks, F32))
    be.launch("reduce7_shfl", blocks, 256, [bx, bo, U32(n)], smem=8 * 4)

    def reference():
        blk = (np.arange(n) // 256) % blocks  # the block that adds each element
        return {"sums": np.bincount(blk, weights=x, minlength=blocks).astype(F32)}
    return {"sums": be.get(bo)}, reference


def reduction_cg(be, n=2500, blocks=4):
    """cg::reduce over 32-thread tiles (redux.sync): blocks of 128 grid-striding over n ints."""
    x = randint(8, n, -1000, 1000)
    bx, bo = be.array(x), be.array(np.zeros(blocks, I32))
    be.launch("reduce_cg", blocks, 128, [bx, bo, U32(n)])

    def reference():
        blk = (np.arange(n) // 128) % blocks  # the block that adds each element
        return {"sums": np.bincount(blk, weights=x, minlength=blocks).astype(I32)}
    return {"sums": be.get(bo)}, reference


def shfl_scan(be, n=8192):
    """The shfl_scan sample: n / 256 blocks of 256 scanned, the block totals scanned by one block (at most
    1024 threads: n at most 2^18), added back."""
    bs = 256
    x = randint(9, n, 0, 100)
    grid = n // bs
    bd, bp = be.array(x), be.array(np.zeros(grid, I32))
    be.launch("shfl_scan_test", grid, bs, [bd, I32(32), bp], smem=(bs // 32) * 4)
    be.launch("shfl_scan_test", 1, grid, [bp, I32(32), np.uint64(0)], smem=(grid // 32) * 4)
    be.launch("uniform_add", grid - 1, bs, [be.at(bd, bs), bp, I32(n)])
    return {"data": be.get(bd)}, lambda: {"data": np.cumsum(x).astype(I32)}


def histogram256(be, words=4096, parts=8):
    """histogram256: `parts` partial histograms (blocks of 6 warps, per-warp shared sub-histograms) of
    `words` 32-bit words, merged."""
    d = np.random.default_rng(10).integers(0, 2**32, words, dtype=np.uint64).astype(U32)
    bd, bp, bh = be.array(d), be.array(np.zeros(parts * 256, U32)), be.array(np.zeros(256, U32))
    be.launch("histogram256Kernel", parts, 192, [bp, bd, U32(words)])
    be.launch("mergeHistogram256Kernel", 256, 256, [bh, bp, U32(parts)])
    return {"hist": be.get(bh)}, lambda: {"hist": np.bincount(d.view(np.uint8), minlength=256).astype(U32)}


def _keys(seed, n):
    return np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint64).astype(U32)


def bitonic_shared(be, n=1024, batch=2):
    """bitonicSort for arrays that fit in shared memory: `batch` arrays of n (at most 1024) pairs, one launch."""
    k, v = _keys(11, n * batch), np.arange(n * batch, dtype=U32)
    bk, bv = be.array(k), be.array(v)
    be.launch("bitonicSortShared", batch * n // 1024, 512, [bk, bv, bk, bv, U32(n), U32(1)])
    keys = be.get(bk)
    return {"keys": keys}, lambda: {"keys": np.sort(k.reshape(batch, n), axis=1).reshape(-1)}


def bitonic(be, n=4096):
    """bitonicSort of n pairs (a power of two): shared sorts of 1024, then for every larger size global
    merges down to 1024 and a shared merge (6 launches at 4096). The sort is not stable: the values'
    order is compared only where the keys are distinct."""
    lim = 1024
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

    def reference():
        ref = {"keys": np.sort(k)}
        if np.unique(k).size == n:
            ref["vals"] = np.argsort(k, kind="stable").astype(U32)
        return ref
    return {"keys": keys, "vals": vals}, reference


def convolution_separable(be, w=128, h=64):
    """Rows then columns of a w x h image (w a multiple of 128, h of 64) with a 17-tap filter in
    __constant__ c_Kernel."""
    r = 8
    img, kern = rand(13, (h, w)), rand(14, 2 * r + 1, 0, 1)
    be.set_constant("c_Kernel", kern)
    bi, bt, bo = be.array(img.reshape(-1)), be.array(np.zeros(w * h, F32)), be.array(np.zeros(w * h, F32))
    be.launch("convolutionRowsKernel", (w // (8 * 16), h // 4), (16, 4), [bt, bi, I32(w), I32(h), I32(w)])
    be.launch("convolutionColumnsKernel", (w // 16, h // (8 * 8)), (16, 8), [bo, bt, I32(w), I32(h), I32(w)])

    def reference():
        k64, x = kern.astype(np.float64), img.astype(np.float64)
        pad = np.pad(x, ((0, 0), (r, r)))
        rows = sum(k64[r - j] * pad[:, r + j:r + j + w] for j in range(-r, r + 1))
        pad = np.pad(rows, ((r, r), (0, 0)))
        cols = sum(k64[r - j] * pad[r + j:r + j + h, :] for j in range(-r, r + 1))
        return {"rows": rows.astype(F32).reshape(-1), "out": cols.astype(F32).reshape(-1)}
    return {"rows": be.get(bt), "out": be.get(bo)}, reference


def atomic_intrinsics(be, blocks=4, threads=64):
    """simpleAtomicIntrinsics: every thread applies each atomic once."""
    init = np.array([0, 0, -5, 1 << 30, 0, 0, -1, 0, 0xFF], I32)
    bo = be.array(init)
    be.launch("atomicIntrinsics", blocks, threads, [bo])

    def reference():
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
        return {"odata": want}
    return {"odata": be.get(bo)}, reference


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
    return ({"any": be.get(b1), "all": be.get(b2), "info": be.get(info)},
            lambda: {"any": anyv, "all": allv, "info": ref_info})


def scalar_prod(be, vn=8, en=1024, blocks=4):
    """scalarProd: vn dot products of en elements, blocks of 256 threads (blocks loop over vectors)."""
    a, b = rand(15, vn * en), rand(16, vn * en)
    bc, ba, bb = be.array(np.zeros(vn, F32)), be.array(a), be.array(b)
    be.launch("scalarProdGPU", blocks, 256, [bc, ba, bb, I32(vn), I32(en)])
    return {"C": be.get(bc)}, lambda: {"C": (a.astype(np.float64) * b).reshape(vn, en).sum(axis=1).astype(F32)}


def black_scholes(be, n=1024):
    """BlackScholes: n options, two per thread (float2), blocks of 128."""
    r, v = 0.02, 0.30
    g = np.random.default_rng(17)
    s, x, t = (g.uniform(lo, hi, n).astype(F32) for lo, hi in ((5, 30), (1, 100), (0.25, 10)))
    bcall, bput = be.array(np.zeros(n, F32)), be.array(np.zeros(n, F32))
    bs, bx, bt = be.array(s), be.array(x), be.array(t)
    be.launch("BlackScholesGPU", (n // 2 + 127) // 128, 128, [bcall, bput, bs, bx, bt, F32(r), F32(v), I32(n)])

    def cnd(d):
        k = 1 / (1 + 0.2316419 * np.abs(d))
        c = 0.39894228040143267 * np.exp(-0.5 * d * d) * (
            k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))))
        return np.where(d > 0, 1 - c, c)

    def reference():
        s64, x64, t64 = s.astype(np.float64), x.astype(np.float64), t.astype(np.float64)
        d1 = (np.log(s64 / x64) + (r + 0.5 * v * v) * t64) / (v * np.sqrt(t64))
        d2 = d1 - v * np.sqrt(t64)
        e = np.exp(-r * t64)
        call = s64 * cnd(d1) - x64 * e * cnd(d2)
        put = x64 * e * (1 - cnd(d2)) - s64 * (1 - cnd(d1))
        return {"call": call.astype(F32), "put": put.astype(F32)}
    return {"call": be.get(bcall), "put": be.get(bput)}, reference


def cg_tiles(be):
    """simpleCooperativeGroups: 2 blocks of 64, tiles of 16 threads sum their ranks (0 + ... + 15 = 120)."""
    bo = be.array(np.full(128, -7, I32))
    be.launch("cgkernel", 2, 64, [bo], smem=64 * 4)
    want = np.full(128, -7, I32)
    for b in range(2):
        want[b * 64:b * 64 + 4] = 120
    return {"out": be.get(bo)}, lambda: {"out": want}


def warp_aggregated_atomics(be, n=4096, blocks=8):
    """warpAggregatedAtomicsCG's filter: positive elements of n compacted (blocks of 256, grid-stride);
    the order of the output depends on the hardware's atomics, so the host sorts it."""
    src = randint(18, n, -500, 500)
    bd, bn, bs = be.array(np.zeros(n, I32)), be.array(np.zeros(1, I32)), be.array(src)
    be.launch("filter_arr", blocks, 256, [bd, bn, bs, I32(n)])
    count = int(be.get(bn)[0])
    kept = np.sort(be.get(bd)[:count])

    def reference():
        pos = src[src > 0]
        return {"count": np.array([pos.size], I32), "kept": np.sort(pos)}
    return {"count": np.array([count], I32), "kept": kept}, reference


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


def fast_walsh_transform(be, log2n=12, modulate_blocks=4):
    """fastWalshTransform: dyadic convolution of 2^log2n samples with a kernel as long by two transforms,
    a pointwise product (modulate_blocks blocks of 256, grid-stride) and a third transform (7 launches at
    2^12; each transform two radix-4 stages per global launch down to 2^11, then one shared launch)."""
    n = 1 << log2n
    d, k = rand(19, n), rand(20, n)
    bd, bk = be.array(d), be.array(k)
    _fwt_gpu(be, bd, 1, log2n)
    _fwt_gpu(be, bk, 1, log2n)
    be.launch("modulateKernel", modulate_blocks, 256, [bd, bk, I32(n)])
    _fwt_gpu(be, bd, 1, log2n)
    return {"data": be.get(bd)}, lambda: {"data": _fwt_ref(_fwt_ref(d) * _fwt_ref(k) / n).astype(F32)}


CASE_FUNCS = {
    "vectorAdd": vector_add,
    "matrixMul_bs16": lambda be, **size: _matrix_mul(be, 16, **size),
    "matrixMul_bs32": lambda be, **size: _matrix_mul(be, 32, **size),
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


# Timing sizes (jaxsimt/kernels/suites/__init__.py): the sample's own size where it runs long enough, else grown
# until the program's launches take tens of microseconds on an H200.
TIMING = {
    "vectorAdd": {"n": 1 << 25},  # 3 x 128 MiB streamed
    "matrixMul_bs16": {"n": 1024},
    "matrixMul_bs32": {"n": 1024},
    "transpose": {"side": 4096},  # 64 MiB a matrix: past the 50 MiB L2
    "reduction": {"n": 1 << 24, "n_odd": 12_000_000, "blocks6": 64},  # the sample's 16M ints, maxBlocks 64
    "reduction_shfl": {"n": 1 << 24, "blocks": 64},
    "reduction_cg": {"n": 1 << 24, "blocks": 64},
    # one block scans the block totals: at most 1024 blocks of 256 (the launch structure caps the size)
    "shfl_scan": {"n": 1 << 18},
    "histogram256": {"words": 1 << 24, "parts": 240},  # the sample's 64 MiB and 240 partial histograms
    "bitonic_shared": {"batch": 8192},  # 8192 arrays of 1024 pairs
    "bitonic": {"n": 1 << 20},  # the sample's N: 66 launches
    "convolutionSeparable": {"w": 4096, "h": 4096},  # 64 MiB an image (the sample's 3072^2 fits in L2 twice)
    "simpleAtomicIntrinsics": {"blocks": 1024, "threads": 256},
    "scalarProd": {"vn": 256, "en": 65536, "blocks": 128},  # the sample's 256 vectors and grid, longer vectors
    "BlackScholes": {"n": 1 << 24},
    "warpAggregatedAtomicsCG": {"n": 1 << 22, "blocks": (1 << 22) // 512},  # two elements per thread
    "fastWalshTransform": {"log2n": 21, "modulate_blocks": 128},  # the sample's modulate grid
}
# simpleVoteIntrinsics and simpleCooperativeGroups: fixed-size samples (one or two blocks of warp-level
# votes and tile reductions), kept at their size.
# BlackScholes's reference: float64 logarithms, exponentials and roots of 16M options take seconds
TIMING_NO_REFERENCE = frozenset({"BlackScholes"})


def run(be, case, size=None, reference=True):
    """(outputs, reference) of `case` on backend `be` at `size` (None: the default size)."""
    return run_case(CASE_FUNCS, be, case, size, reference)
