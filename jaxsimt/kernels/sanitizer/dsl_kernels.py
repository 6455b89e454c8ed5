"""DSL forms of planted bugs of the sanitizer corpus (one or more per check) and of clean look-alikes.

Each kernel mirrors the CUDA kernel of the same name without the `dsl_` prefix (memcheck.cu, racecheck.cu,
initcheck.cu, synccheck.cu, clean.cu): same access pattern, same grid in jaxsimt/kernels/sanitizer/cases.py. The
faulting access of a planted bug carries a `planted CASE` comment on its line; cases.py names those lines.
"""
from __future__ import annotations

import jaxsimt as js
from jaxsimt import Ptr, f32, s32


@js.kernel
def dsl_mc_store_past_end(out: Ptr[f32], n: s32):
    """out[i] = 2 i for i <= n: the guard lets thread n write out[n], one past the end."""
    i = js.global_thread_index()
    with js.if_(i <= n):
        out[i] = 2.0 * i.astype(f32)  # planted dsl_mc_store_past_end


@js.kernel
def dsl_mc_load_next_alloc(x: Ptr[f32], out: Ptr[f32], n: s32):
    """out[i] = x[i + 1] - x[i]: the last thread reads x[n], the first element of the next allocation."""
    i = js.global_thread_index()
    with js.if_(i < n):
        out[i] = x[i + 1] - x[i]  # planted dsl_mc_load_next_alloc


@js.kernel
def dsl_rc_raw_between_warps(x: Ptr[f32], out: Ptr[f32]):
    """Each thread reads the shared element a thread of the next warp wrote, with no barrier between."""
    s = js.shared(256, f32, "s")
    t = js.threadIdx.x
    s[t] = x[t]  # planted dsl_rc_raw_between_warps (write)
    out[t] = s[(t + 32) % 256]  # planted dsl_rc_raw_between_warps (read)


@js.kernel
def dsl_rc_global_sum(x: Ptr[f32], out: Ptr[f32], n: s32):
    """out[0] += x[i] from every thread of the grid with a plain read-modify-write, not an atomic."""
    i = js.global_thread_index()
    with js.if_(i < n):
        out[0] = out[0] + x[i]  # planted dsl_rc_global_sum (write) (read)


@js.kernel
def dsl_ic_shared_unwritten(x: Ptr[f32], out: Ptr[f32]):
    """s[255] is never written (the staging guard stops one short), and thread 0 reads it."""
    s = js.shared(256, f32, "s")
    t = js.threadIdx.x
    with js.if_(t < 255):
        s[t] = x[t]
    js.syncthreads()
    out[t] = s[255 - t]  # planted dsl_ic_shared_unwritten


@js.kernel
def dsl_ic_global_uninit(x: Ptr[f32], bias: Ptr[f32], out: Ptr[f32], n: s32):
    """out[i] = x[i] + bias[i], where the host allocated `bias` and never wrote it."""
    i = js.global_thread_index()
    with js.if_(i < n):
        out[i] = x[i] + bias[i]  # planted dsl_ic_global_uninit


@js.kernel
def dsl_sc_half_block_barrier(x: Ptr[f32], out: Ptr[f32]):
    """Warps 0..3 of 8 wait at a barrier that warps 4..7 never reach."""
    s = js.shared(256, f32, "s")
    t = js.threadIdx.x
    s[t] = x[t]
    with js.if_(t < 128):
        js.syncthreads()  # planted dsl_sc_half_block_barrier
    out[t] = s[255 - t]


@js.kernel
def dsl_sc_shfl_partial_mask(x: Ptr[s32], out: Ptr[s32]):
    """A shuffle naming the whole warp, executed by lanes 0..15 only."""
    t = js.threadIdx.x
    v = js.var(x[t], s32)
    with js.if_(t < 16):
        v += js.shfl_down_sync(v, 8)  # planted dsl_sc_shfl_partial_mask
    out[t] = v


@js.kernel
def dsl_ok_tree_reduce(x: Ptr[f32], out: Ptr[f32]):
    """Shared-memory tree reduction with a barrier after every step: out[b] = sum of block b's 256 values."""
    s = js.shared(256, f32, "s")
    t = js.threadIdx.x
    s[t] = x[js.blockIdx.x * 256 + t]
    js.syncthreads()
    for stride in (128, 64, 32, 16, 8, 4, 2, 1):
        with js.if_(t < stride):
            s[t] = s[t] + s[t + stride]
        js.syncthreads()
    with js.if_(t == 0):
        out[js.blockIdx.x] = s[0]


@js.kernel
def dsl_ok_histogram(x: Ptr[s32], hist: Ptr[s32], n: s32):
    """A 16-bin histogram: atomics into shared bins, then the block's bins added atomically to `hist`."""
    bins = js.shared(16, s32, "bins")
    t = js.threadIdx.x
    i = js.global_thread_index()
    with js.if_(t < 16):
        bins[t] = js.const(0, s32)
    js.syncthreads()
    with js.if_(i < n):
        bins.atomic_add(x[i] & 15, js.const(1, s32))
    js.syncthreads()
    with js.if_(t < 16):
        hist.atomic_add(t, bins[t])


@js.kernel
def dsl_ok_warp_reduce_shfl(x: Ptr[s32], out: Ptr[s32]):
    """Per-warp sums by __shfl_down_sync, every lane of the warp executing every shuffle."""
    i = js.global_thread_index()
    v = js.var(x[i], s32)
    for off in (16, 8, 4, 2, 1):
        v += js.shfl_down_sync(v, off)
    with js.if_(js.laneid() == 0):
        out[i // 32] = v
