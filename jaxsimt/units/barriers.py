"""Block barriers: the hardware barriers of a thread block (PTX `bar.sync a{, b}`, `bar.arrive a, b`,
CUDA's `__syncthreads()` = `bar.sync 0`).

Each block of threads has `Arch.barriers_per_block` barriers. A barrier counts the threads that arrive in
its current phase: `bar.sync a, b` and `bar.arrive a, b` add their threads, and the phase completes when
`b` threads have arrived (the waiters go on, the count starts again). Without a count (`bar.sync a`) the
phase completes when every thread of the block that has not exited waits at barrier `a`. `bar.arrive`
counts without waiting (the producer side of a producer/consumer pair).

The state is per *unit* that waits: a warp in the reconvergence-stack machine (each arrival adds the warp
size, as the hardware counts a warp's arrival), a lane under Independent Thread Scheduling (each adds one
thread). Units are laid out [C, P]: C blocks of the wave, P units each. The machines keep their own
waiting flags (`State.waiting`, `its.Lanes.bar`); this module keeps which barrier each unit waits at and
each barrier's phase, and decides releases.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxsimt import errors
from jaxsimt.program import BARRIER, Program
from jaxsimt.units.intops import take_along

PTX_BARRIERS = 16  # barrier ids PTX allows (0..15): the limit where no architecture is given


class Barriers(NamedTuple):
    at: jnp.ndarray  # [C, P] int32  the barrier each unit waits at (meaningful where the unit waits)
    arrived: jnp.ndarray  # [C, K] int32  threads counted in the current phase (barriers given a count)
    need: jnp.ndarray  # [C, K] int32  the count the phase waits for; 0: every thread of the block


def attrs(bar_id: int, threads: int = 0, arrive: bool = False) -> tuple:
    """The attributes of a `bar` instruction (what both front ends emit, what `table` reads): barrier `bar_id`
    (left out for 0), thread count `threads` (0: the whole block, left out), `arrive` for bar.arrive.
    bar.sync 0 without a count has none, as `__syncthreads()` always had."""
    return tuple(sorted(((("arrive", True),) if arrive else ()) + ((("barrier", bar_id),) if bar_id else ())
                        + ((("threads", threads),) if threads else ())))


class Table(NamedTuple):
    """Per block of the program [NB]: the barrier its terminator arrives at, the thread count (0: all of
    the block), and whether it only arrives (`bar.arrive`)."""

    bar_id: np.ndarray
    count: np.ndarray
    arrive: np.ndarray
    n: int  # barriers the program uses (highest id + 1); 0: none


def table(program: Program) -> Table:
    """The program's barrier table (`Table`)."""
    nb = len(program.blocks)
    bid, cnt, arr = np.zeros(nb, np.int32), np.zeros(nb, np.int32), np.zeros(nb, bool)
    n = 0
    for b in program.blocks:
        if b.term.kind != BARRIER:
            continue
        ins = b.term.instr
        bid[b.index] = ins.attr("barrier", 0) if ins is not None else 0
        cnt[b.index] = ins.attr("threads", 0) if ins is not None else 0
        arr[b.index] = bool(ins.attr("arrive", False)) if ins is not None else False
        n = max(n, int(bid[b.index]) + 1)
    return Table(bid, cnt, arr, n)


def validate(program: Program, tab: Table, warp_size: int, barriers_per_block: int):
    """Raise LaunchConfigError, naming the kernel and line, for a barrier no launch can honour: an id past the
    architecture's barriers, or a thread count that is not a multiple of the warp size. (A count larger than
    the block is legal code where the launch never runs it; run, it never completes: a deadlock, which
    synccheck reports as such.)"""
    for b in program.blocks:
        if b.term.kind != BARRIER:
            continue
        ins, i, c = b.term.instr, int(tab.bar_id[b.index]), int(tab.count[b.index])
        where = f"kernel {program.name}" + (f", {ins.loc}" if ins is not None and ins.loc else "")
        if i >= barriers_per_block:
            raise errors.LaunchConfigError(f"{where}: barrier {i} does not exist (the architecture has "
                                           f"{barriers_per_block} per block)")
        if c % warp_size:
            raise errors.LaunchConfigError(f"{where}: barrier thread count {c} is not a multiple of the warp "
                                           f"size ({warp_size})")


def init(ctas: int, units: int, n: int) -> Barriers:
    """No unit waits, every barrier's phase empty."""
    return Barriers(jnp.zeros((ctas, units), jnp.int32), jnp.zeros((ctas, n), jnp.int32),
                    jnp.zeros((ctas, n), jnp.int32))


def arrive(bs: Barriers, arriving, bar_id, count, weight: int):
    """Units `arriving` [C, P] bool reach barrier `bar_id` (a traced scalar) with thread `count` (0: the whole
    block). Returns (barriers, clash [C]: a block whose arrivals in one phase name different counts)."""
    n = jnp.sum(arriving, axis=1, dtype=jnp.int32) * weight  # [C]
    came = n > 0
    prior, so_far = bs.need[:, bar_id], bs.arrived[:, bar_id]
    clash = came & (count > 0) & (so_far > 0) & (prior != count)
    arrived = bs.arrived.at[:, bar_id].add(jnp.where(count > 0, n, 0))
    need = bs.need.at[:, bar_id].set(jnp.where(came, count, prior))
    return Barriers(jnp.where(arriving, bar_id, bs.at), arrived, need), clash


def release(bs: Barriers, waiting, done):
    """The barriers whose phase completes: for units `waiting` [C, P] bool and `done` [C, P] bool (finished),
    a counted barrier when its count is reached, an uncounted one when every unit of the block that is not
    done waits at it. Returns (barriers, freed [C, P] bool: the waiters released, released [C] bool: a
    block in which some barrier completed)."""
    K = bs.need.shape[1]
    wk = waiting[..., None] & (bs.at[..., None] == jnp.arange(K, dtype=jnp.int32))  # [C, P, K]
    whole = jnp.any(wk, axis=1) & (bs.need == 0) & jnp.all(done[..., None] | wk, axis=1)
    counted = (bs.need > 0) & (bs.arrived >= bs.need)
    rel = whole | counted  # [C, K]
    freed = waiting & take_along(rel, jnp.clip(bs.at, 0, K - 1), axis=1)
    bs = bs._replace(arrived=jnp.where(counted, 0, bs.arrived), need=jnp.where(rel, 0, bs.need))
    return bs, freed, jnp.any(rel & jnp.any(wk, axis=1), axis=1)


def short(bs: Barriers, waiting):
    """[C, P] int32: for each waiting unit the threads its barrier's phase has counted so far (-1 for an
    uncounted barrier): what a synccheck report of a barrier that never completes says."""
    got = take_along(bs.arrived, jnp.clip(bs.at, 0, bs.arrived.shape[1] - 1), axis=1)
    need = take_along(bs.need, jnp.clip(bs.at, 0, bs.need.shape[1] - 1), axis=1)
    return jnp.where(waiting & (need > 0), got, -1)
