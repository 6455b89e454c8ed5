"""The real-CUDA corpus (jaxsimt/kernels/cuda/real_cuda.cu, PTX jaxsimt/kernels/ptx/real_cuda.ptx): fixed inputs and the
host code of each case, written once against a small backend interface so that the H200 (CuPy, running
the same PTX) and jaxsimt run exactly the same launches. numpy only: the H200 side loads this file by path.

A backend provides:
    array(a) -> buffer            a device buffer holding a copy of numpy array `a`
    at(buffer, offset) -> arg     a pointer argument `offset` elements into `buffer`
    launch(name, grid, block, args, smem=0)   args: buffers, at(...) pointers, numpy scalars; smem: bytes of
                                  dynamic shared memory
    get(buffer) -> numpy array    the buffer's current contents
    set_constant(symbol, a)       cudaMemcpyToSymbol of numpy array `a` into module variable `symbol`

`run(backend, case)` returns the case's outputs {name: numpy array}; `CASES` lists the cases. Keys of the
fixture file are "<case>.<output>".
"""
from __future__ import annotations

import numpy as np

CASES = ("bfs", "div_uniform", "gauss_f32", "gauss_step_f32", "gauss_step_f64", "axpy_alias", "shift_add",
         "const_poly")


def _graph(n=600, degree=3, seed=0):
    """A random directed graph in CSR form, with a ring so every node is reachable."""
    g = np.random.default_rng(seed)
    rows = [np.concatenate([[(v + 1) % n], g.integers(0, n, g.integers(0, degree + 1))]) for v in range(n)]
    row = np.zeros(n + 1, np.int32)
    row[1:] = np.cumsum([len(r) for r in rows])
    return row, np.concatenate(rows).astype(np.int32)


def _bfs(be):
    n = 600
    row, col = _graph(n)
    frontier = np.zeros(n, np.bool_)
    visited = np.zeros(n, np.bool_)
    cost = np.full(n, -1, np.int32)
    frontier[0] = visited[0] = True
    cost[0] = 0
    b_row, b_col = be.array(row), be.array(col)
    b_front, b_upd, b_vis = be.array(frontier), be.array(np.zeros(n, np.bool_)), be.array(visited)
    b_cost, b_done = be.array(cost), be.array(np.zeros(1, np.bool_))
    grid, block = (n + 127) // 128, 128
    levels = 0
    for _ in range(n):
        b_done = be.array(np.zeros(1, np.bool_))
        be.launch("bfs_expand", grid, block, [b_row, b_col, b_front, b_upd, b_vis, b_cost, np.int32(n)])
        be.launch("bfs_update", grid, block, [b_front, b_upd, b_vis, b_done, np.int32(n)])
        levels += 1
        if not be.get(b_done)[0]:
            break
    return {"cost": be.get(b_cost), "visited": be.get(b_vis), "levels": np.array([levels], np.int32)}


def _div_uniform(be):
    n = 1024
    x = np.random.default_rng(1).uniform(-8, 8, n).astype(np.float32)
    bx, by, bz, bw = be.array(x), *(be.array(np.zeros(n, np.float32)) for _ in range(3))
    be.launch("div_uniform", 8, 128, [bx, by, bz, bw, np.float32(7.3), np.int32(n)])
    return {"y": be.get(by), "z": be.get(bz), "w": be.get(bw)}


def _dominant(n, seed, dtype):
    g = np.random.default_rng(seed)
    a = g.uniform(-1, 1, (n, n)) + np.eye(n) * n
    return a.astype(dtype), g.uniform(-1, 1, n).astype(dtype)


def _gauss_f32(be):
    """Forward elimination of an 8x8 system (Fan1 then Fan2 for every step t)."""
    n = 8
    a, b = _dominant(n, 2, np.float32)
    ba, bb, bm = be.array(a.reshape(-1)), be.array(b), be.array(np.zeros(n * n, np.float32))
    for t in range(n - 1):
        be.launch("gauss_fan1", 1, 64, [ba, bm, np.int32(n), np.int32(t)])
        be.launch("gauss_fan2", (1, 1), (8, 8), [bm, ba, bb, np.int32(n), np.int32(t)])
    return {"a": be.get(ba), "b": be.get(bb), "m": be.get(bm)}


def _gauss_step(be, dtype, kernel, seed):
    """One Fan2 step (t = 0) on a 64x64 system with given multipliers: 4032 contracted updates."""
    n = 64
    a, b = _dominant(n, seed, dtype)
    m = np.random.default_rng(seed + 1).uniform(-1, 1, (n, n)).astype(dtype)
    ba, bb, bm = be.array(a.reshape(-1)), be.array(b), be.array(m.reshape(-1))
    be.launch(kernel, (4, 4), (16, 16), [bm, ba, bb, np.int32(n), np.int32(0)])
    return {"a": be.get(ba), "b": be.get(bb)}


