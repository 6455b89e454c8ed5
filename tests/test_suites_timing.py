"""The suite corpus's timing sizes (jaxsimt/kernels/suites/time_gpu.py) without a GPU: its dry mode builds every case
at its default and its timing size on a backend that runs no kernel. Every case is covered, grows (or keeps
its size where the sample's is fixed), stays under the memory cap and within CUDA's launch limits, and at
its default size launches exactly what the committed H200 run launched (jaxsimt/data/h200/suites/)."""
import json
import os
import subprocess
import sys

import pytest

from jaxsimt.kernels import suites as S
from jaxsimt.kernels.suites import harness as H

# cases whose launches depend on what their kernels compute: the dry backend runs none (bfs launches one
# more pair of kernels per level until a kernel reports no update)
DATA_DEPENDENT = {("rodinia", "bfs")}
# samples whose size is fixed (warp votes and tile reductions over one or two blocks)
FIXED = {("cuda_samples", "simpleVoteIntrinsics"), ("cuda_samples", "simpleCooperativeGroups")}


@pytest.fixture(scope="module")
def dry(tmp_path_factory):
    """time_gpu.py --scale-check's records (run in its own process: it puts jaxsimt/kernels/ on sys.path)."""
    path = str(tmp_path_factory.mktemp("timing") / "sizes.json")
    subprocess.run([sys.executable, os.path.join(S.HERE, "time_gpu.py"), "--scale-check", "--json", path],
                   check=True, capture_output=True, text=True, timeout=300)
    with open(path) as f:
        return json.load(f)


def test_every_case_has_a_timing_record(dry):
    assert sorted(dry["cases"]) == sorted(f"{s}.{c}" for s, c in S.programs())


def test_timing_sizes_grow_within_limits(dry):
    for s, c in S.programs():
        rec = dry["cases"][f"{s}.{c}"]
        small, big = rec["default"], rec["timing"]
        assert (s, c) in FIXED or c in S.module(s).TIMING, f"{s}.{c}: no timing size"
        assert big["threads"] >= small["threads"] and big["bytes"] >= small["bytes"], f"{s}.{c} shrinks"
        if (s, c) not in FIXED:
            assert big["threads"] > small["threads"] or big["bytes"] > small["bytes"], f"{s}.{c} does not grow"
        assert big["bytes"] <= dry["memory_cap"], f"{s}.{c}: {big['bytes']} bytes"
        assert big["problems"] == [] and small["problems"] == [], (s, c, big["problems"], small["problems"])


def test_default_size_launches_as_the_h200_run(dry):
    """At default size each case launches what the committed H200 run recorded, launch for launch (the
    first iteration's launches where the count depends on the kernels' results)."""
    record = H.runs_record()
    for s, c in S.programs():
        got, want = dry["cases"][f"{s}.{c}"]["default"]["launches"], record[s][c]["launches"]
        if (s, c) in DATA_DEPENDENT:
            want = want[:len(got)]
        assert got == want, f"{s}.{c}"


def test_the_h200_timing_run_launched_what_the_drivers_launch(dry):
    """The committed H200 run at timing sizes (jaxsimt/data/h200/suites_timing/) launched, case by case, what
    the drivers launch at those sizes now; every case took a time, and Nsight Compute's launches are the
    first ones of each case, in order, with the time and cycle metrics the timing model is judged on."""
    record, ncu = H.timing_record(), H.timing_ncu()
    keys = ("kernel", "grid", "block", "smem")
    for s, c in S.programs():
        rec = record[s][c]
        got = [{k: l[k] for k in keys} for l in dry["cases"][f"{s}.{c}"]["timing"]["launches"]]
        want = [{k: l[k] for k in keys} for l in rec["launches"]]
        if (s, c) in DATA_DEPENDENT:
            want = want[:len(got)]
        assert got == want, f"{s}.{c}"
        assert "error" not in rec and rec["event_us_total_median"] > 0, f"{s}.{c}"
        profiled = ncu[(s, c)]
        assert sorted(profiled) == list(range(len(profiled))) and len(profiled) <= len(rec["launches"]), f"{s}.{c}"
        for i, m in profiled.items():
            assert m["launch__grid_size"] == blocks_of(rec["launches"][i]["grid"]), f"{s}.{c}[{i}]"
            assert m["gpu__time_duration.sum"] > 0 and m["sm__cycles_elapsed.max"] >= m["sm__cycles_active.max"] > 0


def blocks_of(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def test_first_launch_is_the_programs_first_launch():
    """harness.first_launch runs a program's first launch alone: the same stats as in the whole program."""
    whole = H.run("cuda_samples", "transpose")
    first = H.first_launch("cuda_samples", "transpose")
    assert whole.launches[0][0] == "copySharedMem"
    assert first.stats == whole.launches[0][1]


def test_a_suite_sample_replays_its_first_launch_at_timing_size():
    """calibrate.suite_sample traces a program's first launch at its timing size without running the whole
    grid, beside the H200's ncu time of that launch; its split is its suite's."""
    from jaxsimt.apps import calibrate
    from jaxsimt.timing import replay as timing

    s = calibrate.suite_sample("rodinia", "gaussian")
    assert (s.name, s.family, s.split) == ("rodinia.gaussian", "suites", "held_out")
    assert s.ms == H.timing_ncu()[("rodinia", "gaussian")][0]["gpu__time_duration.sum"] * 1e-6
    (row,) = calibrate.evaluate([s], timing.params_of("h200"))
    assert 0 < row["predicted_ms"] < 1 and row["predicted_cycles"] > 0
