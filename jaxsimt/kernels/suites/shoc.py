"""Host drivers for jaxsimt/kernels/suites/shoc.cu (after SHOC's CUDA level-1 host code): each case launches its
kernels as SHOC's host does, on small inputs, and returns (outputs, numpy reference)."""
from __future__ import annotations

import numpy as np

from . import rand

PTX = "shoc.ptx"
I32, U32, F32, F64 = np.int32, np.uint32, np.float32, np.float64


def triad(be):
    """Triad: 4096 floats, blocks of 128 (SHOC's smallest block size)."""
    n = 4096
    a, b = rand(100, n), rand(101, n)
    bc = be.array(np.zeros(n, F32))
    be.launch("triad", n // 128, 128, [be.array(a), be.array(b), bc, F32(1.75)])
    return {"C": be.get(bc)}, {"C": (a.astype(F64) + 1.75 * b.astype(F64)).astype(F32)}


def reduction(be):
    """Reduction: 8 blocks of 256 over 8192 floats (two loads per thread), then 1 block over the 8 sums."""
    n, blocks = 8192, 8
    x = rand(102, n)
    bx, bs, bt = be.array(x), be.array(np.zeros(blocks, F32)), be.array(np.zeros(1, F32))
    be.launch("shoc_reduce_256", blocks, 256, [bx, bs, U32(n)], smem=256 * 4)
    # the second pass reads pairs: pad the 8 block sums to 512 with zeros, as a buffer of the block size
    bpad = be.array(np.concatenate([be.get(bs), np.zeros(512 - blocks, F32)]))
    be.launch("shoc_reduce_256", 1, 256, [bpad, bt, U32(blocks)], smem=256 * 4)
    return ({"block_sums": be.get(bs), "sum": be.get(bt)},
            {"block_sums": _block_sums(x, blocks), "sum": np.array([x.astype(F64).sum()], F32)})


def _block_sums(x, blocks):
    n = x.size
    i = np.arange(n // 2)
    # thread t of block b reads x[b*512 + t + k*gridSize] and x[... + 256] for k = 0, 1, ...
    pos = (i // 256) * 512 + (i % 256)
    blk = (pos // 512) % blocks
    s = np.bincount(blk, weights=x[pos].astype(F64) + x[pos + 256].astype(F64), minlength=blocks)
    return s.astype(F32)


def scan(be):
    """Scan: reduce (4 blocks of 256), scan_single_block over the 4 sums, bottom_scan with float4 loads
    over 8192 floats."""
    n, blocks = 8192, 4
    x = rand(103, n)
    bx, bs, bo = be.array(x), be.array(np.zeros(blocks, F32)), be.array(np.zeros(n, F32))
    be.launch("scan_reduce", blocks, 256, [bx, bs, I32(n)])
    sums = be.get(bs)
    be.launch("scan_single_block", 1, 256, [bs, I32(blocks)])
    be.launch("bottom_scan", blocks, 256, [bx, bs, bo, I32(n)])
    return {"block_sums": sums, "out": be.get(bo)}, {
        "block_sums": x.astype(F64).reshape(blocks, -1).sum(axis=1).astype(F32),
        "out": np.cumsum(x.astype(F64)).astype(F32)}


def _csr(dim, seed):
    g = np.random.default_rng(seed)
    rows = [np.sort(g.choice(dim, g.integers(1, 48), replace=False)) for _ in range(dim)]
    delim = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(I32)
    cols = np.concatenate(rows).astype(I32)
    val = g.uniform(-1, 1, cols.size).astype(F32)
    return val, cols, delim


def spmv(be):
    """SpMV CSR: 256 rows (1 to 47 non-zeros), the scalar kernel (blocks of 128) and the vector kernel
    (a warp per row, blocks of 128)."""
    dim = 256
    val, cols, delim = _csr(dim, 104)
    v = rand(105, dim)
    bv, bc, bd, bx = be.array(val), be.array(cols), be.array(delim), be.array(v)
    b1, b2 = be.array(np.zeros(dim, F32)), be.array(np.zeros(dim, F32))
    be.launch("spmv_csr_scalar_kernel", dim // 128, 128, [bv, bc, bd, bx, I32(dim), b1])
    be.launch("spmv_csr_vector_kernel", dim // 4, 128, [bv, bc, bd, bx, I32(dim), b2])
    ref = np.array([(val[delim[r]:delim[r + 1]].astype(F64) * v[cols[delim[r]:delim[r + 1]]]).sum()
                    for r in range(dim)], F32)
    return {"scalar": be.get(b1), "vector": be.get(b2)}, {"scalar": ref, "vector": ref}


def md(be):
    """MD: Lennard-Jones forces of 1024 atoms, 16 neighbours each (neighbour-major list), blocks of 256."""
    n, neigh = 1024, 16
    g = np.random.default_rng(106)
    pos = np.zeros((n, 4), F32)
    pos[:, :3] = g.uniform(0, 10, (n, 3)).astype(F32)
    d2 = ((pos[:, None, :3].astype(F64) - pos[None, :, :3]) ** 2).sum(axis=2)
    np.fill_diagonal(d2, np.inf)
    nl = np.argsort(d2, axis=1)[:, :neigh].astype(I32)  # nearest neighbours
    cutsq, lj1, lj2 = F32(16.0), F32(1.5), F32(2.0)
    bf = be.array(np.zeros(n * 4, F32))
    be.launch("compute_lj_force", n // 256, 256, [bf, be.array(pos.reshape(-1)), I32(neigh),
                                                  be.array(nl.T.reshape(-1).copy()), cutsq, lj1, lj2, I32(n)])
    p = pos[:, :3].astype(F64)
    dl = p[:, None, :] - p[nl]
    r2 = (dl ** 2).sum(axis=2)
    inv = np.where(r2 < 16.0, 1 / r2, 0)
    r6 = inv ** 3
    fc = inv * r6 * (1.5 * r6 - 2.0)
    f = np.zeros((n, 4))
    f[:, :3] = (dl * fc[:, :, None]).sum(axis=1)
    return {"force": be.get(bf)}, {"force": f.astype(F32).reshape(-1)}


CASE_FUNCS = {"triad": triad, "reduction": reduction, "scan": scan, "spmv": spmv, "md": md}
CASES = tuple(CASE_FUNCS)
TOLERANCE = {"triad": 1e-6, "reduction": 1e-5, "scan": 1e-4, "spmv": 1e-5, "md": 1e-4}


def run(be, case):
    """(outputs, reference) of `case` on backend `be`."""
    return CASE_FUNCS[case](be)
