"""Kernels that behave differently under the reconvergence stack and Independent Thread Scheduling
(`jaxsimt.launch(..., mode="stack" | "its")`, docs/its.md).

- `spin_lock`: the classic intra-warp spin lock. Under the stack it livelocks (the lock's holder waits at
  the spin loop's reconvergence point while its warp-mates spin); under ITS it completes.
- `warp_sum`: a warp-level sum through shared memory after lanes did different amounts of work. Without
  `__syncwarp` (sync=0) it silently assumes lockstep: correct under the stack, wrong under ITS; with it
  (sync=1), correct in both modes.
- `loop_tail`: a loop with a lane-dependent trip count followed by more work: same results in both
  modes, but under ITS each group that leaves the loop runs the tail on its own (lower SIMD efficiency).
"""
from __future__ import annotations

import jaxsimt as js
from jaxsimt import Ptr, s32


@js.kernel
def spin_lock(lock: Ptr[s32], counter: Ptr[s32]):
    """Every thread takes block `blockIdx.x`'s lock, increments its counter with a plain (non-atomic)
    read-modify-write, and releases the lock. CUDA form: jaxsimt/kernels/cuda/its.cu (PTX: jaxsimt/kernels/ptx/its.ptx):

        while (atomicCAS(&lock[b], 0, 1) != 0) { }   // acquire
        counter[b] = counter[b] + 1;                  // critical section
        atomicExch(&lock[b], 0);                      // release
    """
    b = js.blockIdx.x
    for _ in js.while_(lambda: lock.atomic_cas(b, 0, 1) != 0):
        pass
    counter[b] = counter[b] + 1
    lock.atomic_exch(b, 0)


@js.kernel
def warp_sum(lens: Ptr[s32], x: Ptr[s32], out: Ptr[s32], sync: s32):
    """out[warp] = sum over the warp's lanes t of sum(x[t * 32 : t * 32 + lens[t]]).

    Each lane first sums its own segment (a loop whose trip count depends on the lane), stores the partial
    sum to shared memory, and the warp adds the partials in a tree (lane i adds lane i + off's value).
    With `sync == 0` it is written as pre-Volta warp-synchronous code was, trusting the warp to run in
    lockstep; with `sync != 0` every shared-memory step is followed by `__syncwarp()`, as Volta and later
    require. CUDA form: jaxsimt/kernels/cuda/its.cu (PTX: jaxsimt/kernels/ptx/its.ptx)."""
    part = js.shared(32 * 32, s32, "part")  # 32 warps at most
    lane = js.laneid()
    w = js.warpid()
    t = w * 32 + lane
    acc = js.var(0, s32)
    for i in js.range(lens[t]):
        acc += x[t * 32 + i]
    part[t] = acc
    with js.if_(sync != 0):
        js.syncwarp()
    for off in (16, 8, 4, 2, 1):
        with js.if_(lane < off):
            part[t] = part[t] + part[t + off]
        with js.if_(sync != 0):
            js.syncwarp()
    with js.if_(lane == 0):
        out[w] = part[t]


@js.kernel
def loop_tail(out: Ptr[s32]):
    """out[t] = 3 * (t % 4) + 7: a loop of t % 4 iterations, then a tail of straight-line work."""
    t = js.threadIdx.x
    acc = js.var(0, s32)
    for _ in js.range(t % 4):
        acc += 3
    out[t] = acc + 7
