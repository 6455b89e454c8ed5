"""The sanitizer (jaxsimt.machine.sanitizer): each check on small kernels whose bug (or absence of one) is known by
construction, with the line, thread and address the finding must name."""
import inspect

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, errors, f32, s32
from jaxsimt.machine import sanitizer
from jaxsimt.kernels.seeds import make_matmul_tiled
from jaxsimt.ptx.run import launch as ptx_launch


def line_of(fn, text: str) -> int:
    """The source line of `fn` holding `text` (the line a finding must name)."""
    src, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    hits = [first + i for i, s in enumerate(src) if text in s]
    assert len(hits) == 1, (text, hits)
    return hits[0]


# --------------------------------------------------------------------------- racecheck

def _reduce(barrier: bool):
    @js.kernel(name=f"reduce_{'ok' if barrier else 'nobarrier'}")
    def reduce(x: Ptr[f32], out: Ptr[f32]):
        s = js.shared((128,), f32, "s")
        t = js.threadIdx.x
        s[t] = x[t]
        js.syncthreads()
        for stride in (64, 32, 16) if not barrier else (64, 32, 16, 8, 4, 2, 1):
            with js.if_(t < stride):
                s[t] = s[t] + s[t + stride]  # the reduction step
            if barrier:
                js.syncthreads()
        with js.if_(t == 0):
            out[0] = s[0]
    return reduce


def test_missing_barrier_is_a_race_naming_both_accesses():
    k = _reduce(False)
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(sanitizer.RaceError) as e:
        js.launch(k, 1, 128, [x, np.zeros(1, np.float32)], check="racecheck")
    f = e.value.finding
    assert f.check == "racecheck" and f.kind == "data race"
    assert f.line == line_of(_reduce, "the reduction step") and f.other_line == f.line
    assert f.array == "s" and f.thread[0] < 64 and f.other_thread[0] >= 32  # a reader and a writer of another warp
    assert f.block == (0, 0, 0) and f.other_block == (0, 0, 0)
    assert "data race on 's' at byte offset" in str(e.value)


@pytest.mark.slow
def test_reduction_with_barriers_is_clean_and_correct():
    k = _reduce(True)
    x = np.arange(128, dtype=np.float32)
    r = js.launch(k, 1, 128, [x, np.zeros(1, np.float32)], check="all", collect=True)
    assert r.findings == []
    assert r["out"][0] == x.sum()


@js.kernel
def every_thread_writes_out0(out: Ptr[f32]):
    out[0] = 1.0  # every thread of the grid


@js.kernel
def atomic_counter(out: Ptr[f32]):
    out.atomic_add(0, 1.0)


@pytest.mark.slow
def test_global_write_by_every_thread_races_across_blocks_atomics_do_not():
    r = js.launch(every_thread_writes_out0, 4, 64, [np.zeros(1, np.float32)], check="racecheck", collect=True)
    kinds = {f.kind for f in r.findings}
    assert "data race" in kinds
    f = next(f for f in r.findings if f.kind == "data race")
    assert f.line == line_of(every_thread_writes_out0, "every thread of the grid") and f.array == "out"
    r = js.launch(atomic_counter, 4, 64, [np.zeros(1, np.float32)], check="all", collect=True)
    assert r.findings == [] and r["out"][0] == 256


def _warp_reduce(sync: bool):
    @js.kernel(name=f"warp_reduce_{'sync' if sync else 'nosync'}")
    def warp_reduce(x: Ptr[f32], out: Ptr[f32]):
        s = js.shared((32,), f32, "s")
        t = js.threadIdx.x
        s[t] = x[t]
        if sync:
            js.syncwarp()
        for off in (16, 8, 4, 2, 1):
            with js.if_(t < off):
                s[t] = s[t] + s[t + off]  # warp step
            if sync:
                js.syncwarp()
        with js.if_(t == 0):
            out[0] = s[0]
    return warp_reduce


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["stack", "its"])
def test_warp_synchronous_code_without_syncwarp_is_a_hazard(mode):
    x = np.arange(32, dtype=np.float32)
    r = js.launch(_warp_reduce(False), 1, 32, [x, np.zeros(1, np.float32)], check="racecheck", collect=True,
                  mode=mode)
    assert r.findings and {f.kind for f in r.findings} == {sanitizer.KIND[errors.FaultCode.WARP_HAZARD]}
    assert all(f.line == line_of(_warp_reduce, "warp step") for f in r.findings)
    assert "independent thread scheduling" in r.findings[0].message
    r = js.launch(_warp_reduce(True), 1, 32, [x, np.zeros(1, np.float32)], check="all", collect=True, mode=mode)
    assert r.findings == [] and r["out"][0] == x.sum()


