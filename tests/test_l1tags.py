"""The timing model's L1 tag model (jaxsimt.timing.l1tags): warp lookups by hand, the cache against a plain
LRU reference, and L1 hit rates against the H200 (jaxsimt/data/h200/suites_cache/)."""
from __future__ import annotations

import csv
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxsimt
from jaxsimt.arch import get_arch
from jaxsimt.timing import l1tags
from jaxsimt.units import rocache

ARCH = get_arch("h200")
LINE, SECTOR = ARCH.line_size, ARCH.sector_size
FIXTURE = os.path.join(os.path.dirname(jaxsimt.__file__), "data", "h200", "suites_cache", "suites_cache.csv")


def _lookups(line, bits, pc=None, allocate=None):
    n = len(line)
    return l1tags.Lookups(np.asarray(line, np.int64), np.asarray(bits, np.uint32),
                          np.zeros(n, np.int32) if pc is None else np.asarray(pc, np.int32),
                          np.ones(n, bool) if allocate is None else np.asarray(allocate, bool))


def reference(cs, lk: l1tags.Lookups, n_pcs: int):
    """A plain LRU of sectored lines, one lookup at a time (the hashed set index computed in numpy)."""
    sets = [[] for _ in range(cs.sets)]  # per set: [line, valid bits], most recently used last
    mixed = (lk.line.astype(np.uint64) * np.uint64(l1tags._MIX)) >> np.uint64(32)
    index = (mixed % np.uint64(cs.sets)).astype(np.int64)
    hits, misses = np.zeros(n_pcs, np.int64), np.zeros(n_pcs, np.int64)
    for line, want, pc, alloc, s in zip(lk.line, lk.bits, lk.pc, lk.allocate, index):
        ways = sets[s]
        entry = next((e for e in ways if e[0] == line), None) if alloc else None
        old = entry[1] if entry else 0
        hits[pc] += bin(int(want) & old).count("1")
        misses[pc] += bin(int(want) & ~old & 0xFFFFFFFF).count("1")
        if not alloc:
            continue
        if entry:
            ways.remove(entry)
        elif len(ways) == cs.ways:
            ways.pop(0)
        ways.append([line, old | int(want)])
    return hits, misses


def test_warp_lookups_by_hand():
    cs = rocache.CacheShape(4, 4, LINE, SECTOR)
    lanes = np.arange(32)
    addr = np.stack([4096 + 4 * lanes,  # coalesced: one line, its 4 sectors
                     np.full(32, 8192 + 40),  # broadcast: one line, one sector
                     LINE * lanes[::-1] + 4,  # a column walk: 32 lines, in lane order
                     4096 + 4 * lanes]).astype(np.int64)
    ok = np.ones((4, 32), bool)
    ok[3] = lanes >= 24  # the last 8 lanes: the line's last sector only
    line, bits, warp = l1tags.warp_lookups(cs, addr, ok, 4)
    assert list(warp) == [0, 1] + [2] * 32 + [3]
    assert list(line[:2]) == [4096 // LINE, 8192 // LINE]
    assert list(bits[:2]) == [0b1111, 0b0010]
    assert list(line[2:34]) == list(31 - lanes) and set(bits[2:34]) == {1}
    assert line[34] == 4096 // LINE and bits[34] == 0b1000


def test_sectors_fill_one_at_a_time():
    cs = rocache.CacheShape(1, 4, LINE, SECTOR)
    hits, misses = l1tags.simulate(cs, _lookups([7, 7, 7, 7], [0b0001, 0b0001, 0b0011, 0b1111]), 1)
    # a second sector of a present line misses once; the line's other sectors miss until fetched
    assert (hits[0], misses[0]) == (0 + 1 + 1 + 2, 1 + 0 + 1 + 2)


@pytest.mark.parametrize("n_lines, expect_hits", [(4, 3 * 4), (5, 0)])
def test_lru_capacity(n_lines, expect_hits):
    """Four ways of one set: a loop over four lines hits from its second pass on, over five lines never
    (LRU evicts each line just before it comes back)."""
    cs = rocache.CacheShape(1, 4, LINE, SECTOR)
    lines = list(range(n_lines)) * 4
    hits, misses = l1tags.simulate(cs, _lookups(lines, [1] * len(lines)), 1)
    assert hits[0] == expect_hits and hits[0] + misses[0] == len(lines)


def test_bypassing_loads_neither_hit_nor_fill():
    cs = rocache.CacheShape(1, 4, LINE, SECTOR)
    lk = _lookups([3, 3, 3, 3], [1, 1, 1, 1], pc=[0, 0, 1, 1], allocate=[False, True, False, True])
    hits, misses = l1tags.simulate(cs, lk, 2)
    assert list(hits) == [0, 1] and list(misses) == [2, 1]  # the .cg load after the fill still misses


def test_hashed_sets_spread_power_of_two_strides():
    """Rows 8 KiB apart (64 lines) fall in few sets under `line % sets`; the hashed index spreads them."""
    sets = 512
    rows = np.arange(128, dtype=np.int64) * 64
    import jax
    with jax.enable_x64(True):
        used = np.unique(np.asarray(l1tags.set_index(rows, sets)))
    assert len(np.unique(rows % sets)) == 8 and len(used) > 100


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4),
       st.lists(st.tuples(st.integers(0, 40), st.integers(1, 15), st.integers(0, 2), st.booleans()),
                min_size=1, max_size=120))
