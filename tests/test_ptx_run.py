"""PTX kernels (tests/data/ptx, compiled by nvcc from tests/data/ptx/src) run on the emulator and equal a
numpy reference; the PTX path's memory counters equal the H200 fixture for micro-kernels."""
import csv
import json
import os

import numpy as np
import pytest

import jaxsimt.ptx as P

HERE = os.path.dirname(__file__)
PTX = os.path.join(HERE, "data", "ptx")
ROOT = os.path.dirname(HERE)
H200 = os.path.join(ROOT, "jaxsimt", "data", "h200")


def run(name, kernel, grid, block, args, **kw):
    return P.launch(os.path.join(PTX, name + ".ptx"), kernel, grid, block, args, **kw)


def rng(seed=0):
    return np.random.default_rng(seed)


def test_saxpy():
    n = 1000
    x, y = rng().uniform(-1, 1, (2, n)).astype(np.float32)
    r = run("saxpy", "saxpy", 4, 256, [n, 2.5, x, y])
    ref = (np.float32(2.5) * x.astype(np.float64) + y).astype(np.float32)  # fma: one rounding
    np.testing.assert_array_equal(r.outputs["saxpy_param_3"], ref)
    assert r.per_instruction[0]["source"].startswith('extern "C" __global__ void saxpy')


def test_vector_add_grid_stride():
    n = 3000
    a, b = rng(1).uniform(-1, 1, (2, n)).astype(np.float32)
    c = np.zeros(n, np.float32)
    r = run("vector_add", "vector_add", 2, 128, [a, b, c, n])
    np.testing.assert_array_equal(r.outputs["vector_add_param_2"], a + b)