@pytest.mark.slow
def test_tiled_matmul_with_double_barrier_is_clean():
    N = 32
    rng = np.random.default_rng(0)
    A, B = rng.random((N, N), np.float32), rng.random((N, N), np.float32)
    r = js.launch(make_matmul_tiled(16), (2, 2), (16, 16), [N, N, A, B, np.zeros((N, N), np.float32)], check="all",
                  collect=True)
    assert r.findings == []
    np.testing.assert_allclose(r["C"], A @ B, rtol=1e-5)


# --------------------------------------------------------------------------- initcheck

@js.kernel
def copy(x: Ptr[f32], out: Ptr[f32]):
    t = js.threadIdx.x
    out[t] = x[t]  # the copy


@js.kernel
def read_unwritten_shared(out: Ptr[f32]):
    s = js.shared((64,), f32, "s")
    t = js.threadIdx.x
    with js.if_(t < 32):
        s[t] = 1.0
    js.syncthreads()
    out[t] = s[t]  # threads 32..63 read what no thread wrote


def test_initcheck_uninitialized_global_and_shared():
    with pytest.raises(sanitizer.UninitializedReadError) as e:
        js.launch(copy, 1, 64, [sanitizer.uninit(64, np.float32), np.zeros(64, np.float32)], check="initcheck")
    f = e.value.finding
    assert (f.line, f.array, f.thread, f.extra["offset"]) == (line_of(copy, "the copy"), "x", (0, 0, 0), 0)
    r = js.launch(copy, 1, 64, [np.ones(64, np.float32), np.zeros(64, np.float32)], check="initcheck", collect=True)
    assert r.findings == []
    r = js.launch(read_unwritten_shared, 1, 64, [np.zeros(64, np.float32)], check="initcheck", collect=True)
    (f,) = r.findings
    assert f.kind == "uninitialized read" and f.array == "s" and f.thread == (32, 0, 0) and f.extra["offset"] == 128
    assert f.count == 32


def test_uninit_marker_is_zeros_of_the_shape_and_dtype():
    a = sanitizer.uninit((4, 8), np.int32)
    assert a.shape == (4, 8) and a.dtype == np.int32 and sanitizer.is_uninit(a) and not a.any()
    assert not sanitizer.is_uninit(np.zeros(3))


# --------------------------------------------------------------------------- synccheck

@js.kernel
def half_block_barrier(out: Ptr[f32]):
    t = js.threadIdx.x
    with js.if_(t < 128):
        js.syncthreads()  # half the block
    out[t] = 1.0  # the others run on


@js.kernel
def two_barriers(out: Ptr[f32]):
    t = js.threadIdx.x
    with js.if_(t < 64):
        js.syncthreads()  # first barrier
        out[t] = 1.0
    with js.else_():
        js.syncthreads()  # second barrier
        out[t] = 2.0


@pytest.mark.parametrize("mode", ["stack", pytest.param("its", marks=pytest.mark.slow)])
def test_barrier_reached_by_half_the_block(mode):
    with pytest.raises(sanitizer.SyncError) as e:
        js.launch(half_block_barrier, 1, 256, [np.zeros(256, np.float32)], check="synccheck", mode=mode)
    f = e.value.finding
    assert f.kind == "barrier skipped by live threads" and f.thread[0] >= 128
    assert f.line == line_of(half_block_barrier, "the others run on")
    assert f.other_line == line_of(half_block_barrier, "half the block")
    # without the check the launch runs, as it does on Volta and later
    js.launch(half_block_barrier, 1, 256, [np.zeros(256, np.float32)], mode=mode)


@pytest.mark.slow
def test_threads_waiting_at_different_barriers():
    r = js.launch(two_barriers, 1, 128, [np.zeros(128, np.float32)], check="synccheck", collect=True)
    kinds = {f.kind for f in r.findings}
    assert "threads wait at different barriers" in kinds or "barrier skipped by live threads" in kinds


@js.kernel
def syncwarp_half_mask(out: Ptr[f32]):
    t = js.threadIdx.x
    with js.if_(t < 16):
        js.syncwarp(0xFFFFFFFF)  # names lanes 16..31, which do not come
        out[t] = 1.0


