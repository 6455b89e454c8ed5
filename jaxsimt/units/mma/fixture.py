"""Reader for the H200 MMA ground truth written by jaxsimt/kernels/cuda/mma_truth.cu.

The fixture is `mma_truth.json` (manifest) + `mma_truth.bin`. Random tiles store only D; their inputs are
regenerated here exactly as `gen_random_bits` in mma_truth.cu does, and checked against the manifest's
checksum. Hard-case tiles store A, B, C, D and a category per tile.
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass, field

import numpy as np

DEFAULT_DIR = pathlib.Path(__file__).resolve().parent.parent.parent / "data" / "h200" / "mma"
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_FMT = {"f16": (5, 10, 16), "bf16": (8, 7, 16), "f32": (8, 23, 32), "tf32": (8, 23, 32)}


@dataclass
class TruthSet:
    """One instruction form's tiles, as bit patterns (uint16 for f16/bf16, uint32 for f32/tf32)."""

    meta: dict
    a: np.ndarray  # [tiles, m, k]
    b: np.ndarray  # [tiles, k, n]
    c: np.ndarray  # [tiles, m, n]
    d: np.ndarray  # [tiles, m, n], what the GPU wrote
    category: np.ndarray  # int16 [tiles]: -1 random tile, else index into hard_categories
    categories: list = field(default_factory=list)

    @property
    def input_type(self) -> str:
        return self.meta["a_type"]

    @property
    def acc_type(self) -> str:
        return self.meta["d_type"]


