"""`jaxsimt validate`: re-run the hardware-profiled kernels in the emulator and compare the counters.

Every micro-kernel of `jaxsimt/kernels/cuda/micro_{shared,global,divergence}.cu` (the DSL versions in
`jaxsimt.kernels.micro`) runs with the launch configuration it was profiled with; its outputs are checked
against a numpy reference, and its counters against the committed Nsight Compute measurements
(`jaxsimt.apps.fixtures`). Metrics that must match exactly: global requests and sectors, shared wavefronts and
bank conflicts (loads and stores), theoretical occupancy, and the outputs. Reported for information:
divergent branch targets of the divergence kernels (the emulator's IR is not SASS: nvcc predicates some
branches, e.g. an early `return` becomes a predicated EXIT) and warp instructions executed.

GEMM ladder rungs run too once `jaxsimt.kernels.gemm` provides `VALIDATION`: a mapping from the rung's
name in `ncu_kernels.csv` to an object with `factory()`, `grid`, `block`, `args()` and optionally
`smem` (the CUDA kernel's shared memory per block) and `check(result)`, like `jaxsimt.kernels.micro.Micro`.

    jaxsimt validate [--arch h200] [--kernels REGEX] [--json] [--skip-gemm]

Exit status 0 when every exact metric matches, 1 when one does not, 2 for a usage error.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from typing import Optional

from jaxsimt.apps import fixtures
from jaxsimt.units.banks import METRIC_CONFLICTS, METRIC_WAVEFRONTS
from jaxsimt.units.coalescing import METRIC_REQUESTS, METRIC_SECTORS

EXACT_METRICS = tuple(metric.format(op=op)
                      for metric in (METRIC_REQUESTS, METRIC_SECTORS, METRIC_WAVEFRONTS, METRIC_CONFLICTS)
                      for op in ("ld", "st"))
OCCUPANCY_METRIC = "sm__maximum_warps_per_active_cycle_pct"
DIVERGENCE_METRIC = "smsp__sass_branch_targets_threads_divergent.sum"
INFO_METRICS = ("smsp__inst_executed.sum",)

SHORT = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global ld requests",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global st requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global ld sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global st sectors",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared ld wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared st wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared ld conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared st conflicts",
    OCCUPANCY_METRIC: "occupancy %",
    DIVERGENCE_METRIC: "divergent branch targets",
    "smsp__inst_executed.sum": "warp instructions",
    "outputs": "outputs vs reference",
}


@dataclass
class Row:
    """One compared value. exact: must match (a mismatch fails validation); ok: it matches."""

    kernel: str
    metric: str
    hardware: object
    emulator: object
    exact: bool

    @property
    def ok(self) -> bool:
        return self.hardware == self.emulator

    @property
    def difference(self):
        if isinstance(self.hardware, (int, float)) and isinstance(self.emulator, (int, float)):
            d = self.emulator - self.hardware
            return int(d) if float(d).is_integer() else round(d, 4)
        return "" if self.ok else "differs"

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(ok=self.ok, difference=self.difference)
        return d


def entries(pattern: Optional[str] = None, arch: str = "h200", gemm: bool = True) -> dict:
    """name -> runnable entry (micro-kernels, then GEMM rungs when provided), filtered by `pattern`
    (a regular expression searched in the name), only those measured on `arch`."""
    from jaxsimt.kernels.micro import REGISTRY

    out = dict(REGISTRY)
    if gemm:
        out.update(gemm_entries())
    measured = fixtures.ncu_metrics(arch)
    rx = re.compile(pattern) if pattern else None
    return {k: v for k, v in out.items() if k in measured and (rx is None or rx.search(k))}


def gemm_entries() -> dict:
    """The GEMM ladder's rungs, when `jaxsimt.kernels.gemm` provides `VALIDATION`; else empty."""
    try:
        from jaxsimt.kernels import gemm
    except ImportError:
        return {}
    return dict(getattr(gemm, "VALIDATION", None) or {})


def compare(name: str, entry, arch: str = "h200") -> list[Row]:
    """Launch one entry as it was profiled and compare its counters with the hardware's."""
    import jaxsimt
    from jaxsimt.units.occupancy import occupancy

    hw = fixtures.ncu_metrics(arch)[name]
    regs = int(hw["launch__registers_per_thread"])
    result = jaxsimt.launch(entry.factory(), entry.grid, entry.block, entry.args(), arch=arch, regs=regs)
    rows = []
    try:
        entry.check(result)
        outputs = "equal"
    except AssertionError:
        outputs = "DIFFER"
    rows.append(Row(name, "outputs", "equal", outputs, True))
    for m in EXACT_METRICS:
        rows.append(Row(name, m, int(hw[m]), int(result.stats[m]), True))
    threads = 1
    for b in entry.block:
        threads *= int(b)
    smem = getattr(entry, "smem", None)
    if smem is None:
        smem = result.program.shared_bytes
    occ = occupancy(arch, threads, regs, int(smem))
    rows.append(Row(name, OCCUPANCY_METRIC, float(hw[OCCUPANCY_METRIC]), float(100.0 * occ["occupancy"]), True))
    if getattr(entry, "program", "") == "micro_divergence":
        rows.append(Row(name, DIVERGENCE_METRIC, int(hw[DIVERGENCE_METRIC]), int(result.stats[DIVERGENCE_METRIC]),
                        False))
        for m in INFO_METRICS:
            rows.append(Row(name, m, int(hw[m]), int(result.stats[m]), False))
    return rows


def run(pattern: Optional[str] = None, arch: str = "h200", progress=None) -> list[Row]:
    """Compare every selected kernel; `progress(name, seconds)` is called after each."""
    rows = []
    for name, entry in entries(pattern, arch).items():
        t0 = time.perf_counter()
        rows.extend(compare(name, entry, arch))
        if progress is not None:
            progress(name, time.perf_counter() - t0)
    return rows


