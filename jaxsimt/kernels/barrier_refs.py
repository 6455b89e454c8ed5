"""numpy references of the named-barrier kernels (cuda/barriers.cu, ptx/barriers.ptx), for the tests and for the
GPU script cuda/run_barriers.py (numpy only: that script runs without jaxsimt)."""
import numpy as np


def pipeline_ref(x):
    """bar_pipeline: every element doubled plus one, through the producer/consumer rounds."""
    return 2 * x + 1


def subset_ref(x):
    """bar_subset on one block of 256 threads ([256] int32 `x`): threads 0-63 read a reversed neighbour after a
    barrier of 64 threads; thread i >= 64 applies v = v * 5 + k (mod 2^32) for k < i % 8."""
    t = np.arange(256)
    out = x.astype(np.int64) & 0xFFFFFFFF
    for k in range(7):  # lanes whose i % 8 > k take step k
        step = (t >= 64) & ((t & 7) > k)
        out = np.where(step, (out * 5 + k) & 0xFFFFFFFF, out)
    out[:64] = (3 * x[63 - t[:64]].astype(np.int64) + t[:64]) & 0xFFFFFFFF
    return out.astype(np.uint32).view(np.int32)
