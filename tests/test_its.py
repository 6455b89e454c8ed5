"""Independent Thread Scheduling (launch mode "its") against the reconvergence stack (the default).

The spin lock livelocks under the stack (the step budget stops it with an error naming the warp, its pcs
and the cause) and completes under ITS; lockstep-assuming warp code is wrong under ITS and right with
`syncwarp`; a divergent loop gives identical results with the hand-derived schedules of both modes;
jit and no-jit agree; the PTX forms (jaxsimt/kernels/cuda/its.cu, nvcc output in jaxsimt/kernels/ptx/its.ptx) do the same.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.machine import its
from jaxsimt.kernels import its as K

PTX = os.path.join(os.path.dirname(os.path.abspath(K.__file__)), "ptx", "its.ptx")  # nvcc output of cuda/its.cu


def _spin_args(n=1):
    return [np.zeros(n, np.int32), np.zeros(n, np.int32)]


# ------------------------------------------------------------------------------------ architectures


def test_its_is_opt_in_and_only_on_volta_and_later():
    assert {a: js.get_arch(a).its_supported for a in ("g80", "fermi", "h100", "h200")} == \
        {"g80": False, "fermi": False, "h100": True, "h200": True}
    for a in ("g80", "fermi"):
        with pytest.raises(js.LaunchConfigError, match="Independent Thread Scheduling"):
            js.launch(K.spin_lock, 1, 32, _spin_args(), arch=a, mode="its")
    with pytest.raises(js.LaunchConfigError, match="mode must be one of"):
        js.launch(K.spin_lock, 1, 32, _spin_args(), mode="volta")


# ------------------------------------------------------------------------------------ the spin lock


@pytest.fixture(scope="module")
def spin_its():
    return js.launch(K.spin_lock, 1, 32, _spin_args(), mode="its", trace=True, max_steps=400)


def test_spin_lock_livelocks_under_the_stack_with_a_clear_error():
    with pytest.raises(js.StepBudgetExceeded) as e:
        js.launch(K.spin_lock, 1, 32, _spin_args(), max_steps=300)
    msg = str(e.value)
    assert "kernel spin_lock" in msg and "step budget of 300" in msg
    assert "warp 0 of block (0, 0, 0)" in msg and "stack depth 2" in msg
    # the loop's pcs: the atomicCAS spin (block 1) and its back edge (block 2)
    pc1 = K.spin_lock.program.pc_lists()[1][0]
    assert f"cycled through pcs {pc1}-" in msg and "lock.atomic_cas" in msg
    assert "intra-warp lock" in msg and "mode='its'" in msg


def test_spin_lock_completes_under_its(spin_its):
    r = spin_its
    assert r["counter"].tolist() == [32] and r["lock"].tolist() == [0]
    assert r.stats["max_stack_depth"] == 0 and r.stats["emulator__max_pc_groups"] == 2
    # schedule, by hand: all lanes run the CAS (block 1); lane 0 wins. The 31 losers take the back edge
    # (block 2) and yield, so the winner runs the critical section and exits (block 3); then the losers
    # run the CAS again and lane 1 wins, and so on: one lane per round, in lane order.
    want = [(0, 0xFFFFFFFF)]
    for k in range(32):
        losers = (0xFFFFFFFF << (k + 1)) & 0xFFFFFFFF
        want.append((1, (0xFFFFFFFF << k) & 0xFFFFFFFF))
        if losers:
            want.append((2, losers))
        want.append((3, 1 << k))
    assert _schedule(r) == want
    # counters follow the schedule: per block, executions x instructions
    n = [len(p) for p in K.spin_lock.program.pc_lists()]
    warp = sum(n[b] for b, _ in want)
    thread = sum(n[b] * bin(m).count("1") for b, m in want)
    assert r.stats["smsp__inst_executed.sum"] == warp
    assert r.stats["smsp__thread_inst_executed.sum"] == thread
    assert r.stats["simd_efficiency"] == pytest.approx(thread / (32 * warp))
    assert r.stats["smsp__sass_branch_targets_threads_divergent.sum"] == 31  # every CAS round but the last


@pytest.mark.slow
def test_spin_lock_jit_and_no_jit_agree():
    # a partial warp of 4 lanes keeps the op-by-op run short
    a, b = (js.launch(K.spin_lock, 1, 4, _spin_args(), mode="its", trace=True, max_steps=100, jit=j)
            for j in (True, False))
    assert a["counter"].tolist() == b["counter"].tolist() == [4]
    assert a.stats == b.stats
    for k in ("block", "mask", "sp"):
        np.testing.assert_array_equal(a.trace[k], b.trace[k])


@pytest.mark.slow
def test_spin_lock_across_warps_and_blocks_under_its():
    # two blocks of four warps: lanes contend within a warp and warps within a block; no warp starves
    r = js.launch(K.spin_lock, 2, 128, _spin_args(2), mode="its", max_steps=20000)
    assert r["counter"].tolist() == [128, 128]


# ------------------------------------------------------------------------------------ warp-synchronous code


def _warp_sum_args(sync: int, warps: int = 2):
    lens = ((np.arange(32 * warps) * 7) % 11).astype(np.int32)
    x = np.random.default_rng(3).integers(0, 100, 32 * 32 * warps).astype(np.int32)
    ref = [int(sum(x[t * 32:t * 32 + lens[t]].sum() for t in range(w * 32, w * 32 + 32))) for w in range(warps)]
    return [lens, x, np.zeros(warps, np.int32), np.int32(sync)], ref


@pytest.mark.parametrize("mode", [pytest.param("stack", marks=pytest.mark.slow), "its"])
def test_warp_sum_needs_syncwarp_under_its(mode):
    args, ref = _warp_sum_args(0)
    lockstep = js.launch(K.warp_sum, 1, 64, args, mode=mode)["out"].tolist()
    args, _ = _warp_sum_args(1)
    synced = js.launch(K.warp_sum, 1, 64, args, mode=mode)["out"].tolist()
    assert synced == ref  # with __syncwarp: right in both modes
    if mode == "stack":
        assert lockstep == ref  # lockstep holds under the stack: the hidden assumption works
    else:
        # lanes with short loops run ahead and read partial sums their warp-mates have not written yet
        assert lockstep != ref


# ------------------------------------------------------------------------------------ a divergent loop


@pytest.fixture(scope="module")
def loop_tail():
    return {m: js.launch(K.loop_tail, 1, 32, [np.zeros(32, np.int32)], mode=m, trace=True) for m in ("stack", "its")}


def _schedule(r):
    """(front-end block, warp 0's mask) per step. The machine cuts blocks after memory instructions (and, under
    ITS, before warp-synchronous ones); consecutive steps through the pieces of one block are one entry."""
    origin = [b.front_index for b in r.program.blocks]
    out = []
    for b, m in zip(r.trace["block"].tolist(), r.trace["mask"]):
        step = (origin[b], int(m[0]))
        continuation = b > 0 and origin[b - 1] == origin[b]
        if not (continuation and out and out[-1] == step):
            out.append(step)
    return out


def test_divergent_loop_same_results_different_schedule(loop_tail):
    want = 3 * (np.arange(32) % 4) + 7
    for r in loop_tail.values():
        np.testing.assert_array_equal(r["out"], want)
    # blocks: 0 entry, 1 loop test, 2 body, 3 increment + back edge, 4 tail (store, exit); the machine runs the
    # body and the increment as one step (`program.merge_straight`), so block 3 never appears on its own.
    # lanes by trip count t % 4: 0 -> 0x11111111, 1 -> 0x22222222, 2 -> 0x44444444, 3 -> 0x88888888
    A, L1, L2 = 0xFFFFFFFF, 0xEEEEEEEE, 0xCCCCCCCC
    # stack: the lanes that leave the loop wait at its reconvergence point; the tail runs once. The back edge
    # runs the loop test in its own step (`program.thread_jumps`): block 1 runs alone only on entry.
    assert _schedule(loop_tail["stack"]) == [(0, A), (1, A), (2, L1), (2, L2), (2, 0x88888888), (4, A)]
    # ITS: after each back edge the looping group yields and the group that left runs the tail on its own
    assert _schedule(loop_tail["its"]) == [
        (0, A), (1, A), (2, L1), (4, 0x11111111), (1, L1), (2, L2), (4, 0x22222222),
        (1, L2), (2, 0x88888888), (4, 0x44444444), (1, 0x88888888), (4, 0x88888888)]
    s, i = loop_tail["stack"].stats, loop_tail["its"].stats
    tail = len(K.loop_tail.program.pc_lists()[4])
    assert i["smsp__thread_inst_executed.sum"] == s["smsp__thread_inst_executed.sum"]
    assert i["smsp__inst_executed.sum"] == s["smsp__inst_executed.sum"] + 3 * tail  # tail 4 times, not once
    assert i["simd_efficiency"] < s["simd_efficiency"]
    assert s["max_stack_depth"] == 2 and i["emulator__max_pc_groups"] == 2


@pytest.mark.slow
def test_divergent_loop_jit_and_no_jit_agree(loop_tail):
    a = loop_tail["its"]
    b = js.launch(K.loop_tail, 1, 32, [np.zeros(32, np.int32)], mode="its", trace=True, jit=False)
    np.testing.assert_array_equal(a["out"], b["out"])
    assert a.stats == b.stats and _schedule(a) == _schedule(b)
    np.testing.assert_array_equal(a.trace["sp"], b.trace["sp"])


# ------------------------------------------------------------------------------------ barriers


@js.kernel
def split_barrier(out: js.Ptr[js.s32]):
    """Even and odd threads reach __syncthreads() through different branches (legal on Volta+, where the
    barrier counts threads), then read a neighbour's value written before the barrier."""
    t = js.threadIdx.x
    s = js.shared(64, js.s32, "s")
    s[t] = t + 1
    with js.if_(t % 2 == 0):
        js.syncthreads()
        out[t] = s[(t + 1) % 64]
    with js.else_():
        js.syncthreads()
        out[t] = s[(t + 63) % 64]


