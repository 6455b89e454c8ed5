"""Every H200 micro-kernel in the emulator: exact equality of the memory counters with Nsight Compute.

For each kernel of jaxsimt/kernels/cuda/micro_{shared,global,divergence}.cu (DSL versions in
jaxsimt.kernels.micro), launched with the profiled configuration: outputs equal the numpy reference, and
global requests/sectors and shared wavefronts/bank conflicts (loads and stores) equal the H200's
(jaxsimt/data/h200/ncu_metrics.csv). Launches are cached per kernel, so each runs once per session.
"""
import functools
import json

import pytest

from jaxsimt.apps import fixtures, validate
from jaxsimt.kernels.micro import REGISTRY, groups

NAMES = list(REGISTRY)
# Kernels that need a compiled machine of their own (a group of one or two) are the slow part of the
# file (a few seconds of compilation each); the large groups share one compilation.
_GROUP_SIZE = {n: len(g) for g in groups().values() for n in g}
PARAMS = [pytest.param(n, marks=pytest.mark.slow) if _GROUP_SIZE[n] <= 2 else n for n in NAMES]
HW = fixtures.ncu_metrics("h200")
CONFIG = fixtures.ncu_kernels("h200")


@functools.lru_cache(maxsize=None)
def _rows(name):
    return {r.metric: r for r in validate.compare(name, REGISTRY[name], "h200")}


def test_registry_covers_every_profiled_micro_kernel():
    micro = {k for k, v in CONFIG.items() if v.program.startswith("micro_")}
    assert set(REGISTRY) == micro
    assert len(REGISTRY) == 95
    # few compiled machines: kernels differing only in scalar arguments share one
    assert len(groups()) <= 24


@pytest.mark.parametrize("name", NAMES)
def test_launch_configuration_matches_profile(name):
    m, c = REGISTRY[name], CONFIG[name]
    assert m.program == c.program
    assert tuple(m.grid) + (1,) * (3 - len(m.grid)) == c.grid
    assert tuple(m.block) + (1,) * (3 - len(m.block)) == c.block
    hw = HW[name]
    assert m.smem == hw["launch__shared_mem_per_block_static"] + hw["launch__shared_mem_per_block_dynamic"]


@pytest.mark.parametrize("name", PARAMS)
def test_counters_equal_h200(name):
    rows = _rows(name)
    assert rows["outputs"].emulator == "equal", f"{name}: outputs differ from the numpy reference"
    got = {m: rows[m].emulator for m in validate.EXACT_METRICS}
    want = {m: rows[m].hardware for m in validate.EXACT_METRICS}
    assert got == want
    occ = rows[validate.OCCUPANCY_METRIC]
    assert occ.emulator == occ.hardware


# Divergent branch targets, hand-counted per warp (8 warps): the H200 and the emulator agree where both
# branch; `div_early_return`'s `if (gtid >= n) return;` is a predicated EXIT in SASS (0 on the hardware)
# but a branch here, divergent in the one warp that straddles n = 200 (lanes 192-199 stay).
DIVERGENT = {
    "div_none": (0, 0),
    "div_halfwarp": (8, 8),  # one divergent if/else per warp
    "div_nested": (16, 16),  # two per warp: lane < 16, then lane < 8 for the lower half
    "div_loop": (56, 56),  # the loop exit diverges after trips 1..7 (all lanes leave after 8)
    "div_early_return": (0, 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DIVERGENT))
def test_divergent_branch_targets(name):
    row = _rows(name)[validate.DIVERGENCE_METRIC]
    assert (row.hardware, row.emulator) == DIVERGENT[name]


def test_cli_json_and_exit_status(capsys):
    assert validate.main(["--kernels", "^smem_stride_s(2|4)$", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["kernels"] == 2 and not out["summary"]["mismatches"]
    assert out["summary"]["exact_matched"] == out["summary"]["exact_compared"] == 2 * 10
    assert validate.main(["--kernels", "no_such_kernel"]) == 2
    assert validate.main(["--arch", "g80"]) == 2


def test_cli_fails_on_a_mismatch(monkeypatch, capsys):
    real = fixtures.ncu_metrics("h200")
    fake = {k: dict(v) for k, v in real.items()}
    fake["smem_stride_s2"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] = 7
    monkeypatch.setattr(fixtures, "ncu_metrics", lambda arch="h200": fake)
    assert validate.main(["--kernels", "^smem_stride_s2$"]) == 1
    assert "MISMATCH" in capsys.readouterr().out
