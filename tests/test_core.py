"""The SIMT core: reconvergence stack behaviour, seed kernels against numpy, jit/no-jit equality."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxsimt as js
from jaxsimt import Ptr, f32, s32, u32
from jaxsimt.kernels import seeds

FULL = 0xFFFFFFFF


@js.kernel
def walk(out: Ptr[s32]):
    """Seed 000's walk-through: an if/else with a nested if/else inside one warp."""
    t = js.threadIdx.x
    v = js.var(0)
    with js.if_(t < 16):
        v.set(1)
        with js.if_(t < 8):
            v.set(2)
        with js.else_():
            v.set(3)
    with js.else_():
        v.set(4)
    out[t] = v


def test_divergence_walkthrough_stack_sequence():
    out = np.zeros(32, np.int32)
    r = js.launch(walk, 1, 32, (out,), trace=True)
    expect = np.where(np.arange(32) < 8, 2, np.where(np.arange(32) < 16, 3, 4))
    np.testing.assert_array_equal(r["out"], expect)
    tr = r.trace
    # Hand-derived. Each `if_` is `@!p bra ELSE` with the then-path falling through.
    # step 0, entry, all lanes: divergent -> top becomes (join, exit, all); push (else, 16-31) and
    #         (then, 0-15); the fall-through (then) entry is on top.          depth 1 -> 3
    # step 1, then, lanes 0-15: nested divergence -> top becomes (inner join, join, 0-15); push
    #         (inner else, 8-15), (inner then, 0-7).                          depth 3 -> 5
    # step 2, inner then, 0-7: reaches inner join == its rpc -> pop          depth 4
    # step 3, inner else, 8-15: pop                                          depth 3
    # step 4, inner join (rest of then), 0-15: jumps to join == rpc -> pop   depth 2
    # step 5, else, 16-31: falls into join -> pop                            depth 1
    # step 6, join, all lanes: store, exit -> pop                            depth 0
    masks = [int(m) for m in tr["mask"][:, 0]]
    sps = [int(s) for s in tr["sp"][:, 0]]
    assert masks == [FULL, 0x0000FFFF, 0x000000FF, 0x0000FF00, 0x0000FFFF, 0xFFFF0000, FULL]
    assert sps == [3, 5, 4, 3, 2, 1, 0]
    pushes_pops = np.diff([1] + sps).tolist()
    assert pushes_pops == [+2, +2, -1, -1, -1, -1, -1]
    assert r.stats["max_stack_depth"] == 5
    assert r.stats["smsp__sass_branch_targets_threads_divergent.sum"] == 2


@js.kernel
def lane_loop(out: Ptr[s32]):
    t = js.threadIdx.x
    n = t % 4 + 1
    acc = js.var(0)
    for i in js.range(n):
        acc += i
    out[t] = acc