def test_barrier_counts_threads_under_its():
    r = js.launch(split_barrier, 1, 64, [np.zeros(64, np.int32)], mode="its")
    t = np.arange(64)
    np.testing.assert_array_equal(r["out"], np.where(t % 2 == 0, (t + 1) % 64, (t + 63) % 64) + 1)


def test_divergent_barrier_is_an_error_under_the_stack():
    """The two halves of each warp reach different barriers; the branch's reconvergence entry sits at the exit,
    and holds the lanes still to run their half: they are not lanes waiting to exit."""
    with pytest.raises(js.DivergentBarrierError):
        js.launch(split_barrier, 1, 64, [np.zeros(64, np.int32)])


# ------------------------------------------------------------------------------------ program view


@js.kernel
def shuffle_rotate(x: js.Ptr[js.s32]):
    """Straight-line code with a __syncwarp(0xffff) and a shuffle in the middle of its one block."""
    t = js.threadIdx.x
    v = x[t] + 1
    js.syncwarp(0xFFFF)
    w = v * 2
    x[t] = js.shfl_sync(w, (js.laneid() + 1) % 32)


def test_split_at_sync_keeps_every_pc():
    for prog, n_sync, n_new in ((K.warp_sum.program, 6, 0), (shuffle_rotate.program, 2, 2)):
        view, sync = its.split_at_sync(prog)
        flat = lambda p: [id(i) for _, i in p.instructions()]  # noqa: E731
        assert flat(view) == flat(prog)
        assert len(sync) == n_sync and len(view.blocks) == len(prog.blocks) + n_new
        for b in sync:
            assert view.blocks[b].instrs[0].op in ("warpsync", "shfl")
    assert sorted(sync.values()) == [0xFFFF, 0xFFFFFFFF]


