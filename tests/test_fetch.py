"""Instruction fetch (`jaxsimt.timing.fetch`): the H200's instruction-cache capacities and miss rates as
measured (`kernels/cuda/micro_issue.cu`, "icache"), and the floor they set on a kernel's issue."""
from __future__ import annotations

import collections
import gzip
import json
import os
import re

import numpy as np
import pytest

from jaxsimt.arch import get_arch
from jaxsimt.kernels import sass
from jaxsimt.ptx.lower import lower
from jaxsimt.timing import fetch
from jaxsimt.timing import trace as tr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MICRO = os.path.join(ROOT, "jaxsimt", "data", "h200", "issue_micro")
H200 = get_arch("h200")


def _measured():
    """{(loop bytes, warps per scheduler): cycles per issued instruction of one scheduler} of the icache runs."""
    with gzip.open(os.path.join(MICRO, "micro_issue.sass.gz"), "rt") as f:
        fns = sass.functions(f.read())
    out = {}
    with open(os.path.join(MICRO, "micro_issue.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["group"] != "icache":
                continue
            n = int(re.search(r"<(\d+)>", r["kernel"]).group(1))
            ins = fns[f"_Z7ic_bodyILi{n}EEvPKfPfiPx"]
            lo, hi = max(sass.loops(ins), key=lambda x: x[1] - x[0])
            body = hi - lo + 1
            unroll = sum(op.startswith("FFMA") for _, op, _ in ins[lo:hi + 1]) // n
            issued = (r["iters"] // unroll) * body + (r["iters"] % unroll) * (n + 3)
            w = r["warps_per_scheduler"]
            out[(body * H200.instruction_bytes, w)] = r["sm_cycles"] / (w * issued)
    return out


MEASURED = _measured()


def test_capacities_lie_between_the_loops_that_fit_and_those_that_do_not():
    """A loop fits a level when it issues within 5% of one instruction a cycle (2+ warps a scheduler), and
    streams from L2 when one warp takes more than 4 cycles an instruction."""
    by_size = collections.defaultdict(dict)
    for (size, w), cpi in MEASURED.items():
        by_size[size][w] = cpi
    fits = [s for s, v in by_size.items() if max(v[w] for w in v if w >= 2) < 1.05]
    from_l2 = [s for s, v in by_size.items() if v[1] > 4.0]
    first, second = H200.icache_bytes
    assert max(fits) < first < min(s for s in by_size if s not in fits)
    assert max(s for s in by_size if s not in from_l2) < second < min(from_l2)


def test_miss_rates_are_the_medians_of_each_band():
    first, second = H200.icache_bytes
    for level, (lo, hi) in enumerate(((first, second), (second, 1 << 40))):
        for w, want in zip(H200.icache_warps, H200.icache_miss_cpi[level]):
            got = [c for (s, ww), c in MEASURED.items() if ww == w and lo < s <= hi]
            assert len(got) >= 3
            assert want == pytest.approx(float(np.median(got)), abs=0.01), (level, w)


def _loop_kernel(n: int) -> str:
    """PTX: a loop of n independent FMAs (16 accumulators) around a counter."""
    body = "".join(f"fma.rn.f32 %f{k % 16}, %f{k % 16}, %f16, %f17;\n" for k in range(n))
    return (".version 8.0\n.target sm_90\n.address_size 64\n"
            ".visible .entry loop(.param .u64 p, .param .f32 a, .param .f32 b)\n{\n"
            ".reg .f32 %f<18>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;\n"
            "ld.param.f32 %f16, [a];\nld.param.f32 %f17, [b];\n"
            + "".join(f"mov.f32 %f{i}, %f16;\n" for i in range(16))
            + "mov.u32 %r1, 0;\n$L_loop:\n" + body
            + "add.s32 %r1, %r1, 1;\nsetp.lt.s32 %p1, %r1, 8;\n@%p1 bra $L_loop;\n"
            "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\nst.global.f32 [%rd2], %f0;\nret;\n}\n")


@pytest.mark.parametrize("n, level", [(1000, 0), (4000, 1), (12000, 2)])
def test_a_loop_issues_at_its_levels_rate(n, level):
    prog = lower(_loop_kernel(n), "loop")
    issued = ~tr.folded_mask(prog)
    code = fetch.code_bytes(prog, H200, issued)
    loop = [pc for pc, (_, ins) in enumerate(prog.instructions()) if ins.operation.op == "fma"]
    assert code[loop[0]] == (n + 3) * H200.instruction_bytes  # the FMAs, add, setp, bra
    for w in (1, 3, 8, 16):
        cyc = fetch.fetch_cycles(prog, H200, w, issued)
        want = 1.0 if level == 0 else float(np.interp(w, H200.icache_warps, H200.icache_miss_cpi[level - 1]))
        assert cyc[loop] == pytest.approx(want)
    # the code before the loop runs once: the whole kernel streams, at the same level here
    want1 = 1.0 if level == 0 else H200.icache_miss_cpi[level - 1][0]
    assert fetch.fetch_cycles(prog, H200, 1, issued)[0] == pytest.approx(want1)


def test_innermost_loop_sets_the_size():
    """An inner loop that fits, inside an outer one that does not, issues at the first level's rate; the
    outer loop's own instructions at the second level's."""
    head = "mov.u32 %r2, 0;\n$L_outer:\nmov.u32 %r1, 0;\n$L_loop:\nfma.rn.f32 %f1, %f1, %f16, %f17;\n"
    tail = "".join(f"fma.rn.f32 %f{k % 16}, %f{k % 16}, %f17, %f16;\n" for k in range(3000))
    outer = _loop_kernel(100).replace("mov.u32 %r1, 0;\n$L_loop:\n", head).replace(
        "@%p1 bra $L_loop;\n", "@%p1 bra $L_loop;\n" + tail + "add.s32 %r2, %r2, 1;\nsetp.lt.s32 %p1, %r2, 4;\n"
        "@%p1 bra $L_outer;\n")
    prog = lower(outer, "loop")
    issued = ~tr.folded_mask(prog)
    cyc = fetch.fetch_cycles(prog, H200, 1, issued)
    fmas = [pc for pc, (_, ins) in enumerate(prog.instructions()) if ins.operation.op == "fma"]
    assert (cyc[fmas[:101]] == 1.0).all()  # the inner loop's 101 FMAs
    assert cyc[fmas[101:]] == pytest.approx(H200.icache_miss_cpi[0][0])  # the outer loop's 3000


def test_the_replay_issues_a_large_loop_at_the_fetch_rate():
    """The cycle-level replay of a 48 KiB loop (one warp a scheduler) takes the second level's cycles per
    instruction, where the same trace with no instruction-cache limit issues about one a cycle."""
    import dataclasses

    from jaxsimt import ptx
    from jaxsimt.timing import machine
    from jaxsimt.timing import replay as timing

    n = 3000
    r = ptx.launch(_loop_kernel(n).replace("%r1, 8;", "%r1, 2;"), "loop", 1, 128,
                   [np.zeros(1, np.float32), np.float32(0.999), np.float32(1e-3)], trace=True)
    t = tr.from_launch(r)
    params = machine.params_of("h200")
    cycles = {}
    for name, arch in (("fetch", H200), ("none", dataclasses.replace(H200, icache_bytes=()))):
        work = timing.plan(t, arch, blocks_per_sm=1)
        cycles[name] = float(np.max(np.asarray(timing.run(work, params, timeline=False)["cycles"])))
    issued = 2 * (n + 3)
    assert cycles["none"] / issued == pytest.approx(1.0, abs=0.15)
    assert cycles["fetch"] / issued == pytest.approx(H200.icache_miss_cpi[0][0], rel=0.1)
