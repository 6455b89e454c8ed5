"""The sanitizer corpus (jaxsimt/kernels/sanitizer/): its cases are consistent with their sources, PTX and the H200
fixture of compute-sanitizer's verdicts, and every clean kernel runs right on jaxsimt without checks."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import jaxsimt
from jaxsimt.machine import sanitizer
from jaxsimt.errors import SimtError
from jaxsimt.kernels.sanitizer import cases as C
from jaxsimt.kernels.sanitizer import collect_h200, run, table
from jaxsimt.ptx import parse_file

FIXTURE_DIR = os.path.join(os.path.dirname(jaxsimt.__file__), "data", "h200", "sanitizer")
CUDA = C.cuda_cases()
PLANTED = [c for c in C.CASES if c.check is not None]
CLEAN = [c for c in C.CASES if c.check is None]
_MARK = re.compile(r"planted ((?:dsl_)?(?:mc|rc|ic|sc)_\w+)")


def _lines(case) -> tuple:
    return case.expect.lines or (case.expect.line,)


def _source_lines(path) -> list:
    with open(path) as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def verdicts() -> dict:
    with open(os.path.join(FIXTURE_DIR, "verdicts.json")) as f:
        return json.load(f)


def test_names_are_unique_and_kinds_known():
    assert len(C.BY_NAME) == len(C.CASES)
    for c in C.CASES:
        assert c.kind in ("cuda", "dsl") and c.check in C.CHECKS + (None,), c.name
        assert (c.expect is None) == (c.check is None), c.name
        assert c.mode in ("stack", "its"), c.name


@pytest.mark.parametrize("case", C.CASES, ids=lambda c: c.name)
def test_sources_and_entries_exist(case):
    assert os.path.isfile(case.source_path), case.source
    text = "\n".join(_source_lines(case.source_path))
    if case.kind == "cuda":
        assert re.search(rf'extern "C" __global__ void {case.entry}\(', text), case.entry
        assert os.path.isfile(case.ptx_path), case.ptx
        assert parse_file(case.ptx_path).function(case.entry).is_entry
    else:
        assert re.search(rf"^def {case.entry}\(", text, re.M), case.entry
        assert isinstance(run.dsl_kernel(case.entry), jaxsimt.Kernel)


@pytest.mark.parametrize("case", PLANTED, ids=lambda c: c.name)
def test_expected_lines_carry_the_planted_mark(case):
    src = _source_lines(case.source_path)
    for line in _lines(case):
        assert 1 <= line <= len(src) and f"planted {case.name}" in src[line - 1], (case.name, line)


def test_every_planted_mark_is_an_expected_line():
    marked = {}
    for name in {c.source for c in C.CASES}:
        for i, text in enumerate(_source_lines(os.path.join(C.HERE, name)), 1):
            for m in _MARK.finditer(text.split("//")[-1] if name.endswith(".cu") else text.split("#")[-1]):
                marked.setdefault(m.group(1), set()).add(i)
    expected = {c.name: set(_lines(c)) for c in PLANTED}
    assert marked == expected


@pytest.mark.parametrize("case", [c for c in CUDA if c.check], ids=lambda c: c.name)
def test_ptx_loc_names_the_expected_lines(case):
    """nvcc's .loc lines put an instruction of the entry on each planted line of the .cu file (directly, or as
    the `inlined_at` of an intrinsic's header line): the line a report of the PTX kernel can name."""
    module = parse_file(case.ptx_path)
    cu = {i for i, path in module.files if os.path.basename(path) == case.source}
    locs = set()
    for ins in module.function(case.entry).instructions:
        for loc in (ins.loc, ins.inlined_at):
            if loc is not None and loc[0] in cu:
                locs.add(loc[1])
    assert set(_lines(case)) <= locs, (case.name, sorted(locs))


def test_every_check_has_planted_bugs_and_clean_look_alikes():
    for check in C.CHECKS:
        assert len([c for c in C.by_check(check) if c.kind == "cuda"]) >= 4, check
        assert [c for c in C.by_check(check) if c.kind == "dsl"], check
    assert len([c for c in CLEAN if c.kind == "cuda"]) >= 6
    assert len([c for c in CLEAN if c.kind == "dsl"]) >= 2
    assert all(c.reference is not None for c in CLEAN)