def test_ptx_bar_warp_sync_lowers_to_warpsync():
    import jaxsimt.ptx as P
    from jaxsimt.ptx.lower import lower
    args = [np.zeros(64, np.int32), np.zeros(2048, np.int32), np.zeros(2, np.int32), np.int32(1)]
    prog = lower(P.load_module(PTX), "its_warp_sum", args)
    ws = [i for _, i in prog.instructions() if i.op == "warpsync"]
    assert len(ws) == 6 and {i.attr("membermask") for i in ws} == {0xFFFFFFFF}


# ------------------------------------------------------------------------------------ the PTX forms


@pytest.mark.slow
def test_ptx_spin_lock_both_modes():
    import jaxsimt.ptx as P
    r = P.launch(PTX, "its_spin_lock", 2, 32, _spin_args(2), mode="its")
    assert r.args[1].tolist() == [32, 32]
    with pytest.raises(js.StepBudgetExceeded, match="intra-warp lock.*mode='its'"):
        P.launch(PTX, "its_spin_lock", 2, 32, _spin_args(2), max_steps=300)


@pytest.mark.slow
def test_ptx_warp_sum_hazard_under_its():
    import jaxsimt.ptx as P
    for sync in (0, 1):
        args, ref = _warp_sum_args(sync)
        got = P.launch(PTX, "its_warp_sum", 1, 64, args, mode="its").args[2].tolist()
        assert (got == ref) == bool(sync)


@pytest.mark.slow
def test_run_cli_mode(capsys):
    import json

    from jaxsimt.cli import run as run_cli
    argv = ["run", PTX, "--kernel", "its_loop_tail", "--grid", "1", "--block", "32", "--arg", "s32[32]:zeros",
            "--json"]
    stats = {}
    for mode in ("stack", "its"):
        assert run_cli.main(argv + ["--mode", mode]) == 0
        stats[mode] = json.loads(capsys.readouterr().out)["stats"]
    assert stats["its"]["smsp__thread_inst_executed.sum"] == stats["stack"]["smsp__thread_inst_executed.sum"]
    assert stats["its"]["simd_efficiency"] < stats["stack"]["simd_efficiency"]
    assert run_cli.main(argv + ["--mode", "its", "--arch", "fermi"]) == 2
    assert "Independent Thread Scheduling" in capsys.readouterr().err


