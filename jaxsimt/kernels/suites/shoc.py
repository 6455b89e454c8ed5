"""Host drivers for jaxsimt/kernels/suites/shoc.cu (after SHOC's CUDA level-1 host code): each case launches its
kernels as SHOC's host does, on small inputs by default (its keyword arguments: the size), and returns
(outputs, numpy reference as a function)."""
from __future__ import annotations

import numpy as np

from . import rand, run_case

PTX = "shoc.ptx"
I32, U32, F32, F64 = np.int32, np.uint32, np.float32, np.float64


def triad(be, n=4096):
    """Triad: n floats (a multiple of 128), blocks of 128 (SHOC's smallest block size)."""
    a, b = rand(100, n), rand(101, n)
    bc = be.array(np.zeros(n, F32))
    be.launch("triad", n // 128, 128, [be.array(a), be.array(b), bc, F32(1.75)])
    return {"C": be.get(bc)}, lambda: {"C": (a.astype(F64) + 1.75 * b.astype(F64)).astype(F32)}


def reduction(be, n=8192, blocks=8):
    """Reduction: `blocks` blocks of 256 (at most 512) over n floats (two loads per thread, grid-stride), then
    1 block over the block sums."""
    x = rand(102, n)
    bx, bs, bt = be.array(x), be.array(np.zeros(blocks, F32)), be.array(np.zeros(1, F32))
    be.launch("shoc_reduce_256", blocks, 256, [bx, bs, U32(n)], smem=256 * 4)
    # the second pass reads pairs: pad the 8 block sums to 512 with zeros, as a buffer of the block size
    bpad = be.array(np.concatenate([be.get(bs), np.zeros(512 - blocks, F32)]))
    be.launch("shoc_reduce_256", 1, 256, [bpad, bt, U32(blocks)], smem=256 * 4)
    return ({"block_sums": be.get(bs), "sum": be.get(bt)},
            lambda: {"block_sums": _block_sums(x, blocks), "sum": np.array([x.astype(F64).sum()], F32)})


def _block_sums(x, blocks):
    n = x.size
    i = np.arange(n // 2)
    # thread t of block b reads x[b*512 + t + k*gridSize] and x[... + 256] for k = 0, 1, ...
    pos = (i // 256) * 512 + (i % 256)
    blk = (pos // 512) % blocks
    s = np.bincount(blk, weights=x[pos].astype(F64) + x[pos + 256].astype(F64), minlength=blocks)
    return s.astype(F32)


def scan(be, n=8192, blocks=4):
    """Scan: reduce (`blocks` blocks of 256, at most 256), scan_single_block over the block sums, bottom_scan
    with float4 loads over n floats."""
    x = rand(103, n)
    bx, bs, bo = be.array(x), be.array(np.zeros(blocks, F32)), be.array(np.zeros(n, F32))
    be.launch("scan_reduce", blocks, 256, [bx, bs, I32(n)])
    sums = be.get(bs)
    be.launch("scan_single_block", 1, 256, [bs, I32(blocks)])
    be.launch("bottom_scan", blocks, 256, [bx, bs, bo, I32(n)])
    return {"block_sums": sums, "out": be.get(bo)}, lambda: {
        "block_sums": x.astype(F64).reshape(blocks, -1).sum(axis=1).astype(F32),
        "out": np.cumsum(x.astype(F64)).astype(F32)}


def _csr(dim, seed):
    g = np.random.default_rng(seed)
    rows = [np.sort(g.choice(dim, g.integers(1, 48), replace=False)) for _ in range(dim)]
    delim = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(I32)
    cols = np.concatenate(rows).astype(I32)
    val = g.uniform(-1, 1, cols.size).astype(F32)
    return val, cols, delim


def _csr_bulk(dim, seed):
    """A CSR matrix like `_csr`'s (1 to 47 non-zeros a row, columns sorted in a row) drawn a whole array at
    a time: the large matrices, for which `_csr`'s row-by-row draws (kept for the default matrix of the
    committed fixtures) would take seconds. A column may repeat in a row (its values add)."""
    g = np.random.default_rng(seed)
    counts = g.integers(1, 48, dim)
    delim = np.concatenate([[0], np.cumsum(counts)]).astype(I32)
    rows = np.repeat(np.arange(dim, dtype=np.int64), counts)
    key = np.sort(rows * dim + g.integers(0, dim, rows.size))  # (row, column) in order: columns sorted in a row
    return g.uniform(-1, 1, key.size).astype(F32), (key % dim).astype(I32), delim


def spmv(be, dim=256, bulk=False):
    """SpMV CSR: dim rows (a multiple of 128; 1 to 47 non-zeros, bulk: drawn by `_csr_bulk`), the scalar
    kernel (blocks of 128) and the vector kernel (a warp per row, blocks of 128)."""
    val, cols, delim = (_csr_bulk if bulk else _csr)(dim, 104)
    v = rand(105, dim)
    bv, bc, bd, bx = be.array(val), be.array(cols), be.array(delim), be.array(v)
    b1, b2 = be.array(np.zeros(dim, F32)), be.array(np.zeros(dim, F32))
    be.launch("spmv_csr_scalar_kernel", dim // 128, 128, [bv, bc, bd, bx, I32(dim), b1])
    be.launch("spmv_csr_vector_kernel", dim // 4, 128, [bv, bc, bd, bx, I32(dim), b2])

    def reference():
        if bulk:
            rows = np.repeat(np.arange(dim), np.diff(delim))
            ref = np.bincount(rows, weights=val.astype(F64) * v[cols], minlength=dim).astype(F32)
        else:
            ref = np.array([(val[delim[r]:delim[r + 1]].astype(F64) * v[cols[delim[r]:delim[r + 1]]]).sum()
                            for r in range(dim)], F32)
        return {"scalar": ref, "vector": ref}
    return {"scalar": be.get(b1), "vector": be.get(b2)}, reference


# The large MD system: atoms at the points of a cubic lattice of unit spacing (about the default's density
# of 1024 atoms in a 10^3 box), each moved by up to LATTICE_JITTER along each axis
LATTICE_JITTER = 0.1
LATTICE_REACH = 3  # neighbours are searched among the lattice offsets up to this many points along each axis


def _md_lattice(n, neigh, seed):
    """(positions as float4, neighbour list [atom, k]) of n atoms (a cube) on a jittered cubic lattice, each
    atom's neighbours the `neigh` nearest lattice offsets (wrapping at the lattice's faces, so an atom
    there gets far neighbours, beyond the cutoff): a neighbour list without the default's all-pairs
    distances."""
    side = round(n ** (1 / 3))
    assert side ** 3 == n, "the lattice needs a cube number of atoms"
    g = np.random.default_rng(seed)
    ijk = np.stack(np.unravel_index(np.arange(n), (side, side, side)), axis=1)
    pos = np.zeros((n, 4), F32)
    pos[:, :3] = (ijk + g.uniform(-LATTICE_JITTER, LATTICE_JITTER, (n, 3))).astype(F32)
    r = np.arange(-LATTICE_REACH, LATTICE_REACH + 1)
    off = np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)
    off = off[np.any(off != 0, axis=1)]
    off = off[np.argsort((off ** 2).sum(axis=1), kind="stable")][:neigh]
    nbr = (ijk[:, None, :] + off[None]) % side
    nl = np.ravel_multi_index((nbr[..., 0], nbr[..., 1], nbr[..., 2]), (side, side, side)).astype(I32)
    return pos, nl


def md(be, n=1024, neigh=16, lattice=False):
    """MD: Lennard-Jones forces of n atoms (a multiple of 256), `neigh` neighbours each (neighbour-major
    list), blocks of 256; by default random positions in a 10^3 box with each atom's nearest neighbours,
    with `lattice` the system of `_md_lattice`."""
    if lattice:
        pos, nl = _md_lattice(n, neigh, 106)
    else:
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

    def reference():
        p = pos[:, :3].astype(F64)
        dl = p[:, None, :] - p[nl]
        r2 = (dl ** 2).sum(axis=2)
        inv = np.where(r2 < 16.0, 1 / r2, 0)
        r6 = inv ** 3
        fc = inv * r6 * (1.5 * r6 - 2.0)
        f = np.zeros((n, 4))
        f[:, :3] = (dl * fc[:, :, None]).sum(axis=1)
        return {"force": f.astype(F32).reshape(-1)}
    return {"force": be.get(bf)}, reference


CASE_FUNCS = {"triad": triad, "reduction": reduction, "scan": scan, "spmv": spmv, "md": md}
CASES = tuple(CASE_FUNCS)
TOLERANCE = {"triad": 1e-6, "reduction": 1e-5, "scan": 1e-4, "spmv": 1e-5, "md": 1e-4}


# Timing sizes (jaxsimt/kernels/suites/__init__.py): SHOC's level-1 sizes (its largest 64 MiB problem and 64 blocks
# for reduction and scan, MD's 128 neighbours).
TIMING = {
    "triad": {"n": 1 << 25},  # 3 x 128 MiB streamed
    "reduction": {"n": 1 << 24, "blocks": 64},
    "scan": {"n": 1 << 24, "blocks": 64},
    "spmv": {"dim": 1 << 18, "bulk": True},  # 24 non-zeros a row on average
    "md": {"n": 40 ** 3, "neigh": 128, "lattice": True},  # 64000 atoms
}
TIMING_NO_REFERENCE = frozenset()


def run(be, case, size=None, reference=True):
    """(outputs, reference) of `case` on backend `be` at `size` (None: the default size)."""
    return run_case(CASE_FUNCS, be, case, size, reference)
