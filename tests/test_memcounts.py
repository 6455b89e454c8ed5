"""The memory counters' stage (`jaxsimt.units.memcounts`): accesses counted after the step's block, once per access
shape, give every counter that counting each access where it runs gives, in every case that decides how an
access is counted: global and shared, loads, stores and atomics, vector widths, the constant cache, generic
addresses, ldmatrix, the interpreter tier, ITS, and batch items counted apart."""
import numpy as np
import pytest

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
        rec = memcounts.pack([], 3, (2, 32))
        assert rec.addr.shape == (3, 2, 32) and not bool(jnp.any(rec.ok))
        mem = jnp.zeros((1, 4, memcounts.N_MEM), jnp.int64)
        shape = memcounts.Shape("ld", "gmem", 4, False)
        out = memcounts.count_records(js.get_arch("h200"), mem, shape, rec, jnp.zeros((2,), jnp.int32))
        assert not bool(jnp.any(out))
        with pytest.raises(AssertionError, match="more than"):
            memcounts.pack([(0, jnp.zeros((2, 32), jnp.int64), jnp.ones((2, 32), bool))] * 2, 1, (2, 32))


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