def test_syncwarp_mask_naming_absent_lanes():
    r = js.launch(syncwarp_half_mask, 1, 32, [np.zeros(32, np.float32)], check="synccheck", collect=True)
    (f,) = r.findings
    assert f.kind == sanitizer.KIND[errors.FaultCode.SYNC_MASK] and f.thread == (16, 0, 0)
    assert f.line == line_of(syncwarp_half_mask, "which do not come")


# --------------------------------------------------------------------------- memcheck, PTX provenance

NEIGHBOUR_PTX = """
.version 9.0
.target sm_90
.address_size 64
.visible .entry nb(.param .u64 nb_in, .param .u64 nb_out, .param .u32 nb_n)
{
  .reg .pred %p<2>; .reg .f32 %f<2>; .reg .b32 %r<6>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [nb_in];
  ld.param.u64 %rd2, [nb_out];
  ld.param.u32 %r2, [nb_n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__BB0_2;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5+4];
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd7, %rd6, %rd4;
  st.global.f32 [%rd7], %f1;
$L__BB0_2:
  ret;
}
"""


def test_ptx_overflow_into_the_next_allocation_faults_against_its_own_array():
    a = np.arange(256, dtype=np.float32)  # 1024 bytes: `out` starts right after it
    with pytest.raises(errors.MemoryFault) as e:
        ptx_launch(NEIGHBOUR_PTX, "nb", 2, 128, [a, np.zeros(256, np.float32), 256])
    msg = str(e.value)
    assert "'nb_in' at byte offset 1024 (array is 1024 bytes)" in msg and "thread (127, 0, 0)" in msg
    assert "block (1, 0, 0)" in msg
    r = ptx_launch(NEIGHBOUR_PTX, "nb", 2, 128, [a, np.zeros(256, np.float32), 256], check="memcheck",
                   collect=True)
    (f,) = r.findings
    assert f.check == "memcheck" and f.count == 1 and f.thread == (127, 0, 0) and f.block == (1, 0, 0)
    np.testing.assert_array_equal(r["nb_out"][:255], a[1:])  # the faulting lane's access is dropped


def test_unknown_check_is_refused():
    with pytest.raises(errors.LaunchConfigError, match="unknown check 'bogus'"):
        js.launch(copy, 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)], check="racecheck,bogus")
    assert sanitizer.parse("all") == frozenset(sanitizer.CHECKS) and sanitizer.parse(None) == frozenset()


def test_checks_off_keep_no_sanitizer_state():
    from jaxsimt.run.launch import _program_of
    js.launch(copy, 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)])
    js.launch(copy, 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)], check="all", collect=True)
    machines = _program_of(copy).__dict__["_machines"]
    on = [m for (_, _, o, _), m in machines.items() if o.check]
    off = [m for (_, _, o, _), m in machines.items() if not o.check]
    assert on and off
    for m in off:  # no shadow memory, no findings table, no loads handed to the memory stage
        assert not m.uses_shadow and not m.n_pending and not m.options.check
    assert all(m.uses_shadow and m.n_pending for m in on if "racecheck" in m.options.check)
    # the blocks are cut the same way with and without checks: a checked run takes no extra steps
    assert {len(m.program.blocks) for m in on + off} == {len(off[0].program.blocks)}


def test_cli_check_collects_findings_as_json(tmp_path, capsys):
    import json

    from jaxsimt import cli

    ptx = tmp_path / "nb.ptx"
    ptx.write_text(NEIGHBOUR_PTX)
    base = ["run", str(ptx), "--kernel", "nb", "--grid", "2", "--block", "128", "--no-timing",
            "--arg", "f32[256]:uninit", "--arg", "f32[256]:zeros", "--arg", "s32:256"]
    assert cli.main(base + ["--check", "memcheck,initcheck", "--collect", "--json"]) == 1  # findings: status 1
    out = json.loads(capsys.readouterr().out)
    kinds = {(f["check"], f["kind"]) for f in out["findings"]}
    assert kinds == {("memcheck", "out-of-bounds global access"), ("initcheck", "uninitialized read")}
    oob = next(f for f in out["findings"] if f["check"] == "memcheck")
    assert oob["thread"] == [127, 0, 0] and oob["block"] == [1, 0, 0] and oob["offset"] == 1024
    # without --collect the first finding stops the run as a kernel fault (n = 255: no thread reads past `in`)
    assert cli.main(base[:-1] + ["s32:255", "--check", "initcheck"]) == 1
    assert "read of uninitialized memory, 'nb_in' at byte offset 4" in capsys.readouterr().err
    assert cli.main(base + ["--check", "bogus"]) == 2
