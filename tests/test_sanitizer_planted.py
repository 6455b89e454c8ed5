"""jaxsimt's sanitizer on the corpus of planted bugs (jaxsimt/kernels/sanitizer/): every planted bug is reported by
the check it belongs to, at the planted line, with the thread, block, array and byte offset the case
expects; every clean look-alike gives no finding under all checks. The same cases' compute-sanitizer
verdicts on the H200 are the fixture jaxsimt/data/h200/sanitizer/verdicts.json (docs/sanitizer.md puts
the two side by side: jaxsimt/kernels/sanitizer/table.py)."""
from __future__ import annotations

import pytest

from jaxsimt.machine import sanitizer
from jaxsimt.kernels.sanitizer import cases as C
from jaxsimt.kernels.sanitizer import run

# Member-mask bugs are written for ITS (their cases' mode); the reconvergence stack reports them too.
ITS_MASK = {c.name for c in C.CASES if c.expect is not None and c.expect.kind == "warp_sync_mask"}
PLANTED = [c for c in C.CASES if c.check is not None]
CLEAN = [c for c in C.CASES if c.check is None]


def _pretty(findings) -> str:
    return "\n".join(f"[{f.check}] {f.message}" for f in findings) or "no finding"


# Bugs the checks do not see yet: {case: why}.
MISSED: dict = {}


# One planted bug of each check, and two clean look-alikes, run in the quick suite; the rest in the slow one.
QUICK = {"mc_load_next_alloc", "rc_raw_between_warps", "rc_global_neighbour", "ic_shared_unwritten",
         "sc_half_block_barrier", "dsl_ic_global_uninit", "ok_histogram", "sc_early_exit"}


def _planted(c):
    if c.name not in QUICK and c.name not in MISSED:
        return pytest.param(c, marks=pytest.mark.slow)
    if c.name in MISSED:
        return pytest.param(c, marks=pytest.mark.xfail(raises=AssertionError, strict=True, reason=MISSED[c.name]))
    return c


@pytest.mark.parametrize("case", [_planted(c) for c in PLANTED], ids=lambda c: c.name)
def test_planted_bug_is_reported_where_it_is(case):
    r = run.launch(case, check="all", collect=True, mode=case.mode, counters=False)
    f, why = run.match(case, r.findings)
    assert f is not None, f"{case.name}: {why}:\n{_pretty(r.findings)}"


@pytest.mark.parametrize("case", [c if c.name in QUICK else pytest.param(c, marks=pytest.mark.slow) for c in CLEAN],
                         ids=lambda c: c.name)
def test_clean_look_alike_has_no_finding(case):
    args = case.args()
    r = run.launch(case, args, check="all", collect=True, mode=case.mode, counters=False)
    assert r.findings == [], _pretty(r.findings)
    ok = run.check_reference(case, r, args)
    assert ok and all(ok.values()), ok


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ITS_MASK))
def test_member_mask_bug_under_the_stack(name):
    case = C.BY_NAME[name]
    r = run.launch(case, check="all", collect=True, mode="stack", counters=False)
    f, why = run.match(case, r.findings)
    assert f is not None, f"{case.name}: {why}:\n{_pretty(r.findings)}"


def test_corpus_kinds_are_jaxsimt_kinds():
    assert set().union(*run.KINDS.values()) <= set(sanitizer.KIND.values())