@js.kernel
def sync_mismatch(out: js.Ptr[js.s32]):
    """Lane 0 waits at __syncthreads() for the whole block while lanes 1-31 wait at __syncwarp() for lane 0."""
    t = js.threadIdx.x
    with js.if_(t == 0):
        js.syncthreads()
    with js.else_():
        js.syncwarp()
    out[t] = t


def test_its_deadlock_names_where_lanes_wait():
    with pytest.raises(js.DeadlockError) as e:
        js.launch(sync_mismatch, 1, 32, [np.zeros(32, np.int32)], mode="its")
    msg = str(e.value)
    assert "warp 0 of block (0, 0, 0)" in msg
    assert "lanes 0x00000001 wait at bar.sync" in msg
    assert "lanes 0xfffffffe wait at the warp-synchronous warpsync" in msg and "member lanes 0x00000001" in msg


@pytest.mark.slow
def test_converged_tensor_core_kernel_counts_the_same_in_both_modes():
    # warp-wide mma/ldmatrix start blocks of the ITS view and wait for the whole warp; on code that never
    # diverges the two modes run the same instructions with the same lanes
    from jaxsimt.kernels import wmma_gemm as w
    rng = np.random.default_rng(1)
    M, N, K = 32, 32, 32
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    k = w.gemm_wmma("hardware")
    grid = ((N + w.BN - 1) // w.BN, (M + w.BM - 1) // w.BM)
    r = {m: js.launch(k, grid, w.THREADS, [a.reshape(-1), b.reshape(-1), np.zeros(M * N, np.float32), M, N, K],
                      mode=m) for m in ("stack", "its")}
    np.testing.assert_array_equal(r["its"]["C"], r["stack"]["C"])
    for key in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "smsp__inst_executed_pipe_tensor.sum"):
        assert r["its"].stats[key] == r["stack"].stats[key], key
    assert r["its"].stats["emulator__max_pc_groups"] == 1


@pytest.mark.slow
def test_timing_model_replays_the_its_schedule():
    r = {m: js.launch(K.loop_tail, 1, 32, [np.zeros(32, np.int32)], mode=m, timing=True) for m in ("stack", "its")}
    # the same work, the tail issued four times instead of once: more cycles under ITS
    assert r["its"].stats["cycles"] > r["stack"].stats["cycles"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["div_halfwarp", "div_nested"])
def test_divergence_micro_kernels_same_results_in_both_modes(kind):
    # the H200 micro-kernels (jaxsimt/kernels/micro/divergence.py): diverged loops interleave under ITS, each thread
    # runs the same instructions (equal thread instructions), a warp issues at least as many
    from jaxsimt.kernels.micro import divergence as d
    inp = (np.arange(256, dtype=np.uint32) * 2654435761).astype(np.uint32)
    r = {m: js.launch(d.divergence(kind), 2, 128, [inp, np.full(256, 0xFFFFFFFF, np.uint32), 4, 256], mode=m)
         for m in ("stack", "its")}
    want = d.reference(kind, inp, 4, 256)
    for m in r:
        np.testing.assert_array_equal(r[m]["out"], want)
    s, i = r["stack"].stats, r["its"].stats
    assert i["smsp__thread_inst_executed.sum"] == s["smsp__thread_inst_executed.sum"]
    assert i["smsp__inst_executed.sum"] >= s["smsp__inst_executed.sum"]
    assert i["emulator__max_pc_groups"] == {"div_halfwarp": 2, "div_nested": 3}[kind]  # lane classes


@js.kernel
def inter_warp_lock(lock: js.Ptr[js.s32], counter: js.Ptr[js.s32]):
    """Lane 0 of every warp takes one lock: a lock between warps, not within one."""
    with js.if_(js.laneid() == 0):
        for _ in js.while_(lambda: lock.atomic_cas(0, 0, 1) != 0):
            pass
        counter[0] = counter[0] + 1
        lock.atomic_exch(0, 0)


@pytest.mark.slow
def test_inter_warp_lock():
    # A lock between warps works in both modes, as on pre-Volta hardware: the scheduler ages waiting warps,
    # so the holder's warp gets its step although the spinning warps outnumber it.
    for mode in ("its", "stack"):
        r = js.launch(inter_warp_lock, 1, 128, _spin_args(), mode=mode, max_steps=3000)
        assert r["counter"].tolist() == [4], mode