def test_matmul_naive():
    N, M = 24, 20
    A = rng(2).uniform(-1, 1, (N, M)).astype(np.float32)
    B = rng(3).uniform(-1, 1, (M, N)).astype(np.float32)
    C = np.zeros((N, N), np.float32)
    r = run("matmul_naive", "matmul_naive", (2, 2), (16, 16), [A, B, C, N, M])
    np.testing.assert_allclose(r.outputs["matmul_naive_param_2"], A @ B, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_matmul_tiled_seed002_fixed():
    N = M = 32
    A = rng(4).uniform(-1, 1, (N, M)).astype(np.float32)
    B = rng(5).uniform(-1, 1, (M, N)).astype(np.float32)
    C = np.zeros((N, N), np.float32)
    r = run("matmul_tiled", "matmul_tiled", (2, 2), (16, 16), [A, B, C, N, M])
    np.testing.assert_allclose(r.outputs["matmul_tiled_param_2"], A @ B, rtol=1e-5, atol=1e-5)
    assert r.stats["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] > 0


def test_reduce_shared():
    n = 1000
    x = rng(6).uniform(-1, 1, n).astype(np.float32)
    out = np.zeros(4, np.float32)
    r = run("reduce_shared", "reduce_shared", 4, 256, [x, out, n])
    xp = np.zeros(1024, np.float32)
    xp[:n] = x
    np.testing.assert_allclose(r.outputs["reduce_shared_param_1"], xp.reshape(4, 256).sum(1), rtol=1e-5, atol=1e-5)


def test_histogram_atomics():
    n = 5000
    data = rng(7).integers(0, 256, n).astype(np.uint8)
    bins = np.zeros(256, np.uint32)
    r = run("histogram", "histogram", 4, 128, [data, bins, n])
    np.testing.assert_array_equal(r.outputs["histogram_param_1"], np.bincount(data, minlength=256))


def test_warp_reduce_shuffles_votes():
    n = 100
    x = rng(8).uniform(-1, 1, n).astype(np.float32)
    out = np.zeros(1 + n, np.float32)
    counts = np.zeros(1, np.uint32)
    r = run("warp_reduce", "warp_reduce", 1, 128, [x, out, counts, n])
    xp = np.zeros(128, np.float32)
    xp[:n] = x
    sums = xp.reshape(4, 32).sum(1)
    assert r.outputs["warp_reduce_param_2"][0] == int((x > 0).sum())
    np.testing.assert_allclose(r.outputs["warp_reduce_param_1"][0], sums.sum(), rtol=1e-5, atol=1e-5)
    # lanes after the down-shuffle tree: lane l holds the sum of lanes l..31 of its tree (exact order aside)
    got = r.outputs["warp_reduce_param_1"][1:]
    assert np.isfinite(got).all()


def test_device_function_calls_inlined():
    n = 100
    x = rng(9).uniform(-1, 1, n).astype(np.float32)
    y = np.zeros(2 * n, np.float32)
    r = run("device_call", "device_call", 1, 128, [x, y, n])
    v = 2 * x * x + 3 * x + 1
    np.testing.assert_allclose(r.outputs["device_call_param_1"][0::2], v, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(r.outputs["device_call_param_1"][1::2], -r.outputs["device_call_param_1"][0::2])


def test_switch_unroll():
    n = 256
    op = rng(10).integers(0, 9, n).astype(np.int32)
    x = rng(11).uniform(-1, 1, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    r = run("switch_unroll", "switch_unroll", 2, 128, [op, x, y, n])
    acc = x * 36.0
    ref = np.select([op == 0, op == 1, op == 2, op == 3, op == 5, op == 7],
                    [acc, -acc, acc * acc, acc + 1, acc - x, np.maximum(acc, x)], 0.0)
    np.testing.assert_allclose(r.outputs["switch_unroll_param_2"], ref, rtol=1e-5, atol=1e-5)
    assert r.stats["smsp__sass_branch_targets_threads_divergent.sum"] > 0


def test_half_bf16_conversions():
    import ml_dtypes
    n = 200
    x = rng(12).uniform(-4, 4, n).astype(np.float32)
    h = np.zeros(n, np.float16)
    b = np.zeros(n, ml_dtypes.bfloat16)
    y = np.zeros(n, np.float32)
    r = run("half_bf16", "half_bf16", 1, 256, [x, h, b, y, n])
    hv = x.astype(np.float16)
    bv = x.astype(ml_dtypes.bfloat16)
    x2 = x * 2
    hz = x2.astype(np.float16)  # then fix to round toward zero
    hz = np.where(np.abs(hz.astype(np.float64)) > np.abs(x2), np.nextafter(hz, np.float16(0)), hz)
    lo, hi = hv * hv, hz * hz
    np.testing.assert_array_equal(r.outputs["half_bf16_param_1"], (lo + hi).astype(np.float16))
    np.testing.assert_array_equal(r.outputs["half_bf16_param_2"],
                                  (bv.astype(np.float32) * np.float32(1.5)).astype(ml_dtypes.bfloat16))
    ref = (hv.astype(np.float32) + bv.astype(np.float32)) + np.trunc(hv.astype(np.float32)) + np.arange(n, dtype=np.float32)
    np.testing.assert_allclose(r.outputs["half_bf16_param_3"], ref, rtol=1e-6)


@pytest.mark.slow
def test_math_functions_within_tolerance():
    n = 256
    x = rng(13).uniform(-3, 3, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    r = run("math_funcs", "math_funcs", 2, 128, [x, y, n])
    v = x.astype(np.float64)
    ref = (np.sqrt(np.abs(v)) + np.exp(v) + np.sin(v) + 1 / np.sqrt(v * v + 1) + v / 3 + np.log(np.abs(v) + 1)
           + np.cos(v) + np.exp(v) + np.copysign(1.0, v) + np.floor(v))
    # approximate functions (__expf, __logf, __fdividef, rsqrtf) are exact-rounded here: 1e-5 relative
    np.testing.assert_allclose(r.outputs["math_funcs_param_1"], ref, rtol=1e-5, atol=1e-5)


def test_double_precision():
    n = 100
    x = rng(14).uniform(-5, 5, n)
    y = np.zeros(n)
    z = np.zeros(n, np.int64)
    r = run("double_prec", "double_prec", 1, 128, [x, y, z, n])
    ref = (x * 1.0000000000000002 + 0.1) / (x + 3.0) + np.sqrt(np.abs(x))
    np.testing.assert_allclose(r.outputs["double_prec_param_1"], ref, rtol=1e-15)
    got_y = r.outputs["double_prec_param_1"]
    np.testing.assert_array_equal(r.outputs["double_prec_param_2"],
                                  np.trunc(got_y).astype(np.int64) + np.trunc(x).astype(np.int64)
                                  + np.trunc(x.astype(np.float32)).astype(np.int64))


def test_dynamic_shared():
    n = 256  # the kernel is only in bounds for whole blocks
    a = np.arange(n, dtype=np.int32) * 3
    out = np.zeros(n, np.int32)
    r = run("dynamic_shared", "dynamic_shared", 2, 128, [a, out, n], dynamic_smem=128 * 4)
    ref = np.zeros(n, np.int32)
    for i in range(n):
        blk, t = divmod(i, 128)
        j = blk * 128 + 127 - t
        if j < n:
            ref[i] = a[j]
    np.testing.assert_array_equal(r.outputs["dynamic_shared_param_1"], ref)
    assert r.stats["launch__shared_mem_per_block_static"] == 512


@pytest.mark.slow
def test_constant_and_global_variables():
    n = 200
    x = rng(15).uniform(-1, 1, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    r = run("constant_mem", "constant_mem", 2, 128, [x, y, n])
    c = np.array([0.05, 0.1, 0.05, 0.1, 0.4, 0.1, 0.05, 0.1, 0.05], np.float32)
    ref = np.zeros(n, np.float32)
    for i in range(n):
        acc = np.float32(0)
        for k in range(9):
            acc = np.float32(np.float64(c[k]) * x[min(max(i + k - 4, 0), n - 1)] + acc)
        ref[i] = acc * np.float32([0.5, 2.0][i & 1])
    np.testing.assert_allclose(r.outputs["constant_mem_param_1"], ref, rtol=1e-6, atol=1e-7)
    assert r.outputs["call_count"].view(np.int32)[0] == 1


@pytest.mark.slow
def test_local_memory_array():
    n = 96
    idx = rng(16).integers(0, 1000, n).astype(np.int32)
    x = rng(17).uniform(-1, 1, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    r = run("local_array", "local_array", 1, 128, [idx, x, y, n])
    ref = np.zeros(n, np.float32)
    for i in range(n):
        tmp = [np.float32(x[(i + k) % n] * np.float32(k)) for k in range(32)]
        acc = np.float32(0)
        for k in range(8):
            acc = np.float32(acc + tmp[idx[(i * 8 + k) % n] & 31])
        ref[i] = acc
    np.testing.assert_allclose(r.outputs["local_array_param_2"], ref, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- memory counters vs the H200 fixture
MICRO = os.path.join(ROOT, "jaxsimt", "kernels", "ptx")
EXACT = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
BUF = (1 << 20) // 4


def _h200(kernel):
    from jaxsimt.apps import fixtures
    return fixtures.ncu_metrics("h200")[kernel]


# (fixture kernel, PTX file, entry, grid, block, args builder, dynamic shared memory)
MICRO_CASES = [
    ("glob_ld_stride1", "micro_global", "_Z9glob_loadIf7PStrideEvPT_Pfi", 4, 128,
     lambda: [np.ones(BUF, np.float32), np.zeros(512, np.float32), 1], 0),
    ("glob_ld_stride32", "micro_global", "_Z9glob_loadIf7PStrideEvPT_Pfi", 4, 128,
     lambda: [np.ones(BUF, np.float32), np.zeros(512, np.float32), 32], 0),
    ("glob_st_offset1", "micro_global", "_Z10glob_storeIf7POffsetEvPT_i", 4, 128,
     lambda: [np.zeros(BUF, np.float32), 1], 0),
    ("glob_ld_elem_16B_float4", "micro_global", "_Z9glob_loadI6float47POffsetEvPT_Pfi", 4, 128,
     lambda: [np.ones(BUF, np.float32), np.zeros(512, np.float32), 0], 0),
    ("smem_stride_s2", "micro_shared", "_Z12smem_patternIf7PStrideEvPT_i", 2, 128,
     lambda: [np.zeros(256, np.float32), 2], 1024),
    ("smem_stride_s4", "micro_shared", "_Z12smem_patternIf7PStrideEvPT_i", 2, 128,
     lambda: [np.zeros(256, np.float32), 4], 2048),
]


@pytest.mark.parametrize("case", MICRO_CASES, ids=[c[0] for c in MICRO_CASES])
def test_micro_counters_equal_h200(case):
    name, prog, entry, grid, block, args, dyn = case
    r = P.launch(os.path.join(MICRO, prog + ".ptx"), entry, grid, block, args(), dynamic_smem=dyn)
    hw = _h200(name)
    got = {m: int(r.stats[m]) for m in EXACT}
    want = {m: int(hw[m]) for m in EXACT}
    assert got == want


def test_cli_run_json(tmp_path, capsys):
    from jaxsimt.cli.run import main
    rc = main(["run", os.path.join(PTX, "saxpy.ptx"), "--kernel", "saxpy", "--grid", "4", "--block", "256",
               "--arg", "s32:1000", "--arg", "f32:2.5", "--arg", "f32[1024]:rand", "--arg", "f32[1024]:ones",
               "--json", "--seed", "3", "--save-outputs", str(tmp_path)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernel"] == "saxpy" and out["arch"] == "h200" and out["grid"] == [4, 1, 1]
    assert out["stats"]["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 64
    x = np.random.default_rng(3).uniform(-1, 1, 1024).astype(np.float32)
    y = np.load(tmp_path / "arg3_saxpy_param_3.npy")
    np.testing.assert_array_equal(y[:1000], (np.float32(2.5) * x[:1000].astype(np.float64) + 1).astype(np.float32))
    np.testing.assert_array_equal(y[1000:], 1)
