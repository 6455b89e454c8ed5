"""Numpy references for the GEMM ladder, in the kernels' own accumulation order.

Every f32 rung computes each element of C as acc = 0; for k = 0, 1, ..., K-1: acc = fma(A[i,k], B[k,j],
acc) (one FFMA per step, one rounding). Tiles that reach past K add fma(0, 0, acc) = acc, which changes
nothing, so the rungs agree with this reference, and with each other, bit for bit.

The f32 fma is computed here independently of the emulator (`jaxsimt.units.alu` uses round-to-odd): the
product of two f32 is exact in f64; the sum p + c is rounded to f64 (s) and its rounding error e is
recovered exactly (TwoSum). Rounding s to f32 then equals rounding p + c, except when s lies exactly
halfway between two f32 and e != 0 (double rounding): then the exact sum is on e's side of the midpoint
and the f32 neighbour on that side is the answer. (No f32 midpoint can lie strictly between p + c and s,
since a midpoint is an f64 closer to p + c than s.)
"""
from __future__ import annotations

import numpy as np


def fma_f32(a, b, c) -> np.ndarray:
    """Elementwise f32 a*b + c with one rounding (round to nearest even), as FFMA."""
    a, b, c = (np.asarray(x, np.float32) for x in (a, b, c))
    p = a.astype(np.float64) * b.astype(np.float64)  # exact
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)  # p + c == s + e exactly
    r = s.astype(np.float32)
    r64 = r.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        other = np.nextafter(r, np.where(s > r64, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
        tie = (s != r64) & ((s - r64) == (other.astype(np.float64) - s)) & (e != 0)
    # at a tie, the exact sum lies on e's side of s: take the neighbour on that side
    toward_other = tie & ((e > 0) == (other > r))
    return np.where(toward_other, other, r).astype(np.float32)


def gemm_fma_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C = A x B in f32, per element k ascending with one fma per step (rungs 1 to 5)."""
    A = np.asarray(A, np.float32)
    B = np.asarray(B, np.float32)
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {A.shape}, B is {B.shape}")
    acc = np.zeros((M, N), np.float32)
    for k in range(K):
        acc = fma_f32(A[:, k:k + 1], B[k:k + 1, :], acc)
    return acc


def random_operands(M: int, N: int, K: int, seed: int = 0):
    """A (M x K) and B (K x N) uniform in [-1, 1) (the `--arg f32[N]:rand` convention) and a zero C."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1.0, 1.0, (M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, (K, N)).astype(np.float32)
    return A, B, np.zeros((M, N), np.float32)
