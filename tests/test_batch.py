"""Batched launches equal the loop of single launches, item by item (results and every counter);
sweeps over launches of mixed shapes return results in the input order."""
import os

import numpy as np
import pytest

import jaxsimt as js
import jaxsimt.ptx as P
from jaxsimt import Ptr, f32, s32, u32
from jaxsimt.kernels import seeds

PTX = os.path.join(os.path.dirname(__file__), "data", "ptx")
# The batch runs its items' warps side by side, so its schedule (and step count) is the batch's own;
# every hardware counter is per item.
EMULATOR_ONLY = {"emulator__steps"}


@js.kernel
def uneven(n: s32, scale: f32, x: Ptr[s32], y: Ptr[f32], hist: Ptr[u32]):
    """Data-dependent loop trip counts (divergence differs per item), a scalar per item, atomics."""
    i = js.global_thread_index()
    with js.if_(i < n):
        k = x[i] % 5
        acc = js.var(js.const(0.0, f32))
        for _ in js.range(k):
            acc += scale
        y[i] = acc
        hist.atomic_add(k, js.const(1, u32))


def assert_same(batched, single):
    for k, v in single.outputs.items():
        np.testing.assert_array_equal(batched.outputs[k], v, err_msg=k)
    keys = set(single.stats) - EMULATOR_ONLY
    assert keys == set(batched.stats) - EMULATOR_ONLY
    assert {k: batched.stats[k] for k in keys} == {k: single.stats[k] for k in keys}
    assert batched.per_instruction == single.per_instruction


def test_batched_equals_looped_item_by_item():
    rng = np.random.default_rng(0)
    B, n = 5, 200
    ns = np.array([200, 150, 1, 199, 64], np.int32)  # per-item scalar: different active threads
    scale = rng.uniform(-1, 1, B).astype(np.float32)
    x = rng.integers(0, 1000, (B, n)).astype(np.int32)
    x[3] = 4  # one item with uniform control flow
    y = np.zeros((B, n), np.float32)
    hist = np.zeros((B, 5), np.uint32)
    res = js.launch_batch(uneven, 2, 128, (ns, scale, x, y, hist))
    assert len(res) == B
    counts = set()
    for i in range(B):
        single = js.launch(uneven, 2, 128, (ns[i], scale[i], x[i], y[i], hist[i]))
        assert_same(res[i], single)
        counts.add(single.stats["smsp__thread_inst_executed.sum"])
        np.testing.assert_array_equal(res["hist"][i], np.bincount(x[i, :ns[i]] % 5, minlength=5))
        np.testing.assert_array_equal(res.stats["smsp__inst_executed.sum"][i], single.stats["smsp__inst_executed.sum"])
    assert len(counts) == B  # the items really differ, so per-item counting is exercised


@pytest.mark.slow  # compiles two machines of a kernel with shared memory and barriers
def test_batched_shared_memory_and_several_waves():
    """Shared memory, barriers, bank counters; a wave of 2 blocks so items straddle waves."""
    rng = np.random.default_rng(1)
    B, bs, nb = 3, 64, 3
    x = rng.random((B, bs * nb), np.float32)
    out = np.zeros((B, nb), np.float32)
    res = js.launch_batch(seeds.reduce_interleaved, nb, bs, (x, out), blocks_per_wave=2)
    for i in range(B):
        assert_same(res[i], js.launch(seeds.reduce_interleaved, nb, bs, (x[i], out[i]), blocks_per_wave=2))


def test_in_axes_none_shares_an_input():
    rng = np.random.default_rng(2)
    x = rng.random(256, np.float32)
    a = np.array([1.0, -2.0, 0.5], np.float32)
    y = np.zeros((3, 256), np.float32)
    res = js.launch_batch(seeds.saxpy, 1, 256, (256, a, x, y), in_axes=(None, 0, None, 0))
    np.testing.assert_array_equal(res["y"], a[:, None] * x[None, :])
    np.testing.assert_array_equal(res["x"], np.broadcast_to(x, (3, 256)))


@pytest.mark.slow  # compiles two machines of a PTX kernel
def test_batched_ptx_byte_addresses():
    """PTX addresses are bytes resolved against every array's bounds: per item, its own arrays."""
    rng = np.random.default_rng(3)
    B, n = 3, 300
    a, b = rng.uniform(-1, 1, (2, B, n)).astype(np.float32)
    c = np.zeros((B, n), np.float32)
    prog = P.lower(P.load_module(os.path.join(PTX, "vector_add.ptx")), "vector_add", [a[0], b[0], c[0], n])
    assert not prog.ptx_hidden
    res = js.launch_batch(prog, 2, 64, (a, b, c, n), in_axes=(0, 0, 0, None))
    np.testing.assert_array_equal(res["vector_add_param_2"], a + b)
    for i in range(B):
        assert_same(res[i], js.launch(prog, 2, 64, (a[i], b[i], c[i], n)))


def test_batched_fault_names_the_item():
    x = np.zeros((2, 10), np.int32)
    x[1, 3] = 4
    with pytest.raises(js.MemoryFault, match="batch item 1"):
        # item 1 writes hist[4] of a 4-bin histogram
        js.launch_batch(uneven, 1, 32, (10, np.float32(1), x, np.zeros((2, 10), np.float32),
                                        np.zeros((2, 4), np.uint32)), in_axes=(None, None, 0, 0, 0))


def test_sweep_mixed_shapes_in_input_order():
    rng = np.random.default_rng(4)
    specs, expect = [], []
    for j, (block, n) in enumerate([(64, 100), (32, 50), (64, 90)]):  # the first and last share one batch
        x = rng.random(n, np.float32)
        a = np.float32(j + 1)
        specs.append(js.LaunchSpec(seeds.saxpy, 2, block, (n, a, x, np.zeros(n, np.float32))))
        expect.append(a * x)
    x = rng.random(64 * 2, np.float32)
    specs.insert(1, js.LaunchSpec(seeds.reduce_interleaved, 2, 64, (x, np.zeros(2, np.float32)), arch="fermi"))
    res = js.sweep(specs, progress=False)
    assert [(r.kernel, r.block[0], r.arch) for r in res] == [
        ("saxpy", 64, "h200"), ("reduce_interleaved", 64, "fermi"), ("saxpy", 32, "h200"), ("saxpy", 64, "h200")]
    np.testing.assert_allclose(res[1]["out"], x.reshape(2, 64).sum(1), rtol=1e-5)
    for r, e in zip(res[:1] + res[2:], expect):
        np.testing.assert_array_equal(r["y"], e)
    # a group of two items of different array sizes: each as its own launch
    assert_same(res[3], js.launch(specs[3].kernel, specs[3].grid, specs[3].block, specs[3].args))
