"""`jaxsimt report`: the HTML report of one launch (source, divergence, memory and occupancy views).

    jaxsimt report FILE.ptx --kernel NAME --grid X --block X --arg SPEC ... [--source-dir DIR] [-o report.html]
    jaxsimt report --example NAME [-o report.html]      a shipped kernel (--list-examples names them)

A PTX kernel takes the options of `jaxsimt run`; the launch runs with trace=True (the divergence view),
then block 0 is replayed for the memory view. The page is one self-contained file (`jaxsimt.apps.html_report`).
"""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from jaxsimt.run.command import check_output_file, command
from jaxsimt.errors import UsageError

GEMM_N = 64  # the example GEMMs' size: 4x4 blocks of 16x16 threads


def _gemm_args():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, GEMM_N * GEMM_N).astype(np.float32)
    b = rng.uniform(-1, 1, GEMM_N * GEMM_N).astype(np.float32)
    return (GEMM_N, GEMM_N, a, b, np.zeros(GEMM_N * GEMM_N, np.float32))


def examples() -> dict[str, tuple[Callable, tuple, tuple, Callable]]:
    """name -> (kernel factory, grid, block, args builder): the seeds' kernels and the H200 micro-kernels."""
    from jaxsimt.kernels import micro, seeds

    rng = np.random.default_rng(0)
    out = {
        "matmul_tiled": (lambda: seeds.matmul_tiled, (GEMM_N // 16, GEMM_N // 16), (16, 16), _gemm_args),
        "naive_matrix_multiply": (lambda: seeds.naive_matrix_multiply, (GEMM_N // 16, GEMM_N // 16), (16, 16),
                                  _gemm_args),
        "reduce_interleaved": (lambda: seeds.reduce_interleaved, (2,), (128,),
                               lambda: (rng.uniform(0, 1, 256).astype(np.float32), np.zeros(2, np.float32))),
        "reduce_sequential": (lambda: seeds.reduce_sequential, (2,), (128,),
                              lambda: (rng.uniform(0, 1, 256).astype(np.float32), np.zeros(2, np.float32))),
    }
    for name, m in micro.REGISTRY.items():
        out[name] = (m.factory, m.grid, m.block, m.args)
    return out


def _parser():
    from jaxsimt.cli import run as run_cli

    p = run_cli.parser(prog="jaxsimt report", description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                       file_required=False, outputs=False)
    p.add_argument("-o", "--output", default="report.html", metavar="FILE.html", help="the page to write")
    p.add_argument("--example", metavar="NAME", help="report a shipped kernel instead of a PTX file")
    p.add_argument("--list-examples", action="store_true", help="list the shipped kernels --example takes")
    p.add_argument("--title", default=None, help="the page's title (default: the kernel's name)")
    p.add_argument("--source-dir", action="append", default=[], metavar="DIR",
                   help="a folder (besides the PTX file's own) the CUDA sources named by its .file lines may be read "
                        "from; repeat for several")
    return p


@command("report")
def main(argv) -> int:
    import jaxsimt as js
    from jaxsimt.cli import run as run_cli
    from jaxsimt.run.progress import launch_progress

    a = _parser().parse_args(argv)
    ex = examples()
    if a.list_examples:
        for name, (_, grid, block, _) in ex.items():
            print(f"{name:<28} grid {grid}, block {block}")
        return 0
    if (a.example is None) == (a.file is None):
        raise UsageError("give a PTX file or --example NAME (one of them; see jaxsimt report --help)")
    check_output_file(a.output, "--output")
    with launch_progress(None, "emulating") as bar:
        if a.example is not None:
            if a.example not in ex:
                raise UsageError(f"--example {a.example!r}: unknown (one of {', '.join(ex)})")
            given = [o for o in ("kernel", "grid", "block") if getattr(a, o) is not None] + (["arg"] if a.arg else [])
            if given or a.list:
                raise UsageError(f"--example {a.example} has its own launch; --{(given or ['list'])[0]} is for a PTX file")
            factory, grid, block, make_args = ex[a.example]
            res = js.launch(factory(), grid, block, make_args(), arch=a.arch, regs=a.regs, mode=a.mode, trace=True,
                            timing=not a.no_timing and run_cli._has_timing(a.arch), progress=bar,
                            carveout=None if a.carveout is None else a.carveout * 1024)
        else:
            ran = run_cli.launch_from_args(a, trace=True, progress=bar, source_dirs=a.source_dir)
            if ran is None:  # --list
                return 0
            res = ran[0]
    res.report(a.output, title=a.title, source_dirs=a.source_dir)
    print(f"wrote {a.output}: {res.kernel} on {res.arch}, grid {res.grid}, block {res.block}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
