"""The memory counters' stage (`jaxsimt.units.memcounts`): accesses counted after the step's block, once per access
shape, give every counter that counting each access where it runs gives, in every case that decides how an
access is counted: global and shared, loads, stores and atomics, vector widths, the constant cache, generic
addresses, ldmatrix, the interpreter tier, ITS, and batch items counted apart."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxsimt as js
from jaxsimt.machine import core as M
from jaxsimt.units import memcounts
from runs import assert_same_run, launch_fresh, naive_gemm_case

CASES = ["glob_ld_elem_16B_float4", "glob_st_elem_1B_char", "glob_ld_perm128", "smem_stride_s2",
         "smem_elem_8B_double", "smem_transpose_naive", "dsl_histogram", "dsl_matmul_tiled",
         "mma_truth_m16n8k16_f16_f32", "div_nested"]


def _both(monkeypatch, run):
    staged = run()
    monkeypatch.setattr(M.Machine, "count_stage", False)
    inline = run()
    return staged, inline


@pytest.mark.parametrize("case", CASES)
def test_stage_counts_as_inline(monkeypatch, case):
    staged, inline = _both(monkeypatch, lambda: launch_fresh(case))
    assert_same_run(staged, inline)
    assert any(row.get("sectors") or row.get("wavefronts") for row in staged.per_instruction)


def test_stage_counts_as_inline_interpreted_and_its(monkeypatch):
    for kw in ({"compile_budget": 0}, {"mode": "its"}):
        staged, inline = _both(monkeypatch, lambda: launch_fresh("dsl_reduce_interleaved", **kw))
        assert_same_run(staged, inline)


def test_batch_items_are_counted_apart(monkeypatch):
    kernel, grid, block, make = naive_gemm_case(16)
    _, _, _, a, b, c = make()
    n = np.array([8, 16])  # the first item multiplies 8 x 8 matrices: fewer sectors than the second
    args = [n, n, n, np.stack([a, a]), np.stack([b, b]), np.stack([c, c])]

    def run():
        kernel.program.__dict__.pop("_machines", None)
        return js.launch_batch(kernel, grid, block, args).items

    staged, inline = _both(monkeypatch, run)
    for x, y in zip(staged, inline):
        assert_same_run(x, y)
    metric = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    assert 0 < staged[0].stats[metric] < staged[1].stats[metric]


def test_records_pad_and_count_nothing():
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        arch, shape = js.get_arch("h200"), memcounts.Shape("ld", "gmem", 4, False)
        rec = memcounts.pack(arch, shape, [], 3, (2, 32))
        assert rec.addr.shape == (3, 2, 32) and not bool(jnp.any(memcounts.lanes(rec)))
        mem = jnp.zeros((1, 4, memcounts.N_MEM), jnp.int64)
        out = memcounts.count_records(arch, mem, shape, rec, jnp.zeros((2,), jnp.int32))
        assert not bool(jnp.any(out))
        with pytest.raises(AssertionError, match="more than"):
            memcounts.pack(arch, shape, [(0, jnp.zeros((2, 32), jnp.int64), jnp.ones((2, 32), bool), 4)] * 2, 1,
                           (2, 32))


def test_read_only_lookups_run_in_program_order_across_widths(monkeypatch):
    # four __ldg loads of three widths from one array in one block (tests/data/ptx/src/ro_widths.cu): the
    # counter stage looks them up in the read-only cache in the order they ran, as counting each where it
    # runs does, so the same loads hit and miss
    import os

    import jaxsimt.ptx as P

    path = os.path.join(os.path.dirname(__file__), "data", "ptx", "ro_widths.ptx")
    a = np.random.default_rng(3).random(256, dtype=np.float32)

    def run():
        from jaxsimt.ptx.lower import _CACHE

        _CACHE.clear()  # a fresh program: machines are kept on it
        return P.launch(path, "ro_widths", 2, 64, [a, np.zeros(128, np.float32)])

    staged, inline = _both(monkeypatch, run)
    assert_same_run(staged, inline)
    t = np.arange(128)
    want = (a[(t * 7) % 256] + a.reshape(64, 4)[t % 16].sum(axis=1, dtype=np.float32)
            + a.view(np.uint8)[(t * 3) % 1024] + a[(t + 128) % 256])
    np.testing.assert_allclose(staged.outputs["ro_widths_param_1"], want, rtol=1e-6)
    rows = [r for r in staged.per_instruction if r.get("cache_hits") or r.get("cache_misses")]
    assert len(rows) == 4 and any(r["cache_hits"] for r in rows) and any(r["cache_misses"] for r in rows)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["gmem", "smem"]), st.data())
def test_directions_and_widths_that_share_a_shape_count_as_their_own(name, data):
    # loads and stores of the widths whose counts come from sectors (global) or bank words (shared) alone are
    # counted under one shape, each record with its width: every column equals counting each under its own shape
    import jax
    import jax.numpy as jnp

    arch = js.get_arch("h200")
    W, L = 3, arch.warp_size
    found, shapes = [], []
    for pc in range(data.draw(st.integers(1, 4))):
        shape = memcounts.Shape(data.draw(st.sampled_from(["ld", "st"])), name,
                                data.draw(st.sampled_from([1, 2, 4, 8, 16])), False)
        base = data.draw(st.lists(st.integers(0, 4096), min_size=W, max_size=W))
        lanes = data.draw(st.lists(st.integers(-64, 64), min_size=L, max_size=L))
        addr = (np.asarray(base)[:, None] + np.asarray(lanes)[None, :] * shape.nbytes) % (1 << 16) // shape.nbytes
        ok = np.asarray(data.draw(st.lists(st.booleans(), min_size=W * L, max_size=W * L))).reshape(W, L)
        found.append((pc, addr * shape.nbytes, ok, shape.nbytes))
        shapes.append(shape)
    item = jnp.zeros((W,), jnp.int32)
    with jax.enable_x64(True):
        found = [(pc, jnp.asarray(a, jnp.int64), jnp.asarray(o), n) for pc, a, o, n in found]
        mem0 = jnp.zeros((1, len(found), memcounts.N_MEM), jnp.int64)
        own = mem0
        for shape, (pc, addr, ok, _) in zip(shapes, found):
            own = memcounts.count_inline(arch, own, pc, shape, addr, ok, item)
        by_shape: dict = {}
        for shape, rec in zip(shapes, found):
            by_shape.setdefault(memcounts.counting_shape(arch, shape), []).append(rec)
        shared = mem0
        for shape, recs in by_shape.items():
            packed = memcounts.pack(arch, shape, recs, len(recs), (W, L))
            shared = memcounts.count_records(arch, shared, shape, packed, item)
    np.testing.assert_array_equal(np.asarray(shared), np.asarray(own))


def test_which_accesses_share_a_counting_shape():
    arch = js.get_arch("h200")
    S = memcounts.Shape
    g = {memcounts.counting_shape(arch, S(op, "gmem", n, False)) for op in ("ld", "st") for n in (1, 2, 4, 8, 16)}
    assert g == {S(memcounts.ANY_DIRECTION, "gmem", 1, False)}  # every global width: one sector a lane
    s = {memcounts.counting_shape(arch, S(op, "smem", n, False)) for op in ("ld", "st") for n in (1, 2, 4)}
    assert s == {S(memcounts.ANY_DIRECTION, "smem", 1, False)}
    for kept in (S("ld", "smem", 8, False), S("st", "smem", 16, False), S("ld", "gmem", 4, True),
                 S("ld", memcounts.RO, 0, False)):  # two words a lane, the constant cache, read-only lookups
        assert memcounts.counting_shape(arch, kept) == kept


@pytest.mark.parametrize("case", ["dsl_histogram", "glob_ld_elem_16B_float4"])
def test_shared_counting_shapes_count_as_shapes_of_their_own(case):
    # small launches count loads and stores under shared shapes, optimised ones each under its own: the same
    # counters either way
    shared = launch_fresh(case, optimize=False)
    own = launch_fresh(case, optimize=True)
    assert_same_run(shared, own)
