"""`jaxsimt run --timeline FILE.json`: the cycle-level model's issue timeline in the Chrome / Perfetto
trace-event format, checked against the format's required fields (Trace Event Format, JSON Object
Format: complete events need name, ph, ts, dur, pid, tid; metadata events a name and args) and against
the replay it draws (one issue slice per issued instruction on its scheduler's and its warp's track)."""
import json
import os

import numpy as np
import pytest

from jaxsimt import cli
from jaxsimt.timing import replay as tm

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "..", "jaxsimt", "kernels", "ptx", "real_cuda.ptx")
AXPY = ["run", REAL, "--kernel", "axpy_alias", "--grid", "2", "--block", "64", "--arg", "f32:0.5",
        "--arg", "f32[128]:rand", "--arg", "@1", "--arg", "s32:128"]

PHASES = {"X", "M"}  # the phases this writer uses: complete events and metadata


@pytest.fixture(autouse=True)
def _no_compile_cache(monkeypatch):
    monkeypatch.setenv("JAXSIMT_NO_COMPILE_CACHE", "1")


def check_trace_event_format(doc: dict) -> None:
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    for ev in doc["traceEvents"]:
        assert ev["ph"] in PHASES, ev
        assert isinstance(ev["name"], str) and ev["name"], ev
        assert isinstance(ev["pid"], int), ev
        if ev["ph"] == "X":
            assert isinstance(ev["tid"], int) and isinstance(ev["cat"], str), ev
            assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0, ev
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] > 0, ev
            assert isinstance(ev.get("args", {}), dict)
        else:
            assert ev["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"), ev
            assert isinstance(ev["args"], dict) and len(ev["args"]) == 1, ev
            if ev["name"] == "thread_name" or ev["name"] == "thread_sort_index":
                assert isinstance(ev["tid"], int), ev


def test_run_writes_a_perfetto_timeline_of_every_issue(tmp_path, capsys):
    path = tmp_path / "t.json"
    assert cli.main(AXPY + ["--json", "--timeline", str(path)]) == 0
    stats = json.loads(capsys.readouterr().out)["stats"]
    doc = json.loads(path.read_text())
    check_trace_event_format(doc)
    evs = doc["traceEvents"]
    issues = [e for e in evs if e["ph"] == "X" and e["cat"] == "issue"]
    stalls = [e for e in evs if e["ph"] == "X" and e["cat"] == "stall"]
    # two blocks: two simulated SMs, each its own process; every issued instruction (folded ones included)
    # once on its scheduler's track and once on its warp's; the busiest SM's count is the model's
    per_sm = {}
    for e in issues:
        per_sm.setdefault(e["pid"], [0, 0])[e["tid"] >= 1000] += 1
    assert len(per_sm) == 2 and all(a == b for a, b in per_sm.values())
    assert max(a for a, _ in per_sm.values()) == stats["timing__issued_in_window"]
    assert {e["name"] for e in stalls} <= set(tm.REASONS) and stalls
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["name"] == "thread_name"}
    assert all((e["pid"], e["tid"]) in names for e in issues + stalls)  # every slice on a named track
    assert any(v.startswith("scheduler 0 / warp slot") for v in names.values())
    # the last issue ends at the model's cycles (one cycle after the last exit issued), at the SM clock
    clock = float(tm.params_of("h200")["clock_ghz"])
    end = max(e["ts"] + e["dur"] for e in issues)
    assert end == pytest.approx(stats["cycles"] * 1e-3 / clock, rel=1e-6)
    assert doc["otherData"]["dropped_slices"] == 0


def test_timeline_needs_the_timing_model(tmp_path, capsys):
    assert cli.main(AXPY + ["--no-timing", "--timeline", str(tmp_path / "t.json")]) == 2
    assert "--timeline" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_slices_beyond_the_limit_are_dropped_and_counted():
    from jaxsimt.timing import timeline

    # a hand-made two-issue timeline of one SM: (time, slot, sched, pc, warp, reason, start)
    out = {"timeline": tuple(np.asarray([v]) for v in ([3.0, 7.0], [0, 1], [0, 1], [2, 5], [0, 1],
                                                        [tm.REASONS.index("wait"), -1], [1.0, 6.0]))}
    evs, dropped = timeline.events(out, 2.0, max_events=3)
    slices = [e for e in evs if e["ph"] == "X"]
    assert [e["cat"] for e in slices] == ["issue", "issue", "stall"] and dropped == 2
    assert slices[2]["ts"] == pytest.approx(1.0 * 1e-3 / 2.0) and slices[2]["args"]["cycles"] == 2.0
    check_trace_event_format(timeline.document(evs, dropped))


@pytest.mark.slow  # the ladder's counters, trace and replay of one rung (~30 s on 2 CPU cores)
def test_ladder_writes_one_process_per_rung(tmp_path, capsys):
    path = tmp_path / "ladder.json"
    argv = ["ladder", "--size", "64", "64", "64", "--rungs", "naive_coalesced,smem_tiled", "--json", "--timeline",
            str(path)]
    assert cli.main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    doc = json.loads(path.read_text())
    check_trace_event_format(doc)
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert sorted(procs.values()) == ["naive_coalesced: SM 0", "smem_tiled: SM 0"]
    clock = float(tm.params_of("h200")["clock_ghz"])
    for pid, name in procs.items():
        row = next(r for r in rows if name.startswith(r["variant"]))
        issues = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid and e["cat"] == "issue"]
        assert max(e["ts"] + e["dur"] for e in issues) <= row["cycles"] * 1e-3 / clock * (1 + 1e-6)
