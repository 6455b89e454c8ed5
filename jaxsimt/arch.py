"""GPU architectures as data.

Every architectural number the emulator uses (warp size, limits, register and shared-memory allocation
rules, banks, sectors, SM count, clocks, bandwidths, latencies) lives here, one frozen `Arch` per GPU.
Nothing else in jaxsimt hard-codes such a number: models take an `Arch` (or its name) and read it.

Sources: the seeds (G80: 16 banks evaluated per half-warp, 8192 registers and 16 KB shared memory per SM;
Fermi: 32 banks, 32K registers, 48/16 KB shared/L1 split, 768 KB L2), NVIDIA's CUDA occupancy calculator
(`cuda_occupancy.h`: allocation units and granularities per compute capability) and the CUDA programming
guide's table of per-compute-capability limits. Timing figures (latencies, bandwidths) are starting
points for the cost and timing models, meant to be calibrated, not hardware facts.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Timing:
    """Latencies (cycles), issue intervals and bandwidths: the numbers a timing model fits.

    Kept apart from the structural fields so that a model can turn them into a pytree of floats
    (`dataclasses.asdict`) and differentiate or vmap over them.
    """

    clock_ghz: float  # SM clock used to convert cycles to time
    alu_latency: float  # integer / logic / fp32 add-mul
    fma_latency: float
    sfu_latency: float  # rcp, sqrt, ex2, lg2, sin, cos
    tensor_latency: float  # one mma.sync
    shared_latency: float  # shared-memory load, no conflict
    l1_latency: float  # global load hitting L1
    l2_latency: float
    dram_latency: float
    fp32_lanes_per_sm: float  # FP32 FMA lanes per SM (issue rate in thread-FMAs per cycle)
    sfu_lanes_per_sm: float
    lsu_lanes_per_sm: float
    tensor_flops_per_cycle_per_sm: float  # dense f16/bf16 with f32 accumulate (FLOPs = 2 x MACs)
    shared_bytes_per_cycle_per_sm: float  # one wavefront per cycle x bank count x bank width
    l2_bytes_per_cycle: float  # whole chip
    dram_gbytes_per_s: float  # whole chip, GB/s
    # --- the cycle-level model (jaxsimt.timing.replay); cycles unless said ---
    branch_latency: float = 8.0  # a warp's next instruction after a branch / exit (branch_resolving)
    barrier_latency: float = 20.0  # from the last warp's arrival to the release of a block's warps
    # per-scheduler issue interval of one warp instruction, by class (cycles the pipe stays busy)
    alu_issue: float = 2.0  # integer / logic / compare / move (16 INT32 lanes per sub-partition)
    fp32_issue: float = 1.0
    sfu_issue: float = 8.0
    tensor_issue: float = 2.0  # at least; an mma occupies the tensor pipe flops / (rate per sub-partition)
    lsu_issue: float = 2.0  # shared / global / shuffle instructions into the MIO / LSU queues
    control_issue: float = 1.0
    # scheduler cycles per issued integer / control instruction: the emulated IR (DSL or PTX) has more of
    # them than SASS (address arithmetic folded into memory operands, unrolled loop counters), so the
    # calibration may set this below 1; every other instruction takes one scheduler cycle
    alu_dispatch_cycles: float = 1.0
    shared_cycles_per_wavefront: float = 1.0  # SM-wide shared-memory data pipe
    # a global access holds the L1TEX tag stage one cycle per tag wavefront, which takes up to this many of
    # its lines (ncu's l1tex__t_output_wavefronts on the H200), and the data stage one wavefront per line
    # (shared_cycles_per_wavefront: the H200's global loads run one line per cycle, kernels/cuda/l1_rate.cu)
    l1_lines_per_tag_cycle: float = 4.0
    # the SM clock of a kernel that issues Tensor Core instructions (the H200 drops to it whatever their share;
    # 0: clock_ghz)
    tensor_clock_ghz: float = 0.0
    mio_queue_cycles: float = 16.0  # shared-memory backlog beyond which shared instructions stall (mio_throttle)
    lsu_queue_cycles: float = 64.0  # L1 backlog beyond which global instructions stall (lg_throttle)
    block_launch_cycles: float = 200.0  # from a block slot freeing (or kernel start) to its next block's first issue
    # an SM starts at most one block per this many cycles (its block dispatch; 0: no limit): a grid of many
    # short blocks runs at this rate whatever its memory traffic. The H200's is measured (empty blocks, 64-256
    # per SM: ~143 cycles each, docs/timing.md) and held there; 0 where nothing measured it
    block_dispatch_cycles: float = 0.0
    launch_overhead_us: float = 1.5  # kernel launch to first block and last block to completion, microseconds
    # a request waits for the slowest of its lines, and lines differ in latency (L2 slices near and far, DRAM
    # banks and rows): its latency rises with the lines it misses, by this many cycles per doubling of them
    # beyond what the L1TEX and bandwidth stages take; the DRAM one adds to the L2 one for lines from DRAM.
    # Measured for random lines (calibrate.loaded_terms: H200 7.3 and 85); 0 by default: requests of adjacent
    # lines (strided and coalesced streams) rise far less, and no counter says yet how scattered a request's
    # lines are (docs/timing.md "A request waits for its slowest line")
    l2_latency_per_doubling: float = 0.0
    dram_latency_per_doubling: float = 0.0
    # global atomics on one L2 sector serialize: SM cycles per operation there (a kernel takes at least its
    # busiest sector's operations times this)
    atomic_cycles_per_op: float = 1.5


@dataclass(frozen=True)
class Arch:
    """One GPU architecture. All sizes in bytes unless the name says otherwise."""

    name: str  # lowercase identifier used on every interface: g80, fermi, h100, h200
    display_name: str
    compute_capability: tuple[int, int]

    # --- execution ---
    warp_size: int
    num_sms: int
    warp_schedulers_per_sm: int
    its_supported: bool  # Independent Thread Scheduling (Volta+): launch(mode="its") allowed; the default
    # execution mode stays the reconvergence stack on every architecture (docs/its.md)

    # --- launch limits ---
    max_threads_per_block: int
    max_block_dim: tuple[int, int, int]
    max_grid_dim: tuple[int, int, int]
    barriers_per_block: int  # hardware block barriers (PTX bar.sync ids 0..barriers_per_block-1)

    # --- per-SM residency limits (occupancy) ---
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int  # 32-bit registers
    max_registers_per_block: int
    max_registers_per_thread: int
    register_alloc_unit: int  # registers are allocated in units of this many
    register_alloc_per: str  # "warp" (units per warp) or "block" (units per block, G80/GT200)
    warp_alloc_granularity: int  # warps of a block are allocated in multiples of this (register limit)
    shared_mem_per_sm: int  # largest shared-memory carve-out
    shared_mem_per_block: int  # default per-block limit (without opt-in)
    shared_mem_per_block_optin: int  # per-block limit with cudaFuncAttributeMaxDynamicSharedMemorySize
    shared_mem_alloc_unit: int
    reserved_shared_mem_per_block: int  # driver reservation per block (sm_80+: 1 KB)
    shared_carveouts_kb: tuple[int, ...]  # shared-memory sizes the L1/shared split allows per SM
    l1_plus_shared_per_sm: int  # unified L1 + shared storage per SM

    # --- shared memory banks ---
    shared_banks: int
    bank_width: int  # bytes per bank word
    bank_group_threads: int  # threads evaluated together for conflicts: 16 (half-warp, G80) or 32

    # --- global memory ---
    coalescing: str  # "g80_segments" | "fermi_lines" | "sectors"
    sector_size: int
    line_size: int
    l2_size: int
    alloc_alignment: int  # base alignment of allocations (what cudaMalloc guarantees: 256)

    # --- register file banks (issue 9) ---
    register_banks: int

    timing: Timing = field(repr=False, default=None)  # type: ignore[assignment]
    # the cycle-level model's parameters fitted to measurements (jaxsimt.apps.calibrate); None: `timing`'s
    # starting values. The analytical model (jaxsimt.timing.cost) keeps using `timing`.
    timing_fitted: Optional[Timing] = field(repr=False, default=None)

    # --- memory-model details (issue 3); defaults are the Fermi-and-later / Hopper values ---
    # lanes served together per shared-memory wavefront group, by access size in bytes: the warp is cut into
    # groups of this many consecutive lanes and each group with an active lane costs at least one wavefront
    # (Fermi+: 8-byte accesses per half-warp, 16-byte per quarter-warp; G80: always per half-warp)
    shared_group_lanes: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (4, 32), (8, 16), (16, 8))
    # access sizes for which the two groups of a half-warp that request the identical set of words are
    # served in one pass (H200: an LDS.128 whose two quarter-warps read the same 16-byte chunks costs one
    # wavefront per half-warp, measured in the GEMM ladder's tiled rungs)
    shared_pair_identical_groups: tuple[int, ...] = (16,)
    # how lanes reading the same bank word share it: "multicast" (any number of words per wavefront, Fermi+)
    # or "one_broadcast_word" (one broadcast word per step, one address per other bank: compute capability 1.x)
    shared_multicast: str = "multicast"
    # lanes per global-memory request, by access size in bytes (Hopper: assumed one request per warp
    # instruction for every size, to be confirmed by the H200 fixtures; Fermi: split per half/quarter-warp
    # for 8/16-byte accesses; G80: per half-warp)
    global_request_lanes: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (4, 32), (8, 32), (16, 32))
    # compute-capability-1.x segment size by access size in bytes (CUDA programming guide, cc 1.2/1.3)
    g80_segment_bytes: tuple[tuple[int, int], ...] = ((1, 32), (2, 64), (4, 128), (8, 128), (16, 128))

    # --- register banks, constant and read-only/texture caches, unified addressing (issue 9) ---
    # registers one bank delivers to the operand collector per cycle (bank = register number % register_banks)
    register_bank_ports: int = 1
    # how much the busiest register bank exceeds an even share of an instruction stream's register reads,
    # under the compiler's register allocation (1.0: even). PTX registers are virtual, so the timing model
    # takes this statistic of the allocations the compiler makes instead of their banks
    # (`jaxsimt.units.regbanks.read_cycles`)
    register_bank_imbalance: float = 1.0
    # --- instruction fetch (jaxsimt.timing.fetch) ---
    instruction_bytes: int = 16  # one SASS instruction
    # code sizes the instruction caches hold, first level then second (empty: fetch never limits issue)
    icache_bytes: tuple[int, ...] = ()
    # cycles per instruction a scheduler issues at most when its loop streams from the level after each cache
    # (the second level, then L2), one row per level, by the warps per scheduler running the code (icache_warps)
    icache_warps: tuple[int, ...] = (1, 2, 4, 8)
    icache_miss_cpi: tuple[tuple[float, ...], ...] = ()
    const_mem_size: int = 64 * 1024  # __constant__ bytes of one launch
    # read-only/texture cache per SM; 0: the unified L1, i.e. l1_plus_shared_per_sm minus the shared carve-out
    ro_cache_bytes: int = 0
    ro_cache_ways: int = 4
    # 2D texture layout: tiles of (bytes per row, rows); one tile fills one cache line, one row one sector
    texture_tile: tuple[int, int] = (32, 4)
    # unified (generic) address space: byte bases of the shared and local windows, and their size;
    # generic_window_bytes == 0: no unified address space (compute capability 1.x)
    generic_shared_base: int = 0xFF_0000_0000
    generic_local_base: int = 0xFE_0000_0000
    generic_window_bytes: int = 1 << 24
    # the largest `.local` frame of one thread (CUDA's per-thread local memory limit: 512 KiB from compute
    # capability 2.0 on, 16 KiB on 1.x)
    max_local_bytes_per_thread: int = 512 * 1024
    # the fewest registers per thread the driver gives a kernel (ncu's launch__registers_per_thread is
    # max(ptxas's count, this) for all 104 suite-corpus kernels measured on the H200; 1: no minimum known)
    min_registers_per_thread: int = 1
    # the special function unit's result tables (jaxsimt.units.mufu), a folder under jaxsimt/data/ measured on
    # this architecture's hardware; "": none measured, and the .approx functions are XLA's (within a few ulp)
    sfu_tables: str = ""

    @property
    def max_shared_carveout(self) -> int:
        return max(self.shared_carveouts_kb) * 1024

    def replace(self, **kw) -> "Arch":
        return dataclasses.replace(self, **kw)


G80 = Arch(
    name="g80",
    display_name="NVIDIA G80 (GeForce 8800 GTX)",
    compute_capability=(1, 0),
    warp_size=32,
    num_sms=16,
    warp_schedulers_per_sm=1,
    its_supported=False,
    max_threads_per_block=512,
    barriers_per_block=16,
    max_block_dim=(512, 512, 64),
    max_grid_dim=(65535, 65535, 1),
    max_threads_per_sm=768,
    max_warps_per_sm=24,
    max_blocks_per_sm=8,
    registers_per_sm=8192,
    max_registers_per_block=8192,
    max_registers_per_thread=124,
    register_alloc_unit=256,
    register_alloc_per="block",
    warp_alloc_granularity=2,
    shared_mem_per_sm=16384,
    shared_mem_per_block=16384,
    shared_mem_per_block_optin=16384,
    shared_mem_alloc_unit=512,
    reserved_shared_mem_per_block=0,
    shared_carveouts_kb=(16,),
    l1_plus_shared_per_sm=16384,
    shared_banks=16,
    bank_width=4,
    bank_group_threads=16,
    coalescing="g80_segments",
    sector_size=32,
    line_size=128,
    l2_size=0,
    alloc_alignment=256,
    register_banks=4,
    shared_group_lanes=((1, 16), (2, 16), (4, 16), (8, 16), (16, 16)),
    shared_pair_identical_groups=(),
    shared_multicast="one_broadcast_word",
    global_request_lanes=((1, 16), (2, 16), (4, 16), (8, 16), (16, 16)),
    ro_cache_bytes=8 * 1024,  # texture cache working set per SM (CUDA guide, compute capability 1.x)
    generic_window_bytes=0,  # generic addressing arrived with Fermi (PTX ISA 2.0)
    max_local_bytes_per_thread=16 * 1024,
    timing=Timing(
        clock_ghz=1.35,
        alu_latency=4 * 6.0,  # 8 SPs execute a warp in 4 cycles; ~24-cycle pipeline
        fma_latency=24.0,
        sfu_latency=32.0,
        tensor_latency=0.0,
        shared_latency=36.0,
        l1_latency=400.0,
        l2_latency=400.0,
        dram_latency=500.0,
        fp32_lanes_per_sm=8.0,
        sfu_lanes_per_sm=2.0,
        lsu_lanes_per_sm=8.0,
        tensor_flops_per_cycle_per_sm=0.0,
        shared_bytes_per_cycle_per_sm=16 * 4 / 2.0,
        l2_bytes_per_cycle=64.0,
        dram_gbytes_per_s=86.4,
        alu_issue=4.0,  # 8 SPs: a warp instruction takes 4 cycles
        fp32_issue=4.0,
        sfu_issue=16.0,
        lsu_issue=4.0,
    ),
)

FERMI = Arch(
    name="fermi",
    display_name="NVIDIA Fermi GF100 (GeForce GTX 480)",
    compute_capability=(2, 0),
    warp_size=32,
    num_sms=15,
    warp_schedulers_per_sm=2,
    its_supported=False,
    max_threads_per_block=1024,
    barriers_per_block=16,
    max_block_dim=(1024, 1024, 64),
    max_grid_dim=(65535, 65535, 65535),
    max_threads_per_sm=1536,
    max_warps_per_sm=48,
    max_blocks_per_sm=8,
    registers_per_sm=32768,
    max_registers_per_block=32768,
    max_registers_per_thread=63,
    register_alloc_unit=64,
    register_alloc_per="warp",
    warp_alloc_granularity=2,
    shared_mem_per_sm=49152,
    shared_mem_per_block=49152,
    shared_mem_per_block_optin=49152,
    shared_mem_alloc_unit=128,
    reserved_shared_mem_per_block=0,
    shared_carveouts_kb=(16, 48),
    l1_plus_shared_per_sm=65536,
    shared_banks=32,
    bank_width=4,
    bank_group_threads=32,
    coalescing="fermi_lines",
    sector_size=32,
    line_size=128,
    l2_size=768 * 1024,
    alloc_alignment=256,
    register_banks=4,
    global_request_lanes=((1, 32), (2, 32), (4, 32), (8, 16), (16, 8)),
    timing=Timing(
        clock_ghz=1.401,
        alu_latency=18.0,
        fma_latency=18.0,
        sfu_latency=36.0,
        tensor_latency=0.0,
        shared_latency=48.0,
        l1_latency=80.0,
        l2_latency=310.0,
        dram_latency=600.0,
        fp32_lanes_per_sm=32.0,
        sfu_lanes_per_sm=4.0,
        lsu_lanes_per_sm=16.0,
        tensor_flops_per_cycle_per_sm=0.0,
        shared_bytes_per_cycle_per_sm=32 * 4 / 2.0,
        l2_bytes_per_cycle=384.0,
        dram_gbytes_per_s=177.4,
        alu_issue=2.0,  # 16 lanes per scheduler
        fp32_issue=2.0,
        sfu_issue=8.0,
    ),
)

_HOPPER_COMMON = dict(
    sfu_tables="h200/mufu",  # measured on an H200; the H100 has the same SM
    warp_size=32,
    warp_schedulers_per_sm=4,
    its_supported=True,
    max_threads_per_block=1024,
    barriers_per_block=16,
    max_block_dim=(1024, 1024, 64),
    max_grid_dim=(2**31 - 1, 65535, 65535),
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    registers_per_sm=65536,
    max_registers_per_block=65536,
    max_registers_per_thread=255,
    register_alloc_unit=256,
    register_alloc_per="warp",
    warp_alloc_granularity=4,
    min_registers_per_thread=16,
    shared_mem_per_sm=233472,  # 228 KB carve-out maximum
    shared_mem_per_block=49152,
    shared_mem_per_block_optin=232448,  # 227 KB
    shared_mem_alloc_unit=128,
    reserved_shared_mem_per_block=1024,
    shared_carveouts_kb=(0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
    l1_plus_shared_per_sm=256 * 1024,
    shared_banks=32,
    bank_width=4,
    bank_group_threads=32,
    coalescing="sectors",
    sector_size=32,
    line_size=128,
    alloc_alignment=256,
    register_banks=2,
    # median over the 116 loops of the real-CUDA corpus's SASS (ptxas 13.0, sm_90; data/h200/suites/sass) of
    # the busiest bank's reads over half the loop's reads (docs/timing.md "Register-bank reads")
    register_bank_imbalance=1.10,
    # measured on the H200 (kernels/cuda/micro_issue.cu "icache", data/h200/issue_micro): a loop of 32 KiB + 48
    # bytes issues at one instruction a cycle and one of 48 KiB does not; 128 KiB + 48 bytes streams from the
    # second level and 192 KiB from L2: each capacity is the midpoint between the two
    icache_bytes=(40 * 1024, 160 * 1024),
    # medians over the loops of each band (48-128 KiB; 192-512 KiB), with 1, 2, 4, 8 warps per scheduler
    icache_miss_cpi=((2.43, 1.13, 1.51, 1.38), (5.85, 3.02, 1.52, 1.48)),
)

_HOPPER_TIMING = dict(
    alu_latency=4.0,
    fma_latency=4.0,
    sfu_latency=18.0,
    tensor_latency=32.0,
    shared_latency=30.0,
    l1_latency=38.0,
    l2_latency=260.0,
    dram_latency=520.0,
    fp32_lanes_per_sm=128.0,
    sfu_lanes_per_sm=16.0,
    lsu_lanes_per_sm=32.0,
    tensor_flops_per_cycle_per_sm=4096.0,  # dense f16/bf16 mma.sync-class rate (wgmma reaches ~2x)
    shared_bytes_per_cycle_per_sm=128.0,
    l2_bytes_per_cycle=5120.0,
    atomic_cycles_per_op=1.45,  # H200: atomicInc by every lane of 4,224 warps on one word (timing_micro/atomics)
)

H100 = Arch(
    name="h100",
    display_name="NVIDIA H100 SXM5 80GB",
    compute_capability=(9, 0),
    num_sms=132,
    l2_size=50 * 1024 * 1024,
    timing=Timing(clock_ghz=1.98, dram_gbytes_per_s=3350.0, **_HOPPER_TIMING),
    **_HOPPER_COMMON,
)

# tensor_clock_ghz: Nsight Compute's clock under kernels mixing mma.sync into FFMA loops, 4% to 100% of the tensor
# pipe busy (jaxsimt/data/h200/tensor_clock/): 1.79-1.80 GHz at all shares, 1.98 GHz without mma
_H200_TIMING = Timing(clock_ghz=1.98, dram_gbytes_per_s=4800.0, tensor_clock_ghz=1.797, **_HOPPER_TIMING)

# The H200's cycle-level parameters fitted by `jaxsimt.apps.calibrate.fit(..., from_measured=True)` on the training
# split (micro_shared, micro_divergence, the GEMM ladder at 256^3; ncu cycles), starting from the H200's
# micro-benchmark measurements (jaxsimt/data/h200/timing_micro) and kept within calibrate.MEASURED_FACTOR (1.5x) of
# each (printed in this form by `python benchmarks/bench_timing.py --calibrate --from-measured`); held-out accuracy
# and every value beside its measurement in docs/timing.md.
_H200_FITTED = dataclasses.replace(  # only what the fit moved; the rest stays at the starting values
    _H200_TIMING,
    alu_latency=3.08492,
    fma_latency=3.12647,
    sfu_latency=16.9995,
    tensor_latency=26.3181,
    shared_latency=15.4338,
    l1_latency=47.8557,
    l2_latency=412.599,
    dram_latency=979.917,
    l2_bytes_per_cycle=4463.93,
    dram_gbytes_per_s=3888.45,
    branch_latency=20.57,
    barrier_latency=15.355,
    alu_issue=1.4546,
    fp32_issue=0.992618,
    sfu_issue=8.41307,
    lsu_issue=5.51985,
    alu_dispatch_cycles=1.95812,
    shared_cycles_per_wavefront=1.0074,
    mio_queue_cycles=14.2902,
    block_launch_cycles=571.649,
    launch_overhead_us=1.43473,
    block_dispatch_cycles=143.02,  # held at its measurement (calibrate.HELD)
)

H200 = Arch(
    name="h200",
    display_name="NVIDIA H200 SXM 141GB",
    compute_capability=(9, 0),
    num_sms=132,
    l2_size=60 * 1024 * 1024,  # as the device reports it (cudaDeviceProp.l2CacheSize)
    timing=_H200_TIMING,
    timing_fitted=_H200_FITTED,
    **_HOPPER_COMMON,
)

ARCHS: dict[str, Arch] = {a.name: a for a in (G80, FERMI, H100, H200)}


def lanes_per_group(arch: Arch, table: tuple, size: int, what: str) -> int:
    """Lanes served together for a `size`-byte access, from one of the per-size tables of `arch`
    (`shared_group_lanes`, `global_request_lanes`); checks the size is listed and the group divides a warp."""
    lanes = dict(table).get(size)
    if lanes is None:
        raise ValueError(f"unsupported {what} access size {size}; expected one of {sorted(dict(table))}")
    if arch.warp_size % lanes:
        raise ValueError(f"{what} group of {lanes} lanes does not divide the warp of {arch.warp_size}")
    return lanes


def get_arch(arch: "str | Arch") -> Arch:
    """Look an architecture up by its lowercase name (or pass an `Arch` through)."""
    if isinstance(arch, Arch):
        return arch
    key = str(arch).lower()
    if key not in ARCHS:
        from jaxsimt.errors import LaunchConfigError  # a ValueError
        raise LaunchConfigError(f"unknown architecture {arch!r}; known: {', '.join(sorted(ARCHS))}")
    return ARCHS[key]