def summary(rows: list[Row]) -> dict:
    exact = [r for r in rows if r.exact]
    return {
        "kernels": len({r.kernel for r in rows}),
        "exact_compared": len(exact),
        "exact_matched": sum(r.ok for r in exact),
        "mismatches": [r.as_dict() for r in exact if not r.ok],
        "info_compared": len(rows) - len(exact),
        "info_matched": sum(r.ok for r in rows if not r.exact),
    }


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _program(kernel: str, arch: str) -> str:
    k = fixtures.ncu_kernels(arch).get(kernel)
    return k.program if k is not None else "?"


def _print_table(rows: list[Row], arch: str, skipped: list[str], seconds: float, show_all: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 110))
    table = Table(title=f"jaxsimt validate: emulator vs {arch} (Nsight Compute)")
    for col, just in (("kernel", "left"), ("metric", "left"), ("hardware", "right"), ("emulator", "right"),
                      ("difference", "right"), ("", "left")):
        table.add_column(col, justify=just)
    for r in rows:
        if not show_all and r.ok and r.metric == "outputs":
            continue
        if not show_all and r.ok and r.hardware in (0, 0.0) and r.emulator in (0, 0.0):
            continue  # counters a kernel never touches: zero on both sides
        mark = "ok" if r.ok else ("MISMATCH" if r.exact else "differs (info)")
        style = None if r.ok else ("bold red" if r.exact else "yellow")
        table.add_row(r.kernel, SHORT.get(r.metric, r.metric), _fmt(r.hardware), _fmt(r.emulator),
                      _fmt(r.difference) if not r.ok else "0", mark, style=style)
    console.print(table)
    by_prog = Table(title="summary by program")
    for col in ("program", "kernels", "exact metrics equal", "mismatches", "informational equal"):
        by_prog.add_column(col, justify="left" if col == "program" else "right")
    programs: dict[str, list[Row]] = {}
    for r in rows:
        programs.setdefault(_program(r.kernel, arch), []).append(r)
    for prog, rs in programs.items():
        ex = [r for r in rs if r.exact]
        info = [r for r in rs if not r.exact]
        by_prog.add_row(prog, str(len({r.kernel for r in rs})), f"{sum(r.ok for r in ex)} / {len(ex)}",
                        str(sum(not r.ok for r in ex)), f"{sum(r.ok for r in info)} / {len(info)}" if info else "-",
                        style=None if all(r.ok for r in ex) else "bold red")
    console.print(by_prog)
    s = summary(rows)
    console.print(f"{s['kernels']} kernels; exact metrics matching: {s['exact_matched']} / {s['exact_compared']}"
                  f"; informational: {s['info_matched']} / {s['info_compared']} equal; {seconds:.0f} s")
    for note in skipped:
        console.print(f"skipped: {note}")


def _parser() -> argparse.ArgumentParser:
    from jaxsimt.run.command import ArgumentParser, add_arch

    p = ArgumentParser(prog="jaxsimt validate", description="Compare the emulator's counters with hardware measurements.")
    add_arch(p, help="architecture whose measurements to compare with (only h200 has them)")
    p.add_argument("--kernels", default=None, metavar="REGEX", help="only kernels whose name matches")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--skip-gemm", action="store_true",
                   help="leave the GEMM ladder rungs out (minutes each at the profiled 256^3)")
    p.add_argument("--all-rows", action="store_true", help="also list counters that are zero on both sides")
    return p


def main(argv: "list[str] | None" = None) -> int:
    """Entry point of `jaxsimt validate` (argv: the arguments after the subcommand). Returns the exit
    status: 0 all exact metrics match, 1 a mismatch, 2 a usage error."""
    from jaxsimt.run.command import command

    return command("validate")(_main)(argv)


def _main(argv) -> int:
    from jaxsimt.errors import UsageError

    args = _parser().parse_args(argv)
    arch = args.arch.lower()
    try:
        fixtures.ncu_metrics(arch)
    except FileNotFoundError:
        raise UsageError(f"--arch {arch}: no hardware measurements are committed for {arch} (only for h200)") from None
    try:
        selected = entries(args.kernels, arch, gemm=not args.skip_gemm)
    except re.error as err:
        raise UsageError(f"--kernels {args.kernels!r}: not a regular expression: {err}") from None
    if not selected:
        raise UsageError(f"--kernels {args.kernels!r}: no profiled kernel matches")
    skipped = []
    gemm_measured = fixtures.kernels_of("gemm_ladder", arch)
    if gemm_measured and args.skip_gemm:
        skipped.append("GEMM ladder: --skip-gemm")
    elif gemm_measured and not gemm_entries():
        skipped.append(f"GEMM ladder ({', '.join(gemm_measured)}): jaxsimt.kernels.gemm provides no VALIDATION "
                       f"entries yet")
    t0 = time.perf_counter()
    rows = []
    from jaxsimt.run.progress import task_progress

    with task_progress(len(selected), False if args.json else None, f"validating on {arch}") as bar:
        for name, entry in selected.items():
            if bar is not None:
                bar.describe(f"validating {name}")
            rows.extend(compare(name, entry, arch))
            if bar is not None:
                bar.advance()
    seconds = time.perf_counter() - t0
    s = summary(rows)
    if args.json:
        print(json.dumps({"arch": arch, "summary": s, "skipped": skipped, "seconds": round(seconds, 1),
                          "rows": [r.as_dict() for r in rows]}, default=str))
    else:
        _print_table(rows, arch, skipped, seconds, args.all_rows)
    return 0 if not s["mismatches"] else 1


if __name__ == "__main__":
    sys.exit(main())
