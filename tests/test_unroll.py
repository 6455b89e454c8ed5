"""The loops ptxas unrolls (`jaxsimt.timing.unroll`): which, checked against the H200's SASS of the committed
kernels, and how the timing model issues them (renamed copies, loads first, the remainder as the loop)."""
import gzip
import os
import re

import numpy as np
import pytest

from jaxsimt.kernels import sass
from jaxsimt.ptx.lower import lower
from jaxsimt.timing import issue_order
from jaxsimt.timing import trace as tr
from jaxsimt.timing import unroll
from jaxsimt.units import loadorder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "jaxsimt", "data", "h200")
SUITES = ("cuda_samples", "rodinia", "parboil", "polybench", "shoc")


def sass_loop_loads(text: str) -> dict:
    """{function: [global loads of each loop]} of a cuobjdump listing (`jaxsimt.kernels.sass.loops`)."""
    out = {}
    for fn, ins in sass.functions(text).items():
        for lo, hi in sass.loops(ins):
            out.setdefault(fn, []).append(sum("LDG" in op for _, op, _ in ins[lo:hi + 1]))
    return out


def _cases():
    for suite in SUITES:
        with gzip.open(os.path.join(DATA, "suites", "sass", f"{suite}.sass.gz"), "rt") as f:
            sass = sass_loop_loads(f.read())
        with open(os.path.join(ROOT, "jaxsimt", "kernels", "suites", f"{suite}.ptx")) as f:
            yield suite, f.read(), sass
    with open(os.path.join(DATA, "sass", "gemm_ladder.sass")) as f:
        sass = sass_loop_loads(f.read())
    with open(os.path.join(DATA, "ptx", "gemm_ladder.ptx")) as f:
        yield "gemm_ladder", f.read(), sass


def _global_loads(prog, pcs) -> int:
    instrs = [i for _, i in prog.instructions()]
    return sum(loadorder.movable(instrs[pc]) or (instrs[pc].operation.attr("space") == "global"
                                                  and instrs[pc].operation.op == "ld") for pc in pcs)


def test_the_loops_unrolled_are_those_ptxas_unrolled_on_the_h200():
    """Over the corpus's counted single-block loops that load from global memory (any size): those the rule
    unrolls (at most UNROLL_MAX_BODY instructions) have a loop in the H200's SASS with four times their loads,
    the others have none."""
    seen = []
    for suite, ptx, sass in _cases():
        for name in re.findall(r"\.entry\s+(\w+)\s*\(", ptx):
            if name not in sass:
                continue
            prog = lower(ptx, name)
            for pcs in unroll.loops(prog, max_body=10 ** 6):
                n = _global_loads(prog, pcs)
                if n:
                    seen.append((suite, name, len(pcs), len(pcs) <= unroll.UNROLL_MAX_BODY,
                                 n * unroll.UNROLL in sass[name]))
    assert len(seen) >= 30 and sum(s[3] for s in seen) >= 25 and sum(not s[3] for s in seen) >= 5, seen
    wrong = [s for s in seen if s[3] != s[4]]
    assert not wrong, wrong


def test_rule_on_the_loops_seen():
    """PolyBench gramschmidt's kernel1: its nvcc-unrolled main loop (four loads) is unrolled again; its remainder
    loop, `.pragma "nounroll"`, is not. The CUDA samples' grid-stride reduction (a register stride) is not."""
    with open(os.path.join(ROOT, "jaxsimt", "kernels", "suites", "polybench.ptx")) as f:
        poly = f.read()
    prog = lower(poly, "gramschmidt_kernel1")
    got = unroll.loops(prog)
    assert [_global_loads(prog, pcs) for pcs in got] == [4]
    instrs = [i for _, i in prog.instructions()]
    assert any(i.attr("nounroll") for i in instrs)  # the remainder's mark survives the front end
    with open(os.path.join(ROOT, "jaxsimt", "kernels", "suites", "cuda_samples.ptx")) as f:
        assert unroll.loops(lower(f.read(), "reduce7_shfl")) == []


def test_copies_rename_the_loop_registers():
    """Copy k writes its own slots (the last copy the original ones) and reads the copy before's where the
    iteration had not written them yet: the address and the accumulator chains run through the copies."""
    with open(os.path.join(ROOT, "jaxsimt", "kernels", "suites", "polybench.ptx")) as f:
        prog = lower(f.read(), "gramschmidt_kernel1")
    cls, dst, src, n_regs = tr.static_tables(prog)
    folded = tr.folded_mask(prog, cls)
    u = unroll.copies(prog, dst, src, n_regs, folded, *issue_order.ranks(prog, folded))
    (body, own), = u["loops"].values()
    n = len(own)
    assert body.shape == (unroll.UNROLL, n) and np.array_equal(u["origin"][body[2]], own)
    written = sorted({int(x) for x in dst[own].ravel() if x >= 0})
    slots = [{int(x) for x in u["dst"][body[k]].ravel() if x >= 0} for k in range(unroll.UNROLL)]
    assert slots[-1] == set(written)  # the last copy writes the original slots
    for k in range(unroll.UNROLL - 1):
        assert len(slots[k]) == len(written) and not slots[k] & set(written)
        assert not slots[k] & slots[k + 1]
    assert u["n_regs"] == n_regs + (unroll.UNROLL - 1) * len(written)
    # a loop-carried read: copy k reads what copy k - 1 wrote (copy 0: the original slots)
    for k in range(unroll.UNROLL):
        first_reads = {int(x) for x in u["src"][body[k][0]] if x >= 0}
        assert first_reads <= (slots[k - 1] if k else set(written)) | set(range(n_regs)) - set(written)
    # one exit test per unrolled body: the copies' branches but the last are folded
    assert all(u["folded"][body[k][-1]] for k in range(unroll.UNROLL - 1))
    assert u["folded"][body[-1][-1]] == u["folded"][own[-1]]


def test_runs_are_unrolled_in_groups_with_the_remainder_as_the_loop():
    """A run of 10 iterations: two unrolled bodies, then two iterations of the loop itself."""
    own = np.arange(5, 8)
    body = np.arange(100, 112).reshape(4, 3)
    pre, post = [1, 2, 3, 4], [9, 10]
    stream = np.asarray(pre + list(own) * 10 + post + [-1] * 3)[None, :]
    got = unroll.streams(stream, {0: (body, own)})[0]
    assert list(got[:4]) == pre and list(got[-5:]) == post + [-1] * 3
    assert list(got[4:28]) == list(body.ravel()) * 2
    assert list(got[28:34]) == list(own) * 2


def test_the_unrolled_loads_issue_before_the_first_use():
    """gramschmidt's kernel1 traced: each unrolled body issues its sixteen loads before its first FMA, and the
    replay waits for one load latency a body instead of four."""
    from jaxsimt.kernels import suites as S
    from jaxsimt.kernels.suites import harness as H

    r = H.first_launch("polybench", "gramschmidt", S.module("polybench").TIMING.get("gramschmidt"), ctas=[0],
                       timing=True, arch="h200")
    t = r.timing["trace"]
    NI = t.meta["NI"]
    stream = t.pcs[0][:t.length[0]]
    copies_ = stream[stream >= NI]
    assert copies_.size and copies_.size % (16 * unroll.UNROLL) == 0
    body = copies_[:copies_.size // (copies_.size // (16 * unroll.UNROLL))]
    cls = t.cls[body]
    first_fma = int(np.argmax(cls == tr.FP32))
    assert np.sum(cls[:first_fma] == tr.GLOBAL) == 4 * unroll.UNROLL
