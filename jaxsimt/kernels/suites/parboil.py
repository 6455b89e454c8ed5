"""Host drivers for jaxsimt/kernels/suites/parboil.cu (after Parboil's CUDA host code): each case launches its kernels
as Parboil's host does, on small inputs, and returns (outputs, numpy reference)."""
from __future__ import annotations

import numpy as np

from . import rand

PTX = "parboil.ptx"
I32, F32, F64 = np.int32, np.float32, np.float64


def sgemm(be):
    """mysgemmNT: C (256 x 64, column-major) = A (256 x 64) B^T (B 64 x 64), grid (2, 4) of 16 x 8 threads."""
    m, n, k = 256, 64, 64
    alpha, beta = F32(1.0), F32(0.5)
    a, b, c = rand(90, (k, m)), rand(91, (k, n)), rand(92, (n, m))  # column-major: a[kk, row]
    ba, bb, bc = be.array(a.reshape(-1)), be.array(b.reshape(-1)), be.array(c.reshape(-1))
    be.launch("mysgemmNT", (m // 128, n // 16), (16, 8), [ba, I32(m), bb, I32(n), bc, I32(m), I32(k), alpha, beta])
    ref = c.astype(F64) * 0.5 + (a.astype(F64).T @ b.astype(F64)).T
    return {"C": be.get(bc)}, {"C": ref.astype(F32).reshape(-1)}


def stencil(be):
    """naive_kernel: 7-point stencil on 34 x 18 x 18, 3 iterations, blocks of 32 x 4 x 1."""
    nx, ny, nz, iters = 34, 18, 18, 3
    c0, c1 = F32(1.0 / 6.0), F32(1.0 / 6.0 / 6.0)
    a = rand(93, (nz, ny, nx))
    bufs = [be.array(a.reshape(-1)), be.array(a.reshape(-1).copy())]
    for t in range(iters):
        be.launch("naive_kernel", ((nx - 2) // 32, (ny - 2) // 4, nz - 2), (32, 4, 1),
                  [c0, c1, bufs[t % 2], bufs[1 - t % 2], I32(nx), I32(ny), I32(nz)])
    A, B = a.astype(F64), a.astype(F64).copy()
    for _ in range(iters):
        B[1:-1, 1:-1, 1:-1] = float(c1) * (A[2:, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1] + A[1:-1, 2:, 1:-1]
                                          + A[1:-1, :-2, 1:-1] + A[1:-1, 1:-1, 2:] + A[1:-1, 1:-1, :-2]) \
            - A[1:-1, 1:-1, 1:-1] * float(c0)
        A, B = B, A
    return {"A": be.get(bufs[iters % 2])}, {"A": A.astype(F32).reshape(-1)}


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


def spmv(be):
    """spmv_jds_naive: 512 x 512 sparse matrix (1 to 16 non-zeros per row), blocks of 128."""
    dim = 512
    g = np.random.default_rng(94)
    dense = np.zeros((dim, dim), F32)
    for r in range(dim):
        cols = g.choice(dim, g.integers(1, 17), replace=False)
        dense[r, cols] = g.uniform(-1, 1, cols.size).astype(F32)
    x = rand(95, dim)
    data, index, perm, ptr, zc = _jds(dense)
    bo = be.array(np.zeros(dim, F32))
    be.launch("spmv_jds_naive", dim // 128, 128, [bo, be.array(data), be.array(index), be.array(perm), be.array(x),
                                                   I32(dim), be.array(ptr), be.array(zc)])
    return {"y": be.get(bo)}, {"y": (dense.astype(F64) @ x.astype(F64)).astype(F32)}


def mri_q(be):
    """mri-q: ComputePhiMag_GPU over 64 samples, then ComputeQ_GPU for 1024 voxels (one chunk of samples
    in __constant__ ck)."""
    nk, nx = 64, 1024
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
    arg = 2 * np.pi * (np.outer(x, kx) + np.outer(y, ky) + np.outer(z, kz)).astype(F64)
    m64 = (pr.astype(F64) ** 2 + pi.astype(F64) ** 2)
    return ({"phiMag": mag, "Qr": be.get(bqr), "Qi": be.get(bqi)},
            {"phiMag": m64.astype(F32), "Qr": (np.cos(arg) @ m64).astype(F32), "Qi": (np.sin(arg) @ m64).astype(F32)})


CASE_FUNCS = {"sgemm": sgemm, "stencil": stencil, "spmv": spmv, "mri-q": mri_q}
CASES = tuple(CASE_FUNCS)
TOLERANCE = {"sgemm": 1e-5, "stencil": 1e-5, "spmv": 1e-5, "mri-q": 1e-4}


def run(be, case):
    """(outputs, reference) of `case` on backend `be`."""
    return CASE_FUNCS[case](be)
