"""`jaxsimt occupancy`: the occupancy calculator (`jaxsimt.units.occupancy`) on the command line."""
from __future__ import annotations

import argparse
import json

from jaxsimt.arch import get_arch
from jaxsimt.run.command import ArgumentParser, add_arch, command
from jaxsimt.units.occupancy import LIMITERS, UNLIMITED, occupancy


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="jaxsimt occupancy", description="Theoretical occupancy per SM.")
    add_arch(p)
    p.add_argument("--threads", type=int, required=True, help="threads per block")
    p.add_argument("--regs", type=int, required=True, help="registers per thread")
    p.add_argument("--smem", type=int, default=0, help="kernel shared memory per block, bytes")
    p.add_argument("--carveout", "--carveout-kb", dest="carveout_kb", type=int, default=None,
                   help="L1/shared split: preferred shared memory per SM in KB, rounded up to an allowed size "
                        "(default: the largest; fermi 16 or 48, hopper 0 8 16 32 64 100 132 164 196 228)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def cli(argv: "list[str] | None" = None) -> int:
    """`jaxsimt occupancy --arch h200 --threads 256 --regs 64 --smem 16384 [--carveout KB] [--json]`. Returns the
    exit code (2 for a configuration the architecture does not allow, with a one-line message).

    argv: the arguments after the `occupancy` subcommand (a leading "occupancy" is accepted and skipped).
    """
    return command("occupancy")(_cli)(argv)


def _cli(argv) -> int:
    from jaxsimt.errors import UsageError

    args = _parser().parse_args(argv)
    carveout = None if args.carveout_kb is None else args.carveout_kb * 1024
    a = get_arch(args.arch)
    # a block the hardware refuses to launch has no occupancy: say so rather than print 0 blocks
    if args.threads > a.max_threads_per_block:
        raise UsageError(f"--threads {args.threads}: a block on {a.name} has at most {a.max_threads_per_block} threads")
    if args.regs > a.max_registers_per_thread:
        raise UsageError(f"--regs {args.regs}: a thread on {a.name} has at most {a.max_registers_per_thread} registers")
    try:
        result = occupancy(args.arch, args.threads, args.regs, args.smem, carveout)
    except ValueError as err:
        raise UsageError(str(err)) from None
    result.update(threads_per_block=args.threads, regs_per_thread=args.regs, smem=args.smem)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    _print_table(result)
    return 0


def _print_table(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    def fmt(n: int) -> str:
        return "unlimited" if n == UNLIMITED else str(n)

    table = Table(title=f"Theoretical occupancy ({result['arch']})")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("threads per block", str(result["threads_per_block"]))
    table.add_row("registers per thread", str(result["regs_per_thread"]))
    table.add_row("shared memory per block (kernel)", f"{result['smem']} B")
    table.add_row("registers allocated per block", str(result["registers_per_block"]))
    table.add_row("shared memory allocated per block", f"{result['shared_mem_per_block']} B")
    table.add_row("shared memory carve-out per SM", f"{result['shared_mem_per_sm']} B")
    for name in LIMITERS:
        mark = " *" if name in result["limiters"] else ""
        table.add_row(f"block limit: {name}{mark}", fmt(result[f"blocks_limit_{name}"]))
    table.add_row("active blocks per SM", str(result["active_blocks_per_sm"]))
    table.add_row("active warps per SM", f"{result['active_warps_per_sm']} / {result['max_warps_per_sm']}")
    table.add_row("occupancy", f"{result['occupancy']:.1%}")
    table.add_row("limiter", result["limiter"])
    Console().print(table)
