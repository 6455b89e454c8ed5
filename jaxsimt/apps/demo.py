"""`jaxsimt demo`: emulate the seeds' kernels on an architecture and print what the hardware would count.

Each kernel runs on random inputs, is checked against numpy, and its counters are printed side by side:
warp and thread instructions, SIMD efficiency, divergence, global requests and sectors, shared-memory
wavefronts and bank conflicts, occupancy.
"""
from __future__ import annotations

import json
import time

import numpy as np

from jaxsimt.run.command import ArgumentParser, add_arch, command
from jaxsimt.errors import UsageError


def _cases(n: int):
    from jaxsimt.kernels import seeds

    rng = np.random.default_rng(0)
    x, y = rng.random(n * n, np.float32), rng.random(n * n, np.float32)
    A, B = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    g = -(-n // 16)
    data = rng.integers(0, 1000, n * n).astype(np.int32)
    ref_mm = (A.astype(np.float64) @ B.astype(np.float64))
    return [
        ("saxpy", seeds.saxpy, -(-n * n // 256), 256, (n * n, np.float32(2.0), x, y.copy()),
         lambda r: np.array_equal(r["y"], np.float32(2.0) * x + y)),
        ("naive_matrix_multiply", seeds.naive_matrix_multiply, (g, g), (16, 16),
         (n, n, A, B, np.zeros((n, n), np.float32)), lambda r: np.allclose(r["C"], ref_mm, rtol=1e-4)),
        ("matmul_tiled", seeds.matmul_tiled, (g, g), (16, 16), (n, n, A, B, np.zeros((n, n), np.float32)),
         lambda r: np.allclose(r["C"], ref_mm, rtol=1e-4)),
        ("reduce_interleaved", seeds.reduce_interleaved, n * n // 256, 256, (x, np.zeros(n * n // 256, np.float32)),
         lambda r: np.allclose(r["out"], x.reshape(-1, 256).sum(1), rtol=1e-4)),
        ("reduce_sequential", seeds.reduce_sequential, n * n // 256, 256, (x, np.zeros(n * n // 256, np.float32)),
         lambda r: np.allclose(r["out"], x.reshape(-1, 256).sum(1), rtol=1e-4)),
        ("histogram", seeds.histogram, -(-n * n // 256), 256, (n * n, 16, data, np.zeros(16, np.uint32)),
         lambda r: np.array_equal(r["hist"], np.bincount(data % 16, minlength=16))),
    ]


COLUMNS = [
    ("warp inst", "smsp__inst_executed.sum"),
    ("SIMD eff", "simd_efficiency"),
    ("div.br", "smsp__sass_branch_targets_threads_divergent.sum"),
    ("gld req", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    ("gld sect", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    ("gst sect", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
    ("sld wavef", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("sld confl", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ("occupancy", "occupancy"),
]


MAX_SIZE = 1024  # N*N-element vectors and N x N matrices: beyond this the demo takes hours, not seconds


@command("demo")
def main(argv=None) -> int:
    ap = ArgumentParser(prog="jaxsimt demo", description=__doc__.splitlines()[0])
    add_arch(ap)
    ap.add_argument("--size", type=int, default=64, metavar="N",
                    help=f"matrix size N, 16 to {MAX_SIZE}, a multiple of 16 (vectors have N*N elements)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    # the reductions take blocks of 256 elements and the tiled kernels 16 x 16 tiles
    if not 16 <= args.size <= MAX_SIZE or args.size % 16:
        raise UsageError(f"--size {args.size}: must be a multiple of 16 from 16 to {MAX_SIZE}")

    import jaxsimt as js
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 150))
    rows, ok_all = [], True
    for name, k, grid, block, kargs, check in _cases(args.size):
        t0 = time.perf_counter()
        r = js.launch(k, grid, block, kargs, arch=args.arch)
        dt = time.perf_counter() - t0
        ok = bool(check(r))
        ok_all &= ok
        rows.append({"kernel": name, "correct": ok, "seconds": dt, "stats": r.stats})
        if not args.json:
            console.log(f"{name}: {'ok' if ok else 'WRONG RESULT'} ({dt:.1f} s)")
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0 if ok_all else 1
    t = Table(title=f"The seeds' kernels on {args.arch} (N = {args.size})")
    t.add_column("kernel")
    t.add_column("ok")
    for c, _ in COLUMNS:
        t.add_column(c, justify="right")
    for row in rows:
        s = row["stats"]
        cells = []
        for _, key in COLUMNS:
            v = s.get(key, 0)
            cells.append(f"{v:.3f}" if isinstance(v, float) else f"{v:,}")
        t.add_row(row["kernel"], "yes" if row["correct"] else "NO", *cells)
    console.print(t)
    return 0 if ok_all else 1
