"""Host drivers for jaxsimt/kernels/suites/parboil.cu (after Parboil's CUDA host code): each case launches its kernels
as Parboil's host does, on small inputs by default (its keyword arguments: the size), and returns (outputs,
numpy reference as a function)."""
from __future__ import annotations

import numpy as np

from . import rand, run_case

PTX = "parboil.ptx"
I32, F32, F64 = np.int32, np.float32, np.float64


def sgemm(be, m=256, n=64, k=64):
    """mysgemmNT: C (m x n, column-major) = A (m x k) B^T (B n x k), a block of 16 x 8 threads per 128 x 16
    tile of C (m a multiple of 128, n of 16, k of 8): grid (2, 4) at 256 x 64 x 64."""
    alpha, beta = F32(1.0), F32(0.5)
    a, b, c = rand(90, (k, m)), rand(91, (k, n)), rand(92, (n, m))  # column-major: a[kk, row]
    ba, bb, bc = be.array(a.reshape(-1)), be.array(b.reshape(-1)), be.array(c.reshape(-1))
    be.launch("mysgemmNT", (m // 128, n // 16), (16, 8), [ba, I32(m), bb, I32(n), bc, I32(m), I32(k), alpha, beta])
    return {"C": be.get(bc)}, lambda: {"C": (c.astype(F64) * 0.5 + (a.astype(F64).T @ b.astype(F64)).T)
                                       .astype(F32).reshape(-1)}


def stencil(be, nx=34, ny=18, nz=18, iters=3):
    """naive_kernel: 7-point stencil on nx x ny x nz (interior sides multiples of 32, 4, 1), `iters`
    iterations (one launch each), blocks of 32 x 4 x 1."""
    c0, c1 = F32(1.0 / 6.0), F32(1.0 / 6.0 / 6.0)
    a = rand(93, (nz, ny, nx))
    bufs = [be.array(a.reshape(-1)), be.array(a.reshape(-1).copy())]
    for t in range(iters):
        be.launch("naive_kernel", ((nx - 2) // 32, (ny - 2) // 4, nz - 2), (32, 4, 1),
                  [c0, c1, bufs[t % 2], bufs[1 - t % 2], I32(nx), I32(ny), I32(nz)])

    def reference():
        A, B = a.astype(F64), a.astype(F64).copy()
        for _ in range(iters):
            B[1:-1, 1:-1, 1:-1] = float(c1) * (A[2:, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1] + A[1:-1, 2:, 1:-1]
                                              + A[1:-1, :-2, 1:-1] + A[1:-1, 1:-1, 2:] + A[1:-1, 1:-1, :-2]) \
                - A[1:-1, 1:-1, 1:-1] * float(c0)
            A, B = B, A
        return {"A": A.astype(F32).reshape(-1)}
    return {"A": be.get(bufs[iters % 2])}, reference


def _jds(dense):
    """Parboil's JDS layout of a dense matrix with zeros: rows sorted by non-zero count (perm), jagged
    diagonal k of the sorted rows at jds_ptr[k] (padded to dim), sh_zcnt = diagonals per group of 32 rows."""
    dim = dense.shape[0]
    nnz = (dense != 0).sum(axis=1)
    perm = np.argsort(-nnz, kind="stable").astype(I32)
    maxd = int(nnz.max())
    data, index = np.zeros((maxd, dim), F32), np.zeros((maxd, dim), I32)
    for r, row in enumerate(perm):
        cols = np.nonzero(dense[row])[0]
        data[:len(cols), r], index[:len(cols), r] = dense[row, cols], cols
    zc = np.array([nnz[perm[g:g + 32]].max() for g in range(0, dim, 32)], I32)
    return data.reshape(-1), index.reshape(-1), perm, (np.arange(maxd) * dim).astype(I32), zc


def _sparse_rows(dim, seed, most=16):
    """(row, column, value) of every non-zero of a dim x dim matrix with 1 to `most` non-zeros a row at random
    columns (a column may repeat in a row: its values add), drawn a whole array at a time: the large
    matrices, for which the default's row-by-row draws and dense matrix would take seconds and GiB."""
    g = np.random.default_rng(seed)
    counts = g.integers(1, most + 1, dim)
    rows = np.repeat(np.arange(dim), counts).astype(I32)
    return rows, g.integers(0, dim, rows.size).astype(I32), g.uniform(-1, 1, rows.size).astype(F32)


def _jds_sparse(rows, cols, vals, dim):
    """`_jds` of the matrix of (row, column, value) triples (rows in order): the same layout without a
    dense matrix."""
    nnz = np.bincount(rows, minlength=dim)
    perm = np.argsort(-nnz, kind="stable").astype(I32)
    maxd = int(nnz.max())
    rank = np.empty(dim, np.int64)
    rank[perm] = np.arange(dim)  # the sorted position of each row
    first = np.concatenate([[0], np.cumsum(nnz)[:-1]])
    k = np.arange(rows.size) - first[rows]  # each non-zero's place in its row: its jagged diagonal
    data, index = np.zeros((maxd, dim), F32), np.zeros((maxd, dim), I32)
    data[k, rank[rows]], index[k, rank[rows]] = vals, cols
    zc = nnz[perm].reshape(-1, 32).max(axis=1).astype(I32)
    return data.reshape(-1), index.reshape(-1), perm, (np.arange(maxd) * dim).astype(I32), zc


def spmv(be, dim=512, bulk=False):
    """spmv_jds_naive: dim x dim sparse matrix (1 to 16 non-zeros per row; bulk: drawn by `_sparse_rows`),
    blocks of 128."""
    if bulk:
        rows, cols, vals = _sparse_rows(dim, 94)
        data, index, perm, ptr, zc = _jds_sparse(rows, cols, vals, dim)
    else:
        g = np.random.default_rng(94)
        dense = np.zeros((dim, dim), F32)
        for r in range(dim):
            cols = g.choice(dim, g.integers(1, 17), replace=False)
            dense[r, cols] = g.uniform(-1, 1, cols.size).astype(F32)
        data, index, perm, ptr, zc = _jds(dense)
    x = rand(95, dim)
    bo = be.array(np.zeros(dim, F32))
    be.launch("spmv_jds_naive", dim // 128, 128, [bo, be.array(data), be.array(index), be.array(perm), be.array(x),
                                                   I32(dim), be.array(ptr), be.array(zc)])

    def reference():
        if bulk:
            y = np.bincount(rows, weights=vals.astype(F64) * x[cols].astype(F64), minlength=dim)
        else:
            y = dense.astype(F64) @ x.astype(F64)
        return {"y": y.astype(F32)}
    return {"y": be.get(bo)}, reference


def mri_q(be, nk=64, nx=1024):
    """mri-q: ComputePhiMag_GPU over nk samples, then ComputeQ_GPU for nx voxels (a multiple of 256) once per
    chunk of 1024 samples in __constant__ ck."""
    g = np.random.default_rng(96)
    kx, ky, kz = (g.uniform(-0.5, 0.5, nk).astype(F32) for _ in range(3))
    pr, pi = g.uniform(-1, 1, nk).astype(F32), g.uniform(-1, 1, nk).astype(F32)
    x, y, z = (g.uniform(-1, 1, nx).astype(F32) for _ in range(3))
    bmag = be.array(np.zeros(nk, F32))
    be.launch("ComputePhiMag_GPU", (nk + 255) // 256, 256, [be.array(pr), be.array(pi), bmag, I32(nk)])
    mag = be.get(bmag)
    kv = np.stack([kx, ky, kz, mag], axis=1).astype(F32)
    bqr, bqi = be.array(np.zeros(nx, F32)), be.array(np.zeros(nx, F32))
    bx, by, bz = be.array(x), be.array(y), be.array(z)
    for start in range(0, nk, 1024):
        be.set_constant("ck", kv[start:start + 1024].reshape(-1))
        be.launch("ComputeQ_GPU", nx // 256, 256, [I32(nk), I32(start), bx, by, bz, bqr, bqi])

    def reference():
        arg = 2 * np.pi * (np.outer(x, kx) + np.outer(y, ky) + np.outer(z, kz)).astype(F64)
        m64 = (pr.astype(F64) ** 2 + pi.astype(F64) ** 2)
        return {"phiMag": m64.astype(F32), "Qr": (np.cos(arg) @ m64).astype(F32), "Qi": (np.sin(arg) @ m64).astype(F32)}
    return {"phiMag": mag, "Qr": be.get(bqr), "Qi": be.get(bqi)}, reference


CASE_FUNCS = {"sgemm": sgemm, "stencil": stencil, "spmv": spmv, "mri-q": mri_q}
CASES = tuple(CASE_FUNCS)
TOLERANCE = {"sgemm": 1e-5, "stencil": 1e-5, "spmv": 1e-5, "mri-q": 1e-4}


# Timing sizes (jaxsimt/kernels/suites/__init__.py): Parboil's datasets' sizes (its default stencil grid, mri-q's
# large 64^3 voxels and 2048 samples) with fewer iterations.
TIMING = {
    "sgemm": {"m": 1024, "n": 1024, "k": 1024},
    "stencil": {"nx": 514, "ny": 514, "nz": 66, "iters": 3},  # a 512 x 512 x 64 interior
    "spmv": {"dim": 1 << 20, "bulk": True},  # 8.5 non-zeros a row on average
    "mri-q": {"nk": 2048, "nx": 1 << 18},  # two launches of ComputeQ_GPU
}
# mri-q's reference is a voxels x samples matrix of sines and cosines (4 GiB of float64 at timing size)
TIMING_NO_REFERENCE = frozenset({"mri-q"})


def run(be, case, size=None, reference=True):
    """(outputs, reference) of `case` on backend `be` at `size` (None: the default size)."""
    return run_case(CASE_FUNCS, be, case, size, reference)
