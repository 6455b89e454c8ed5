"""Register-bank reads: the rule the timing model uses, against the H200's cycles and SASS.

`kernels/cuda/micro_issue.cu` runs loops of independent FFMAs whose operands ptxas placed in banks of its
choosing; the committed SASS says which registers each instruction reads (and which the reuse cache keeps),
the committed cycles what the loop cost. The rule (`jaxsimt.units.regbanks`): each of the two banks
delivers one register a cycle, reads queue across instructions, so a loop takes at least as many cycles as
its busiest bank's reads. A per-instruction rule (two reads of one bank in one instruction cost a cycle)
is checked to be wrong on the same data.
"""
from __future__ import annotations

import gzip
import json
import os
import re

import numpy as np
import pytest

from jaxsimt.arch import get_arch
from jaxsimt.kernels import sass
from jaxsimt.ptx.lower import lower, parse
from jaxsimt.timing import trace as tr
from jaxsimt.units import regbanks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "jaxsimt", "data", "h200")
MICRO = os.path.join(DATA, "issue_micro")
H200 = get_arch("h200")


def _mangled(kernel: str) -> str:
    base, args = re.match(r"(\w+)<([\d,]+)>", kernel).groups()
    return f"_Z{len(base)}{base}IL" + "EL".join(f"i{a}" for a in args.split(",")) + "EEvPKfPfiPx"


