"""The hardware model against the H200 ground truth (jaxsimt/kernels/cuda/mma_truth.cu), when the fixture exists.

The fixture lives at jaxsimt/data/h200/mma/ (or the directory named by JAXSIMT_MMA_FIXTURE)."""
import os
import pathlib

import numpy as np
import pytest

from jaxsimt.units.mma import fixture

FIXTURE = pathlib.Path(os.environ.get("JAXSIMT_MMA_FIXTURE", fixture.DEFAULT_DIR))

# `mma_truth --checksums` (host only) printed these for the random inputs of each configuration
CHECKSUMS = {
    0: ("m16n8k16", "f16", "f32", 0x668515D31872AA3C),
    1: ("m16n8k16", "bf16", "f32", 0x66E8355E352404C8),
    2: ("m16n8k16", "f16", "f16", 0x0076969EBA3FD04B),
    3: ("m16n8k8", "f16", "f32", 0x040256772BE28030),
    4: ("m16n8k8", "bf16", "f32", 0x0257EFAF3FC6544B),
    5: ("m16n8k8", "tf32", "f32", 0x7B204B9D223264C0),
    6: ("m16n16k16", "f16", "f32", 0x2BC5FBDC8F336413),
}
SEED, GOLDEN = 0x6A617873696D7401, 0x9E3779B97F4A7C15


@pytest.mark.parametrize("cfg", sorted(CHECKSUMS))
def test_random_input_port_matches_cuda_generator(cfg):
    shape, ab, cd, want = CHECKSUMS[cfg]
    dims = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n16k16": (16, 16, 16)}[shape]
    m, n, k = dims
    tiles = np.arange(2000)
    a = fixture.random_bits(SEED, GOLDEN, cfg, tiles, 0, m * k, ab)
    b = fixture.random_bits(SEED, GOLDEN, cfg, tiles, 1, k * n, ab)
    c = fixture.random_bits(SEED, GOLDEN, cfg, tiles, 2, m * n, cd)
    assert fixture.checksum(a, b, c) == want


needs_fixture = pytest.mark.skipif(not fixture.exists(FIXTURE), reason=f"no MMA fixture at {FIXTURE}")


@pytest.fixture(scope="module")
def truth():
    return fixture.load(FIXTURE)


@needs_fixture
def test_fixture_manifest(truth):
    meta = fixture.manifest(FIXTURE)
    print(f"\nMMA fixture from {meta['device']['name']} (driver {meta['device']['driver_version']})")
    for name, ts in truth.items():
        assert ts.a.shape[0] == ts.d.shape[0] >= 2000 + 1


def _names():
    if not fixture.exists(FIXTURE):
        return ["absent"]
    return [c["name"] for c in fixture.manifest(FIXTURE)["configs"]]


@needs_fixture
@pytest.mark.parametrize("name", _names())
def test_hardware_mode_bitwise(truth, name):
    ts = truth[name]
    hw = fixture.mismatched_tiles(ts, fixture.model_bits(ts, "hardware"))
    ieee = fixture.mismatched_tiles(ts, fixture.model_bits(ts, "ieee"))
    print(f"\n{name}: hardware mode wrong on {hw.sum()} / {hw.size} tiles; ieee mode wrong on "
          f"{ieee.sum()} / {ieee.size} tiles")
    if hw.any():
        cats = ["random"] + ts.categories
        counts = {cats[c + 1]: int(np.sum(hw & (ts.category == c))) for c in range(-1, len(ts.categories))}
        pytest.fail(f"{name}: hardware mode differs from the H200 on {hw.sum()} tiles: "
                    f"{ {k: v for k, v in counts.items() if v} }")
