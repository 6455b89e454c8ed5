"""Host drivers for jaxsimt/kernels/suites/polybench.cu (after PolyBench/GPU's CUDA host code): each case launches its
kernels as PolyBench/GPU's host does (blocks of 32 x 8 for 2D kernels, 256 threads for 1D ones, one launch
per outer iteration where its host loops), on small inputs by default (its keyword arguments: the size), and
returns (outputs, numpy reference as a function)."""
from __future__ import annotations

import numpy as np

from . import rand, run_case

PTX = "polybench.ptx"
I32, F32, F64 = np.int32, np.float32, np.float64
BX, BY, B1 = 32, 8, 256


def _g2(nx, ny):
    """The 2D grid of PolyBench/GPU: ceil(nx / 32) x ceil(ny / 8)."""
    return (-(-nx // BX), -(-ny // BY))


def _g1(n):
    return -(-n // B1)


def _d(x):
    return x.astype(F64)


def gemm(be, n=64):
    ni = nj = nk = n
    alpha, beta = F32(32412.0), F32(2123.0)
    a, b, c = rand(40, (ni, nk)), rand(41, (nk, nj)), rand(42, (ni, nj))
    ba, bb, bc = be.array(a.reshape(-1)), be.array(b.reshape(-1)), be.array(c.reshape(-1))
    be.launch("gemm_kernel", _g2(nj, ni), (BX, BY), [ba, bb, bc, I32(ni), I32(nj), I32(nk), alpha, beta])
    return {"C": be.get(bc)}, lambda: {"C": (float(beta) * _d(c) + float(alpha) * _d(a) @ _d(b))
                                       .astype(F32).reshape(-1)}


def mm2(be, n=64):
    ni = nj = nk = nl = n
    a, b, c = rand(43, (ni, nk)), rand(44, (nk, nj)), rand(45, (nj, nl))
    ba, bb, bc = be.array(a.reshape(-1)), be.array(b.reshape(-1)), be.array(c.reshape(-1))
    btmp, be_ = be.array(np.zeros(ni * nj, F32)), be.array(np.zeros(ni * nl, F32))
    be.launch("mm2_kernel1", _g2(nj, ni), (BX, BY), [ba, bb, btmp, I32(ni), I32(nj), I32(nk)])
    be.launch("mm2_kernel2", _g2(nl, ni), (BX, BY), [btmp, bc, be_, I32(ni), I32(nj), I32(nl)])

    def reference():
        tmp = _d(a) @ _d(b)
        return {"tmp": tmp.astype(F32).reshape(-1), "E": (tmp @ _d(c)).astype(F32).reshape(-1)}
    return {"tmp": be.get(btmp), "E": be.get(be_)}, reference


def mm3(be, n=64):
    a, b, c, d = (rand(s, (n, n)) for s in (46, 47, 48, 49))
    ba, bb, bc, bd = (be.array(x.reshape(-1)) for x in (a, b, c, d))
    bE, bF, bG = (be.array(np.zeros(n * n, F32)) for _ in range(3))
    be.launch("mm3_kernel1", _g2(n, n), (BX, BY), [ba, bb, bE, I32(n), I32(n), I32(n)])
    be.launch("mm3_kernel2", _g2(n, n), (BX, BY), [bc, bd, bF, I32(n), I32(n), I32(n)])
    be.launch("mm3_kernel3", _g2(n, n), (BX, BY), [bE, bF, bG, I32(n), I32(n), I32(n)])
    return {"G": be.get(bG)}, lambda: {"G": ((_d(a) @ _d(b)) @ (_d(c) @ _d(d))).astype(F32).reshape(-1)}


def atax(be, nx=256, ny=320):
    a, x = rand(50, (nx, ny)), rand(51, ny)
    ba, bx = be.array(a.reshape(-1)), be.array(x)
    by, bt = be.array(np.zeros(ny, F32)), be.array(np.zeros(nx, F32))
    be.launch("atax_kernel1", _g1(nx), B1, [ba, bx, bt, I32(nx), I32(ny)])
    be.launch("atax_kernel2", _g1(ny), B1, [ba, by, bt, I32(nx), I32(ny)])
    return {"y": be.get(by)}, lambda: {"y": (_d(a).T @ (_d(a) @ _d(x))).astype(F32)}


def bicg(be, nx=256, ny=320):
    a, r, p = rand(52, (nx, ny)), rand(53, nx), rand(54, ny)
    ba, br, bp = be.array(a.reshape(-1)), be.array(r), be.array(p)
    bs, bq = be.array(np.ones(ny, F32)), be.array(np.ones(nx, F32))
    be.launch("bicg_kernel1", _g1(ny), B1, [ba, br, bs, I32(nx), I32(ny)])
    be.launch("bicg_kernel2", _g1(nx), B1, [ba, bp, bq, I32(nx), I32(ny)])
    return ({"s": be.get(bs), "q": be.get(bq)},
            lambda: {"s": (_d(r) @ _d(a)).astype(F32), "q": (_d(a) @ _d(p)).astype(F32)})


def mvt(be, n=512):
    a, y1, y2, x1, x2 = rand(55, (n, n)), rand(56, n), rand(57, n), rand(58, n), rand(59, n)
    ba, by1, by2, bx1, bx2 = (be.array(v.reshape(-1)) for v in (a, y1, y2, x1, x2))
    be.launch("mvt_kernel1", _g1(n), B1, [ba, bx1, by1, I32(n)])
    be.launch("mvt_kernel2", _g1(n), B1, [ba, bx2, by2, I32(n)])
    return ({"x1": be.get(bx1), "x2": be.get(bx2)},
            lambda: {"x1": (_d(x1) + _d(a) @ _d(y1)).astype(F32), "x2": (_d(x2) + _d(a).T @ _d(y2)).astype(F32)})


def gesummv(be, n=512):
    alpha, beta = F32(43532.0), F32(12313.0)
    a, b, x = rand(60, (n, n)), rand(61, (n, n)), rand(62, n)
    ba, bb, bx = be.array(a.reshape(-1)), be.array(b.reshape(-1)), be.array(x)
    by, bt = be.array(np.zeros(n, F32)), be.array(np.zeros(n, F32))
    be.launch("gesummv_kernel", _g1(n), B1, [ba, bb, bx, by, bt, I32(n), alpha, beta])
    return {"y": be.get(by)}, lambda: {"y": (float(alpha) * (_d(a) @ _d(x)) + float(beta) * (_d(b) @ _d(x)))
                                       .astype(F32)}


def syrk(be, n=64, m=64):
    alpha, beta = F32(12435.0), F32(4546.0)
    a, c = rand(63, (n, m)), rand(64, (n, n))
    ba, bc = be.array(a.reshape(-1)), be.array(c.reshape(-1))
    be.launch("syrk_kernel", _g2(n, n), (BX, BY), [alpha, beta, ba, bc, I32(n), I32(m)])
    return {"C": be.get(bc)}, lambda: {"C": (float(beta) * _d(c) + float(alpha) * _d(a) @ _d(a).T)
                                       .astype(F32).reshape(-1)}


def syr2k(be, n=64, m=64):
    alpha, beta = F32(12435.0), F32(4546.0)
    a, b, c = rand(65, (n, m)), rand(66, (n, m)), rand(67, (n, n))
    ba, bb, bc = be.array(a.reshape(-1)), be.array(b.reshape(-1)), be.array(c.reshape(-1))
    be.launch("syr2k_kernel", _g2(n, n), (BX, BY), [alpha, beta, ba, bb, bc, I32(n), I32(m)])

    def reference():
        ref = float(beta) * _d(c) + float(alpha) * (_d(a) @ _d(b).T + _d(b) @ _d(a).T)
        return {"C": ref.astype(F32).reshape(-1)}
    return {"C": be.get(bc)}, reference


def covariance(be, m=64, n=64):
    fn = F32(3214212.01)
    data = rand(68, (n, m), 0, 1)
    bd, bm, bs = be.array(data.reshape(-1)), be.array(np.zeros(m, F32)), be.array(np.zeros(m * m, F32))
    be.launch("covar_mean_kernel", _g1(m), B1, [bm, bd, I32(m), I32(n), fn])
    be.launch("covar_reduce_kernel", _g2(m, n), (BX, BY), [bm, bd, I32(m), I32(n)])
    be.launch("covar_kernel", _g1(m), B1, [bs, bd, I32(m), I32(n)])

    def reference():
        mean = _d(data).sum(axis=0) / float(fn)
        cen = _d(data) - mean
        return {"mean": mean.astype(F32), "symmat": (cen.T @ cen).astype(F32).reshape(-1)}
    return {"mean": be.get(bm), "symmat": be.get(bs)}, reference


def correlation(be, m=64, n=64):
    fn = 3214212.01
    data = rand(69, (n, m), 0, 1) * 3000
    bd, bm, bsd = be.array(data.reshape(-1)), be.array(np.zeros(m, F32)), be.array(np.zeros(m, F32))
    bsym = be.array(np.zeros(m * m, F32))
    be.launch("corr_mean_kernel", _g1(m), B1, [bm, bd, I32(m), I32(n)])
    be.launch("corr_std_kernel", _g1(m), B1, [bm, bsd, bd, I32(m), I32(n)])
    be.launch("corr_reduce_kernel", _g2(m, n), (BX, BY), [bm, bsd, bd, I32(m), I32(n)])
    be.launch("corr_kernel", _g1(m), B1, [bsym, bd, I32(m), I32(n)])
    sym = be.get(bsym).reshape(m, m)
    sym[m - 1, m - 1] = 1.0  # PolyBench/GPU's host sets the last diagonal element

    def reference():
        x = _d(data)
        mean = x.sum(axis=0) / fn
        std = np.sqrt(((x - mean) ** 2).sum(axis=0) / fn)
        std = np.where(std <= 0.005, 1.0, std)
        z = (x - mean) / (np.sqrt(fn) * std)
        ref = z.T @ z
        np.fill_diagonal(ref, 1.0)
        return {"mean": mean.astype(F32), "std": std.astype(F32), "symmat": ref.astype(F32).reshape(-1)}
    return {"mean": be.get(bm), "std": be.get(bsd), "symmat": sym.reshape(-1)}, reference


def conv2d(be, n=64):
    ni = nj = n
    a = rand(70, (ni, nj))
    ba, bb = be.array(a.reshape(-1)), be.array(np.zeros(ni * nj, F32))
    be.launch("Convolution2D_kernel", _g2(nj, ni), (BX, BY), [I32(ni), I32(nj), ba, bb])

    def reference():
        c = np.array([[0.2, -0.3, 0.4], [0.5, 0.6, 0.7], [-0.8, -0.9, 0.10]], F32)  # c[col offset][row offset]
        A = _d(a)
        ref = np.zeros((ni, nj))
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                ref[1:-1, 1:-1] += float(c[dj + 1, di + 1]) * A[1 + di:ni - 1 + di, 1 + dj:nj - 1 + dj]
        return {"B": ref.astype(F32).reshape(-1)}
    return {"B": be.get(bb)}, reference


def conv3d(be, ni=8, nj=32, nk=32):
    """convolution3D_kernel launched once per plane i = 1 .. NI-2 (PolyBench/GPU's host loop)."""
    a = rand(71, (ni, nj, nk))
    ba, bb = be.array(a.reshape(-1)), be.array(np.zeros(ni * nj * nk, F32))
    for i in range(1, ni - 1):
        be.launch("convolution3D_kernel", _g2(nk, nj), (BX, BY), [I32(ni), I32(nj), I32(nk), ba, bb, I32(i)])

    def reference():
        A = _d(a)
        ref = np.zeros((ni, nj, nk))
        I, J, K = slice(1, ni - 1), slice(1, nj - 1), slice(1, nk - 1)

        def at(di, dj, dk):
            return A[1 + di:ni - 1 + di, 1 + dj:nj - 1 + dj, 1 + dk:nk - 1 + dk]
        ref[I, J, K] = (2 * at(-1, -1, -1) + 4 * at(1, -1, -1) + 5 * at(-1, -1, -1) + 7 * at(1, -1, -1)
                        - 8 * at(-1, -1, -1) + 10 * at(1, -1, -1) - 3 * at(0, -1, 0) + 6 * at(0, 0, 0) - 9 * at(0, 1, 0)
                        + 2 * at(-1, -1, 1) + 4 * at(1, -1, 1) + 5 * at(-1, 0, 1) + 7 * at(1, 0, 1) - 8 * at(-1, 1, 1)
                        + 10 * at(1, 1, 1))
        return {"B": ref.astype(F32).reshape(-1)}
    return {"B": be.get(bb)}, reference


def fdtd2d(be, n=64, tmax=4):
    """fdtd-2d on n x n: `tmax` time steps of three launches each (12 launches at 4)."""
    nx = ny = n
    fict = rand(72, tmax)
    ex, ey, hz = rand(73, (nx, ny + 1)), rand(74, (nx + 1, ny)), rand(75, (nx, ny))
    bf, bex, bey, bhz = be.array(fict), be.array(ex.reshape(-1)), be.array(ey.reshape(-1)), be.array(hz.reshape(-1))
    for t in range(tmax):
        be.launch("fdtd_step1_kernel", _g2(ny, nx), (BX, BY), [bf, bex, bey, bhz, I32(t), I32(nx), I32(ny)])
        be.launch("fdtd_step2_kernel", _g2(ny, nx), (BX, BY), [bex, bey, bhz, I32(t), I32(nx), I32(ny)])
        be.launch("fdtd_step3_kernel", _g2(ny, nx), (BX, BY), [bex, bey, bhz, I32(t), I32(nx), I32(ny)])

    def reference():
        EX, EY, HZ = _d(ex), _d(ey), _d(hz)
        for t in range(tmax):
            EY[0, :] = fict[t]
            EY[1:nx, :] = EY[1:nx, :] - 0.5 * (HZ[1:, :] - HZ[:-1, :])
            EX[:, 1:ny] = EX[:, 1:ny] - 0.5 * (HZ[:, 1:] - HZ[:, :-1])
            HZ = HZ - 0.7 * (EX[:, 1:] - EX[:, :-1] + EY[1:, :] - EY[:-1, :])
        return {"ex": EX.astype(F32).reshape(-1), "ey": EY.astype(F32).reshape(-1), "hz": HZ.astype(F32).reshape(-1)}
    return {"ex": be.get(bex), "ey": be.get(bey), "hz": be.get(bhz)}, reference


def jacobi1d(be, n=1024, tsteps=8):
    """jacobi-1d-imper: `tsteps` time steps, two launches each (16 launches at 8)."""
    a, b = rand(76, n), rand(77, n)
    ba, bb = be.array(a), be.array(b)
    for _ in range(tsteps):
        be.launch("runJacobi1D_kernel1", _g1(n), B1, [ba, bb, I32(n)])
        be.launch("runJacobi1D_kernel2", _g1(n), B1, [ba, bb, I32(n)])

    def reference():
        A, B = _d(a), _d(b)
        for _ in range(tsteps):
            B[2:n - 1] = 0.33333 * (A[1:n - 2] + A[2:n - 1] + A[3:n])
            A[2:n - 1] = B[2:n - 1]
        return {"A": A.astype(F32)}
    return {"A": be.get(ba)}, reference


def jacobi2d(be, n=64, tsteps=4):
    """jacobi-2d-imper on n x n: `tsteps` time steps, two launches each (8 launches at 4)."""
    a, b = rand(78, (n, n)), rand(79, (n, n))
    ba, bb = be.array(a.reshape(-1)), be.array(b.reshape(-1))
    for _ in range(tsteps):
        be.launch("runJacobi2D_kernel1", _g2(n, n), (BX, BY), [I32(n), ba, bb])
        be.launch("runJacobi2D_kernel2", _g2(n, n), (BX, BY), [I32(n), ba, bb])

    def reference():
        A, B = _d(a), _d(b)
        for _ in range(tsteps):
            B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
            A[1:-1, 1:-1] = B[1:-1, 1:-1]
        return {"A": A.astype(F32).reshape(-1)}
    return {"A": be.get(ba)}, reference


def gramschmidt(be, m=64, n=16):
    """gramschmidt: QR of an m x n matrix, three launches per column (48 launches at 64 x 16)."""
    a = rand(80, (m, n))
    ba, br, bq = be.array(a.reshape(-1)), be.array(np.zeros(n * n, F32)), be.array(np.zeros(m * n, F32))
    for k in range(n):
        be.launch("gramschmidt_kernel1", 1, B1, [ba, br, bq, I32(k), I32(m), I32(n)])
        be.launch("gramschmidt_kernel2", _g1(m), B1, [ba, br, bq, I32(k), I32(m), I32(n)])
        be.launch("gramschmidt_kernel3", _g1(n), B1, [ba, br, bq, I32(k), I32(m), I32(n)])

    def reference():
        A = _d(a).copy()
        R, Q = np.zeros((n, n)), np.zeros((m, n))
        for k in range(n):
            R[k, k] = np.sqrt((A[:, k] ** 2).sum())
            Q[:, k] = A[:, k] / R[k, k]
            R[k, k + 1:] = Q[:, k] @ A[:, k + 1:]
            A[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])
        return {"Q": Q.astype(F32).reshape(-1), "R": R.astype(F32).reshape(-1)}
    return {"Q": be.get(bq), "R": be.get(br)}, reference


CASE_FUNCS = {
    "gemm": gemm, "2mm": mm2, "3mm": mm3, "atax": atax, "bicg": bicg, "mvt": mvt, "gesummv": gesummv,
    "syrk": syrk, "syr2k": syr2k, "covariance": covariance, "correlation": correlation, "2DConvolution": conv2d,
    "3DConvolution": conv3d, "fdtd-2d": fdtd2d, "jacobi1D": jacobi1d, "jacobi2D": jacobi2d,
    "gramschmidt": gramschmidt,
}
CASES = tuple(CASE_FUNCS)
TOLERANCE = {c: 1e-5 for c in CASES}
TOLERANCE.update({"correlation": 1e-4, "gramschmidt": 1e-4, "fdtd-2d": 1e-5, "covariance": 1e-5})


# Timing sizes (jaxsimt/kernels/suites/__init__.py): PolyBench/GPU's standard sizes where they run in milliseconds
# (the 2D and 1D kernels), smaller where one thread walks a whole matrix (covariance, correlation,
# gramschmidt), and fewer time steps where each is a launch.
TIMING = {
    "gemm": {"n": 1024}, "2mm": {"n": 1024}, "3mm": {"n": 1024},
    "atax": {"nx": 4096, "ny": 4096}, "bicg": {"nx": 4096, "ny": 4096}, "mvt": {"n": 4096}, "gesummv": {"n": 4096},
    "syrk": {"n": 1024, "m": 1024}, "syr2k": {"n": 1024, "m": 1024},
    "covariance": {"m": 512, "n": 512}, "correlation": {"m": 512, "n": 512},  # one thread a column, O(m^2 n)
    "2DConvolution": {"n": 5120},  # 100 MiB a matrix
    "3DConvolution": {"ni": 256, "nj": 256, "nk": 256},  # PolyBench/GPU's 256^3: 254 launches of a plane
    "fdtd-2d": {"n": 2048, "tmax": 10},  # 30 launches
    "jacobi1D": {"n": 1 << 22, "tsteps": 8},
    "jacobi2D": {"n": 2048, "tsteps": 10},
    "gramschmidt": {"m": 256, "n": 64},  # 192 launches
}
TIMING_NO_REFERENCE = frozenset()


def run(be, case, size=None, reference=True):
    """(outputs, reference) of `case` on backend `be` at `size` (None: the default size)."""
    return run_case(CASE_FUNCS, be, case, size, reference)