def _loops():
    """[(kernel, warps per scheduler, measured cycles per loop instruction, loop body)] of every regbank run
    with at least 2 warps per scheduler (one warp alone waits on its own FFMA latency)."""
    with gzip.open(os.path.join(MICRO, "micro_issue.sass.gz"), "rt") as f:
        fns = sass.functions(f.read())
    out = []
    with open(os.path.join(MICRO, "micro_issue.jsonl")) as f:
        rows = [json.loads(line) for line in f if '"regbank"' in line]
    for r in rows:
        if r["warps_per_scheduler"] < 2:
            continue
        ins = fns[_mangled(r["kernel"])]
        lo, hi = max(sass.loops(ins), key=lambda x: x[1] - x[0])  # the unrolled main loop
        body = ins[lo:hi + 1]
        ffma = sum(op.startswith("FFMA") for _, op, _ in body)
        unroll = ffma // r["per_iter"]
        # the remainder loop (iterations % unroll) runs per_iter FFMAs and 3 loop instructions an iteration
        issued = (r["iters"] // unroll) * len(body) + (r["iters"] % unroll) * (r["per_iter"] + 3)
        out.append((r["kernel"], r["warps_per_scheduler"], r["sm_cycles"] / (r["warps_per_scheduler"] * issued),
                    body))
    return out


LOOPS = _loops()


def _bandwidth_rule(body) -> float:
    reads = sass.bank_reads(body, H200.register_banks)
    return max([len(body)] + [v / H200.register_bank_ports for v in reads.values()]) / len(body)


def _per_instruction_rule(body, three_only: bool = False) -> float:
    """Each instruction takes max over banks of its reads there (reuse cache applied), at least 1 cycle;
    three_only: one extra cycle only where three reads share a bank (Jia et al.'s rule for Volta)."""
    total = 0
    for regs in sass.reads(body):
        per = np.bincount([r % H200.register_banks for r in regs], minlength=H200.register_banks)
        total += 1 + int(per.max() >= 3) if three_only else max(1, int(per.max()))
    return total / len(body)


def test_fixture_covers_loops_with_and_without_bank_pressure():
    assert len(LOOPS) >= 40
    bounds = [_bandwidth_rule(b) for _, _, _, b in LOOPS]
    assert min(bounds) == 1.0 and max(bounds) > 1.3


def test_busiest_bank_bounds_the_loop_as_measured():
    """Predicted cycles per instruction (busiest bank's reads, at least one a cycle) within 17% of the H200's
    on every loop, within 3% at the median."""
    err = np.asarray([_bandwidth_rule(b) / c - 1 for _, _, c, b in LOOPS])
    worst = LOOPS[int(np.argmax(np.abs(err)))]
    assert np.max(np.abs(err)) < 0.17, (worst[0], worst[1], float(np.max(np.abs(err))))
    assert np.median(np.abs(err)) < 0.03


def test_per_instruction_conflicts_overestimate():
    """Rules that charge each instruction for its own reads are far off: two reads of one bank in one
    instruction cost nothing when its neighbours read the other bank, and three reads of distinct banks'
    registers still cost where the loop reads more than two registers an instruction."""
    bw = np.asarray([abs(_bandwidth_rule(b) / c - 1) for _, _, c, b in LOOPS])
    for three_only in (False, True):
        pi = np.asarray([abs(_per_instruction_rule(b, three_only) / c - 1) for _, _, c, b in LOOPS])
        assert np.median(pi) > 5 * np.median(bw)
        assert np.max(pi) > 0.3


def test_imbalance_is_the_median_over_the_corpus_loops():
    """`register_bank_imbalance` is the median, over the loops of the real-CUDA corpus's SASS, of the busiest
    bank's reads over half the loop's reads."""
    ratios = []
    for suite in ("cuda_samples", "rodinia", "parboil", "polybench", "shoc"):
        with gzip.open(os.path.join(DATA, "suites", "sass", f"{suite}.sass.gz"), "rt") as f:
            fns = sass.functions(f.read())
        for ins in fns.values():
            for lo, hi in sass.loops(ins):
                body = ins[lo:hi + 1]
                if len(body) < 12:
                    continue
                reads = sass.bank_reads(body, H200.register_banks)
                total = sum(reads.values())
                if total:
                    ratios.append(max(reads.values()) / (total / H200.register_banks))
    assert len(ratios) >= 100
    assert H200.register_bank_imbalance == pytest.approx(float(np.median(ratios)), abs=0.01)


def _ptx_read_cycles(src: str, kernel: str) -> float:
    module = parse(src)
    prog = lower(module, kernel)
    cycles = regbanks.read_cycles(prog, H200, ~tr.folded_mask(prog))
    return float(cycles.max())


def test_ptx_read_cycles_of_three_read_and_reused_streams():
    """A loop of FMAs reading three distinct registers each needs its reads x imbalance over the banks' two a
    cycle; with one operand shared by consecutive FMAs (the reuse cache) the banks keep up."""
    head = ".version 8.0\n.target sm_90\n.address_size 64\n"
    body3 = "".join(f"fma.rn.f32 %f{3 * i + 2}, %f{3 * i}, %f{3 * i + 1}, %f{3 * i + 2};\n" for i in range(12))
    body2 = "".join(f"fma.rn.f32 %f{i + 20}, %f0, %f{i + 1}, %f{i + 20};\n" for i in range(12))
    # the loop: 12 FMAs, add, setp (its %r1 held by the reuse cache from the add), bra: 15 instructions, at
    # least MIN_STREAM
    per_cycle = H200.register_banks * H200.register_bank_ports
    three = (12 * 3 + 1) * H200.register_bank_imbalance / per_cycle / 15
    for name, body, want in (("three", body3, three), ("two", body2, 1.0)):
        params = ", ".join(f".param .f32 a{i}" for i in range(36))
        regs = ".reg .f32 %f<40>;\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n.reg .pred %p<2>;\n"
        src = (head + f".visible .entry {name}(.param .u64 p, {params})\n{{\n" + regs
               + "".join(f"ld.param.f32 %f{i}, [a{i}];\n" for i in range(36)) + "mov.u32 %r1, 0;\n$L_loop:\n" + body
               + "add.s32 %r1, %r1, 1;\nsetp.lt.s32 %p1, %r1, 100;\n@%p1 bra $L_loop;\n"
               + "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\nst.global.f32 [%rd2], %f2;\nret;\n}\n")
        got = _ptx_read_cycles(src, name)
        assert got == pytest.approx(want, rel=1e-6), (name, got)