def _mix64(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def random_bits(seed: int, golden: int, cfg: int, tiles: np.ndarray, operand: int, count: int,
                fmt: str) -> np.ndarray:
    """uint32 [len(tiles), count]: the port of gen_random_bits (mma_truth.cu)."""
    t = tiles.astype(np.uint64)[:, None]
    i = np.arange(count, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        key = ((np.uint64(cfg) * np.uint64(1 << 20) + t) * np.uint64(4) + np.uint64(operand)) \
            * np.uint64(4096) + i
        h = _mix64(np.uint64(seed) + key * np.uint64(golden))
    profile = (tiles % 4)[:, None]
    eb, fb, width = _FMT["f32" if fmt == "tf32" else fmt]
    bias = (1 << (eb - 1)) - 1
    sign = h >> np.uint64(63)
    frac = h & np.uint64((1 << fb) - 1)
    r = ((h >> np.uint64(24)) & np.uint64(0xFFFF)).astype(np.int64)
    w = 12 if eb == 5 else 24
    e = np.where(profile == 0, bias - 2 + r % 3,
                 np.where(profile == 1, bias - w + r % (2 * w + 1), bias - 1 + r % 2)).astype(np.uint64)
    bits = (sign << np.uint64(eb + fb)) | (e << np.uint64(fb)) | frac
    raw = h & np.uint64((1 << width) - 1)
    emask = np.uint64((1 << eb) - 1)
    raw = np.where(((raw >> np.uint64(fb)) & emask) == emask, raw ^ np.uint64(1 << (fb + eb - 1)), raw)
    bits = np.where(profile == 2, raw, bits)
    if fmt == "tf32":
        bits = np.where(profile != 3, bits & np.uint64(0xFFFFE000), bits)
    return bits.astype(np.uint32)


def checksum(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int:
    """sum_i bits_i * (2 i + 1) mod 2^64 over A, B, C of each tile in turn (mma_truth.cu's checksum)."""
    n = a.shape[0]
    flat = np.concatenate([x.reshape(n, -1).astype(np.uint64) for x in (a, b, c)], 1).reshape(-1)
    with np.errstate(over="ignore"):
        return int(np.sum(flat * (np.arange(flat.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)),
                          dtype=np.uint64))


def _dtype(nbytes: int):
    return np.dtype("<u2") if nbytes == 2 else np.dtype("<u4")


def load(path=DEFAULT_DIR, verify: bool = True) -> dict[str, TruthSet]:
    """Read a fixture directory (or its manifest path) into {config name: TruthSet}; random and hard
    tiles are concatenated (random first)."""
    path = pathlib.Path(path)
    manifest_path = path / "mma_truth.json" if path.is_dir() else path
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != "jaxsimt-mma-truth":
        raise ValueError(f"{manifest_path} is not an mma_truth manifest")
    blob = (manifest_path.parent / manifest["binary"]).read_bytes()
    if len(blob) != manifest["binary_bytes"]:
        raise ValueError(f"binary has {len(blob)} bytes, manifest says {manifest['binary_bytes']}")
    gen = manifest["random_inputs"]
    seed, golden = int(gen["seed"], 16), int(gen["golden"], 16)
    out = {}
    for cfg in manifest["configs"]:
        m, n, k = cfg["m"], cfg["n"], cfg["k"]
        dab, dcd = _dtype(cfg["ab_bytes"]), _dtype(cfg["cd_bytes"])

        def section(name, dtype, shape):
            off, nbytes = cfg["sections"][name]
            return np.frombuffer(blob, dtype, nbytes // dtype.itemsize, off).reshape(shape).astype(
                np.uint32 if dtype.itemsize == 4 else np.uint16)

        nr, nh = cfg["n_random"], cfg["n_hard"]
        tiles = np.arange(nr)
        ra = random_bits(seed, golden, cfg["id"], tiles, 0, m * k, cfg["a_type"]).reshape(nr, m, k)
        rb = random_bits(seed, golden, cfg["id"], tiles, 1, k * n, cfg["b_type"]).reshape(nr, k, n)
        rc = random_bits(seed, golden, cfg["id"], tiles, 2, m * n, cfg["c_type"]).reshape(nr, m, n)
        if verify and checksum(ra, rb, rc) != int(cfg["random_checksum"], 16):
            raise ValueError(f"{cfg['name']}: regenerated random inputs do not match the checksum")
        ra, rb = ra.astype(dab.type), rb.astype(dab.type)
        rc = rc.astype(dcd.type)
        out[cfg["name"]] = TruthSet(
            meta=cfg,
            a=np.concatenate([ra, section("hard_a", dab, (nh, m, k))]),
            b=np.concatenate([rb, section("hard_b", dab, (nh, k, n))]),
            c=np.concatenate([rc, section("hard_c", dcd, (nh, m, n))]),
            d=np.concatenate([section("random_d", dcd, (nr, m, n)), section("hard_d", dcd, (nh, m, n))]),
            category=np.concatenate([np.full(nr, -1, np.int16),
                                     section("hard_category", np.dtype("u1"), (nh,)).astype(np.int16)]),
            categories=list(manifest["hard_categories"]),
        )
    return out


def manifest(path=DEFAULT_DIR) -> dict:
    path = pathlib.Path(path)
    return json.loads((path / "mma_truth.json" if path.is_dir() else path).read_text())


def exists(path=DEFAULT_DIR) -> bool:
    path = pathlib.Path(path)
    return (path / "mma_truth.json").is_file() and (path / "mma_truth.bin").is_file()


# --- comparing a model with the fixture -------------------------------------------------------------------
_FLOAT = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "f32": "float32"}


def model_bits(ts: TruthSet, mode: str = "hardware", params=None) -> np.ndarray:
    """D bits the model gives for every tile of `ts` (same dtype as ts.d)."""
    import jax
    import jax.numpy as jnp

    from jaxsimt.units.mma import numerics, ops

    params = params or numerics.H200
    a, b, c = ts.a, ts.b, ts.c
    if mode == "hardware":
        d = numerics.mma_bits(a, b, c, ts.input_type, ts.acc_type, params)
    else:
        fa = jnp.asarray(a).view(jnp.dtype(_FLOAT[ts.input_type]))
        fb = jnp.asarray(b).view(jnp.dtype(_FLOAT[ts.input_type]))
        fc = jnp.asarray(c).view(jnp.dtype(_FLOAT[ts.acc_type]))
        d = ops.mma(fa, fb, fc, ts.meta["shape"], "ieee", input_type=ts.input_type, params=params)
        d = jax.lax.bitcast_convert_type(d, jnp.uint16 if d.dtype.itemsize == 2 else jnp.uint32)
    return np.asarray(d).astype(ts.d.dtype)


def mismatched_tiles(ts: TruthSet, got: np.ndarray) -> np.ndarray:
    """bool [tiles]: tiles where any output differs from the GPU's bits (any NaN matches any NaN)."""
    eb, fb, _ = _FMT[ts.acc_type]
    emask, fmask = (1 << eb) - 1, (1 << fb) - 1

    def is_nan(x):
        x = x.astype(np.uint32)
        return (((x >> fb) & emask) == emask) & ((x & fmask) != 0)

    diff = (got != ts.d) & ~(is_nan(got) & is_nan(ts.d))
    return diff.reshape(diff.shape[0], -1).any(1)
