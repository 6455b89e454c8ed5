"""`jaxsimt.launch`: run a kernel over a grid and report what the hardware would count.

Array arguments are copied into one flat global memory, laid out as a real allocator does (bases
aligned to `arch.alloc_alignment`), bounds checked per array; the grid runs in waves of blocks (blocks of
one launch may not depend on each other's order), each wave one compiled `Machine.run_wave` call.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt import errors
from jaxsimt.units import constcache, isa, mufu, regbanks, rocache, texture
from jaxsimt.machine import sanitizer
from jaxsimt.run import validate_args
from jaxsimt.timing import l1tags
from jaxsimt.timing.replay import REPLAYS
from jaxsimt.arch import Arch, get_arch
from jaxsimt.units.banks import METRIC_CONFLICTS, METRIC_WAVEFRONTS
from jaxsimt.units.coalescing import METRIC_REQUESTS, METRIC_SECTORS
from jaxsimt.machine.its import ItsMachine
from jaxsimt.machine.core import MEM_COLUMNS, Dyn, Fault, Geometry, Layout, Machine, Options, device_table
from jaxsimt.units.occupancy import occupancy, registers_limit
from jaxsimt.program import BRANCH, Program, estimate_registers
from jaxsimt.run.options import LaunchOptions
from jaxsimt.machine.stuck import deadlock_report, stuck_report

DEFAULT_THREADS_PER_WAVE = 1 << 19
# On a GPU a wave may take this share of the device's memory: a whole grid in one wave takes ~8x fewer
# steps than waves of 2^19 threads and ran 3.6x faster (naive GEMM at N=2048 on an H200), while on a CPU
# smaller waves were slower and larger ones bring nothing once the grid fits.
GPU_WAVE_MEMORY_FRACTION = 1 / 8
# Bytes per thread of a wave beyond its registers, local frame and share of shared memory: the step's
# temporaries ([W, L] addresses, masks, values of the widest branch), counted generously.
WAVE_SCRATCH_BYTES_PER_THREAD = 512
# The default step budget of a wave (`default_max_steps`): every instruction of the program may run as a
# step STEPS_PER_INSTRUCTION times in lockstep (a loop of that many trips, or longer loops in longer
# programs), plus once per warp of the wave, as warps at different pcs take separate steps, but at most once
# per instruction (warps stand at no more pcs than the program has, and a warp that waits longer than that
# runs next: `machine.pick_block`); at least MIN_STEPS. A runaway loop in a kernel of tens of instructions
# stops after ~100K steps whatever the launch's size (3 s for 256 threads, 29 s for 16,384 on 2 CPU cores).
STEPS_PER_INSTRUCTION = 4096
MIN_STEPS = 1 << 16
LOCAL_BYTES_PER_WAVE = 1 << 30  # the local memory of one wave's threads, by default (smaller waves beyond)


@dataclass
class LaunchResult:
    """What a launch returns: the final contents of every array argument and the counters.

    outputs: parameter name -> final array (numpy, the argument's shape and dtype); args: all arguments
    in order, arrays replaced by their final contents; stats: flat mapping of metric name -> number;
    per_instruction: one dict per static instruction (pc, block, op, source line, counts); trace: the
    step-by-step schedule when requested (block run, executed mask and stack depth per warp).
    """

    kernel: str
    arch: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    outputs: dict[str, np.ndarray]
    args: tuple
    stats: dict[str, Union[int, float]]
    per_instruction: list[dict] = field(repr=False, default_factory=list)
    trace: Optional[dict] = field(repr=False, default=None)
    program: Optional[Program] = field(repr=False, default=None)
    occupancy: dict = field(repr=False, default_factory=dict)
    timing: Optional[dict] = field(repr=False, default=None)  # the cycle-level replay (launch(timing=True))
    # what `launch` ran (kernel, args as given, options): the report replays one block for its memory view
    inputs: Optional[dict] = field(repr=False, default=None)
    # the sanitizer's findings (launch(check=..., collect=True)): sanitizer.Finding each
    findings: list = field(repr=False, default_factory=list)
    # compiled wave executables this launch had to build: 0 when it reused a machine compiled by an earlier
    # launch of the kernel (launches of one kernel share machines across grids and scalars in one size
    # class: docs/performance.md). An engine figure, not a counter: it is not in `stats`.
    compiles: int = 0

    def memory_table(self) -> str:
        """The per-instruction memory table (global requests/sectors, shared wavefronts/conflicts)."""
        from jaxsimt.run.report import memory_table
        return memory_table(self)

    def report(self, path: str, title: Optional[str] = None, source_dirs: Sequence[str] = ()) -> str:
        """Write the launch's HTML report (source, divergence, memory and occupancy views) to `path`, one
        self-contained file; returns `path`. `source_dirs`: folders besides the PTX file's own from which
        the CUDA sources its `.file` lines name may be read (`jaxsimt.ptx.sources`). See
        `jaxsimt.apps.html_report`."""
        from jaxsimt.apps.html_report import write_report
        return write_report(self, path, title=title, source_dirs=source_dirs)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]


def _dim3(x, what, kernel: Optional[str] = None) -> tuple[int, int, int]:
    return validate_args.dim3(x, what, kernel)


def _program_of(kernel) -> Program:
    if isinstance(kernel, Program):
        return kernel
    prog = getattr(kernel, "program", None)
    if isinstance(prog, Program):
        return prog
    raise TypeError(f"launch expects a @jaxsimt.kernel or a Program, got {type(kernel).__name__}")


def check_launch(prog: Program, arch: Arch, grid, block, regs: Optional[int] = None, local_bytes: int = 0) -> None:
    """Raise LaunchConfigError for a configuration the architecture forbids."""
    tpb = block[0] * block[1] * block[2]
    name = prog.name
    if isinstance(local_bytes, bool) or not isinstance(local_bytes, (int, np.integer)) or local_bytes < 0:
        raise errors.LaunchConfigError(f"kernel {name}: local_bytes must be a non-negative integer, got "
                                       f"{local_bytes!r}")
    if local_bytes > arch.max_local_bytes_per_thread:
        raise errors.LaunchConfigError(
            f"kernel {name}: a local memory frame of {int(local_bytes)} bytes per thread (local_bytes, or the "
            f"kernel's .local variables) exceeds the {arch.max_local_bytes_per_thread} bytes per thread that "
            f"{arch.name} allows")
    if tpb > arch.max_threads_per_block:
        raise errors.LaunchConfigError(
            f"kernel {name}: {tpb} threads per block exceed the {arch.name} limit of {arch.max_threads_per_block}")
    for d, (v, lim) in enumerate(zip(block, arch.max_block_dim)):
        if v > lim:
            raise errors.LaunchConfigError(f"kernel {name}: block dimension {'xyz'[d]}={v} exceeds {lim} on {arch.name}")
    for d, (v, lim) in enumerate(zip(grid, arch.max_grid_dim)):
        if v > lim:
            raise errors.LaunchConfigError(f"kernel {name}: grid dimension {'xyz'[d]}={v} exceeds {lim} on {arch.name}")
    if prog.shared_bytes > arch.shared_mem_per_block:
        raise errors.LaunchConfigError(
            f"kernel {name}: {prog.shared_bytes} bytes of static shared memory per block exceed the "
            f"{arch.name} limit of {arch.shared_mem_per_block}")
    if regs is not None:
        if isinstance(regs, bool) or not isinstance(regs, (int, np.integer)) or regs < 0:
            raise errors.LaunchConfigError(f"kernel {name}: regs must be a non-negative integer, got {regs!r}")
        regs = int(regs)
        if regs > arch.max_registers_per_thread:
            raise errors.LaunchConfigError(
                f"kernel {name}: {regs} registers per thread exceed {arch.max_registers_per_thread} on {arch.name}")
        # The hardware allocates registers per warp (or per block) in units, as the occupancy calculator
        # counts them: a block that fits no SM is refused at launch.
        blocks, per_block = registers_limit(arch, np.int64(tpb), np.int64(regs), np)
        if regs and int(blocks) == 0:
            need, how = int(per_block), ""
            if arch.register_alloc_per == "warp":
                gran, unit = arch.warp_alloc_granularity, arch.register_alloc_unit
                per_warp = -(-regs * arch.warp_size // unit) * unit
                warps = -(-(-(-tpb // arch.warp_size)) // gran) * gran
                need = per_warp * warps
                how = (f" ({warps} warps x {per_warp}: registers are allocated per warp in units of {unit}, "
                       f"warps in groups of {gran})")
            raise errors.LaunchConfigError(
                f"kernel {name}: {regs} registers per thread x {tpb} threads need {need} registers "
                f"per block{how}, more than the {min(arch.max_registers_per_block, arch.registers_per_sm)} "
                f"that {arch.name} allows; use fewer registers or threads per block")


def _layout(prog: Program, arrays: dict[int, np.ndarray], arch: Arch, start: Optional[int] = None):
    """Byte bases and sizes of the array arguments (bases aligned as cudaMalloc aligns them; address 0
    stays unmapped, like a null pointer) and the first free byte after them. `start`: where the first
    array may go (the items of a batch lie one after the other)."""
    align = arch.alloc_alignment
    addr = align if start is None else start
    bases, sizes = [], []
    for p in prog.params:
        if p.is_pointer:
            addr = -(-addr // align) * align
            bases.append(addr)
            sizes.append(arrays[p.index].nbytes)
            addr += max(arrays[p.index].nbytes, 1)
        else:
            bases.append(-1)
            sizes.append(0)
    return bases, sizes, addr


def _global_words(end: int) -> int:
    """Global memory words for arrays ending at byte `end`, rounded up to a power of two so that
    launches of similar sizes share one compiled machine."""
    return max(1024, 1 << int(np.ceil(np.log2(end / 4 + 4))))


def default_max_steps(prog: Program, warps_per_wave: int) -> int:
    """The step budget of a wave when the launch gives no `max_steps`:
    max(MIN_STEPS, instructions x (STEPS_PER_INSTRUCTION + min(warps per wave, instructions)))."""
    n = program_size(prog)
    return max(MIN_STEPS, n * (STEPS_PER_INSTRUCTION + min(int(warps_per_wave), n)))


def program_size(prog: Program) -> int:
    """Instructions of the program, each block's terminator counted (a block of none is a step too)."""
    return sum(len(b.instrs) + 1 for b in prog.blocks)


def default_threads_per_wave(prog: Program, local_bytes: int, threads_per_block: int) -> int:
    """Threads emulated at once when the launch does not say: DEFAULT_THREADS_PER_WAVE on a CPU; on a GPU as
    many as GPU_WAVE_MEMORY_FRACTION of its memory holds, at the registers (8 bytes each, an upper bound),
    local frame, shared memory and scratch each thread of a wave needs."""
    dev = jax.devices()[0]
    if dev.platform != "gpu":
        return DEFAULT_THREADS_PER_WAVE
    try:
        limit = int((dev.memory_stats() or {}).get("bytes_limit", 0))
    except Exception:  # backends without memory statistics
        limit = 0
    per_thread = (8 * len(prog.regs) + int(local_bytes) + prog.shared_bytes / max(threads_per_block, 1)
                  + WAVE_SCRATCH_BYTES_PER_THREAD)
    return max(DEFAULT_THREADS_PER_WAVE, int(limit * GPU_WAVE_MEMORY_FRACTION / per_thread))


def _pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


MODES = ("stack", "its")


def _machine(prog: Program, geo: Geometry, layout: Layout, options: Options, mode: str = "stack") -> Machine:
    cache = prog.__dict__.setdefault("_machines", {})
    key = (geo, layout, options, mode)
    if key not in cache:
        cache[key] = ItsMachine(prog, geo, layout, options) if mode == "its" else Machine(prog, geo, layout, options)
    return cache[key]


# A launch runs on an already compiled machine of its kernel whose wave holds up to this many times the blocks it
# asks for (or whose memory image is up to this many times larger): a driver whose grids shrink (LU, Gaussian
# elimination) then compiles once, while a wave far larger than the work would make every step cost more.
REUSE_FACTOR = 8
REUSE_THREADS = 16384  # ... or up to this many threads, where a step costs little whatever its warps
REUSE_WORDS = 1 << 20  # ... and a memory image up to this many words (4 MiB) however small the launch's: padding
# it costs a copy of a few MiB per launch, a new machine seconds of compilation (a reduction's second pass over
# its partial sums, after a first pass over the whole input)
# A launch whose grid outgrows every machine of its kernel so far gets one with this many times the blocks it
# asks for (up to REUSE_THREADS threads, within the device's wave size): a driver whose grids grow
# (Needleman-Wunsch's diagonals: 1, 2, 3, ... blocks) compiles twice instead of once per power of two. Only after
# growth is seen: padding every first launch made long single-block kernels (LU's diagonal) slower by more than
# a compile.
GROWTH_HEADROOM = 8


def _same_kind(g: Geometry, lay: Layout, md: str, geo: Geometry, layout: Layout, mode: str) -> bool:
    """Whether a built machine (g, lay, md) runs launches of `geo`/`layout`/`mode`'s kind: the same mode, block,
    warp size, stack, batch items and shared and local frames (its wave and global memory may differ)."""
    return (md == mode and g.block == geo.block and g.warp_size == geo.warp_size and g.depth == geo.depth
            and g.items == geo.items and lay.shared_words == layout.shared_words
            and lay.local_words == layout.local_words)


def reusable_shape(prog: Program, mode: str, geo: Geometry, layout: Layout, options: Options,
                   auto_optimize: bool, most_blocks: Optional[int] = None) -> tuple:
    """(geometry, layout, options) of the launch: those of the smallest machine of `prog` already built whose
    wave holds `geo`'s blocks (within REUSE_FACTOR, or REUSE_THREADS threads, and at most `most_blocks`: what
    the local frames allow) and whose memory holds `layout`'s (within REUSE_FACTOR, or REUSE_WORDS words), with
    the same block, stack, frames and options (the optimisation level too unless it was left to the launch);
    else the ones asked (the same objects)."""
    best = None
    most = max(REUSE_FACTOR * geo.ctas_per_wave, REUSE_THREADS // max(geo.threads_per_block * geo.items, 1))
    if most_blocks is not None:
        most = min(most, max(geo.ctas_per_wave, most_blocks))
    for (g, lay, o, md) in prog.__dict__.get("_machines", {}):
        if (not _same_kind(g, lay, md, geo, layout, mode) or not geo.ctas_per_wave <= g.ctas_per_wave <= most
                or not layout.global_words <= lay.global_words <= max(REUSE_FACTOR * layout.global_words,
                                                                      REUSE_WORDS)
                or o != (options._replace(optimize=o.optimize) if auto_optimize else options)):
            continue
        cost = (g.ctas_per_wave, lay.global_words)
        if best is None or cost < best[0]:
            best = (cost, (g, lay, o))
    return (geo, layout, options) if best is None else best[1]


def outgrown(prog: Program, mode: str, geo: Geometry, layout: Layout) -> bool:
    """Whether `prog` already has a machine like `geo`'s (mode, block, stack, items, shared and local memory) but
    with a smaller wave: the launch's grid has grown past it."""
    return any(_same_kind(g, lay, md, geo, layout, mode) and g.ctas_per_wave < geo.ctas_per_wave
               for (g, lay, _, md) in prog.__dict__.get("_machines", {}))


def check_mode(prog: Program, arch: Arch, mode: str) -> None:
    """Raise LaunchConfigError for an unknown execution mode or ITS on an architecture without it."""
    if mode not in MODES:
        raise errors.LaunchConfigError(f"kernel {prog.name}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "its" and not arch.its_supported:
        raise errors.LaunchConfigError(
            f"kernel {prog.name}: {arch.name} has no Independent Thread Scheduling (Volta and later only); "
            f"use mode='stack' (the reconvergence stack) on this architecture")


def _split_args(prog: Program, args: Sequence[Any]):
    """Check one item's arguments: ({param index: contiguous array}, [scalar values in param order])
    (`jaxsimt.run.validate_args.split_args`)."""
    return validate_args.split_args(prog, args)


def launch(kernel, grid, block, args: Sequence[Any] = (), arch: Union[str, Arch] = "h200", *,
           options: Optional[LaunchOptions] = None, **kw) -> LaunchResult:
    """Run `kernel` on a grid of `grid` blocks of `block` threads with `args` (arrays for pointer
    parameters, Python/numpy scalars for the others; in parameter order or a dict by parameter name) on
    architecture `arch`. Arguments and options are checked before anything is allocated
    (`jaxsimt.run.validate_args`: ArgumentError / LaunchConfigError naming the parameter); a failure of XLA
    while the launch runs (out of memory) is a LaunchResourceError saying what the launch asked for.

    The options (`jaxsimt.LaunchOptions`, which says what each does) come as `options=`, as keywords
    (`launch(k, grid, block, args, check="all", collect=True)`), or both (keywords replace fields of
    `options`): max_steps, stack_depth, blocks_per_wave, trace, jit, counters, optimize, ctas, data,
    local_bytes, devices, timing, l1, replay, mode, carveout, compile_budget, progress, check, collect, regs.
    """
    opts = LaunchOptions.of(options, **kw)
    prog = _program_of(kernel)
    args = validate_args.bind(prog.name, [p.name for p in prog.params], args)
    if opts.timing and opts.l1 not in l1tags.MODELS:
        raise errors.ArgumentError(f"kernel {prog.name}: l1={opts.l1!r} is not an L1 model; the models are "
                                   f"{', '.join(l1tags.MODELS)}")
    if opts.timing and opts.replay not in REPLAYS:
        raise errors.ArgumentError(f"kernel {prog.name}: replay={opts.replay!r} is not a replay of the timing model; "
                                   f"the replays are {', '.join(REPLAYS)}")
    res = run_items(prog, grid, block, [_split_args(prog, args)], [args], arch, opts.replace(timing=False))[0]
    res.inputs = {"kernel": kernel, "args": args, "regs": opts.regs, "local_bytes": opts.local_bytes,
                  "mode": opts.mode, "carveout": opts.carveout, "stack_depth": opts.stack_depth}
    if opts.timing:
        from jaxsimt.run import launch_timing
        res.timing = launch_timing.attach(res, kernel, args, regs=opts.regs, local_bytes=opts.local_bytes,
                                         mode=opts.mode, l1=opts.l1, replay=opts.replay)
    return res


# A stack machine starts with stacks of at most this many entries per warp and grows them, by STACK_GROWTH at a
# time up to the launch's `stack_depth`, where a kernel overflows them (the launch runs again on the deeper
# machine, which the kernel then keeps). Every step updates each warp's whole stack, so a shallower one is
# cheaper (naive GEMM on two cores: ~4% at N=256, ~10% at N=512, 16 -> 4 entries), and few kernels nest deeper
# than a handful of divergent branches (docs/performance.md).
STACK_START = 4
STACK_GROWTH = 4


class _StackTooShallow(Exception):
    """A stack machine's wave overflowed stacks shallower than the launch allows (`STACK_START`)."""


def stack_depth_for(prog: Program, most: int, mode: str) -> int:
    """The stack entries per warp a launch of `prog` starts with: the kernel's grown depth (`STACK_START` until a
    launch overflows it), at most `most` (the launch's `stack_depth`); ITS machines keep no stack."""
    if mode == "its":
        return most
    return min(most, prog.__dict__.get("_stack_depth", STACK_START))


def run_items(prog: Program, grid, block, items: Sequence[tuple], item_args: Sequence[Sequence[Any]],
              arch: Union[str, Arch] = "h200", options: Optional[LaunchOptions] = None, *,
              item_ctas: Optional[Sequence[Sequence[int]]] = None, stacked: Optional[dict] = None,
              machine: Optional[Callable] = None, **kw) -> list[LaunchResult]:
    """Run one launch per item (`items`: `_split_args` of each item's arguments, `item_args` the
    arguments as given) as ONE run of the machine: the items' blocks side by side on the block axis,
    their arrays side by side in global memory. Returns one LaunchResult per item, as `launch` would.
    `item_ctas`: the blocks to run, per item (instead of `ctas`, the same for every item). `stacked`: a
    dict to receive, where every item's array of a parameter has one shape, the final arrays stacked
    [items, ...] (the items' outputs are then views into them). `machine`: (prog, geometry, layout,
    options) -> Machine to run instead of the shared one (an instrumented machine). `progress`:
    called as progress(waves done, waves, blocks done, blocks) after each wave. `options` and the keywords
    `kw`: `LaunchOptions` (timing excepted: it predicts one launch, `launch(timing=True)`)."""
    opts = LaunchOptions.of(options, **kw)
    while True:
        try:
            return _run_items(prog, grid, block, items, item_args, arch, opts, item_ctas, stacked, machine)
        except _StackTooShallow as e:
            prog.__dict__["_stack_depth"] = min(opts.stack_depth, e.args[0] * STACK_GROWTH)


def _run_items(prog: Program, grid, block, items, item_args, arch, opts: LaunchOptions, item_ctas, stacked,
               machine) -> list[LaunchResult]:
    """`run_items` on stacks of `stack_depth_for` entries: raises _StackTooShallow(depth) where they overflow
    short of the launch's `stack_depth`."""
    if opts.timing:
        raise errors.LaunchConfigError(f"kernel {prog.name}: timing=True predicts one launch (jaxsimt.launch), "
                                       f"not a batch")
    (regs, max_steps, stack_depth, blocks_per_wave, trace, jit, counters, optimize, ctas, data, local_bytes, devices,
     mode, carveout, compile_budget, progress, check, collect) = (
        opts.regs, opts.max_steps, opts.stack_depth, opts.blocks_per_wave, opts.trace, opts.jit, opts.counters,
        opts.optimize, opts.ctas, opts.data, opts.local_bytes, opts.devices, opts.mode, opts.carveout,
        opts.compile_budget, opts.progress, opts.check, opts.collect)
    arch = get_arch(arch)
    grid, block = _dim3(grid, "grid", prog.name), _dim3(block, "block", prog.name)
    check_launch(prog, arch, grid, block, regs, local_bytes)
    validate_args.check_options(prog, stack_depth, blocks_per_wave)
    check_mode(prog, arch, mode)
    checks = sanitizer.parse(check, prog.name)
    if checks and (devices is not None or not data):
        raise errors.LaunchConfigError(f"kernel {prog.name}: checks run on one device with data (devices=None, "
                                       f"data=True)")
    uninit = [[p.index for p, a in zip(prog.params, args) if sanitizer.is_uninit(a)] for args in item_args]
    items, tex_dims = _memory_images(prog, arch, items, item_args)
    n_items = len(items)
    if trace and n_items > 1:
        raise errors.LaunchConfigError(f"kernel {prog.name}: trace=True records one launch, not a batch")

    tpb = block[0] * block[1] * block[2]
    n_ctas = grid[0] * grid[1] * grid[2]
    if item_ctas is None:
        item_ctas = [ctas] * n_items
    elif ctas is not None or len(item_ctas) != n_items:
        raise errors.LaunchConfigError(f"kernel {prog.name}: give ctas or one item_ctas per item")
    fused = []
    for i, c in enumerate(item_ctas):
        run_ctas = np.arange(n_ctas, dtype=np.int64) if c is None else np.asarray(c, np.int64).reshape(-1)
        if run_ctas.size == 0 or run_ctas.min() < 0 or run_ctas.max() >= n_ctas:
            raise errors.LaunchConfigError(f"kernel {prog.name}: ctas must be block ids in [0, {n_ctas})")
        fused.append(i * n_ctas + run_ctas)  # the batch's blocks: item i's block c has the id i * n_ctas + c
    fused = np.concatenate(fused)
    wpb = -(-tpb // arch.warp_size)
    # Blocks per wave: a power of two (padding blocks start finished), so grids of similar sizes share
    # one compiled machine.
    per_wave = (default_threads_per_wave(prog, local_bytes, tpb) if devices is None and not trace
                else DEFAULT_THREADS_PER_WAVE)
    cpw = blocks_per_wave or max(1, per_wave // (wpb * arch.warp_size))
    most_cpw = _pow2(cpw)  # what the device's wave size allows
    cpw = min(most_cpw, _pow2(fused.size)) if blocks_per_wave is None else min(cpw, fused.size)
    # every thread of a wave holds its local frame: fewer blocks per wave for large frames
    local_most = LOCAL_BYTES_PER_WAVE // (wpb * arch.warp_size * local_bytes) if local_bytes else None
    while blocks_per_wave is None and cpw > 1 and local_most is not None and cpw > local_most:
        cpw //= 2
    bases, sizes, end = [], [], None
    for arrays, _ in items:
        b, sz, end = _layout(prog, arrays, arch, end)
        bases.append(b)
        sizes.append(sz)
    words = _global_words(end)
    if data:  # before the image is allocated (and copied to the device)
        validate_args.check_memory(prog, words * 4, f"the {n_items} item(s)' arrays, as one memory image,"
                                   if n_items > 1 else "the array arguments, as one memory image,")
    if not data:
        words = 1024  # counters only: the layout's addresses are real, the memory is not there
    layout = Layout(words, -(-prog.shared_bytes // 4), -(-int(local_bytes) // 4))
    auto_optimize = optimize is None
    if auto_optimize:  # full optimisation where run time dominates: big waves, and batches (~2x faster)
        optimize = cpw * wpb * arch.warp_size > 32768 or n_items >= 16
    regs_used = regs if regs is not None else (getattr(prog, "ptx_register_estimate", None)
                                               or estimate_registers(prog))
    occ = occupancy(arch, tpb, regs_used, prog.shared_bytes, _carveout(prog, arch, carveout))
    default_budget = max_steps is None
    if not default_budget and (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                               or max_steps < 1):
        raise errors.LaunchConfigError(f"kernel {prog.name}: max_steps must be a positive integer, got {max_steps!r}")
    options = Options(trace_steps=0,
                      arch=arch if counters else None, optimize=bool(optimize), data=bool(data), target=arch,
                      ro_cache=rocache.shape(arch, rocache.cache_bytes(arch, occ["shared_mem_per_sm"]))
                      if rocache.used_by(prog) else None, compile_budget=compile_budget, check=checks,
                      collect=bool(collect))
    geo = Geometry(block, arch.warp_size, cpw, stack_depth_for(prog, stack_depth, mode), n_items)
    if blocks_per_wave is None and machine is None and devices is None and not trace:
        asked = geo
        geo, layout, options = reusable_shape(prog, mode, geo, layout, options, auto_optimize, local_most)
        if geo is asked and outgrown(prog, mode, geo, layout):
            # headroom while a wave stays cheap to step (REUSE_THREADS), never past what the device allows
            room = _pow2(max(1, REUSE_THREADS // (wpb * arch.warp_size)))
            grown = min(most_cpw, cpw * GROWTH_HEADROOM, room, most_cpw if local_most is None else local_most)
            geo = dataclasses.replace(geo, ctas_per_wave=max(cpw, grown))
        cpw, words = geo.ctas_per_wave, layout.global_words
    n_waves = -(-fused.size // cpw)
    max_steps = int(default_max_steps(prog, cpw * wpb) if default_budget else max_steps)
    if trace:
        options = options._replace(trace_steps=max_steps)

    gmem = np.zeros(words * 4, np.uint8)
    periodic = _periodic(prog, items, bases) if data else {}
    if data:
        for p in prog.params:
            if p.index in periodic:  # one strided copy for all items
                periodic[p.index](gmem)[...] = np.stack([a[p.index] for a, _ in items]).view(np.uint8).reshape(
                    n_items, -1)
            elif p.is_pointer:
                for (arrays, _), b_item in zip(items, bases):
                    b = b_item[p.index]
                    gmem[b:b + arrays[p.index].nbytes] = arrays[p.index].view(np.uint8).reshape(-1)
    scalars = [np.stack([sc[k] for _, sc in items]) for k in range(len(items[0][1]))]
    try:
        with jax.enable_x64(True):
            m = machine(prog, geo, layout, options) if machine is not None else _machine(prog, geo, layout, options, mode)
            compiles_before = m.compiles
            dyn = Dyn(device_table(grid, np.int32), jnp.int32(n_ctas), device_table(bases, np.int64),
                      device_table(sizes, np.int64), tuple(device_table(s) for s in scalars), None,
                      device_table(tex_dims), jnp.int32(min(max_steps, np.iinfo(np.int32).max)),
                      mufu.for_arch(arch, isa.unit_tables(ins for _, ins in prog.instructions())))
            # one device: the table padded to a power of two of waves (padding blocks start finished and are never
            # run), so that launches of one machine with similar numbers of waves share one compiled wave
            cta_table = np.full((n_waves if devices is not None else _pow2(n_waves)) * cpw, n_items * n_ctas, np.int32)
            cta_table[:fused.size] = fused
            gm = device_table(gmem.view(np.uint32))
            shadowed = bool(checks & {"racecheck", "initcheck"})  # the machine keeps shadow memory
            if shadowed:
                atomics = any(isa.memory(ins) == "atomic" for _, ins in prog.instructions())
                gm = (gm, (sanitizer.global_race_shadow(words, n_items * n_ctas * tpb if atomics else 0)
                           if "racecheck" in checks else (),
                           jnp.asarray(_given_bytes(prog, items, bases, uninit, words)) if "initcheck" in checks else ()))
            found = []
            if devices is not None:
                from jaxsimt.run.shard import run_sharded
                gm, cnt, fault, total_steps = run_sharded(m, gm, dyn, cta_table, devices)
                if fault.code != errors.NONE:
                    _check_depth(geo, stack_depth, int(fault.code))
                    raise _fault_error(prog, m, geo, grid, sizes, fault, max_steps, cta_table, default_budget=default_budget)
                traces = []
            else:
                dyn = dyn._replace(ctas=device_table(cta_table))
                cnt = m.zero_counters()
                traces, total_steps = [], 0
                ctx = jax.disable_jit() if not jit else _nullcontext()
                with ctx:
                    for wave in range(n_waves):
                        gm, cnt, fault, steps, tr, stuck, fnd = m.run_wave(gm, cnt, jnp.int32(wave), dyn,
                                                                           jnp.uint32(0))
                        total_steps += int(steps)
                        f = fault.host()
                        new = []
                        if fnd:
                            describe = lambda fl: str(_fault_error(prog, m, geo, grid, sizes, fl, max_steps,  # noqa: E731
                                                                   cta_table))
                            new = sanitizer.describe(prog, geo, grid, cta_table, bases, sizes, fnd, describe)
                            found = sanitizer.merge(found, new)
                        hang = sanitizer.KIND[errors.FaultCode.BARRIER_HANG]
                        if f.code == errors.DEADLOCK and any(x.kind == hang for x in new):
                            f = Fault.of_ints(errors.NONE, 0, 0, 0, 0, 0)  # synccheck explains the deadlock: a finding
                        if f.code != errors.NONE:
                            _check_depth(geo, stack_depth, int(f.code))
                            err = _fault_error(prog, m, geo, grid, sizes, f, max_steps, cta_table, stuck,
                                               default_budget=default_budget)
                            err.findings = found
                            raise err
                        if new and not collect:
                            raise sanitizer.error(found[0], found)
                        if trace:
                            traces.append(tuple(np.asarray(t)[: int(steps)] for t in tr))
                        if progress is not None:
                            progress(wave + 1, n_waves, min((wave + 1) * cpw, int(fused.size)), int(fused.size))
            gm_np = np.asarray(gm[0] if shadowed else gm).view(np.uint8)
            cnt = tuple(np.asarray(c) for c in cnt)
    except jax.errors.JaxRuntimeError as e:
        raise _runtime_error(prog, e, n_waves=n_waves, per_wave=cpw, n_blocks=int(fused.size), tpb=tpb,
                             words=words, layout=layout, n_items=n_items) from e

    tr = None
    if trace:
        tr = {"block": np.concatenate([t[0] for t in traces]), "mask": np.concatenate([t[1] for t in traces]),
              "sp": np.concatenate([t[2] for t in traces])}
    whole = {}
    for p in prog.params:
        if p.index in periodic and p.space != "texture":
            src = items[0][0][p.index]
            whole[p.index] = periodic[p.index](gm_np).copy().view(src.dtype).reshape((n_items,) + src.shape)
            if stacked is not None:
                stacked[p.name] = whole[p.index]
    results, stats_of = [], {}
    for i, ((arrays, _), args) in enumerate(zip(items, item_args)):
        outputs, final_args = {}, []
        for p, a in zip(prog.params, args):
            if p.is_pointer and not data:
                outputs[p.name] = None
                final_args.append(None)
            elif p.space == "texture":  # read-only: its contents are the argument's
                outputs[p.name] = np.asarray(a)
                final_args.append(outputs[p.name])
            elif p.index in whole:
                outputs[p.name] = whole[p.index][i]
                final_args.append(outputs[p.name])
            elif p.is_pointer:
                src = arrays[p.index]
                b = bases[i][p.index]
                out = gm_np[b:b + src.nbytes].copy().view(src.dtype).reshape(src.shape)
                outputs[p.name] = out
                final_args.append(out)
            else:
                final_args.append(a)
        # Stats are a function of the item's counters: items with equal counters share one computation.
        c_i = tuple(c[i] for c in cnt)
        key = b"".join(c.tobytes() for c in c_i)
        if key not in stats_of:
            stats_of[key] = _stats(m.program, m, c_i, arch, grid, block, total_steps, occ, regs_used)
        stats, per_instr = stats_of[key]
        results.append(LaunchResult(prog.name, arch.name, grid, block, outputs, tuple(final_args), dict(stats),
                                    [dict(r) for r in per_instr], tr, m.program, occ,
                                    findings=[x for x in found if x.item == i], compiles=m.compiles - compiles_before))
    return results


def _check_depth(geo: Geometry, most: int, code: int) -> None:
    """Raise _StackTooShallow where a wave's fault `code` is a stack overflow on stacks shallower than `most`."""
    if code == errors.STACK_OVERFLOW and geo.depth < most:
        raise _StackTooShallow(geo.depth)


def _given_bytes(prog: Program, items, bases, uninit, words: int) -> np.ndarray:
    """[4 x words] bool: the bytes of global memory the host gave (every byte of every array argument but
    those passed as `sanitizer.uninit`), for initcheck."""
    given = np.zeros(words * 4, bool)
    for (arrays, _), b_item, skip in zip(items, bases, uninit):
        for p in prog.params:
            if p.is_pointer and p.index not in skip:
                b = b_item[p.index]
                given[b:b + arrays[p.index].nbytes] = True
    return given


def _runtime_error(prog: Program, e: Exception, *, n_waves: int, per_wave: int, n_blocks: int, tpb: int,
                   words: int, layout: Layout, n_items: int) -> errors.LaunchResourceError:
    """A failure of XLA while the launch ran, as a LaunchResourceError that says what the launch asked for
    and what to change."""
    msg = str(e)
    oom = "RESOURCE_EXHAUSTED" in msg or "out of memory" in msg.lower()
    first = msg.strip().splitlines()[0] if msg.strip() else type(e).__name__
    threads = per_wave * tpb
    asked = (f"{n_blocks} blocks{f' ({n_items} items)' if n_items > 1 else ''} in {n_waves} wave(s) of "
             f"{per_wave} blocks x {tpb} threads ({threads} threads at once), {words} words "
             f"({words * 4} bytes) of global memory, {layout.shared_words} words of shared memory per block, "
             f"{layout.local_words} words of local memory per thread")
    if oom:
        return errors.LaunchResourceError(
            f"kernel {prog.name}: the device ran out of memory running the launch ({asked}); pass a smaller "
            f"blocks_per_wave= (fewer threads at once), smaller arrays or fewer batch items, or a smaller "
            f"local_bytes=. XLA said: {first}")
    return errors.LaunchResourceError(
        f"kernel {prog.name}: XLA failed running the launch ({asked}); a smaller blocks_per_wave= or smaller "
        f"arrays may avoid it. XLA said: {first}")


def _periodic(prog: Program, items, bases) -> dict:
    """{param index: fn(memory bytes) -> [items, nbytes] strided view} for the array parameters whose
    items all have one shape and dtype at equally spaced bases (a batch's usual layout), so that
    copying them in and out is one operation for all items instead of one per item."""
    out = {}
    if len(items) < 2:
        return out
    b = np.asarray(bases, np.int64)
    for p in prog.params:
        if not p.is_pointer:
            continue
        first = items[0][0][p.index]
        if any(a[p.index].shape != first.shape or a[p.index].dtype != first.dtype for a, _ in items):
            continue
        step = np.diff(b[:, p.index])
        if first.nbytes == 0 or not np.all(step == step[0]):
            continue
        b0, stride, nb = int(b[0, p.index]), int(step[0]), first.nbytes
        out[p.index] = (lambda mem, b0=b0, stride=stride, nb=nb:
                        np.lib.stride_tricks.as_strided(mem[b0:], (len(items), nb), (stride, 1)))
    return out


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


METRIC_LINES = "emulator__global_lines_op_{op}.sum"
_METRIC_OP = {"read": "ld", "write": "st", "atomic": "atom"}  # the {op} of the memory metrics


def _stats(prog: Program, m: Machine, counters, arch: Arch, grid, block, steps, occ: dict, regs: int):
    warp_exec, thread_exec, divergent, max_depth, mem = counters
    per_instr = []
    warp_total = thread_total = 0
    mem_stats: dict[str, int] = {}
    # an instruction executes with every block that holds it (a copy too: `program.thread_jumps`)
    home, execs, branch_divergent = {}, {}, {}
    for blk, pcs in zip(prog.blocks, m.pcs):
        for j, (pc, outer) in enumerate(zip(pcs, blk.all_instrs())):
            home.setdefault(pc, (blk, j))
            w, t = execs.get(pc, (0, 0))
            execs[pc] = (w + int(warp_exec[blk.index]), t + int(thread_exec[blk.index]))
            if outer is blk.term.instr and blk.term.kind == BRANCH:  # the block's branch: its divergent executions
                branch_divergent[pc] = branch_divergent.get(pc, 0) + int(divergent[blk.index])
    for pc in range(len(home)):
        blk, j = home[pc]
        outer = blk.all_instrs()[j]
        ins = outer.operation  # a predicated (guarded) instruction counts as its inner op
        row = {"pc": pc, "block": blk.origin_of(j), "op": ins.op, "line": ins.loc.line if ins.loc else 0,
               "source": ins.loc.text.strip() if ins.loc else "",
               "warp_exec": execs[pc][0], "thread_exec": execs[pc][1]}
        if pc in branch_divergent:
            row["divergent"] = branch_divergent[pc]
        if isa.feeds(ins, "memory"):
            space = ins.attr("space", "shared")
            row["space"] = space
            row.update({k: int(v) for k, v in zip(MEM_COLUMNS, mem[pc])})
            op = _METRIC_OP[isa.memory(ins)]
            if space in ("global", "generic"):
                for col, metric in (("requests", METRIC_REQUESTS), ("sectors", METRIC_SECTORS),
                                    ("lines", METRIC_LINES)):
                    key = metric.format(op=op)
                    mem_stats[key] = mem_stats.get(key, 0) + row[col]
            if space in ("shared", "generic"):  # a generic access's shared lanes cost wavefronts
                for col, metric in (("wavefronts", METRIC_WAVEFRONTS), ("bank_conflicts", METRIC_CONFLICTS)):
                    key = metric.format(op=op)
                    mem_stats[key] = mem_stats.get(key, 0) + row[col]
        if ins.attr("pipe") == "tensor":
            k = "smsp__inst_executed_pipe_tensor.sum"
            mem_stats[k] = mem_stats.get(k, 0) + row["warp_exec"]
            k = "emulator__tensor_flops"
            mem_stats[k] = mem_stats.get(k, 0) + row["warp_exec"] * int(ins.attr("flops", 0))
        per_instr.append(row)
        warp_total += row["warp_exec"]
        thread_total += row["thread_exec"]
    mem_stats.update(_machine_feature_stats(prog, arch, per_instr, mem))
    bank_cycles = mem_stats.pop(regbanks.METRIC)
    stats = {
        "smsp__inst_executed.sum": warp_total,
        "smsp__thread_inst_executed.sum": thread_total,
        "smsp__sass_branch_targets_threads_divergent.sum": int(divergent.sum()),
        "simd_efficiency": float(thread_total / (warp_total * arch.warp_size)) if warp_total else 0.0,
        "max_stack_depth": 0 if isinstance(m, ItsMachine) else int(max_depth),
        regbanks.METRIC: bank_cycles,
    }
    if isinstance(m, ItsMachine):
        stats["emulator__max_pc_groups"] = int(max_depth)
    if m.options.arch is not None:
        for op in ("ld", "st"):
            for metric in (METRIC_REQUESTS, METRIC_SECTORS, METRIC_WAVEFRONTS, METRIC_CONFLICTS):
                mem_stats.setdefault(metric.format(op=op), 0)
        stats.update(sorted(mem_stats.items()))
    stats.update({
        "launch__grid_size": int(grid[0] * grid[1] * grid[2]),
        "launch__block_size": int(block[0] * block[1] * block[2]),
        "launch__registers_per_thread": int(regs),
        "launch__shared_mem_per_block_static": int(prog.shared_bytes),
        "launch__occupancy_limit_blocks": int(occ["blocks_limit_blocks"]),
        "launch__occupancy_limit_registers": int(occ["blocks_limit_registers"]),
        "launch__occupancy_limit_shared_mem": int(occ["blocks_limit_shared_memory"]),
        "launch__occupancy_limit_warps": int(occ["blocks_limit_warps"]),
        "launch__shared_mem_config_size": int(occ["shared_mem_per_sm"]),
        "active_blocks_per_sm": int(occ["active_blocks_per_sm"]),
        "active_warps_per_sm": int(occ["active_warps_per_sm"]),
        "sm__maximum_warps_per_active_cycle_pct": float(100.0 * occ["occupancy"]),
        "occupancy": float(occ["occupancy"]),
        "emulator__steps": int(steps),
    })
    return stats, per_instr


def _memory_images(prog: Program, arch: Arch, items, item_args):
    """Constant and texture arguments as they lie in memory: constant arrays checked against the
    architecture's constant memory, 2D textures stored tiled (`jaxsimt.units.texture`). Returns (items,
    [I, n_params, 2] int32 texture (width, height) per item)."""
    tex_dims = np.zeros((len(items), len(prog.params), 2), np.int32)
    out = []
    for i, ((arrays, scalars), args) in enumerate(zip(items, item_args)):
        arrays = dict(arrays)
        const = sum(arrays[p.index].nbytes for p in prog.params if p.space == "const")
        if const > arch.const_mem_size:
            raise errors.LaunchConfigError(f"kernel {prog.name}: {const} bytes of constant memory exceed the "
                                           f"{arch.const_mem_size} of {arch.name}")
        for p in prog.params:
            if p.space == "texture":
                img = np.asarray(args[p.index])
                if img.ndim != 2:
                    raise errors.LaunchConfigError(f"kernel {prog.name}: texture {p.name!r} needs a 2D array "
                                                   f"[height, width], got shape {img.shape}")
                tex_dims[i, p.index] = (img.shape[1], img.shape[0])
                arrays[p.index] = texture.to_tiled(arch, img)
        out.append((arrays, scalars))
    return out, tex_dims


def _carveout(prog: Program, arch: Arch, carveout: Optional[int]) -> Optional[int]:
    """Check a carve-out preference (bytes) against what the architecture allows."""
    if carveout is None:
        return None
    if not 0 <= int(carveout) <= arch.max_shared_carveout:
        raise errors.LaunchConfigError(
            f"kernel {prog.name}: carveout {carveout} bytes is outside 0..{arch.max_shared_carveout} on {arch.name} "
            f"(allowed shared-memory sizes: {', '.join(f'{k} KB' for k in arch.shared_carveouts_kb)})")
    return int(carveout)


def _machine_feature_stats(prog: Program, arch: Arch, per_instr: list, mem) -> dict:
    """Register-bank conflicts (every instruction), constant-cache and read-only/texture-cache counts."""
    extra = regbanks.extra_cycles(prog, arch)
    out = {regbanks.METRIC: 0}
    for (_, outer), row in zip(prog.instructions(), per_instr):
        ins = outer.operation
        path = ins.attr("cache")
        if path in ("ro", "tex"):
            row.setdefault("space", "texture" if path == "tex" else ins.attr("space"))
            row.update({k: int(v) for k, v in zip(MEM_COLUMNS, mem[row["pc"]]) if k not in row})
            hits, misses = ((rocache.METRIC_TEX_HITS, rocache.METRIC_TEX_MISSES) if path == "tex"
                            else (rocache.METRIC_LDG_HITS, rocache.METRIC_LDG_MISSES))
            out[hits] = out.get(hits, 0) + row["cache_hits"]
            out[misses] = out.get(misses, 0) + row["cache_misses"]
        row["register_bank_conflicts"] = int(extra[row["pc"]])
        out[regbanks.METRIC] += row["register_bank_conflicts"] * row["warp_exec"]
        if row.get("space") == "const":
            for col, metric in (("const_requests", constcache.METRIC_REQUESTS),
                                ("const_accesses", constcache.METRIC_ACCESSES)):
                out[metric] = out.get(metric, 0) + row[col]
    return out


def _fault_error(prog: Program, m: Machine, geo: Geometry, grid, sizes, f, max_steps: int,
                 cta_table, stuck=None, default_budget: bool = False) -> errors.SimtError:
    code, pc, warp, lane, addr, wave = f.fields()
    n_ctas = grid[0] * grid[1] * grid[2]
    fused = int(cta_table[min(wave * geo.ctas_per_wave + warp // geo.warps_per_block, len(cta_table) - 1)])
    item, cta = divmod(fused, n_ctas)
    sizes = sizes[min(item, len(sizes) - 1)]
    cls = errors.FAULT_CLASS[code]
    instrs = prog.instructions()
    where = ""
    if 0 <= pc < len(instrs):
        ins = instrs[pc][1]
        where = f" at {ins.loc}" if ins.loc else ""
    t = (warp % geo.warps_per_block) * geo.warp_size + lane
    bx, by, _ = geo.block
    gx, gy, _ = grid
    blk = (cta % gx, (cta // gx) % gy, cta // (gx * gy))
    thr = (t % bx, (t // bx) % by, t // (bx * by))
    who = f"block {blk}, thread {thr} (warp {warp % geo.warps_per_block}, lane {lane})"
    if geo.items > 1:
        who += f" of batch item {item}"
    k = f"kernel {prog.name}"
    if code in (errors.OOB_GLOBAL, errors.OOB_SHARED, errors.OOB_LOCAL):
        space = {errors.OOB_GLOBAL: "global", errors.OOB_SHARED: "shared", errors.OOB_LOCAL: "local"}[code]
        ins = instrs[pc][1]
        ins = ins.operation
        arr = ins.attr("array")
        if arr is None and space == "global" and isinstance(ins.attr("origin"), int):
            arr = ins.attr("origin")  # the parameter the pointer was derived from (jaxsimt.ptx.provenance)
        if arr is None and space == "shared":
            arr = ins.attr("shared_array")  # the shared variable the address was derived from
        kind = {"read": "load", "write": "store", "atomic": "atomic"}.get(isa.memory(ins), "access")
        if arr is None or space == "local":
            what = "outside every array" if space == "global" else f"outside the {space} window"
            return cls(f"{k}: out-of-bounds {space} {kind} at address {addr:#x} ({what}){where}; {who}")
        name = prog.params[arr].name if space == "global" else prog.shared[arr].name
        size = sizes[arr] if space == "global" else prog.shared[arr].nbytes
        return cls(f"{k}: out-of-bounds {space} {kind} of {name!r} at byte offset {addr} (array is {size} bytes){where}; {who}")
    if code == errors.WRONG_SPACE:
        ins = instrs[pc][1].operation
        var = f" {prog.shared[ins.attr('shared_array')].name!r}" if ins.attr("shared_array") is not None else ""
        return cls(f"{k}: the address of {ins.attr('origin')} variable{var} ({addr:#x}) used as a global address"
                   f"{where}; {who} (convert it with cvta, or access it as .{ins.attr('origin')})")
    if code == errors.MISALIGNED:
        from jaxsimt.machine.sanitizer import _array_name
        name = _array_name(prog, instrs[pc][1].operation) if 0 <= pc < len(instrs) else None
        of = f" of {name!r}" if name else ""
        return cls(f"{k}: misaligned access{of} at byte offset {addr}{where}; {who}")
    if code == errors.DIVERGENT_BARRIER:
        return cls(f"{k}: syncthreads not reached by every live thread of the block{where}; {who} is live "
                   f"but waits elsewhere (a barrier inside divergent control flow)")
    if code == errors.STACK_OVERFLOW:
        return cls(f"{k}: reconvergence stack overflow (depth {geo.depth}){where}; block {blk}, warp "
                   f"{warp % geo.warps_per_block}; raise stack_depth= if the nesting is legitimate")
    if code == errors.WARP_SYNC:
        return cls(f"{k}: warp-synchronous instruction executed by a diverged or partial warp{where}; {who} "
                   f"(every lane of the warp must execute it together)")
    if code == errors.DEADLOCK:
        return cls(f"{k}: deadlock: no warp can make progress (wave {wave})"
                   + deadlock_report(m, geo, grid, wave, stuck, cta_table))
    budget = f"the step budget of {max_steps} steps"
    if default_budget:
        n = program_size(prog)
        budget += (f" (the default: {n} instructions x ({STEPS_PER_INSTRUCTION} + {min(geo.W, n)}: the wave's "
                   f"{geo.W} warps, at most one per instruction), at least {MIN_STEPS}; max_steps= sets another)")
    return cls(f"{k}: exceeded {budget} in wave {wave}" + stuck_report(m, geo, grid, wave, stuck, cta_table))
