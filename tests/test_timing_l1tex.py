"""The L1TEX data stage: global loads and stores pass the same data pipe as shared accesses, one wavefront
per distinct 128-byte line of a request (as the H200's do: kernels/cuda/l1_rate.cu), so a kernel mixing
scattered global loads with shared ones is bounded by the sum of both.

The case runs on a one-SM, one-scheduler H200 variant whose data pipe is the only slow part (50 cycles a
wavefront; latencies of 1, queues that never throttle, an L1 tag stage that takes any number of lines a cycle), so the
expected cycles follow from the wavefronts each instruction moves."""
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Ptr, f32, s32
from jaxsimt.arch import get_arch
from jaxsimt.timing import replay as tm
from jaxsimt.timing import trace as tr

ARCH = get_arch("h200").replace(num_sms=1, warp_schedulers_per_sm=1)
WAVEFRONT = 50.0  # cycles per data-pipe wavefront
LOOPS = 8
N = 4096


@js.kernel
def gather_and_share(x: Ptr[f32], y: Ptr[f32], stride: s32):
    s = js.shared((128,), f32)
    i = js.threadIdx.x
    s[i] = x[i]
    js.syncthreads()
    acc = js.var(0.0)
    for k in js.range(LOOPS):
        acc.set(acc + x[(i * stride + k) % N] + s[(i + k) % 128])
    y[i] = acc


def _params():
    p = tm.starting_params(ARCH)
    fast = dict(block_launch_cycles=1.0, block_dispatch_cycles=1.0, alu_latency=1.0, fma_latency=1.0,
                sfu_latency=1.0, shared_latency=1.0, l1_latency=1.0, l2_latency=1.0, dram_latency=1.0,
                branch_latency=1.0, barrier_latency=1.0, alu_issue=1.0, alu_dispatch_cycles=1.0, fp32_issue=1.0,
                sfu_issue=1.0, lsu_issue=1.0, control_issue=1.0, l1_lines_per_tag_cycle=1e4,
                l2_bytes_per_cycle=1e6, dram_gbytes_per_s=1e9, mio_queue_cycles=1e6, lsu_queue_cycles=1e6,
                shared_cycles_per_wavefront=WAVEFRONT)
    p.update({k: jnp.float32(v) for k, v in fast.items() if k in p})
    return p


@pytest.mark.parametrize("stride", [1, 32])
def test_global_sectors_occupy_the_shared_data_pipe(stride):
    x, y = np.arange(N, dtype=np.float32), np.zeros(128, np.float32)
    r = js.launch(gather_and_share, 1, 128, (x, y, np.int32(stride)), arch=ARCH, trace=True)
    t = tr.from_launch(r)
    stats, _, _ = tm.predict(t, ARCH, 1, _params(), "gto", steps=2048)
    warps = 4
    gl = [pc for pc in range(len(t.cls)) if t.cls[pc] == tr.GLOBAL]
    loop_gl = [pc for pc in gl if (t.pcs == pc).sum() == warps * LOOPS]
    assert len(loop_gl) == 1
    sectors, lines = float(t.sectors[loop_gl[0]]), float(t.wavefronts[loop_gl[0]])
    # 32 lanes 128 B apart: 32 sectors in 32 lines; consecutive floats: 4 sectors in one line, or 5 in two
    # where k shifts them across a sector (k > 0: seven of the eight iterations)
    assert sectors == 32 if stride == 32 else 4 <= sectors <= 5
    assert lines == (32 if stride == 32 else (1 + 2 * (LOOPS - 1)) / LOOPS)
    # every warp passes the pipe with: the first global load and the shared store (one wavefront each),
    # each iteration's global load (a wavefront per line) and shared load (one), and the final store,
    # which the kernel's end does not wait for
    busy = warps * WAVEFRONT * (2 + LOOPS * lines + LOOPS)
    assert busy <= stats["cycles"] <= 1.3 * (busy + warps * WAVEFRONT), (stats["cycles"], busy)
    # without the stage, the shared accesses alone would bound it: warps * WAVEFRONT * (1 + LOOPS)
    assert stats["cycles"] > 1.5 * warps * WAVEFRONT * (1 + LOOPS)