def _axpy_alias(be):
    """y = a*x; y += x with x and y the same buffer: 2 a x (a x + x if they were two buffers)."""
    n = 1000
    x = np.random.default_rng(3).uniform(-1, 1, n).astype(np.float32)
    bx = be.array(x)
    be.launch("axpy_alias", 8, 128, [np.float32(0.3), bx, bx, np.int32(n)])
    return {"x": be.get(bx)}


def _shift_add(be):
    """p[i] += q[i] for p 37 elements into a buffer of 1100 (the rest of the buffer untouched)."""
    g = np.random.default_rng(4)
    buf = g.uniform(-1, 1, 1100).astype(np.float32)
    q = g.uniform(-1, 1, 1000).astype(np.float32)
    bbuf, bq = be.array(buf), be.array(q)
    be.launch("shift_add", 8, 128, [be.at(bbuf, 37), bq, np.int32(1000)])
    return {"buf": be.get(bbuf)}


def _const_poly(be):
    n = 1024
    x = np.random.default_rng(5).uniform(-2, 2, n).astype(np.float32)
    be.set_constant("coef", np.array([0.5, -1.25, 0.75, 0.125], np.float32))
    bx, by = be.array(x), be.array(np.zeros(n, np.float32))
    be.launch("const_poly", 8, 128, [bx, by, np.int32(n)])
    return {"y": be.get(by)}


_RUN = {"bfs": _bfs, "div_uniform": _div_uniform, "gauss_f32": _gauss_f32,
        "gauss_step_f32": lambda be: _gauss_step(be, np.float32, "gauss_fan2", 6),
        "gauss_step_f64": lambda be: _gauss_step(be, np.float64, "gauss_fan2_f64", 7),
        "axpy_alias": _axpy_alias, "shift_add": _shift_add, "const_poly": _const_poly}


def run(backend, case: str) -> dict:
    """The outputs of `case` run on `backend`."""
    return _RUN[case](backend)


def run_all(backend) -> dict:
    """Every case's outputs as one flat {"<case>.<output>": array} mapping (the fixture's layout)."""
    out = {}
    for case in CASES:
        for k, v in run(backend, case).items():
            out[f"{case}.{k}"] = np.asarray(v)
    return out


class JaxsimtBackend:
    """The backend on jaxsimt: buffers are host numpy arrays, each launch is one `jaxsimt.ptx.launch` of
    the committed PTX whose buffers are written back from the result (`result[name]` of a pointer
    parameter is the whole buffer it points into). regs_of: {kernel: registers per thread} passed as
    `regs=` (ptxas's count, for occupancy); other keywords go to every launch."""

    def __init__(self, ptx_path=None, regs_of=None, **launch_kwargs):
        import os
        import time

        import jaxsimt.ptx as P
        self.time = time
        self.P = P
        self.ptx = ptx_path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "ptx", "real_cuda.ptx")
        self.module = P.load_module(self.ptx)
        self.constants: dict = {}
        self.kw = launch_kwargs
        self.regs_of = dict(regs_of or {})  # {kernel: registers per thread} (ptxas's report) for occupancy
        self.launches: list = []  # (kernel, stats) of every launch so far, in order
        self.findings: list = []  # the sanitizer's findings of every launch so far (launches with check=)
        self.seconds: list = []  # wall seconds of each of those launches (compilation included)

    def array(self, a):
        return np.array(a)

    def at(self, buf, offset):
        return (buf, offset)

    def set_constant(self, symbol, a):
        self.constants[symbol] = np.array(a)

    def get(self, buf):
        return buf.copy()

    def launch_kwargs(self, name) -> dict:
        """The keywords of `name`'s `jaxsimt.ptx.launch`: the backend's, its registers, the constants set."""
        kw = dict(self.kw)
        if name in self.regs_of:
            kw.setdefault("regs", self.regs_of[name])
        if self.constants:
            kw["constants"] = dict(self.constants)
        return kw

    def launch(self, name, grid, block, args, smem=0):
        kw = self.launch_kwargs(name)
        t0 = self.time.perf_counter()
        res = self.P.launch(self.ptx, name, grid, block, list(args), dynamic_smem=int(smem), **kw)
        self.seconds.append(self.time.perf_counter() - t0)
        self.launches.append((name, res.stats))
        self.findings.extend(res.findings)
        names = [p.name for p in self.module.function(name).params]
        for pname, a in zip(names, args):
            buf = a[0] if isinstance(a, tuple) else a
            if isinstance(buf, np.ndarray):
                buf[...] = res[pname].reshape(buf.shape)


def agreement(fixture, outputs) -> dict:
    """{"<case>.<output>": (bit-equal elements, elements)} of `outputs` against the fixture's arrays."""
    out = {}
    for k, want in fixture.items():
        got = outputs.get(k)
        if got is None or np.asarray(got).shape != want.shape:
            out[k] = (0, int(want.size))
            continue
        w = want.view(np.uint8).reshape(want.size, -1)
        g = np.ascontiguousarray(np.asarray(got, want.dtype)).view(np.uint8).reshape(want.size, -1)
        out[k] = (int(np.all(w == g, axis=1).sum()), int(want.size))
    return out