@pytest.mark.parametrize("case", C.CASES, ids=lambda c: c.name)
def test_arguments_match_the_kernel(case):
    args = case.args()
    n_params = (len(parse_file(case.ptx_path).function(case.entry).params) if case.kind == "cuda"
                else len(run.dsl_kernel(case.entry).program.params))
    assert len(args) == n_params, case.name
    for k, a in enumerate(args):
        assert sanitizer.is_uninit(a) == (k in case.uninit), (case.name, k)
    for k in (case.reference(args) if case.reference else {}):
        assert isinstance(args[k], np.ndarray), (case.name, k)


# Planted bugs that hang the H200 (every run, with or without a tool, stopped at the collection's time limit).
HANGS_ON_H200 = {"sc_named_barrier_count"}


def test_fixture_covers_every_cuda_case_and_tool(verdicts):
    assert set(verdicts["cases"]) == {c.name for c in CUDA}
    runs = {"plain", "memcheck", "memcheck_padding", "racecheck", "racecheck_default", "initcheck", "synccheck"}
    assert set(verdicts["runs"]) == runs
    for name, per in verdicts["cases"].items():
        assert set(per) == runs, name
        for r, v in per.items():
            assert v["timed_out"] == (name in HANGS_ON_H200), (name, r)
            assert r == "plain" or isinstance(v["reported"], bool), (name, r)


def test_fixture_clean_cases_are_clean_and_right_on_the_h200(verdicts):
    for c in CUDA:
        if c.check is None:
            per = verdicts["cases"][c.name]
            assert not any(v["reported"] for r, v in per.items() if r != "plain"), c.name
            assert per["plain"]["sync"] == "cudaSuccess" and all(per["plain"]["reference_ok"].values()), c.name


def test_fixture_findings_name_lines_of_the_case_source(verdicts):
    for c in CUDA:
        n = len(_source_lines(c.source_path))
        for r, v in verdicts["cases"][c.name].items():
            for rec in v.get("records", []):
                for line in [a["line"] for a in rec.get("accesses", [])] or [rec["line"]]:
                    assert 1 <= line <= n, (c.name, r, line)
                assert rec.get("file", c.source) == c.source, (c.name, r)


def _log_sections(name: str) -> dict:
    with open(os.path.join(FIXTURE_DIR, "logs", f"{name}.txt")) as f:
        parts = re.split(r"^#### (\w+): .*$", f.read(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_parser_reads_the_committed_logs():
    """collect_h200's parser on compute-sanitizer's own text: the memcheck report of mc_store_past_end and a
    race of rc_tiled_war."""
    mem = collect_h200.parse_log(_log_sections("mc_store_past_end")["memcheck"])
    rec = [r for r in mem["records"] if not r["api"]][0]
    assert (rec["line"], rec["thread"], rec["block"], rec["space"], rec["op"]) == (9, [232, 0, 0], [3, 0, 0],
                                                                                  "global", "write")
    base = dict((k, b) for k, b, _ in mem["allocations"])[0]
    assert int(rec["address"], 16) - base == 4000 and rec["nearest"]["bytes"] == 1
    race = collect_h200.parse_log(_log_sections("rc_tiled_war")["racecheck"])["records"][0]
    # which of the two accesses the tool saw first depends on the order the warps ran
    assert race["hazard"] in C.BY_NAME["rc_tiled_war"].expect.hazards
    assert [a["op"] for a in race["accesses"]] in (["Read", "Write"], ["Write", "Read"])
    assert {a["line"] for a in race["accesses"]} == {34, 36} and race["space"] == "shared"


def test_table_has_a_row_per_case():
    rows = table.case_table().splitlines()[2:]
    assert [r.split("|")[1].strip(" `") for r in rows] == [c.name for c in CUDA]
    assert len(table.class_table().splitlines()) == 2 + len(C.CHECKS) + 1


def _run_clean(case):
    args = case.args()
    r = run.launch(case, args, counters=False)
    ok = run.check_reference(case, r, args)
    assert ok and all(ok.values()), (case.name, ok)


@pytest.mark.parametrize("case", CLEAN, ids=lambda c: c.name)
def test_clean_case_runs_right_without_checks(case):
    _run_clean(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", PLANTED, ids=lambda c: c.name)
def test_planted_case_runs_or_faults_with_a_jaxsimt_error(case):
    """Without checks a planted bug either runs to the end or stops with one of jaxsimt's errors (today's
    bounds, alignment and barrier checks), never with a front-end or internal error."""
    try:
        run.launch(case, counters=False)
    except SimtError:
        pass
