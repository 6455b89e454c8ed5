"""The `jaxsimt` command: one subcommand per job.

    jaxsimt demo                       emulate the seeds' kernels and print their counters
    jaxsimt ladder [--arch] [--size]   the GEMM ladder report
    jaxsimt occupancy --arch h200 --threads 256 --regs 64 --smem 16384 [--json]
    jaxsimt run FILE.ptx --kernel NAME --grid X --block X --arg SPEC ...
    jaxsimt report FILE.ptx|--example NAME [-o report.html]   a launch's HTML report
    jaxsimt validate [--json]          compare the emulator with the committed H200 measurements
    jaxsimt sweep [--arch] [--size]    the GEMM ladder over a grid of tile sizes, and the best one
"""
from __future__ import annotations

import importlib
import sys

# subcommand -> (module, function, one-line help)
COMMANDS = {
    "demo": ("jaxsimt.apps.demo", "main", "emulate the seeds' kernels and print what the hardware would count"),
    "ladder": ("jaxsimt.apps.ladder", "main", "the GEMM ladder report (naive ... Tensor Cores)"),
    "occupancy": ("jaxsimt.cli.occupancy", "cli", "theoretical occupancy of a launch configuration"),
    "run": ("jaxsimt.cli.run", "main", "run a PTX kernel"),
    "report": ("jaxsimt.cli.report", "main", "an HTML report of one launch: source, divergence, memory, occupancy"),
    "validate": ("jaxsimt.apps.validate", "main", "compare the emulator with the H200 fixtures"),
    "sweep": ("jaxsimt.apps.tile_sweep", "main", "the GEMM ladder over a grid of tile sizes; the best configuration"),
}


def _usage() -> str:
    lines = ["usage: jaxsimt COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, _, help_) in COMMANDS.items()]
    lines += ["", "jaxsimt COMMAND --help for a command's options",
              "Compiled kernels are cached in $XDG_CACHE_HOME/jaxsimt/jax (~/.cache/jaxsimt/jax); "
              "JAXSIMT_NO_COMPILE_CACHE=1 turns the cache off."]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"jaxsimt: error: unknown command {cmd!r} (one of {', '.join(COMMANDS)}; jaxsimt --help)",
              file=sys.stderr)
        return 2
    mod, fn, _ = COMMANDS[cmd]
    from jaxsimt.run.gpu_graphs import enable_concurrent_gpu_graphs

    enable_concurrent_gpu_graphs()  # before anything starts JAX's backends; a CPU ignores it
    try:
        module = importlib.import_module(mod)
    except ModuleNotFoundError as e:
        if e.name == mod:
            print(f"jaxsimt {cmd}: error: not available in this version", file=sys.stderr)
            return 2
        raise
    if "-h" not in rest and "--help" not in rest:
        from jaxsimt.run.compile_cache import enable_compile_cache

        enable_compile_cache()  # a new process reuses what earlier ones compiled (JAXSIMT_NO_COMPILE_CACHE=1: off)
    # each command's main returns its exit status and reports errors itself (jaxsimt.run.command)
    return int(getattr(module, fn)(rest) or 0)

