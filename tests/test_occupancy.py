"""Theoretical occupancy: hand-checked cases (cuda_occupancy.h algorithm), seed 003, CLI."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsimt.units.occupancy import LIMITERS, UNLIMITED, occupancy, occupancy_arrays
from jaxsimt.cli.occupancy import cli

KB = 1024


# (threads, regs, smem, carveout) -> (blocks, warps, limiter); each worked by hand from the header's rules
H200_CASES = [
    # 8 warps/block: 64 warp slots -> 8 blocks; 32 regs -> 1024 per warp, 16 warps per sub-partition -> 8
    ((256, 32, 0, None), (8, 64, "warps")),
    # 64 regs x 32 lanes = 2048 per warp; 65536 / 2048 = 32 warps = one 1024-thread block
    ((1024, 64, 0, None), (1, 32, "registers")),
    # 255 regs -> 8160 -> 8192 per warp: 2 warps per sub-partition, 8 per SM; 4-warp blocks -> 2
    ((128, 255, 0, None), (2, 8, "registers")),
    # 64 regs, 256 threads: 32 warps by registers -> 4 blocks
    ((256, 64, 16384, None), (4, 32, "registers")),
    # 40 regs -> 1280 per warp -> 51 warps -> 48 (sub-partitions of 12) -> 6 blocks
    ((256, 40, 0, None), (6, 48, "registers")),
    # 3-warp blocks, 128 regs: 16 warps by registers -> 5 blocks (15 warps)
    ((96, 128, 0, None), (5, 15, "registers")),
    # one-warp blocks hit the 32-block limit
    ((32, 16, 0, None), (32, 32, "blocks")),
    # 32 KB + the 1 KB reservation = 33792 B per block: 233472 // 33792 = 6 (7 without the reservation)
    ((256, 32, 32 * KB, None), (6, 48, "shared_memory")),
    # 48 KB + 1 KB = 50176 B per block -> 4 blocks
    ((128, 32, 48 * KB, None), (4, 16, "shared_memory")),
    # 227 KB opt-in: the whole 228 KB carve-out for one block
    ((256, 32, 227 * KB, None), (1, 8, "shared_memory")),
    # one byte more does not fit at all
    ((256, 32, 227 * KB + 1, None), (0, 0, "shared_memory")),
    # a 100 KB carve-out: 17408 B per block -> 5 blocks
    ((256, 32, 16 * KB, 100 * KB), (5, 40, "shared_memory")),
    # a carve-out preference that does not hold one block is raised to the next size that does
    ((256, 32, 60 * KB, 32 * KB), (1, 8, "shared_memory")),
    # 1 KB reserved even with no kernel shared memory: the carve-out of 0 rounds up to 8 KB -> 8 blocks
    ((256, 0, 0, 0), (8, 64, "warps")),
    # too many threads per block
    ((1056, 16, 0, None), (0, 0, "warps")),
]


@pytest.mark.parametrize("args, expected", H200_CASES, ids=[str(c[0]) for c in H200_CASES])
def test_h200_hand_checked(args, expected):
    r = occupancy("h200", *args)
    assert (r["active_blocks_per_sm"], r["active_warps_per_sm"], r["limiter"]) == expected
    assert r["occupancy"] == pytest.approx(expected[1] / 64)
    assert r["limiter"] in r["limiters"]
    assert r["active_blocks_per_sm"] == min(r[f"blocks_limit_{name}"] for name in LIMITERS)


def test_h200_allocations_reported():
    r = occupancy("h200", 128, 255, 1000)
    assert r["registers_per_block"] == 4 * 8192
    assert r["shared_mem_per_block"] == 2048  # 1000 + 1024 rounded up to 128
    assert r["shared_mem_per_sm"] == 228 * KB
    assert r["blocks_limit_shared_memory"] == 114
    assert occupancy("h200", 128, 0, 0)["blocks_limit_registers"] == UNLIMITED


def test_h200_register_limits():
    # more than 255 registers per thread never fits
    assert occupancy("h200", 32, 256, 0)["active_blocks_per_sm"] == 0
    # 1024 threads x 65 regs exceeds the 64K registers per block
    r = occupancy("h200", 1024, 65, 0)
    assert (r["active_blocks_per_sm"], r["limiter"]) == (0, "registers")


def test_h100_matches_h200():
    for args, expected in H200_CASES:
        assert occupancy("h100", *args)["active_blocks_per_sm"] == expected[0]


# --- seed 003: G80 per-block register allocation ---
def test_seed_003_register_example_on_g80():
    ten = occupancy("g80", 256, 10, 0)
    assert ten["blocks_limit_registers"] == 3 and ten["registers_per_block"] == 2560
    assert ten["active_blocks_per_sm"] == 3
    eleven = occupancy("g80", 256, 11, 0)
    assert eleven["blocks_limit_registers"] == 2 and eleven["registers_per_block"] == 2816
    assert (eleven["active_blocks_per_sm"], eleven["limiter"]) == (2, "registers")
    assert eleven["occupancy"] == pytest.approx(16 / 24)


def test_g80_other_limits():
    assert occupancy("g80", 512, 8, 0)["active_blocks_per_sm"] == 1  # 768 threads per SM
    assert occupancy("g80", 513, 8, 0)["active_blocks_per_sm"] == 0
    r = occupancy("g80", 64, 8, 5000)  # 5000 B -> 5120 B allocated; 16 KB holds 3
    assert (r["active_blocks_per_sm"], r["limiter"]) == (3, "shared_memory")
    assert occupancy("g80", 32, 4, 0)["active_blocks_per_sm"] == 8  # 8 blocks per SM


def test_fermi():
    # 21 regs -> 672 -> 704 per warp: 46 warps -> 5 blocks of 8 warps
    r = occupancy("fermi", 256, 21, 0)
    assert (r["active_blocks_per_sm"], r["limiter"]) == (5, "registers")
    # 48 KB carve-out by default; a 16 KB preference is raised when a block needs more
    assert occupancy("fermi", 64, 8, 12 * KB)["active_blocks_per_sm"] == 4
    assert occupancy("fermi", 64, 8, 12 * KB, carveout=16 * KB)["active_blocks_per_sm"] == 1
    assert occupancy("fermi", 64, 8, 20 * KB, carveout=16 * KB)["active_blocks_per_sm"] == 2


def test_bad_arguments():
    with pytest.raises(ValueError):
        occupancy("h200", 0, 32, 0)
    with pytest.raises(ValueError):
        occupancy("h200", 128, -1, 0)
    with pytest.raises(ValueError):
        occupancy("a100", 128, 32, 0)


# --- arrays: jit and vmap over the numeric arguments ---
def test_arrays_jit_vmap_sweep():
    threads = jnp.asarray([c[0][0] for c in H200_CASES if c[0][3] is None])
    regs = jnp.asarray([c[0][1] for c in H200_CASES if c[0][3] is None])
    smem = jnp.asarray([c[0][2] for c in H200_CASES if c[0][3] is None])
    expected = [c[1] for c in H200_CASES if c[0][3] is None]
    fn = jax.jit(jax.vmap(lambda t, r, s: occupancy_arrays("h200", t, r, s)))
    out = fn(threads, regs, smem)
    assert out["active_blocks_per_sm"].tolist() == [e[0] for e in expected]
    assert out["active_warps_per_sm"].tolist() == [e[1] for e in expected]
    assert [LIMITERS[i] for i in out["limiter"].tolist()] == [e[2] for e in expected]
    # broadcasting sweep: every register count at 256 threads, never increasing with registers
    sweep = jax.jit(occupancy_arrays, static_argnums=0)("h200", 256, jnp.arange(1, 256), 0)
    blocks = np.asarray(sweep["active_blocks_per_sm"])
    assert blocks.shape == (255,) and np.all(np.diff(blocks) <= 0)
    assert blocks[31] == 8 and blocks[63] == 4 and blocks[254] == 1
    # the traced (jax.numpy) and the scalar (numpy) paths agree
    for regs in (1, 33, 64, 100, 200, 255):
        assert occupancy("h200", 256, regs, 0)["active_blocks_per_sm"] == blocks[regs - 1]


def test_arrays_carveout_vmapped():
    fn = jax.jit(jax.vmap(lambda c: occupancy_arrays("h200", 256, 32, 16 * KB, c)))
    out = fn(jnp.asarray([0, 100, 228]) * KB)
    assert out["active_blocks_per_sm"].tolist() == [1, 5, 8]
    assert out["shared_mem_per_sm"].tolist() == [32 * KB, 100 * KB, 228 * KB]


# --- CLI ---
def test_cli_json(capsys):
    assert cli(["--arch", "h200", "--threads", "256", "--regs", "64", "--smem", "16384", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["active_blocks_per_sm"] == 4
    assert data["active_warps_per_sm"] == 32
    assert data["occupancy"] == pytest.approx(0.5)
    assert data["limiter"] == "registers"


def test_cli_table(capsys):
    assert cli(["occupancy", "--arch", "g80", "--threads", "256", "--regs", "11"]) == 0
    text = capsys.readouterr().out
    assert "registers" in text and "66.7%" in text


def test_cli_errors(capsys):
    assert cli(["--threads", "0", "--regs", "32"]) == 2
    assert cli(["--arch", "nope", "--threads", "32", "--regs", "32"]) == 2
    assert "--arch" in capsys.readouterr().err
