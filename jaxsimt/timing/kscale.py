"""A GEMM rung's counters and instruction trace at a large K from two emulated runs at small K.

Each rung's k loop runs K / k_tile times, every iteration the same instructions, and its addresses repeat
relative to 128-byte lines with a period of 128 / (element bytes) in k. So for K a multiple of ALIGN_K
(a multiple of every rung's k tile and of that period), every count a run makes — per instruction:
executions, requests, sectors, lines, wavefronts, conflicts; per warp: the length of its instruction
stream — is an affine function of K, and two runs at K1 < K2 give it exactly: v(K) = v1 + (v2 - v1)
(K - K1) / (K2 - K1). A count whose extrapolation is not a whole number is not affine: `NotAffine` is
raised and the caller runs the real K. The instruction streams themselves are the same up to the
shorter one's end (the loop's iterations are identical), so a replay that never reaches the end of the
K2 stream sees exactly what the full stream would give (the caller checks that: `window_within`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

ALIGN_K = 64  # a multiple of every rung's k tile (at most 32) and of 128 B / 2 B (f16) and 128 B / 4 B (f32)
K1, K2 = 64, 128  # the two traced / counted sizes; the caller traces longer streams where a replay outruns them

# per-instruction counts (rows of LaunchResult.per_instruction) and stats that are not counts
_RATIOS = {"simd_efficiency", "occupancy", "sm__maximum_warps_per_active_cycle_pct", "max_stack_depth"}


class NotAffine(ValueError):
    """A count that two sizes do not extrapolate to a whole number at the third."""


def applies(K: int, k2: int = K2) -> bool:
    """Whether K is large enough and aligned for the extrapolation."""
    return K % ALIGN_K == 0 and K > k2


def affine(v1, v2, k1: int, k2: int, k: int, name: str = "count"):
    """v at k from v1 at k1 and v2 at k2 (ints stay exact ints; arrays elementwise)."""
    a1, a2 = np.asarray(v1), np.asarray(v2)
    if np.issubdtype(a1.dtype, np.integer) and np.issubdtype(a2.dtype, np.integer):
        num = (a2.astype(np.int64) - a1) * (k - k1)
        if np.any(num % (k2 - k1)):
            raise NotAffine(f"{name}: {v1} at K={k1}, {v2} at K={k2} is not affine in K")
        out = a1 + num // (k2 - k1)
    else:
        out = a1 + (a2 - a1) * ((k - k1) / (k2 - k1))
    return out.item() if out.ndim == 0 else out


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def rows_at(rows1: list, rows2: list, k1: int, k2: int, k: int) -> list:
    """Per-instruction rows at k: every numeric field that differs between the two runs extrapolated."""
    out = []
    for r1, r2 in zip(rows1, rows2):
        row = dict(r2)
        for key, v2 in r2.items():
            v1 = r1.get(key)
            if _number(v2) and _number(v1) and v1 != v2:
                row[key] = affine(v1, v2, k1, k2, k, f"pc {r2.get('pc')} {key}")
        out.append(row)
    return out


def stats_at(s1: dict, s2: dict, k1: int, k2: int, k: int) -> dict:
    """A launch's stats at k: counts extrapolated, ratios recomputed (SIMD efficiency) or kept (occupancy,
    stack depth: the same at every K), `emulator__steps` the steps the two runs really emulated."""
    out = {}
    for key, v2 in s2.items():
        v1 = s1.get(key, v2)
        if key == "emulator__steps":
            out[key] = int(v1) + int(v2)
        elif key in _RATIOS or key.startswith(("launch__", "active_")) or not _number(v2) or v1 == v2:
            out[key] = v2
        else:
            out[key] = affine(v1, v2, k1, k2, k, key)
    w = out.get("smsp__inst_executed.sum", 0)
    if "simd_efficiency" in out and w:
        out["simd_efficiency"] = float(out["smsp__thread_inst_executed.sum"] / (w * 32))
    return out


def trace_at(t1, t2, k1: int, k2: int, k: int):
    """The Trace at k: t2's streams (the same as the full ones up to their end) and per-instruction memory
    fractions (computed by the caller at k), with every warp's stream length extrapolated."""
    if t1.pcs.shape[0] != t2.pcs.shape[0] or not np.array_equal(t1.block, t2.block):
        raise NotAffine("the two traces ran different warps")
    length = affine(t1.length.astype(np.int64), t2.length.astype(np.int64), k1, k2, k, "stream length")
    meta = {**t2.meta, "stream_k": k2, "stream_length": same_prefix(t1, t2)}
    return dataclasses.replace(t2, length=np.asarray(length, np.int64), meta=meta)


def same_prefix(t1, t2) -> np.ndarray:
    """[NW] how much of each of t2's streams the stream at any larger K shares: a stream is a prologue, the
    loop's iterations and an epilogue, so t1's and t2's first difference is where t1 leaves the loop, and
    t2 leaves it (len2 - len1) instructions later; from there on the streams at larger K still loop."""
    L1 = t1.pcs.shape[1]
    a, b = t1.pcs, t2.pcs[:, :L1]
    if b.shape[1] < L1:
        b = np.pad(b, ((0, 0), (0, L1 - b.shape[1])), constant_values=-1)
    differ = a != b
    first = np.where(differ.any(axis=1), differ.argmax(axis=1), L1)
    n1 = np.minimum(t1.length, L1).astype(np.int64)
    n2 = np.minimum(t2.length, t2.pcs.shape[1]).astype(np.int64)
    return np.minimum(np.minimum(first, n1) + (t2.length.astype(np.int64) - t1.length), n2)


def window_within(t, out) -> bool:
    """Whether a replay (`timing.run` output) of a trace from `trace_at` issued, for every traced warp, fewer
    instructions than its K2 stream shares with the full one (then the full streams give the same replay)."""
    if "stream_length" not in t.meta:
        return True
    pc, warp = np.asarray(out["timeline"][3]), np.asarray(out["timeline"][4])
    n = t.meta["stream_length"]
    full = np.asarray(t.length)
    for sm in range(pc.shape[0]):
        issued = np.bincount(warp[sm][pc[sm] >= 0], minlength=len(n))[:len(n)]
        if np.any((issued >= n) & (n < full)):
            return False
    return True