def test_simulate_equals_plain_lru(sets, ways, seq):
    cs = rocache.CacheShape(sets, ways, LINE, SECTOR)
    line, bits, pc, alloc = (list(x) for x in zip(*seq))
    lk = _lookups(line, bits, pc, [a or k % 3 != 0 for k, a in enumerate(alloc)])
    hits, misses = l1tags.simulate(cs, lk, 3)
    want_h, want_m = reference(cs, lk, 3)
    assert list(hits) == list(want_h) and list(misses) == list(want_m)


def test_collector_takes_rounds_in_order():
    cs = rocache.CacheShape(1, 4, LINE, SECTOR)
    sink = l1tags.Collector(cs, {5: True}, warps_per_block=1, blocks_per_sm=1)
    addr = np.asarray([[0] * 32, [LINE * 10] * 32], np.int64)  # warp 0: block 0 (round 0), warp 1: round 1
    ok = np.ones((2, 32), bool)
    sink(5, "global", addr, ok, 4)
    sink(5, "global", addr + 2 * LINE, ok, 4)
    sink(6, "global", addr, ok, 4)  # not a listed load
    (lk,) = sink.lookups()
    assert list(lk.line) == [0, 2, 10, 12] and list(lk.pc) == [5] * 4


def test_collector_runs_a_step_warp_by_warp(monkeypatch):
    """Within one step (rising pcs), each warp's loads in program order before the next warp's; a round keeps at
    most MAX_LOOKUPS_PER_ROUND lookups, its first."""
    cs = rocache.CacheShape(1, 4, LINE, SECTOR)
    sink = l1tags.Collector(cs, {5: True, 7: True}, warps_per_block=2, blocks_per_sm=1)
    addr = np.asarray([[0] * 32, [LINE * 10] * 32], np.int64)  # two warps of one block
    ok = np.ones((2, 32), bool)
    sink(5, "global", addr, ok, 4)
    sink(7, "global", addr + LINE, ok, 4)
    assert list(sink.lookups()[0].line) == [0, 1, 10, 11]
    monkeypatch.setattr(l1tags, "MAX_LOOKUPS_PER_ROUND", 3)
    sink = l1tags.Collector(cs, {5: True, 7: True}, warps_per_block=2, blocks_per_sm=1)
    sink(5, "global", addr, ok, 4)
    sink(7, "global", addr + LINE, ok, 4)
    assert list(sink.lookups()[0].line) == [0, 1, 10]


def test_blocks_on_other_sms_keep_their_own_l1():
    """Two blocks reading the same line: on one SM the second hits; on two SMs (two L1s) both miss."""
    cs = rocache.CacheShape(1, 4, LINE, SECTOR)
    addr, ok = np.zeros((2, 32), np.int64), np.ones((2, 32), bool)  # block 0 and block 1, one warp each
    for sms, hits in (([0, 0], 1), ([0, 1], 0)):
        sink = l1tags.Collector(cs, {5: True}, warps_per_block=1, blocks_per_sm=2, sm_of_block=sms)
        sink(5, "global", addr, ok, 4)
        h, m = l1tags.simulate(cs, sink.lookups(), 6)
        assert (h[5], m[5]) == (hits, 2 - hits)


def _h200_hit_rate(suite, case):
    with open(FIXTURE) as f:
        m = {r["metric"]: float(r["value"]) for r in csv.DictReader(f)
             if (r["suite"], r["case"], r["launch"]) == (suite, case, "0")}
    ld = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld"
    return m[ld + "_lookup_hit.sum"] / m[ld + ".sum"]


