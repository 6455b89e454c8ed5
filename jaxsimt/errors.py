"""Exceptions raised by launches, each naming the kernel, the instruction's source line, the block and
the thread. Faults are detected inside the compiled run, recorded as data (code, pc, warp, lane,
address) and turned into one of these after the run stops."""
from __future__ import annotations

import enum


class SimtError(RuntimeError):
    """Base class of run-time errors of an emulated kernel."""


class LaunchConfigError(ValueError):
    """The launch configuration is not allowed by the architecture (checked before anything runs)."""


class ArgumentError(LaunchConfigError, TypeError):
    """A launch argument that does not fit the kernel's parameter (kind, dtype, range) or a launch option
    of the wrong type or value; the message names the kernel, the parameter (name and position) and what
    was expected and given. Also a TypeError, as a wrong argument to a Python function is."""


class LaunchResourceError(LaunchConfigError):
    """The launch asked for more than the machine could give while it ran (XLA ran out of memory, or
    refused the run); the message says what the launch asked for and what to change."""


class UsageError(ValueError):
    """A command-line argument or input file that a `jaxsimt` command cannot use (the user's mistake, reported
    in one line, never with a traceback)."""


class MemoryFault(SimtError):
    """Out-of-bounds or misaligned global/shared access."""


class DivergentBarrierError(SimtError):
    """A `syncthreads` that not every live thread of the block reaches together."""


class StackOverflowError(SimtError):
    """The reconvergence stack of a warp needed more entries than its depth."""


class DeadlockError(SimtError):
    """No warp can make progress although some have not finished."""


class StepBudgetExceeded(SimtError):
    """The run exceeded its step budget (a runaway loop?)."""


class FaultCode(enum.IntEnum):
    """What a fault the machine records is (`machine.Fault.code`)."""

    NONE = 0  # no fault
    OOB_GLOBAL = 1
    OOB_SHARED = 2
    MISALIGNED = 3
    DIVERGENT_BARRIER = 4
    STACK_OVERFLOW = 5
    DEADLOCK = 6
    STEP_BUDGET = 7
    OOB_LOCAL = 8
    WARP_SYNC = 9  # a warp-synchronous Tensor Core instruction with lanes missing
    WRONG_SPACE = 10  # a shared or local variable's address used as a global one
    RACE = 11  # two unordered accesses of one word by threads of different warps or blocks, one a plain write
    WARP_HAZARD = 12  # the same between lanes of one warp with no __syncwarp between (a race under ITS)
    UNINIT = 13  # a read of memory no thread wrote and the host did not give
    BARRIER_SKIPPED = 14  # threads run past a block barrier others of their block wait at
    BARRIER_MISMATCH = 15  # the threads a block barrier releases wait at different barrier instructions
    SYNC_MASK = 16  # a warp-synchronous instruction whose member mask names lanes that do not execute it
    BARRIER_HANG = 17  # threads wait at a block barrier whose phase can no longer complete
    BARRIER_COUNTS = 18  # threads of one block arrive at one barrier phase with different thread counts


NONE, OOB_GLOBAL, OOB_SHARED, MISALIGNED, DIVERGENT_BARRIER, STACK_OVERFLOW, DEADLOCK, STEP_BUDGET, OOB_LOCAL = (
    FaultCode.NONE, FaultCode.OOB_GLOBAL, FaultCode.OOB_SHARED, FaultCode.MISALIGNED, FaultCode.DIVERGENT_BARRIER,
    FaultCode.STACK_OVERFLOW, FaultCode.DEADLOCK, FaultCode.STEP_BUDGET, FaultCode.OOB_LOCAL)

FAULT_CLASS = {
    OOB_GLOBAL: MemoryFault,
    OOB_SHARED: MemoryFault,
    OOB_LOCAL: MemoryFault,
    MISALIGNED: MemoryFault,
    DIVERGENT_BARRIER: DivergentBarrierError,
    STACK_OVERFLOW: StackOverflowError,
    DEADLOCK: DeadlockError,
    STEP_BUDGET: StepBudgetExceeded,
}


class WarpSyncError(SimtError):
    """A warp-synchronous Tensor Core instruction (wmma, mma.sync, ldmatrix) executed by a warp whose 32
    lanes are not all active."""


WARP_SYNC = FaultCode.WARP_SYNC
FAULT_CLASS[WARP_SYNC] = WarpSyncError
WRONG_SPACE = FaultCode.WRONG_SPACE
FAULT_CLASS[WRONG_SPACE] = MemoryFault
