"""jaxsimt: a vectorized SIMT (GPU) emulator in JAX.

Write kernels with the DSL (`@jaxsimt.kernel`), run them with `jaxsimt.launch`, read `result.stats`.
"""
from jaxsimt import arch, cuda  # cuda: jaxsimt.cuda.load of .cu sources
from jaxsimt.arch import ARCHS, Arch, get_arch
from jaxsimt.dsl import (
    FULL_MASK, Const, Kernel, KernelTraceError, Ptr, Value, Var, all_sync, any_sync, ballot_sync, bar_arrive, bar_sync,
    blockDim, blockIdx,
    break_, const, continue_, cos, ctaid, else_, exp2, fma, global_thread_index, gridDim, if_, kernel,
    laneid, log2, mad, maximum, minimum, nctaid, ntid, rcp, return_, rsqrt, shared, shfl_down_sync, shfl_sync,
    shfl_up_sync, shfl_xor_sync, sin, sqrt, syncthreads, syncwarp, threadIdx, tid, var, warpid, where, while_,
)
from jaxsimt.dsl import range  # noqa: A004 - the DSL's loop, used as jaxsimt.range
from jaxsimt.dsl import Tex2D, address_of, ldg, load, store, tex2d  # noqa: E402
from jaxsimt.errors import (
    DeadlockError, DivergentBarrierError, LaunchConfigError, MemoryFault, SimtError, StackOverflowError,
    StepBudgetExceeded,
)
from jaxsimt.run.launch import LaunchResult, launch
from jaxsimt.run.options import LaunchOptions
from jaxsimt.run.compile_cache import enable_compile_cache  # opt-in: importing jaxsimt leaves JAX's config alone
from jaxsimt.run.gpu_graphs import enable_concurrent_gpu_graphs  # opt-in, before JAX's first computation
from jaxsimt.run.batch import BatchResult, LaunchSpec, launch_batch, sweep
from jaxsimt.tensor import WarpSyncError, ldmatrix, mma_sync, wmma
from jaxsimt.units import mma, occupancy  # noqa: E402  (jaxsimt.mma.mma, jaxsimt.occupancy.occupancy)
from jaxsimt.types import bf16, f16, f32, f64, pred, s8, s16, s32, s64, u8, u16, u32, u64

__version__ = "0.1.0"