@pytest.mark.parametrize("suite, case", [("rodinia", "nn"), ("cuda_samples", "vectorAdd")])
def test_l1_hit_rate_against_the_h200(suite, case):
    """The tag model's L1 hit rate of a corpus launch at its timing size within 5 points of the H200's (nn: each
    thread loads a record's two floats one after the other, 50%; vectorAdd streams, 0%)."""
    from jaxsimt.kernels import suites as S
    from jaxsimt.kernels.suites import harness as H
    from jaxsimt.run import launch_timing
    from jaxsimt.timing import replay

    r = H.first_launch(suite, case, S.module(suite).TIMING.get(case), ctas=[0], arch="h200")
    R = int(r.stats["active_blocks_per_sm"])
    ctas = replay.traced_blocks(int(np.prod(r.grid)), R, ARCH.num_sms)
    hits, misses = launch_timing.l1_hits(r, ctas, R, ARCH, r.stats)
    assert abs(hits.sum() / (hits + misses).sum() - _h200_hit_rate(suite, case)) <= 0.05


@jaxsimt.kernel
def _load_twice(a: jaxsimt.Ptr[jaxsimt.f32], out: jaxsimt.Ptr[jaxsimt.f32]):
    i = jaxsimt.global_thread_index()
    x = a[i]
    out[i] = x * a[i + 0 * i]  # the same word again: a second load of the sector (not folded into the first)


def test_launch_reports_the_l1_hit_rate():
    """launch(timing=True): every warp loads its 128 bytes twice, so the tag model hits half the load sectors;
    the footprint model spreads one block's distinct bytes (both arrays': 64 sectors) over all its global
    sectors, the store's included (96): a third."""
    a = np.arange(4096, dtype=np.float32)
    for l1, rate in (("tags", 1 / 2), ("footprint", 1 / 3)):
        r = jaxsimt.launch(_load_twice, 16, 256, (a, np.zeros_like(a)), arch="h200", timing=True, l1=l1)
        assert r.stats["timing__l1_global_load_hit_rate"] == pytest.approx(rate), l1
        assert r.stats["cycles"] > 0


def test_unknown_l1_model_is_refused_before_running():
    a = np.zeros(256, np.float32)
    with pytest.raises(jaxsimt.errors.ArgumentError, match="_load_twice.*l1='lru'.*tags, footprint"):
        jaxsimt.launch(_load_twice, 1, 256, (a, a.copy()), arch="h200", timing=True, l1="lru")


_TWICE_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry twice(.param .u64 a, .param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd3, %rd5;
  ld.global{op}.f32 %f1, [%rd6];
  ld.global{op}.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  add.s64 %rd7, %rd4, %rd5;
  st.global.f32 [%rd7], %f3;
  ret;
}
"""


@pytest.mark.parametrize("op, rate", [("", 0.5), (".ca", 0.5), (".cg", 0.0), (".cv", 0.0)])
def test_l2_only_loads_never_hit_l1(tmp_path, op, rate):
    """PTX loads cached in L2 only (.cg, .cv) neither hit nor fill the L1 model; default and .ca loads do."""
    from jaxsimt import ptx

    path = tmp_path / "twice.ptx"
    path.write_text(_TWICE_PTX.replace("{op}", op))
    a = np.arange(256, dtype=np.float32)
    r = ptx.launch(str(path), "twice", 1, 256, (a, np.zeros_like(a)), arch="h200", timing=True)
    np.testing.assert_array_equal(r["out"], 2 * a)
    assert r.stats["timing__l1_global_load_hit_rate"] == pytest.approx(rate)


def test_first_requests_by_hand():
    """An SM's first requests: a sector counts once, at the first lookup that wants it, whichever instruction
    that is and whatever L1 did with it since; each SM (list entry) has its own."""
    sm0 = _lookups([5, 5, 6, 5], [0b0011, 0b0110, 0b0001, 0b1111], pc=[0, 1, 1, 2])
    sm1 = _lookups([5], [0b0001], pc=[2])
    # sm0: pc 0 asks first for sectors 0, 1 of line 5; pc 1 for sector 2 of line 5 and sector 0 of line 6;
    # pc 2 for sector 3 of line 5; sm1: pc 2 for sector 0 of line 5 again
    assert l1tags.first_requests([sm0, sm1], 4).tolist() == [2, 2, 2, 0]
    assert l1tags.first_share(np.array([2, 2, 0]), np.array([4, 2, 0])).tolist() == [0.5, 1.0, 1.0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 15), st.integers(0, 2)), min_size=1, max_size=60))
def test_first_requests_at_most_the_misses(rows):
    """However the lookups come, a first request misses (the L1 never held the sector), so an instruction's
    first requests are at most its misses, and their sum is the stream's distinct sectors."""
    line, bits, pc = (list(x) for x in zip(*rows))
    lk = _lookups(line, bits, pc)
    cs = rocache.CacheShape(2, 2, LINE, SECTOR)
    _, misses = l1tags.simulate(cs, lk, 3)
    first = l1tags.first_requests(lk, 3)
    assert (first <= misses).all()
    distinct = {(ln, k) for ln, b, _ in rows for k in range(4) if b >> k & 1}
    assert first.sum() == len(distinct)
