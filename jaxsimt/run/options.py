"""What a launch can be asked to do besides its kernel, grid, block, arguments and architecture: one frozen,
validated record, shared by `jaxsimt.launch`, `jaxsimt.launch_batch` and `jaxsimt.sweep`. Unknown names are refused here;
the values are checked by the launch, against its kernel and architecture (errors name the kernel).

    opts = jaxsimt.LaunchOptions(check="racecheck", collect=True)
    jaxsimt.launch(kernel, grid, block, args, options=opts)
    jaxsimt.launch(kernel, grid, block, args, check="racecheck", collect=True)   # the same
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from jaxsimt import errors
from jaxsimt.machine.templates import COMPILE_BUDGET


@dataclass(frozen=True)
class LaunchOptions:
    """The options of a launch. Each, with its default:

    regs: registers per thread for the occupancy and register-file checks (None: the program's estimate).
    max_steps: step budget per wave (a runaway loop raises StepBudgetExceeded; None: `launch.default_max_steps`,
      max(65,536, instructions x (4,096 + min(warps per wave, instructions)))).
    stack_depth: the most entries of each warp's reconvergence stack (16; a deeper nesting raises
      StackOverflowError). Stacks start shallower and grow to it where a kernel needs them
      (`launch.STACK_START`).
    blocks_per_wave: blocks emulated at once (None: ~0.5M threads on a CPU, on a GPU as many as an eighth of its
      memory holds: `launch.default_threads_per_wave`).
    trace: record the schedule step by step (small launches; not in batches).
    jit: compile (True) or run op by op (False; same results and counters, for debugging).
    counters: run the memory model on every global and shared access (requests, sectors, wavefronts, bank
      conflicts).
    optimize: compile with full backend optimisation (None: only for launches of more than 32K threads, where run
      time dominates; small launches compile ~3x faster without it).
    ctas: run only these blocks (linear ids, x fastest) of the grid: their counters, e.g. one block per class of
      identical blocks (None: all).
    data: False for counters only: memory is not read or written (loads give zeros), for kernels whose control
      flow ignores the data.
    local_bytes: per-thread local memory (space "local"; byte offsets in the thread's own window, zeroed at
      launch, not counted as global or shared traffic).
    devices: spread the waves of blocks over these JAX devices (an int: the first n; `jaxsimt.run.shard`), global
      memory replicated and merged (None: one device).
    timing: also predict the kernel's time with the cycle-level model (`jaxsimt.timing.replay`): adds `cycles`,
      `predicted_ms`, `predicted_ms_analytical`, achieved occupancy and `stall_*` to the stats, the replay to
      `result.timing`.
    l1: with `timing`, where a global load's L1 hits come from: "tags" (the traced blocks' loads, whose
      addresses their traced run hands to the host, through a model of each SM's L1, `jaxsimt.timing.l1tags`) or
      "footprint" (one block's distinct bytes spread over its accesses, `jaxsimt.timing.trace.memory_fractions`).
    replay: with `timing`, how the traced blocks are replayed (`jaxsimt.timing.replay.REPLAYS`): "exact" (cycle by
      cycle, the reference), "fast" (every scheduler's issue per step) or "interval" (the warps alone, then mean
      value analysis of what they share: `jaxsimt.timing.interval`, docs/timing.md).
    mode: "stack" (the reconvergence stack, warps in lockstep; the default on every architecture) or "its"
      (Independent Thread Scheduling, Volta and later; docs/its.md).
    carveout: preferred shared memory per SM in bytes (the L1/shared split; None: the largest the architecture
      allows), rounded up to an allowed size as the occupancy calculator does.
    compile_budget: instructions of the kernel compiled into the machine, its loops first; the rest is
      interpreted with the same results and counters (`jaxsimt.machine.templates`); None compiles every block.
    progress: called after each wave as progress(waves done, waves, blocks done, blocks).
    check: the sanitizer's checks besides the bounds checks every launch makes ("all", or some of "memcheck",
      "racecheck", "initcheck", "synccheck", as a comma-separated string or a list; docs/sanitizer.md).
    collect: with `check`, keep every finding in `result.findings` and go on (False: the first one raises).
    """

    regs: Optional[int] = None
    max_steps: Optional[int] = None
    stack_depth: int = 16
    blocks_per_wave: Optional[int] = None
    trace: bool = False
    jit: bool = True
    counters: bool = True
    optimize: Optional[bool] = None
    ctas: Optional[Sequence[int]] = None
    data: bool = True
    local_bytes: int = 0
    devices: Any = None
    timing: bool = False
    l1: str = "tags"
    replay: str = "exact"
    mode: str = "stack"
    carveout: Optional[int] = None
    compile_budget: Optional[int] = COMPILE_BUDGET
    progress: Optional[Callable] = None
    check: Any = None
    collect: bool = False

    @classmethod
    def of(cls, options: Optional["LaunchOptions"] = None, **kw) -> "LaunchOptions":
        """`options` (default: the defaults) with the keywords `kw` replacing fields; an unknown keyword is an
        ArgumentError naming it and the options there are."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kw) - names)
        if unknown:
            raise errors.ArgumentError(f"unknown launch option(s) {', '.join(unknown)}; the options are "
                                       f"{', '.join(sorted(names))}")
        if options is not None and not isinstance(options, cls):
            raise errors.ArgumentError(f"options must be a jaxsimt.LaunchOptions, got {type(options).__name__}")
        return dataclasses.replace(options or cls(), **kw)

    def replace(self, **kw) -> "LaunchOptions":
        return LaunchOptions.of(self, **kw)

    def as_dict(self) -> dict:
        """{field: value} of every option."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def key(self, without: Sequence[str] = ()) -> tuple:
        """The options as a sortable, hashable key (lists as tuples), without the fields `without`."""
        def h(v):
            return tuple(h(x) for x in v) if isinstance(v, (list, tuple)) else v if _hashable(v) else id(v)
        return tuple((k, h(v)) for k, v in sorted(self.as_dict().items()) if k not in without)


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False