def test_lane_dependent_loop_reconverges_and_simd_efficiency():
    out = np.zeros(32, np.int32)
    r = js.launch(lane_loop, 1, 32, (out,))
    n = np.arange(32) % 4 + 1
    np.testing.assert_array_equal(r["out"], n * (n - 1) // 2)
    prog = lane_loop.program  # the front end's blocks (the machine threads the latch into the header)
    # Hand count. Per lane the loop header runs n+1 times, body and latch n times; the warp runs the
    # header max(n)+1 = 5 times, body and latch max(n) = 4 times; every other block once, all lanes.
    header = next(b for b in prog.blocks if b.term.kind == "branch")
    loop_blocks = {header.term.fallthrough} | {b.index for b in prog.blocks if b.term.kind == "jump"}
    warp = thread = 0
    for b in prog.blocks:
        k = len(b.all_instrs())
        if b.index == header.index:
            w, th = 5, int((n + 1).sum())
        elif b.index in loop_blocks:
            w, th = 4, int(n.sum())
        else:
            w, th = 1, 32
        warp += w * k
        thread += th * k
    assert r.stats["smsp__inst_executed.sum"] == warp
    assert r.stats["smsp__thread_inst_executed.sum"] == thread
    assert r.stats["simd_efficiency"] == pytest.approx(thread / (32 * warp))
    # the divergent loop exit reuses the top entry: the stack never grows past 2
    assert r.stats["max_stack_depth"] == 2
    store = [row for row in r.per_instruction if row["op"] == "st"]
    assert store[0]["warp_exec"] == 1 and store[0]["thread_exec"] == 32


def test_saxpy():
    rng = np.random.default_rng(0)
    n = 1000
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    r = js.launch(seeds.saxpy, (n + 127) // 128, 128, (n, np.float32(1.5), x, y))
    np.testing.assert_array_equal(r["y"], np.float32(1.5) * x + y)
    assert r.stats["smsp__thread_inst_executed.sum"] > 0


def _matmul_ref(A, B):
    # Same order as the kernel: k ascending, multiply then add, each rounded to f32.
    N, M = A.shape
    acc = np.zeros((N, B.shape[1]), np.float32)
    for k in range(M):
        acc = (acc + (A[:, k:k + 1] * B[k:k + 1, :]).astype(np.float32)).astype(np.float32)
    return acc


@pytest.mark.parametrize("N", [64, 50])
def test_naive_matrix_multiply(N):
    rng = np.random.default_rng(N)
    M = N
    A, B = rng.random((N, M), np.float32), rng.random((M, N), np.float32)
    C = np.zeros((N, N), np.float32)
    g = (N + 15) // 16
    r = js.launch(seeds.naive_matrix_multiply, (g, g), (16, 16), (N, M, A, B, C))
    np.testing.assert_array_equal(r["C"], _matmul_ref(A, B))


def test_naive_matrix_multiply_nonsquare_inner():
    rng = np.random.default_rng(1)
    N, M = 40, 24
    A, B = rng.random((N, M), np.float32), rng.random((M, N), np.float32)
    r = js.launch(seeds.naive_matrix_multiply, (3, 3), (16, 16), (N, M, A, B, np.zeros((N, N), np.float32)))
    np.testing.assert_array_equal(r["C"], _matmul_ref(A, B))


def test_matmul_tiled():
    rng = np.random.default_rng(2)
    N, M = 64, 48
    A, B = rng.random((N, M), np.float32), rng.random((M, N), np.float32)
    r = js.launch(seeds.matmul_tiled, (N // 16, N // 16), (16, 16), (N, M, A, B, np.zeros((N, N), np.float32)))
    np.testing.assert_array_equal(r["C"], _matmul_ref(A, B))


def _tree_sum(x):
    x = x.copy()
    s = len(x) // 2
    while s > 0:
        x[:s] = x[:s] + x[s:2 * s]
        s //= 2
    return x[0]


def test_reductions():
    rng = np.random.default_rng(3)
    bs, nb = 256, 4
    x = rng.random(bs * nb, np.float32)
    r = js.launch(seeds.reduce_sequential, nb, bs, (x, np.zeros(nb, np.float32)))
    np.testing.assert_array_equal(r["out"], [_tree_sum(x[b * bs:(b + 1) * bs]) for b in range(nb)])
    r2 = js.launch(seeds.reduce_interleaved, nb, bs, (x, np.zeros(nb, np.float32)))
    np.testing.assert_allclose(r2["out"], x.reshape(nb, bs).sum(1), rtol=1e-5)


def test_histogram_atomics_same_address_in_warp():
    rng = np.random.default_rng(4)
    n, bins = 5000, 7  # few bins: many lanes of a warp hit one address
    data = rng.integers(0, 1000, n).astype(np.int32)
    r = js.launch(seeds.histogram, (n + 255) // 256, 256, (n, bins, data, np.zeros(bins, np.uint32)))
    np.testing.assert_array_equal(r["hist"], np.bincount(data % bins, minlength=bins).astype(np.uint32))


@js.kernel
def ticket(counter: Ptr[s32], out: Ptr[s32]):
    """Every thread takes a ticket: atomics must hand out distinct old values, warp by warp."""
    i = js.global_thread_index()
    out[i] = counter.atomic_add(0, 1)


def test_atomic_old_values_are_distinct():
    r = js.launch(ticket, 4, 64, (np.zeros(1, np.int32), np.zeros(256, np.int32)))
    assert sorted(r["out"].tolist()) == list(range(256))
    assert r["counter"][0] == 256
    # lane order inside a warp: lane l of the first warp gets ticket l
    np.testing.assert_array_equal(r["out"][:32], np.arange(32))


@js.kernel
def warp_ops(x: Ptr[s32], out: Ptr[s32], bal: Ptr[u32]):
    t = js.threadIdx.x
    v = x[t]
    s = js.var(v)
    for off in (16, 8, 4, 2, 1):  # Python loop: unrolled at trace time
        s += js.shfl_down_sync(s, off)
    out[t] = js.shfl_sync(s, 0)  # broadcast lane 0's total
    bal[t] = js.ballot_sync(v > 5)


def test_shuffle_and_vote():
    x = np.arange(64, dtype=np.int32) % 11
    r = js.launch(warp_ops, 1, 64, (x, np.zeros(64, np.int32), np.zeros(64, np.uint32)))
    np.testing.assert_array_equal(r["out"][:32], np.full(32, x[:32].sum()))
    np.testing.assert_array_equal(r["out"][32:], np.full(32, x[32:].sum()))
    b0 = sum(1 << i for i in range(32) if x[i] > 5)
    assert int(r["bal"][0]) == b0


@js.kernel
def subword(n: s32, src: Ptr[js.u8], dst: Ptr[js.u8]):
    i = js.global_thread_index()
    with js.if_(i < n):
        dst[i + 1] = src[i]  # unaligned byte stores whose words straddle warps


def test_byte_stores_from_neighbouring_warps_do_not_clobber():
    n = 200
    src = (np.arange(n) % 251).astype(np.uint8)
    r = js.launch(subword, 4, 64, (n, src, np.zeros(n + 1, np.uint8)))
    np.testing.assert_array_equal(r["dst"][1:], src)


@js.kernel
def fma_vs_mul_add(a: Ptr[f32], b: Ptr[f32], c: Ptr[f32], fused: Ptr[f32], unfused: Ptr[f32]):
    i = js.threadIdx.x
    fused[i] = js.fma(a[i], b[i], c[i])
    unfused[i] = a[i] * b[i] + c[i]


def test_fma_and_mul_add_round_differently():
    rng = np.random.default_rng(5)
    a = (1 + rng.random(32)).astype(np.float32)
    b = (1 + rng.random(32)).astype(np.float32)
    c = -(a.astype(np.float64) * b).astype(np.float32)  # cancellation exposes the product's rounding
    z = np.zeros(32, np.float32)
    r = js.launch(fma_vs_mul_add, 1, 32, (a, b, c, z, z))
    exact = a.astype(np.float64) * b + c
    np.testing.assert_array_equal(r["fused"], exact.astype(np.float32))
    np.testing.assert_array_equal(r["unfused"], (a * b).astype(np.float32) + c)
    assert np.any(r["fused"] != r["unfused"])


@pytest.mark.parametrize("case", ["walk", pytest.param("histogram", marks=pytest.mark.slow),
                                  pytest.param("tiled", marks=pytest.mark.slow)])
def test_jit_and_nojit_identical(case):
    if case == "walk":
        args, k, g, b = (np.zeros(32, np.int32),), walk, 1, 32
    elif case == "histogram":
        data = np.arange(100, dtype=np.int32)
        args, k, g, b = (100, 5, data, np.zeros(5, np.uint32)), seeds.histogram, 2, 64
    else:
        rng = np.random.default_rng(6)
        A, B = rng.random((16, 16), np.float32), rng.random((16, 16), np.float32)
        args, k, g, b = (16, 16, A, B, np.zeros((16, 16), np.float32)), seeds.matmul_tiled, 1, (16, 16)
    r1 = js.launch(k, g, b, args, jit=True)
    r2 = js.launch(k, g, b, args, jit=False)
    for name in r1.outputs:
        np.testing.assert_array_equal(r1[name], r2[name])
    assert r1.stats == r2.stats
    assert r1.per_instruction == r2.per_instruction


@js.kernel
def vectors(x: Ptr[f32], y: Ptr[f32], d: Ptr[js.f64], b: Ptr[js.u8], h: Ptr[js.s16], out_d: Ptr[js.f64],
            out_b: Ptr[js.u8], out_h: Ptr[js.s16]):
    t = js.threadIdx.x
    v = x.load(t * 4, n=4)  # float4: one 16-byte access
    y.store(t * 4, (v[3], v[2], v[1], v[0]))
    w = x.load(t * 2, n=2)  # float2
    out_d[t] = d[t] * 2.0 + w[0].astype(js.f64)
    out_b[t] = b[t] + js.const(1, js.u8)
    out_h[t] = -h[t]


def test_vector_and_narrow_and_wide_accesses():
    rng = np.random.default_rng(7)
    x = rng.random(128, np.float32)
    d = rng.random(32)
    b = rng.integers(0, 255, 32).astype(np.uint8)
    h = rng.integers(-1000, 1000, 32).astype(np.int16)
    r = js.launch(vectors, 1, 32, (x, np.zeros(128, np.float32), d, b, h, np.zeros(32), np.zeros(32, np.uint8),
                                   np.zeros(32, np.int16)))
    np.testing.assert_array_equal(r["y"], x.reshape(32, 4)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(r["out_d"], d * 2.0 + x[::2][:32].astype(np.float64))
    np.testing.assert_array_equal(r["out_b"], b + 1)
    np.testing.assert_array_equal(r["out_h"], -h)
    # the float4 load at unit stride: one request, 16 sectors (as the H200 counts 128-bit loads)
    first_load = next(p for p in r.per_instruction if p["op"] == "ld")
    assert (first_load["requests"], first_load["sectors"]) == (1, 16)


@js.kernel
def atomics_one_address(cell: Ptr[s32], old_min: Ptr[s32], old_max: Ptr[s32], old_exch: Ptr[s32],
                        old_cas: Ptr[s32]):
    t = js.threadIdx.x
    old_min[t] = cell.atomic_min(0, 100 - t)
    old_max[t] = cell.atomic_max(1, t)
    old_exch[t] = cell.atomic_exch(2, t)
    old_cas[t] = cell.atomic_cas(3, 0, t + 1)  # only the first lane finds 0


def test_atomics_serialise_in_lane_order():
    cell = np.array([1000, -1, -1, 0], np.int32)
    z = np.zeros(32, np.int32)
    r = js.launch(atomics_one_address, 1, 32, (cell, z, z, z, z))
    vals = 100 - np.arange(32)
    np.testing.assert_array_equal(r["old_min"], np.minimum.accumulate(np.concatenate([[1000], vals]))[:-1])
    np.testing.assert_array_equal(r["old_max"], np.concatenate([[-1], np.arange(31)]))
    np.testing.assert_array_equal(r["old_exch"], np.concatenate([[-1], np.arange(31)]))
    np.testing.assert_array_equal(r["old_cas"], np.concatenate([[0], np.ones(31, np.int32)]))
    np.testing.assert_array_equal(r["cell"], [69, 31, 31, 1])


@js.kernel
def count_threads(out: Ptr[s32]):
    t = js.threadIdx.x
    out[t] = js.laneid() + 100 * js.warpid()


@pytest.mark.parametrize("arch", ["g80", "fermi", "h200"])
def test_partial_warp_lanes_start_inactive(arch):
    out = np.full(64, -1, np.int32)
    r = js.launch(count_threads, 1, 40, (out,), arch=arch)  # warp 1 holds 8 threads
    np.testing.assert_array_equal(r["out"][:40], np.arange(40) % 32 + 100 * (np.arange(40) // 32))
    assert (r["out"][40:] == -1).all()
    n_instr = len(r.program.instructions())
    assert r.stats["smsp__inst_executed.sum"] == 2 * n_instr
    assert r.stats["smsp__thread_inst_executed.sum"] == 40 * n_instr
    assert r.stats["simd_efficiency"] == pytest.approx(40 / 64)


def test_long_blocks_split_into_fall_through_chains(monkeypatch):
    """A straight line longer than the block limit runs as a chain of blocks: same results, same
    instruction counts, one extra step per extra chunk. The machine merges chains of at most
    MAX_BLOCK_INSTRUCTIONS back into one block (`merge_straight`): then no extra step. Every block compiled
    (its unrolled line of one shape would otherwise be interpreted)."""
    import copy

    from jaxsimt.machine import core as machine_mod

    from jaxsimt.program import finalize, split_long_blocks

    @js.kernel
    def poly(x: Ptr[f32], y: Ptr[f32], n: s32):
        i = js.global_thread_index()
        with js.if_(i < n):
            v = x[i]
            acc = js.var(0.0, f32)
            for k in range(12):  # unrolled at trace time: one long block
                acc.set(acc * v + float(k + 1))
            y[i] = acc

    prog = poly.program
    longest = max(len(b.instrs) for b in prog.blocks)
    split = copy.deepcopy(prog)
    split.blocks = split_long_blocks(split.blocks, limit=5)
    split = finalize(split)
    assert max(len(b.instrs) for b in split.blocks) <= 5 and len(split.blocks) > len(prog.blocks)
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    a = js.launch(prog, 2, 64, (x, np.zeros_like(x), 100), compile_budget=None)
    b = js.launch(split, 2, 64, (x, np.zeros_like(x), 100), compile_budget=None)
    np.testing.assert_array_equal(a["y"], b["y"])
    for key in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "simd_efficiency"):
        assert a.stats[key] == b.stats[key], key
    assert b.stats["emulator__steps"] == a.stats["emulator__steps"]  # merged back: one block again
    monkeypatch.setattr(machine_mod, "merge_straight", lambda p: p)
    split.__dict__.pop("_machines")  # machines are kept on the program: build a new one
    c = js.launch(split, 2, 64, (x, np.zeros_like(x), 100), compile_budget=None)
    np.testing.assert_array_equal(a["y"], c["y"])
    for key in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "simd_efficiency"):
        assert a.stats[key] == c.stats[key], key
    assert c.stats["emulator__steps"] - a.stats["emulator__steps"] == (longest - 1) // 5


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.data())
def test_pick_block_counts_alike_by_comparison_and_by_scatter(n_blocks, n_warps, data):
    """The scheduler's block choice is the same whichever way it counts the warps at each block (a GPU counts
    by comparison, a CPU by scatter-add)."""
    import jax

    from jaxsimt.machine import core

    pc = np.array(data.draw(st.lists(st.integers(0, n_blocks - 1), min_size=n_warps, max_size=n_warps)), np.int32)
    ready = np.array(data.draw(st.lists(st.booleans(), min_size=n_warps, max_size=n_warps)))
    age = np.array(data.draw(st.lists(st.integers(0, 2 * n_blocks), min_size=n_warps, max_size=n_warps)), np.int32)
    picks = []
    for limit in (0, n_blocks):  # by scatter-add, then by comparison
        with mock.patch.dict(core.COUNT_BY_COMPARISON, {jax.default_backend(): limit}):
            picks.append(int(core.pick_block(pc, ready, age, n_blocks)))
    waited = np.where(ready, age, -1)
    counts = np.bincount(pc[ready], minlength=n_blocks)
    expect = pc[np.argmax(waited)] if waited.max() > n_blocks else np.argmax(counts)
    assert picks == [expect, expect]
